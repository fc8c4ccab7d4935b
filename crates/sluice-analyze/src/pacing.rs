//! Caliper's measure of injection precision: for consecutive frames of a
//! capture, the measured inter-arrival time D_M against the requested
//! inter-transmission time D_R, summarised as percentiles of |D_R − D_M|
//! (the paper's headline figure is the 95th).
//!
//! Requested gaps are a constant (`--gap T`) or a list, one per departure
//! in departure order, as `sluice pace --log-requested` writes them (the
//! first line is the first departure's 0). Percentiles use the rank rule
//! of `bench/gaperr.py`: `sorted[min(n-1, int(p/100 n))]`.

use crate::dist::{rank, Dist, Samples};
use serde::Serialize;

/// What the frames were asked to do.
#[derive(Clone, Copy, Debug)]
pub enum Requested<'a> {
    /// Every gap the same, ns.
    Constant(u64),
    /// Gap i (ns) precedes departure i; entry 0 is the first departure's.
    List(&'a [u64]),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GapErrors {
    /// Gaps compared.
    pub gaps: u64,
    /// Frames of the capture (all sizes).
    pub frames: u64,
    /// Frames left out as shorter than `min_len` (their gaps are not compared).
    pub short_frames: u64,
    /// With a list: departures the list has and the capture does not (or
    /// the reverse, negative). Compared pairwise up to the shorter.
    pub count_mismatch: i64,
    /// With a list: departures the capture missed at its start (the list
    /// aligned past them, at most 10).
    pub skipped: u64,
    pub requested_mean_ns: f64,
    pub measured_mean_ns: f64,
    /// |D_R − D_M|.
    pub error: Dist,
    /// The 95th percentile of |D_R − D_M| (the paper's headline figure,
    /// same rank rule), beside the five of every distribution.
    pub p95_ns: u64,
    /// Two-sample Kolmogorov–Smirnov distance between the requested and
    /// the measured gaps as distributions (Caliper's CDF overlays).
    pub ks: f64,
    /// The same, each gap allowed 1 µs either way: a law with atoms (a
    /// constant, a spike) is matched within a capture's precision, where
    /// the strict distance counts the atom's whole step.
    pub ks_1us: f64,
}

impl GapErrors {
    pub fn render_text(&self) -> String {
        let mut s = format!(
            "{} gaps compared ({} frames, {} shorter than the size floor); requested mean {:.0} ns, measured mean {:.0} ns\n\
             |D_R - D_M| ns: p50 {} p90 {} p95 {} p99 {} p99.9 {} max {} mean {:.0}\n\
             requested and measured gaps as distributions: KS distance {:.4} ({:.4} within 1 µs)\n",
            self.gaps,
            self.frames,
            self.short_frames,
            self.requested_mean_ns,
            self.measured_mean_ns,
            self.error.percentiles.p50_ns,
            self.error.percentiles.p90_ns,
            self.p95_ns,
            self.error.percentiles.p99_ns,
            self.error.percentiles.p999_ns,
            self.error.percentiles.max_ns,
            self.error.mean_ns,
            self.ks,
            self.ks_1us
        );
        if self.skipped > 0 {
            s.push_str(&format!(
                "the capture missed the first {} departures: the list is aligned past them\n",
                self.skipped
            ));
        }
        if self.count_mismatch != 0 {
            s.push_str(&format!(
                "warning: the requested list and the capture differ by {} departures: compared up to the shorter\n",
                self.count_mismatch
            ));
        }
        s
    }
}

/// The gaps compared: (requested, measured) pairs, ns.
#[derive(Clone, Debug, Default)]
pub struct Compared {
    pub requested: Vec<u64>,
    pub measured: Vec<u64>,
    /// Frames shorter than the size floor.
    pub short: u64,
    /// Departures the list has and the capture does not (or the reverse),
    /// after the ones it missed at its start.
    pub mismatch: i64,
    /// Departures of the list the capture missed at its start (a capture
    /// started a little late), found by alignment.
    pub skipped: u64,
}

/// Most departures a capture may have missed at its start.
const MAX_SKIPPED: usize = 10;

/// The gaps of consecutive frames at `times` (ns, capture order) of
/// lengths `lens` beside the requested ones. A gap is compared when both
/// its frames are at least `min_len` bytes (a constant request only: a
/// list is indexed by departure, so every frame counts).
pub fn compare(times: &[u64], lens: &[u32], requested: Requested<'_>, min_len: u32) -> Compared {
    let mut c = Compared::default();
    match requested {
        Requested::Constant(r) => {
            c.short = lens.iter().filter(|&&l| l < min_len).count() as u64;
            for i in 1..times.len() {
                if lens[i] < min_len || lens[i - 1] < min_len {
                    continue;
                }
                c.requested.push(r);
                c.measured.push(times[i].saturating_sub(times[i - 1]));
            }
        }
        Requested::List(list) => {
            // The capture may have started a few departures late: align
            // the list at the shift with the smallest median error over
            // the first pairs (the first departure has no gap before it).
            let gap = |i: usize| times[i].saturating_sub(times[i - 1]);
            let median_err = |k: usize| {
                let mut e: Vec<u64> = (1..times.len().min(list.len().saturating_sub(k)).min(1001))
                    .map(|i| gap(i).abs_diff(list[i + k]))
                    .collect();
                e.sort_unstable();
                e.get(e.len() / 2).copied().unwrap_or(u64::MAX)
            };
            let k = (0..=MAX_SKIPPED.min(list.len()))
                .min_by_key(|&k| median_err(k))
                .unwrap_or(0);
            c.skipped = k as u64;
            c.mismatch = (list.len() - k) as i64 - times.len() as i64;
            let n = (list.len() - k).min(times.len());
            for i in 1..n {
                c.requested.push(list[i + k]);
                c.measured.push(gap(i));
            }
        }
    }
    c
}

/// Two-sample Kolmogorov–Smirnov distance: the largest gap between the
/// empirical CDFs of `a` and `b` (0 when either is empty).
pub fn ks_distance(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    d
}

/// The KS distance of `a` and `b` with a horizontal tolerance `r`: the
/// largest amount by which one empirical CDF exceeds the other shifted by
/// `r` (the Lévy metric's construction at a fixed tolerance; 0 when
/// every point of each lies within `r` of the other's distribution).
pub fn ks_within(a: &[u64], b: &[u64], r: u64) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    let cdf = |s: &[u64], x: u64| s.partition_point(|v| *v <= x) as f64 / s.len() as f64;
    // F_a(x − r) − F_b(x) rises only where F_a steps, at x = a_i + r (and
    // the other way round): the largest is at one of those.
    let over = |p: &[u64], q: &[u64]| {
        p.iter()
            .map(|&v| cdf(p, v) - cdf(q, v.saturating_add(r)))
            .fold(0.0, f64::max)
    };
    over(&a, &b).max(over(&b, &a))
}

/// |D_R − D_M| over the gaps [`compare`] pairs. None when no gap was
/// compared.
pub fn gap_errors(
    times: &[u64],
    lens: &[u32],
    requested: Requested<'_>,
    min_len: u32,
) -> Option<GapErrors> {
    gap_errors_of(&compare(times, lens, requested, min_len), times.len())
}

/// [`gap_errors`] of gaps already compared, of a capture of `frames`.
pub fn gap_errors_of(c: &Compared, frames: usize) -> Option<GapErrors> {
    let mut errs: Vec<u64> = c
        .requested
        .iter()
        .zip(&c.measured)
        .map(|(r, m)| r.abs_diff(*m))
        .collect();
    let req_sum: f64 = c.requested.iter().map(|&r| r as f64).sum();
    let meas_sum: f64 = c.measured.iter().map(|&m| m as f64).sum();
    let (short, mismatch) = (c.short, c.mismatch);
    if errs.is_empty() {
        return None;
    }
    let n = errs.len();
    errs.sort_unstable();
    let mut all = Samples::new(usize::MAX);
    for &e in &errs {
        all.push(e);
    }
    Some(GapErrors {
        gaps: n as u64,
        frames: frames as u64,
        short_frames: short,
        count_mismatch: mismatch,
        skipped: c.skipped,
        requested_mean_ns: req_sum / n as f64,
        measured_mean_ns: meas_sum / n as f64,
        p95_ns: errs[rank(95.0, n)],
        ks: ks_distance(&c.requested, &c.measured),
        ks_1us: ks_within(&c.requested, &c.measured, 1_000),
        error: all.finish()?,
    })
}

/// Parses requested gaps, one integer of ns per line (blank lines and
/// `#` comments skipped); the error names the line.
pub fn parse_gaps(text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        out.push(
            l.parse::<u64>()
                .map_err(|_| format!("line {}: '{l}' is not a gap in ns", i + 1))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_request_compares_each_gap_of_full_size_frames() {
        // Gaps 1000, 1010, 990, then a short frame, then 1200.
        let times = [0, 1000, 2010, 3000, 3500, 4700];
        let lens = [1514, 1514, 1514, 1514, 60, 1514];
        let e = gap_errors(&times, &lens, Requested::Constant(1000), 1000).unwrap();
        assert_eq!(e.gaps, 3);
        assert_eq!(e.short_frames, 1);
        assert_eq!(
            (e.error.percentiles.p50_ns, e.error.percentiles.max_ns),
            (10, 10)
        );
        let all = gap_errors(&times, &lens, Requested::Constant(1000), 0).unwrap();
        assert_eq!(all.gaps, 5);
        assert_eq!(all.error.percentiles.max_ns, 500);
        // gaperr's rank rule: sorted [0,10,10,200,500]; p95 → index 4.
        assert_eq!((all.error.percentiles.p50_ns, all.p95_ns), (10, 500));
    }

    #[test]
    fn a_list_is_matched_by_departure_and_a_length_mismatch_is_reported() {
        let times = [0, 100, 300, 600];
        let e = gap_errors(
            &times,
            &[60; 4],
            Requested::List(&[0, 100, 200, 300, 400]),
            0,
        )
        .unwrap();
        assert_eq!(e.gaps, 3);
        assert_eq!(e.error.percentiles.max_ns, 0);
        assert_eq!(e.count_mismatch, 1);
        assert!(e.render_text().contains("differ by 1"));
    }

    #[test]
    fn a_capture_that_missed_the_first_departures_is_aligned() {
        // Requested gaps of no period; the capture starts at the third
        // departure.
        let list: Vec<u64> = (0..40u64)
            .map(|i| if i == 0 { 0 } else { 100 + 37 * (i * i % 11) })
            .collect();
        let mut t = vec![0u64];
        for g in &list[3..] {
            t.push(t.last().unwrap() + g);
        }
        let e = gap_errors(&t, &vec![60; t.len()], Requested::List(&list), 0).unwrap();
        assert_eq!((e.skipped, e.error.percentiles.max_ns), (2, 0));
        assert_eq!(e.count_mismatch, 0);
    }

    #[test]
    fn the_ks_distance_is_the_largest_cdf_gap() {
        assert_eq!(ks_distance(&[1, 2, 3, 4], &[1, 2, 3, 4]), 0.0);
        assert_eq!(ks_distance(&[1, 2], &[3, 4]), 1.0);
        // a: half at 1, half at 3; b: all at 2: at x = 1, 0.5 against 0.
        assert_eq!(ks_distance(&[1, 3], &[2, 2, 2]), 0.5);
        // An atom measured with jitter: strictly half its step apart,
        // within a tolerance of 2 the same.
        let (spike, jittered) = ([100u64; 4], [99u64, 101, 99, 101]);
        assert_eq!(ks_distance(&spike, &jittered), 0.5);
        assert_eq!(ks_within(&spike, &jittered, 2), 0.0);
        assert_eq!(ks_within(&[1, 2], &[30, 40], 2), 1.0);
        // Measured gaps all over twice the requested: the CDFs never meet.
        let req: Vec<u64> = (0..30u64)
            .map(|i| if i == 0 { 0 } else { 10 + i % 7 })
            .collect();
        let mut t = vec![0u64];
        for g in &req[1..] {
            t.push(t.last().unwrap() + 2 * g + 100);
        }
        let e = gap_errors(&t, &[60; 30], Requested::List(&req), 0).unwrap();
        assert_eq!(e.ks, 1.0);
    }

    #[test]
    fn nothing_to_compare_is_none_and_bad_lines_are_named() {
        assert!(gap_errors(&[5], &[60], Requested::Constant(1), 0).is_none());
        assert_eq!(parse_gaps("# gaps\n0\n\n20000\n").unwrap(), [0, 20000]);
        assert_eq!(
            parse_gaps("0\n2x\n").unwrap_err(),
            "line 2: '2x' is not a gap in ns"
        );
    }
}
