//! `sluice report`: one self-contained HTML page (inline SVG charts, no
//! script, nothing fetched) from a run's `--stats-json` lines or from a
//! capture (optionally judged against the trace that was sent).

mod charts;
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

fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure class=\"chart\">{svg}<figcaption>{}</figcaption></figure>\n",
        esc(caption)
    )
}

fn num(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// What one sender (or one worker of `control run`) wrote to
/// `--stats-json`: its interval lines, pass lines and, with a receiver,
/// what the receiver counted.
#[derive(Default)]
struct Lines {
    rows: Vec<Value>,
    passes: Vec<Value>,
    received: Vec<Value>,
}

impl Lines {
    fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.passes.is_empty() && self.received.is_empty()
    }

    /// Files one line by its kind; false for a line of no kind it holds.
    fn take(&mut self, v: Value) -> bool {
        use crate::json::Kind;
        let schema = v.get("schema").and_then(Value::as_str);
        if schema == Some(Kind::Pass.tag()) && num(&v, "pass").is_some() {
            self.passes.push(v);
        } else if schema == Some(Kind::Rx.tag()) && v.get("streams").is_some() {
            self.received.push(v);
        } else if schema == Some(Kind::Interval.tag()) && num(&v, "t").is_some() {
            self.rows.push(v);
        } else {
            return false;
        }
        true
    }
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
/// rx`'s, `control run`'s) or `rfc2544 --json`.
fn stats_report(path: &Path) -> Result<String, Failure> {
    use crate::json::Kind;
    let text = sluice_source::text::read_bounded(path, 1 << 30)
        .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
    // One document: a summary or `rfc2544 --json` (pretty-printed; a
    // one-line statistics file is read as lines below).
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let schema = v["schema"].as_str().unwrap_or_default();
        if schema == Kind::Rfc2544.tag() {
            return rfc2544::report(path, &text);
        }
        if schema == Kind::Summary.tag() {
            return summary::report(path, &v);
        }
        if schema == Kind::ControlSummary.tag() {
            return summary::control(path, &v);
        }
        if schema == Kind::Rx.tag() && v.get("streams").is_some() {
            return rx_report(std::slice::from_ref(&v), "");
        }
    }
    let mut own = Lines::default();
    // `control run --stats-json`: each worker's lines, by port.
    let mut workers: std::collections::BTreeMap<(u64, String), Lines> = Default::default();
    let mut clocks: std::collections::BTreeMap<(u64, String), Vec<Value>> = Default::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| bad_input(anyhow!("{}: line {}: {e}", path.display(), i + 1)))?;
        let schema = v.get("schema").and_then(Value::as_str);
        let worker = || {
            (
                v["port"].as_u64().unwrap_or(0),
                v["worker"].as_str().unwrap_or("?").to_string(),
            )
        };
        let filed = if schema == Some(Kind::ControlInterval.tag()) {
            workers
                .entry(worker())
                .or_default()
                .take(v["stats"].clone())
        } else if schema == Some(Kind::ControlClock.tag()) && v["check"].is_object() {
            clocks.entry(worker()).or_default().push(v["check"].clone());
            true
        } else {
            own.take(v)
        };
        if !filed {
            return Err(bad_input(anyhow!(
                "{}: line {}: not a --stats-json line (\"schema\": \"{}\", \"{}\" or \"{}\" expected)",
                path.display(),
                i + 1,
                Kind::Interval.tag(),
                Kind::Rx.tag(),
                Kind::ControlInterval.tag()
            )));
        }
    }
    if own.is_empty() && workers.is_empty() && clocks.is_empty() {
        return Err(bad_input(anyhow!(
            "{}: no --stats-json lines",
            path.display()
        )));
    }
    let mut out = String::new();
    if !own.is_empty() {
        out += &lines_report(&own, "")?;
    }
    let mut names: Vec<&(u64, String)> = workers.keys().chain(clocks.keys()).collect();
    names.sort();
    names.dedup();
    for key in names {
        let who = format!("{} (port {})", key.1, key.0);
        if let Some(l) = workers.get(key).filter(|l| !l.is_empty()) {
            out += &lines_report(l, &who)?;
        }
        if let Some(c) = clocks.get(key) {
            out += &heading(&who, "Clock checks");
            let f = |v: &Value, k: &str| v[k].as_i64().map_or("–".into(), |x| x.to_string());
            let rows: Vec<Vec<String>> = c
                .iter()
                .map(|v| {
                    vec![
                        num(v, "t").map_or("–".into(), |t| format!("{t:.3}")),
                        f(v, "offset_ns"),
                        f(v, "uncertainty_ns"),
                        f(v, "drift_ns"),
                    ]
                })
                .collect();
            out += &table(
                &["s since the start", "offset ns", "± ns", "drift ns"],
                &rows,
            );
        }
    }
    Ok(out)
}

/// One sender's lines: its run (rate, ε), its passes, and what its
/// receiver counted; under `who`'s name for a worker of `control run`.
fn lines_report(l: &Lines, who: &str) -> Result<String, Failure> {
    let mut out = String::new();
    let rows = &l.rows;
    let passes = &l.passes;
    if rows.is_empty() {
        // A run shorter than its first interval line: its passes alone.
        if !passes.is_empty() {
            out += &heading(who, "Passes");
            out += &pass_table(passes);
        }
        if !l.received.is_empty() {
            out += &rx_report(&l.received, who)?;
        }
        return Ok(out);
    }
    let t = |v: &Value| num(v, "t").unwrap_or(0.0);
    let series = |k: &str, scale: f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|v| num(v, k).map(|y| (t(v), y * scale)))
            .collect()
    };
    let eps = |k: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|v| {
                v.get("eps")
                    .and_then(|e| e.get("percentiles"))
                    .and_then(|e| num(e, k))
                    .map(|y| (t(v), y / 1e3))
            })
            .collect()
    };
    let last = rows.last().expect("one line at least");
    out += &heading(who, "Run");
    let f = |k: &str| num(last, k).map_or("–".into(), |x| format!("{x:.0}"));
    out += &table(
        &["figure", "value"],
        &[
            vec!["seconds".into(), format!("{:.3}", t(last))],
            vec!["packets".into(), f("packets")],
            vec!["frame bytes".into(), f("frame_bytes")],
            vec!["late".into(), f("late")],
            vec!["dropped (time violations)".into(), f("dropped")],
        ],
    );
    let rate = charts::lines(
        "packet rate",
        "s since the start",
        "packets/s",
        &[Line {
            name: "pps",
            points: series("pps", 1.0),
        }],
        false,
    )?;
    out += &figure(&rate, "Packets per second in each reporting interval.");
    let bits = charts::lines(
        "bit rate",
        "s since the start",
        "Mbit/s",
        &[Line {
            name: "Mbit/s",
            points: series("bps", 1e-6),
        }],
        false,
    )?;
    out += &figure(&bits, "Frame bits per second in each interval.");
    let e = [("p50", "p50_ns"), ("p99", "p99_ns"), ("max", "max_ns")];
    let lines: Vec<Line<'_>> = e
        .iter()
        .map(|(name, k)| Line {
            name,
            points: eps(k),
        })
        .collect();
    if lines.iter().any(|l| !l.points.is_empty()) {
        let svg = charts::lines(
            "send-time error ε",
            "s since the start",
            "µs (log)",
            &lines,
            true,
        )?;
        out += &figure(
            &svg,
            "ε = actual − scheduled send time, per interval (p50, p99, max); a rising p99 is the machine falling behind.",
        );
        let mut p99: Vec<f64> = eps("p99_ns").iter().map(|p| p.1).collect();
        p99.sort_by(f64::total_cmp);
        let hi = p99.last().copied().unwrap_or(1.0);
        out += &figure(
            &charts::histogram("ε p99 per interval", "µs", &p99, hi, 40)?,
            "How the intervals' ε p99 is spread: one mode near zero is a steady run.",
        );
    } else {
        out += "<p>No ε in these lines (top speed, or nothing sent).</p>\n";
    }
    if !passes.is_empty() {
        out += &heading(who, "Passes");
        out += &pass_table(passes);
    }
    if !l.received.is_empty() {
        out += &rx_report(&l.received, who)?;
    }
    Ok(out)
}

/// `sluice rx` lines (and its summary): per stream, one-way latency over
/// time and how its intervals' p99 is spread, loss over time, and the
/// counts of the receiver's summary (its final line): the counts of the
/// last line only when the file has no final one, and then said so.
fn rx_report(lines: &[Value], who: &str) -> Result<String, Failure> {
    let t = |v: &Value| num(v, "t").unwrap_or(0.0);
    let last = lines
        .iter()
        .rev()
        .find(|v| v["final"] == true)
        .or(lines.last())
        .expect("one line at least");
    let streams = |v: &Value| v["streams"].as_array().cloned().unwrap_or_default();
    let ids: Vec<u64> = streams(last)
        .iter()
        .filter_map(|s| s["stream"].as_u64())
        .collect();
    let mut out = heading(who, "Received");
    let _ = writeln!(
        out,
        "<p>{} stamped frames received on {} in {:.3} s ({} other frames, {} dropped by the kernel; {} receive times).</p>",
        last["frames"],
        esc(last["iface"].as_str().unwrap_or("?")),
        t(last),
        last["unstamped"],
        last["kernel_drops"],
        esc(last["stamps"].as_str().unwrap_or("?"))
    );
    if last["final"] != true {
        let _ = writeln!(
            out,
            "<p><strong>Not the final count</strong>: these are the counts of the last line, {:.3} s \
             after the receiver started; what arrived after it is not in this file.</p>",
            t(last)
        );
    }
    let f = |v: &Value, k: &str| num(v, k).map_or("–".into(), |x| format!("{x:.0}"));
    let us = |v: &Value, k: &str| {
        v["latency"]["percentiles"][k]
            .as_f64()
            .map_or("–".into(), |x| format!("{:.1}", x / 1e3))
    };
    let rows: Vec<Vec<String>> = streams(last)
        .iter()
        .map(|s| {
            vec![
                f(s, "stream"),
                f(s, "received"),
                f(s, "lost"),
                f(s, "duplicates"),
                f(s, "reordered"),
                us(s, "p50_ns"),
                us(s, "p99_ns"),
                us(s, "max_ns"),
                num(s, "jitter_ns").map_or("–".into(), |j| format!("{:.1}", j / 1e3)),
            ]
        })
        .collect();
    out += &table(
        &[
            "stream",
            "received",
            "lost",
            "duplicated",
            "reordered",
            "latency p50 µs",
            "p99 µs",
            "max µs",
            "jitter µs",
        ],
        &rows,
    );
    out += &rx_charts(lines, &ids)?;
    Ok(out)
}

/// Per stream over time: the latency of each second (and how its p99 is
/// spread), and the frames lost so far.
fn rx_charts(lines: &[Value], ids: &[u64]) -> Result<String, Failure> {
    let t = |v: &Value| num(v, "t").unwrap_or(0.0);
    let streams = |v: &Value| v["streams"].as_array().cloned().unwrap_or_default();
    let mut out = String::new();
    // Interval latency of each stream over time (the summary, a line
    // after the last interval, is left out of the time axis).
    let timed: Vec<&Value> = lines.iter().filter(|v| v["final"] != true).collect();
    let of = |id: u64, k: &str| -> Vec<(f64, f64)> {
        timed
            .iter()
            .filter_map(|v| {
                let s = streams(v)
                    .into_iter()
                    .find(|s| s["stream"].as_u64() == Some(id))?;
                let d = &s["interval_latency"];
                (d["count"].as_u64()? > 0)
                    .then(|| d["percentiles"][k].as_f64())
                    .flatten()
                    .map(|y| (t(v), y / 1e3))
            })
            .collect()
    };
    let names: Vec<String> = ids
        .iter()
        .flat_map(|id| [format!("{id} p50"), format!("{id} p99")])
        .collect();
    let series: Vec<Line<'_>> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, &id)| {
            [
                Line {
                    name: &names[2 * i],
                    points: of(id, "p50_ns"),
                },
                Line {
                    name: &names[2 * i + 1],
                    points: of(id, "p99_ns"),
                },
            ]
        })
        .collect();
    if series.iter().any(|l| !l.points.is_empty()) {
        let svg = charts::lines(
            "one-way latency",
            "s since the start",
            "µs (log)",
            &series,
            true,
        )?;
        out += &figure(
            &svg,
            "Per stream, the latency of the frames received in each second (p50, p99).",
        );
        let mut p99: Vec<f64> = ids
            .iter()
            .flat_map(|&id| of(id, "p99_ns"))
            .map(|p| p.1)
            .collect();
        p99.sort_by(f64::total_cmp);
        let hi = p99.last().copied().unwrap_or(1.0);
        out += &figure(
            &charts::histogram("latency p99 per second", "µs", &p99, hi, 40)?,
            "How the seconds' latency p99 is spread (every stream).",
        );
    }
    let lost_names: Vec<String> = ids.iter().map(|id| format!("stream {id}")).collect();
    let lost: Vec<Line<'_>> = ids
        .iter()
        .zip(&lost_names)
        .map(|(&id, name)| Line {
            name,
            points: timed
                .iter()
                .filter_map(|v| {
                    let s = streams(v)
                        .into_iter()
                        .find(|s| s["stream"].as_u64() == Some(id))?;
                    Some((t(v), s["lost"].as_f64()?))
                })
                .collect(),
        })
        .collect();
    if lost.iter().any(|l| l.points.len() > 1) {
        let svg = charts::lines("frames lost", "s since the start", "frames", &lost, false)?;
        out += &figure(&svg, "Per stream, frames lost so far (by sequence number).");
    }
    Ok(out)
}

/// One row per pass line (`--loop`): what each pass sent and how well.
fn pass_table(passes: &[Value]) -> String {
    let f = |v: &Value, k: &str, scale: f64, digits: usize| {
        num(v, k).map_or("–".into(), |x| format!("{:.*}", digits, x * scale))
    };
    let rows: Vec<Vec<String>> = passes
        .iter()
        .map(|p| {
            let complete = p.get("complete").and_then(Value::as_bool) == Some(true);
            vec![
                f(p, "pass", 1.0, 0),
                if complete { "yes" } else { "cut short" }.into(),
                f(p, "packets", 1.0, 0),
                f(p, "start_s", 1.0, 3),
                f(p, "end_s", 1.0, 3),
                f(p, "pps", 1.0, 0),
                f(p, "bps", 1e-6, 1),
                f(p, "late", 1.0, 0),
                f(p, "eps_max_ns", 1e-3, 1),
            ]
        })
        .collect();
    table(
        &[
            "pass",
            "complete",
            "packets",
            "first send s",
            "last send s",
            "pps",
            "Mbit/s",
            "late",
            "ε max µs",
        ],
        &rows,
    )
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
