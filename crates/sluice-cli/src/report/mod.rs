//! `sluice report`: one self-contained HTML page (inline SVG charts, no
//! script, nothing fetched) from a run's `--stats-json` lines or from a
//! capture (optionally judged against the trace that was sent).

mod charts;
mod lines;
mod rfc2544;
mod summary;

use crate::args::ReportArgs;
use crate::dest::{check, Dest};
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use charts::Line;
use serde_json::Value;
use sluice_pace::TimingMode;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

pub fn run(a: ReportArgs) -> Result<u8, Failure> {
    let mut inputs = vec![a.input.as_path()];
    if let Some(r) = &a.reference {
        inputs.push(r);
    }
    check(&inputs, &[&a.output])?;
    let dest = Dest::open(&a.output)?;
    let title = a
        .title
        .clone()
        .unwrap_or_else(|| format!("sluice report: {}", a.input.display()));
    let body = if is_stats(&a.input)? {
        if a.reference.is_some() {
            return Err(bad_input(anyhow!(
                "--reference: only with a capture, not with --stats-json lines"
            )));
        }
        stats_report(&a.input)?
    } else {
        capture_report(&a)?
    };
    let mut dest = dest;
    write!(dest, "{}", page(&title, &body)).context("writing the report")?;
    dest.commit()
        .with_context(|| format!("{}: writing the report", a.output))?;
    if a.output != "-" {
        eoutln!("sluice: report written to {}", a.output);
    }
    Ok(exit::OK)
}

/// `--stats-json` lines start with `{`; captures are binary.
fn is_stats(path: &Path) -> Result<bool, Failure> {
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
    Ok(head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{'))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>{t}</title><style>\
body{{font-family:sans-serif;margin:2em;max-width:960px}}\
table{{border-collapse:collapse;margin:1em 0}}\
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
th{{background:#eee}} td:first-child,th:first-child{{text-align:left}}\
figure{{margin:1em 0}} figcaption{{color:#555;font-size:90%}}\
</style></head><body>\n<h1>{t}</h1>\n{body}\n\
<p style=\"color:#888\">sluice {v}</p></body></html>\n",
        t = esc(title),
        v = esc(crate::args::VERSION),
    )
}

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>\n");
    s
}

/// `v` times `scale` with `d` decimals, or a dash.
fn fixed(v: Option<f64>, scale: f64, d: usize) -> String {
    v.map_or("–".into(), |x| format!("{:.*}", d, x * scale))
}

/// `doc` (at key `at` of `whence`: a file, or a line of one) read as a
/// `T`, or bad input naming `whence` and the key.
fn typed<T: serde::de::DeserializeOwned>(
    whence: &str,
    at: &str,
    doc: &Value,
) -> Result<T, Failure> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let key = e.path().to_string();
        let key = match (at, key.as_str()) {
            ("", k) => k.to_string(),
            (a, ".") => a.to_string(),
            (a, k) => format!("{a}.{k}"),
        };
        bad_input(anyhow!("{whence}: {key}: {}", e.inner()))
    })
}

fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure class=\"chart\">{svg}<figcaption>{}</figcaption></figure>\n",
        esc(caption)
    )
}

/// A section's heading: `title` for the run itself, or for one worker of
/// `control run` its name and port before it.
fn heading(who: &str, title: &str) -> String {
    if who.is_empty() {
        format!("<h2>{title}</h2>\n")
    } else {
        format!("<h2>{}: {}</h2>\n", esc(who), title.to_lowercase())
    }
}

/// Every file a run writes: `--stats-json` lines (a sender's, with its
/// receiver's lines mixed in; `sluice rx`'s; `control run`'s, worker by
/// worker), a `--summary-json` document (a sending command's, `sluice
/// rx`'s, `control run`'s) or `rfc2544 --json`: each read with the type
/// that wrote it.
fn stats_report(path: &Path) -> Result<String, Failure> {
    use crate::json::Kind;
    let text = sluice_source::text::read_bounded(path, 1 << 30)
        .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
    // One document: a summary or `rfc2544 --json` (pretty-printed; a
    // one-line statistics file is read as lines below).
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let schema = v["schema"].as_str().unwrap_or_default();
        if schema == Kind::Rfc2544.tag() {
            return rfc2544::report(path, &v);
        }
        if schema == Kind::Summary.tag() {
            return summary::report(path, &v);
        }
        if schema == Kind::ControlSummary.tag() {
            return summary::control(path, &v);
        }
        if schema == Kind::Rx.tag() && v["final"] == true {
            let doc = typed(&path.display().to_string(), "", &v)?;
            return lines::rx_report(std::slice::from_ref(&doc), "");
        }
    }
    lines::report(path, &text)
}

/// Rate over time, inter-arrival times and, with a reference, the
/// comparison; the busiest flows.
fn capture_report(a: &ReportArgs) -> Result<String, Failure> {
    let timing = a
        .timing
        .mode()
        .map_err(|e| bad_input(anyhow!(e)))?
        .unwrap_or(TimingMode::Recorded { multiplier: 1.0 });
    let opts = sluice_analyze::Options {
        timing,
        ..Default::default()
    };
    let rep =
        sluice_analyze::analyze_with(&a.input, a.reference.as_deref(), &opts).map_err(bad_input)?;
    let cap = sluice_analyze::judge::Packets::read(&a.input).map_err(crate::bad_input)?;
    let s = &rep.stats;
    let mut out = String::from("<h2>Capture</h2>\n");
    out += &table(
        &["figure", "value"],
        &[
            vec!["packets".into(), s.packets.to_string()],
            vec!["frame bytes".into(), s.bytes.to_string()],
            vec!["seconds".into(), format!("{:.6}", s.duration_s)],
            vec!["packets/s".into(), format!("{:.1}", s.pps)],
            vec!["Mbit/s".into(), format!("{:.3}", s.bps / 1e6)],
        ],
    );
    if cap.times.len() >= 2 {
        let first = cap.times[0];
        let span = cap.times[cap.times.len() - 1].saturating_sub(first).max(1) as f64;
        let bins = 200usize;
        let width = span / bins as f64;
        let mut count = vec![0u64; bins];
        for &t in &cap.times {
            count[(((t - first) as f64 / width) as usize).min(bins - 1)] += 1;
        }
        let points = count
            .iter()
            .enumerate()
            .map(|(i, &n)| ((i as f64 + 0.5) * width / 1e9, n as f64 / (width / 1e9)))
            .collect();
        let svg = charts::lines(
            "packet rate",
            "s since the first packet",
            "packets/s",
            &[Line {
                name: "pps",
                points,
            }],
            false,
        )?;
        out += &figure(
            &svg,
            &format!("Packets per {:.3} ms bin, as a rate.", width / 1e6),
        );
        let mut iat: Vec<f64> = cap
            .times
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]) as f64 / 1e3)
            .collect();
        iat.sort_by(f64::total_cmp);
        let hi = iat[(iat.len() * 99 / 100).min(iat.len() - 1)];
        out += &figure(
            &charts::histogram("inter-arrival times", "µs", &iat, hi, 60)?,
            "Gaps between consecutive frames up to their p99.",
        );
        out += &figure(
            &charts::cdf("inter-arrival CDF", "µs", &iat)?,
            "Share of gaps at most x.",
        );
    }
    if let Some(c) = &rep.comparison {
        out += "<h2>Against the reference</h2>\n";
        out += &table(
            &["figure", "value"],
            &[
                vec!["expected".into(), c.expected.to_string()],
                vec!["received".into(), c.received.to_string()],
                vec!["lost".into(), c.lost.to_string()],
                vec!["duplicates".into(), c.duplicates.to_string()],
                vec!["foreign".into(), c.foreign.to_string()],
                vec!["reordered".into(), c.reordered.to_string()],
                vec!["rate error %".into(), format!("{:.4}", c.rate_err_pct)],
            ],
        );
        if let Some(g) = &c.gap_err {
            let pts = [
                (50.0, g.percentiles.p50_ns),
                (90.0, g.percentiles.p90_ns),
                (99.0, g.percentiles.p99_ns),
                (99.9, g.percentiles.p999_ns),
                (100.0, g.percentiles.max_ns),
            ];
            let svg = charts::lines(
                "|D_M − D_R| percentiles",
                "percentile",
                "ns (log)",
                &[Line {
                    name: "|D_M − D_R|",
                    points: pts.iter().map(|&(p, v)| (p, v.max(1) as f64)).collect(),
                }],
                true,
            )?;
            out += &figure(
                &svg,
                "Inter-arrival error of consecutive reference packets: measured minus requested gap.",
            );
        }
    }
    let flows = sluice_analyze::collect_flows(&a.input, sluice_analyze::Timeouts::default())
        .map_err(bad_input)?;
    let mut flows: Vec<_> = flows.into_iter().collect();
    flows.sort_by_key(|f| std::cmp::Reverse(f.bytes));
    if flows.is_empty() {
        return Ok(out);
    }
    let shown = flows.len().min(20);
    out += &format!(
        "<h2>Flows</h2>\n<p>{} flows (7-tuple, as a flow collector counts them); the {shown} largest by bytes:</p>\n",
        flows.len()
    );
    let rows: Vec<Vec<String>> = flows
        .iter()
        .take(shown)
        .map(|f| {
            vec![
                format!("{}:{}", f.key.src, f.key.sport),
                format!("{}:{}", f.key.dst, f.key.dport),
                f.key.proto.to_string(),
                f.packets.to_string(),
                f.bytes.to_string(),
                format!("{:.6}", (f.last_ns - f.first_ns) as f64 / 1e9),
            ]
        })
        .collect();
    out += &table(
        &[
            "source",
            "destination",
            "proto",
            "packets",
            "IP bytes",
            "seconds",
        ],
        &rows,
    );
    Ok(out)
}
