//! SVG charts for the HTML report, drawn with plotters into strings that
//! the page inlines (it needs no network and no script to be read).

use anyhow::{anyhow, Result};
use plotters::prelude::*;

const SIZE: (u32, u32) = (900, 340);
const COLORS: [RGBColor; 4] = [BLUE, RED, RGBColor(0, 140, 0), RGBColor(120, 60, 160)];

/// One named line of (x, y) points.
pub struct Line<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

fn span(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let lo = lo.min(0.0);
        (lo, if hi > lo { hi * 1.05 } else { lo + 1.0 })
    }
}

/// Lines over a shared x axis; `log_y` draws the y axis in decades.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Line<'_>],
    log_y: bool,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let (x0, x1) = span(
            series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
            false,
        );
        let (y0, y1) = span(
            series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
            log_y,
        );
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70);
        macro_rules! draw {
            ($c:expr) => {{
                let mut c = $c;
                c.configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .draw()
                    .map_err(|e| anyhow!("{e}"))?;
                for (i, s) in series.iter().enumerate() {
                    let color = COLORS[i % COLORS.len()];
                    let pts = s.points.iter().copied().filter(|p| !log_y || p.1 > 0.0);
                    c.draw_series(LineSeries::new(pts, color.stroke_width(2)))
                        .map_err(|e| anyhow!("{e}"))?
                        .label(s.name)
                        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
                }
                c.configure_series_labels()
                    .border_style(BLACK)
                    .background_style(WHITE.mix(0.8))
                    .draw()
                    .map_err(|e| anyhow!("{e}"))?;
            }};
        }
        if log_y {
            draw!(b
                .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                .map_err(|e| anyhow!("{e}"))?);
        } else {
            draw!(b
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| anyhow!("{e}"))?);
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// A histogram of `values` in `bins` equal bins from 0 to `hi`; what lies
/// above `hi` is counted in the last bin's note, not drawn.
pub fn histogram(
    title: &str,
    x_desc: &str,
    values: &[f64],
    hi: f64,
    bins: usize,
) -> Result<String> {
    let hi = if hi > 0.0 { hi } else { 1.0 };
    let width = hi / bins as f64;
    let mut counts = vec![0u64; bins];
    let mut above = 0u64;
    for &v in values {
        if v > hi {
            above += 1;
        } else {
            counts[((v / width) as usize).min(bins - 1)] += 1;
        }
    }
    let total = values.len().max(1) as f64;
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64 / total * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let caption = if above > 0 {
            format!("{title} ({above} values above {hi:.0} not shown)")
        } else {
            title.to_string()
        };
        let mut c = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..hi, 0.0..top)
            .map_err(|e| anyhow!("{e}"))?;
        c.configure_mesh()
            .x_desc(x_desc)
            .y_desc("share")
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        c.draw_series(counts.iter().enumerate().map(|(i, &n)| {
            let x = i as f64 * width;
            Rectangle::new(
                [(x, 0.0), (x + width, n as f64 / total)],
                BLUE.mix(0.6).filled(),
            )
        }))
        .map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// The empirical CDF of `sorted` (ascending), at most 2 000 points.
pub fn cdf(title: &str, x_desc: &str, sorted: &[f64]) -> Result<String> {
    let n = sorted.len().max(1);
    let step = (n / 2000).max(1);
    let points: Vec<(f64, f64)> = sorted
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || *i + 1 == n)
        .map(|(i, &v)| (v, (i + 1) as f64 / n as f64))
        .collect();
    lines(
        title,
        x_desc,
        "share ≤ x",
        &[Line {
            name: "CDF",
            points,
        }],
        false,
    )
}
