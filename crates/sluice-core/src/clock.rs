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

#[cfg(test)]
mod tests {
    use super::*;

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
