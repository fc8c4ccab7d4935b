//! Clocks. The data path asks a [`Clock`] for `now`; production uses
//! CLOCK_MONOTONIC through `std::time::Instant` (a vDSO call, ~20 ns), tests
//! use a [`VirtualClock`] they advance by hand.

use crate::time::{MonoTime, Nanos};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A source of monotonic time.
pub trait Clock: Send + Sync {
    fn now(&self) -> MonoTime;
}

/// CLOCK_MONOTONIC, as nanoseconds since this clock was created.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> MonoTime {
        MonoTime(self.origin.elapsed().as_nanos() as u64)
    }
}

/// A clock that only moves when told to. Clones share the same time.
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    now: Arc<AtomicU64>,
}

impl VirtualClock {
    pub fn new(start: MonoTime) -> Self {
        VirtualClock {
            now: Arc::new(AtomicU64::new(start.0)),
        }
    }
    pub fn advance(&self, by: Nanos) {
        self.now.fetch_add(by.0, Ordering::SeqCst);
    }
    /// Moves the clock to `t` if `t` is later than now.
    pub fn advance_to(&self, t: MonoTime) {
        self.now.fetch_max(t.0, Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> MonoTime {
        MonoTime(self.now.load(Ordering::SeqCst))
    }
}

/// Tries of [`paired_offset`], and the window (ns) that ends them early.
const PAIR_TRIES: usize = 64;
const PAIR_TIGHT_NS: u64 = 1_000;

/// `other − base` of two clocks read as a pair (ns): each `other` reading
/// is bracketed by two `base` readings and the tightest bracket of a few
/// tries is kept, so a preemption between the reads (milliseconds on a
/// busy machine) does not enter the offset.
pub fn paired_offset(mut base: impl FnMut() -> u64, mut other: impl FnMut() -> u64) -> i128 {
    let mut best = (u64::MAX, 0i128);
    for _ in 0..PAIR_TRIES {
        let a = base();
        let o = other();
        let b = base();
        let window = b.saturating_sub(a);
        if window < best.0 {
            best = (window, i128::from(o) - (i128::from(a) + i128::from(b)) / 2);
            if window <= PAIR_TIGHT_NS {
                break;
            }
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_read_across_a_preemption_is_not_the_one_kept() {
        // `other` runs 1 000 000 ns ahead of `base`; the first tries are
        // preempted for 5 ms between the reads, a later one is not.
        let t = std::cell::Cell::new(0u64);
        let tries = std::cell::Cell::new(0u32);
        let base = || {
            t.set(t.get() + 100);
            t.get()
        };
        let other = || {
            tries.set(tries.get() + 1);
            if tries.get() <= 3 {
                t.set(t.get() + 5_000_000);
            }
            t.get() + 1_000_000
        };
        let off = paired_offset(base, other);
        assert!((off - 1_000_000).abs() <= 100, "{off}");
        assert_eq!(tries.get(), 4, "stops at the first tight pair");
    }

    #[test]
    fn virtual_clock_moves_only_forward() {
        let c = VirtualClock::new(MonoTime(100));
        let d = c.clone();
        c.advance(Nanos(50));
        assert_eq!(d.now(), MonoTime(150));
        d.advance_to(MonoTime(120));
        assert_eq!(c.now(), MonoTime(150));
        d.advance_to(MonoTime(400));
        assert_eq!(c.now(), MonoTime(400));
    }

    #[test]
    fn monotonic_clock_advances() {
        let c = MonotonicClock::new();
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(c.now().since(a) >= Nanos::from_millis(2));
    }
}
