//! RFC 2544 results as text: a line per trial, and a size's figures
//! (§26), every trial whose sender fell short marked with the rate it
//! reached, and a throughput the sender bounded said to be the sender's.

use super::{Limit, SizeResult, Throughput, Trial};

fn verdict(t: &Trial) -> &'static str {
    if t.pass {
        "pass"
    } else {
        "fail"
    }
}

/// A timed trial's line.
pub fn trial_line(t: &Trial) -> String {
    format!(
        "  trial {:>12.0} frames/s: {} sent, {} lost ({:.4} %){}{} -> {}",
        t.pps,
        t.sent,
        t.lost,
        t.loss_ratio * 100.0,
        back_note(t),
        short_note(t),
        verdict(t)
    )
}

/// A burst's line.
pub fn burst_line(t: &Trial) -> String {
    format!(
        "  burst {:>10} frames: {} sent, {} lost{}{} -> {}",
        t.burst.unwrap_or(0),
        t.sent,
        t.lost,
        back_note(t),
        short_note(t),
        verdict(t)
    )
}

/// A trial's line's note when its sender fell short: what it reached.
pub fn short_note(t: &Trial) -> String {
    let one = |t: &Trial, dir: &str| -> Option<String> {
        t.sender_short.then(|| match (t.burst, t.sent_pps) {
            (Some(n), _) => format!(
                ", the sender{dir} fell short: {} of {n} frames sent",
                t.sent
            ),
            (None, Some(p)) => format!(
                ", the sender{dir} fell short: {p:.0} of {:.0} frames/s reached",
                t.pps
            ),
            (None, None) => format!(", the sender{dir} fell short: no rate measured"),
        })
    };
    one(t, "")
        .into_iter()
        .chain(t.reverse.as_deref().and_then(|r| one(r, " back")))
        .collect()
}

/// The other direction's counts, for a trial's line.
pub fn back_note(t: &Trial) -> String {
    t.reverse.as_ref().map_or(String::new(), |r| {
        format!("; back: {} sent, {} lost", r.sent, r.lost)
    })
}

/// One size's results (RFC 2544 §26's figures), under its name.
pub fn render(r: &SizeResult) -> String {
    let mut s = format!("{} bytes:", r.name());
    if let Some(t) = &r.throughput {
        match t.pps {
            Some(p) => {
                s += &format!(
                    " throughput {p:.0} frames/s, {:.2} Mbit/s of frames, {:.2} Mbit/s on the wire{}",
                    t.bps.unwrap_or(0.0) / 1e6,
                    t.l1_bps.unwrap_or(0.0) / 1e6,
                    if t.converged { "" } else { " (not converged: --max-trials reached)" }
                );
            }
            None => s += &format!(" no rate passed ({} trials)", t.trials.len()),
        }
        if let Some(note) = limit_note(r, t) {
            s += &format!("\n  {note}");
        }
    }
    if let Some(t) = &r.latency {
        if let Some(l) = &t.latency {
            let p = &l.percentiles;
            let us = |ns: u64| ns as f64 / 1e3;
            s += &format!(
                "\n  latency at the throughput: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs{}",
                us(p.p50_ns),
                us(p.p99_ns),
                us(p.max_ns),
                short_note(t)
            );
        }
    }
    if let Some(b) = &r.back_to_back {
        let short = b.trials.iter().filter(|t| t.either_short()).count();
        s += &format!(
            "\n  back-to-back: {:.1} frames (searches {:?}){}",
            b.frames,
            b.searches,
            if short > 0 {
                format!(
                    "; in {short} of {} bursts the sender fell short (sent fewer frames than asked)",
                    b.trials.len()
                )
            } else {
                String::new()
            }
        );
    }
    for row in &r.loss {
        let t = &row.trial;
        s += &format!(
            "\n  frame loss at {:>3} % ({:.0} frames/s): {:.4} %",
            row.percent,
            t.pps,
            t.loss_ratio * 100.0
        );
        if row.sender_short {
            s += &format!(
                " SENDER SHORT: it reached {}, so this is the loss at that rate, not at {} %",
                row.achieved_percent
                    .map_or("no measured rate".into(), |a| format!(
                        "{:.0} frames/s ({a:.1} %)",
                        a / 100.0 * r.max_pps
                    )),
                row.percent
            );
        }
    }
    let short_rows = r.loss.iter().filter(|row| row.sender_short).count();
    if short_rows > 0 {
        s += &format!(
            "\n  the sender, not the device, fell short in {short_rows} of {} loss trials: \
             their rates were not offered to the device",
            r.loss.len()
        );
    }
    s
}

/// What a throughput search's bound says about the device, when it is
/// not the device's own limit.
fn limit_note(r: &SizeResult, t: &Throughput) -> Option<String> {
    match t.limit {
        Limit::Device => None,
        Limit::Sender => Some(match super::lowest_fail_above(&t.trials, t.pps) {
            Some(x) => format!(
                "LIMITED BY THE SENDER, not the device: at {:.0} frames/s asked the sender {}, \
                 and the device lost no more than allowed; the device's throughput is not measured{}",
                x.pps,
                match (x.sent_pps, x.sent) {
                    (_, 0) => "sent nothing".to_string(),
                    (Some(p), _) => format!("reached only {p:.0}"),
                    (None, _) => "reached no measured rate".to_string(),
                },
                t.pps.map_or(String::new(), |p| format!(" above {p:.0} frames/s"))
            ),
            None => format!(
                "LIMITED BY THE SENDER, not the device: the search's top, {:.0} frames/s, is the \
                 sender's top speed, and the device took it; the device may forward more",
                r.max_pps
            ),
        }),
        Limit::MaxPps => Some(format!(
            "the search's top, --max-pps {:.0} frames/s, passed: the device may forward more",
            r.max_pps
        )),
    }
}
