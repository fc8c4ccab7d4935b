//! A TAP device (`IFF_TAP | IFF_NO_PI`): frames the kernel routes to it are
//! read here whole (Ethernet header first, checksums complete: no offloads
//! are enabled); frames written here enter the kernel as if received.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// An open TAP device, non-blocking.
pub struct Tap {
    fd: OwnedFd,
    name: String,
}

/// `struct ifreq` with the flags member (the part TUNSETIFF and
/// SIOC[GS]IFFLAGS use).
#[repr(C)]
struct IfReqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// `struct ifreq` with the hardware address member.
#[repr(C)]
struct IfReqAddr {
    name: [libc::c_char; libc::IFNAMSIZ],
    addr: libc::sockaddr,
    _pad: [u8; 8],
}

pub(crate) fn ifname(name: &str) -> io::Result<[libc::c_char; libc::IFNAMSIZ]> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.bytes().any(|b| b == 0 || b == b'/')
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{name}' is not an interface name (1 to 15 bytes, no '/')"),
        ));
    }
    let mut out = [0 as libc::c_char; libc::IFNAMSIZ];
    for (o, b) in out.iter_mut().zip(name.bytes()) {
        *o = b as libc::c_char;
    }
    Ok(out)
}

fn with_context(e: io::Error, what: String) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// A datagram socket for the interface ioctls.
pub(crate) fn ioctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Tap {
    /// Creates the TAP device `name`, or attaches to it when it exists (a
    /// persistent one made by `ip tuntap add dev NAME mode tap`), and
    /// brings it up.
    pub fn open(name: &str) -> io::Result<Tap> {
        let mut req = IfReqFlags {
            name: ifname(name)?,
            flags: (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        // SAFETY: a NUL-terminated path literal; the result is checked.
        let fd = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(with_context(
                io::Error::last_os_error(),
                "cannot open /dev/net/tun".into(),
            ));
        }
        // SAFETY: fd is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `req`
        // lays out (name, then the flags member, padded to its size).
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if rc < 0 {
            return Err(with_context(
                io::Error::last_os_error(),
                format!("cannot create or attach TAP device {name}"),
            ));
        }
        // SAFETY: the kernel wrote a NUL-terminated name into the buffer.
        let actual = unsafe { CStr::from_ptr(req.name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let tap = Tap { fd, name: actual };
        tap.set_up()?;
        Ok(tap)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn set_up(&self) -> io::Result<()> {
        let s = ioctl_socket()?;
        let mut req = IfReqFlags {
            name: ifname(&self.name)?,
            flags: 0,
            _pad: [0; 22],
        };
        // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write a `struct
        // ifreq` with the flags member, which `req` lays out.
        unsafe {
            if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
                return Err(with_context(
                    io::Error::last_os_error(),
                    format!("cannot read the flags of {}", self.name),
                ));
            }
            req.flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
                return Err(with_context(
                    io::Error::last_os_error(),
                    format!("cannot bring {} up", self.name),
                ));
            }
        }
        Ok(())
    }

    /// The device's MAC address.
    pub fn mac(&self) -> io::Result<[u8; 6]> {
        interface_mac(&self.name)
    }

    /// Reads one frame into `buf`; None when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(with_context(e, format!("reading {}", self.name))),
        }
    }

    /// Writes one frame into the kernel as if received on the device.
    /// False when the device's queue is full (the frame is dropped).
    pub fn write(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: `frame` is valid for reads of its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => Ok(false),
            _ => Err(with_context(e, format!("writing to {}", self.name))),
        }
    }

    /// Waits until a frame can be read or `timeout` passes (ns precision:
    /// a pacer wakes for its next departure).
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        wait_readable(self.fd.as_fd(), timeout)
    }
}

/// Waits until `fd` is readable or `timeout` passes; true when readable.
pub fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0)
}

/// The MAC address of interface `iface`.
pub fn interface_mac(iface: &str) -> io::Result<[u8; 6]> {
    let s = ioctl_socket()?;
    let mut req = IfReqAddr {
        name: ifname(iface)?,
        // SAFETY: sockaddr is plain old data; all zeroes is a valid value.
        addr: unsafe { std::mem::zeroed() },
        _pad: [0; 8],
    };
    // SAFETY: SIOCGIFHWADDR writes a `struct ifreq` with the hwaddr
    // member, which `req` lays out.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req) } < 0 {
        return Err(with_context(
            io::Error::last_os_error(),
            format!("cannot read the MAC address of {iface}"),
        ));
    }
    let mut mac = [0u8; 6];
    for (m, b) in mac.iter_mut().zip(req.addr.sa_data.iter()) {
        *m = *b as u8;
    }
    Ok(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_refused_before_any_system_call() {
        for bad in ["", "a/b", "sixteen-bytes-xx"] {
            let e = Tap::open(bad).err().expect(bad);
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}: {e}");
            assert!(e.to_string().contains("interface name"), "{e}");
        }
    }

    #[test]
    fn loopback_mac_is_all_zero_and_a_missing_interface_is_named() {
        assert_eq!(interface_mac("lo").unwrap(), [0; 6]);
        let e = interface_mac("sluice-none0").unwrap_err();
        assert!(e.to_string().contains("sluice-none0"), "{e}");
    }
}
