//! What a capture says on its own: [`CaptureStats`] (counts, rate,
//! inter-arrival distribution), accumulated packet by packet.
//!
//! Design decisions and why:
//! - **Rates count intervals, not packets**: `pps = (packets - 1) /
//!   duration`, because `n` packets sent at rate `r` span `(n - 1) / r`
//!   seconds; `n / duration` would report 100 000.5 pps for a perfect
//!   100 kpps, 2 s run. `bps = pps * 8 * bytes / packets` (mean frame size
//!   times packet rate).
//! - **`bytes` are wire bytes** (`orig_len`), so a capture with a short
//!   snap length still reports the traffic that was on the link.
//! - **Duration is from the earliest to the latest timestamp**, so it is
//!   never negative even when a capture merges interfaces whose clocks
//!   interleave; in a monotonic capture these are the first and last
//!   packets.
//! - **Inter-arrival times are in file order**; a timestamp earlier than its
//!   predecessor contributes a 0 ns gap and is counted in
//!   [`CaptureStats::ts_backwards`], so the anomaly is visible rather than
//!   wrapped into a huge unsigned gap.

use serde::Serialize;

use crate::dist::{Dist, Samples};

/// Statistics of one capture on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureStats {
    /// Packets read (complete records only).
    pub packets: u64,
    /// Sum of the packets' original (wire) lengths.
    #[serde(rename = "frame_bytes")]
    pub bytes: u64,
    /// Earliest timestamp, ns since the epoch (0 when there are no packets).
    pub first_ns: u64,
    /// Latest timestamp, ns since the epoch (0 when there are no packets).
    pub last_ns: u64,
    /// `(last_ns - first_ns) / 1e9`.
    pub duration_s: f64,
    /// `(packets - 1) / duration_s`; 0 when the duration is 0.
    pub pps: f64,
    /// `pps * 8 * bytes / packets` (bits per second on the link, without
    /// preamble and inter-frame gap); 0 when the duration is 0.
    pub bps: f64,
    /// Times between consecutive packets in file order.
    pub iat: Option<Dist>,
    /// Packets whose timestamp is earlier than the previous packet's.
    pub ts_backwards: u64,
    /// The reader's message when the capture ended in a truncated record
    /// (the statistics cover the complete packets before it).
    pub truncated: Option<String>,
}

/// Accumulates [`CaptureStats`] one packet at a time.
#[derive(Debug)]
pub struct StatsBuilder {
    packets: u64,
    bytes: u64,
    first: u64,
    last: u64,
    prev: Option<u64>,
    backwards: u64,
    iat: Samples,
}

impl StatsBuilder {
    /// A builder keeping up to `max_sort` inter-arrival times for exact
    /// percentiles.
    pub fn new(max_sort: usize) -> StatsBuilder {
        StatsBuilder {
            packets: 0,
            bytes: 0,
            first: u64::MAX,
            last: 0,
            prev: None,
            backwards: 0,
            iat: Samples::new(max_sort),
        }
    }

    /// Adds the next packet (file order).
    pub fn push(&mut self, ts_ns: u64, orig_len: u32) {
        self.packets += 1;
        self.bytes += u64::from(orig_len);
        self.first = self.first.min(ts_ns);
        self.last = self.last.max(ts_ns);
        if let Some(p) = self.prev {
            if ts_ns < p {
                self.backwards += 1;
            }
            self.iat.push(ts_ns.saturating_sub(p));
        }
        self.prev = Some(ts_ns);
    }

    /// The statistics; `truncated` is the reader's message if the capture
    /// ended early.
    pub fn finish(self, truncated: Option<String>) -> CaptureStats {
        let (first, last) = if self.packets == 0 {
            (0, 0)
        } else {
            (self.first, self.last)
        };
        let duration_s = (last - first) as f64 / 1e9;
        let (pps, bps) = if duration_s > 0.0 {
            let pps = (self.packets - 1) as f64 / duration_s;
            (pps, pps * 8.0 * self.bytes as f64 / self.packets as f64)
        } else {
            (0.0, 0.0)
        };
        CaptureStats {
            packets: self.packets,
            bytes: self.bytes,
            first_ns: first,
            last_ns: last,
            duration_s,
            pps,
            bps,
            iat: self.iat.finish(),
            ts_backwards: self.backwards,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbr_rates_are_exact() {
        // 100 kpps for 2 s: 200 000 packets of 64 bytes, 10 us apart.
        let mut b = StatsBuilder::new(usize::MAX);
        let t0 = 1_700_000_000_000_000_000u64;
        for i in 0..200_000u64 {
            b.push(t0 + i * 10_000, 64);
        }
        let s = b.finish(None);
        assert_eq!((s.packets, s.bytes), (200_000, 12_800_000));
        assert_eq!((s.first_ns, s.last_ns), (t0, t0 + 1_999_990_000));
        assert!((s.pps - 100_000.0).abs() < 1e-6, "{}", s.pps);
        assert!((s.bps - 51_200_000.0).abs() < 1e-3, "{}", s.bps);
        let iat = s.iat.unwrap();
        assert_eq!(
            (iat.count, iat.min_ns, iat.percentiles.max_ns),
            (199_999, 10_000, 10_000)
        );
        assert_eq!(iat.stddev_ns, 0.0);
        assert_eq!(s.ts_backwards, 0);
    }

    #[test]
    fn empty_and_single_packet() {
        let s = StatsBuilder::new(10).finish(None);
        assert_eq!((s.packets, s.first_ns, s.last_ns), (0, 0, 0));
        assert_eq!((s.duration_s, s.pps, s.bps), (0.0, 0.0, 0.0));
        assert!(s.iat.is_none());
        let mut b = StatsBuilder::new(10);
        b.push(42, 100);
        let s = b.finish(Some("cut".into()));
        assert_eq!(
            (s.packets, s.bytes, s.first_ns, s.last_ns),
            (1, 100, 42, 42)
        );
        assert_eq!(s.pps, 0.0);
        assert!(s.iat.is_none());
        assert_eq!(s.truncated.as_deref(), Some("cut"));
    }

    #[test]
    fn backwards_timestamps_are_counted_not_wrapped() {
        let mut b = StatsBuilder::new(10);
        for t in [1000, 3000, 2000, 4000] {
            b.push(t, 60);
        }
        let s = b.finish(None);
        assert_eq!(s.ts_backwards, 1);
        assert_eq!((s.first_ns, s.last_ns), (1000, 4000));
        let iat = s.iat.unwrap();
        // Gaps 2000, 0 (clamped), 2000.
        assert_eq!(
            (iat.min_ns, iat.percentiles.max_ns, iat.percentiles.p50_ns),
            (0, 2000, 2000)
        );
        // 3 intervals in 3 us.
        assert!((s.pps - 1e6).abs() < 1e-6, "{}", s.pps);
    }
}
