//! The calendar of next-packet times (FLOR Appendix D): a radix heap.
//!
//! Packet times only move forward: a flow's next packet is never due before
//! the packet just taken, and a flow starts no earlier than the packet the
//! flow timer let it in front of. A monotone priority queue fits, and a
//! radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990) is the cheapest one for
//! a million flows: every access is sequential, where a binary heap of 2^20
//! entries misses the cache on each of its 20 levels.
//!
//! Times are read in base 16. An entry due after `last` is appended to the
//! bucket named by the highest digit in which its time differs from `last`
//! and by its value there. Entries due at `last` wait in a FIFO, and those
//! due before it (inserted after `last` moved on) in a small sorted run.
//! When both are empty, the lowest non-empty bucket refills them: a small
//! bucket is sorted, a large one is spread over the lower digits and its
//! earliest entries are the new `last`. An entry moves at most once per
//! digit (five times for times a millisecond apart).
//!
//! Entries due at the same time leave in the order they were inserted.
//! Entries are 12 bytes, stored in chunks of 512 that are recycled as soon
//! as they are read: the calendar holds little more than its live entries.

use std::collections::VecDeque;

/// One calendar entry: a flow slot and the time its next packet is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct NextPacket {
    pub due: u64,
    pub slot: u32,
}

/// Entries per chunk (6 KiB).
const CHUNK: usize = 512;
/// Free chunks kept for reuse, at most.
const POOL_MAX: usize = 1024;
/// Buckets up to this size are sorted whole.
const SORT_MAX: usize = 64;
/// Bits per digit.
const DIGIT: u32 = 4;
const BUCKETS: usize = (64 / DIGIT as usize) << DIGIT;
const WORDS: usize = BUCKETS.div_ceil(64);

/// A FIFO of entries in fixed-size chunks: full chunks in order, then the
/// one being written.
#[derive(Default)]
struct Chunks {
    full: VecDeque<Vec<NextPacket>>,
    tail: Vec<NextPacket>,
    /// Entries of the front chunk already read.
    head: usize,
}

impl Chunks {
    #[inline]
    fn is_empty(&self) -> bool {
        self.full.is_empty() && self.head == self.tail.len()
    }

    #[inline]
    fn front(&self) -> Option<NextPacket> {
        match self.full.front() {
            Some(c) => Some(c[self.head]),
            None => self.tail.get(self.head).copied(),
        }
    }

    #[inline]
    fn push(&mut self, e: NextPacket, pool: &mut Vec<Vec<NextPacket>>) {
        if self.tail.len() == self.tail.capacity() {
            self.next_chunk(pool);
        }
        self.tail.push(e);
    }

    #[cold]
    fn next_chunk(&mut self, pool: &mut Vec<Vec<NextPacket>>) {
        let fresh = pool.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.tail, fresh);
        if !full.is_empty() {
            self.full.push_back(full);
        }
    }

    #[inline]
    fn pop(&mut self, pool: &mut Vec<Vec<NextPacket>>) -> Option<NextPacket> {
        if let Some(c) = self.full.front() {
            let e = c[self.head];
            self.head += 1;
            if self.head == c.len() {
                if let Some(c) = self.full.pop_front() {
                    recycle(c, pool);
                }
                self.head = 0;
            }
            return Some(e);
        }
        let e = *self.tail.get(self.head)?;
        self.head += 1;
        if self.head == self.tail.len() {
            self.tail.clear();
            self.head = 0;
        }
        Some(e)
    }

    /// Every entry in order, each chunk recycled once read.
    fn drain(
        &mut self,
        pool: &mut Vec<Vec<NextPacket>>,
        mut each: impl FnMut(NextPacket, &mut Vec<Vec<NextPacket>>),
    ) {
        let mut head = std::mem::take(&mut self.head);
        while let Some(c) = self.full.pop_front() {
            for e in &c[head..] {
                each(*e, pool);
            }
            head = 0;
            recycle(c, pool);
        }
        let tail = std::mem::take(&mut self.tail);
        for e in &tail[head..] {
            each(*e, pool);
        }
        recycle(tail, pool);
    }
}

fn recycle(mut c: Vec<NextPacket>, pool: &mut Vec<Vec<NextPacket>>) {
    if pool.len() < POOL_MAX && c.capacity() > 0 {
        c.clear();
        pool.push(c);
    }
}

pub struct Calendar {
    /// Entries due before `last`, sorted (ties in insertion order).
    run: VecDeque<NextPacket>,
    /// Entries due at `last`, in insertion order.
    now: Chunks,
    /// Bucket 16 p + v holds the entries due after `last` whose time first
    /// differs from it in hex digit p, where it is v.
    buckets: Vec<Chunks>,
    /// Bit i set: bucket i is not empty.
    occupied: [u64; WORDS],
    /// The earliest time in each bucket (u64::MAX when empty).
    mins: Vec<u64>,
    last: u64,
    /// The time of the last entry taken: no entry is due earlier.
    taken: u64,
    /// The only entry, while there is just one (one flow, or one at a
    /// time): it skips the buckets, the FIFO and the run.
    solo: Option<NextPacket>,
    len: usize,
    /// Flows' first packets (`push_first`), in time order: among entries
    /// due at the same time they leave first.
    firsts: Chunks,
    firsts_len: usize,
    /// The time of the last entry in `firsts`.
    firsts_due: u64,
    pool: Vec<Vec<NextPacket>>,
    scratch: Vec<NextPacket>,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar {
            run: VecDeque::new(),
            now: Chunks::default(),
            buckets: (0..BUCKETS).map(|_| Chunks::default()).collect(),
            occupied: [0; WORDS],
            mins: vec![u64::MAX; BUCKETS],
            last: 0,
            taken: 0,
            solo: None,
            len: 0,
            firsts: Chunks::default(),
            firsts_len: 0,
            firsts_due: 0,
            pool: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// The bucket of a time after `last`: the highest differing digit, and the
/// time's value there.
#[inline]
fn bucket(due: u64, last: u64) -> usize {
    let digit = (63 - (due ^ last).leading_zeros()) / DIGIT;
    let value = (due >> (digit * DIGIT)) & ((1 << DIGIT) - 1);
    ((digit as usize) << DIGIT) + value as usize
}

impl Calendar {
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries held (the tests check it against a reference heap).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len + self.firsts_len
    }

    /// Inserts a flow's first packet. Among entries due at the same time,
    /// these leave before those inserted with [`Calendar::push`]: a flow
    /// starting while a hundred others send at the same nanosecond starts
    /// on time, and the others each wait one packet longer. Flows start in
    /// time order, so these entries form a FIFO; one that would go before
    /// the previous one is inserted with `push`.
    pub fn push_first(&mut self, due: u64, slot: u32) {
        let due = due.max(self.taken);
        if due < self.firsts_due {
            return self.push(due, slot);
        }
        self.firsts_due = due;
        self.firsts.push(NextPacket { due, slot }, &mut self.pool);
        self.firsts_len += 1;
    }

    /// When the earliest entry is due, without taking it. Looking does not
    /// move the calendar on: an entry due before it may still be inserted.
    #[inline]
    pub fn peek_due(&self) -> Option<u64> {
        self.leading_first().or_else(|| self.peek_pushed())
    }

    /// Takes the earliest entry: among equal times, first packets in the
    /// order they were inserted, then the others in the order they were.
    #[inline]
    pub fn pop(&mut self) -> Option<NextPacket> {
        if self.leading_first().is_some() {
            let e = self.firsts.pop(&mut self.pool)?;
            self.firsts_len -= 1;
            self.taken = self.taken.max(e.due);
            return Some(e);
        }
        self.pop_pushed()
    }

    /// The time of the earliest first packet when it leaves next (no other
    /// entry is due before it). Always inlined: it runs for every packet,
    /// where the cost of a call showed in callgrind (see docs/BENCHMARKS.md).
    #[inline(always)]
    fn leading_first(&self) -> Option<u64> {
        if self.firsts_len == 0 {
            return None;
        }
        let first = self.firsts.front()?.due;
        (self.len == 0 || self.peek_pushed().is_none_or(|d| first <= d)).then_some(first)
    }

    /// Inserts `slot` due at `due`. A time before the last one taken is
    /// taken as that time (it is due at once).
    #[inline]
    pub fn push(&mut self, due: u64, slot: u32) {
        let e = NextPacket {
            due: due.max(self.taken),
            slot,
        };
        if self.len == 0 {
            self.solo = Some(e);
            self.len = 1;
            return;
        }
        if let Some(s) = self.solo.take() {
            self.len = 0;
            self.insert(s);
        }
        self.insert(e);
    }

    #[inline]
    fn insert(&mut self, e: NextPacket) {
        let due = e.due;
        if self.len == 0 {
            // Nothing to keep in order: `last` moves to this time.
            self.last = due;
        }
        self.len += 1;
        if due > self.last {
            self.bucket_push(e);
        } else if due == self.last {
            self.now.push(e, &mut self.pool);
        } else {
            // After the entries due no later.
            let at = self.run.partition_point(|r| r.due <= due);
            self.run.insert(at, e);
        }
    }

    #[inline]
    fn bucket_push(&mut self, e: NextPacket) {
        let b = bucket(e.due, self.last);
        self.buckets[b].push(e, &mut self.pool);
        self.occupied[b / 64] |= 1 << (b % 64);
        self.mins[b] = self.mins[b].min(e.due);
    }

    /// The earliest of the entries inserted with `push`.
    #[inline]
    fn peek_pushed(&self) -> Option<u64> {
        if let Some(e) = self.solo {
            return Some(e.due);
        }
        if let Some(e) = self.run.front() {
            return Some(e.due);
        }
        if !self.now.is_empty() {
            return Some(self.last);
        }
        self.lowest().map(|i| self.mins[i])
    }

    /// Takes the earliest entry inserted with `push` (the first inserted
    /// among equal times).
    #[inline]
    fn pop_pushed(&mut self) -> Option<NextPacket> {
        if let Some(e) = self.solo.take() {
            self.taken = e.due;
            self.len = 0;
            return Some(e);
        }
        let e = match self.run.pop_front() {
            Some(e) => e,
            None => match self.now.pop(&mut self.pool) {
                Some(e) => e,
                None => {
                    if !self.refill() {
                        return None;
                    }
                    return self.pop_pushed();
                }
            },
        };
        self.taken = e.due;
        self.len -= 1;
        Some(e)
    }

    /// The lowest non-empty bucket.
    fn lowest(&self) -> Option<usize> {
        let w = (0..WORDS).find(|&w| self.occupied[w] != 0)?;
        Some(w * 64 + self.occupied[w].trailing_zeros() as usize)
    }

    /// Refills the empty run and FIFO from the lowest non-empty bucket and
    /// moves `last` on. False when the calendar is empty.
    #[inline(never)]
    fn refill(&mut self) -> bool {
        let Some(i) = self.lowest() else {
            return false;
        };
        self.occupied[i / 64] &= !(1 << (i % 64));
        let min = std::mem::replace(&mut self.mins[i], u64::MAX);
        let b = &mut self.buckets[i];
        if b.full.is_empty() && b.tail.len() - b.head <= SORT_MAX {
            // Small: sorted in place of the run. Any time in bucket i can
            // become `last`: the other buckets differ from all of them in
            // a higher digit, or in a higher value of the same digit, as
            // they did from the old `last`.
            let mut sorted = std::mem::take(&mut self.scratch);
            sorted.extend_from_slice(&b.tail[b.head..]);
            b.tail.clear();
            b.head = 0;
            if sorted.len() > 1 {
                sorted.sort_by_key(|e| e.due); // stable: ties keep their order
            }
            self.last = sorted.last().map_or(min, |e| e.due);
            for e in sorted.drain(..) {
                if e.due < self.last {
                    self.run.push_back(e);
                } else {
                    self.now.push(e, &mut self.pool);
                }
            }
            self.scratch = sorted;
        } else {
            // Spread over the lower digits; every entry lands below i, as
            // it shares the digits that name bucket i with the new `last`.
            let mut from = std::mem::take(&mut self.buckets[i]);
            self.last = min;
            let mut now = std::mem::take(&mut self.now);
            let (buckets, occupied, mins) = (&mut self.buckets, &mut self.occupied, &mut self.mins);
            from.drain(&mut self.pool, |e, pool| {
                if e.due == min {
                    now.push(e, pool);
                } else {
                    let b = bucket(e.due, min);
                    buckets[b].push(e, pool);
                    occupied[b / 64] |= 1 << (b % 64);
                    mins[b] = mins[b].min(e.due);
                }
            });
            self.now = now;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::source::splitmix;
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Random monotone workloads, taken one by one, against a binary heap
    /// ordered by (due, insertion number): same entries, same order.
    #[test]
    fn takes_entries_in_time_then_insertion_order_like_a_heap() {
        for seed in 0..20u64 {
            let mut state = seed;
            let mut next = || splitmix(&mut state);
            let mut cal = Calendar::new();
            let mut heap = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = next() >> 20;
            let spread = 1u64 << (next() % 40);
            for round in 0..20_000 {
                let pushes = if round < 100 { 5 } else { next() % 3 };
                for _ in 0..pushes {
                    // Ties are common: small spreads and repeated times.
                    let due = now + next() % spread.max(1) * (next() % 2);
                    let slot = (next() % 1000) as u32;
                    cal.push(due, slot);
                    heap.push(Reverse((due, seq, slot)));
                    seq += 1;
                }
                assert_eq!(cal.len(), heap.len());
                let peeked = heap.peek().map(|Reverse((due, _, _))| *due);
                assert_eq!(cal.peek_due(), peeked);
                match (cal.pop(), heap.pop()) {
                    (Some(e), Some(Reverse((due, _, slot)))) => {
                        assert_eq!((e.due, e.slot), (due, slot), "seed {seed} round {round}");
                        now = due;
                    }
                    (None, None) => {}
                    (c, h) => panic!("seed {seed}: calendar {c:?}, heap {h:?}"),
                }
            }
            while let Some(Reverse((due, _, slot))) = heap.pop() {
                let e = cal.pop().expect("calendar ran dry before the heap");
                assert_eq!((e.due, e.slot), (due, slot));
            }
            assert!(cal.pop().is_none() && cal.len() == 0);
        }
    }

    /// Flows' first packets mixed in: at equal times they leave before the
    /// other entries, each kind in insertion order.
    #[test]
    fn first_packets_lead_their_time_like_a_heap_with_a_class_key() {
        for seed in 0..10u64 {
            let mut state = seed ^ 0xf1f5;
            let mut next = || splitmix(&mut state);
            let mut cal = Calendar::new();
            let mut heap = BinaryHeap::new();
            let (mut seq, mut now, mut start) = (0u64, 1000u64, 1000u64);
            let spread = 1u64 << (next() % 12);
            for round in 0..20_000 {
                if next() % 3 == 0 {
                    // Flows start in time order, often exactly on a tick.
                    start = start.max(now) + next() % 2 * (next() % spread);
                    let slot = (next() % 1000) as u32;
                    cal.push_first(start, slot);
                    heap.push(Reverse((start, 0, seq, slot)));
                    seq += 1;
                }
                for _ in 0..next() % 3 {
                    let due = now + next() % 2 * (next() % spread);
                    let slot = (next() % 1000) as u32;
                    cal.push(due, slot);
                    heap.push(Reverse((due, 1, seq, slot)));
                    seq += 1;
                }
                assert_eq!(cal.len(), heap.len());
                assert_eq!(cal.peek_due(), heap.peek().map(|Reverse(k)| k.0));
                match (cal.pop(), heap.pop()) {
                    (Some(e), Some(Reverse((due, _, _, slot)))) => {
                        assert_eq!((e.due, e.slot), (due, slot), "seed {seed} round {round}");
                        now = due;
                    }
                    (None, None) => {}
                    (c, h) => panic!("seed {seed}: calendar {c:?}, heap {h:?}"),
                }
            }
            while let Some(Reverse((due, _, _, slot))) = heap.pop() {
                let e = cal.pop().expect("calendar ran dry before the heap");
                assert_eq!((e.due, e.slot), (due, slot));
            }
            assert!(cal.pop().is_none() && cal.len() == 0);
        }
    }

    #[test]
    fn a_time_in_the_past_is_due_at_once_and_extremes_fit() {
        let mut cal = Calendar::new();
        cal.push(u64::MAX, 1);
        cal.push(1000, 2);
        assert_eq!(cal.pop().map(|e| e.slot), Some(2));
        cal.push(10, 3); // before the last time taken
        let e = cal.pop().unwrap();
        assert_eq!((e.due, e.slot), (1000, 3));
        assert_eq!(cal.pop().map(|e| (e.due, e.slot)), Some((u64::MAX, 1)));
        assert_eq!(cal.pop(), None);
    }

    #[test]
    fn looking_does_not_move_the_calendar_on() {
        let mut cal = Calendar::new();
        cal.push(0, 1);
        cal.push(1000, 2);
        assert_eq!(cal.pop().map(|e| e.slot), Some(1));
        assert_eq!(cal.peek_due(), Some(1000));
        cal.push(500, 3); // a flow starting before the next packet
        assert_eq!(cal.peek_due(), Some(500));
        assert_eq!(cal.pop().map(|e| (e.due, e.slot)), Some((500, 3)));
        assert_eq!(cal.pop().map(|e| (e.due, e.slot)), Some((1000, 2)));
    }

    #[test]
    fn many_entries_at_one_time_leave_in_insertion_order() {
        let mut cal = Calendar::new();
        let n = 5 * CHUNK as u32 + 7;
        for s in 0..n {
            cal.push(500, s);
        }
        cal.push(400, u32::MAX);
        assert_eq!(cal.pop().map(|e| e.slot), Some(u32::MAX));
        for s in 0..n {
            assert_eq!(cal.peek_due(), Some(500));
            assert_eq!(cal.pop().map(|e| (e.due, e.slot)), Some((500, s)));
            cal.push(900, s); // the next round, while this one drains
        }
        for s in 0..n {
            assert_eq!(cal.pop().map(|e| (e.due, e.slot)), Some((900, s)));
        }
        assert_eq!(cal.pop(), None);
        // Chunks were recycled, not piled up: at most the two rounds' worth.
        assert!(cal.pool.len() <= 2 * (n as usize).div_ceil(CHUNK) + 2);
    }

    #[test]
    fn entries_are_12_bytes() {
        assert_eq!(std::mem::size_of::<NextPacket>(), 12);
    }
}
