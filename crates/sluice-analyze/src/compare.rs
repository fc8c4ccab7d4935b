//! The verdict of a capture against its reference: [`Comparison`].
//!
//! Design decision: every number is defined exactly as in
//! `bench/gaperr.py`, with the reference index (position in the
//! reference file) in place of its sequence number, so the two tools agree
//! to the nanosecond on traces that script understands (an integration test
//! holds us to it):
//! - for consecutive reference indices `a, a+1` that both arrived,
//!   `error = |(cap[a+1] - cap[a]) - (ref[a+1] - ref[a])|` in integer ns,
//!   where `cap[i]` is the *first* arrival of `i` (duplicates are ignored);
//! - `rate_err_pct = (rspan / span - 1) * 100`, with `span` and `rspan` the
//!   capture and reference time from the lowest to the highest received
//!   index (NaN when `span` is 0 or fewer than two arrived);
//! - `reordered` counts adjacent first arrivals whose index decreases.
//!
//! Why not a different, "better" definition: the point of this crate is to
//! judge captures with the yardstick the project's claims are stated in.

use serde::Serialize;

use crate::dist::{Dist, Samples};
use crate::matching::{Matcher, NOT_ARRIVED};

/// A capture compared with the reference trace it was generated from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Packets in the reference.
    pub expected: u64,
    /// Distinct reference packets matched by at least one capture frame.
    pub received: u64,
    /// `expected - received`.
    pub lost: u64,
    /// Capture frames that repeat an already matched reference packet.
    pub duplicates: u64,
    /// Capture frames matching nothing in the reference.
    pub foreign: u64,
    /// Adjacent first arrivals (capture order) whose reference index
    /// decreases.
    pub reordered: u64,
    /// Achieved rate against the requested one, in percent:
    /// `(requested_span / achieved_span - 1) * 100`; positive means faster
    /// than requested. NaN (JSON `null`) when not computable.
    pub rate_err_pct: f64,
    /// Reference time from the lowest to the highest received index, s.
    pub requested_span_s: f64,
    /// Capture time between the same two packets, s (negative if they
    /// arrived in the opposite order).
    pub achieved_span_s: f64,
    /// `|D_M - D_R|` over consecutive reference packets that both arrived.
    pub gap_err: Option<Dist>,
    /// Set when the reference file ended in a truncated record: the
    /// comparison uses the complete packets before it.
    pub reference_truncated: Option<String>,
}

impl Comparison {
    /// Computes the comparison once every capture frame went through
    /// `matcher`; `max_sort` bounds the gap errors kept for exact
    /// percentiles.
    pub fn from_matcher(
        matcher: &Matcher,
        max_sort: usize,
        reference_truncated: Option<String>,
    ) -> Comparison {
        let rts = matcher.reference_ts();
        let arr = &matcher.arrival;
        let expected = rts.len() as u64;

        let mut gaps = Samples::new(max_sort);
        for a in 1..arr.len() {
            let (c0, c1) = (arr[a - 1], arr[a]);
            if c0 == NOT_ARRIVED || c1 == NOT_ARRIVED {
                continue;
            }
            let dm = i128::from(c1) - i128::from(c0);
            let dr = i128::from(rts[a]) - i128::from(rts[a - 1]);
            let err = (dm - dr).unsigned_abs();
            gaps.push(u64::try_from(err).unwrap_or(u64::MAX));
        }

        let first = arr.iter().position(|&t| t != NOT_ARRIVED);
        let last = arr.iter().rposition(|&t| t != NOT_ARRIVED);
        let (span, rspan) = match (first, last) {
            (Some(f), Some(l)) if matcher.received > 1 => (
                i128::from(arr[l]) - i128::from(arr[f]),
                i128::from(rts[l]) - i128::from(rts[f]),
            ),
            _ => (0, 0),
        };
        let rate_err_pct = if span != 0 {
            (rspan as f64 / span as f64 - 1.0) * 100.0
        } else {
            f64::NAN
        };

        Comparison {
            expected,
            received: matcher.received,
            lost: expected - matcher.received,
            duplicates: matcher.duplicates,
            foreign: matcher.foreign,
            reordered: matcher.reordered,
            rate_err_pct,
            requested_span_s: rspan as f64 / 1e9,
            achieved_span_s: span as f64 / 1e9,
            gap_err: gaps.finish(),
            reference_truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::Reference;

    fn fr(i: u64) -> [u8; 8] {
        i.to_be_bytes()
    }

    /// Reference: 10 frames every 1000 ns.
    fn matcher() -> Matcher {
        let mut r = Reference::new();
        for i in 0..10 {
            r.push(5_000 + 1000 * i, &fr(i)).unwrap();
        }
        Matcher::new(r)
    }

    #[test]
    fn perfect_replay_is_all_zero() {
        let mut m = matcher();
        for i in 0..10 {
            m.observe(77_000 + 1000 * i, &fr(i));
        }
        let c = Comparison::from_matcher(&m, usize::MAX, None);
        assert_eq!((c.expected, c.received, c.lost), (10, 10, 0));
        assert_eq!((c.duplicates, c.foreign, c.reordered), (0, 0, 0));
        assert_eq!(c.rate_err_pct, 0.0);
        assert_eq!(c.requested_span_s, 9e-6);
        let g = c.gap_err.unwrap();
        assert_eq!((g.count, g.percentiles.max_ns, g.mean_ns), (9, 0, 0.0));
    }

    #[test]
    fn loss_jitter_and_rate() {
        let mut m = matcher();
        // Frame 4 lost; frame 6 arrives 300 ns late; frame 9 twice.
        for i in [0u64, 1, 2, 3, 5, 6, 7, 8, 9, 9] {
            let late = if i == 6 { 300 } else { 0 };
            m.observe(1000 * i + late, &fr(i));
        }
        m.observe(99_999, b"foreign");
        let c = Comparison::from_matcher(&m, usize::MAX, None);
        assert_eq!((c.received, c.lost, c.duplicates, c.foreign), (9, 1, 1, 1));
        // Pairs (0,1) (1,2) (2,3) (5,6) (6,7) (7,8) (8,9): errors
        // 0 0 0 300 300 0 0.
        let g = c.gap_err.unwrap();
        assert_eq!(g.count, 7);
        assert_eq!(
            (
                g.percentiles.p50_ns,
                g.percentiles.p90_ns,
                g.percentiles.max_ns
            ),
            (0, 300, 300)
        );
        assert!((g.mean_ns - 600.0 / 7.0).abs() < 1e-12);
        // Spans equal: index 0..9 is 9000 ns in both.
        assert_eq!(c.rate_err_pct, 0.0);
    }

    #[test]
    fn slow_capture_has_negative_rate_error() {
        let mut m = matcher();
        for i in 0..10 {
            m.observe(1100 * i, &fr(i));
        }
        let c = Comparison::from_matcher(&m, usize::MAX, None);
        let want = (9000.0f64 / 9900.0 - 1.0) * 100.0;
        assert_eq!(c.rate_err_pct, want);
        assert_eq!(c.gap_err.unwrap().percentiles.p50_ns, 100);
    }

    #[test]
    fn nothing_or_one_received_is_nan_rate_and_no_gaps() {
        let m = matcher();
        let c = Comparison::from_matcher(&m, usize::MAX, None);
        assert_eq!((c.received, c.lost), (0, 10));
        assert!(c.rate_err_pct.is_nan() && c.gap_err.is_none());
        let mut m = matcher();
        m.observe(5, &fr(3));
        let c = Comparison::from_matcher(&m, usize::MAX, None);
        assert!(c.rate_err_pct.is_nan() && c.gap_err.is_none());
        assert_eq!(c.achieved_span_s, 0.0);
    }

    #[test]
    fn swapped_pair_counts_and_spans_follow_reference_order() {
        let mut m = matcher();
        for (t, i) in [0u64, 1, 3, 2, 4, 5, 6, 7, 8, 9].into_iter().enumerate() {
            m.observe(1000 * t as u64, &fr(i));
        }
        let c = Comparison::from_matcher(&m, usize::MAX, None);
        assert_eq!(c.reordered, 1);
        // cap: 0..9 at t = 0 1000 3000 2000 4000 ...; errors of pairs
        // (1,2): |2000-1000| = 1000, (2,3): |-1000-1000| = 2000,
        // (3,4): |2000-1000| = 1000, the other six 0.
        let g = c.gap_err.unwrap();
        assert_eq!(
            (
                g.count,
                g.percentiles.max_ns,
                g.percentiles.p90_ns,
                g.percentiles.p50_ns
            ),
            (9, 2000, 2000, 0)
        );
    }
}
