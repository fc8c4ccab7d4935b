//! Inter-packet delay laws, D^ipd(x, σ²) of the distributed-generator
//! paper (Table 3): each family from its natural parameters, the mean
//! always that of the profile's rate.
//!
//! Sampling (`rand_distr`, seeded `SmallRng`):
//! - `constant`: the mean;
//! - `poisson`: exponential gaps, ziggurat (`Exp`);
//! - `uniform`: `Uniform` on [x − √3σ, x + √3σ];
//! - `normal`: ziggurat (`Normal`), a draw ≤ 0 drawn again (a gap is
//!   positive; negligible for σ ≤ x/3);
//! - `lognormal`: `LogNormal` with σ_ln² = ln(1 + σ²/x²), μ_ln = ln x − σ_ln²/2;
//! - `pareto`: `Pareto` (inverse transform) of shape α, scale x(α − 1)/α;
//! - `weibull`: `Weibull` (inverse transform) of shape k, scale x/Γ(1 + 1/k);
//! - `gamma`: `Gamma` (Marsaglia–Tsang) of shape k, scale x/k;
//! - `empirical`: a gap of the capture, uniformly;
//! - `mixture`: a part chosen by its weight, then a gap of its law (the
//!   spike-bump laws of Caliper's evaluation are a constant spike and a
//!   normal bump); mean, variance and CDF are the weighted parts'.

use super::math::{exp_nonneg, gamma_fn, gamma_p, normal_cdf};
use rand::rngs::SmallRng;
use rand::Rng;
use rand_distr::{Distribution, Exp, Gamma, LogNormal, Normal, Pareto, Uniform, Weibull};

/// The least share of draws a truncated law may keep: below it, drawing
/// again until one fits is a loop that practically never ends.
pub const MIN_ACCEPTED: f64 = 1e-3;

/// A gap law ready to sample, in nanoseconds, with its theoretical mean
/// and variance.
#[derive(Clone, Debug)]
pub struct GapLaw {
    sampler: Sampler,
    /// Mean gap, ns.
    pub mean: f64,
    /// Variance, ns² (infinite for a pareto law of shape ≤ 2).
    pub variance: f64,
}

#[derive(Clone, Debug)]
enum Sampler {
    Constant(f64),
    Poisson(Exp<f64>),
    Uniform {
        d: Uniform<f64>,
        lo: f64,
        hi: f64,
    },
    Normal(Normal<f64>),
    LogNormal {
        d: LogNormal<f64>,
        mu: f64,
        sigma: f64,
    },
    /// Drawn as scale · e^(E/α) with E ~ Exp(1) (the inverse transform
    /// u^(−1/α) with −ln u = E): a ziggurat draw and one `exp` instead of
    /// `powf`, which dominated a distributed share's planning
    /// ([`exp_nonneg`] for the `exp`).
    Pareto {
        scale: f64,
        shape: f64,
        inv_shape: f64,
    },
    Weibull {
        d: Weibull<f64>,
        scale: f64,
        shape: f64,
    },
    Gamma {
        d: Gamma<f64>,
        shape: f64,
        scale: f64,
    },
    Empirical(Vec<f64>),
    /// Parts with their cumulative weights (the last 1).
    Mixture(Vec<(f64, GapLaw)>),
}

/// How a family's spread is given (at most one, where the family has one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    None,
    /// Standard deviation, ns.
    Std(f64),
    /// Shape parameter (pareto α, weibull k, gamma k).
    Shape(f64),
}

/// The families, by name.
pub const FAMILIES: [&str; 9] = [
    "constant",
    "poisson",
    "uniform",
    "normal",
    "lognormal",
    "pareto",
    "weibull",
    "gamma",
    "empirical",
];

impl GapLaw {
    /// The law of family `dist` with mean `mean` ns. Errors say which
    /// parameter is wrong, for the caller to prefix with its key.
    pub fn new(dist: &str, mean: f64, spread: Spread) -> Result<GapLaw, String> {
        if !(mean.is_finite() && mean > 0.0) {
            return Err(format!("the mean gap must be positive, got {mean} ns"));
        }
        let std = |what: &str| -> Result<f64, String> {
            match spread {
                Spread::Std(s) if s.is_finite() && s > 0.0 => Ok(s),
                Spread::Std(s) => Err(format!("std must be positive, got {s} ns")),
                _ => Err(format!("{what} needs std, variance or cv (and no shape)")),
            }
        };
        let shape_or = |from_std: &dyn Fn(f64) -> Result<f64, String>| -> Result<f64, String> {
            match spread {
                Spread::Shape(k) if k.is_finite() && k > 0.0 => Ok(k),
                Spread::Shape(k) => Err(format!("shape must be positive, got {k}")),
                Spread::Std(s) if s.is_finite() && s > 0.0 => from_std(s),
                Spread::Std(s) => Err(format!("std must be positive, got {s} ns")),
                Spread::None => Err(format!("{dist} needs shape, std, variance or cv")),
            }
        };
        let bad = |e: &dyn std::fmt::Display| format!("{dist}: {e}");
        let (sampler, variance) = match dist {
            "constant" => {
                no_spread(dist, spread)?;
                (Sampler::Constant(mean), 0.0)
            }
            "poisson" => {
                no_spread(dist, spread)?;
                let d = Exp::new(1.0 / mean).map_err(|e| bad(&e))?;
                (Sampler::Poisson(d), mean * mean)
            }
            "uniform" => {
                // Default: the widest uniform law of this mean, [0, 2x].
                let half = match spread {
                    Spread::None => mean,
                    _ => std("uniform")? * 3f64.sqrt(),
                };
                if half > mean {
                    return Err(format!(
                        "uniform: std {} ns would make gaps negative (at most {} ns for a mean of {mean} ns)",
                        half / 3f64.sqrt(),
                        mean / 3f64.sqrt()
                    ));
                }
                let (lo, hi) = (mean - half, mean + half);
                let d = Uniform::new_inclusive(lo, hi).map_err(|e| bad(&e))?;
                (Sampler::Uniform { d, lo, hi }, (hi - lo).powi(2) / 12.0)
            }
            "normal" => {
                let s = std("normal")?;
                (
                    Sampler::Normal(Normal::new(mean, s).map_err(|e| bad(&e))?),
                    s * s,
                )
            }
            "lognormal" => {
                let s = std("lognormal")?;
                let var_ln = (1.0 + (s / mean).powi(2)).ln();
                let (mu, sigma) = (mean.ln() - var_ln / 2.0, var_ln.sqrt());
                let d = LogNormal::new(mu, sigma).map_err(|e| bad(&e))?;
                (Sampler::LogNormal { d, mu, sigma }, s * s)
            }
            "pareto" => {
                // Var = x² / (α(α − 2)): α = 1 + √(1 + x²/σ²).
                let shape = shape_or(&|s| Ok(1.0 + (1.0 + (mean / s).powi(2)).sqrt()))?;
                if shape <= 1.0 {
                    return Err(format!(
                        "pareto: shape must be above 1 for a finite mean, got {shape}"
                    ));
                }
                let scale = mean * (shape - 1.0) / shape;
                // Pareto::new's checks (finite, positive scale and shape).
                Pareto::new(scale, shape).map_err(|e| bad(&e))?;
                let var = if shape > 2.0 {
                    mean * mean / (shape * (shape - 2.0))
                } else {
                    f64::INFINITY
                };
                (
                    Sampler::Pareto {
                        scale,
                        shape,
                        inv_shape: shape.recip(),
                    },
                    var,
                )
            }
            "weibull" => {
                let shape = shape_or(&|s| weibull_shape(s / mean))?;
                let g1 = gamma_fn(1.0 + 1.0 / shape);
                let scale = mean / g1;
                let d = Weibull::new(scale, shape).map_err(|e| bad(&e))?;
                let var = scale * scale * (gamma_fn(1.0 + 2.0 / shape) - g1 * g1);
                (Sampler::Weibull { d, scale, shape }, var)
            }
            "gamma" => {
                let shape = shape_or(&|s| Ok((mean / s).powi(2)))?;
                let scale = mean / shape;
                let d = Gamma::new(shape, scale).map_err(|e| bad(&e))?;
                (Sampler::Gamma { d, shape, scale }, shape * scale * scale)
            }
            other => {
                return Err(format!(
                    "unknown distribution '{other}' ({})",
                    FAMILIES.join(", ")
                ))
            }
        };
        GapLaw {
            sampler,
            mean,
            variance,
        }
        .usable()
    }

    /// Refuses a law a sender cannot follow: a normal law whose draws are
    /// mostly not positive (each is drawn again), or one whose median gap
    /// is under 1 ns, whose draws barely move time (a run of any length is
    /// then practically endless, and no link sends frames that close).
    fn usable(self) -> Result<GapLaw, String> {
        if let Sampler::Normal(d) = &self.sampler {
            let positive = 1.0 - normal_cdf(-d.mean() / d.std_dev());
            if positive < MIN_ACCEPTED {
                return Err(format!(
                    "normal: only {positive:.1e} of the draws are positive gaps (std {} ns for a \
                     mean of {} ns): lower the std",
                    d.std_dev(),
                    d.mean()
                ));
            }
        }
        let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(0x5eed);
        let mut v: Vec<f64> = (0..2049).map(|_| self.sample(&mut rng)).collect();
        if v.iter().any(|g| !(g.is_finite() && *g >= 0.0)) {
            return Err(format!(
                "{}: it draws gaps that are not finite (its parameters are too extreme)",
                self.name()
            ));
        }
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        if median < 1.0 {
            return Err(format!(
                "{}: half its gaps are under 1 ns (median {median:.3e} ns for a mean of {:.3e} ns): \
                 no link sends frames that close; choose a larger shape or a smaller spread",
                self.name(),
                self.mean
            ));
        }
        Ok(self)
    }

    /// An empirical law: the gaps (ns) of a capture, scaled to `mean`
    /// when given.
    pub fn empirical(mut gaps: Vec<f64>, mean: Option<f64>) -> Result<GapLaw, String> {
        if gaps.is_empty() {
            return Err("the capture has fewer than two packets: no gap to draw".into());
        }
        let own = gaps.iter().sum::<f64>() / gaps.len() as f64;
        if let Some(m) = mean {
            if own <= 0.0 {
                return Err("every gap of the capture is 0: it cannot be scaled to a rate".into());
            }
            gaps.iter_mut().for_each(|g| *g *= m / own);
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        if mean <= 0.0 {
            return Err("every gap of the capture is 0".into());
        }
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        gaps.sort_by(f64::total_cmp);
        Ok(GapLaw {
            sampler: Sampler::Empirical(gaps),
            mean,
            variance,
        })
    }

    /// A law written on one line, `DIST:MEAN[,std=DURATION|,shape=K]`:
    /// `constant:20us`, `poisson:1ms`, `pareto:200ms,shape=1.5`,
    /// `normal:10us,std=2us` (any family but `empirical`). Errors say what
    /// is wrong, for the caller to prefix with its option.
    pub fn parse(spec: &str) -> Result<GapLaw, String> {
        let usage = "write DIST:MEAN[,std=DURATION|,shape=K], e.g. pareto:200ms,shape=1.5";
        let (dist, rest) = spec
            .split_once(':')
            .ok_or_else(|| format!("'{spec}': no mean ({usage})"))?;
        let mut parts = rest.split(',');
        let mean = parts.next().unwrap_or_default();
        let mean = sluice_core::parse_duration(mean)
            .map_err(|e| format!("'{spec}': mean: {e}"))?
            .0 as f64;
        let mut spread = Spread::None;
        for p in parts {
            let next = match p.split_once('=') {
                Some(("std", d)) => sluice_core::parse_duration(d)
                    .map(|d| Spread::Std(d.0 as f64))
                    .map_err(|e| format!("'{spec}': std: {e}"))?,
                Some(("shape", k)) => k
                    .parse::<f64>()
                    .map(Spread::Shape)
                    .map_err(|_| format!("'{spec}': shape '{k}' is not a number"))?,
                _ => {
                    return Err(format!(
                        "'{spec}': '{p}' is neither std= nor shape= ({usage})"
                    ))
                }
            };
            if spread != Spread::None {
                return Err(format!("'{spec}': give std or shape, once"));
            }
            spread = next;
        }
        if dist == "empirical" || !FAMILIES.contains(&dist) {
            return Err(format!(
                "'{spec}': unknown law '{dist}' (one of {})",
                FAMILIES[..FAMILIES.len() - 1].join(", ")
            ));
        }
        GapLaw::new(dist, mean, spread).map_err(|e| format!("'{spec}': {e}"))
    }

    /// One gap, ns.
    #[inline]
    pub fn sample(&self, rng: &mut SmallRng) -> f64 {
        match &self.sampler {
            Sampler::Constant(m) => *m,
            Sampler::Poisson(d) => d.sample(rng),
            Sampler::Uniform { d, .. } => d.sample(rng),
            Sampler::Normal(d) => loop {
                let v = d.sample(rng);
                if v > 0.0 {
                    break v;
                }
            },
            Sampler::LogNormal { d, .. } => d.sample(rng),
            Sampler::Pareto {
                scale, inv_shape, ..
            } => {
                let e: f64 = rand_distr::Exp1.sample(rng);
                scale * exp_nonneg(e * inv_shape)
            }
            Sampler::Weibull { d, .. } => d.sample(rng),
            Sampler::Gamma { d, .. } => d.sample(rng),
            Sampler::Empirical(v) => v[rng.random_range(0..v.len())],
            Sampler::Mixture(parts) => {
                let u: f64 = rng.random();
                let i = parts.partition_point(|(c, _)| *c <= u).min(parts.len() - 1);
                parts[i].1.sample(rng)
            }
        }
    }

    /// A mixture: each gap drawn from one of `parts`, chosen with
    /// probability proportional to its weight. The parts are whole laws
    /// (their own means); a mixture is not a part.
    pub fn mixture(parts: Vec<(f64, GapLaw)>) -> Result<GapLaw, String> {
        if parts.len() < 2 {
            return Err("a mixture needs at least two parts".into());
        }
        if let Some((i, (w, _))) = parts
            .iter()
            .enumerate()
            .find(|(_, (w, _))| !(w.is_finite() && *w > 0.0))
        {
            return Err(format!("part {i}: weight must be positive, got {w}"));
        }
        if let Some(i) = parts
            .iter()
            .position(|(_, l)| matches!(l.sampler, Sampler::Mixture(_)))
        {
            return Err(format!("part {i}: a mixture cannot be a part of one"));
        }
        let total: f64 = parts.iter().map(|(w, _)| w).sum();
        let mean = parts.iter().map(|(w, l)| w / total * l.mean).sum::<f64>();
        let second = parts
            .iter()
            .map(|(w, l)| w / total * (l.variance + l.mean * l.mean))
            .sum::<f64>();
        let mut cum = 0.0;
        let mut out = Vec::with_capacity(parts.len());
        for (w, l) in parts {
            cum += w / total;
            out.push((cum, l));
        }
        if let Some(last) = out.last_mut() {
            last.0 = 1.0;
        }
        GapLaw {
            sampler: Sampler::Mixture(out),
            mean,
            variance: (second - mean * mean).max(0.0),
        }
        .usable()
    }

    /// The parts of a mixture: (weight, law).
    pub fn parts(&self) -> Vec<(f64, &GapLaw)> {
        match &self.sampler {
            Sampler::Mixture(v) => {
                let mut prev = 0.0;
                v.iter()
                    .map(|(c, l)| {
                        let w = c - prev;
                        prev = *c;
                        (w, l)
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// `t` plus the next `n` gaps, added one at a time exactly as `n`
    /// calls of [`GapLaw::sample`] would add them (same draws, same
    /// rounding), with the law's match taken once: a distributed share
    /// passes over the other shares' packets this way.
    pub fn advance(&self, t: f64, rng: &mut SmallRng, n: u64) -> f64 {
        #[inline(always)]
        fn add(mut t: f64, n: u64, mut gap: impl FnMut() -> f64) -> f64 {
            for _ in 0..n {
                t += gap();
            }
            t
        }
        match &self.sampler {
            Sampler::Constant(m) => add(t, n, || *m),
            Sampler::Poisson(d) => add(t, n, || d.sample(rng)),
            Sampler::Pareto {
                scale, inv_shape, ..
            } => {
                // In batches: the draws first, then their `exp`s, which
                // do not depend on each other; the sum in order, as
                // `sample` one by one would make it.
                let mut t = t;
                let mut left = n;
                while left > 0 {
                    let m = left.min(8) as usize;
                    let mut g = [0.0f64; 8];
                    for v in &mut g[..m] {
                        let e: f64 = rand_distr::Exp1.sample(rng);
                        *v = e * inv_shape;
                    }
                    for v in &mut g[..m] {
                        *v = scale * exp_nonneg(*v);
                    }
                    t = g[..m].iter().fold(t, |t, g| t + g);
                    left -= m as u64;
                }
                t
            }
            _ => add(t, n, || self.sample(rng)),
        }
    }

    /// The family's name.
    pub fn name(&self) -> &'static str {
        match self.sampler {
            Sampler::Constant(_) => "constant",
            Sampler::Poisson(_) => "poisson",
            Sampler::Uniform { .. } => "uniform",
            Sampler::Normal(_) => "normal",
            Sampler::LogNormal { .. } => "lognormal",
            Sampler::Pareto { .. } => "pareto",
            Sampler::Weibull { .. } => "weibull",
            Sampler::Gamma { .. } => "gamma",
            Sampler::Empirical(_) => "empirical",
            Sampler::Mixture(_) => "mixture",
        }
    }

    /// The shape parameter of pareto, weibull and gamma laws.
    pub fn shape(&self) -> Option<f64> {
        match self.sampler {
            Sampler::Pareto { shape, .. }
            | Sampler::Weibull { shape, .. }
            | Sampler::Gamma { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// The theoretical CDF at `x` ns (a normal law as if not truncated).
    pub fn cdf(&self, x: f64) -> f64 {
        match &self.sampler {
            Sampler::Constant(m) => f64::from(u8::from(x >= *m)),
            Sampler::Poisson(_) => (1.0 - (-x / self.mean).exp()).max(0.0),
            Sampler::Uniform { lo, hi, .. } => ((x - lo) / (hi - lo)).clamp(0.0, 1.0),
            Sampler::Normal(d) => normal_cdf((x - d.mean()) / d.std_dev()),
            Sampler::LogNormal { mu, sigma, .. } => {
                if x <= 0.0 {
                    0.0
                } else {
                    normal_cdf((x.ln() - mu) / sigma)
                }
            }
            Sampler::Pareto { scale, shape, .. } => {
                if x < *scale {
                    0.0
                } else {
                    1.0 - (scale / x).powf(*shape)
                }
            }
            Sampler::Weibull { scale, shape, .. } => {
                1.0 - (-(x.max(0.0) / scale).powf(*shape)).exp()
            }
            Sampler::Gamma { shape, scale, .. } => gamma_p(*shape, x.max(0.0) / scale),
            Sampler::Empirical(v) => v.partition_point(|g| *g <= x) as f64 / v.len() as f64,
            Sampler::Mixture(parts) => {
                let mut prev = 0.0;
                parts
                    .iter()
                    .map(|(c, l)| {
                        let w = c - prev;
                        prev = *c;
                        w * l.cdf(x)
                    })
                    .sum()
            }
        }
    }
}

fn no_spread(dist: &str, spread: Spread) -> Result<(), String> {
    match spread {
        Spread::None => Ok(()),
        _ => Err(format!(
            "{dist} takes no std, variance, cv or shape: its spread follows from the mean"
        )),
    }
}

/// Weibull shape k with coefficient of variation `cv`: cv² + 1 =
/// Γ(1 + 2/k) / Γ(1 + 1/k)², decreasing in k; solved by bisection.
fn weibull_shape(cv: f64) -> Result<f64, String> {
    let f = |k: f64| gamma_fn(1.0 + 2.0 / k) / gamma_fn(1.0 + 1.0 / k).powi(2) - 1.0 - cv * cv;
    let (mut lo, mut hi) = (0.1f64, 200.0f64);
    if !(f(lo) > 0.0 && f(hi) < 0.0) {
        return Err(format!(
            "weibull: no shape in [0.1, 200] gives a std of {cv} × the mean"
        ));
    }
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok((lo + hi) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Over 10^6 seeded draws: mean and variance within 1 % of theory, and
    /// the KS distance to the theoretical CDF below the 0.1 % critical
    /// value, 1.95/√n.
    #[test]
    fn every_gap_law_matches_its_theory() {
        let m = 10_000.0;
        let laws = [
            GapLaw::new("poisson", m, Spread::None).unwrap(),
            GapLaw::new("uniform", m, Spread::None).unwrap(),
            GapLaw::new("uniform", m, Spread::Std(2_000.0)).unwrap(),
            GapLaw::new("normal", m, Spread::Std(2_000.0)).unwrap(),
            GapLaw::new("lognormal", m, Spread::Std(5_000.0)).unwrap(),
            GapLaw::new("pareto", m, Spread::Shape(8.0)).unwrap(),
            GapLaw::new("pareto", m, Spread::Std(2_000.0)).unwrap(),
            GapLaw::new("weibull", m, Spread::Shape(1.5)).unwrap(),
            GapLaw::new("weibull", m, Spread::Std(3_000.0)).unwrap(),
            GapLaw::new("gamma", m, Spread::Shape(2.5)).unwrap(),
            GapLaw::new("gamma", m, Spread::Std(20_000.0)).unwrap(),
        ];
        let n = 1_000_000;
        for law in laws {
            let mut rng = SmallRng::seed_from_u64(5);
            let mut v: Vec<f64> = (0..n).map(|_| law.sample(&mut rng)).collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
            let what = format!("{} shape {:?}", law.name(), law.shape());
            assert!((mean - m).abs() <= 0.01 * m, "{what}: mean {mean}");
            assert!(
                (var - law.variance).abs() <= 0.01 * law.variance,
                "{what}: variance {var} vs {}",
                law.variance
            );
            v.sort_by(f64::total_cmp);
            let ks = super::super::math::ks_one(&v, |x| law.cdf(x));
            assert!(ks < 1.95 / (n as f64).sqrt(), "{what}: KS {ks}");
        }
        // A spread given as std yields the family's shape.
        let p = GapLaw::new("pareto", m, Spread::Std(2_000.0)).unwrap();
        assert!((p.variance.sqrt() - 2_000.0).abs() < 1e-6);
        let w = GapLaw::new("weibull", m, Spread::Std(3_000.0)).unwrap();
        assert!((w.variance.sqrt() - 3_000.0).abs() < 1e-3);
    }

    #[test]
    fn a_mixture_draws_its_parts_by_weight_and_matches_its_theory() {
        // Caliper's spike-bump: a spike at 10 µs, a normal bump at 50 µs,
        // and a tail (pareto, shape 3) at 1 ms.
        let law = |d: &str, m: f64, s: Spread| GapLaw::new(d, m, s).unwrap();
        let mix = GapLaw::mixture(vec![
            (5.0, law("constant", 10_000.0, Spread::None)),
            (4.0, law("normal", 50_000.0, Spread::Std(5_000.0))),
            (1.0, law("pareto", 1_000_000.0, Spread::Shape(3.0))),
        ])
        .unwrap();
        assert_eq!(mix.name(), "mixture");
        let mean = 0.5 * 10_000.0 + 0.4 * 50_000.0 + 0.1 * 1_000_000.0;
        assert!((mix.mean - mean).abs() < 1e-6);
        let weights: Vec<f64> = mix.parts().iter().map(|(w, _)| *w).collect();
        assert!((weights[0] - 0.5).abs() < 1e-12 && (weights[2] - 0.1).abs() < 1e-12);
        let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(9);
        let mut v: Vec<f64> = (0..200_000).map(|_| mix.sample(&mut rng)).collect();
        let spike = v.iter().filter(|g| **g == 10_000.0).count() as f64 / v.len() as f64;
        assert!((spike - 0.5).abs() < 0.01, "{spike}");
        let got = v.iter().sum::<f64>() / v.len() as f64;
        assert!((got / mean - 1.0).abs() < 0.03, "{got} against {mean}");
        // KS against the weighted CDF (the spike's step taken at its top).
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let ks = v
            .iter()
            .enumerate()
            .filter(|(i, g)| v.get(i + 1) != Some(g))
            .map(|(i, g)| (mix.cdf(*g) - (i + 1) as f64 / n).abs())
            .fold(0.0, f64::max);
        assert!(ks < 0.01, "KS {ks}");
        // What a mixture may not be.
        let one = vec![(1.0, law("constant", 1_000.0, Spread::None))];
        assert!(GapLaw::mixture(one).unwrap_err().contains("at least two"));
        let zero = vec![
            (1.0, law("constant", 1_000.0, Spread::None)),
            (0.0, law("poisson", 1_000.0, Spread::None)),
        ];
        assert!(GapLaw::mixture(zero)
            .unwrap_err()
            .contains("part 1: weight"));
        let nested = vec![
            (1.0, mix.clone()),
            (1.0, law("constant", 1.0e3, Spread::None)),
        ];
        assert!(GapLaw::mixture(nested)
            .unwrap_err()
            .contains("cannot be a part"));
    }

    #[test]
    fn a_constant_law_is_its_mean_and_bad_parameters_are_refused() {
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(
            GapLaw::new("constant", 5.0, Spread::None)
                .unwrap()
                .sample(&mut rng),
            5.0
        );
        for (dist, spread, msg) in [
            ("nope", Spread::None, "unknown distribution 'nope'"),
            ("poisson", Spread::Std(1.0), "poisson takes no std"),
            ("normal", Spread::None, "normal needs std"),
            ("normal", Spread::Std(-1.0), "std must be positive"),
            ("gamma", Spread::Shape(0.0), "shape must be positive"),
            ("pareto", Spread::Shape(0.5), "shape must be above 1"),
            ("uniform", Spread::Std(1e9), "would make gaps negative"),
        ] {
            let e = GapLaw::new(dist, 100.0, spread).unwrap_err();
            assert!(e.contains(msg), "{dist}: {e}");
        }
        assert!(GapLaw::new("poisson", 0.0, Spread::None)
            .unwrap_err()
            .contains("positive"));
    }

    #[test]
    fn one_line_laws_parse_and_errors_say_what_is_wrong() {
        let p = GapLaw::parse("pareto:200ms,shape=1.5").unwrap();
        assert_eq!((p.name(), p.mean, p.shape()), ("pareto", 2e8, Some(1.5)));
        let n = GapLaw::parse("normal:10us,std=2us").unwrap();
        assert_eq!((n.mean, n.variance), (10_000.0, 4e6));
        assert_eq!(GapLaw::parse("constant:20us").unwrap().variance, 0.0);
        for (bad, says) in [
            ("pareto", "no mean"),
            ("pareto:fast", "mean"),
            ("zipf:1ms", "unknown law 'zipf'"),
            ("empirical:1ms", "unknown law"),
            ("normal:1ms,sd=1us", "neither std= nor shape="),
            ("normal:1ms,std=1us,std=2us", "once"),
            ("pareto:1ms,shape=x", "shape 'x'"),
            ("normal:1ms", "needs std"),
            ("constant:0s", "positive"),
        ] {
            let e = GapLaw::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
