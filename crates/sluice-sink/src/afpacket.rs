//! AF_PACKET backend: a PACKET_MMAP TX ring (TPACKET_V2) with
//! PACKET_QDISC_BYPASS and batched kicks; sendmmsg where no ring can be had.
//!
//! Design: frames are copied straight into the ring slot the kernel shares
//! with us, marked SEND_REQUEST, and one `sendto(NULL)` per [`Sink::flush`]
//! hands the whole batch to the driver: one syscall per batch at top speed,
//! one per packet when pacing (the engine flushes before every wait). The
//! qdisc bypass skips the traffic-control layer, as trafgen does.
//!
//! Checksum offload (`--csum-offload`): each frame is preceded by a
//! virtio-net header (PACKET_VNET_HDR) that leaves its TCP or UDP checksum
//! to the driver, or to the kernel where the driver cannot compute it.

use crate::iface::{check_up, ifindex, read_mtu, ETH_HEADER, VLAN_TAG};
use crate::sockopt::setsockopt;
use crate::{Sink, SinkError};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// How long a full TX ring may stay full before the device counts as dead.
const RING_STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// Frame slots in the ring, and bytes per 64 KiB block (order-4 pages: small
/// enough that the allocation never fails, large enough for 32 × 2 KiB slots).
const RING_FRAMES: u32 = 4096;
const BLOCK_SIZE: u32 = 1 << 16;
/// tpacket2_hdr is 32 bytes; TX data starts at TPACKET2_HDRLEN − sizeof(sockaddr_ll).
const TX_DATA_OFFSET: usize = 32;
/// Frames queued in the ring before a kick at top speed.
const KICK_BATCH: usize = 256;
/// Frames gathered before a sendmmsg call in the fallback mode.
const MMSG_BATCH: usize = 64;

/// `enum tpacket_versions` value of TPACKET_V2 (linux/if_packet.h).
const TPACKET_V2: i32 = 1;
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 4;

/// `PACKET_VNET_HDR` (linux/if_packet.h): frames carry a virtio_net_hdr.
const PACKET_VNET_HDR: i32 = 15;
/// `struct virtio_net_hdr`: flags, gso_type, hdr_len, gso_size,
/// csum_start, csum_offset.
const VNET_HDR_LEN: usize = 10;
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;

/// The virtio-net header in front of `frame`: the checksum to leave to the
/// device (whose field then holds the pseudo-header sum), or none (the
/// frame goes as it is: not TCP/UDP, a fragment, padded). Native byte
/// order: packet sockets use the legacy virtio layout.
fn vnet_header(frame: &mut [u8]) -> [u8; VNET_HDR_LEN] {
    let mut h = [0u8; VNET_HDR_LEN];
    if let Some(at) = sluice_wire::leave_checksum_to_device(frame) {
        h[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
        h[6..8].copy_from_slice(&at.start.to_ne_bytes());
        h[8..10].copy_from_slice(&at.offset.to_ne_bytes());
    }
    h
}

/// How frames reach the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TxMode {
    /// PACKET_TX_RING, falling back to sendmmsg if the ring is refused.
    #[default]
    Auto,
    /// sendmmsg batches only.
    Sendmmsg,
}

sluice_core::named_values!(TxMode {
    Auto => "ring",
    Sendmmsg => "sendmmsg",
});

pub struct AfPacketSink {
    iface: String,
    fd: OwnedFd,
    /// MTU + Ethernet header: the longest frame without an 802.1Q tag.
    max_plain: usize,
    /// `max_plain` + one 802.1Q tag: the longest frame at all (slot size).
    max_frame: usize,
    path: Path,
    /// Frames queued since the last flush.
    pending: usize,
    /// Frames the kernel refused once queued (skipped and counted).
    rejected: u64,
    /// Bytes of virtio-net header in front of each frame: 0, or
    /// VNET_HDR_LEN with checksum offload.
    vnet: usize,
    /// With checksum offload, who computes the sums (for `describe`),
    /// asked of the driver once at open.
    csum_by: &'static str,
    /// Why a bare `--to IFACE` came here (for `describe`).
    picked: Option<String>,
}

enum Path {
    Ring(Ring),
    Mmsg(Mmsg),
}

struct Ring {
    base: *mut u8,
    len: usize,
    frame_size: usize,
    frames: usize,
    head: usize,
}

// SAFETY: the mapping is owned exclusively by this Ring (one TX thread); the
// raw pointer is only dereferenced through &mut self methods.
unsafe impl Send for Ring {}

struct Mmsg {
    /// `MMSG_BATCH` slots of `stride` bytes.
    buf: Vec<u8>,
    stride: usize,
    lens: Vec<usize>,
    slot: usize,
}

fn last_err(what: String) -> SinkError {
    SinkError::os(what, io::Error::last_os_error())
}

impl AfPacketSink {
    /// Opens the interface; with `csum_offload`, TCP and UDP checksums are
    /// left to the device.
    pub fn open(iface: &str, mode: TxMode, csum_offload: bool) -> Result<Self, SinkError> {
        let mtu = read_mtu(iface)?;
        check_up(iface)?;
        let max_plain = mtu + ETH_HEADER;
        let max_frame = max_plain + VLAN_TAG;
        let ifindex = ifindex(iface)?;
        // Protocol 0: this socket transmits only and never receives a copy of
        // the traffic, which would cost a clone per frame.
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(last_err(
                "socket(AF_PACKET) (needs root or CAP_NET_RAW)".into(),
            ));
        }
        // SAFETY: `raw` is a fresh, valid descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is plain data; zero is a valid initial value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a live sockaddr_ll and the length matches it.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(last_err(format!("bind to '{iface}'")));
        }
        let one: i32 = 1;
        // Older kernels lack the bypass: sending still works through the qdisc.
        let _ = setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &one);
        // A frame of the ring the kernel cannot send is dropped and the
        // ring goes on (without it the kernel stops at that slot).
        let _ = setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_LOSS, &one);
        // Before the ring: the kernel refuses the option once a ring exists.
        let vnet = if csum_offload {
            setsockopt(&fd, libc::SOL_PACKET, PACKET_VNET_HDR, &one).map_err(|e| {
                SinkError::os(
                    format!("checksum offload (PACKET_VNET_HDR) on '{iface}'"),
                    e,
                )
            })?;
            VNET_HDR_LEN
        } else {
            0
        };
        let csum_by = if !csum_offload {
            ""
        } else if sluice_sys::ethtool::tx_checksum(iface).unwrap_or(false) {
            ", checksums by the device"
        } else {
            ", checksums by the kernel (the driver has no tx-checksumming)"
        };
        let slot = max_frame + vnet;
        let path = match mode {
            TxMode::Auto => match Ring::setup(&fd, slot) {
                Ok(r) => Path::Ring(r),
                Err(_) => Path::Mmsg(Mmsg::new(slot)),
            },
            TxMode::Sendmmsg => Path::Mmsg(Mmsg::new(slot)),
        };
        Ok(AfPacketSink {
            iface: iface.to_string(),
            fd,
            max_plain,
            max_frame,
            path,
            pending: 0,
            rejected: 0,
            vnet,
            csum_by,
            picked: None,
        })
    }

    /// The sink a bare `--to IFACE` chose, and why.
    pub fn picked(mut self, why: String) -> Self {
        self.picked = Some(why);
        self
    }

    pub fn uses_ring(&self) -> bool {
        matches!(self.path, Path::Ring(_))
    }

    /// Hands the queued ring slots to the kernel without waiting.
    fn kick_queued(&mut self) -> Result<(), SinkError> {
        self.pending = 0;
        kick(
            &self.fd,
            &self.iface,
            libc::MSG_DONTWAIT,
            &mut self.rejected,
        )
    }
}

/// Kicks the ring: the kernel transmits every SEND_REQUEST slot. Without
/// MSG_DONTWAIT it returns once they are all handed to the driver. A frame
/// the kernel refuses (EINVAL, EMSGSIZE) is counted in `rejected`; the
/// ring goes on past it (PACKET_LOSS).
fn kick(fd: &OwnedFd, iface: &str, flags: i32, rejected: &mut u64) -> Result<(), SinkError> {
    loop {
        // SAFETY: a zero-length sendto with null buffer and address is the
        // documented TX-ring kick; no memory is passed.
        let rc = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                std::ptr::null(),
                0,
                flags,
                std::ptr::null(),
                0,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            // Device queue full: the frames stay queued for the next kick.
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) => return Ok(()),
            Some(libc::EINVAL) | Some(libc::EMSGSIZE) => {
                *rejected += 1;
                continue;
            }
            _ => return Err(SinkError::os(format!("send on {iface}"), err)),
        }
    }
}

impl Ring {
    /// A ring whose slots take `max_frame` bytes (virtio-net header included).
    fn setup(fd: &OwnedFd, max_frame: usize) -> io::Result<Ring> {
        let version: i32 = TPACKET_V2;
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)?;
        let frame_size = (max_frame + TX_DATA_OFFSET).next_power_of_two().max(2048) as u32;
        let block_size = BLOCK_SIZE.max(frame_size);
        let frames_per_block = block_size / frame_size;
        let req = libc::tpacket_req {
            tp_block_size: block_size,
            tp_block_nr: RING_FRAMES / frames_per_block.min(RING_FRAMES),
            tp_frame_size: frame_size,
            tp_frame_nr: (RING_FRAMES / frames_per_block.min(RING_FRAMES)) * frames_per_block,
        };
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &req)?;
        let len = req.tp_block_size as usize * req.tp_block_nr as usize;
        // SAFETY: mapping the ring the kernel just allocated for this socket,
        // with the exact size it was configured with; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            base: base.cast(),
            len,
            frame_size: frame_size as usize,
            frames: req.tp_frame_nr as usize,
            head: 0,
        })
    }

    /// The status word of slot `i`, shared with the kernel.
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: i < frames, so the slot header lies inside the mapping; slot
        // starts are frame_size-aligned (≥ 2048), so the u32 is aligned; the
        // kernel accesses the status word atomically as well.
        unsafe { &*(self.base.add(i * self.frame_size) as *const AtomicU32) }
    }

    /// Copies `head` then `body` into the head slot if it is free, behind a
    /// virtio-net header when `vnet` is its length. Returns false when the
    /// ring is full (the slot still belongs to the kernel).
    fn push(&mut self, head: &[u8], body: &[u8], vnet: usize) -> bool {
        let status = self.status(self.head).load(Ordering::Acquire);
        if status != TP_STATUS_AVAILABLE && status != TP_STATUS_WRONG_FORMAT {
            return false;
        }
        let frame_len = head.len() + body.len();
        let len = vnet + frame_len;
        // SAFETY: the slot is AVAILABLE, so the kernel does not touch it until
        // we publish SEND_REQUEST below; vnet + head.len() + body.len() ≤
        // frame_size − 32 was checked by the caller (max_frame + vnet + 32 ≤
        // frame_size), so the copies, the slice over the frame and the
        // tp_len/tp_snaplen writes stay inside this slot, which nothing else
        // references meanwhile.
        unsafe {
            let slot = self.base.add(self.head * self.frame_size);
            let data = slot.add(TX_DATA_OFFSET);
            let frame = data.add(vnet);
            std::ptr::copy_nonoverlapping(head.as_ptr(), frame, head.len());
            std::ptr::copy_nonoverlapping(body.as_ptr(), frame.add(head.len()), body.len());
            if vnet > 0 {
                let h = vnet_header(std::slice::from_raw_parts_mut(frame, frame_len));
                std::ptr::copy_nonoverlapping(h.as_ptr(), data, vnet);
            }
            let hdr = slot as *mut u32;
            hdr.add(1).write_volatile(len as u32); // tp_len
            hdr.add(2).write_volatile(len as u32); // tp_snaplen
        }
        self.status(self.head)
            .store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.head = (self.head + 1) % self.frames;
        true
    }

    /// True when every slot has been sent by the kernel.
    fn drained(&self) -> bool {
        (0..self.frames).all(|i| {
            let s = self.status(i).load(Ordering::Acquire);
            s == TP_STATUS_AVAILABLE || s == TP_STATUS_WRONG_FORMAT
        })
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned, and no reference
        // into the mapping outlives the Ring.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

impl Mmsg {
    fn new(stride: usize) -> Mmsg {
        Mmsg {
            buf: vec![0; MMSG_BATCH * stride],
            stride,
            lens: vec![0; MMSG_BATCH],
            slot: 0,
        }
    }

    /// Sends the gathered frames; returns how many the kernel refused.
    fn send_all(&mut self, fd: &OwnedFd, iface: &str) -> Result<u64, SinkError> {
        let n = self.slot;
        let mut iov: Vec<libc::iovec> = (0..n)
            .map(|i| libc::iovec {
                iov_base: self.buf[i * self.stride..].as_mut_ptr().cast(),
                iov_len: self.lens[i],
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: mmsghdr is plain data; zero is a valid initial value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        // SAFETY: the iovecs point into self.buf, which outlives the call.
        let refused = unsafe {
            crate::mmsg::sendmmsg_all(fd.as_raw_fd(), &mut msgs, &|| format!("on {iface}"), &mut 0)?
        };
        self.slot = 0;
        Ok(refused)
    }
}

impl Sink for AfPacketSink {
    #[inline]
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send_parts(frame, &[], stamp_ns)
    }

    #[inline]
    fn send_parts(&mut self, head: &[u8], body: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        let len = crate::iface::fits(head, body, self.max_plain, self.max_frame)?;
        match &mut self.path {
            Path::Ring(ring) => {
                let mut stalled: Option<std::time::Instant> = None;
                while !ring.push(head, body, self.vnet) {
                    // Ring full: hand the queued frames over until a slot
                    // frees. A device that takes nothing (no carrier, a TAP
                    // nobody reads) would hold the thread here for ever.
                    kick(&self.fd, &self.iface, 0, &mut self.rejected)?;
                    let since = stalled.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= RING_STALL {
                        return Err(SinkError::os(
                            format!("send on {}", self.iface),
                            io::Error::new(
                                io::ErrorKind::TimedOut,
                                format!(
                                    "the device took no frame for {} s (link down, no carrier, a TAP nobody reads?)",
                                    RING_STALL.as_secs()
                                ),
                            ),
                        ));
                    }
                    std::hint::spin_loop();
                }
                self.pending += 1;
                // Bound the batch so the wire never idles behind a full ring.
                if self.pending >= KICK_BATCH {
                    self.kick_queued()?;
                }
            }
            Path::Mmsg(m) => {
                let at = m.slot * m.stride + self.vnet;
                m.buf[at..at + head.len()].copy_from_slice(head);
                m.buf[at + head.len()..at + len].copy_from_slice(body);
                if self.vnet > 0 {
                    let h = vnet_header(&mut m.buf[at..at + len]);
                    m.buf[at - self.vnet..at].copy_from_slice(&h);
                }
                m.lens[m.slot] = self.vnet + len;
                m.slot += 1;
                if m.slot == MMSG_BATCH {
                    self.rejected += m.send_all(&self.fd, &self.iface)?;
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        match &mut self.path {
            Path::Ring(_) => {
                if self.pending > 0 {
                    self.kick_queued()?;
                }
                Ok(())
            }
            Path::Mmsg(m) => {
                self.rejected += m.send_all(&self.fd, &self.iface)?;
                Ok(())
            }
        }
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.flush()?;
        if let Path::Ring(ring) = &self.path {
            // Wait (bounded) until the kernel has sent every queued slot, so no
            // frame is lost when the socket closes.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while !ring.drained() && std::time::Instant::now() < deadline {
                kick(&self.fd, &self.iface, 0, &mut self.rejected)?;
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        Ok(())
    }

    fn rejected(&self) -> u64 {
        self.rejected
    }

    fn tx_path(&self) -> Option<&'static str> {
        Some(if self.uses_ring() {
            "tx-ring"
        } else {
            "sendmmsg"
        })
    }

    fn describe(&self) -> String {
        let how = if self.uses_ring() {
            "tx-ring"
        } else {
            "sendmmsg"
        };
        let picked = self.picked.as_deref().map(|p| format!("; {p}"));
        format!(
            "afpacket:{} ({how}, qdisc bypass{}{})",
            self.iface,
            self.csum_by,
            picked.unwrap_or_default()
        )
    }
}
