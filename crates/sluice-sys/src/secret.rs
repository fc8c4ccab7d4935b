//! Secrets for authenticating peers: random bytes from the kernel, their
//! hex text, and a comparison whose time does not depend on where two
//! secrets differ.

use std::io::{self, Read};

/// `N` bytes from the kernel's random source.
pub fn random<const N: usize>() -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}

/// Lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes a new file, never one that exists (`O_EXCL`, which also refuses
/// a planted symlink), mode 0600 for a secret (else 0644), and syncs it.
pub fn write_new(path: &std::path::Path, data: &[u8], secret: bool) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

/// Equal, in time independent of where they differ (only the lengths
/// are compared first).
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_hex_and_compared_whole() {
        let (a, b) = (random::<16>().unwrap(), random::<16>().unwrap());
        assert_ne!(a, b);
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        assert!(same(&a, &a));
        assert!(!same(&a, &b));
        assert!(!same(&a, &a[..15]));
    }
}
