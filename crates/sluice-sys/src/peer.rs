//! Who is at the other end of a unix socket, as the kernel says, and a
//! unix socket only its owner can reach.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// Binds a unix socket at `path`, mode 0600 from the moment anyone can
/// reach it: bound inside a private (0700) directory beside the target,
/// made 0600, then renamed into place. A path that exists is replaced
/// only when it is a socket nobody answers on (one a dead server left);
/// any other file is never touched. Errors name the path.
pub fn bind_private(path: &Path) -> io::Result<UnixListener> {
    let shown = path.display();
    let named = |e: io::Error| io::Error::new(e.kind(), format!("unix:{shown}: {e}"));
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("unix:{shown}: exists and is not a socket; not replacing it"),
            ));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("unix:{shown}: another server answers there"),
            ));
        }
        std::fs::remove_file(path).map_err(named)?;
    }
    let private = private_dir(crate::output::parent_dir(path)).map_err(named)?;
    let tmp = private.path().join("s");
    let s = UnixListener::bind(&tmp).map_err(named)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(named)?;
    std::fs::rename(&tmp, path).map_err(named)?;
    Ok(s)
}

/// A staging directory beside `dir`'s entries that only this user can
/// enter, whatever the umask: made 0700 (a umask only takes bits away),
/// then checked to be a directory of ours with no access for others.
fn private_dir(dir: &Path) -> io::Result<tempfile::TempDir> {
    let d = tempfile::Builder::new()
        .prefix(".sluice-sock.")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(dir)?;
    let m = std::fs::symlink_metadata(d.path())?;
    use std::os::unix::fs::MetadataExt;
    if !m.is_dir() || m.uid() != euid() || m.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: the staging directory is not private (mode {:o})",
                d.path().display(),
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(d)
}

/// Whether a peer of uid `uid` may use this process's private socket:
/// its owner (this process's euid) or root.
pub fn admitted(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// The effective uid of the process that connected to `fd` (a connected
/// unix stream socket), from `SO_PEERCRED`.
pub fn peer_uid(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a live
    // local of exactly that size; the fd is borrowed, so open.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// This process's effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_socket_pairs_peer_is_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(peer_uid(a.as_fd()).unwrap(), euid());
        let f = std::fs::File::open("/dev/null").unwrap();
        assert!(peer_uid(f.as_fd()).is_err());
    }

    #[test]
    fn the_staging_directory_is_private_under_any_umask() {
        let d = tempfile::tempdir().unwrap();
        // SAFETY: umask has no preconditions; it is put back at once.
        let old = unsafe { libc::umask(0) };
        let staged = private_dir(d.path());
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let staged = staged.unwrap();
        let mode = std::fs::metadata(staged.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_private_socket_is_0600_and_never_replaces_a_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"keep").unwrap();
        let e = bind_private(&p).unwrap_err();
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"keep");
        let s = d.path().join("s");
        let live = bind_private(&s).unwrap();
        let mode = std::fs::metadata(&s).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let e = bind_private(&s).unwrap_err();
        assert!(e.to_string().contains("another server"), "{e}");
        drop(live);
        // A stale one is replaced; nothing is left beside it.
        bind_private(&s).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }
}
