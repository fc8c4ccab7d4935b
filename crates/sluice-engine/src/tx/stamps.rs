//! Receive stamps' numbers and departure times (`--rx-stamp`), for every
//! feed that stamps: frames of the batch pipeline (`batches.rs`) and
//! datagram payloads of time-series play (`series/feed.rs`).

use sluice_core::{Clock, MonoTime, MonotonicClock};
use sluice_wire::rxstamp::RxStamp;

/// One TX thread's stamps: a sequence per stream slot (the output port),
/// numbered in send order, and the pacer's release instant on the run's
/// monotonic clock turned into CLOCK_REALTIME (what receivers stamp with).
pub(crate) struct StampNumbers {
    /// CLOCK_REALTIME − the run's monotonic clock, in ns.
    realtime_offset: i128,
    next: [u64; 2],
    /// Frames (or datagrams) that left without a stamp.
    pub unstamped: u64,
}

impl StampNumbers {
    /// Stamps on the wall clock, moved by `shift_ns`.
    pub fn new(clock: &MonotonicClock, shift_ns: i64) -> Self {
        let offset =
            sluice_core::clock::paired_offset(|| clock.now().0, sluice_sys::clock::realtime_ns);
        StampNumbers {
            realtime_offset: offset + i128::from(shift_ns),
            next: [0; 2],
            unstamped: 0,
        }
    }

    /// The stamp of the next frame of `stream` in `slot` (0 or 1), leaving
    /// at `now`; its number is taken.
    #[inline]
    pub fn take(&mut self, stream: u32, slot: usize, now: MonoTime) -> RxStamp {
        let slot = slot.min(1);
        let seq = self.next[slot];
        self.next[slot] += 1;
        RxStamp {
            stream,
            seq,
            tx_ns: (i128::from(now.0) + self.realtime_offset).max(0) as u64,
            short: false,
        }
    }
}
