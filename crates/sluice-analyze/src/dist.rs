//! Summary of a distribution of nanosecond values: [`Dist`], built by
//! feeding values one at a time into [`Samples`].
//!
//! Design decision: percentiles are **exact**, computed on the sorted values
//! with the same rank rule as `bench/gaperr.py`:
//! `sorted[min(len - 1, int(p / 100 * len))]` (the arithmetic is done in
//! `f64` in the same order, so the rank is bit-for-bit the one Python
//! picks). Why: a judge whose p99.9 differs from the reference script's by
//! a histogram bucket cannot be used to confirm or refute a claim made with
//! that script. Exactness costs 8 bytes per value; past
//! [`Options::max_sort`](crate::Options::max_sort) values the samples spill
//! into an HDR histogram (3 significant digits, a few hundred KiB whatever
//! the count) and [`Dist::exact`] says so. Count, min, max and mean are
//! always exact (the sum is kept in `u128`); the standard deviation is the
//! population one (divide by `n`), accumulated with Welford's method so it
//! does not depend on the spill.

use hdrhistogram::Histogram;

/// Summary of a set of non-negative nanosecond values.
pub use sluice_core::stats::{Dist, Quantiles};

/// The percentiles a [`Dist`] reports, in the order of its fields.
pub(crate) const PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// 0-based rank of percentile `p` among `len > 0` sorted values, exactly as
/// `gaperr.py` computes it: `min(len - 1, int(p / 100 * len))`.
pub(crate) fn rank(p: f64, len: usize) -> usize {
    // `as usize` truncates toward zero like Python's int() for these
    // non-negative values (and saturates instead of overflowing).
    ((p / 100.0 * len as f64) as usize).min(len.saturating_sub(1))
}

/// Collects values and summarises them as a [`Dist`].
#[derive(Debug)]
pub struct Samples {
    /// Values kept for exact percentiles (emptied when spilled).
    values: Vec<u64>,
    /// Set once more than `limit` values arrived.
    hist: Option<Histogram<u64>>,
    limit: usize,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// Welford running mean and sum of squared deviations.
    w_mean: f64,
    w_m2: f64,
}

impl Samples {
    /// A collector that keeps up to `limit` values for exact percentiles
    /// and then switches to a histogram.
    pub fn new(limit: usize) -> Samples {
        Samples {
            values: Vec::new(),
            hist: None,
            limit,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            w_mean: 0.0,
            w_m2: 0.0,
        }
    }

    /// Number of values pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds one value.
    pub fn push(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        let x = v as f64;
        let delta = x - self.w_mean;
        self.w_mean += delta / self.count as f64;
        self.w_m2 += delta * (x - self.w_mean);

        if let Some(h) = self.hist.as_mut() {
            record(h, v);
        } else if self.values.len() < self.limit {
            self.values.push(v);
        } else {
            let mut h = new_histogram();
            for &old in &self.values {
                record(&mut h, old);
            }
            record(&mut h, v);
            self.values = Vec::new();
            self.hist = Some(h);
        }
    }

    /// The summary, or `None` when no value was pushed.
    pub fn finish(self) -> Option<Dist> {
        if self.count == 0 {
            return None;
        }
        let n = self.count;
        let mean = (self.sum as f64) / (n as f64);
        let stddev = (self.w_m2 / n as f64).max(0.0).sqrt();
        let (pcts, exact) = match &self.hist {
            None => {
                let mut v = self.values;
                v.sort_unstable();
                (PERCENTILES.map(|p| v[rank(p, v.len())]), true)
            }
            Some(h) => (hist_percentiles(h, n, self.max), false),
        };
        Some(Dist {
            count: n,
            min_ns: self.min,
            mean_ns: mean,
            stddev_ns: stddev,
            percentiles: Quantiles {
                p50_ns: pcts[0],
                p90_ns: pcts[1],
                p99_ns: pcts[2],
                p999_ns: pcts[3],
                max_ns: self.max,
            },
            exact,
        })
    }
}

fn new_histogram() -> Histogram<u64> {
    // Auto-resizing, 3 significant digits: ~100 KiB per decade of range.
    Histogram::new(3).expect("3 significant digits is a valid histogram precision")
}

fn record(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        // Beyond what the histogram can grow to (~2^63): clamp. min/max/mean
        // stay exact because they are kept outside the histogram.
        h.saturating_record(v);
    }
}

/// Percentiles from a histogram with the same 0-based ranks as the exact
/// path; each is the upper edge of the bucket holding that rank, capped at
/// the exact maximum.
fn hist_percentiles(h: &Histogram<u64>, n: u64, max: u64) -> [u64; 4] {
    let len = usize::try_from(n).unwrap_or(usize::MAX);
    let ranks = PERCENTILES.map(|p| rank(p, len) as u64);
    let mut out = [max; 4];
    let mut next = 0;
    let mut seen: u64 = 0;
    for iv in h.iter_recorded() {
        seen += iv.count_since_last_iteration();
        while next < ranks.len() && ranks[next] < seen {
            out[next] = h.highest_equivalent(iv.value_iterated_to()).min(max);
            next += 1;
        }
        if next == ranks.len() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(values: &[u64], limit: usize) -> Dist {
        let mut s = Samples::new(limit);
        for &v in values {
            s.push(v);
        }
        s.finish().expect("non-empty")
    }

    #[test]
    fn empty_is_none() {
        assert!(Samples::new(10).finish().is_none());
    }

    #[test]
    fn rank_matches_python_int_truncation() {
        // Python: int(50/100*10)=5, int(90/100*10)=9, int(99/100*10)=9,
        // int(99.9/100*10)=9; len 1000: 500, 900, 990, 999.
        assert_eq!(PERCENTILES.map(|p| rank(p, 10)), [5, 9, 9, 9]);
        assert_eq!(PERCENTILES.map(|p| rank(p, 1000)), [500, 900, 990, 999]);
        assert_eq!(PERCENTILES.map(|p| rank(p, 1)), [0, 0, 0, 0]);
        // 99.9/100 is 0.9990000000000001 in binary: int(0.999..*10000) = 9990.
        assert_eq!(rank(99.9, 10000), 9990);
        assert_eq!(rank(99.9, 3), 2);
    }

    #[test]
    fn percentiles_of_1_to_1000() {
        let v: Vec<u64> = (1..=1000).rev().collect();
        let d = dist(&v, usize::MAX);
        assert!(d.exact);
        assert_eq!(d.count, 1000);
        assert_eq!((d.min_ns, d.percentiles.max_ns), (1, 1000));
        assert_eq!(
            (
                d.percentiles.p50_ns,
                d.percentiles.p90_ns,
                d.percentiles.p99_ns,
                d.percentiles.p999_ns
            ),
            (501, 901, 991, 1000)
        );
        assert_eq!(d.mean_ns, 500.5);
        // Population variance of 1..n is (n^2 - 1) / 12.
        let sd = ((1000.0f64 * 1000.0 - 1.0) / 12.0).sqrt();
        assert!((d.stddev_ns - sd).abs() < 1e-9, "{} vs {sd}", d.stddev_ns);
    }

    #[test]
    fn small_set_stddev_and_mean_rounding() {
        let d = dist(&[2, 4, 4, 4, 5, 5, 7, 9], usize::MAX);
        assert_eq!(d.mean_ns, 5.0);
        assert_eq!(d.stddev_ns, 2.0);
        assert_eq!(d.percentiles.p50_ns, 5);
        assert_eq!(d.percentiles.p999_ns, 9);
        // Python round() is half to even.
        assert_eq!(dist(&[1, 2], 10).mean_rounded_ns(), 2); // 1.5 -> 2
        assert_eq!(dist(&[2, 3], 10).mean_rounded_ns(), 2); // 2.5 -> 2
        assert_eq!(dist(&[3, 4], 10).mean_rounded_ns(), 4); // 3.5 -> 4
    }

    #[test]
    fn constant_values_have_zero_stddev() {
        let d = dist(&[10_000; 500], usize::MAX);
        assert_eq!(d.stddev_ns, 0.0);
        assert_eq!(
            (d.percentiles.p50_ns, d.percentiles.p999_ns, d.mean_ns),
            (10_000, 10_000, 10_000.0)
        );
    }

    #[test]
    fn spill_to_histogram_is_close_and_flagged() {
        let v: Vec<u64> = (1..=100_000u64).map(|i| i * 37 % 100_003).collect();
        let exact = dist(&v, usize::MAX);
        let approx = dist(&v, 1000);
        assert!(exact.exact && !approx.exact);
        assert_eq!(
            (approx.count, approx.min_ns, approx.percentiles.max_ns),
            (exact.count, exact.min_ns, exact.percentiles.max_ns)
        );
        assert_eq!(approx.mean_ns, exact.mean_ns);
        assert!((approx.stddev_ns - exact.stddev_ns).abs() < 1e-6 * exact.stddev_ns);
        for (a, e) in [
            (approx.percentiles.p50_ns, exact.percentiles.p50_ns),
            (approx.percentiles.p90_ns, exact.percentiles.p90_ns),
            (approx.percentiles.p99_ns, exact.percentiles.p99_ns),
            (approx.percentiles.p999_ns, exact.percentiles.p999_ns),
        ] {
            assert!(a >= e && (a - e) as f64 <= e as f64 * 1e-3, "{a} vs {e}");
        }
    }

    #[test]
    fn limit_zero_uses_histogram_from_the_start() {
        let d = dist(&[5, 5, 5, 1_000_000_000_000], 0);
        assert!(!d.exact);
        assert_eq!(d.percentiles.p50_ns, 5);
        assert_eq!(d.percentiles.max_ns, 1_000_000_000_000);
        assert_eq!(d.percentiles.p999_ns, 1_000_000_000_000);
    }

    #[test]
    fn huge_values_do_not_panic() {
        let d = dist(&[u64::MAX, 0, u64::MAX / 2], 0);
        assert_eq!((d.min_ns, d.percentiles.max_ns), (0, u64::MAX));
    }
}
