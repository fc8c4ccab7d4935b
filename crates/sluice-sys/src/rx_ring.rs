//! A TPACKET_V3 receive ring: the kernel writes arriving frames, each with
//! its receive time, into blocks of a memory map shared with this process,
//! and hands a block over once it is full or its timer (10 ms) retires
//! it. Reading costs no system call per frame, only a `poll` when no block
//! is ready, where `recvmsg` costs one per frame with its control
//! messages (see docs/BENCHMARKS.md, "The receive side").
//!
//! Like [`crate::packet_rx::PacketRx::receiver`], the socket takes every
//! frame arriving on the interface (promiscuous) and ignores the ones this
//! host sends there. Receive times are the kernel's (ns), or the NIC's
//! where the driver stamps in hardware and was told to.

use crate::packet_rx::setsockopt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// Bytes per block (a power of two, a multiple of the page size).
const BLOCK_SIZE: usize = 1 << 20;
/// Blocks in the ring: 64 MiB in all, as the capture socket's buffer.
const BLOCKS: usize = 64;
/// Frame slot size the kernel is told (TPACKET_V3 packs frames tighter).
const FRAME_SIZE: usize = 2048;
/// A block not full is handed over after this many ms.
const RETIRE_MS: u32 = 10;
/// How far ahead of the frame being read the block is prefetched, bytes:
/// the kernel wrote it from another CPU, so each line is a miss that
/// prefetching overlaps with the work on the frames before it.
const PREFETCH_AHEAD: usize = 1024;

pub struct RxRing {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    /// The block to read next.
    next: usize,
    hardware_stamps: bool,
}

// SAFETY: the mapping belongs to this ring alone and is only touched
// through `&mut self`; moving it to another thread moves that ownership.
unsafe impl Send for RxRing {}

fn os_err(what: String) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// One frame the ring held.
pub struct RingFrame<'a> {
    pub data: &'a [u8],
    /// Its length on the wire (more than `data` when the slot cut it).
    pub orig_len: usize,
    /// Receive time, ns since the epoch.
    pub ts_ns: u64,
    /// The stamp is the NIC's.
    pub hardware: bool,
}

impl RxRing {
    /// Opens a receive ring on `iface`.
    pub fn open(iface: &str) -> io::Result<RxRing> {
        let index = crate::packet_rx::ifindex(iface)?;
        // Protocol 0: nothing arrives before the bind to `iface` below
        // (ETH_P_ALL here would fill the ring from every interface).
        // SAFETY: socket(2) takes no pointers; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(os_err(format!(
                "cannot open a packet socket on {iface} (needs root or CAP_NET_RAW)"
            )));
        }
        // SAFETY: a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let version = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &version,
            "PACKET_VERSION",
        )?;
        let one: libc::c_int = 1;
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &one,
            "PACKET_IGNORE_OUTGOING",
        )?;
        let mut hardware_stamps = false;
        if crate::ethtool::ts_info(iface).is_ok_and(|t| t.hardware_rx())
            && crate::ethtool::enable_rx_hw_stamps(iface).unwrap_or(false)
        {
            // The ring's stamps are the NIC's raw ones where it has them.
            let raw_hw: libc::c_int = 1 << 6; // SOF_TIMESTAMPING_RAW_HARDWARE
            hardware_stamps = setsockopt(
                &fd,
                libc::SOL_PACKET,
                libc::PACKET_TIMESTAMP,
                &raw_hw,
                "PACKET_TIMESTAMP",
            )
            .is_ok();
        }
        let req = libc::tpacket_req3 {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCKS as u32,
            tp_frame_size: FRAME_SIZE as u32,
            tp_frame_nr: (BLOCK_SIZE / FRAME_SIZE * BLOCKS) as u32,
            tp_retire_blk_tov: RETIRE_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_RX_RING,
            &req,
            "PACKET_RX_RING",
        )?;
        let len = BLOCK_SIZE * BLOCKS;
        // SAFETY: maps the ring the kernel just made for this socket; the
        // result is checked before use and unmapped on drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(os_err(format!("mapping the receive ring of {iface}")));
        }
        let ring = RxRing {
            fd,
            base: base.cast(),
            len,
            next: 0,
            hardware_stamps,
        };
        crate::packet_rx::bind_all(&ring.fd, index, iface)?;
        crate::packet_rx::promiscuous(&ring.fd, index, iface)?;
        Ok(ring)
    }

    /// True when the NIC stamps arriving frames (else the kernel does).
    pub fn hardware_stamps(&self) -> bool {
        self.hardware_stamps
    }

    /// The descriptor of block `i`.
    fn block(&self, i: usize) -> *mut libc::tpacket_block_desc {
        // SAFETY: i < BLOCKS, so the offset stays inside the mapping.
        unsafe { self.base.add(i * BLOCK_SIZE).cast() }
    }

    /// Whether block `i` is the reader's (the kernel handed it over).
    fn ready(&self, i: usize) -> bool {
        // SAFETY: the block header is inside the mapping; the kernel
        // writes block_status last, so it is read with acquire ordering
        // (a volatile read followed by an acquire fence).
        let status = unsafe {
            let bh = std::ptr::addr_of!((*self.block(i)).hdr.bh1.block_status);
            std::ptr::read_volatile(bh)
        };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        status & libc::TP_STATUS_USER != 0
    }

    /// Hands every frame of each ready block to `f`, block after block,
    /// then gives the blocks back to the kernel; waits up to `timeout`
    /// when none is ready. Returns the frames handled.
    pub fn drain(
        &mut self,
        timeout: Duration,
        mut f: impl FnMut(RingFrame<'_>),
    ) -> io::Result<u64> {
        if !self.ready(self.next) {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_fd().as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one pollfd, passed with its count.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
        let mut n = 0;
        while self.ready(self.next) {
            let block = self.block(self.next);
            // SAFETY: the block is the reader's until its status is set
            // back; the kernel wrote num_pkts frames from
            // offset_to_first_pkt, each header's tp_next_offset leading to
            // the next, all inside the block (checked against its size).
            unsafe {
                let h = &(*block).hdr.bh1;
                let start = block.cast::<u8>();
                let mut at = h.offset_to_first_pkt as usize;
                // Lines below `fetched` were asked for; the frames are
                // packed in order, so asking ahead of `at` covers each.
                let mut fetched = at & !63;
                for _ in 0..h.num_pkts {
                    let ahead = (at + PREFETCH_AHEAD).min(BLOCK_SIZE);
                    while fetched < ahead {
                        crate::prefetch::prefetch(start.add(fetched));
                        fetched += 64;
                    }
                    if at + std::mem::size_of::<libc::tpacket3_hdr>() > BLOCK_SIZE {
                        break;
                    }
                    let p = std::ptr::read_unaligned(start.add(at).cast::<libc::tpacket3_hdr>());
                    let (mac, snap) = (usize::from(p.tp_mac), p.tp_snaplen as usize);
                    if at + mac + snap > BLOCK_SIZE {
                        break;
                    }
                    let data = std::slice::from_raw_parts(start.add(at + mac), snap);
                    f(RingFrame {
                        data,
                        orig_len: p.tp_len as usize,
                        ts_ns: u64::from(p.tp_sec) * 1_000_000_000 + u64::from(p.tp_nsec),
                        hardware: p.tp_status & libc::TP_STATUS_TS_RAW_HARDWARE != 0,
                    });
                    n += 1;
                    if p.tp_next_offset == 0 {
                        break;
                    }
                    at += p.tp_next_offset as usize;
                }
                // Give the block back: the frames were used above.
                std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
                let bh = std::ptr::addr_of_mut!((*block).hdr.bh1.block_status);
                std::ptr::write_volatile(bh, libc::TP_STATUS_KERNEL);
            }
            self.next = (self.next + 1) % BLOCKS;
        }
        Ok(n)
    }

    /// Frames the kernel dropped (no free block) since the last call.
    pub fn drops(&self) -> io::Result<u64> {
        crate::packet_rx::dropped(&self.fd)
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: base/len are what mmap returned; no frame borrowed from
        // the ring outlives `drain`.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}
