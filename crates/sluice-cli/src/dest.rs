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

    /// Flushes and, for a file, renames it into place.
    pub fn commit(self) -> io::Result<()> {
        match self {
            Dest::Stdout(mut s) => s.flush(),
            Dest::File(w) => {
                let out = w.into_inner().map_err(|e| e.into_error())?;
                out.commit().map_err(io::Error::other)
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
