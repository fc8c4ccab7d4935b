//! `sluice rx IFACE`: receives frames carrying a receive stamp
//! (`--rx-stamp` on the sender) and counts them per stream (received,
//! lost, duplicated, reordered, one-way latency, jitter), with the
//! kernel's (or the NIC's) receive time of each frame, read from a
//! TPACKET_V3 ring.

use crate::args::RxArgs;
use crate::dest::Dest;
use crate::json::Kind;
use crate::{exit, signals, Failure};
use anyhow::{anyhow, Context};
use sluice_receive::{render, status_line, Receiver, RxDoc};
use sluice_run::receive_failure;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Writes `doc` as a `sluice.rx/1` line of `--stats-json`, keeping the
/// first write error.
fn log_line(out: &mut Option<Dest>, doc: &RxDoc, error: &mut Option<std::io::Error>) {
    if let Some(w) = out {
        let line = crate::json::line(Kind::Rx, doc).unwrap_or_default();
        if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
            error.get_or_insert(e);
        }
    }
}

pub fn run(a: RxArgs) -> Result<u8, Failure> {
    let stop = signals::install().context("installing signal handlers")?;
    let summary_out = a.summary_json.as_deref().map(Dest::open).transpose()?;
    let mut stats_out = a
        .stats_json
        .as_deref()
        .map(|p| Dest::open_log(p, "--stats-json"))
        .transpose()?;
    let mut r = Receiver::open(
        &a.iface,
        a.opts.rx_clock.clone(),
        a.clock_shift,
        a.opts.rx_path,
    )
    .map_err(receive_failure)?;
    let status = !a.quiet && std::io::stderr().is_terminal();
    eoutln!(
        "rx: receiving on {} by {} ({} receive times{}); SIGINT ends it",
        a.iface,
        r.path(),
        r.stamps(),
        r.path_note().map(|n| format!("; {n}")).unwrap_or_default()
    );
    let started = Instant::now();
    let end = a.opts.duration.map(|d| started + Duration::from_nanos(d.0));
    let idle = a.opts.idle.map(|d| Duration::from_nanos(d.0));
    let mut last_stamped: Option<Instant> = None;
    let mut next_line = started + Duration::from_secs(1);
    let mut stats_error = None;
    loop {
        let now = Instant::now();
        let over = end.is_some_and(|e| now >= e)
            || a.opts.count.is_some_and(|c| r.counter.frames() >= c)
            || idle.zip(last_stamped).is_some_and(|(i, l)| now - l >= i)
            || stop.load(Ordering::Relaxed);
        if over {
            break;
        }
        if now >= next_line {
            let doc = r.doc(false);
            if status {
                eout!("\r{}\x1b[K", status_line(&doc));
            }
            log_line(&mut stats_out, &doc, &mut stats_error);
            next_line = now + Duration::from_secs(1);
        }
        if r.poll(Duration::from_millis(20)).map_err(receive_failure)? {
            last_stamped = Some(Instant::now());
        }
    }
    if status {
        eoutln!();
    }
    let doc = r.doc(true);
    // The summary closes the lines too (`final: true`): what arrived
    // after the last second's line is counted there, so the file ends
    // with the counts the summary gives.
    log_line(&mut stats_out, &doc, &mut stats_error);
    // A receiver stopped by a signal (rather than by its count, duration
    // or idle time) replaces no earlier output.
    let complete = !stop.load(Ordering::Relaxed);
    if let Some(w) = stats_out {
        w.end(complete).context("writing --stats-json")?;
    }
    if let Some(mut out) = summary_out {
        let text = crate::json::pretty(Kind::Rx, &doc)?;
        writeln!(out, "{text}")
            .and_then(|_| out.end(complete))
            .context("writing --summary-json")?;
    }
    eoutln!("{}", render(&doc));
    if let Some(e) = stats_error {
        return Err(anyhow!("writing --stats-json: {e}").into());
    }
    if stop.load(Ordering::Relaxed) {
        return Ok(exit::INTERRUPTED);
    }
    if doc.frames == 0 {
        return Err(Failure {
            code: exit::FATAL,
            error: anyhow!(
                "no stamped frame arrived on {} ({} other frames): does the sender use --rx-stamp, \
                 and does the traffic reach this interface?",
                a.iface,
                doc.unstamped
            ),
        });
    }
    Ok(exit::OK)
}
