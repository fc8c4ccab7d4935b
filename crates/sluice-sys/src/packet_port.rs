//! A port that sends and receives whole frames on one interface: an
//! AF_PACKET raw socket bound to it, non-blocking, that ignores what this
//! host sends there. Frames move in batches, one `recvmmsg` or `sendmmsg`
//! per batch, for a user-space stack that answers what arrives (the
//! stateful sources): unlike [`crate::rx_ring::RxRing`], a frame is read
//! as soon as it arrives, never held until a block retires.

use crate::packet_rx::{bind_all, ifindex, setsockopt};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Frames per `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 64;
/// Bytes per receive slot: a whole coalesced frame fits (GRO on the
/// receiving interface, or GSO on a veth peer, hands over up to 64 KiB
/// of TCP payload in one frame); a longer one is cut and counted by
/// [`RxBatch::cut`].
pub const SLOT: usize = 65536 + 512;

pub struct PacketPort {
    fd: OwnedFd,
    iface: String,
    mac: [u8; 6],
}

/// Frames received by one [`PacketPort::recv`].
pub struct RxBatch {
    buf: Vec<u8>,
    lens: [usize; BATCH],
    count: usize,
    /// Frames longer than [`SLOT`] so far (each was cut there).
    pub cut: u64,
}

impl Default for RxBatch {
    fn default() -> Self {
        RxBatch {
            buf: vec![0; BATCH * SLOT],
            lens: [0; BATCH],
            count: 0,
            cut: 0,
        }
    }
}

impl RxBatch {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The `i`th frame of the batch.
    pub fn frame(&self, i: usize) -> &[u8] {
        &self.buf[i * SLOT..i * SLOT + self.lens[i]]
    }
}

fn os_err(what: String) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl PacketPort {
    /// Opens a port on `iface` (root or CAP_NET_RAW).
    pub fn open(iface: &str) -> io::Result<PacketPort> {
        let index = ifindex(iface)?;
        // Protocol 0: nothing arrives before the bind below.
        // SAFETY: socket(2) takes no pointers; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(os_err(format!(
                "cannot open a packet socket on {iface} (needs root or CAP_NET_RAW)"
            )));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let on: i32 = 1;
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &on,
            &format!("PACKET_IGNORE_OUTGOING on {iface}"),
        )?;
        // A burst waits in the socket instead of being dropped: 16 MiB each
        // way (SO_*BUFFORCE: root may pass the sysctl limits).
        let size: i32 = 16 << 20;
        for (opt, name) in [
            (libc::SO_RCVBUFFORCE, "SO_RCVBUFFORCE"),
            (libc::SO_SNDBUFFORCE, "SO_SNDBUFFORCE"),
        ] {
            setsockopt(
                &fd,
                libc::SOL_SOCKET,
                opt,
                &size,
                &format!("{name} on {iface}"),
            )?;
        }
        bind_all(&fd, index, iface)?;
        let mac = mac_of(iface)?;
        Ok(PacketPort {
            fd,
            iface: iface.to_string(),
            mac,
        })
    }

    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// The interface's hardware address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Joins fanout group `group` of its interface, whose classic BPF
    /// program `filter` says which member each arriving frame goes to
    /// (its return value modulo the members, in the order they joined).
    /// Frames this host sends are left out where the kernel can
    /// (`PACKET_FANOUT_FLAG_IGNORE_OUTGOING`, Linux 6.3): older kernels
    /// hand them to the group too, and the receiver must ignore them.
    pub fn join_fanout(&self, group: u16, filter: &[libc::sock_filter]) -> io::Result<()> {
        const CBPF: i32 = 6;
        const IGNORE_OUTGOING: i32 = 0x4000;
        let arg = i32::from(group) | ((CBPF | IGNORE_OUTGOING) << 16);
        let what = format!("PACKET_FANOUT on {}", self.iface);
        if setsockopt(&self.fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg, &what).is_err() {
            let arg = i32::from(group) | (CBPF << 16);
            setsockopt(&self.fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg, &what)?;
        }
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr() as *mut libc::sock_filter,
        };
        // PACKET_FANOUT_DATA (22): the group's program.
        setsockopt(
            &self.fd,
            libc::SOL_PACKET,
            22,
            &prog,
            &format!("PACKET_FANOUT_DATA on {}", self.iface),
        )
    }

    /// The socket, to wait on it with others ([`crate::poll::PollSet`]).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Takes the frames waiting, up to [`BATCH`], without waiting.
    pub fn recv(&self, batch: &mut RxBatch) -> io::Result<usize> {
        batch.count = 0;
        // SAFETY: iovec and mmsghdr are plain old data; zeroes are valid.
        let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = batch.buf.as_mut_ptr();
        for i in 0..BATCH {
            // SAFETY: slot i lies inside `batch.buf` (BATCH * SLOT bytes).
            iovs[i].iov_base = unsafe { base.add(i * SLOT) }.cast();
            iovs[i].iov_len = SLOT;
            msgs[i].msg_hdr.msg_iov = &mut iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: each message points at its iovec, each iovec at its own
        // slot of `batch.buf`; all outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(io::Error::new(
                    e.kind(),
                    format!("receiving on {}: {e}", self.iface),
                )),
            };
        }
        let n = n as usize;
        for (i, m) in msgs.iter().take(n).enumerate() {
            let len = m.msg_len as usize;
            if len > SLOT || m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                batch.cut += 1;
            }
            batch.lens[i] = len.min(SLOT);
        }
        batch.count = n;
        Ok(n)
    }

    /// Sends `frames` (each a whole Ethernet frame), in batches. Returns
    /// how many the kernel took; the rest found its queue full.
    pub fn send(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut sent = 0;
        while sent < frames.len() {
            let chunk = &frames[sent..frames.len().min(sent + BATCH)];
            // SAFETY: plain old data; zeroes are valid.
            let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
            for (i, f) in chunk.iter().enumerate() {
                iovs[i].iov_base = f.as_ptr() as *mut libc::c_void;
                iovs[i].iov_len = f.len();
                msgs[i].msg_hdr.msg_iov = &mut iovs[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: each message points at its iovec, each iovec at a
            // frame borrowed for the call; the kernel only reads them.
            let n = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    chunk.len() as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(sent),
                    _ => Err(io::Error::new(
                        e.kind(),
                        format!("sending on {}: {e}", self.iface),
                    )),
                };
            }
            sent += n as usize;
            if (n as usize) < chunk.len() {
                break;
            }
        }
        Ok(sent)
    }
}

/// The hardware address of `iface`, from sysfs.
pub fn mac_of(iface: &str) -> io::Result<[u8; 6]> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() != 6 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: not an Ethernet address: {}", text.trim()),
        ));
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{path}: not an Ethernet address: {}", text.trim()),
            )
        })?;
    }
    Ok(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interface_is_named() {
        let e = PacketPort::open("no-such-if0").err().expect("refused");
        assert!(e.to_string().contains("no-such-if0"), "{e}");
    }

    #[test]
    fn loopback_has_the_zero_address() {
        assert_eq!(mac_of("lo").unwrap(), [0; 6]);
    }
}
