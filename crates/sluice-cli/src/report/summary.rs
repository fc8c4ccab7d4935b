//! The summaries sluice writes, read with the types that wrote them: a
//! sending command's `--summary-json` (`sluice_engine::Summary`, its
//! receiver's count beside it) and `control run`'s
//! (`sluice_control::control::ControlSummary`).

use super::lines::rx_report;
use super::{esc, fixed, table, typed};
use crate::Failure;
use serde_json::Value;
use sluice_control::control::ControlSummary;
use sluice_engine::Summary;
use sluice_receive::RxDoc;
use std::fmt::Write as _;
use std::path::Path;

/// A sending command's `--summary-json`: its figures, and what its
/// receiver (`--rx`) counted.
pub(super) fn report(path: &Path, doc: &Value) -> Result<String, Failure> {
    let s: Summary = typed(&path.display().to_string(), "", doc)?;
    let mut out = String::from("<h2>Run</h2>\n");
    out += &table(
        &["figure", "value"],
        &[
            vec!["seconds".into(), format!("{:.3}", s.duration_s)],
            vec!["packets".into(), s.packets.to_string()],
            vec!["frame bytes".into(), s.bytes.to_string()],
            vec!["packets/s".into(), fixed(s.pps, 1.0, 0)],
            vec![
                "Mbit/s".into(),
                s.bps.map_or("–".into(), |x| format!("{:.3}", x / 1e6)),
            ],
            vec!["late".into(), s.late.to_string()],
            vec!["dropped (time violations)".into(), s.dropped.to_string()],
            vec![
                "interrupted".into(),
                if s.interrupted { "yes" } else { "no" }.into(),
            ],
        ],
    );
    if !s.warnings.is_empty() {
        out += "<h2>Warnings</h2>\n<ul>";
        for w in &s.warnings {
            let _ = write!(out, "<li>{}</li>", esc(w));
        }
        out += "</ul>\n";
    }
    if doc["rx"].is_object() {
        let rx: RxDoc = typed(&path.display().to_string(), "rx", &doc["rx"])?;
        out += &rx_report(std::slice::from_ref(&rx), "")?;
    }
    Ok(out)
}

/// `control run --summary-json`: each worker, how it ended and what it
/// sent (a lost worker's last report as a lower bound), the totals, and
/// what receiving workers counted.
pub(super) fn control(path: &Path, doc: &Value) -> Result<String, Failure> {
    let c: ControlSummary = typed(&path.display().to_string(), "", doc)?;
    // Each finished worker's own summary, read as the type it is.
    let summaries: Vec<Option<Summary>> = c
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            w.summary
                .as_ref()
                .map(|s| {
                    typed(
                        &path.display().to_string(),
                        &format!("workers[{i}].summary"),
                        s,
                    )
                })
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let mut out = format!(
        "<h2>Distributed run</h2>\n<p>{} split by {} over {} workers (clock offsets {}).</p>\n",
        esc(&c.command),
        esc(&c.split),
        c.workers.len(),
        if c.clock_corrected {
            "corrected"
        } else {
            "NOT corrected"
        }
    );
    let rows: Vec<Vec<String>> = c
        .workers
        .iter()
        .zip(&summaries)
        .map(|(w, s)| {
            let (state, packets) = match s {
                Some(s) => ("finished".to_string(), s.packets.to_string()),
                None => {
                    let state = if w.lost {
                        "LOST"
                    } else if w.refused {
                        "refused"
                    } else {
                        "failed"
                    };
                    let last = w
                        .last_packets
                        .map_or("unknown".into(), |p| format!("at least {p}"));
                    (state.to_string(), last)
                }
            };
            vec![
                w.name.clone(),
                w.port.to_string(),
                w.sink.clone(),
                state,
                packets,
                fixed(s.as_ref().and_then(|s| s.pps), 1.0, 0),
                w.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out += &table(
            &["worker", "port", "sink", "ended", "packets", "pps", "error"],
            &rows,
        );
    }
    let t = &c.total;
    let at_least = if t.at_least { "at least " } else { "" };
    out += &table(
        &["total", "value"],
        &[
            vec![
                "workers finished".into(),
                format!("{} of {}", t.finished, t.workers),
            ],
            vec!["packets".into(), format!("{at_least}{}", t.packets)],
            vec!["frame bytes".into(), format!("{at_least}{}", t.frame_bytes)],
        ],
    );
    if t.at_least {
        out += "<p><strong>Lower bounds</strong>: a worker did not finish, and only what it last \
                reported is counted.</p>\n";
    }
    for (i, w) in c.workers.iter().enumerate() {
        let rx = w.summary.as_ref().map(|s| &s["rx"]);
        if let Some(rx) = rx.filter(|r| r.is_object()) {
            let rx: RxDoc = typed(
                &path.display().to_string(),
                &format!("workers[{i}].summary.rx"),
                rx,
            )?;
            let who = format!("{} (port {})", w.name, w.port);
            out += &rx_report(std::slice::from_ref(&rx), &who)?;
        }
    }
    if let Some(a) = &c.aborted {
        let _ = writeln!(out, "<p>Aborted: {}</p>", esc(a));
    }
    Ok(out)
}
