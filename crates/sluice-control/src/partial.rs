//! A file being written for a peer (an upload): removed when dropped
//! unless kept, so a failed or abandoned upload leaves nothing behind.

use std::path::PathBuf;

pub(crate) struct Partial {
    path: Option<PathBuf>,
    /// The file has a directory of its own, removed with it.
    own_dir: bool,
}

impl Partial {
    pub fn file(path: PathBuf) -> Partial {
        Partial {
            path: Some(path),
            own_dir: false,
        }
    }

    /// A file alone in its directory: both go.
    pub fn in_own_dir(path: PathBuf) -> Partial {
        Partial {
            path: Some(path),
            own_dir: true,
        }
    }

    pub fn keep(&mut self) -> PathBuf {
        self.path.take().expect("kept once")
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(&p);
            if let (true, Some(d)) = (self.own_dir, p.parent()) {
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

/// An upload's name, refused unless plain (no directory, no leading dot,
/// at most 128 characters): the job reads it under that name.
pub(crate) fn plain_name(name: &str) -> Result<(), tonic::Status> {
    if sluice_job::remote::plain_name(name) {
        return Ok(());
    }
    Err(tonic::Status::invalid_argument(format!(
        "upload '{}': not a plain file name (no directory, no leading dot, \
         at most 128 characters)",
        crate::shown::shown(name)
    )))
}
