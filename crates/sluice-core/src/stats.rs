//! Send-time error statistics: an HDR histogram of |ε| plus signed extremes,
//! cheap enough to record every packet (a few ns per sample).

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest ε tracked exactly; later packets clamp to this (60 s).
const MAX_TRACKABLE_NS: u64 = 60_000_000_000;

/// Histogram of per-packet send-time errors ε = actual − scheduled (ns).
///
/// Early sends (negative ε, which a correct pacer never produces but a
/// misconfigured clock could) are counted separately and recorded as 0.
#[derive(Clone, Debug)]
pub struct ErrorHistogram {
    hist: Histogram<u64>,
    early: u64,
    max_ns: i64,
    min_ns: i64,
}

/// Percentiles of a histogram, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
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
            early: 0,
            max_ns: i64::MIN,
            min_ns: i64::MAX,
        }
    }

    #[inline]
    pub fn record(&mut self, eps_ns: i64) {
        self.max_ns = self.max_ns.max(eps_ns);
        self.min_ns = self.min_ns.min(eps_ns);
        let v = if eps_ns < 0 {
            self.early += 1;
            0
        } else {
            (eps_ns as u64).min(MAX_TRACKABLE_NS)
        };
        self.hist.saturating_record(v);
    }

    pub fn merge(&mut self, other: &ErrorHistogram) {
        // Both histograms share the same bounds, so add cannot fail.
        let _ = self.hist.add(&other.hist);
        self.early += other.early;
        self.max_ns = self.max_ns.max(other.max_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
    }

    pub fn reset(&mut self) {
        self.hist.reset();
        self.early = 0;
        self.max_ns = i64::MIN;
        self.min_ns = i64::MAX;
    }

    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    pub fn early(&self) -> u64 {
        self.early
    }

    pub fn quantile(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q)
    }

    pub fn percentiles(&self) -> Percentiles {
        if self.hist.is_empty() {
            return Percentiles::default();
        }
        // The histogram's buckets round a value up to their upper end; the
        // exact maximum is kept apart, and no percentile may exceed it.
        let max_ns = self.max_ns.max(0) as u64;
        let at = |q| self.hist.value_at_quantile(q).min(max_ns);
        Percentiles {
            count: self.hist.len(),
            mean_ns: self.hist.mean().min(max_ns as f64),
            p50_ns: at(0.50),
            p90_ns: at(0.90),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns,
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
        let p = h.percentiles();
        assert_eq!(p.count, 1000);
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
        assert_eq!(a.percentiles().max_ns, 7_000);
    }

    #[test]
    fn no_percentile_is_above_the_maximum() {
        let mut h = ErrorHistogram::new();
        for v in [1_000_003, 1_000_001, 1_000_002] {
            h.record(v);
        }
        let p = h.percentiles();
        assert_eq!(p.max_ns, 1_000_003);
        assert!(p.p999_ns <= p.max_ns && p.p99_ns <= p.max_ns, "{p:?}");
    }
}
