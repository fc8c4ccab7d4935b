//! Where `sluice inject` listens: a unix socket (mode 0600 from the
//! start, and each peer's uid checked: only its owner or root connects) or
//! TCP on a loopback address, where every local user can connect, so
//! clients prove themselves with the secret of a token file in HELLO (or
//! the user said `--insecure-tcp`). Never served beyond this host.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

/// `unix:PATH` or `tcp:ADDR:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl std::str::FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err("unix: needs a path".into());
            }
            return Ok(Listen::Unix(p.into()));
        }
        if let Some(a) = s.strip_prefix("tcp:") {
            let addr: SocketAddr = a
                .parse()
                .map_err(|_| format!("{a:?} is not ADDR:PORT (e.g. tcp:127.0.0.1:7700)"))?;
            if !addr.ip().is_loopback() {
                return Err(format!(
                    "{addr}: the injection protocol has no authentication, so sluice \
                     serves it on loopback only (127.0.0.1, ::1) or a unix socket; \
                     reach it from elsewhere through an authenticated tunnel (ssh -L)"
                ));
            }
            return Ok(Listen::Tcp(addr));
        }
        Err(format!("{s:?}: listen on unix:PATH or tcp:ADDR:PORT"))
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
            Listen::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

pub enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    /// Binds, non-blocking. A unix path that exists is replaced only when
    /// it is a socket nobody answers on (one a dead server left).
    pub fn bind(l: &Listen) -> io::Result<Listener> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{l}: {e}"));
        match l {
            Listen::Unix(p) => {
                let s = sluice_sys::peer::bind_private(p)?;
                s.set_nonblocking(true).map_err(named)?;
                Ok(Listener::Unix(s, p.clone()))
            }
            Listen::Tcp(a) => {
                let s = TcpListener::bind(a).map_err(named)?;
                s.set_nonblocking(true).map_err(named)?;
                Ok(Listener::Tcp(s))
            }
        }
    }

    /// A waiting connection, non-blocking, with a name for messages. On
    /// the unix socket, a peer whose uid is neither this process's nor
    /// root's is refused (closed; the error names its uid), whatever the
    /// socket file's mode says.
    pub fn accept(&self) -> io::Result<Option<(Stream, String)>> {
        let r = match self {
            Listener::Unix(s, p) => s.accept().and_then(|(c, _)| {
                let uid = sluice_sys::peer::peer_uid(c.as_fd())?;
                if !sluice_sys::peer::admitted(uid) {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("unix:{}: refused a client of uid {uid}", p.display()),
                    ));
                }
                Ok((Stream::Unix(c), format!("unix:{}", p.display())))
            }),
            Listener::Tcp(s) => s.accept().map(|(c, a)| {
                let _ = c.set_nodelay(true);
                (Stream::Tcp(c), format!("tcp:{a}"))
            }),
        };
        match r {
            Ok((c, name)) => {
                c.set_nonblocking(true)?;
                Ok(Some((c, name)))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Unix(s, _) => s.as_fd(),
            Listener::Tcp(s) => s.as_fd(),
        }
    }

    /// Where clients reach it, as bound: a TCP port 0 asked for is the
    /// port the kernel chose.
    pub fn bound(&self) -> Listen {
        match self {
            Listener::Unix(_, p) => Listen::Unix(p.clone()),
            Listener::Tcp(s) => match s.local_addr() {
                Ok(a) => Listen::Tcp(a),
                Err(_) => Listen::Tcp(std::net::SocketAddr::from(([0, 0, 0, 0], 0))),
            },
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Unix(s) => s.as_fd(),
            Stream::Tcp(s) => s.as_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn listen_addresses_parse_and_only_loopback_tcp_is_served() {
        assert_eq!(
            "unix:/tmp/x.sock".parse::<Listen>().unwrap(),
            Listen::Unix("/tmp/x.sock".into())
        );
        assert!(matches!(
            "tcp:127.0.0.1:7700".parse::<Listen>().unwrap(),
            Listen::Tcp(_)
        ));
        assert!(matches!(
            "tcp:[::1]:7700".parse::<Listen>().unwrap(),
            Listen::Tcp(_)
        ));
        let e = "tcp:0.0.0.0:7700".parse::<Listen>().unwrap_err();
        assert!(e.contains("loopback only"), "{e}");
        assert!("udp:1".parse::<Listen>().is_err());
        assert!("tcp:nowhere".parse::<Listen>().is_err());
    }

    #[test]
    fn a_unix_path_that_is_a_file_is_not_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"keep").unwrap();
        let e = Listener::bind(&Listen::Unix(p.clone())).err().unwrap();
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"keep");
        // A stale socket is replaced; the socket is private and removed after.
        let s = d.path().join("s");
        drop(UnixListener::bind(&s).unwrap());
        let l = Listener::bind(&Listen::Unix(s.clone())).unwrap();
        let mode = std::fs::metadata(&s).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(l);
        assert!(!s.exists());
    }
}
