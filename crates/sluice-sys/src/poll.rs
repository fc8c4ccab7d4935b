//! Waiting on several descriptors at once (a server's listener, its
//! clients and a packet socket), with a nanosecond timeout.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

/// Readable or writable: what to wait for on one descriptor.
pub const READ: i16 = libc::POLLIN;
pub const WRITE: i16 = libc::POLLOUT;

/// A set of descriptors to wait on; reused between waits.
#[derive(Default)]
pub struct PollSet {
    fds: Vec<libc::pollfd>,
}

impl PollSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn clear(&mut self) {
        self.fds.clear();
    }

    /// Adds `fd` waiting for `events` ([`READ`], [`WRITE`]); returns its
    /// index for [`ready`](Self::ready).
    pub fn add(&mut self, fd: BorrowedFd<'_>, events: i16) -> usize {
        self.fds.push(libc::pollfd {
            fd: fd.as_raw_fd(),
            events,
            revents: 0,
        });
        self.fds.len() - 1
    }

    /// Waits until one descriptor is ready or `timeout` passes; an
    /// interrupted wait counts as a timeout.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `fds` is a valid array of pollfd of the given length,
        // `ts` a valid timespec, no signal mask.
        let rc = unsafe {
            libc::ppoll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            self.fds.iter_mut().for_each(|p| p.revents = 0);
        }
        Ok(())
    }

    /// What descriptor `i` is ready for after a wait (errors and hang-ups
    /// count as readable: the read tells what happened).
    pub fn ready(&self, i: usize) -> i16 {
        let r = self.fds.get(i).map_or(0, |p| p.revents);
        if r & (libc::POLLERR | libc::POLLHUP) != 0 {
            r | READ
        } else {
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_written_socket_is_readable_and_a_quiet_one_times_out() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut p = PollSet::new();
        let i = p.add(b.as_fd(), READ);
        let t = std::time::Instant::now();
        p.wait(Duration::from_millis(5)).unwrap();
        assert_eq!(p.ready(i) & READ, 0);
        assert!(t.elapsed() >= Duration::from_millis(4));
        a.write_all(b"x").unwrap();
        p.clear();
        let i = p.add(b.as_fd(), READ | WRITE);
        p.wait(Duration::from_secs(1)).unwrap();
        assert_ne!(p.ready(i) & READ, 0);
        assert_ne!(p.ready(i) & WRITE, 0);
    }
}
