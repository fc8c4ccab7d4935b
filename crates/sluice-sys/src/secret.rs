//! Secrets for authenticating peers: random bytes from the kernel, their
//! hex text, and a comparison whose time does not depend on where two
//! secrets differ.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

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
/// a planted symlink), mode 0600 for a secret (else 0644), and syncs it;
/// on any failure nothing is left ([`NewFile`]).
pub fn write_new(path: &Path, data: &[u8], secret: bool) -> io::Result<()> {
    let mut f = NewFile::create(path, secret)?;
    f.write(data)?;
    f.finish().map(drop)
}

/// A new file written in pieces for a peer or a key (an upload, a token,
/// a certificate): created exclusively (`O_EXCL`: never an existing file,
/// never through a planted symlink), mode 0600 for a secret (else 0644),
/// and removed, with the directory made for it, when dropped before
/// [`NewFile::finish`]: a failed or abandoned write leaves nothing
/// behind. The one writer of such files (`tests/invariants.rs`).
pub struct NewFile {
    file: std::fs::File,
    path: Option<PathBuf>,
    /// The file has a directory of its own, removed with it.
    own_dir: bool,
}

impl NewFile {
    pub fn create(path: &Path, secret: bool) -> io::Result<NewFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if secret { 0o600 } else { 0o644 })
            .open(path)?;
        Ok(NewFile {
            file,
            path: Some(path.to_path_buf()),
            own_dir: false,
        })
    }

    /// `dir/name`, secret, in a directory `dir` made for it (0700, which
    /// must not exist): both go unless finished.
    pub fn in_own_dir(dir: &Path, name: &str) -> io::Result<NewFile> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(dir)?;
        match NewFile::create(&dir.join(name), true) {
            Ok(mut f) => {
                f.own_dir = true;
                Ok(f)
            }
            Err(e) => {
                let _ = std::fs::remove_dir(dir);
                Err(e)
            }
        }
    }

    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        io::Write::write_all(&mut self.file, data)
    }

    /// Synced and kept: its path.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.file.sync_all()?;
        Ok(self.path.take().expect("finished once"))
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        match self.path.take() {
            Some(p) if self.own_dir => remove_in_own_dir(&p),
            Some(p) => {
                let _ = std::fs::remove_file(&p);
            }
            None => {}
        }
    }
}

/// Removes a file made by [`NewFile::in_own_dir`] (finished or not) and
/// its directory: an upload a service no longer keeps.
pub fn remove_in_own_dir(path: &Path) {
    let _ = std::fs::remove_file(path);
    if let Some(d) = path.parent() {
        let _ = std::fs::remove_dir(d);
    }
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

    /// A new file is never an existing one; one dropped unfinished
    /// leaves nothing, its own directory included; a finished one stays
    /// with its mode.
    #[test]
    fn a_new_file_is_exclusive_and_leaves_nothing_unless_finished() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        std::fs::write(&p, b"old").unwrap();
        assert!(NewFile::create(&p, true).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        let q = d.path().join("b");
        let mut f = NewFile::create(&q, true).unwrap();
        f.write(b"part").unwrap();
        drop(f);
        assert!(!q.exists());
        let own = d.path().join("u1");
        let mut f = NewFile::in_own_dir(&own, "x.pcap").unwrap();
        f.write(b"data").unwrap();
        drop(f);
        assert!(!own.exists());
        let mut f = NewFile::in_own_dir(&own, "x.pcap").unwrap();
        f.write(b"da").unwrap();
        f.write(b"ta").unwrap();
        let kept = f.finish().unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"data");
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        write_new(&d.path().join("c"), b"pub", false).unwrap();
        let mode = std::fs::metadata(d.path().join("c"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
