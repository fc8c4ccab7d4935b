//! How closely two series or two samples agree: Pearson's r and the
//! two-sample Kolmogorov–Smirnov distance, as `bench/ratejudge.py` defines
//! them (the profile spectrum and `analyze --target` both use these).

/// Pearson's r over the first min(len) values; NaN for fewer than two or
/// when either side is constant.
pub fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n < 2 {
        return f64::NAN;
    }
    let (a, b) = (&a[..n], &b[..n]);
    let ma = a.iter().sum::<f64>() / n as f64;
    let mb = b.iter().sum::<f64>() / n as f64;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    if saa > 0.0 && sbb > 0.0 {
        sab / (saa * sbb).sqrt()
    } else {
        f64::NAN
    }
}

/// Two-sample KS distance of two ascending samples; NaN when either is
/// empty.
pub fn ks_two(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let v = a[i].min(b[j]);
        while i < a.len() && a[i] <= v {
            i += 1;
        }
        while j < b.len() && b[j] <= v {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_distances() {
        assert_eq!(ks_two(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert_eq!(ks_two(&[1.0, 2.0], &[3.0, 4.0]), 1.0);
        assert!(ks_two(&[], &[1.0]).is_nan());
    }

    #[test]
    fn pearson_of_lines_and_constants() {
        assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]) - 1.0).abs() < 1e-12);
        assert!((pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert!(pearson(&[1.0, 1.0], &[1.0, 2.0]).is_nan());
        assert!(pearson(&[1.0], &[1.0]).is_nan());
    }
}
