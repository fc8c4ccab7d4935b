//! Wait strategies: how the TX thread gets from now to a deadline.

use sluice_core::{Clock, MonoTime, Nanos, VirtualClock};

/// Policy that blocks (or advances a virtual clock) until a deadline.
pub trait Waiter {
    /// Returns when `clock.now() >= deadline`, or early when `interrupted`
    /// says so (checked at least every few milliseconds); returns the time
    /// it observed last.
    fn wait_until(&mut self, deadline: MonoTime, interrupted: &dyn Fn() -> bool) -> MonoTime;
    fn now(&self) -> MonoTime;
}

/// Sleep until `spin` before the deadline, then busy-poll the clock.
///
/// `std::thread::sleep` overshoots by the timer slack (50 µs by default; the
/// engine sets it to 1 ns) plus the scheduler's wake-up latency, so the
/// last stretch is spun: that is what gives sub-µs ε.
/// Long waits sleep in slices of at most `MAX_SLICE` so a stop request is
/// seen promptly.
pub struct SpinSleep<C: Clock> {
    clock: C,
    spin: Nanos,
}

/// Longest single sleep: bounds how long a SIGINT goes unnoticed.
const MAX_SLICE: Nanos = Nanos::from_millis(20);

impl<C: Clock> SpinSleep<C> {
    /// `spin`: how long before a deadline to stop sleeping and start spinning.
    /// Zero spins the whole wait (lowest ε, one core at 100 %).
    pub fn new(clock: C, spin: Nanos) -> Self {
        SpinSleep { clock, spin }
    }
}

impl<C: Clock> Waiter for SpinSleep<C> {
    fn wait_until(&mut self, deadline: MonoTime, interrupted: &dyn Fn() -> bool) -> MonoTime {
        loop {
            let now = self.clock.now();
            if now >= deadline {
                return now;
            }
            let left = deadline.since(now);
            if left > self.spin {
                if interrupted() {
                    return now;
                }
                let nap = left.saturating_sub(self.spin);
                let nap = if nap > MAX_SLICE { MAX_SLICE } else { nap };
                std::thread::sleep(nap.to_std());
            } else {
                let mut spins = 0u32;
                loop {
                    std::hint::spin_loop();
                    let now = self.clock.now();
                    if now >= deadline {
                        return now;
                    }
                    spins = spins.wrapping_add(1);
                    if spins & 0xffff == 0 && interrupted() {
                        return now;
                    }
                }
            }
        }
    }

    fn now(&self) -> MonoTime {
        self.clock.now()
    }
}

/// Waiting on a virtual clock: jumps straight to the deadline. Drives the
/// whole pipeline deterministically in tests (`--clock virtual`).
impl Waiter for VirtualClock {
    fn wait_until(&mut self, deadline: MonoTime, _interrupted: &dyn Fn() -> bool) -> MonoTime {
        self.advance_to(deadline);
        Clock::now(self)
    }

    fn now(&self) -> MonoTime {
        Clock::now(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::MonotonicClock;

    #[test]
    fn spin_sleep_reaches_the_deadline() {
        let clock = MonotonicClock::new();
        let mut w = SpinSleep::new(clock, Nanos::from_micros(100));
        let deadline = clock.now() + Nanos::from_millis(3);
        let reached = w.wait_until(deadline, &|| false);
        assert!(reached >= deadline);
    }

    #[test]
    fn interruption_cuts_a_long_wait_short() {
        let clock = MonotonicClock::new();
        let mut w = SpinSleep::new(clock, Nanos::from_micros(100));
        let start = clock.now();
        let reached = w.wait_until(start + Nanos::from_secs(3600), &|| true);
        assert!(reached.since(start) < Nanos::from_secs(1));
    }

    #[test]
    fn virtual_waiter_jumps() {
        let mut c = VirtualClock::new(MonoTime(0));
        assert_eq!(c.wait_until(MonoTime(777), &|| false), MonoTime(777));
    }
}
