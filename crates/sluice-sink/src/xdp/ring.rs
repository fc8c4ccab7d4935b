//! The shared memory of one AF_XDP socket: the UMEM its frames live in,
//! the TX ring (we produce descriptors, the kernel consumes them) and the
//! completion ring (the kernel produces the addresses of sent frames, we
//! consume them). This is the hot path, written by hand on the documented
//! ring protocol (Documentation/networking/af_xdp.rst): single producer,
//! single consumer, free-running u32 indices, `size` a power of two; the
//! producer writes entries, then publishes its index with release order;
//! the consumer reads the index with acquire order, then the entries.

use rustix::mm::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};
use rustix::net::xdp::XdpRingOffset;
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, Ordering};

/// `XDP_RING_NEED_WAKEUP` in a ring's flags word.
const NEED_WAKEUP: u32 = 1;

/// One ring mapped from the socket.
struct Mapped {
    base: *mut u8,
    len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut u8,
    mask: u32,
}

impl Mapped {
    /// Maps the ring at page offset `pgoff` of `fd`, `size` entries of
    /// `entry` bytes laid out as `off` says.
    fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
        entry: usize,
    ) -> io::Result<Mapped> {
        let len = off.desc as usize + size as usize * entry;
        // SAFETY: a fresh shared mapping of the ring the kernel allocated for
        // this socket (its size was set before), at the offset the kernel
        // documents for it; nothing else refers to the returned memory.
        let base = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::POPULATE,
                fd,
                pgoff,
            )
        }?
        .cast::<u8>();
        let flags = off.flags.unwrap_or(off.producer);
        // SAFETY: the kernel's offsets lie inside the mapping of `len` bytes
        // (they precede `desc`, and desc + size·entry = len).
        let at = |o: u64| unsafe { base.add(o as usize) };
        Ok(Mapped {
            base,
            len,
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(flags).cast(),
            desc: at(off.desc),
            mask: size - 1,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: a 4-byte aligned u32 inside the mapping (kernel layout),
        // shared with the kernel, which accesses it atomically as well; the
        // mapping lives as long as self.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.consumer }
    }

    fn flags(&self) -> u32 {
        // SAFETY: as for `producer` (on kernels before 5.4 without a flags
        // word this reads the producer index, and NEED_WAKEUP is then not
        // used: the bind never asks for it there).
        unsafe { &*self.flags }.load(Ordering::Relaxed)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: base/len are what mmap returned; no reference into the
        // mapping outlives its ring.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

/// The TX ring: descriptors {addr: u64, len: u32, options: u32}.
pub(super) struct TxRing {
    ring: Mapped,
    /// Our producer index, ahead of the published one by the entries not
    /// yet submitted.
    head: u32,
    /// The kernel's consumer index as last read.
    cached_cons: u32,
    size: u32,
}

const DESC_BYTES: usize = 16;

impl TxRing {
    pub(super) fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
    ) -> io::Result<TxRing> {
        let ring = Mapped::map(fd, off, pgoff, size, DESC_BYTES)?;
        let head = ring.producer().load(Ordering::Relaxed);
        let cached_cons = ring.consumer().load(Ordering::Acquire);
        Ok(TxRing {
            ring,
            head,
            cached_cons,
            size,
        })
    }

    /// Entries free for us to fill, reading the kernel's index only when
    /// the cached one says the ring is full.
    #[inline]
    pub(super) fn free(&mut self) -> u32 {
        let free = self.size - self.head.wrapping_sub(self.cached_cons);
        if free > 0 {
            return free;
        }
        self.cached_cons = self.ring.consumer().load(Ordering::Acquire);
        self.size - self.head.wrapping_sub(self.cached_cons)
    }

    /// Writes one descriptor at the head (the caller checked `free() > 0`).
    #[inline]
    pub(super) fn write(&mut self, addr: u64, len: u32, options: u32) {
        let at = (self.head & self.ring.mask) as usize * DESC_BYTES;
        // SAFETY: the entry lies inside the descriptor array (index masked
        // to size); it is ours until the producer index passes it, because
        // free() > 0 means the kernel has consumed it.
        unsafe {
            let d = self.ring.desc.add(at);
            d.cast::<u64>().write(addr);
            d.add(8).cast::<u32>().write(len);
            d.add(12).cast::<u32>().write(options);
        }
        self.head = self.head.wrapping_add(1);
    }

    /// Publishes every written descriptor to the kernel.
    #[inline]
    pub(super) fn submit(&self) {
        self.ring.producer().store(self.head, Ordering::Release);
    }

    /// Descriptors published and not yet consumed by the kernel.
    #[inline]
    pub(super) fn outstanding(&mut self) -> u32 {
        self.cached_cons = self.ring.consumer().load(Ordering::Acquire);
        self.head.wrapping_sub(self.cached_cons)
    }

    #[inline]
    pub(super) fn needs_wakeup(&self) -> bool {
        self.ring.flags() & NEED_WAKEUP != 0
    }
}

/// The completion ring: UMEM addresses (u64) of frames the kernel is done
/// with.
pub(super) struct CompRing {
    ring: Mapped,
    tail: u32,
}

impl CompRing {
    pub(super) fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
    ) -> io::Result<CompRing> {
        let ring = Mapped::map(fd, off, pgoff, size, 8)?;
        let tail = ring.consumer().load(Ordering::Relaxed);
        Ok(CompRing { ring, tail })
    }

    /// Moves every completed address into `free`; returns how many.
    #[inline]
    pub(super) fn reap(&mut self, free: &mut Vec<u64>) -> u32 {
        let prod = self.ring.producer().load(Ordering::Acquire);
        let n = prod.wrapping_sub(self.tail);
        for i in 0..n {
            let at = (self.tail.wrapping_add(i) & self.ring.mask) as usize * 8;
            // SAFETY: entries between our index and the kernel's producer
            // index (read with acquire above) are written and ours to read.
            free.push(unsafe { self.ring.desc.add(at).cast::<u64>().read() });
        }
        if n > 0 {
            self.tail = prod;
            self.ring.consumer().store(prod, Ordering::Release);
        }
        n
    }
}

/// The UMEM: anonymous memory registered with the socket, cut into
/// `frames` chunks of `chunk` bytes.
pub(super) struct Umem {
    base: *mut u8,
    len: usize,
    chunk: usize,
}

impl Umem {
    pub(super) fn new(frames: usize, chunk: usize) -> io::Result<Umem> {
        let len = frames * chunk;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::POPULATE,
            )
        }?
        .cast::<u8>();
        Ok(Umem { base, len, chunk })
    }

    pub(super) fn addr(&self) -> u64 {
        self.base as u64
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Copies `head` then `body` into the frame at UMEM offset `addr`.
    #[inline]
    pub(super) fn fill(&mut self, addr: u64, head: &[u8], body: &[u8]) {
        debug_assert!(head.len() + body.len() <= self.chunk);
        debug_assert!(addr as usize + self.chunk <= self.len);
        // SAFETY: `addr` is a chunk start taken from the free list (so the
        // kernel is not reading it), and the caller checked that the frame
        // fits one chunk; both copies stay inside that chunk.
        unsafe {
            let at = self.base.add(addr as usize);
            std::ptr::copy_nonoverlapping(head.as_ptr(), at, head.len());
            std::ptr::copy_nonoverlapping(body.as_ptr(), at.add(head.len()), body.len());
        }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: base/len are what mmap returned. The socket that registered
        // this memory is closed before (field order in XdpSink), and the
        // kernel holds its own pin on the pages until then.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

// SAFETY: the mappings are owned by one XdpSink, used by one TX thread at a
// time through &mut self; the kernel side synchronises through the atomics.
unsafe impl Send for TxRing {}
// SAFETY: as for TxRing.
unsafe impl Send for CompRing {}
// SAFETY: as for TxRing.
unsafe impl Send for Umem {}
