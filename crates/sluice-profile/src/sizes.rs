//! Frame size laws, D^ps(x, σ²). A size is the Ethernet frame as a
//! capture shows it: header to payload, no FCS (a "64-byte frame" of
//! RFC 2544 is 60 bytes here). Sampling:
//! - `constant`: `bytes`;
//! - `uniform`: an integer in [min, max], uniformly (`Uniform`);
//! - `normal`: `Normal(mean, std)` rounded, a draw outside
//!   [smallest frame, 65535] drawn again;
//! - `mix`: weighted sizes by Walker's alias method (`WeightedAliasIndex`,
//!   O(1) a draw);
//! - `imix`: the simple IMIX, 7 : 4 : 1 of 60, 590 and 1514 bytes (64,
//!   594 and 1518 with the FCS);
//! - `empirical`: a frame length of the capture, uniformly.

use rand::rngs::SmallRng;
use rand::Rng;
use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::{Distribution, Normal, Uniform};

/// The simple IMIX (sizes without the FCS, weights).
pub const IMIX: [(u16, f64); 3] = [(60, 7.0), (590, 4.0), (1514, 1.0)];

/// Largest frame a size law may give.
pub const MAX_FRAME: u16 = u16::MAX;

#[derive(Clone, Debug)]
pub struct SizeLaw {
    sampler: Sampler,
    /// Mean frame size, bytes.
    pub mean: f64,
    /// Variance, bytes².
    pub variance: f64,
    /// Smallest and largest size the law can give.
    pub bounds: (u16, u16),
    /// The weights of a mix, in the order of its sizes.
    weights: Vec<f64>,
}

#[derive(Clone, Debug)]
enum Sampler {
    Constant(u16),
    Uniform(Uniform<u16>),
    Normal(Normal<f64>, u16),
    Mix(WeightedAliasIndex<f64>, Vec<u16>),
    Empirical(Vec<u16>),
}

impl SizeLaw {
    pub fn constant(bytes: u16) -> SizeLaw {
        SizeLaw {
            sampler: Sampler::Constant(bytes),
            mean: f64::from(bytes),
            variance: 0.0,
            bounds: (bytes, bytes),
            weights: Vec::new(),
        }
    }

    pub fn uniform(min: u16, max: u16) -> Result<SizeLaw, String> {
        if min > max {
            return Err(format!("min {min} is above max {max}"));
        }
        let n = f64::from(max - min) + 1.0;
        Ok(SizeLaw {
            sampler: Sampler::Uniform(Uniform::new_inclusive(min, max).map_err(|e| e.to_string())?),
            mean: (f64::from(min) + f64::from(max)) / 2.0,
            variance: (n * n - 1.0) / 12.0,
            bounds: (min, max),
            weights: Vec::new(),
        })
    }

    /// Normal sizes of `mean` and `std` bytes, at least `least`.
    pub fn normal(mean: f64, std: f64, least: u16) -> Result<SizeLaw, String> {
        if !(mean.is_finite() && f64::from(least) <= mean && mean <= f64::from(MAX_FRAME)) {
            return Err(format!(
                "mean {mean} is not a frame size in [{least}, {MAX_FRAME}]"
            ));
        }
        if !(std.is_finite() && std > 0.0) {
            return Err(format!("std must be positive, got {std}"));
        }
        // Draws outside [least, MAX_FRAME] are drawn again: most must fit.
        let phi = |v: f64| super::math::normal_cdf((v - mean) / std);
        let fits = (phi(f64::from(MAX_FRAME) + 0.5) - phi(f64::from(least) - 0.5)).max(0.0);
        if fits < super::gaps::MIN_ACCEPTED {
            return Err(format!(
                "std {std:.3e}: only {fits:.1e} of the draws are frame sizes in [{least}, {MAX_FRAME}]; \
                 lower the std"
            ));
        }
        Ok(SizeLaw {
            sampler: Sampler::Normal(Normal::new(mean, std).map_err(|e| e.to_string())?, least),
            mean,
            variance: std * std,
            bounds: (least, MAX_FRAME),
            weights: Vec::new(),
        })
    }

    /// Sizes drawn with the given weights.
    pub fn mix(values: &[(u16, f64)]) -> Result<SizeLaw, String> {
        if values.is_empty() {
            return Err("values is empty".into());
        }
        if let Some((s, w)) = values.iter().find(|(_, w)| !(w.is_finite() && *w >= 0.0)) {
            return Err(format!("size {s}: weight {w} is not a number ≥ 0"));
        }
        let total: f64 = values.iter().map(|(_, w)| w).sum();
        if total <= 0.0 {
            return Err("every weight is 0".into());
        }
        let mean = values.iter().map(|(s, w)| f64::from(*s) * w).sum::<f64>() / total;
        let variance = values
            .iter()
            .map(|(s, w)| (f64::from(*s) - mean).powi(2) * w)
            .sum::<f64>()
            / total;
        let weights: Vec<f64> = values.iter().map(|(_, w)| *w).collect();
        let sizes: Vec<u16> = values.iter().map(|(s, _)| *s).collect();
        let lo = *sizes.iter().min().expect("not empty");
        let hi = *sizes.iter().max().expect("not empty");
        Ok(SizeLaw {
            sampler: Sampler::Mix(
                WeightedAliasIndex::new(weights.clone()).map_err(|e| e.to_string())?,
                sizes,
            ),
            mean,
            variance,
            bounds: (lo, hi),
            weights,
        })
    }

    pub fn imix() -> SizeLaw {
        Self::mix(&IMIX).expect("the IMIX is a valid mix")
    }

    /// The frame lengths of a capture.
    pub fn empirical(sizes: Vec<u16>) -> Result<SizeLaw, String> {
        if sizes.is_empty() {
            return Err("the capture has no packets".into());
        }
        let n = sizes.len() as f64;
        let mean = sizes.iter().map(|s| f64::from(*s)).sum::<f64>() / n;
        let variance = sizes
            .iter()
            .map(|s| (f64::from(*s) - mean).powi(2))
            .sum::<f64>()
            / n;
        let bounds = (
            *sizes.iter().min().expect("not empty"),
            *sizes.iter().max().expect("not empty"),
        );
        Ok(SizeLaw {
            sampler: Sampler::Empirical(sizes),
            mean,
            variance,
            bounds,
            weights: Vec::new(),
        })
    }

    /// One frame size, bytes.
    #[inline]
    pub fn sample(&self, rng: &mut SmallRng) -> u16 {
        match &self.sampler {
            Sampler::Constant(b) => *b,
            Sampler::Uniform(d) => d.sample(rng),
            Sampler::Normal(d, least) => loop {
                let v = d.sample(rng).round();
                if v >= f64::from(*least) && v <= f64::from(MAX_FRAME) {
                    break v as u16;
                }
            },
            Sampler::Mix(d, sizes) => sizes[d.sample(rng)],
            Sampler::Empirical(v) => v[rng.random_range(0..v.len())],
        }
    }

    /// Draws and drops the next `n` sizes, as `n` calls of
    /// [`SizeLaw::sample`] would (a constant law draws nothing).
    pub fn pass_over(&self, rng: &mut SmallRng, n: u64) {
        if !matches!(self.sampler, Sampler::Constant(_)) {
            for _ in 0..n {
                self.sample(rng);
            }
        }
    }

    /// The theoretical CDF at `x` bytes.
    pub fn cdf(&self, x: f64) -> f64 {
        match &self.sampler {
            Sampler::Constant(b) => f64::from(u8::from(x >= f64::from(*b))),
            Sampler::Uniform(_) => {
                let (lo, hi) = (f64::from(self.bounds.0), f64::from(self.bounds.1));
                ((x.floor() - lo + 1.0) / (hi - lo + 1.0)).clamp(0.0, 1.0)
            }
            Sampler::Normal(d, least) => {
                let phi = |v: f64| super::math::normal_cdf((v - d.mean()) / d.std_dev());
                let lo = phi(f64::from(*least) - 0.5);
                let all = phi(f64::from(MAX_FRAME) + 0.5) - lo;
                ((phi(x.floor() + 0.5) - lo) / all).clamp(0.0, 1.0)
            }
            Sampler::Mix(_, sizes) => {
                let (mut below, mut total) = (0.0, 0.0);
                for (s, w) in sizes.iter().zip(&self.weights) {
                    total += w;
                    if f64::from(*s) <= x {
                        below += w;
                    }
                }
                below / total
            }
            Sampler::Empirical(v) => {
                v.iter().filter(|s| f64::from(**s) <= x).count() as f64 / v.len() as f64
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self.sampler {
            Sampler::Constant(_) => "constant",
            Sampler::Uniform(_) => "uniform",
            Sampler::Normal(..) => "normal",
            Sampler::Mix(..) => "mix",
            Sampler::Empirical(_) => "empirical",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Over 10^6 seeded draws: mean and variance within 1 % of theory, and
    /// the KS distance to the theoretical CDF (at every size drawn) below
    /// the 0.1 % critical value, 1.95/√n.
    #[test]
    fn every_size_law_matches_its_theory() {
        let laws = [
            SizeLaw::constant(64),
            SizeLaw::uniform(64, 1514).unwrap(),
            SizeLaw::normal(600.0, 150.0, 42).unwrap(),
            SizeLaw::mix(&[(1514, 0.5), (612, 0.1), (64, 0.4)]).unwrap(),
            SizeLaw::imix(),
        ];
        let n = 1_000_000;
        for law in laws {
            let mut rng = SmallRng::seed_from_u64(11);
            let mut v: Vec<u16> = (0..n).map(|_| law.sample(&mut rng)).collect();
            let mean = v.iter().map(|s| f64::from(*s)).sum::<f64>() / n as f64;
            let var = v
                .iter()
                .map(|s| (f64::from(*s) - mean).powi(2))
                .sum::<f64>()
                / n as f64;
            assert!(
                (mean - law.mean).abs() <= 0.01 * law.mean,
                "{}: mean {mean} vs {}",
                law.name(),
                law.mean
            );
            assert!(
                (var - law.variance).abs() <= 0.01 * law.variance.max(1e-9),
                "{}: variance {var} vs {}",
                law.name(),
                law.variance
            );
            v.sort_unstable();
            let mut ks = 0.0f64;
            let mut i = 0;
            while i < v.len() {
                let x = v[i];
                while i < v.len() && v[i] == x {
                    i += 1;
                }
                ks = ks.max((i as f64 / n as f64 - law.cdf(f64::from(x))).abs());
            }
            assert!(ks < 1.95 / (n as f64).sqrt(), "{}: KS {ks}", law.name());
        }
    }

    #[test]
    fn bad_mixes_are_refused() {
        assert!(SizeLaw::mix(&[]).is_err());
        assert!(SizeLaw::mix(&[(64, -1.0)])
            .unwrap_err()
            .contains("weight -1"));
        assert!(SizeLaw::mix(&[(64, 0.0)])
            .unwrap_err()
            .contains("every weight is 0"));
        assert!(SizeLaw::uniform(100, 64).unwrap_err().contains("above max"));
    }
}
