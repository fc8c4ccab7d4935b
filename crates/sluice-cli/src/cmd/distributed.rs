//! `sluice keygen`, `sluice worker`, `sluice control run`: the control
//! plane lives in the sluice-control crate; this is its command line.

use crate::args::{ControlCommand, ControlRunArgs, KeygenArgs, WorkerArgs};
use crate::dest::Dest;
use crate::json::{self, Kind};
use crate::{bad_input, exit, Failure};
use anyhow::Context;
use sluice_control::control::{self, ControlConfig};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One thread: the control plane is light, and a clock exchange whose
/// reply wakes a task on another thread pays that wake-up in its delay.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?)
}

/// A control-plane error with the exit code it deserves: an unreachable
/// worker or a poor clock is the environment's fault (exit 1), anything
/// else the plan's or the request's (exit 2).
pub(crate) fn control_failure(e: sluice_control::error::ControlError) -> Failure {
    if e.is_environment() {
        Failure::from(e)
    } else {
        bad_input(e)
    }
}

pub fn keygen(a: KeygenArgs) -> Result<u8, Failure> {
    let files = sluice_control::tls::keygen(&a.dir, &a.san).map_err(bad_input)?;
    for f in files {
        outln!("{}", f.display())?;
    }
    eoutln!(
        "sluice: give workers ca.pem, worker.pem and worker.key, the controller ca.pem, controller.pem and controller.key; keep ca.key offline"
    );
    Ok(exit::OK)
}

pub fn worker(a: WorkerArgs) -> Result<u8, Failure> {
    let local = Arc::new(sluice_control::inprocess::InProcess::default());
    let cfg = sluice_control::worker::WorkerConfig {
        listen: a.listen,
        tls: a.tls,
        clock_offset_ns: a.clock_offset.unwrap_or(0),
        clock_drift_ppm: a.clock_drift_ppm.unwrap_or(0.0),
        exe: std::env::current_exe().context("finding the sluice binary")?,
        max_upload: a.max_upload,
        clock_service: a.clock_service,
        work_dir: a.work_dir,
        lease_idle: sluice_control::worker::LEASE_IDLE,
        local: Some(local.clone()),
    };
    let rt = runtime()?;
    rt.block_on(async {
        tokio::select! {
            r = sluice_control::worker::serve(cfg) => r.map_err(bad_input),
            _ = stop_signal() => Ok(()),
        }
    })?;
    // Local jobs end as a stop ends them: outputs settled, summaries sent.
    let n = local.stop_all(Duration::from_secs(5));
    eoutln!("sluice worker: stopped ({n} local jobs stopped)");
    Ok(exit::OK)
}

async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

pub fn control(a: crate::args::ControlArgs) -> Result<u8, Failure> {
    match a.command {
        ControlCommand::Run(r) => control_run(*r),
    }
}

fn control_run(a: ControlRunArgs) -> Result<u8, Failure> {
    let outputs: Vec<&str> = a
        .stats_json
        .iter()
        .chain(&a.summary_json)
        .map(String::as_str)
        .collect();
    crate::dest::check(&[&a.plan], &outputs)?;
    let plan = sluice_control::plan::load(&a.plan).map_err(bad_input)?;
    // The job's files and the TLS keys and certificates are inputs too:
    // no output may be one of them.
    let keys: Vec<std::path::PathBuf> = a
        .tls
        .iter()
        .flat_map(|d| sluice_control::tls::FILES.iter().map(move |n| d.join(n)))
        .collect();
    let reads: Vec<&std::path::Path> = std::iter::once(a.plan.as_path())
        .chain(std::iter::once(plan.file.as_path()))
        .chain(plan.files.iter().map(|p| p.as_path()))
        .chain(keys.iter().map(|p| p.as_path()))
        .collect();
    crate::dest::check(&reads, &outputs)?;
    let job = crate::job::plan_job(&plan)
        .map_err(|e| bad_input(e.context(a.plan.display().to_string())))?;
    let stats_out = a
        .stats_json
        .as_deref()
        .map(|p| Dest::open_log(p, "--stats-json"))
        .transpose()?;
    let summary_out = a.summary_json.as_deref().map(Dest::open).transpose()?;
    let stop = crate::signals::install().context("installing signal handlers")?;
    let stats = Arc::new(Mutex::new(stats_out));
    let (stats_w, clock_w) = (stats.clone(), stats.clone());
    let live = !a.quiet && std::io::stderr().is_terminal();
    let cfg = ControlConfig {
        plan,
        job,
        tls: a.tls,
        start_in: a.start_in.map(|n| std::time::Duration::from_nanos(n.0)),
        max_skew_ns: a.max_skew.0,
        on_loss: a.on_worker_loss,
        correct: !a.no_clock_correction,
        rounds: a.clock_rounds,
        stop,
        on_stats: Box::new(move |worker, port, v| {
            let body = serde_json::json!({"worker": worker, "port": port, "stats": v});
            write_line(&stats_w, Kind::ControlInterval, &body);
        }),
        clock_every: (a.clock_every.0 > 0)
            .then(|| std::time::Duration::from_nanos(a.clock_every.0)),
        on_clock: Box::new(move |worker, port, c| {
            let body = serde_json::json!({"worker": worker, "port": port, "check": c});
            write_line(&clock_w, Kind::ControlClock, &body);
        }),
        on_status: Box::new(move |s| {
            if live {
                eout!(
                    "\r{:>8.1}s {:>12} pkts {:>12.0} pps {:>10.1} Mbit/s  slowest ε p99 {}  workers running {}\x1b[K",
                    s.t,
                    s.packets,
                    s.pps,
                    s.bps / 1e6,
                    s.eps_p99_ns.map_or("–".into(), sluice_engine::duration),
                    s.workers_running
                );
            }
        }),
    };
    let rt = runtime()?;
    let stopped = cfg.stop.clone();
    let summary = rt.block_on(control::run(cfg)).map_err(control_failure)?;
    if live {
        eoutln!();
    }
    // A run stopped by a signal or with a failed worker replaces no
    // earlier output.
    let complete = !stopped.load(std::sync::atomic::Ordering::Relaxed)
        && summary.workers.iter().all(|w| w.error.is_none());
    if let Some(w) = stats.lock().unwrap_or_else(|e| e.into_inner()).take() {
        w.end(complete).context("writing --stats-json")?;
    }
    // The summary file first: a closed stderr cannot lose it.
    if let Some(mut out) = summary_out {
        let text = json::pretty(Kind::ControlSummary, &summary)?;
        writeln!(out, "{text}")
            .and_then(|_| out.end(complete))
            .context("writing --summary-json")?;
    }
    eout!("{}", render(&summary));
    let failed: Vec<_> = summary
        .workers
        .iter()
        .filter(|w| w.error.is_some())
        .collect();
    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else if !failed.is_empty() && failed.iter().all(|w| w.refused) {
        // Every failure was the job's input refused: the plan's fault.
        exit::BAD_INPUT
    } else if !failed.is_empty() {
        exit::FATAL
    } else {
        exit::OK
    })
}

/// One `--stats-json` line of `kind` to `out`, if open.
fn write_line(out: &Mutex<Option<Dest>>, kind: Kind, body: &serde_json::Value) {
    let mut g = out.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = g.as_mut() {
        let line = json::line(kind, body).unwrap_or_default();
        let _ = writeln!(w, "{line}").and_then(|_| w.flush());
    }
}

/// A receiving worker's streams, by sender: counts and one-way latency,
/// corrected by the clocks' measured offsets, with the correction's bound.
fn received(w: &control::WorkerResult) -> String {
    let (Some(iface), Some(rx)) = (&w.rx, w.summary.as_ref().map(|s| &s["rx"])) else {
        return String::new();
    };
    let mut out = format!(
        "         received on {iface}: {} stamped frames\n",
        rx["frames"]
    );
    let streams = rx["streams"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for st in streams {
        let id = st["stream"].as_u64().unwrap_or(0);
        let from = w
            .rx_clocks
            .iter()
            .find(|c| (u64::from(c.first_stream)..=u64::from(c.last_stream)).contains(&id));
        let p = &st["latency"]["percentiles"];
        let ms = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0) / 1e6;
        let (who, bound) = match from {
            Some(c) if c.bound_ns > 0 => (
                c.from.as_str(),
                format!(
                    " ±{:.3} ms (clock {:+.3} ms)",
                    c.bound_ns as f64 / 1e6,
                    c.ahead_ns as f64 / 1e6
                ),
            ),
            Some(c) => (c.from.as_str(), String::new()),
            None => ("?", String::new()),
        };
        out += &format!(
            "           stream {id} from {who}: {} received, {} lost, {} reordered; one-way p50 {:.3} ms p99 {:.3} ms{bound}\n",
            st["received"],
            st["lost"],
            st["reordered"],
            ms(&p["p50_ns"]),
            ms(&p["p99_ns"]),
        );
    }
    out
}

fn render(s: &control::ControlSummary) -> String {
    let mut out = format!(
        "{} split by {} over {} workers, t_tos {} (clock offsets {}):\n",
        s.command,
        s.split,
        s.workers.len(),
        s.start_ns,
        if s.clock_corrected {
            "corrected"
        } else {
            "NOT corrected"
        }
    );
    for w in &s.workers {
        let what = match (&w.summary, &w.error) {
            (_, Some(e)) if w.lost => format!(
                "LOST: {}; {e}",
                w.last_packets.map_or("sent unknown".into(), |p| format!(
                    "at least {p} packets (its last report)"
                ))
            ),
            (_, Some(e)) => format!("FAILED: {e}"),
            (Some(v), None) => format!(
                "{} packets, {:.0} pps, ε p99 {}",
                v["packets"],
                v["pps"].as_f64().unwrap_or(0.0),
                v["eps"]["percentiles"]["p99_ns"]
                    .as_u64()
                    .map_or("–".into(), sluice_engine::duration)
            ),
            (None, None) => "no summary".into(),
        };
        out += &format!(
            "  port {} {:<12} {:<22} offset {:>+12} ns ±{:<8} {}\n",
            w.port, w.name, w.sink, w.offset_ns, w.offset_uncertainty_ns, what
        );
        if let (Some(c), Some(o), Some(b)) = (
            &w.clock_service,
            w.clock_service_offset_ns,
            w.clock_service_bound_ns,
        ) {
            out += &format!("         {c}: offset {o:+} ns, bound {b} ns\n");
        }
        if let (Some(d), Some(m)) = (w.drift_ns, w.drift_max_abs_ns) {
            out += &format!(
                "         clock checked {} times during the run: drift {d:+} ns (largest {m} ns)\n",
                w.clock_checks
            );
        }
        out += &received(w);
    }
    let t = &s.total;
    // A worker that did not finish counts what it last reported: the
    // totals are then lower bounds.
    let least = if t.at_least { "at least " } else { "" };
    out += &format!(
        "total: {} of {} workers finished{}, {least}{} packets, {least}{} frame bytes, {} pps, slowest ε p99 {}\n",
        t.finished,
        t.workers,
        if t.lost > 0 {
            format!(" ({} lost)", t.lost)
        } else {
            String::new()
        },
        t.packets,
        t.frame_bytes,
        t.pps.map_or("–".into(), |p| format!("{least}{p:.0}")),
        t.eps_p99_max_ns.map_or("–".into(), sluice_engine::duration)
    );
    if let Some(a) = &s.aborted {
        out += &format!("aborted: {a}\n");
    }
    out
}
