//! `rfc2544 --json` laid out as RFC 2544 §26 reports: throughput per frame
//! size (table and graph), latency at it, the frame loss rate table and
//! back-to-back bursts, then every trial; only the tests that ran, and
//! every trial whose sender fell short marked as such. The document is
//! read with `sluice_receive::rfc2544`'s own types.

use super::charts::{self, Line};
use super::{esc, figure, fixed, table, typed};
use crate::Failure;
use serde_json::Value;
use sluice_receive::rfc2544::{Limit, LossRow, Results, SizeResult, Trial};
use std::fmt::Write as _;
use std::path::Path;

/// The report of the document `doc` read from `path`.
pub(super) fn report(path: &Path, doc: &Value) -> Result<String, Failure> {
    let r: Results = typed(&path.display().to_string(), "", doc)?;
    let mut out = format!(
        "<h2>RFC 2544 benchmarks</h2>\n<p>Frames leave by {} and come back on {}; trials of {} s, \
         loss tolerance {} %, search resolution {} %. Loss is counted by stream and sequence number.</p>\n",
        esc(&r.to),
        esc(&r.rx),
        r.trial_s,
        r.loss_tolerance_percent,
        r.resolution_percent
    );
    out += &throughput(&r.sizes)?;
    out += &latency(&r.sizes);
    out += &loss(&r.sizes);
    out += &back_to_back(&r.sizes);
    out += &every_trial(&r.sizes);
    Ok(out)
}

/// A trial's verdict, with the sender's shortfall named: a trial whose
/// sender fell short was not the rate its row names.
fn verdict(t: &Trial) -> String {
    let pass = if t.pass { "pass" } else { "fail" };
    if t.either_short() {
        format!("{pass}: SENDER SHORT")
    } else {
        pass.to_string()
    }
}

/// What a trial asked and what its sender reached: frames/s for a timed
/// trial, frames for a burst.
fn asked_reached(t: &Trial) -> (String, String) {
    match t.burst {
        Some(n) => (format!("{n} frames"), format!("{} frames", t.sent)),
        None => (fixed(Some(t.pps), 1.0, 0), fixed(t.sent_pps, 1.0, 0)),
    }
}

/// A frame size as the tables name it.
fn size_name(s: &SizeResult) -> String {
    if s.imix {
        "IMIX".to_string()
    } else {
        s.size.to_string()
    }
}

/// §26.1: throughput per size, what limited it, and the graph.
fn throughput(sizes: &[SizeResult]) -> Result<String, Failure> {
    let mut out = String::new();
    let ran: Vec<_> = sizes
        .iter()
        .filter_map(|s| s.throughput.as_ref().map(|t| (s, t)))
        .collect();
    if !ran.is_empty() {
        out += "<h2>Throughput (§26.1)</h2>\n";
        let rows: Vec<Vec<String>> = ran
            .iter()
            .map(|(s, t)| {
                vec![
                    size_name(s),
                    fixed(t.pps, 1.0, 0),
                    fixed(t.bps, 1e-6, 2),
                    fixed(t.l1_bps, 1e-6, 2),
                    if t.converged { "yes" } else { "no" }.into(),
                    match t.limit {
                        Limit::Device => "the device",
                        Limit::Sender => "THE SENDER",
                        Limit::MaxPps => "--max-pps (the top passed)",
                    }
                    .into(),
                    t.trials.len().to_string(),
                ]
            })
            .collect();
        out += &table(
            &[
                "frame size B",
                "frames/s",
                "Mbit/s frames",
                "Mbit/s on the wire",
                "converged",
                "limited by",
                "trials",
            ],
            &rows,
        );
        for (s, t) in ran.iter().filter(|(_, t)| t.limit == Limit::Sender) {
            let above = t
                .trials
                .iter()
                .filter(|x| !x.pass && t.pps.is_none_or(|b| x.pps > b))
                .min_by(|a, b| a.pps.total_cmp(&b.pps));
            let why = match above {
                Some(a) => format!(
                    "at {} frames/s asked the sender reached only {} frames/s, and the device lost no more than allowed",
                    fixed(Some(a.pps), 1.0, 0),
                    fixed(a.sent_pps, 1.0, 0)
                ),
                None => format!(
                    "the search's top, {} frames/s, is the sender's top speed, and the device took it",
                    fixed(Some(s.max_pps), 1.0, 0)
                ),
            };
            let _ = writeln!(
                out,
                "<p class=\"sender-limited\"><strong>{} bytes: limited by the sender, not the device under test</strong>: {}. \
                 The device's throughput was not measured above {} frames/s.</p>",
                esc(&size_name(s)),
                esc(&why),
                t.pps.map_or("0".into(), |b| format!("{b:.0}"))
            );
        }
    }
    let points: Vec<(f64, f64)> = sizes
        .iter()
        .filter(|s| !s.imix)
        .filter_map(|s| Some((s.size as f64, s.throughput.as_ref()?.pps?)))
        .collect();
    if points.len() > 1 {
        let svg = charts::lines(
            "throughput",
            "frame size (bytes)",
            "frames/s",
            &[Line {
                name: "throughput",
                points,
            }],
            false,
        )?;
        out += &figure(
            &svg,
            "Throughput against frame size, as RFC 2544 §26.1 asks it drawn.",
        );
    }
    Ok(out)
}

/// §26.2: latency at the throughput.
fn latency(sizes: &[SizeResult]) -> String {
    let us = |t: &Trial, k: fn(&sluice_core::Quantiles) -> u64| {
        fixed(t.latency.map(|l| k(&l.percentiles) as f64), 1e-3, 1)
    };
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .filter_map(|s| s.latency.as_ref().map(|t| (s, t)))
        .map(|(s, t)| {
            let (asked, reached) = asked_reached(t);
            vec![
                size_name(s),
                asked,
                reached,
                us(t, |p| p.p50_ns),
                us(t, |p| p.p99_ns),
                us(t, |p| p.max_ns),
                verdict(t),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    "<h2>Latency at the throughput (§26.2)</h2>\n".to_string()
        + &table(
            &[
                "frame size B",
                "frames/s asked",
                "frames/s sent",
                "p50 µs",
                "p99 µs",
                "max µs",
                "verdict",
            ],
            &rows,
        )
}

/// §26.3: the frame loss rate table.
fn loss(sizes: &[SizeResult]) -> String {
    let loss_rows: Vec<(String, &LossRow)> = sizes
        .iter()
        .flat_map(|s| s.loss.iter().map(move |row| (size_name(s), row)))
        .collect();
    if loss_rows.is_empty() {
        return String::new();
    }
    let short = |row: &LossRow| row.sender_short || row.trial.sender_short;
    let rows: Vec<Vec<String>> = loss_rows
        .iter()
        .map(|(n, row)| {
            let t = &row.trial;
            vec![
                n.clone(),
                row.percent.to_string(),
                fixed(Some(t.pps), 1.0, 0),
                fixed(row.achieved_percent, 1.0, 1),
                fixed(t.sent_pps, 1.0, 0),
                t.sent.to_string(),
                t.lost.to_string(),
                fixed(Some(t.loss_ratio), 100.0, 4),
                if short(row) {
                    "SENDER SHORT: the loss at the rate sent, not at the % asked".into()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    let mut out = "<h2>Frame loss rate (§26.3)</h2>\n".to_string();
    out += &table(
        &[
            "frame size B",
            "% of max asked",
            "frames/s asked",
            "% of max sent",
            "frames/s sent",
            "sent",
            "lost",
            "loss %",
            "sender",
        ],
        &rows,
    );
    let n_short = loss_rows.iter().filter(|(_, row)| short(row)).count();
    if n_short > 0 {
        let _ = writeln!(
            out,
            "<p class=\"sender-limited\"><strong>In {n_short} of {} loss trials the sender, not the device under test, \
             fell short of the rate asked</strong>: those rows are the loss at the rate sent.</p>",
            loss_rows.len()
        );
    }
    out
}

/// §26.4: back-to-back bursts.
fn back_to_back(sizes: &[SizeResult]) -> String {
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .filter_map(|s| s.back_to_back.as_ref().map(|b| (s, b)))
        .map(|(s, b)| {
            let short = b.trials.iter().filter(|t| t.sender_short).count();
            vec![
                size_name(s),
                fixed(Some(b.frames), 1.0, 1),
                format!("{:?}", b.searches).replace(' ', ""),
                if short > 0 {
                    format!("SENDER SHORT in {short} bursts")
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    "<h2>Back-to-back frames (§26.4)</h2>\n".to_string()
        + &table(
            &["frame size B", "frames (mean)", "searches", "sender"],
            &rows,
        )
}

/// Every trial of every test.
fn every_trial(sizes: &[SizeResult]) -> String {
    let every: Vec<Vec<String>> = sizes
        .iter()
        .flat_map(|s| {
            let n = size_name(s);
            let throughput = s.throughput.iter().flat_map(|t| &t.trials);
            let b2b = s.back_to_back.iter().flat_map(|b| &b.trials);
            throughput
                .map(|t| ("throughput", t))
                .chain(s.latency.iter().map(|t| ("latency", t)))
                .chain(s.loss.iter().map(|row| ("loss", &row.trial)))
                .chain(b2b.map(|t| ("b2b", t)))
                .map(move |(test, t)| {
                    let (asked, reached) = asked_reached(t);
                    vec![
                        n.clone(),
                        test.into(),
                        asked,
                        reached,
                        t.sent.to_string(),
                        t.received.to_string(),
                        t.lost.to_string(),
                        t.reordered.to_string(),
                        verdict(t),
                    ]
                })
        })
        .collect();
    if every.is_empty() {
        return String::new();
    }
    "<h2>Every trial</h2>\n".to_string()
        + &table(
            &[
                "frame size B",
                "test",
                "asked",
                "sender reached",
                "sent",
                "received",
                "lost",
                "reordered",
                "verdict",
            ],
            &every,
        )
}
