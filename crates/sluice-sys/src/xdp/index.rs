//! The index arithmetic of an AF_XDP ring, apart from the memory it
//! indexes: no pointers, no syscalls, so the unit tests below run under
//! Miri, which checks the atomics' orderings for data races
//! (`bench/miri.sh`).
//!
//! The protocol (Documentation/networking/af_xdp.rst): one producer and one
//! consumer share two free-running `u32` indices; the ring holds `size`
//! entries, `size` a power of two, and entry `i` lives in slot
//! `i & (size - 1)`. `producer - consumer` (wrapping) is the number of
//! entries written and not yet consumed, always `<= size`. The producer
//! writes entries, then publishes its index with release order; the
//! consumer reads that index with acquire order before reading the entries,
//! and publishes its own index with release order once it is done with
//! them, which the producer reads with acquire order before reusing slots.
//! Each side's index is written by that side only, so it may read its own
//! index relaxed.
//!
//! The indices wrap at `u32::MAX`: every difference is taken with
//! `wrapping_sub`, and a slot is always an index masked to the ring, so no
//! index value (even one a buggy peer wrote) leads outside the ring.

use std::sync::atomic::{AtomicU32, Ordering};

/// The producer's side of a ring: a head that runs ahead of the published
/// index by the entries reserved and not yet submitted.
#[derive(Debug, Clone)]
pub struct ProdIndex {
    /// Next entry to fill.
    head: u32,
    /// The consumer's index as last read.
    cached_cons: u32,
    size: u32,
}

impl ProdIndex {
    /// Takes over a ring of `size` entries at its current indices.
    pub fn new(size: u32, producer: &AtomicU32, consumer: &AtomicU32) -> ProdIndex {
        assert!(
            size.is_power_of_two(),
            "ring size {size} is no power of two"
        );
        ProdIndex {
            // Written by us alone.
            head: producer.load(Ordering::Relaxed),
            cached_cons: consumer.load(Ordering::Acquire),
            size,
        }
    }

    /// Free entries as of the cached consumer index. A consumer index
    /// ahead of ours (a broken peer) counts as a full ring.
    #[inline]
    fn cached_free(&self) -> u32 {
        self.size
            .saturating_sub(self.head.wrapping_sub(self.cached_cons))
    }

    /// Entries free for us to fill, reading the consumer's index only when
    /// the cached one says the ring is full.
    #[inline]
    pub fn free(&mut self, consumer: &AtomicU32) -> u32 {
        let free = self.cached_free();
        if free > 0 {
            return free;
        }
        self.cached_cons = consumer.load(Ordering::Acquire);
        self.cached_free()
    }

    /// Reserves the entry at the head and returns its slot (`< size`); the
    /// caller fills it before the next [`submit`](Self::submit), and must
    /// have seen [`free`](Self::free) `> 0` for it.
    #[inline]
    pub fn reserve(&mut self) -> usize {
        debug_assert!(self.cached_free() > 0, "reserve on a full ring");
        let slot = (self.head & (self.size - 1)) as usize;
        self.head = self.head.wrapping_add(1);
        slot
    }

    /// Publishes every reserved entry to the consumer.
    #[inline]
    pub fn submit(&self, producer: &AtomicU32) {
        producer.store(self.head, Ordering::Release);
    }

    /// Entries reserved and not yet consumed (submitted or not).
    #[inline]
    pub fn outstanding(&mut self, consumer: &AtomicU32) -> u32 {
        self.cached_cons = consumer.load(Ordering::Acquire);
        self.head.wrapping_sub(self.cached_cons)
    }
}

/// The consumer's side of a ring.
#[derive(Debug, Clone)]
pub struct ConsIndex {
    /// Next entry to read.
    tail: u32,
    size: u32,
}

impl ConsIndex {
    /// Takes over a ring of `size` entries at its current consumer index.
    pub fn new(size: u32, consumer: &AtomicU32) -> ConsIndex {
        assert!(
            size.is_power_of_two(),
            "ring size {size} is no power of two"
        );
        ConsIndex {
            // Written by us alone.
            tail: consumer.load(Ordering::Relaxed),
            size,
        }
    }

    /// Entries the producer has published and we have not released: the
    /// entries at [`slot`](Self::slot)`(0..n)` are written and ours to read.
    /// At most `size`, whatever the producer's index says.
    #[inline]
    pub fn peek(&self, producer: &AtomicU32) -> u32 {
        producer
            .load(Ordering::Acquire)
            .wrapping_sub(self.tail)
            .min(self.size)
    }

    /// Slot of the `i`-th peeked entry (`< size`).
    #[inline]
    pub fn slot(&self, i: u32) -> usize {
        (self.tail.wrapping_add(i) & (self.size - 1)) as usize
    }

    /// Hands the first `n` peeked entries back to the producer (`n` at most
    /// what [`peek`](Self::peek) returned); we read them no more.
    #[inline]
    pub fn release(&mut self, n: u32, consumer: &AtomicU32) {
        debug_assert!(n <= self.size);
        self.tail = self.tail.wrapping_add(n);
        consumer.store(self.tail, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::UnsafeCell;
    use std::collections::VecDeque;

    /// Starting indices: fresh, and a few entries before the `u32` wrap.
    const STARTS: [u32; 6] = [0, 1, u32::MAX - 9, u32::MAX - 1, u32::MAX, 1 << 31];

    fn pair(start: u32) -> (AtomicU32, AtomicU32) {
        (AtomicU32::new(start), AtomicU32::new(start))
    }

    /// xorshift64*: deterministic, no dependency.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u32) -> u32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as u32 % n
        }
    }

    #[test]
    fn fill_drain_and_free_count_across_the_wrap() {
        for start in STARTS {
            let (prod, cons) = pair(start);
            let mut p = ProdIndex::new(8, &prod, &cons);
            let mut c = ConsIndex::new(8, &cons);
            assert_eq!(p.free(&cons), 8);
            assert_eq!(c.peek(&prod), 0);
            // Fill the ring: slots follow the index, masked.
            for k in 0..8u32 {
                assert_eq!(p.reserve(), (start.wrapping_add(k) & 7) as usize);
            }
            assert_eq!(p.free(&cons), 0);
            // Nothing visible before submit.
            assert_eq!(c.peek(&prod), 0);
            assert_eq!(p.outstanding(&cons), 8);
            p.submit(&prod);
            assert_eq!(prod.load(Ordering::Relaxed), start.wrapping_add(8));
            assert_eq!(c.peek(&prod), 8);
            assert_eq!(c.slot(0), (start & 7) as usize);
            assert_eq!(c.slot(7), (start.wrapping_add(7) & 7) as usize);
            // Release some: the producer sees them once its cache is stale.
            c.release(3, &cons);
            assert_eq!(cons.load(Ordering::Relaxed), start.wrapping_add(3));
            assert_eq!(c.peek(&prod), 5);
            assert_eq!(p.free(&cons), 3);
            assert_eq!(p.outstanding(&cons), 5);
            c.release(5, &cons);
            assert_eq!(c.peek(&prod), 0);
            assert_eq!(p.outstanding(&cons), 0);
            assert_eq!(p.free(&cons), 8);
        }
    }

    #[test]
    fn free_uses_the_cache_until_the_ring_looks_full() {
        let (prod, cons) = pair(u32::MAX - 2);
        let mut p = ProdIndex::new(4, &prod, &cons);
        p.reserve();
        p.reserve();
        p.submit(&prod);
        // The consumer takes both, but the cache still says 2 free.
        cons.store(prod.load(Ordering::Relaxed), Ordering::Release);
        assert_eq!(p.free(&cons), 2);
        p.reserve();
        p.reserve();
        // Full by the cache: now the consumer's index is read.
        assert_eq!(p.free(&cons), 2);
    }

    #[test]
    fn broken_peer_indices_stay_inside_the_ring() {
        // A consumer index ahead of the producer's: no room, not 4 billion.
        let (prod, cons) = pair(100);
        let mut p = ProdIndex::new(8, &prod, &cons);
        p.reserve();
        p.reserve();
        cons.store(110, Ordering::Relaxed);
        assert_eq!(p.outstanding(&cons), 102u32.wrapping_sub(110));
        assert_eq!(p.free(&cons), 0);
        // A producer index far ahead: at most a ring's worth to read.
        let (prod, cons) = pair(u32::MAX);
        let c = ConsIndex::new(8, &cons);
        prod.store(u32::MAX.wrapping_add(1000), Ordering::Relaxed);
        assert_eq!(c.peek(&prod), 8);
        assert!((0..8).all(|i| c.slot(i) < 8));
    }

    #[test]
    #[should_panic(expected = "no power of two")]
    fn size_must_be_a_power_of_two() {
        let (prod, cons) = pair(0);
        ProdIndex::new(6, &prod, &cons);
    }

    /// Random interleavings of reserve/submit/peek/release against a
    /// `VecDeque` model, entries carried in a plain array.
    #[test]
    fn random_operations_match_a_queue_model() {
        let steps = if cfg!(miri) { 400 } else { 20_000 };
        for (n, start) in STARTS.into_iter().enumerate() {
            for size in [1u32, 2, 8] {
                let mut rng = Rng(0x9e37_79b9 + n as u64 * 31 + u64::from(size));
                let (prod, cons) = pair(start);
                let mut p = ProdIndex::new(size, &prod, &cons);
                let mut c = ConsIndex::new(size, &cons);
                let mut slots = vec![u64::MAX; size as usize];
                let mut submitted = VecDeque::new();
                let mut pending = Vec::new();
                let mut next = 0u64;
                for _ in 0..steps {
                    match rng.below(4) {
                        0 => {
                            let free = p.free(&cons);
                            let used = (submitted.len() + pending.len()) as u32;
                            // The cache may lag, never overstate.
                            assert!(free <= size - used, "free {free}, used {used}");
                            if free > 0 {
                                slots[p.reserve()] = next;
                                pending.push(next);
                                next += 1;
                            }
                        }
                        1 => {
                            p.submit(&prod);
                            submitted.extend(pending.drain(..));
                        }
                        2 => {
                            let n = c.peek(&prod);
                            assert_eq!(n as usize, submitted.len());
                            for i in 0..n {
                                assert_eq!(Some(&slots[c.slot(i)]), submitted.get(i as usize));
                            }
                        }
                        _ => {
                            let n = c.peek(&prod);
                            let k = if n == 0 { 0 } else { 1 + rng.below(n) };
                            c.release(k, &cons);
                            submitted.drain(..k as usize);
                        }
                    }
                    let used = (submitted.len() + pending.len()) as u32;
                    assert_eq!(p.outstanding(&cons), used);
                    assert_eq!(p.free(&cons), size - used);
                }
            }
        }
    }

    /// A ring in ordinary memory: the two indices and `SIZE` plain
    /// (non-atomic) entries, so that an ordering too weak on either side
    /// is a data race on an entry, which Miri reports.
    struct Shared<const SIZE: usize> {
        prod: AtomicU32,
        cons: AtomicU32,
        entries: [UnsafeCell<u64>; SIZE],
    }

    // SAFETY: the entries are accessed only as the ring protocol allows
    // (a slot by the producer while reserved, by the consumer while
    // peeked), which the index code under test orders through `prod` and
    // `cons`; Miri checks exactly that.
    unsafe impl<const SIZE: usize> Sync for Shared<SIZE> {}

    /// Producer and consumer on two threads: every value arrives once, in
    /// order, with the indices wrapping past `u32::MAX` on the way.
    #[test]
    fn two_threads_pass_every_entry_in_order() {
        const SIZE: usize = 4;
        let total: u64 = if cfg!(miri) { 150 } else { 200_000 };
        for start in [u32::MAX - 37, 7] {
            let ring = Shared::<SIZE> {
                prod: AtomicU32::new(start),
                cons: AtomicU32::new(start),
                entries: std::array::from_fn(|_| UnsafeCell::new(0)),
            };
            let ring = &ring;
            std::thread::scope(|s| {
                s.spawn(move || {
                    let mut p = ProdIndex::new(SIZE as u32, &ring.prod, &ring.cons);
                    let mut v = 0u64;
                    while v < total {
                        let free = p.free(&ring.cons);
                        if free == 0 {
                            std::thread::yield_now();
                            continue;
                        }
                        // Batches of up to `free`, as the sink writes them.
                        for _ in 0..free.min((total - v) as u32) {
                            let slot = p.reserve();
                            // SAFETY: the slot is reserved: the consumer
                            // released it (acquire in free()) and will not
                            // read it before submit (release).
                            unsafe { *ring.entries[slot].get() = v };
                            v += 1;
                        }
                        p.submit(&ring.prod);
                    }
                });
                s.spawn(move || {
                    let mut c = ConsIndex::new(SIZE as u32, &ring.cons);
                    let mut want = 0u64;
                    while want < total {
                        let n = c.peek(&ring.prod);
                        if n == 0 {
                            std::thread::yield_now();
                            continue;
                        }
                        for i in 0..n {
                            // SAFETY: peeked: published by the producer
                            // (acquire in peek()), not reused before release.
                            let got = unsafe { *ring.entries[c.slot(i)].get() };
                            assert_eq!(got, want);
                            want += 1;
                        }
                        c.release(n, &ring.cons);
                    }
                });
            });
            let end = start.wrapping_add(total as u32);
            assert_eq!(ring.prod.load(Ordering::Relaxed), end);
            assert_eq!(ring.cons.load(Ordering::Relaxed), end);
        }
    }
}
