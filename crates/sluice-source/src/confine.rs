//! Inputs a job's file names by path (a profile's `from:` captures, a
//! session's `template.pcap`): relative to the file's directory, and in a
//! worker's job process only a plain name beside it (an upload of the
//! lease), never a path elsewhere on the host.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static CONFINED: AtomicBool = AtomicBool::new(false);

/// From now on, this process reads the inputs its jobs' files name only
/// by a plain name beside the file (what a distributed job was uploaded).
pub fn confine_inputs() {
    CONFINED.store(true, Ordering::Relaxed);
}

/// Where an input named `name` by a file in `dir` is; when confined, a
/// plain name (no directory, no leading dot) is required.
pub fn input(dir: &Path, name: &Path) -> Result<PathBuf, String> {
    if CONFINED.load(Ordering::Relaxed) {
        let mut parts = name.components();
        let plain = matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(_)), None)
        ) && !name.to_string_lossy().starts_with('.');
        if !plain {
            return Err(format!(
                "'{}': a distributed job reads only its uploaded files: name one by its \
                 plain name (and list it in the plan's job.files)",
                name.display().to_string().escape_default()
            ));
        }
    }
    Ok(dir.join(name))
}
