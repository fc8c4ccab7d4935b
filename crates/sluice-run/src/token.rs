//! Secrets that a TCP service's clients send (`inject --token-file`,
//! `--metrics-token-file`): 32 random bytes kept as 64 hex digits in a
//! file only its owner may read, made when missing.

use crate::{bad_input, Failure};
use anyhow::anyhow;
pub use sluice_live::inject::TOKEN_LEN;
use std::path::Path;

/// The secret of a token file: 64 hex digits, the file a regular one that
/// only its owner (this user) may read. A missing file is made (0600,
/// from the kernel's random source) and its name printed.
pub fn read_or_make(path: &Path, option: &str) -> Result<[u8; TOKEN_LEN], Failure> {
    use std::os::unix::fs::MetadataExt;
    let name = path.display();
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret = sluice_sys::secret::random::<TOKEN_LEN>()
                .map_err(|e| anyhow!("/dev/urandom: {e}"))?;
            let hex = sluice_sys::secret::hex(&secret);
            sluice_sys::secret::write_new(path, format!("{hex}\n").as_bytes(), true)
                .map_err(|e| anyhow!("{option} {name}: {e}"))?;
            eoutln!("sluice: made token file {name} (give it to clients, mode 0600)");
            Ok(secret)
        }
        Err(e) => Err(anyhow!("{option} {name}: {e}").into()),
        Ok(m) => {
            if !m.file_type().is_file() {
                return Err(bad_input(anyhow!("{option} {name}: not a regular file")));
            }
            if m.mode() & 0o077 != 0 || m.uid() != sluice_sys::peer::euid() {
                return Err(bad_input(anyhow!(
                    "{option} {name}: others may read it (mode {:o}, uid {}): \
                     chmod 600 it, as its owner",
                    m.mode() & 0o7777,
                    m.uid()
                )));
            }
            // 64 hex digits and a line break; room for spaces around them.
            let text = sluice_sys::input::read_capped(path, 4096, "token file")
                .map_err(|e| anyhow!("{option} {name}: {e}"))?;
            parse(String::from_utf8_lossy(&text).trim())
                .ok_or_else(|| bad_input(anyhow!("{option} {name}: not 64 hex digits")))
        }
    }
}

pub fn parse(hex: &str) -> Option<[u8; TOKEN_LEN]> {
    // Hex digits only: from_str_radix alone would take a sign (`+f`).
    if hex.len() != 2 * TOKEN_LEN || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; TOKEN_LEN];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_digits_only() {
        let good = "0f".repeat(TOKEN_LEN);
        assert_eq!(parse(&good), Some([0x0f; TOKEN_LEN]));
        // from_str_radix alone takes a sign: `+f` is not a hex byte.
        assert_eq!(parse(&"+f".repeat(TOKEN_LEN)), None);
        assert_eq!(parse(&"0g".repeat(TOKEN_LEN)), None);
        assert_eq!(parse(&"0f".repeat(TOKEN_LEN - 1)), None);
    }
}
