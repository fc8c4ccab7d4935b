//! Per-flow state of a TX thread, indexed by flow number, in fixed pages.
//!
//! A flow's slot never moves: growing adds a page (1 024 slots) and
//! copies nothing. With a `Vec`, each doubling copied every slot on the
//! TX thread, which stalls for as long as the copy takes, and every
//! record due meanwhile is late. The per-flow counters are atomics that
//! only their TX thread writes, so the aggregator reads them where they
//! are instead of the TX thread handing over a copy (32 MB every 100 ms
//! with 10^6 flows).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Slots per page.
const PAGE: usize = 1024;
/// Flows with state: 2^26 (64 Mi). Later flows are sent, and counted in
/// the totals, but have no per-flow counters.
pub(crate) const MAX_FLOWS: usize = 1 << 26;

/// Slots of `T`, allocated a page at a time on first use.
pub(crate) struct Pages<T> {
    pages: Box<[OnceLock<Box<[T]>>]>,
}

impl<T: Default> Pages<T> {
    pub fn new() -> Self {
        Pages {
            pages: (0..MAX_FLOWS / PAGE).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Slot `i`, its page allocated if need be; None past `MAX_FLOWS`.
    #[inline]
    pub fn slot(&self, i: usize) -> Option<&T> {
        let page = self.pages.get(i / PAGE)?;
        let page = page.get_or_init(|| (0..PAGE).map(|_| T::default()).collect());
        Some(&page[i % PAGE])
    }

    /// Every slot of the pages allocated so far, with its index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.pages.iter().enumerate().flat_map(|(p, page)| {
            page.get().into_iter().flat_map(move |slots| {
                slots
                    .iter()
                    .enumerate()
                    .map(move |(o, t)| (p * PAGE + o, t))
            })
        })
    }
}

impl<T: Default> Default for Pages<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-flow counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlowCount {
    pub sent: u64,
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
}

impl std::ops::AddAssign for FlowCount {
    fn add_assign(&mut self, o: FlowCount) {
        self.sent += o.sent;
        self.bytes += o.bytes;
        self.late += o.late;
        self.dropped += o.dropped;
    }
}

/// One flow's counters: written by its TX thread only (a load and a
/// store, no locked instruction), read by the aggregator at any time.
#[derive(Default)]
pub(crate) struct FlowCell {
    sent: AtomicU64,
    bytes: AtomicU64,
    late: AtomicU64,
    dropped: AtomicU64,
}

#[inline]
fn bump(c: &AtomicU64, by: u64) {
    c.store(c.load(Ordering::Relaxed) + by, Ordering::Relaxed);
}

impl FlowCell {
    /// Adds to the counts; only the owning TX thread calls this.
    #[inline]
    pub fn add(&self, d: FlowCount) {
        if d.sent > 0 {
            bump(&self.sent, d.sent);
            bump(&self.bytes, d.bytes);
        }
        if d.late > 0 {
            bump(&self.late, d.late);
        }
        if d.dropped > 0 {
            bump(&self.dropped, d.dropped);
        }
    }

    pub fn read(&self) -> FlowCount {
        FlowCount {
            sent: self.sent.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

/// A TX thread's per-flow counters.
pub(crate) type FlowCounters = Pages<FlowCell>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_stay_put_and_iterate_in_order() {
        let p: Pages<FlowCell> = Pages::new();
        let first = p.slot(3).expect("in range") as *const FlowCell;
        p.slot(5 * PAGE + 7).expect("in range").add(FlowCount {
            sent: 1,
            bytes: 70,
            ..FlowCount::default()
        });
        // Another page later: slot 3 has not moved.
        assert_eq!(p.slot(3).expect("in range") as *const FlowCell, first);
        let seen: Vec<usize> = p
            .iter()
            .filter(|(_, c)| c.read() != FlowCount::default())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(seen, vec![5 * PAGE + 7]);
        assert_eq!(p.iter().count(), 2 * PAGE);
        assert!(p.slot(MAX_FLOWS).is_none());
    }

    #[test]
    fn counts_add_up() {
        let c = FlowCell::default();
        for _ in 0..3 {
            c.add(FlowCount {
                sent: 1,
                bytes: 10,
                late: 1,
                dropped: 0,
            });
        }
        c.add(FlowCount {
            dropped: 2,
            ..FlowCount::default()
        });
        assert_eq!(
            c.read(),
            FlowCount {
                sent: 3,
                bytes: 30,
                late: 3,
                dropped: 2
            }
        );
    }
}
