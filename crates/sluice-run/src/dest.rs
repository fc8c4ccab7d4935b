//! Where results go: standard output (`-`) or a file written atomically
//! (`sluice_sys::output`: a temporary file beside it, renamed into place
//! when complete, never following a symlink, locked while written).
//! Output paths are checked against the inputs before any work starts.

use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_sys::output::{check_paths, Output, OutputError};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// A destination for text results.
pub enum Dest {
    Stdout(io::Stdout),
    File(BufWriter<Output>),
}

impl Dest {
    /// `-` is standard output; anything else a file prepared now, so a bad
    /// path fails before the work, not after it.
    pub fn open(spec: &str) -> Result<Dest, Failure> {
        if spec == "-" {
            return Ok(Dest::Stdout(io::stdout()));
        }
        Ok(Dest::File(BufWriter::new(
            Output::create(Path::new(spec)).map_err(output_failure)?,
        )))
    }

    /// A log (`--stats-json`): a file readable while the run writes it
    /// (`tail -f`). Where a file is there already, the new log goes to
    /// `NAME.partial` until the run ends well, and stderr says so now.
    pub fn open_log(spec: &str, option: &str) -> Result<Dest, Failure> {
        if spec == "-" {
            return Ok(Dest::Stdout(io::stdout()));
        }
        let out = Output::create_log(Path::new(spec)).map_err(output_failure)?;
        if out.writing_to() != out.target() {
            eoutln!(
                "sluice: {option} is written to {} while the run lasts; it replaces {} once \
                 the run ends well",
                out.writing_to().display(),
                spec
            );
        }
        Ok(Dest::File(BufWriter::new(out)))
    }

    /// Flushes and, for a file, renames it into place.
    pub fn commit(self) -> io::Result<()> {
        self.end(true)
    }

    /// Ends the output of a run: `complete`, as [`Dest::commit`]; else a
    /// file replaces nothing that existed (it stays beside the target as
    /// `NAME.partial`, named on stderr).
    pub fn end(self, complete: bool) -> io::Result<()> {
        match self {
            Dest::Stdout(mut s) => s.flush(),
            Dest::File(w) => {
                let out = w.into_inner().map_err(|e| e.into_error())?;
                if complete {
                    return out.commit().map_err(io::Error::other);
                }
                let target = out.target().to_path_buf();
                let went = out.commit_partial().map_err(io::Error::other)?;
                if went != target {
                    eoutln!(
                        "sluice: the run did not complete: {} keeps what it held; this run's \
                         output is in {}",
                        target.display(),
                        went.display()
                    );
                }
                Ok(())
            }
        }
    }
}

impl Write for Dest {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Dest::Stdout(s) => s.write(b),
            Dest::File(f) => f.write(b),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Dest::Stdout(s) => s.flush(),
            Dest::File(f) => f.flush(),
        }
    }
}

/// Refuses, before any work, an output that is an input or another
/// output. `outputs` may hold `-` (standard output), which is skipped.
pub fn check(inputs: &[&Path], outputs: &[&str]) -> Result<(), Failure> {
    let files: Vec<&Path> = outputs
        .iter()
        .filter(|o| **o != "-")
        .map(Path::new)
        .collect();
    check_paths(inputs, &files).map_err(output_failure)
}

/// An output that cannot be written is the environment's fault (exit 1);
/// one that names an input, another output or a symlink is bad usage (2).
pub fn output_failure(e: OutputError) -> Failure {
    match e {
        OutputError::Io { .. } | OutputError::Locked { .. } => Failure::from(anyhow!(e)),
        _ => bad_input(anyhow!(e)),
    }
}
