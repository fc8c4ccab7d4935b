//! `analyze --plot`, as SVGs drawn with plotters: with `--target`, target
//! and generated packet-rate histograms and CDFs side by side (the
//! distributed-generator paper's Figures 9–14); with `--gap`/`--gaps`, the
//! requested and measured inter-departure CDFs overlaid (Caliper's Figures
//! 5, 6, 8 and 10).

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use sluice_analyze::judge::Judgement;
use std::path::Path;

/// Draws `j`'s rate histograms (left) and CDFs of per-bin counts (right)
/// into an SVG file at `path` (written whole, then renamed into place).
pub fn rate_plot(j: &Judgement, path: &Path, title: &str) -> Result<()> {
    let (ht, hg, width) = &j.histograms;
    let (t, g) = &j.series;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let root = root
            .titled(title, ("sans-serif", 18))
            .map_err(|e| anyhow!("{e}"))?;
        let (left, right) = root.split_horizontally(600);
        let buckets = ht.len().max(1);
        let top = ht
            .iter()
            .chain(hg)
            .copied()
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.1;
        let x_max = (buckets * width) as f64;
        let mut c = ChartBuilder::on(&left)
            .caption("packet-rate histogram", ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..x_max, 0.0..top)
            .map_err(|e| anyhow!("{e}"))?;
        c.configure_mesh()
            .x_desc(format!("packets per {} µs bin", j.sample_us))
            .y_desc("share of bins")
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        for (h, color, name) in [(ht, BLUE, "target"), (hg, RED, "generated")] {
            let points = h.iter().enumerate().flat_map(|(i, p)| {
                let x0 = (i * width) as f64;
                [(x0, *p), (x0 + *width as f64, *p)]
            });
            c.draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| anyhow!("{e}"))?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
        }
        c.configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| anyhow!("{e}"))?;

        let cdf = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            let n = s.len() as f64;
            s.into_iter()
                .enumerate()
                .map(move |(i, x)| (x, (i + 1) as f64 / n))
                .collect::<Vec<_>>()
        };
        let hi = t.iter().chain(g).copied().fold(0.0f64, f64::max).max(1.0);
        let mut c = ChartBuilder::on(&right)
            .caption("CDF of per-bin counts", ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..hi * 1.05, 0.0..1.0)
            .map_err(|e| anyhow!("{e}"))?;
        c.configure_mesh()
            .x_desc(format!("packets per {} µs bin", j.sample_us))
            .y_desc("cumulative share")
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        for (v, color, name) in [(t, BLUE, "target"), (g, RED, "generated")] {
            c.draw_series(LineSeries::new(cdf(v), color.stroke_width(2)))
                .map_err(|e| anyhow!("{e}"))?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    let mut out = crate::dest::Dest::open(&path.to_string_lossy()).map_err(|f| f.error)?;
    std::io::Write::write_all(&mut out, svg.as_bytes())?;
    out.commit()?;
    Ok(())
}

/// Draws the CDFs of `c`'s requested and measured gaps, overlaid, into an
/// SVG file at `path` (written whole, then renamed into place). The x axis
/// is logarithmic when the gaps span more than two decades, and stops at
/// the larger p99.9 (a heavy tail would squeeze the rest).
pub fn gap_cdf_plot(c: &sluice_analyze::pacing::Compared, path: &Path, title: &str) -> Result<()> {
    let sorted = |v: &[u64]| {
        let mut s: Vec<f64> = v.iter().map(|&x| x as f64 / 1e3).collect();
        s.sort_by(f64::total_cmp);
        s
    };
    let (req, meas) = (sorted(&c.requested), sorted(&c.measured));
    if req.is_empty() || meas.is_empty() {
        return Err(anyhow!("no gap to draw"));
    }
    let q = |s: &[f64], p: f64| s[((s.len() - 1) as f64 * p) as usize];
    let hi = q(&req, 0.999).max(q(&meas, 0.999)).max(1e-3) * 1.05;
    let lo = q(&req, 0.0).min(q(&meas, 0.0)).max(1e-3);
    // At most 2000 points a curve: every step where it is dense.
    let curve = |s: &[f64]| {
        let n = s.len();
        let step = (n / 2000).max(1);
        (0..n)
            .step_by(step)
            .chain(std::iter::once(n - 1))
            .map(|i| (s[i].max(lo), (i + 1) as f64 / n as f64))
            .filter(|(x, _)| *x <= hi)
            .collect::<Vec<_>>()
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let root = root
            .titled(title, ("sans-serif", 16))
            .map_err(|e| anyhow!("{e}"))?;
        let mut b = ChartBuilder::on(&root);
        b.margin(15).x_label_area_size(45).y_label_area_size(55);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut ch = $chart.map_err(|e| anyhow!("{e}"))?;
                ch.configure_mesh()
                    .x_desc("gap between departures, µs")
                    .y_desc("cumulative share")
                    .draw()
                    .map_err(|e| anyhow!("{e}"))?;
                for (v, color, name) in [(&req, BLUE, "requested"), (&meas, RED, "measured")] {
                    ch.draw_series(LineSeries::new(curve(v), color.stroke_width(2)))
                        .map_err(|e| anyhow!("{e}"))?
                        .label(name)
                        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
                }
                ch.configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .border_style(BLACK)
                    .background_style(WHITE.mix(0.8))
                    .draw()
                    .map_err(|e| anyhow!("{e}"))?;
            }};
        }
        if hi / lo > 100.0 {
            draw!(b.build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0));
        } else {
            draw!(b.build_cartesian_2d(lo * 0.95..hi, 0.0..1.0));
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    let mut out = crate::dest::Dest::open(&path.to_string_lossy()).map_err(|f| f.error)?;
    std::io::Write::write_all(&mut out, svg.as_bytes())?;
    out.commit()?;
    Ok(())
}
