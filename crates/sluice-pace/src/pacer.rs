//! The pacer: a pure decision from (due time, now).

use sluice_core::{MonoTime, Nanos};

/// What to do with the packet at the head of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send now; `eps_ns` is the send-time error ε = now − due (≥ 0).
    Send { eps_ns: i64 },
    /// Not due yet: wait until this time, then ask again.
    WaitUntil(MonoTime),
    /// Later than the drift window T_d allows: drop it and count a time
    /// violation. `eps_ns` is how late it was.
    Drop { eps_ns: i64 },
}

/// Decides send/wait/drop from due offsets relative to a common start.
///
/// Never reads a clock: `now` is passed in, so tests drive it with a
/// virtual clock and every branch is deterministic.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    start: MonoTime,
    drift: Option<Nanos>,
    topspeed: bool,
}

impl Pacer {
    /// `drift`: T_d, the latest a packet may leave after its due time.
    pub fn new(start: MonoTime, drift: Option<Nanos>, topspeed: bool) -> Self {
        Pacer {
            start,
            drift,
            topspeed,
        }
    }

    pub fn start(&self) -> MonoTime {
        self.start
    }

    /// Absolute due time of a due offset.
    #[inline]
    pub fn deadline(&self, due: Nanos) -> MonoTime {
        self.start + due
    }

    /// The decision for a packet that comes up at `now`. The drift window
    /// applies here, before any waiting: as in the paper (§V-C.4), a packet
    /// is a time violation when it is already later than T_d on reaching
    /// the sender, and the sender's own wake-up overshoot after waiting for
    /// it is not (that is measured in ε instead). After a wait, ask
    /// [`Pacer::poll_waited`].
    #[inline]
    pub fn poll(&self, due: Nanos, now: MonoTime) -> Decision {
        if self.topspeed {
            return Decision::Send { eps_ns: 0 };
        }
        let deadline = self.deadline(due);
        if now < deadline {
            return Decision::WaitUntil(deadline);
        }
        let eps = now.since(deadline);
        match self.drift {
            Some(td) if eps > td => Decision::Drop {
                eps_ns: eps.0 as i64,
            },
            _ => Decision::Send {
                eps_ns: eps.0 as i64,
            },
        }
    }
}

impl Pacer {
    /// The decision after waiting for this packet: send (with its ε), or
    /// wait more if the wait ended early. Never a drop.
    #[inline]
    pub fn poll_waited(&self, due: Nanos, now: MonoTime) -> Decision {
        match self.poll(due, now) {
            Decision::Drop { eps_ns } => Decision::Send { eps_ns },
            d => d,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::{Clock, VirtualClock};

    #[test]
    fn waits_then_sends_with_exact_error() {
        let clock = VirtualClock::new(MonoTime(1_000));
        let p = Pacer::new(MonoTime(2_000), None, false);
        assert_eq!(
            p.poll(Nanos(500), clock.now()),
            Decision::WaitUntil(MonoTime(2_500))
        );
        clock.advance_to(MonoTime(2_500));
        assert_eq!(
            p.poll(Nanos(500), clock.now()),
            Decision::Send { eps_ns: 0 }
        );
        clock.advance(Nanos(70));
        assert_eq!(
            p.poll(Nanos(500), clock.now()),
            Decision::Send { eps_ns: 70 }
        );
    }

    #[test]
    fn drift_window_drops_only_beyond_td() {
        let p = Pacer::new(MonoTime(0), Some(Nanos::from_micros(10)), false);
        assert_eq!(
            p.poll(Nanos(0), MonoTime(10_000)),
            Decision::Send { eps_ns: 10_000 }
        );
        assert_eq!(
            p.poll(Nanos(0), MonoTime(10_001)),
            Decision::Drop { eps_ns: 10_001 }
        );
    }

    #[test]
    fn a_packet_waited_for_is_never_a_violation() {
        let p = Pacer::new(MonoTime(0), Some(Nanos(0)), false);
        assert_eq!(
            p.poll(Nanos(100), MonoTime(50)),
            Decision::WaitUntil(MonoTime(100))
        );
        // Woke 30 ns late: sent, the overshoot counted in ε.
        assert_eq!(
            p.poll_waited(Nanos(100), MonoTime(130)),
            Decision::Send { eps_ns: 30 }
        );
        assert_eq!(
            p.poll_waited(Nanos(100), MonoTime(90)),
            Decision::WaitUntil(MonoTime(100))
        );
        // Already late on arrival: a violation even at T_d = 0.
        assert_eq!(
            p.poll(Nanos(100), MonoTime(101)),
            Decision::Drop { eps_ns: 1 }
        );
    }

    #[test]
    fn without_drift_late_packets_still_go() {
        let p = Pacer::new(MonoTime(0), None, false);
        assert_eq!(
            p.poll(Nanos(0), MonoTime(5_000_000)),
            Decision::Send { eps_ns: 5_000_000 }
        );
    }

    #[test]
    fn topspeed_never_waits() {
        let p = Pacer::new(MonoTime(1_000_000), None, true);
        assert_eq!(
            p.poll(Nanos(9_999_999), MonoTime(0)),
            Decision::Send { eps_ns: 0 }
        );
    }
}
