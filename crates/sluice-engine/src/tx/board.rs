//! Rescue between TX threads.
//!
//! A TX thread that holds a unit of packets is the only one that can send
//! them, so when its CPU is taken away (a hypervisor exit can last longer
//! than a drift window) every packet due meanwhile is late, while another
//! TX thread, waiting for its own next packet, could have sent them. So
//! each TX thread shows the unit it is sending on a board, with the index
//! of its next unsent packet; a thread with time to spare watches the
//! others' next deadlines, and one found overdue by more than the rescue
//! delay is claimed and sent by the watcher. Every packet is claimed
//! exactly once, by a compare-and-swap on its unit's cursor, owner and
//! rescuer alike.
//!
//! A rescued packet leaves from another thread than the rest of its unit,
//! so a pipeline offers rescue only where packets of one flow may already
//! leave from several threads (time-series play); replay and flows keep
//! each flow on one thread, in order.

use super::unit::Unit;
use sluice_core::{MonoTime, Nanos};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// No unsent packet shown.
const NONE: u64 = u64::MAX;

/// One slot per TX thread.
pub(crate) struct Board<U> {
    slots: Box<[Slot<U>]>,
    /// How late a packet must be before another thread takes it.
    after: Nanos,
}

/// Cache-line aligned so that one thread's cursor updates do not slow the
/// loads of another's.
#[repr(align(128))]
struct Slot<U> {
    /// `generation << 32 | index` of the next unclaimed packet of the shown
    /// unit. Only the owner changes the generation (when it shows a new
    /// unit); owner and rescuers advance the index by compare-and-swap.
    cursor: AtomicU64,
    /// Deadline (ns of `MonoTime`) of that packet, or `NONE`. A hint that
    /// saves watchers from locking `shown`: a claim re-checks the packet.
    next: AtomicU64,
    /// The unit itself, kept alive for a rescuer while it reads it.
    shown: Mutex<Option<Arc<U>>>,
}

/// A packet claimed from another thread's unit.
pub(crate) struct Rescued<U> {
    pub unit: Arc<U>,
    pub index: usize,
}

fn pack(generation: u32, index: usize) -> u64 {
    (u64::from(generation) << 32) | index as u64
}

impl<U: Unit> Board<U> {
    pub fn new(threads: usize, after: Nanos) -> Self {
        let slots = (0..threads)
            .map(|_| Slot {
                cursor: AtomicU64::new(0),
                next: AtomicU64::new(NONE),
                shown: Mutex::new(None),
            })
            .collect();
        Board { slots, after }
    }

    /// Owner `me` shows `unit` (non-empty), whose first packet is due at
    /// `first`; returns the generation its claims use.
    pub fn show(&self, me: usize, unit: Arc<U>, first: MonoTime) -> u32 {
        let s = &self.slots[me];
        let mut shown = s.shown.lock().unwrap_or_else(|p| p.into_inner());
        let generation = ((s.cursor.load(Ordering::Relaxed) >> 32) as u32).wrapping_add(1);
        s.cursor.store(pack(generation, 0), Ordering::Release);
        s.next.store(first.0, Ordering::Release);
        *shown = Some(unit);
        generation
    }

    /// Owner `me` is done with its unit: nothing of it may be claimed now.
    pub fn hide(&self, me: usize) {
        let s = &self.slots[me];
        let mut shown = s.shown.lock().unwrap_or_else(|p| p.into_inner());
        s.next.store(NONE, Ordering::Release);
        *shown = None;
    }

    /// Owner `me` claims packet `index` of its unit; `next` is the deadline
    /// of the packet after it (None: the unit's last). Err: a rescuer took
    /// it, and the index of the first packet still unclaimed.
    #[inline]
    pub fn claim(
        &self,
        me: usize,
        generation: u32,
        index: usize,
        next: Option<MonoTime>,
    ) -> Result<(), usize> {
        let s = &self.slots[me];
        let want = pack(generation, index);
        match s
            .cursor
            .compare_exchange(want, want + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                s.next
                    .fetch_max(next.map_or(NONE, |t| t.0), Ordering::AcqRel);
                Ok(())
            }
            Err(now) => Err((now & 0xffff_ffff) as usize),
        }
    }

    /// When thread `me` should look again: the earliest time a packet
    /// another thread shows becomes overdue, if any.
    #[inline]
    pub fn watch(&self, me: usize) -> Option<MonoTime> {
        let mut first = NONE;
        for (i, s) in self.slots.iter().enumerate() {
            if i != me {
                first = first.min(s.next.load(Ordering::Acquire));
            }
        }
        (first != NONE).then(|| MonoTime(first) + self.after)
    }

    /// Claims, for thread `me`, a packet of another thread overdue at `now`
    /// by more than the rescue delay. `deadline` turns a due offset into an
    /// absolute time.
    pub fn rescue(
        &self,
        me: usize,
        now: MonoTime,
        deadline: impl Fn(Nanos) -> MonoTime,
    ) -> Option<Rescued<U>> {
        for (i, s) in self.slots.iter().enumerate() {
            if i == me || MonoTime(s.next.load(Ordering::Acquire)) + self.after > now {
                continue;
            }
            // The owner holds the lock only to show or hide a chunk.
            let Ok(shown) = s.shown.try_lock() else {
                continue;
            };
            let Some(chunk) = shown.as_ref() else {
                continue;
            };
            let cur = s.cursor.load(Ordering::Acquire);
            let index = (cur & 0xffff_ffff) as usize;
            if index >= chunk.len() {
                continue;
            }
            let due = deadline(chunk.due(index));
            if due + self.after > now {
                // A stale hint (the owner or another rescuer moved on).
                s.next.fetch_max(due.0, Ordering::AcqRel);
                continue;
            }
            if s.cursor
                .compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let after = if index + 1 < chunk.len() {
                    deadline(chunk.due(index + 1)).0
                } else {
                    NONE
                };
                s.next.fetch_max(after, Ordering::AcqRel);
                return Some(Rescued {
                    unit: chunk.clone(),
                    index,
                });
            }
        }
        None
    }

    /// True while another thread shows a chunk.
    pub fn others_busy(&self, me: usize) -> bool {
        self.slots
            .iter()
            .enumerate()
            .any(|(i, s)| i != me && s.next.load(Ordering::Acquire) != NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit of packets that are only due times.
    struct Dues(Vec<Nanos>);

    impl Unit for Dues {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn due(&self, i: usize) -> Nanos {
            self.0[i]
        }
        fn dues(&self) -> impl Iterator<Item = Nanos> + '_ {
            self.0.iter().copied()
        }
    }

    impl Dues {
        fn new(dues: &[u64]) -> Self {
            Dues(dues.iter().map(|&d| Nanos(d)).collect())
        }
    }

    fn chunk(dues: &[u64]) -> Arc<Dues> {
        Arc::new(Dues::new(dues))
    }

    fn at(d: Nanos) -> MonoTime {
        MonoTime(d.0)
    }

    #[test]
    fn a_record_is_claimed_once_and_only_when_overdue() {
        let b = Board::new(2, Nanos(2_000));
        let c = chunk(&[10_000, 20_000, 30_000]);
        let g = b.show(0, c, MonoTime(10_000));
        assert_eq!(b.watch(1), Some(MonoTime(12_000)));
        assert_eq!(b.watch(0), None);
        // Not late enough yet.
        assert!(b.rescue(1, MonoTime(11_999), at).is_none());
        // The owner sends record 0 on time.
        assert_eq!(b.claim(0, g, 0, Some(MonoTime(20_000))), Ok(()));
        assert_eq!(b.watch(1), Some(MonoTime(22_000)));
        // The owner stalls: record 1 is taken by thread 1, then record 2.
        let r = b.rescue(1, MonoTime(22_500), at).expect("overdue");
        assert_eq!(r.index, 1);
        assert!(b.rescue(1, MonoTime(22_600), at).is_none());
        assert_eq!(b.rescue(1, MonoTime(32_000), at).map(|r| r.index), Some(2));
        assert_eq!(b.watch(1), None);
        // Back, the owner finds both gone and where to go on.
        assert_eq!(b.claim(0, g, 1, Some(MonoTime(30_000))), Err(3));
        b.hide(0);
        assert!(b.rescue(1, MonoTime(99_000), at).is_none());
    }

    #[test]
    fn a_new_chunk_starts_a_new_generation() {
        let b = Board::new(2, Nanos(0));
        let g1 = b.show(0, chunk(&[5]), MonoTime(5));
        assert_eq!(b.claim(0, g1, 0, None), Ok(()));
        b.hide(0);
        let g2 = b.show(0, chunk(&[7, 8]), MonoTime(7));
        assert_ne!(g1, g2);
        // A claim with the old generation fails.
        assert!(b.claim(0, g1, 1, None).is_err());
        assert_eq!(b.rescue(1, MonoTime(7), at).map(|r| r.index), Some(0));
        assert_eq!(b.claim(0, g2, 0, Some(MonoTime(8))), Err(1));
    }

    #[test]
    fn racing_threads_send_every_record_exactly_once() {
        // Four threads race over one owner's chunk with a clock far past
        // every deadline: each record must be claimed exactly once.
        let _turn = crate::ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let b = Arc::new(Board::new(4, Nanos(0)));
        let n = 10_000;
        let dues: Vec<u64> = (0..n).collect();
        let g = b.show(0, chunk(&dues), MonoTime(0));
        let taken: Vec<Vec<usize>> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|me| {
                    let b = b.clone();
                    sc.spawn(move || {
                        let mut mine = Vec::new();
                        if me == 0 {
                            let mut i = 0;
                            while i < n as usize {
                                match b.claim(0, g, i, None) {
                                    Ok(()) => {
                                        mine.push(i);
                                        i += 1;
                                    }
                                    Err(j) => i = j,
                                }
                            }
                        } else {
                            while let Some(r) = b.rescue(me, MonoTime(u64::MAX / 2), at) {
                                mine.push(r.index);
                            }
                        }
                        mine
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<usize> = taken.concat();
        all.sort_unstable();
        assert_eq!(all, (0..n as usize).collect::<Vec<_>>());
    }
}
