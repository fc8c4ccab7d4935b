//! The shared memory of one AF_XDP socket: the UMEM its frames live in,
//! the TX ring (we produce descriptors, the kernel consumes them), the
//! completion ring (the kernel produces the addresses of sent frames, we
//! consume them), and for receiving the fill ring (we produce addresses
//! of free frames) and the RX ring (the kernel produces descriptors of
//! received frames). This is the hot path, written by hand on the documented
//! ring protocol (Documentation/networking/af_xdp.rst): single producer,
//! single consumer, free-running u32 indices, `size` a power of two; the
//! producer writes entries, then publishes its index with release order;
//! the consumer reads the index with acquire order, then the entries.
//! The index arithmetic is in [`super::index`] (pure, tested under Miri);
//! this file adds the memory: the mappings and the entries' layout.

use super::index::{ConsIndex, ProdIndex};
use rustix::mm::{madvise, mmap, mmap_anonymous, munmap, Advice, MapFlags, ProtFlags};
use rustix::net::xdp::XdpRingOffset;
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, Ordering};

/// `XDP_RING_NEED_WAKEUP` in a ring's flags word.
const NEED_WAKEUP: u32 = 1;

/// One ring mapped from the socket.
struct Mapped {
    base: *mut u8,
    /// 0 for a ring in memory the tests own ([`Mapped::over`]): not unmapped.
    len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut u8,
    /// Entries in the ring (a power of two).
    size: u32,
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
        // SAFETY: the mapping holds `len` bytes, laid out as `off` says.
        Ok(unsafe { Mapped::at(base, len, off, size) })
    }

    /// The ring laid out as `off` says from `base`.
    ///
    /// # Safety
    /// `base` points to memory that holds the whole ring (`off.desc +
    /// size·entry` bytes), with the indices and flags 4-byte aligned and
    /// the entries aligned to their size; it stays valid as long as the
    /// ring, and is accessed by others only as the ring protocol allows.
    /// `len` is the mapping's length, to unmap on drop, or 0 for memory
    /// the caller owns.
    unsafe fn at(base: *mut u8, len: usize, off: &XdpRingOffset, size: u32) -> Mapped {
        let flags = off.flags.unwrap_or(off.producer);
        // SAFETY: the offsets lie inside the ring (they precede `desc`, and
        // the caller vouches for desc + size·entry bytes).
        let at = |o: u64| unsafe { base.add(o as usize) };
        Mapped {
            base,
            len,
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(flags).cast(),
            desc: at(off.desc),
            size,
        }
    }

    /// A ring in memory the caller owns (tests: a simulated kernel on the
    /// other side).
    ///
    /// # Safety
    /// As for [`Mapped::at`]; the memory is not freed by the ring.
    #[cfg(test)]
    unsafe fn over(base: *mut u8, off: &XdpRingOffset, size: u32) -> Mapped {
        // SAFETY: the caller's promise, with nothing to unmap.
        unsafe { Mapped::at(base, 0, off, size) }
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
        if self.len == 0 {
            return;
        }
        // SAFETY: base/len are what mmap returned; no reference into the
        // mapping outlives its ring.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

/// The TX ring: descriptors {addr: u64, len: u32, options: u32}.
pub struct TxRing {
    ring: Mapped,
    /// Our producer index, ahead of the published one by the entries not
    /// yet submitted, and the kernel's consumer index as last read.
    index: ProdIndex,
}

const DESC_BYTES: usize = 16;

impl TxRing {
    pub fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
    ) -> io::Result<TxRing> {
        Ok(TxRing::new(Mapped::map(fd, off, pgoff, size, DESC_BYTES)?))
    }

    fn new(ring: Mapped) -> TxRing {
        let index = ProdIndex::new(ring.size, ring.producer(), ring.consumer());
        TxRing { ring, index }
    }

    /// Entries free for us to fill, reading the kernel's index only when
    /// the cached one says the ring is full.
    #[inline]
    pub fn free(&mut self) -> u32 {
        self.index.free(self.ring.consumer())
    }

    /// Writes one descriptor at the head (the caller checked `free() > 0`).
    #[inline]
    pub fn write(&mut self, addr: u64, len: u32, options: u32) {
        let at = self.index.reserve() * DESC_BYTES;
        // SAFETY: the slot is < the ring's size, so the entry lies inside
        // the descriptor array (16-byte entries, aligned); it is ours until
        // the producer index passes it, because free() > 0 means the kernel
        // has consumed it (its consumer index, read with acquire order).
        unsafe {
            let d = self.ring.desc.add(at);
            d.cast::<u64>().write(addr);
            d.add(8).cast::<u32>().write(len);
            d.add(12).cast::<u32>().write(options);
        }
    }

    /// Publishes every written descriptor to the kernel.
    #[inline]
    pub fn submit(&self) {
        self.index.submit(self.ring.producer());
    }

    /// Descriptors written and not yet consumed by the kernel.
    #[inline]
    pub fn outstanding(&mut self) -> u32 {
        self.index.outstanding(self.ring.consumer())
    }

    #[inline]
    pub fn needs_wakeup(&self) -> bool {
        self.ring.flags() & NEED_WAKEUP != 0
    }
}

/// The fill ring: UMEM addresses (u64) of free frames the kernel may
/// receive into.
pub struct FillRing {
    ring: Mapped,
    index: ProdIndex,
}

impl FillRing {
    pub fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
    ) -> io::Result<FillRing> {
        let ring = Mapped::map(fd, off, pgoff, size, 8)?;
        let index = ProdIndex::new(ring.size, ring.producer(), ring.consumer());
        Ok(FillRing { ring, index })
    }

    /// Entries free for us to fill.
    #[inline]
    pub fn free(&mut self) -> u32 {
        self.index.free(self.ring.consumer())
    }

    /// Writes one address at the head (the caller checked `free() > 0`).
    #[inline]
    pub fn write(&mut self, addr: u64) {
        let at = self.index.reserve() * 8;
        // SAFETY: the slot is < the ring's size, inside the array of 8-byte
        // entries, and ours: free() > 0 means the kernel consumed it.
        unsafe { self.ring.desc.add(at).cast::<u64>().write(addr) };
    }

    /// Publishes every written address to the kernel.
    #[inline]
    pub fn submit(&self) {
        self.index.submit(self.ring.producer());
    }

    #[inline]
    pub fn needs_wakeup(&self) -> bool {
        self.ring.flags() & NEED_WAKEUP != 0
    }
}

/// The RX ring: descriptors {addr, len, options} of received frames.
pub struct RxDescRing {
    ring: Mapped,
    index: ConsIndex,
}

impl RxDescRing {
    pub fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
    ) -> io::Result<RxDescRing> {
        let ring = Mapped::map(fd, off, pgoff, size, DESC_BYTES)?;
        let index = ConsIndex::new(ring.size, ring.consumer());
        Ok(RxDescRing { ring, index })
    }

    /// Hands every received descriptor (address, length) to `each`, then
    /// gives the entries back; returns how many.
    #[inline]
    pub fn take(&mut self, each: impl FnMut(u64, u32)) -> u32 {
        self.take_ahead(0, |_, _| (), each)
    }

    /// `take`, telling `soon` of the descriptor `ahead` places after the
    /// one `each` is given (when the ring holds it): time to fetch its
    /// frame before it is read.
    #[inline]
    pub fn take_ahead(
        &mut self,
        ahead: u32,
        mut soon: impl FnMut(u64, u32),
        mut each: impl FnMut(u64, u32),
    ) -> u32 {
        let n = self.index.peek(self.ring.producer());
        let desc = |i: u32| {
            let at = self.index.slot(i) * DESC_BYTES;
            // SAFETY: the slot is < the ring's size, inside the array of
            // 16-byte entries; peeked entries are written (the kernel's
            // producer index, read with acquire order) and ours until
            // released.
            unsafe {
                let d = self.ring.desc.add(at);
                (d.cast::<u64>().read(), d.add(8).cast::<u32>().read())
            }
        };
        for i in 0..n.min(ahead) {
            let (addr, len) = desc(i);
            soon(addr, len);
        }
        for i in 0..n {
            if ahead > 0 && ahead < n - i {
                let (addr, len) = desc(i + ahead);
                soon(addr, len);
            }
            let (addr, len) = desc(i);
            each(addr, len);
        }
        if n > 0 {
            self.index.release(n, self.ring.consumer());
        }
        n
    }
}

/// The completion ring: UMEM addresses (u64) of frames the kernel is done
/// with.
pub struct CompRing {
    ring: Mapped,
    index: ConsIndex,
}

impl CompRing {
    pub fn map(
        fd: BorrowedFd<'_>,
        off: &XdpRingOffset,
        pgoff: u64,
        size: u32,
    ) -> io::Result<CompRing> {
        Ok(CompRing::new(Mapped::map(fd, off, pgoff, size, 8)?))
    }

    fn new(ring: Mapped) -> CompRing {
        let index = ConsIndex::new(ring.size, ring.consumer());
        CompRing { ring, index }
    }

    /// Hands every completed address to `each`; returns how many.
    #[inline]
    pub fn reap(&mut self, mut each: impl FnMut(u64)) -> u32 {
        let n = self.index.peek(self.ring.producer());
        for i in 0..n {
            let at = self.index.slot(i) * 8;
            // SAFETY: the slot is < the ring's size, inside the array of
            // 8-byte entries; peeked entries are written (the kernel's
            // producer index, read with acquire order) and ours until
            // released.
            each(unsafe { self.ring.desc.add(at).cast::<u64>().read() });
        }
        if n > 0 {
            self.index.release(n, self.ring.consumer());
        }
        n
    }
}

/// The UMEM: anonymous memory registered with the socket, cut into
/// chunks of `chunk` bytes: scratch frames, filled per send, then the
/// region where kept frames are placed once.
pub struct Umem {
    base: *mut u8,
    len: usize,
    chunk: usize,
}

impl Umem {
    pub fn new(chunks: usize, chunk: usize) -> io::Result<Umem> {
        Self::mapped(chunks, chunk, MapFlags::POPULATE)
    }

    /// A UMEM on transparent huge pages where the kernel gives them (a
    /// receiver reads each frame once, scattered over the UMEM: 4 KiB
    /// pages would cost a TLB miss every other frame); populated before
    /// it is registered, as [`Umem::new`]'s.
    pub fn huge(chunks: usize, chunk: usize) -> io::Result<Umem> {
        let umem = Self::mapped(chunks, chunk, MapFlags::empty())?;
        // SAFETY: the advice covers exactly the mapping just made, which
        // nothing else uses; either call may be refused (no THP, a kernel
        // before 5.14) without harm: the pages then come at first touch.
        unsafe {
            let _ = madvise(umem.base.cast(), umem.len, Advice::LinuxHugepage);
            let _ = madvise(umem.base.cast(), umem.len, Advice::LinuxPopulateWrite);
        }
        Ok(umem)
    }

    /// `chunks` chunks of `chunk` bytes of fresh private memory.
    fn mapped(chunks: usize, chunk: usize, flags: MapFlags) -> io::Result<Umem> {
        let len = chunks * chunk;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | flags,
            )
        }?
        .cast::<u8>();
        Ok(Umem { base, len, chunk })
    }

    pub fn addr(&self) -> u64 {
        self.base as u64
    }

    pub fn bytes(&self) -> usize {
        self.len
    }

    /// Copies `head` then `body` into the frame at UMEM offset `addr`
    /// (a scratch frame the kernel is done with).
    #[inline]
    pub fn fill(&mut self, addr: u64, head: &[u8], body: &[u8]) {
        assert!(
            head.len() + body.len() <= self.chunk && addr as usize + self.chunk <= self.len,
            "a frame fills one chunk inside the UMEM"
        );
        // SAFETY: the frame and its chunk lie inside the mapping (checked
        // above); the caller took `addr` from its free list, so the kernel
        // is not reading it. Both copies stay inside that chunk.
        unsafe {
            let at = self.base.add(addr as usize);
            std::ptr::copy_nonoverlapping(head.as_ptr(), at, head.len());
            std::ptr::copy_nonoverlapping(body.as_ptr(), at.add(head.len()), body.len());
        }
    }

    /// Asks for the cache lines a receiver reads of the frame at `addr`:
    /// the first (the headers) and the last 24 bytes (a stamp). A hint:
    /// nothing is read; a broken descriptor is caught by `frame`.
    #[inline]
    pub fn prefetch(&self, addr: u64, len: u32) {
        let start = addr as usize;
        let Some(end) = start.checked_add(len as usize) else {
            return;
        };
        if len == 0 || end > self.len {
            return;
        }
        // wrapping_add: address computations, never dereferenced.
        let line = |at: usize| crate::prefetch::prefetch(self.base.wrapping_add(at & !63));
        line(start);
        line(end.saturating_sub(24).max(start));
        line(end - 1);
    }

    /// The `len` bytes at UMEM offset `addr` of a received frame, or None
    /// when a (broken) descriptor points outside the UMEM.
    #[inline]
    pub fn frame(&self, addr: u64, len: u32) -> Option<&[u8]> {
        let end = (addr as usize).checked_add(len as usize)?;
        if end > self.len {
            return None;
        }
        // SAFETY: the range lies inside the mapping (checked above); the
        // kernel wrote the frame before publishing its descriptor (read
        // with acquire order), and does not write the chunk again until
        // its address is back in the fill ring, after this borrow ends.
        Some(unsafe { std::slice::from_raw_parts(self.base.add(addr as usize), len as usize) })
    }

    /// Places a kept frame at UMEM offset `addr` (written once, before any
    /// descriptor points at it, and never again).
    #[inline]
    pub fn place(&mut self, addr: u64, frame: &[u8]) {
        let chunk = self.chunk as u64;
        assert!(
            addr / chunk == (addr + frame.len() as u64).saturating_sub(1) / chunk
                && addr as usize + frame.len() <= self.len,
            "a placed frame stays inside one chunk of the UMEM"
        );
        // SAFETY: the range was checked to lie inside the mapping, and the
        // kernel reads it only once a descriptor points at it, which is
        // written after this copy.
        unsafe {
            std::ptr::copy_nonoverlapping(
                frame.as_ptr(),
                self.base.add(addr as usize),
                frame.len(),
            );
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
unsafe impl Send for FillRing {}
// SAFETY: as for TxRing.
unsafe impl Send for RxDescRing {}
// SAFETY: as for TxRing.
unsafe impl Send for Umem {}

#[cfg(test)]
mod tests {
    //! The TX and completion rings over ordinary memory, with a simulated
    //! kernel on another thread: under Miri this checks the pointer
    //! arithmetic of the entries and that the orderings leave no data race.

    use super::*;

    const SIZE: u32 = 4;
    /// Indices and flags on their own cache lines, as the kernel lays them.
    const OFF: XdpRingOffset = XdpRingOffset {
        producer: 0,
        consumer: 64,
        desc: 192,
        flags: Some(128),
    };

    /// The memory of one ring, 8-byte aligned, owned by the test.
    fn memory(entry: usize) -> Vec<u64> {
        vec![0; (OFF.desc as usize + SIZE as usize * entry) / 8]
    }

    /// A raw view of one ring for the simulated kernel (and for setting
    /// the starting indices).
    #[derive(Clone, Copy)]
    struct Raw(*mut u8);
    // SAFETY: the memory outlives the scoped threads that use it, and both
    // sides access it as the ring protocol allows.
    unsafe impl Send for Raw {}

    impl Raw {
        fn index(&self, off: u64) -> &AtomicU32 {
            // SAFETY: a 4-byte aligned u32 inside the ring's memory, which
            // outlives the test's threads; every access to it is atomic.
            unsafe { &*self.0.add(off as usize).cast::<AtomicU32>() }
        }
        fn producer(&self) -> &AtomicU32 {
            self.index(OFF.producer)
        }
        fn consumer(&self) -> &AtomicU32 {
            self.index(OFF.consumer)
        }
    }

    #[test]
    fn take_ahead_tells_of_each_descriptor_once_before_its_turn() {
        for (held, ahead) in [(3u32, 2u32), (4, 1), (2, 3), (0, 2), (4, 0)] {
            let mut mem = memory(DESC_BYTES);
            let raw = Raw(mem.as_mut_ptr().cast());
            // Starting near the index wrap: slots go round the ring.
            let start = u32::MAX - 1;
            raw.consumer().store(start, Ordering::Relaxed);
            for k in 0..held {
                let at = (start.wrapping_add(k) % SIZE) as usize * DESC_BYTES + OFF.desc as usize;
                // SAFETY: an entry inside the ring's memory, which the
                // test owns; no other thread runs.
                unsafe {
                    let d = raw.0.add(at);
                    d.cast::<u64>().write(u64::from(k) * 2048);
                    d.add(8).cast::<u32>().write(60 + k);
                }
            }
            raw.producer()
                .store(start.wrapping_add(held), Ordering::Release);
            // SAFETY: the memory holds the whole ring, aligned, and
            // outlives it.
            let ring = unsafe { Mapped::over(raw.0, &OFF, SIZE) };
            let index = ConsIndex::new(ring.size, ring.consumer());
            let mut rx = RxDescRing { ring, index };
            let events = std::cell::RefCell::new(Vec::new());
            let n = rx.take_ahead(
                ahead,
                |a, l| events.borrow_mut().push(('s', a / 2048, l)),
                |a, l| events.borrow_mut().push(('e', a / 2048, l)),
            );
            assert_eq!(n, held);
            let events = events.into_inner();
            let each: Vec<_> = events.iter().filter(|e| e.0 == 'e').collect();
            let soon: Vec<_> = events.iter().filter(|e| e.0 == 's').collect();
            assert_eq!(each.len(), held as usize);
            assert!(each
                .iter()
                .enumerate()
                .all(|(k, e)| e.1 == k as u64 && e.2 == 60 + k as u32));
            // Told of every one when ahead > 0, once, in order, `ahead`
            // places before it is handed over (or at the start).
            let told = if ahead == 0 { 0 } else { held as usize };
            assert_eq!(soon.len(), told, "held {held}, ahead {ahead}");
            for (k, told) in soon.iter().enumerate() {
                assert_eq!(told.1, k as u64);
                let told_at = events.iter().position(|e| e.0 == 's' && e.1 == k as u64);
                let given_at = events.iter().position(|e| e.0 == 'e' && e.1 == k as u64);
                // Descriptors handed over before this one was told of.
                let before = events[..told_at.unwrap()]
                    .iter()
                    .filter(|e| e.0 == 'e')
                    .count();
                assert!(told_at < given_at, "held {held}, ahead {ahead}: {events:?}");
                assert!(
                    k < ahead as usize || before == k - ahead as usize,
                    "{events:?}"
                );
            }
            assert_eq!(
                raw.consumer().load(Ordering::Relaxed),
                start.wrapping_add(held)
            );
        }
    }

    /// Sends `total` frames through the rings as the sink does, while a
    /// "kernel" consumes the descriptors and completes their frames. Every
    /// descriptor arrives once, in order, and every frame comes back.
    fn send_through(start: u32, total: u64) {
        let mut tx_mem = memory(DESC_BYTES);
        let mut cq_mem = memory(8);
        let (tx_raw, cq_raw) = (
            Raw(tx_mem.as_mut_ptr().cast()),
            Raw(cq_mem.as_mut_ptr().cast()),
        );
        for r in [tx_raw, cq_raw] {
            r.producer().store(start, Ordering::Relaxed);
            r.consumer().store(start, Ordering::Relaxed);
        }
        // SAFETY: each memory holds its whole ring, aligned (a Vec<u64>),
        // and outlives the rings (dropped at the end of this function).
        let mut tx = TxRing::new(unsafe { Mapped::over(tx_raw.0, &OFF, SIZE) });
        // SAFETY: as for the TX ring.
        let mut cq = CompRing::new(unsafe { Mapped::over(cq_raw.0, &OFF, SIZE) });
        // Two frames per descriptor, as the sink's UMEM.
        let frames = 2 * u64::from(SIZE);
        let mut free: Vec<u64> = (0..frames).rev().map(|i| i * 4096).collect();

        std::thread::scope(|s| {
            // The kernel: takes descriptors, checks them, completes frames.
            s.spawn(move || {
                let mut txc = ConsIndex::new(SIZE, tx_raw.consumer());
                let mut cqp = ProdIndex::new(SIZE, cq_raw.producer(), cq_raw.consumer());
                let mut seen = 0u64;
                while seen < total {
                    let n = txc.peek(tx_raw.producer());
                    if n == 0 || cqp.free(cq_raw.consumer()) == 0 {
                        std::thread::yield_now();
                        continue;
                    }
                    let at = txc.slot(0) * DESC_BYTES + OFF.desc as usize;
                    // SAFETY: a peeked descriptor, inside the ring: the
                    // producer published it (acquire in peek()).
                    let (addr, len) = unsafe {
                        let d = tx_raw.0.add(at);
                        (d.cast::<u64>().read(), d.add(8).cast::<u32>().read())
                    };
                    assert_eq!(u64::from(len), 60 + seen % 100, "descriptor {seen}");
                    assert_eq!(addr % 4096, 0);
                    let at = cqp.reserve() * 8 + OFF.desc as usize;
                    // SAFETY: a reserved completion entry, inside the ring:
                    // the sink released it (acquire in free()).
                    unsafe { cq_raw.0.add(at).cast::<u64>().write(addr) };
                    cqp.submit(cq_raw.producer());
                    txc.release(1, tx_raw.consumer());
                    seen += 1;
                }
            });
            // The sink's send path, reduced to the rings.
            for k in 0..total {
                while tx.free() == 0 {
                    tx.submit();
                    cq.reap(|a| free.push(a));
                    std::thread::yield_now();
                }
                let addr = loop {
                    if let Some(a) = free.pop() {
                        break a;
                    }
                    tx.submit();
                    cq.reap(|a| free.push(a));
                    std::thread::yield_now();
                };
                tx.write(addr, 60 + (k % 100) as u32, 0);
                if k % 3 == 2 {
                    tx.submit();
                }
            }
            tx.submit();
            while tx.outstanding() > 0 {
                cq.reap(|a| free.push(a));
                std::thread::yield_now();
            }
        });
        cq.reap(|a| free.push(a));
        free.sort_unstable();
        let all: Vec<u64> = (0..frames).map(|i| i * 4096).collect();
        assert_eq!(free, all, "every frame comes back once");
        let end = start.wrapping_add(total as u32);
        for r in [tx_raw, cq_raw] {
            assert_eq!(r.producer().load(Ordering::Relaxed), end);
            assert_eq!(r.consumer().load(Ordering::Relaxed), end);
        }
        drop((tx, cq));
        drop((tx_mem, cq_mem));
    }

    #[test]
    fn frames_go_round_the_rings_across_the_index_wrap() {
        let total = if cfg!(miri) { 60 } else { 100_000 };
        send_through(u32::MAX - 13, total);
        send_through(0, total);
    }

    #[test]
    fn need_wakeup_reads_the_flags_word() {
        let mut mem = memory(DESC_BYTES);
        let raw = Raw(mem.as_mut_ptr().cast());
        // SAFETY: the memory holds the ring, aligned, and outlives it.
        let tx = TxRing::new(unsafe { Mapped::over(raw.0, &OFF, SIZE) });
        assert!(!tx.needs_wakeup());
        raw.index(128).store(NEED_WAKEUP, Ordering::Relaxed);
        assert!(tx.needs_wakeup());
        drop(tx);
        drop(mem);
    }
}
