//! Special functions the laws' moments and CDFs need (no crate of the
//! stack has them): Γ by Lanczos (g = 7, 9 terms, ~1e-15 relative), the
//! regularized lower incomplete gamma P(a, x) by its series or continued
//! fraction (Numerical Recipes §6.2), Φ through erfc (Chebyshev fit,
//! 1.2e-7 absolute), the one-sample KS distance (the two-sample one
//! is `sluice_core::agree::ks_two`), and e^x for x ≥ 0 without a call
//! (Pareto draws; see [`exp_nonneg`]).

const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// e^x for 0 ≤ x ≤ 700 (clamped outside), within a few ulp of `f64::exp`,
/// inlined and free of calls and branches so a batch of draws vectorises: x = k·ln 2 + r with
/// |r| ≤ ln 2 / 2 (ln 2 split in two for an exact k·ln 2), e^r by its
/// Taylor series to r¹³ (truncation below 2e-16 relative), scaled by 2^k
/// through the exponent bits. The platform's `exp` with its errno wrapper cost as much as
/// the whole of a Pareto draw's other work.
#[inline(always)]
pub fn exp_nonneg(x: f64) -> f64 {
    // fdlibm's split: LN2_HI has 32 significant bits, so k·LN2_HI is exact.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // Branch-free so a batch vectorises: x is clamped to the range (a
    // Pareto draw's x = E/α passes 700 with probability below e^−700).
    let x = x.clamp(0.0, 700.0);
    // Round to nearest for x ≥ 0 without a libm call.
    let k = (x * std::f64::consts::LOG2_E + 0.5) as i32;
    let kf = f64::from(k);
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    // Estrin's scheme: a short dependency chain, so draws overlap.
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let c = |a: f64, b: f64| a + b * r;
    let p01 = c(1.0, 1.0);
    let p23 = c(1.0 / 2.0, 1.0 / 6.0);
    let p45 = c(1.0 / 24.0, 1.0 / 120.0);
    let p67 = c(1.0 / 720.0, 1.0 / 5_040.0);
    let p89 = c(1.0 / 40_320.0, 1.0 / 362_880.0);
    let p1011 = c(1.0 / 3_628_800.0, 1.0 / 39_916_800.0);
    let p1213 = c(1.0 / 479_001_600.0, 1.0 / 6_227_020_800.0);
    let lo = (p01 + p23 * r2) + (p45 + p67 * r2) * r4;
    let hi = (p89 + p1011 * r2) + p1213 * r4;
    let e_r = lo + hi * r8;
    // 2^k: k ≤ 1010 here, a normal number.
    e_r * f64::from_bits(((k + 1023) as u64) << 52)
}

/// ln Γ(x), x > 0.
pub fn ln_gamma(x: f64) -> f64 {
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = LANCZOS[0];
    let t = x + 7.5;
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Γ(x), x > 0.
pub fn gamma_fn(x: f64) -> f64 {
    ln_gamma(x).exp()
}

/// P(a, x) = γ(a, x) / Γ(a), the gamma law's CDF at x/θ.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let ln_front = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        // Series.
        let (mut sum, mut del, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (sum.ln() + ln_front).exp().min(1.0)
    } else {
        // Continued fraction (modified Lentz) for Q = 1 − P.
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (1.0 - (ln_front.exp() * h)).max(0.0)
    }
}

/// erfc(x), fractional error below 1.2e-7 everywhere.
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Φ(z), the standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// One-sample KS distance of `sorted` (ascending) against `cdf`.
pub fn ks_one(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    let mut d = 0.0f64;
    for (i, &x) in sorted.iter().enumerate() {
        let f = cdf(x);
        d = d
            .max((f - i as f64 / n).abs())
            .max(((i + 1) as f64 / n - f).abs());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_functions_match_known_values() {
        assert!((gamma_fn(5.0) - 24.0).abs() < 1e-9);
        assert!((gamma_fn(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-12);
        assert!((normal_cdf(1.959_963_985) - 0.975).abs() < 2e-7);
        // P(1, x) = 1 − e^−x; P(a, x) at the median of chi-square(4)/2.
        assert!((gamma_p(1.0, 2.0) - (1.0 - (-2.0f64).exp())).abs() < 1e-12);
        assert!((gamma_p(2.0, 1.678_346_99) - 0.5).abs() < 1e-6);
        assert!(
            (gamma_p(30.0, 40.0) - 0.956_771_317_848).abs() < 1e-9,
            "continued fraction"
        );
        assert!((gamma_p(30.0, 20.0) - python_series(30.0, 20.0)).abs() < 1e-12);
    }

    /// The series of P(a, x), summed to convergence.
    fn python_series(a: f64, x: f64) -> f64 {
        let (mut sum, mut term, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..100_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
        }
        sum * (-x + a * x.ln() - ln_gamma(a)).exp()
    }

    #[test]
    fn ks_against_a_cdf() {
        let u: Vec<f64> = (0..1000).map(|i| (i as f64 + 0.5) / 1000.0).collect();
        assert!(ks_one(&u, |x| x) <= 0.0005 + 1e-12);
    }

    #[test]
    fn exp_nonneg_agrees_with_the_platform_within_a_few_ulp() {
        let mut worst = 0.0f64;
        for i in 0..200_000 {
            let x = i as f64 * 0.003_5 + 1e-9 * (i % 7) as f64;
            let (ours, theirs) = (exp_nonneg(x), x.exp());
            worst = worst.max(((ours - theirs) / theirs).abs());
        }
        assert!(worst < 1e-15, "worst relative error {worst:e}");
        assert_eq!(exp_nonneg(0.0), 1.0);
        assert_eq!(exp_nonneg(710.0), exp_nonneg(700.0), "clamped");
        assert!((exp_nonneg(700.0) / 700f64.exp() - 1.0).abs() < 1e-14);
    }
}
