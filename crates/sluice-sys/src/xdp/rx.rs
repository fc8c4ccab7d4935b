//! Receiving an interface's frames through AF_XDP: one XDP socket per RX
//! queue, each with its own UMEM, fill ring and RX ring, and the XDP
//! program ([`super::prog`]) steering each queue's frames to its socket.
//! Frames land in the UMEM (the driver's DMA in zero-copy mode, one copy
//! by the kernel in copy mode, as on a veth) with no socket buffer and no
//! system call per frame; a frame read is given back through the fill
//! ring at once.
//!
//! AF_XDP frames carry no kernel receive time: each batch read from the
//! RX rings is stamped with CLOCK_REALTIME as it is read, so a receive
//! time is late by however long the frame waited in its ring (at most a
//! poll's worth when the receiver keeps up).

use super::prog::{Attach, Steering};
use super::ring::{CompRing, FillRing, RxDescRing, Umem};
use crate::rx_ring::RingFrame;
use rustix::net::xdp::{
    SocketAddrXdp, SocketAddrXdpFlags, XdpOptionsFlags, XdpStatistics, XdpUmemReg, XdpUmemRegFlags,
    XDP_PGOFF_RX_RING, XDP_UMEM_PGOFF_COMPLETION_RING, XDP_UMEM_PGOFF_FILL_RING,
};
use rustix::net::{sockopt, AddressFamily, RecvFlags, SocketFlags, SocketType};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

/// Frames per socket's UMEM; the fill and RX rings hold half each, so a
/// full RX ring still leaves the kernel frames to fill.
const FRAMES: u32 = 8192;
const RING: u32 = FRAMES / 2;
const CHUNK: usize = 2048;
/// The completion ring must exist for the bind; a receiver never sends.
const COMP: u32 = 64;
/// After a read of fewer frames than this, the receiver naps for
/// [`GATHER`] (a receive time is then up to that much late: `stamps:
/// read`).
const GATHER_BELOW: u64 = 64;
const GATHER: Duration = Duration::from_micros(100);
/// Frames fetched ahead of the one being read.
const PREFETCH_AHEAD: u32 = 8;

/// One queue's socket.
struct Queue {
    // Field order is drop order: rings unmapped, socket closed, UMEM freed.
    rx: RxDescRing,
    fill: FillRing,
    _comp: CompRing,
    fd: OwnedFd,
    umem: Umem,
    /// Frames read and not yet given back to the fill ring.
    spare: Vec<u64>,
}

/// An interface's frames, every RX queue of it.
pub struct XskRx {
    // Field order is drop order: the program goes before the sockets.
    steering: Steering,
    queues: Vec<Queue>,
    zerocopy: bool,
    /// Drops already reported by [`XskRx::drops`].
    reported: u64,
}

/// Frames a socket's kernel side dropped: no frame to fill, a full RX
/// ring (0 where the statistics cannot be read).
fn dropped(fd: &OwnedFd) -> u64 {
    sockopt::xdp_statistics(fd)
        .map(|s: XdpStatistics| s.rx_dropped + s.rx_ring_full.unwrap_or(0))
        .unwrap_or(0)
}

impl Queue {
    fn open(iface: &str, index: u32, queue: u32) -> io::Result<Queue> {
        let what = |s: String, e: rustix::io::Errno| {
            let e = io::Error::from(e);
            io::Error::new(e.kind(), format!("{iface} queue {queue}: {s}: {e}"))
        };
        let fd = rustix::net::socket_with(
            AddressFamily::XDP,
            SocketType::RAW,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| what("an AF_XDP socket".into(), e))?;
        let umem = Umem::huge(FRAMES as usize, CHUNK)?;
        sockopt::set_xdp_umem_reg(
            &fd,
            XdpUmemReg {
                addr: umem.addr(),
                len: umem.bytes() as u64,
                chunk_size: CHUNK as u32,
                headroom: 0,
                flags: XdpUmemRegFlags::empty(),
                tx_metadata_len: 0,
            },
        )
        .map_err(|e| what("registering the UMEM".into(), e))?;
        sockopt::set_xdp_umem_fill_ring_size(&fd, RING)
            .map_err(|e| what("sizing the fill ring".into(), e))?;
        sockopt::set_xdp_umem_completion_ring_size(&fd, COMP)
            .map_err(|e| what("sizing the completion ring".into(), e))?;
        sockopt::set_xdp_rx_ring_size(&fd, RING)
            .map_err(|e| what("sizing the RX ring".into(), e))?;
        let off = sockopt::xdp_mmap_offsets(&fd).map_err(|e| what("ring offsets".into(), e))?;
        let mut fill = FillRing::map(fd.as_fd(), &off.fr, XDP_UMEM_PGOFF_FILL_RING, RING)?;
        let comp = CompRing::map(fd.as_fd(), &off.cr, XDP_UMEM_PGOFF_COMPLETION_RING, COMP)?;
        let rx = RxDescRing::map(fd.as_fd(), &off.rx, XDP_PGOFF_RX_RING, RING)?;
        // The fill ring gets half the frames; the rest wait as spares.
        let mut spare: Vec<u64> = (0..u64::from(FRAMES)).map(|i| i * CHUNK as u64).collect();
        while fill.free() > 0 {
            let Some(a) = spare.pop() else { break };
            fill.write(a);
        }
        fill.submit();
        let addr = SocketAddrXdp::new(SocketAddrXdpFlags::XDP_USE_NEED_WAKEUP, index, queue);
        rustix::net::bind(&fd, &addr).map_err(|e| what("binding".into(), e))?;
        Ok(Queue {
            rx,
            fill,
            _comp: comp,
            fd,
            umem,
            spare,
        })
    }

    /// Hands the frames the RX ring holds to `f`, then gives their frames
    /// back to the fill ring; returns how many.
    fn drain(&mut self, ts_ns: u64, f: &mut impl FnMut(RingFrame<'_>)) -> u64 {
        let (umem, spare) = (&self.umem, &mut self.spare);
        // The kernel wrote the frames from another CPU: each is a miss,
        // overlapped with the work on the frames before it.
        let n = self.rx.take_ahead(
            PREFETCH_AHEAD,
            |addr, len| umem.prefetch(addr, len),
            |addr, len| {
                if let Some(data) = umem.frame(addr, len) {
                    f(RingFrame {
                        data,
                        orig_len: len as usize,
                        ts_ns,
                        hardware: false,
                    });
                }
                // Back to a chunk start (the kernel may add headroom).
                spare.push(addr - addr % CHUNK as u64);
            },
        );
        let mut given = false;
        while self.fill.free() > 0 {
            let Some(a) = self.spare.pop() else { break };
            self.fill.write(a);
            given = true;
        }
        if given {
            self.fill.submit();
        }
        if self.fill.needs_wakeup() {
            // The driver waits to be told the fill ring has frames.
            let _ = rustix::net::recv(&self.fd, &mut [0u8; 0][..], RecvFlags::DONTWAIT);
        }
        u64::from(n)
    }
}

impl XskRx {
    /// Receives every RX queue of `iface`.
    pub fn open(iface: &str) -> io::Result<XskRx> {
        let index = crate::packet_rx::ifindex(iface)?;
        let n = crate::net::queues(iface, "rx").unwrap_or(1).max(1) as u32;
        let steering = Steering::attach(index, n)
            .map_err(|e| io::Error::new(e.kind(), format!("{iface}: {e}")))?;
        let mut queues = Vec::with_capacity(n as usize);
        for q in 0..n {
            let queue = Queue::open(iface, index, q)?;
            steering.steer(q, queue.fd.as_raw_fd())?;
            queues.push(queue);
        }
        let zerocopy = queues.iter().all(|q| {
            sockopt::xdp_options(&q.fd)
                .map(|o| o.contains(XdpOptionsFlags::XDP_OPTIONS_ZEROCOPY))
                .unwrap_or(false)
        });
        Ok(XskRx {
            steering,
            queues,
            zerocopy,
            reported: 0,
        })
    }

    /// How frames reach the sockets: `xdp-zerocopy`, `xdp-copy` (a
    /// native program, the kernel copying), `xdp-generic` (after the
    /// kernel built a socket buffer).
    pub fn path(&self) -> &'static str {
        match (self.zerocopy, self.steering.attach) {
            (true, _) => "xdp-zerocopy",
            (false, Attach::Driver) => "xdp-copy",
            (false, Attach::Generic) => "xdp-generic",
        }
    }

    /// Hands every frame the RX rings hold to `f`, waiting up to
    /// `timeout` when none holds one. Returns the frames handled.
    pub fn drain(
        &mut self,
        timeout: Duration,
        mut f: impl FnMut(RingFrame<'_>),
    ) -> io::Result<u64> {
        let mut n = self.drain_all(&mut f);
        if n == 0 && !timeout.is_zero() {
            let mut fds: Vec<libc::pollfd> = self
                .queues
                .iter()
                .map(|q| libc::pollfd {
                    fd: q.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: a live array of pollfd, passed with its length.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n = self.drain_all(&mut f);
        }
        if n > 0 && n < GATHER_BELOW {
            // A trickle: let frames gather in the rings (room for
            // milliseconds at any rate a copy-mode socket takes) rather
            // than wake for each few.
            std::thread::sleep(GATHER);
        }
        Ok(n)
    }

    fn drain_all(&mut self, f: &mut impl FnMut(RingFrame<'_>)) -> u64 {
        let ts = crate::clock::realtime_ns();
        self.queues.iter_mut().map(|q| q.drain(ts, f)).sum()
    }

    /// Frames the kernel dropped before the receiver read them (no free
    /// frame in the fill ring, a full RX ring) since the last call.
    pub fn drops(&mut self) -> u64 {
        let all: u64 = self.queues.iter().map(|q| dropped(&q.fd)).sum();
        let new = all.saturating_sub(self.reported);
        self.reported = all;
        new
    }
}

/// How a receiver takes an interface's frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RxPath {
    /// AF_XDP where its sockets bind in zero-copy mode, else the TPACKET
    /// ring (the receiver says which, and why): in copy mode (a veth,
    /// most virtual devices) AF_XDP costs the receiver more CPU per frame
    /// than the ring, and the ring keeps the kernel's receive times.
    #[default]
    Auto,
    /// AF_XDP or a refusal saying why.
    Xdp,
    /// The TPACKET_V3 ring: the kernel's receive time of each frame, and
    /// the kernel's stack keeps every frame.
    Ring,
}

impl RxPath {
    pub const NAMES: [&'static str; 3] = ["auto", "xdp", "ring"];
}

impl std::str::FromStr for RxPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(RxPath::Auto),
            "xdp" => Ok(RxPath::Xdp),
            "ring" => Ok(RxPath::Ring),
            _ => Err(format!("'{s}' is not auto, xdp or ring")),
        }
    }
}

impl std::fmt::Display for RxPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::NAMES[*self as usize])
    }
}
