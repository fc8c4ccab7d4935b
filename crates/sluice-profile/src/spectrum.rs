//! §4.2–4.4 of the distributed-generator paper: the packet-rate series of
//! a trace sampled every t_sample, its real FFT (eq. 1, positive
//! frequencies only), the components C(A, f, φ) (eq. 2), a selection of
//! them (low-pass by a cutoff, or the K strongest), and the inverse FFT of
//! a selection (eq. 3) with its error against the full series.

use realfft::num_complex::Complex;
use realfft::RealFftPlanner;
use sluice_core::agree::pearson;

/// Bins a rate series may have (about 4.6 h at 1 ms; the series and its
/// transforms take a few hundred MiB).
pub const MAX_BINS: usize = 1 << 24;

/// Packets per t_sample bin, counted from time 0.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSeries {
    pub sample_ns: u64,
    pub counts: Vec<f64>,
}

impl RateSeries {
    /// Counts `times` (ns after the start, any order) into `bins` bins
    /// (None: up to the last time).
    pub fn from_times(
        times: impl IntoIterator<Item = u64>,
        sample_ns: u64,
        bins: Option<usize>,
    ) -> Result<RateSeries, String> {
        if sample_ns == 0 {
            return Err("the sampling interval must be positive".into());
        }
        let mut counts: Vec<f64> = vec![0.0; bins.unwrap_or(0)];
        for t in times {
            let b = usize::try_from(t / sample_ns).unwrap_or(usize::MAX);
            if b >= counts.len() {
                if bins.is_some() {
                    continue;
                }
                if b >= MAX_BINS {
                    return Err(format!(
                        "more than {MAX_BINS} bins of {sample_ns} ns: sample more coarsely"
                    ));
                }
                counts.resize(b + 1, 0.0);
            }
            counts[b] += 1.0;
        }
        Ok(RateSeries { sample_ns, counts })
    }
}

/// One frequency component: a·cos(2π f t + φ) in packets per bin.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Index k: frequency k / (n t_sample).
    pub k: usize,
    pub freq_hz: f64,
    /// Amplitude (half the peak-to-peak swing), packets per bin.
    pub amplitude: f64,
    /// Phase, radians.
    pub phase: f64,
}

/// Which components to keep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Selection {
    All,
    /// The K strongest non-DC components.
    Keep(usize),
    /// Components at or below this frequency (Hz): the paper's low-pass.
    Cutoff(f64),
}

/// The spectrum of a rate series.
pub struct Spectrum {
    pub n: usize,
    pub sample_ns: u64,
    /// Mean packets per bin (the DC component).
    pub dc: f64,
    /// Components k = 1 ..= n/2.
    pub components: Vec<Component>,
    bins: Vec<Complex<f64>>,
}

impl Spectrum {
    pub fn of(series: &RateSeries) -> Result<Spectrum, String> {
        let n = series.counts.len();
        if n < 2 {
            return Err("a rate series of fewer than 2 bins has no spectrum".into());
        }
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(n);
        let mut input = series.counts.clone();
        let mut bins = fft.make_output_vec();
        fft.process(&mut input, &mut bins)
            .map_err(|e| e.to_string())?;
        let dt = series.sample_ns as f64 * 1e-9;
        let components = (1..bins.len())
            .map(|k| {
                let nyquist = n.is_multiple_of(2) && k == n / 2;
                let scale = if nyquist { 1.0 } else { 2.0 } / n as f64;
                Component {
                    k,
                    freq_hz: k as f64 / (n as f64 * dt),
                    amplitude: bins[k].norm() * scale,
                    phase: bins[k].arg(),
                }
            })
            .collect();
        Ok(Spectrum {
            n,
            sample_ns: series.sample_ns,
            dc: bins[0].re / n as f64,
            components,
            bins,
        })
    }

    /// Indices k of the selected components, strongest first for `Keep`,
    /// by frequency otherwise.
    pub fn select(&self, sel: Selection) -> Vec<usize> {
        match sel {
            Selection::All => self.components.iter().map(|c| c.k).collect(),
            Selection::Cutoff(hz) => self
                .components
                .iter()
                .filter(|c| c.freq_hz <= hz)
                .map(|c| c.k)
                .collect(),
            Selection::Keep(k) => {
                let mut by: Vec<&Component> = self.components.iter().collect();
                by.sort_by(|a, b| b.amplitude.total_cmp(&a.amplitude).then(a.k.cmp(&b.k)));
                by.iter().take(k).map(|c| c.k).collect()
            }
        }
    }

    /// The series rebuilt from the DC component (when `dc`) and the
    /// components `keep` (eq. 3: inverse FFT of the kept bins).
    pub fn reconstruct(&self, keep: &[usize], dc: bool) -> Vec<f64> {
        let mut bins = vec![Complex::new(0.0, 0.0); self.bins.len()];
        if dc {
            bins[0] = self.bins[0];
        }
        for &k in keep {
            bins[k] = self.bins[k];
        }
        if self.n.is_multiple_of(2) {
            // The Nyquist bin of a real signal is real.
            let last = bins.len() - 1;
            bins[last].im = 0.0;
        }
        let ifft = RealFftPlanner::<f64>::new().plan_fft_inverse(self.n);
        let mut out = ifft.make_output_vec();
        ifft.process(&mut bins, &mut out)
            .expect("the bins come from a forward FFT of the same length");
        let n = self.n as f64;
        out.iter_mut().for_each(|v| *v /= n);
        out
    }
}

/// (MSE, NMSE, Pearson r) of `approx` against `target`, as
/// `ratejudge.py` defines them.
pub fn fit_errors(target: &[f64], approx: &[f64]) -> (f64, f64, f64) {
    let n = target.len().min(approx.len());
    if n == 0 {
        return (0.0, 0.0, 0.0);
    }
    let (t, g) = (&target[..n], &approx[..n]);
    let sq: f64 = t.iter().zip(g).map(|(a, b)| (b - a).powi(2)).sum();
    let energy: f64 = t.iter().map(|a| a * a).sum();
    let nmse = if energy > 0.0 { sq / energy } else { f64::NAN };
    (sq / n as f64, nmse, pearson(t, g))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(counts: Vec<f64>) -> RateSeries {
        RateSeries {
            sample_ns: 1_000_000,
            counts,
        }
    }

    #[test]
    fn all_components_rebuild_the_series_to_float_precision() {
        let mut x = 12345u64;
        for n in [2usize, 7, 1000, 1001] {
            let c: Vec<f64> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 40) as f64 % 50.0
                })
                .collect();
            let s = Spectrum::of(&series(c.clone())).unwrap();
            let back = s.reconstruct(&s.select(Selection::All), true);
            let worst = c
                .iter()
                .zip(&back)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(worst < 1e-9, "n {n}: {worst}");
            // Every component's cosine sums to the same series.
            let m = n / 3;
            let by_hand = s.dc
                + s.components
                    .iter()
                    .map(|k| {
                        k.amplitude
                            * (2.0 * std::f64::consts::PI * (k.k * m) as f64 / n as f64 + k.phase)
                                .cos()
                    })
                    .sum::<f64>();
            assert!(
                (by_hand - c[m]).abs() < 1e-9,
                "n {n}: {by_hand} vs {}",
                c[m]
            );
        }
    }

    #[test]
    fn the_two_strongest_components_rebuild_a_two_tone_series_exactly() {
        let n = 1000;
        let c: Vec<f64> = (0..n)
            .map(|m| {
                let t = m as f64 / n as f64 * 2.0 * std::f64::consts::PI;
                100.0 + 30.0 * (5.0 * t + 0.3).cos() + 12.0 * (40.0 * t - 1.1).cos()
            })
            .collect();
        let s = Spectrum::of(&series(c.clone())).unwrap();
        let keep = s.select(Selection::Keep(2));
        assert_eq!(keep, vec![5, 40]);
        let k5 = s.components[4];
        assert!((k5.amplitude - 30.0).abs() < 1e-9 && (k5.phase - 0.3).abs() < 1e-9);
        assert!(
            (k5.freq_hz - 5.0).abs() < 1e-12,
            "1 s of 1 ms bins: bin k is k Hz"
        );
        let back = s.reconstruct(&keep, true);
        let (mse, nmse, r) = fit_errors(&c, &back);
        assert!(mse < 1e-18 && nmse < 1e-20 && (r - 1.0).abs() < 1e-12);
        // A low-pass at 10 Hz keeps the slow tone only.
        let low = s.reconstruct(&s.select(Selection::Cutoff(10.0)), true);
        assert!((low[0] - (100.0 + 30.0 * 0.3f64.cos())).abs() < 1e-9);
    }

    #[test]
    fn rate_series_count_packets_per_bin() {
        let s =
            RateSeries::from_times([0, 999_999, 1_000_000, 3_500_000], 1_000_000, None).unwrap();
        assert_eq!(s.counts, vec![2.0, 1.0, 0.0, 1.0]);
        let s = RateSeries::from_times([0, 5_000_000], 1_000_000, Some(2)).unwrap();
        assert_eq!(s.counts, vec![1.0, 0.0]);
    }
}
