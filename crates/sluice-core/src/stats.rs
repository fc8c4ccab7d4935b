//! Send-time error statistics: an HDR histogram of |ε| plus signed extremes,
//! cheap enough to record every packet (a few ns per sample).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest ε tracked exactly; later packets clamp to this (60 s).
pub(crate) const MAX_TRACKABLE_NS: u64 = 60_000_000_000;

/// Histogram of per-packet send-time errors ε = actual − scheduled (ns).
///
/// Early sends (negative ε, which a correct pacer never produces but a
/// misconfigured clock could) are counted separately and recorded as 0.
#[derive(Clone, Debug)]
pub struct ErrorHistogram {
    hist: Histogram<u64>,
    ext: Extremes,
}

/// What is kept beside the buckets of |ε|: the exact signed extremes, and
/// how many values were negative (early: recorded as 0).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extremes {
    pub(crate) early: u64,
    pub(crate) max_ns: i64,
    pub(crate) min_ns: i64,
}

impl Extremes {
    /// Nothing recorded.
    pub(crate) const NONE: Extremes = Extremes {
        early: 0,
        max_ns: i64::MIN,
        min_ns: i64::MAX,
    };

    #[inline]
    pub(crate) fn note(&mut self, v: i64) {
        self.max_ns = self.max_ns.max(v);
        self.min_ns = self.min_ns.min(v);
        self.early += u64::from(v < 0);
    }

    pub(crate) fn merge(&mut self, other: &Extremes) {
        self.early += other.early;
        self.max_ns = self.max_ns.max(other.max_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
    }
}

/// The one percentile shape of every JSON output (`percentiles` in
/// docs/schema/common.json): the same five keys wherever a distribution of
/// nanoseconds is reported.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Quantiles {
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// A distribution of nanosecond values, the one shape (`dist` in
/// docs/schema/common.json) of ε, gap errors and inter-arrival times.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// Number of values.
    pub count: u64,
    /// Smallest value.
    pub min_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Population standard deviation (divides by `count`).
    pub stddev_ns: f64,
    pub percentiles: Quantiles,
    /// True when the percentiles come from the sorted values; false when
    /// they are the upper edge of a 3-significant-digit histogram bucket
    /// (within 0.1 %).
    pub exact: bool,
}

impl Dist {
    /// The mean rounded half to even, as Python's `round()` prints it in
    /// `gaperr.py` (`mean_ns=...`).
    pub fn mean_rounded_ns(&self) -> u64 {
        // Non-negative and at most u64::MAX, so the cast is exact or saturates.
        self.mean_ns.round_ties_even() as u64
    }
}

impl Default for ErrorHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl ErrorHistogram {
    pub fn new() -> Self {
        ErrorHistogram {
            // 3 significant digits: 0.1 % resolution at every magnitude.
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3)
                .expect("static histogram bounds are valid"),
            ext: Extremes::NONE,
        }
    }

    #[inline]
    pub fn record(&mut self, eps_ns: i64) {
        self.ext.note(eps_ns);
        self.hist
            .saturating_record(eps_ns.clamp(0, MAX_TRACKABLE_NS as i64) as u64);
    }

    pub fn merge(&mut self, other: &ErrorHistogram) {
        // Both histograms share the same bounds, so add cannot fail.
        let _ = self.hist.add(&other.hist);
        self.ext.merge(&other.ext);
    }

    /// Adds what `tally` counted and empties it: the same as recording
    /// each of its values here.
    pub fn absorb(&mut self, tally: &mut crate::ErrorTally) {
        self.ext.merge(&tally.ext);
        tally.drain(|v, n| self.hist.saturating_record_n(v, n));
    }

    pub fn reset(&mut self) {
        self.hist.reset();
        self.ext = Extremes::NONE;
    }

    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    pub fn early(&self) -> u64 {
        self.ext.early
    }

    pub fn quantile(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q)
    }

    /// The distribution of |ε| (early sends count as 0).
    pub fn percentiles(&self) -> Dist {
        if self.hist.is_empty() {
            return Dist {
                exact: true,
                ..Dist::default()
            };
        }
        // The histogram's buckets round a value up to their upper end; the
        // exact maximum is kept apart, and no percentile may exceed it.
        let max_ns = self.ext.max_ns.max(0) as u64;
        let at = |q| self.hist.value_at_quantile(q).min(max_ns);
        Dist {
            count: self.hist.len(),
            min_ns: self.hist.min().min(max_ns),
            mean_ns: self.hist.mean().min(max_ns as f64),
            stddev_ns: self.hist.stdev(),
            percentiles: Quantiles {
                p50_ns: at(0.50),
                p90_ns: at(0.90),
                p99_ns: at(0.99),
                p999_ns: at(0.999),
                max_ns,
            },
            exact: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_uniform_errors() {
        let mut h = ErrorHistogram::new();
        for i in 1..=1000 {
            h.record(i);
        }
        let d = h.percentiles();
        assert_eq!(d.count, 1000);
        let p = d.percentiles;
        assert!((p.p50_ns as i64 - 500).abs() <= 1);
        assert!((p.p99_ns as i64 - 990).abs() <= 1);
        assert_eq!(p.max_ns, 1000);
    }

    #[test]
    fn early_sends_are_counted_and_merged() {
        let mut a = ErrorHistogram::new();
        a.record(-5);
        let mut b = ErrorHistogram::new();
        b.record(7_000);
        a.merge(&b);
        assert_eq!(a.early(), 1);
        assert_eq!(a.len(), 2);
        assert_eq!(a.percentiles().percentiles.max_ns, 7_000);
    }

    #[test]
    fn no_percentile_is_above_the_maximum() {
        let mut h = ErrorHistogram::new();
        for v in [1_000_003, 1_000_001, 1_000_002] {
            h.record(v);
        }
        let p = h.percentiles().percentiles;
        assert_eq!(p.max_ns, 1_000_003);
        assert!(p.p999_ns <= p.max_ns && p.p99_ns <= p.max_ns, "{p:?}");
    }
}
