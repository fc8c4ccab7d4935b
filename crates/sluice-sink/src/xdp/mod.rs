//! AF_XDP backend (`--to xdp:IFACE`): one XDP socket per TX thread, bound
//! to one queue of the interface, with its own UMEM, TX ring and
//! completion ring. Frames are written straight into UMEM frames (the
//! build stage's only copy, as with the AF_PACKET ring); a batch of
//! descriptors is published and the kernel woken once (`need_wakeup`);
//! completed frames are reaped in batches and reused.
//!
//! Modes: zero-copy where the driver offers it (the NIC DMAs from the
//! UMEM), copy mode otherwise (the kernel builds an skb per frame and hands
//! it straight to the driver, past the qdisc). In copy mode one wakeup
//! sends at most the socket's budget (32 frames by default, more where
//! the kernel takes `XDP_MAX_TX_SKB_BUDGET`), so [`Sink::flush`] wakes the
//! kernel until the ring is empty. No XDP program is needed to send.
//!
//! Socket set-up goes through rustix's typed calls; the rings are the hand
//! written hot path (`sluice_sys::xdp::ring`).

mod kept;

use crate::iface::{check_up, ifindex, read_mtu, ETH_HEADER, VLAN_TAG};
use crate::{Copies, KeptFrame, Sink, SinkError};
use kept::{Kept, Spot};
use rustix::net::xdp::{
    SocketAddrXdp, SocketAddrXdpFlags, XdpOptionsFlags, XdpUmemReg, XdpUmemRegFlags,
    XDP_PGOFF_TX_RING, XDP_UMEM_PGOFF_COMPLETION_RING,
};
use rustix::net::{sockopt, AddressFamily, SendFlags, SocketFlags, SocketType};
use sluice_sys::xdp::ring::{CompRing, TxRing, Umem};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

/// Descriptors in the TX and completion rings; the UMEM holds twice as
/// many frames, so a full TX ring never waits for a completion.
const RING_SIZE: u32 = 2048;
const UMEM_FRAMES: usize = 2 * RING_SIZE as usize;
/// The fill ring must exist for the bind; a TX-only socket never uses it.
const FILL_SIZE: u32 = 64;
/// Descriptors written before they are published and the kernel woken.
const KICK_BATCH: u32 = 64;
/// Frames one copy-mode wakeup may send (`XDP_MAX_TX_SKB_BUDGET`, Linux
/// 6.17+; older kernels keep their 32 and refuse the option, harmlessly).
const SKB_BUDGET: u32 = 256;
const XDP_MAX_TX_SKB_BUDGET: i32 = 9;
/// How long a busy queue is retried at bind.
const BIND_RETRY: Duration = Duration::from_secs(1);
/// How long the kernel may take no descriptor before the device counts as
/// dead (as the AF_PACKET ring).
const STALL: Duration = Duration::from_secs(2);

/// Which XDP mode to bind in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XdpMode {
    /// Zero-copy where the driver offers it, else copy mode (and the
    /// summary says which ran).
    #[default]
    Auto,
    /// Copy mode only.
    Copy,
    /// Zero-copy or nothing: refused where the driver lacks it.
    ZeroCopy,
}

sluice_core::named_values!(XdpMode {
    Auto => "auto",
    Copy => "copy",
    ZeroCopy => "zerocopy",
});

pub struct XdpSink {
    // Field order is drop order: the rings are unmapped, then the socket
    // closes, then the UMEM goes.
    tx: TxRing,
    cq: CompRing,
    fd: OwnedFd,
    umem: Umem,
    /// UMEM offsets of scratch frames we may fill.
    free: Vec<u64>,
    /// Frames kept for the run, after the scratch frames.
    kept: Kept,
    iface: String,
    queue: u32,
    zerocopy: bool,
    /// MTU + Ethernet header, and one 802.1Q tag more.
    max_plain: usize,
    max_frame: usize,
    /// Descriptors written and not yet published.
    unpublished: u32,
    unpublished_bytes: u64,
    rejected: u64,
    /// Why a bare `--to IFACE` came here (for `describe`).
    picked: Option<String>,
}

impl XdpSink {
    /// Opens an XDP socket on `iface`'s queue `queue`, with room for
    /// `keep` bytes of kept frames (placed once, sent without a copy).
    pub fn open(iface: &str, queue: u32, mode: XdpMode, keep: u64) -> Result<Self, SinkError> {
        let mtu = read_mtu(iface)?;
        check_up(iface)?;
        let index = ifindex(iface)?;
        let queues = sluice_sys::net::queues(iface, "tx").unwrap_or(1).max(1);
        if queue as usize >= queues {
            return Err(SinkError::Config(format!(
                "xdp:{iface} has {queues} TX queue{}; queue {queue} does not exist \
                 (one queue per TX thread: lower --threads, pick --tx-queues, or give the \
                 interface more queues, e.g. `ethtool -L {iface} combined N`; a veth gets \
                 them when created: numtxqueues N numrxqueues N)",
                if queues == 1 { "" } else { "s" }
            )));
        }
        let max_plain = mtu + ETH_HEADER;
        let max_frame = max_plain + VLAN_TAG;
        // Aligned chunks are a power of two from 2 KiB to one page.
        let chunk = max_frame.next_power_of_two().max(2048);
        if chunk > 4096 {
            return Err(SinkError::Config(format!(
                "xdp:{iface} has an MTU of {mtu}: AF_XDP frames are at most one page \
                 (4096 bytes) here; lower the MTU or use afpacket:{iface}"
            )));
        }
        let fd = rustix::net::socket_with(
            AddressFamily::XDP,
            SocketType::RAW,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| no_xdp(iface, e.into()))?;
        let kept_chunks = keep.div_ceil(chunk as u64) as usize;
        let umem = Umem::new(UMEM_FRAMES + kept_chunks, chunk)
            .map_err(|e| SinkError::os(format!("allocating the UMEM for xdp:{iface}"), e))?;
        let setup = |what: &str, e: rustix::io::Errno| {
            SinkError::os(format!("xdp:{iface}: {what}"), e.into())
        };
        sockopt::set_xdp_umem_reg(
            &fd,
            XdpUmemReg {
                addr: umem.addr(),
                len: umem.bytes() as u64,
                chunk_size: chunk as u32,
                headroom: 0,
                flags: XdpUmemRegFlags::empty(),
                tx_metadata_len: 0,
            },
        )
        .map_err(|e| setup("registering the UMEM", e))?;
        sockopt::set_xdp_umem_fill_ring_size(&fd, FILL_SIZE)
            .map_err(|e| setup("sizing the fill ring", e))?;
        sockopt::set_xdp_umem_completion_ring_size(&fd, RING_SIZE)
            .map_err(|e| setup("sizing the completion ring", e))?;
        sockopt::set_xdp_tx_ring_size(&fd, RING_SIZE)
            .map_err(|e| setup("sizing the TX ring", e))?;
        let off = sockopt::xdp_mmap_offsets(&fd).map_err(|e| setup("reading ring offsets", e))?;
        let tx = TxRing::map(fd.as_fd(), &off.tx, XDP_PGOFF_TX_RING, RING_SIZE)
            .map_err(|e| SinkError::os(format!("xdp:{iface}: mapping the TX ring"), e))?;
        let cq = CompRing::map(
            fd.as_fd(),
            &off.cr,
            XDP_UMEM_PGOFF_COMPLETION_RING,
            RING_SIZE,
        )
        .map_err(|e| SinkError::os(format!("xdp:{iface}: mapping the completion ring"), e))?;
        let mut flags = SocketAddrXdpFlags::XDP_USE_NEED_WAKEUP;
        match mode {
            XdpMode::Auto => {}
            XdpMode::Copy => flags |= SocketAddrXdpFlags::XDP_COPY,
            XdpMode::ZeroCopy => flags |= SocketAddrXdpFlags::XDP_ZEROCOPY,
        }
        // A socket closed just before (the previous run's) frees its queue
        // in deferred work: a busy queue is retried for a moment.
        let addr = SocketAddrXdp::new(flags, index, queue);
        let deadline = Instant::now() + BIND_RETRY;
        loop {
            match rustix::net::bind(&fd, &addr) {
                Ok(()) => break,
                Err(rustix::io::Errno::BUSY) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => return Err(bind_error(iface, queue, mode, e.into())),
            }
        }
        let zerocopy = sockopt::xdp_options(&fd)
            .map(|o| o.contains(XdpOptionsFlags::XDP_OPTIONS_ZEROCOPY))
            .unwrap_or(false);
        if !zerocopy {
            // More frames per wakeup in copy mode, where the kernel has it.
            let _ =
                crate::sockopt::setsockopt(&fd, libc::SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &SKB_BUDGET);
        }
        let free = (0..UMEM_FRAMES as u64)
            .rev()
            .map(|i| i * chunk as u64)
            .collect();
        let scratch_end = (UMEM_FRAMES * chunk) as u64;
        let kept = Kept::new(scratch_end, umem.bytes() as u64, chunk as u64);
        Ok(XdpSink {
            tx,
            cq,
            fd,
            umem,
            free,
            kept,
            iface: iface.to_string(),
            queue,
            zerocopy,
            max_plain,
            max_frame,
            unpublished: 0,
            unpublished_bytes: 0,
            rejected: 0,
            picked: None,
        })
    }

    /// Takes in completions: scratch frames become free again, placed
    /// frames are no longer in flight. Returns how many.
    #[inline]
    fn reap(&mut self) -> u32 {
        let (free, kept) = (&mut self.free, &mut self.kept);
        self.cq.reap(|a| {
            if kept.holds(a) {
                kept.in_flight = kept.in_flight.saturating_sub(1);
            } else {
                free.push(a);
            }
        })
    }

    /// The sink a bare `--to IFACE` chose, and why.
    pub fn picked(mut self, why: String) -> Self {
        self.picked = Some(why);
        self
    }

    /// Publishes the written descriptors and wakes the kernel once.
    fn publish(&mut self) -> Result<(), SinkError> {
        if self.unpublished > 0 {
            self.tx.submit();
            self.unpublished = 0;
            self.unpublished_bytes = 0;
        }
        self.wake()
    }

    /// One wakeup if the kernel asks for it (copy mode always does).
    fn wake(&mut self) -> Result<(), SinkError> {
        if !self.tx.needs_wakeup() {
            return Ok(());
        }
        match rustix::net::send(&self.fd, &[], SendFlags::DONTWAIT) {
            Ok(_) => Ok(()),
            // Budget spent, completion ring full or device busy: the
            // descriptors stay in the ring for the next wakeup.
            Err(rustix::io::Errno::AGAIN)
            | Err(rustix::io::Errno::NOBUFS)
            | Err(rustix::io::Errno::INTR) => Ok(()),
            // The driver dropped one frame (NET_XMIT_DROP): it is completed
            // but was not sent.
            Err(rustix::io::Errno::BUSY) => {
                self.rejected += 1;
                Ok(())
            }
            Err(e) => Err(SinkError::os(
                format!("send on xdp:{}", self.iface),
                e.into(),
            )),
        }
    }

    /// Wakes the kernel until it has taken every published descriptor
    /// (copy mode sends a budget per wakeup), reaping completions so the
    /// kernel always has room for them.
    fn drain(&mut self) -> Result<(), SinkError> {
        let mut last = self.tx.outstanding();
        let mut since = Instant::now();
        while last > 0 {
            self.reap();
            self.wake()?;
            let now = self.tx.outstanding();
            if now < last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() >= STALL {
                return Err(self.stalled());
            } else if self.zerocopy {
                // The driver sends on its own; give it a moment.
                std::hint::spin_loop();
            }
        }
        Ok(())
    }

    /// Makes room for one descriptor in the TX ring.
    #[inline]
    fn room(&mut self) -> Result<(), SinkError> {
        if self.tx.free() == 0 {
            // Every descriptor is in the kernel's hands: let it send some.
            self.publish()?;
            self.drain()?;
        }
        Ok(())
    }

    /// Writes the descriptor of the frame at `addr`, publishing a batch
    /// of them at a time.
    #[inline]
    fn queue(&mut self, addr: u64, len: usize) -> Result<(), SinkError> {
        self.tx.write(addr, len as u32, 0);
        self.unpublished += 1;
        self.unpublished_bytes += len as u64;
        if self.unpublished >= KICK_BATCH {
            self.publish()?;
            // Reap as we go: completions come back while we send.
            self.reap();
        }
        Ok(())
    }

    /// A free UMEM frame, reaping completions (and waking the kernel) as
    /// long as none is free.
    #[inline]
    fn frame(&mut self) -> Result<u64, SinkError> {
        if let Some(a) = self.free.pop() {
            return Ok(a);
        }
        let mut since: Option<Instant> = None;
        loop {
            self.reap();
            if let Some(a) = self.free.pop() {
                return Ok(a);
            }
            self.publish()?;
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() >= STALL {
                return Err(self.stalled());
            }
            std::hint::spin_loop();
        }
    }

    fn stalled(&self) -> SinkError {
        SinkError::os(
            format!("send on xdp:{}", self.iface),
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the device took no frame for {} s (link down, no carrier?)",
                    STALL.as_secs()
                ),
            ),
        )
    }
}

/// The socket itself was refused: say what is missing and what to use.
fn no_xdp(iface: &str, e: io::Error) -> SinkError {
    let why = match e.raw_os_error() {
        Some(libc::EAFNOSUPPORT) => "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS is off)",
        Some(libc::EPERM) | Some(libc::EACCES) => "AF_XDP needs root or CAP_NET_RAW",
        _ => "the AF_XDP socket was refused",
    };
    SinkError::os(
        format!("xdp:{iface}: {why}; afpacket:{iface} sends without it"),
        e,
    )
}

/// The bind was refused: name the likely reason.
fn bind_error(iface: &str, queue: u32, mode: XdpMode, e: io::Error) -> SinkError {
    let why = match (e.raw_os_error(), mode) {
        (Some(libc::EOPNOTSUPP), XdpMode::ZeroCopy) => format!(
            "the driver of {iface} has no AF_XDP zero-copy (veth, most virtual \
             devices); --xdp-mode auto falls back to copy mode"
        ),
        (Some(libc::EBUSY), _) => format!(
            "queue {queue} of {iface} already has an XDP socket (another TX \
             thread or program): one socket per queue"
        ),
        (Some(libc::EINVAL), _) => {
            format!("{iface} refused an XDP socket on queue {queue} (does the queue exist?)")
        }
        (Some(libc::EOPNOTSUPP), _) => {
            format!("{iface} does not support AF_XDP; afpacket:{iface} sends without it")
        }
        _ => format!("binding an XDP socket to {iface} queue {queue}"),
    };
    SinkError::os(format!("xdp:{iface}: {why}"), e)
}

impl Sink for XdpSink {
    #[inline]
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send_parts(frame, &[], stamp_ns)
    }

    #[inline]
    fn send_parts(&mut self, head: &[u8], body: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        let len = crate::iface::fits(head, body, self.max_plain, self.max_frame)?;
        self.room()?;
        let addr = self.frame()?;
        self.umem.fill(addr, head, body);
        self.kept.copies.copied += 1;
        self.queue(addr, len)
    }

    #[inline]
    fn send_kept(&mut self, at: KeptFrame, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        let len = crate::iface::fits(frame, &[], self.max_plain, self.max_frame)?;
        let addr = match self.kept.spot(at, len) {
            Spot::Placed(a) => {
                self.kept.copies.in_place += 1;
                a
            }
            Spot::Place(a) => {
                self.umem.place(a, frame);
                self.kept.copies.placed += 1;
                self.kept.copies.in_place += 1;
                a
            }
            Spot::Copy => return self.send_parts(frame, &[], stamp_ns),
        };
        self.room()?;
        self.kept.in_flight += 1;
        self.queue(addr, len)
    }

    fn copies(&self) -> Option<Copies> {
        Some(self.kept.copies)
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.publish()?;
        if !self.zerocopy {
            // Copy mode sends only while woken: wake until all are sent, so
            // a paced frame leaves now, not at the next batch.
            self.drain()?;
        }
        self.reap();
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.publish()?;
        self.drain()?;
        // Wait (bounded) for the last completions, so no frame is still in
        // flight when the socket closes.
        let deadline = Instant::now() + STALL;
        loop {
            self.reap();
            let done = self.free.len() == UMEM_FRAMES && self.kept.in_flight == 0;
            if done || Instant::now() >= deadline {
                return Ok(());
            }
            self.wake()?;
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn rejected(&self) -> u64 {
        self.rejected
    }

    fn unsent(&self) -> (u64, u64) {
        (self.unpublished as u64, self.unpublished_bytes)
    }

    fn describe(&self) -> String {
        let mode = if self.zerocopy {
            "zero-copy"
        } else {
            "copy mode"
        };
        let picked = self.picked.as_deref().map(|p| format!("; {p}"));
        format!(
            "xdp:{} (queue {}, {mode}{})",
            self.iface,
            self.queue,
            picked.unwrap_or_default()
        )
    }

    fn tx_path(&self) -> Option<&'static str> {
        Some(if self.zerocopy {
            "xdp-zerocopy"
        } else {
            "xdp-copy"
        })
    }
}
