//! Inputs read whole into memory, each with a ceiling: a file the user
//! names may be a device that never ends (`/dev/zero`), a FIFO fed for
//! ever, or simply far larger than what it claims to be. Reading stops
//! one byte past the ceiling, so no input costs more memory than the
//! ceiling its kind allows, whatever the path names.

use std::io::Read;
use std::path::Path;

/// Why an input could not be read whole; the caller names the file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("more than the {limit} a {what} may have")]
    TooLarge { what: &'static str, limit: String },
    #[error("byte {0}: not UTF-8 text")]
    NotText(usize),
}

/// Reads `path` whole, refusing it past `cap` bytes (a regular file by
/// its size before reading, anything else once the reads pass `cap`).
/// `what` names the kind of input in the error ("tcpprep cache").
pub fn read_capped(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let file = std::fs::File::open(path)?;
    let too_large = || InputError::TooLarge {
        what,
        limit: human(cap),
    };
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::other("a directory, not a file").into());
    }
    if meta.is_file() && meta.len() > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_capped`] of a text file: UTF-8, or the byte where it stops being.
pub fn read_text_capped(path: &Path, cap: u64, what: &'static str) -> Result<String, InputError> {
    let bytes = read_capped(path, cap, what)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotText(e.utf8_error().valid_up_to()))
}

/// `cap` bytes as a person reads them: `64 MiB`, `4 KiB`, `100 bytes`.
fn human(cap: u64) -> String {
    if cap >= 1 << 20 && cap.is_multiple_of(1 << 20) {
        format!("{} MiB", cap >> 20)
    } else if cap >= 1 << 10 && cap.is_multiple_of(1 << 10) {
        format!("{} KiB", cap >> 10)
    } else {
        format!("{cap} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_device_stops_at_the_cap() {
        let e = read_capped(Path::new("/dev/zero"), 4096, "cache").unwrap_err();
        assert_eq!(e.to_string(), "more than the 4 KiB a cache may have");
    }

    #[test]
    fn a_file_at_the_cap_is_read_and_one_past_it_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![7u8; 100]).unwrap();
        assert_eq!(read_capped(&p, 100, "x").unwrap(), vec![7u8; 100]);
        let e = read_capped(&p, 99, "token file").unwrap_err();
        assert_eq!(
            e.to_string(),
            "more than the 99 bytes a token file may have"
        );
        let e = read_capped(d.path(), 99, "x").unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }
}
