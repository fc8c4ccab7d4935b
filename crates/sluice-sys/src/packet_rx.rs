//! Receiving whole frames from one interface: an AF_PACKET raw socket
//! bound to it. A relay's socket ignores the frames this host sends there
//! (`PACKET_IGNORE_OUTGOING`), so it never hears itself; a capture socket
//! ([`PacketRx::capture`]) takes both directions, in promiscuous mode, with
//! the kernel's nanosecond receive time of each frame (`SO_TIMESTAMPNS`).

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub struct PacketRx {
    fd: OwnedFd,
    iface: String,
    hardware_stamps: bool,
}

/// SO_TIMESTAMPING: receive stamps from the NIC where it makes them, and
/// the kernel's software stamp always (SOF_TIMESTAMPING_RX_HARDWARE |
/// RX_SOFTWARE | SOFTWARE | RAW_HARDWARE).
const STAMP_FLAGS: i32 = (1 << 2) | (1 << 3) | (1 << 4) | (1 << 6);

fn os_err(what: String) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl PacketRx {
    /// Opens a receive socket on `iface`, non-blocking.
    pub fn open(iface: &str) -> io::Result<PacketRx> {
        Self::open_with(iface, false)
    }

    /// Opens a capture socket on `iface`: both directions, promiscuous,
    /// kernel timestamps, a receive buffer as large as the kernel allows
    /// root (64 MiB), so a burst waits there instead of being dropped.
    pub fn capture(iface: &str) -> io::Result<PacketRx> {
        Self::open_with(iface, true)
    }

    fn open_with(iface: &str, capture: bool) -> io::Result<PacketRx> {
        let index = ifindex(iface)?;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket(2) takes no pointers; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(proto),
            )
        };
        if fd < 0 {
            return Err(os_err(format!("cannot open a packet socket on {iface}")));
        }
        // SAFETY: fd is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let opts: &[(i32, i32, i32, &str)] = if capture {
            &[
                (
                    libc::SOL_SOCKET,
                    libc::SO_TIMESTAMPING,
                    STAMP_FLAGS,
                    "SO_TIMESTAMPING",
                ),
                (libc::SOL_PACKET, libc::PACKET_AUXDATA, 1, "PACKET_AUXDATA"),
            ]
        } else {
            &[
                (
                    libc::SOL_PACKET,
                    libc::PACKET_IGNORE_OUTGOING,
                    1,
                    "PACKET_IGNORE_OUTGOING",
                ),
                (libc::SOL_PACKET, libc::PACKET_AUXDATA, 1, "PACKET_AUXDATA"),
            ]
        };
        for &(level, opt, value, name) in opts {
            setsockopt(&fd, level, opt, &value, &format!("{name} on {iface}"))?;
        }
        let mut hardware_stamps = false;
        if capture {
            // Hardware receive stamps where the driver has them (the NIC
            // must be told to stamp); the kernel's software stamp otherwise,
            // frame by frame.
            if crate::ethtool::ts_info(iface).is_ok_and(|t| t.hardware_rx()) {
                hardware_stamps = crate::ethtool::enable_rx_hw_stamps(iface).unwrap_or(false);
            }
            // Without privilege the kernel caps the buffer: that is fine.
            let size: libc::c_int = 64 << 20;
            if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size, "").is_err() {
                let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &size, "");
            }
        }
        bind_all(&fd, index, iface)?;
        if capture {
            promiscuous(&fd, index, iface)?;
        }
        Ok(PacketRx {
            fd,
            iface: iface.to_string(),
            hardware_stamps,
        })
    }

    /// True when the NIC was asked for hardware receive stamps and took it
    /// (each [`Received::hardware`] says which stamp a frame got).
    pub fn hardware_stamps(&self) -> bool {
        self.hardware_stamps
    }

    /// The socket, to wait on it with others.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// One frame into `buf`, waiting up to `timeout`; None when none came.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
        if !crate::tap::wait_readable(self.fd.as_fd(), timeout)? {
            return Ok(None);
        }
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // Room for a PACKET_AUXDATA and a timestamp message, u64-aligned.
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain old data; all zeroes is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: `msg` points at `iov` (valid for `buf`) and `control`,
        // both alive for the call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(io::Error::new(
                    e.kind(),
                    format!("receiving on {}: {e}", self.iface),
                )),
            };
        }
        let mut partial_checksum = false;
        let mut ts_ns = None;
        let mut hardware = false;
        // SAFETY: the kernel filled `control` and set msg_controllen; the
        // CMSG macros walk it within those bounds, and the auxdata message
        // holds a tpacket_auxdata (read unaligned).
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                    let aux: libc::tpacket_auxdata =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    partial_checksum = aux.tp_status & libc::TP_STATUS_CSUMNOTREADY != 0;
                }
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPING {
                    // struct scm_timestamping: [software, (legacy), raw hardware].
                    let t: [libc::timespec; 3] =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    let ns =
                        |t: &libc::timespec| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
                    if ns(&t[2]) != 0 {
                        ts_ns = Some(ns(&t[2]));
                        hardware = true;
                    } else if ns(&t[0]) != 0 {
                        ts_ns = Some(ns(&t[0]));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(Some(Received {
            // MSG_TRUNC returns the real length: a longer frame was cut.
            len: (n as usize).min(buf.len()),
            orig_len: n as usize,
            partial_checksum,
            ts_ns,
            hardware,
        }))
    }

    /// Frames the kernel dropped for want of buffer since the last call
    /// (`PACKET_STATISTICS`).
    pub fn drops(&self) -> io::Result<u64> {
        dropped(&self.fd).map_err(|e| io::Error::new(e.kind(), format!("{e} on {}", self.iface)))
    }
}

/// Binds packet socket `fd` to every protocol on interface `index`.
pub(crate) fn bind_all(fd: &OwnedFd, index: u32, iface: &str) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain old data; all zeroes is valid.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    sll.sll_ifindex = index as i32;
    // SAFETY: `sll` is a sockaddr_ll passed with its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(os_err(format!("cannot bind a packet socket to {iface}")));
    }
    Ok(())
}

/// Puts interface `index` in promiscuous mode for as long as packet
/// socket `fd` is open.
pub(crate) fn promiscuous(fd: &OwnedFd, index: u32, iface: &str) -> io::Result<()> {
    // SAFETY: packet_mreq is plain old data; all zeroes is valid.
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = index as i32;
    mr.mr_type = libc::PACKET_MR_PROMISC as u16;
    // SAFETY: the option takes a packet_mreq, passed with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            (&mr as *const libc::packet_mreq).cast(),
            std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(os_err(format!("promiscuous mode on {iface}")));
    }
    Ok(())
}

/// The index of interface `iface` (an error naming it when there is none).
pub(crate) fn ifindex(iface: &str) -> io::Result<u32> {
    let cname = std::ffi::CString::new(iface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
    // SAFETY: a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {iface}{}", crate::net::list_interfaces()),
        ));
    }
    Ok(index)
}

/// Frames a packet socket's kernel side dropped for want of room since
/// the last call (`PACKET_STATISTICS`; a TPACKET_V3 socket's answer is
/// longer, and its first two fields are the same).
pub(crate) fn dropped(fd: &OwnedFd) -> io::Result<u64> {
    // SAFETY: tpacket_stats_v3 is plain old data; all zeroes is valid.
    let mut st: libc::tpacket_stats_v3 = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
    // SAFETY: the option fills at most `len` bytes of the struct.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats_v3).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(os_err("PACKET_STATISTICS".into()));
    }
    Ok(u64::from(st.tp_drops))
}

/// Sets socket option `opt` to `value`; an error names `name`.
pub(crate) fn setsockopt<T>(
    fd: &OwnedFd,
    level: i32,
    opt: i32,
    value: &T,
    name: &str,
) -> io::Result<()> {
    // SAFETY: `value` points at a live T, passed with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(os_err(name.to_string()));
    }
    Ok(())
}

/// One received frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Bytes in the buffer.
    pub len: usize,
    /// The frame's length on the wire (more than `len` when the buffer
    /// was too small).
    pub orig_len: usize,
    /// The L4 checksum was left to offload (`TP_STATUS_CSUMNOTREADY`): the
    /// frame came from a local device and its checksum field is not final.
    pub partial_checksum: bool,
    /// When the kernel received it (ns since the epoch), on capture sockets.
    pub ts_ns: Option<u64>,
    /// `ts_ns` is the NIC's hardware stamp (else the kernel's software one).
    pub hardware: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interface_is_named() {
        let e = PacketRx::open("sluice-none0").err().unwrap();
        assert!(e.to_string().contains("sluice-none0"), "{e}");
    }
}
