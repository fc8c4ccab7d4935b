//! `--stats-json` lines, read with the types that wrote them: a sender's
//! intervals (`sluice_engine::IntervalStats`) and passes (`PassStats`),
//! a receiver's counts (`sluice_receive::RxDoc`), and `control run`'s
//! lines of each worker and its clock checks.

use super::charts::{self, Line};
use super::{esc, figure, fixed, heading, table, typed};
use crate::json::Kind;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use serde_json::Value;
use sluice_control::control::ClockCheck;
use sluice_engine::{IntervalStats, PassStats};
use sluice_receive::RxDoc;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// What one sender (or one worker of `control run`) wrote to
/// `--stats-json`: its interval lines, pass lines and, with a receiver,
/// what the receiver counted.
#[derive(Default)]
struct Lines {
    rows: Vec<IntervalStats>,
    passes: Vec<PassStats>,
    received: Vec<RxDoc>,
}

impl Lines {
    fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.passes.is_empty() && self.received.is_empty()
    }

    /// Files one line (`v`, at key `at` of `whence`) by its schema; false
    /// for a line of no kind it holds.
    fn take(&mut self, whence: &str, at: &str, v: &Value) -> Result<bool, Failure> {
        let schema = v.get("schema").and_then(Value::as_str);
        if schema == Some(Kind::Pass.tag()) {
            self.passes.push(typed(whence, at, v)?);
        } else if schema == Some(Kind::Rx.tag()) {
            self.received.push(typed(whence, at, v)?);
        } else if schema == Some(Kind::Interval.tag()) {
            self.rows.push(typed(whence, at, v)?);
        } else {
            return Ok(false);
        }
        Ok(true)
    }
}

/// A worker of `control run`: its port and name.
type Worker = (u64, String);

/// One quantile of a distribution.
type Pick = fn(&sluice_core::Quantiles) -> u64;

/// A `--stats-json` file: its own lines, or `control run`'s by worker.
pub(super) fn report(path: &Path, text: &str) -> Result<String, Failure> {
    let mut own = Lines::default();
    let mut workers: BTreeMap<Worker, Lines> = BTreeMap::new();
    let mut clocks: BTreeMap<Worker, Vec<ClockCheck>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| bad_input(anyhow!("{}: line {}: {e}", path.display(), i + 1)))?;
        let whence = format!("{}: line {}", path.display(), i + 1);
        let schema = v.get("schema").and_then(Value::as_str);
        let worker = || -> Result<Worker, Failure> {
            Ok((
                typed(&whence, "port", &v["port"])?,
                typed(&whence, "worker", &v["worker"])?,
            ))
        };
        let filed = if schema == Some(Kind::ControlInterval.tag()) {
            workers
                .entry(worker()?)
                .or_default()
                .take(&whence, "stats", &v["stats"])?
        } else if schema == Some(Kind::ControlClock.tag()) {
            let check = typed(&whence, "check", &v["check"])?;
            clocks.entry(worker()?).or_default().push(check);
            true
        } else {
            own.take(&whence, "", &v)?
        };
        if !filed {
            return Err(bad_input(anyhow!(
                "{whence}: not a --stats-json line (\"schema\": \"{}\", \"{}\" or \"{}\" expected)",
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
    let mut names: Vec<&Worker> = workers.keys().chain(clocks.keys()).collect();
    names.sort();
    names.dedup();
    for key in names {
        let who = format!("{} (port {})", key.1, key.0);
        if let Some(l) = workers.get(key).filter(|l| !l.is_empty()) {
            out += &lines_report(l, &who)?;
        }
        if let Some(c) = clocks.get(key) {
            out += &heading(&who, "Clock checks");
            let rows: Vec<Vec<String>> = c
                .iter()
                .map(|c| {
                    vec![
                        format!("{:.3}", c.t),
                        c.offset_ns.to_string(),
                        c.uncertainty_ns.to_string(),
                        c.drift_ns.to_string(),
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
    let Some(last) = rows.last() else {
        // A run shorter than its first interval line: its passes alone.
        if !l.passes.is_empty() {
            out += &heading(who, "Passes");
            out += &pass_table(&l.passes);
        }
        if !l.received.is_empty() {
            out += &rx_report(&l.received, who)?;
        }
        return Ok(out);
    };
    let series = |y: fn(&IntervalStats) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|v| (v.t, y(v))).collect()
    };
    let eps = |k: Pick| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|v| v.eps.map(|e| (v.t, k(&e.percentiles) as f64 / 1e3)))
            .collect()
    };
    out += &heading(who, "Run");
    out += &table(
        &["figure", "value"],
        &[
            vec!["seconds".into(), format!("{:.3}", last.t)],
            vec!["packets".into(), last.packets.to_string()],
            vec!["frame bytes".into(), last.bytes.to_string()],
            vec!["late".into(), last.late.to_string()],
            vec!["dropped (time violations)".into(), last.dropped.to_string()],
        ],
    );
    let rate = charts::lines(
        "packet rate",
        "s since the start",
        "packets/s",
        &[Line {
            name: "pps",
            points: series(|v| v.pps),
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
            points: series(|v| v.bps * 1e-6),
        }],
        false,
    )?;
    out += &figure(&bits, "Frame bits per second in each interval.");
    let quantiles: [(&str, Pick); 3] = [
        ("p50", |q| q.p50_ns),
        ("p99", |q| q.p99_ns),
        ("max", |q| q.max_ns),
    ];
    let lines: Vec<Line<'_>> = quantiles
        .iter()
        .map(|(name, k)| Line {
            name,
            points: eps(*k),
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
        let mut p99: Vec<f64> = eps(|q| q.p99_ns).iter().map(|p| p.1).collect();
        p99.sort_by(f64::total_cmp);
        let hi = p99.last().copied().unwrap_or(1.0);
        out += &figure(
            &charts::histogram("ε p99 per interval", "µs", &p99, hi, 40)?,
            "How the intervals' ε p99 is spread: one mode near zero is a steady run.",
        );
    } else {
        out += "<p>No ε in these lines (top speed, or nothing sent).</p>\n";
    }
    if !l.passes.is_empty() {
        out += &heading(who, "Passes");
        out += &pass_table(&l.passes);
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
pub(super) fn rx_report(lines: &[RxDoc], who: &str) -> Result<String, Failure> {
    let last = lines
        .iter()
        .rev()
        .find(|v| v.last)
        .or(lines.last())
        .expect("one line at least");
    let ids: Vec<u32> = last.streams.iter().map(|s| s.stream).collect();
    let mut out = heading(who, "Received");
    let _ = writeln!(
        out,
        "<p>{} stamped frames received on {} in {:.3} s ({} other frames, {} dropped by the kernel; {} receive times).</p>",
        last.frames,
        esc(&last.iface),
        last.t,
        last.unstamped,
        last.kernel_drops,
        esc(&last.stamps)
    );
    let f = &last.fragments;
    if f.fragments > 0 {
        let _ = writeln!(
            out,
            "<p>IP fragments: {} received, {} datagrams reassembled, {} timed out, {} failed.</p>",
            f.fragments, f.reassembled, f.timed_out, f.failed
        );
    }
    if !last.last {
        let _ = writeln!(
            out,
            "<p><strong>Not the final count</strong>: these are the counts of the last line, {:.3} s \
             after the receiver started; what arrived after it is not in this file.</p>",
            last.t
        );
    }
    let us = |ns: u64| fixed(Some(ns as f64), 1e-3, 1);
    let rows: Vec<Vec<String>> = last
        .streams
        .iter()
        .map(|s| {
            let p = &s.latency.percentiles;
            vec![
                s.stream.to_string(),
                s.received.to_string(),
                s.lost.to_string(),
                s.duplicates.to_string(),
                s.reordered.to_string(),
                us(p.p50_ns),
                us(p.p99_ns),
                us(p.max_ns),
                fixed(Some(s.jitter_ns), 1e-3, 1),
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
fn rx_charts(lines: &[RxDoc], ids: &[u32]) -> Result<String, Failure> {
    let mut out = String::new();
    // Interval latency of each stream over time (the summary, a line
    // after the last interval, is left out of the time axis).
    let timed: Vec<&RxDoc> = lines.iter().filter(|v| !v.last).collect();
    let stream = |v: &RxDoc, id: u32| v.streams.iter().find(|s| s.stream == id).cloned();
    let of = |id: u32, k: Pick| -> Vec<(f64, f64)> {
        timed
            .iter()
            .filter_map(|v| {
                let d = stream(v, id)?.interval_latency;
                (d.count > 0).then(|| (v.t, k(&d.percentiles) as f64 / 1e3))
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
                    points: of(id, |q| q.p50_ns),
                },
                Line {
                    name: &names[2 * i + 1],
                    points: of(id, |q| q.p99_ns),
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
            .flat_map(|&id| of(id, |q| q.p99_ns))
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
                .filter_map(|v| Some((v.t, stream(v, id)?.lost as f64)))
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
fn pass_table(passes: &[PassStats]) -> String {
    let rows: Vec<Vec<String>> = passes
        .iter()
        .map(|p| {
            vec![
                p.pass.to_string(),
                if p.complete { "yes" } else { "cut short" }.into(),
                p.packets.to_string(),
                format!("{:.3}", p.start_s),
                format!("{:.3}", p.end_s),
                fixed(p.pps, 1.0, 0),
                fixed(p.bps, 1e-6, 1),
                p.late.to_string(),
                fixed(p.eps_max_ns.map(|n| n as f64), 1e-3, 1),
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
