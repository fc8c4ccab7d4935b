//! A per-frame recorder for [`ErrorHistogram`]: counts by the histogram's
//! own buckets in `u16`s, without its bookkeeping (minimum, maximum and
//! total per record, a bounds check that may resize), added to the
//! histogram in one pass ([`ErrorHistogram::absorb`]). A receiver records
//! every frame's latency here: the receive ring streams through the cache
//! between two records, and the histogram's `u64` counts take four times
//! the lines (each a miss) for the same values. A count that would pass
//! `u16::MAX` moves to a `u64` kept apart, by bucket.
//!
//! The buckets are those of `Histogram::new_with_bounds(1, MAX, 3)`
//! (hdrhistogram): 2048 sub-buckets, each power of two above 2048 split
//! into 1024. A test checks every bucket edge against hdrhistogram.

use crate::stats::{Extremes, MAX_TRACKABLE_NS};

/// Bits of a sub-bucket index at 3 significant digits (2048 sub-buckets).
const SUB_BITS: u32 = 11;
/// Half the sub-buckets: each bucket above the first adds this many.
const HALF_BITS: u32 = SUB_BITS - 1;

/// The bucket index of `v` (hdrhistogram's `index_for` at these bounds).
#[inline]
fn index_of(v: u64) -> usize {
    // v | 2047 has at least 11 significant bits: bucket ≥ 0.
    let bucket = 64 - SUB_BITS - (v | ((1 << SUB_BITS) - 1)).leading_zeros();
    let sub = (v >> bucket) as usize;
    ((bucket as usize + 1) << HALF_BITS) + sub - (1 << HALF_BITS)
}

/// The lowest value of bucket `i` (hdrhistogram's `value_for`).
fn value_of(i: usize) -> u64 {
    if i < 1 << SUB_BITS {
        return i as u64;
    }
    let bucket = (i >> HALF_BITS) - 1;
    let sub = (i & ((1 << HALF_BITS) - 1)) + (1 << HALF_BITS);
    (sub as u64) << bucket
}

/// Counts of nanosecond values by [`ErrorHistogram`]'s buckets, with the
/// exact extremes and the negative values ("early", counted as 0), until
/// [`ErrorHistogram::absorb`] takes them.
#[derive(Clone, Debug)]
pub struct ErrorTally {
    counts: Box<[u16]>,
    /// (bucket, counts moved out of `counts` as it filled): few buckets
    /// ever fill, so this stays short (at most one entry per bucket).
    spilled: Vec<(u32, u64)>,
    /// Buckets `lo..=hi` hold every count (empty: lo > hi).
    lo: usize,
    hi: usize,
    len: u64,
    pub(crate) ext: Extremes,
}

impl Default for ErrorTally {
    fn default() -> Self {
        Self::new()
    }
}

impl ErrorTally {
    pub fn new() -> Self {
        ErrorTally {
            counts: vec![0; index_of(MAX_TRACKABLE_NS) + 1].into_boxed_slice(),
            spilled: Vec::new(),
            lo: usize::MAX,
            hi: 0,
            len: 0,
            ext: Extremes::NONE,
        }
    }

    /// Counts `v` as [`ErrorHistogram::record`] would.
    #[inline]
    pub fn record(&mut self, v: i64) {
        self.ext.note(v);
        let i = index_of(v.clamp(0, MAX_TRACKABLE_NS as i64) as u64);
        self.lo = self.lo.min(i);
        self.hi = self.hi.max(i);
        // `i` is at most the index of MAX_TRACKABLE_NS, the last one.
        let c = &mut self.counts[i];
        match c.checked_add(1) {
            Some(n) => *c = n,
            None => self.spill(i),
        }
        self.len += 1;
    }

    /// Bucket `i`'s count, full, moves beside it with one more.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, i: usize) {
        let full = u64::from(std::mem::take(&mut self.counts[i])) + 1;
        // Bucket indices are below 2^15.
        match self.spilled.iter_mut().find(|(b, _)| *b as usize == i) {
            Some((_, n)) => *n += full,
            None => self.spilled.push((i as u32, full)),
        }
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Hands every count to `f` as (a value of its bucket, count), a
    /// bucket possibly twice (its spilled counts apart), and empties the
    /// tally.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(u64, u64)) {
        if self.lo <= self.hi {
            let lo = self.lo;
            for (k, c) in self.counts[lo..=self.hi].iter_mut().enumerate() {
                if *c != 0 {
                    f(value_of(lo + k), u64::from(std::mem::take(c)));
                }
            }
        }
        for (b, n) in self.spilled.drain(..) {
            f(value_of(b as usize), n);
        }
        self.lo = usize::MAX;
        self.hi = 0;
        self.len = 0;
        self.ext = Extremes::NONE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorHistogram;
    use hdrhistogram::Histogram;

    #[test]
    fn its_buckets_are_the_histograms() {
        let h = Histogram::<u64>::new_with_bounds(1, MAX_TRACKABLE_NS, 3).unwrap();
        // Every bucket's edges, and values between, up to the last bucket.
        let mut v = 0u64;
        while v <= MAX_TRACKABLE_NS {
            let i = index_of(v);
            assert_eq!(value_of(i), h.lowest_equivalent(v), "value {v}");
            assert_eq!(index_of(value_of(i)), i, "bucket {i}");
            let next = h.next_non_equivalent(v);
            if next > v + 1 {
                assert_eq!(index_of(next - 1), i, "value {}", next - 1);
            }
            assert_eq!(index_of(next), i + 1, "value {next}");
            v = next;
        }
        // The tally's buckets (up to the bound's) fit the histogram's.
        assert!(index_of(MAX_TRACKABLE_NS) < h.distinct_values());
    }

    #[test]
    fn a_tally_absorbed_is_the_histogram_recorded() {
        let values: Vec<i64> = (0..20_000i64)
            .map(|k| (k * 7_919 % 300_007) * (k % 5 + 1) - 1_000)
            .chain([-7, 0, 1, 2047, 2048, 1 << 40, i64::MAX])
            .collect();
        let mut direct = ErrorHistogram::new();
        let mut tally = ErrorTally::new();
        for &v in &values {
            direct.record(v);
            tally.record(v);
        }
        assert_eq!(tally.len(), values.len() as u64);
        let mut absorbed = ErrorHistogram::new();
        absorbed.absorb(&mut tally);
        assert!(tally.is_empty());
        assert_eq!(absorbed.percentiles(), direct.percentiles());
        assert_eq!(absorbed.early(), direct.early());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(absorbed.quantile(q), direct.quantile(q), "q {q}");
        }
        // Emptied: absorbing again adds nothing.
        absorbed.absorb(&mut tally);
        assert_eq!(absorbed.percentiles(), direct.percentiles());
    }

    #[test]
    fn counts_past_u16_are_kept() {
        let mut tally = ErrorTally::new();
        // Rounds absorbed one after another (the spilled counts start
        // again from 0): 200 000 of one value (three spills) and 1 of
        // another; 70 000 of each (one spill each); 5.
        let value = |k: i64, ones: i64| if k < ones { 1_000 } else { 41_000 };
        for (n, ones) in [(200_001, 200_000), (140_000, 70_000), (5, 5)] {
            for k in 0..n {
                tally.record(value(k, ones));
            }
            let mut absorbed = ErrorHistogram::new();
            absorbed.absorb(&mut tally);
            assert!(tally.is_empty());
            assert_eq!(absorbed.len(), n as u64);
            let mut once = ErrorHistogram::new();
            for k in 0..n {
                once.record(value(k, ones));
            }
            assert_eq!(absorbed.percentiles(), once.percentiles(), "{n}");
            assert_eq!(absorbed.quantile(0.999_99), once.quantile(0.999_99));
        }
    }
}
