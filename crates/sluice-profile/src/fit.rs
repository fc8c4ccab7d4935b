//! `profile fit`: each gap and size family fitted to a capture by maximum
//! likelihood, judged by the KS distance to the capture's own
//! distribution; the best of each becomes a profile.
//!
//! Gap estimators (x the gaps, n of them; families of positive support use
//! the positive gaps only):
//! - poisson: mean = x̄; normal: x̄ and the (1/n) standard deviation;
//! - uniform: [min, max], written as its mean and std;
//! - lognormal: μ, σ = mean and std of ln x;
//! - pareto: x_m = min x, α = n / Σ ln(x / x_m);
//! - weibull: k solves 1/k + mean(ln x) − Σ x^k ln x / Σ x^k = 0 (Newton,
//!   bisection fallback), λ = (mean x^k)^(1/k);
//! - gamma: k from s = ln x̄ − mean(ln x) (Minka's start, Newton steps on
//!   ln k − ψ(k) = s), θ = x̄ / k.
//!
//! Sizes: constant; uniform [min, max]; normal; and the observed frequencies
//! as a mix (the ML estimate of a discrete law, offered up to 64 distinct
//! sizes).
//!
//! The best is the smallest KS distance, except that a family of fewer
//! parameters (constant, then poisson) within half the 5 % critical value
//! of it is preferred. A fitted law is written in the profile's own terms: the rate from its
//! mean, and its shape (pareto, weibull, gamma) or std.

use super::gaps::{GapLaw, Spread};
use super::math::{ks_one, ln_gamma};
use super::sizes::SizeLaw;

/// One family's fit.
#[derive(Clone, Debug)]
pub struct GapFit {
    pub family: &'static str,
    /// Mean gap, ns (the profile's rate is 1e9 / mean).
    pub mean: f64,
    pub spread: Spread,
    /// KS distance to the capture's gaps.
    pub ks: f64,
}

#[derive(Clone, Debug)]
pub struct SizeFit {
    pub family: &'static str,
    /// The profile's `size:` value (a YAML flow mapping).
    pub yaml: String,
    pub ks: f64,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn std(v: &[f64], m: f64) -> f64 {
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
}

/// ψ(x), the digamma function (recurrence to x ≥ 6, then the asymptotic
/// series).
fn digamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 6.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    r + x.ln() - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f / 240.0)))
}

fn trigamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 6.0 {
        r += 1.0 / (x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    r + 1.0 / x + f / 2.0 + f / x * (1.0 / 6.0 - f * (1.0 / 30.0 - f / 42.0))
}

fn weibull_k(x: &[f64]) -> Option<f64> {
    let lnx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let mean_ln = mean(&lnx);
    // Scaled by the largest gap so x^k does not overflow.
    let top = x.iter().copied().fold(0.0f64, f64::max);
    let y: Vec<f64> = x.iter().map(|v| v / top).collect();
    let lny: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let g = |k: f64| {
        let (mut a, mut b) = (0.0, 0.0);
        for (v, l) in y.iter().zip(&lny) {
            let p = v.powf(k);
            a += p * l;
            b += p;
        }
        1.0 / k + (mean_ln - top.ln()) - a / b
    };
    // g decreases in k: bisection on [0.02, 200].
    let (mut lo, mut hi) = (0.02f64, 200.0f64);
    if !(g(lo) > 0.0 && g(hi) < 0.0) {
        return None;
    }
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if g(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo * hi).sqrt())
}

fn gamma_k(x: &[f64]) -> Option<f64> {
    let m = mean(x);
    let s = m.ln() - mean(&x.iter().map(|v| v.ln()).collect::<Vec<_>>());
    if !(s.is_finite() && s > 0.0) {
        return None;
    }
    let mut k = (3.0 - s + ((s - 3.0).powi(2) + 24.0 * s).sqrt()) / (12.0 * s);
    for _ in 0..50 {
        let step = (k.ln() - digamma(k) - s) / (1.0 / k - trigamma(k));
        k -= step;
        if !k.is_finite() || k <= 0.0 {
            return None;
        }
        if step.abs() < 1e-12 * k {
            break;
        }
    }
    Some(k)
}

/// Fits every gap family to `gaps` (ns), best (smallest KS) first.
pub fn fit_gaps(gaps: &[f64]) -> Result<Vec<GapFit>, String> {
    if gaps.len() < 2 {
        return Err("the capture has fewer than three packets: too few gaps to fit".into());
    }
    let m = mean(gaps);
    if m <= 0.0 {
        return Err("every gap of the capture is 0".into());
    }
    let sd = std(gaps, m);
    let pos: Vec<f64> = gaps.iter().copied().filter(|g| *g > 0.0).collect();
    let mut sorted = gaps.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut candidates: Vec<(&'static str, f64, Spread)> =
        vec![("constant", m, Spread::None), ("poisson", m, Spread::None)];
    if sd > 0.0 {
        candidates.push(("normal", m, Spread::Std(sd)));
        let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
        let um = (lo + hi) / 2.0;
        candidates.push(("uniform", um, Spread::Std((hi - lo) / 12f64.sqrt())));
    }
    if pos.len() >= 2 {
        let ln: Vec<f64> = pos.iter().map(|v| v.ln()).collect();
        let (mu, s) = (mean(&ln), std(&ln, mean(&ln)));
        if s > 0.0 {
            let lm = (mu + s * s / 2.0).exp();
            candidates.push((
                "lognormal",
                lm,
                Spread::Std(lm * ((s * s).exp() - 1.0).sqrt()),
            ));
        }
        let xm = pos.iter().copied().fold(f64::INFINITY, f64::min);
        let denom: f64 = pos.iter().map(|v| (v / xm).ln()).sum();
        if denom > 0.0 {
            let a = pos.len() as f64 / denom;
            if a > 1.0 {
                candidates.push(("pareto", a * xm / (a - 1.0), Spread::Shape(a)));
            }
        }
        if let Some(k) = weibull_k(&pos) {
            let lambda = (mean(&pos.iter().map(|v| v.powf(k)).collect::<Vec<_>>())).powf(1.0 / k);
            candidates.push((
                "weibull",
                lambda * ln_gamma(1.0 + 1.0 / k).exp(),
                Spread::Shape(k),
            ));
        }
        if let Some(k) = gamma_k(&pos) {
            candidates.push(("gamma", mean(&pos), Spread::Shape(k)));
        }
    }
    let mut fits: Vec<GapFit> = candidates
        .into_iter()
        .filter_map(|(family, mean, spread)| {
            let law = GapLaw::new(family, mean, spread).ok()?;
            Some(GapFit {
                family,
                mean,
                spread,
                ks: ks_one(&sorted, |x| law.cdf(x)),
            })
        })
        .collect();
    fits.sort_by(|a, b| a.ks.total_cmp(&b.ks));
    // A simpler family within half the 5 % KS critical value of the best
    // is preferred: a two-parameter law always fits a little better.
    let slack = 0.5 * 1.36 / (gaps.len() as f64).sqrt();
    let best = fits.first().map_or(0.0, |f| f.ks);
    let params = |f: &GapFit| match f.family {
        "constant" => 0,
        "poisson" => 1,
        _ => 2,
    };
    if let Some(i) = (0..fits.len())
        .filter(|&i| fits[i].ks <= best + slack)
        .min_by_key(|&i| (params(&fits[i]), i))
    {
        let chosen = fits.remove(i);
        fits.insert(0, chosen);
    }
    Ok(fits)
}

/// Fits the size families to `sizes` (bytes), best first.
pub fn fit_sizes(sizes: &[u16], least: u16) -> Result<Vec<SizeFit>, String> {
    if sizes.is_empty() {
        return Err("the capture has no packets".into());
    }
    let v: Vec<f64> = sizes.iter().map(|s| f64::from(*s)).collect();
    let m = mean(&v);
    let sd = std(&v, m);
    let lo = *sizes.iter().min().expect("not empty");
    let hi = *sizes.iter().max().expect("not empty");
    let mut counts = std::collections::BTreeMap::<u16, u64>::new();
    for s in sizes {
        *counts.entry(*s).or_default() += 1;
    }
    let mut laws: Vec<(&'static str, SizeLaw, String)> = Vec::new();
    if lo == hi {
        laws.push((
            "constant",
            SizeLaw::constant(lo),
            format!("{{dist: constant, bytes: {lo}}}"),
        ));
    } else {
        laws.push((
            "uniform",
            SizeLaw::uniform(lo, hi)?,
            format!("{{dist: uniform, min: {lo}, max: {hi}}}"),
        ));
        if let Ok(n) = SizeLaw::normal(m.max(f64::from(least)), sd, least) {
            laws.push((
                "normal",
                n,
                format!("{{dist: normal, mean: {m:.3}, std: {sd:.3}}}"),
            ));
        }
        if counts.len() <= 64 {
            let values: Vec<(u16, f64)> = counts.iter().map(|(s, c)| (*s, *c as f64)).collect();
            let text: Vec<String> = values.iter().map(|(s, c)| format!("[{s}, {c}]")).collect();
            laws.push((
                "mix",
                SizeLaw::mix(&values)?,
                format!("{{dist: mix, values: [{}]}}", text.join(", ")),
            ));
        }
    }
    let n = sizes.len() as f64;
    let mut fits: Vec<SizeFit> = laws
        .into_iter()
        .map(|(family, law, yaml)| {
            // Discrete KS: at every size seen.
            let (mut below, mut ks) = (0u64, 0.0f64);
            for (s, c) in &counts {
                below += c;
                ks = ks.max((below as f64 / n - law.cdf(f64::from(*s))).abs());
            }
            SizeFit { family, yaml, ks }
        })
        .collect();
    fits.sort_by(|a, b| a.ks.total_cmp(&b.ks));
    Ok(fits)
}

impl GapFit {
    /// The profile's `ipd:` value.
    pub fn yaml(&self) -> String {
        match self.spread {
            Spread::None => format!("{{dist: {}}}", self.family),
            Spread::Shape(k) => format!("{{dist: {}, shape: {k:.6}}}", self.family),
            Spread::Std(s) => format!("{{dist: {}, cv: {:.6}}}", self.family, s / self.mean),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    /// Gaps drawn from each family are fitted best by that family, with
    /// its parameters within a few percent.
    #[test]
    fn each_family_is_recognised_from_its_own_draws() {
        let cases = [
            ("poisson", Spread::None),
            ("normal", Spread::Std(1_000.0)),
            ("lognormal", Spread::Std(8_000.0)),
            ("pareto", Spread::Shape(2.5)),
            ("weibull", Spread::Shape(0.7)),
            ("gamma", Spread::Shape(4.0)),
        ];
        for (family, spread) in cases {
            let law = GapLaw::new(family, 10_000.0, spread).unwrap();
            let mut rng = SmallRng::seed_from_u64(3);
            let gaps: Vec<f64> = (0..50_000).map(|_| law.sample(&mut rng)).collect();
            let fits = fit_gaps(&gaps).unwrap();
            assert_eq!(fits[0].family, family, "{fits:?}");
            assert!(
                (fits[0].mean - 10_000.0).abs() < 300.0,
                "{family}: {fits:?}"
            );
            if let (Spread::Shape(want), Spread::Shape(got)) = (spread, fits[0].spread) {
                assert!((got - want).abs() < 0.05 * want, "{family}: shape {got}");
            }
            assert!(fits[0].ks < 0.01, "{family}: {}", fits[0].ks);
        }
    }

    #[test]
    fn a_mix_of_sizes_is_fitted_as_a_mix() {
        let law = SizeLaw::imix();
        let mut rng = SmallRng::seed_from_u64(1);
        let sizes: Vec<u16> = (0..20_000).map(|_| law.sample(&mut rng)).collect();
        let fits = fit_sizes(&sizes, 42).unwrap();
        assert_eq!(fits[0].family, "mix");
        assert!(fits[0].ks < 1e-12);
        assert_eq!(fit_sizes(&[64, 64], 42).unwrap()[0].family, "constant");
    }
}
