//! A worker's job, run here: the [`WorkerJob`] a worker wrote as the
//! command it runs ([`job_of`]), and `sluice job FILE` ([`run_file`]),
//! the thin child a worker starts per distributed task (a process of its
//! own, so a task's deadline can end it without touching the worker).

use crate::{bad_input, Failure, Job};
use anyhow::{anyhow, Context};
use sluice_job::command::{PlayArgs, ProfileRunArgs, ReplayArgs, RunArgs, RunOpts, ShareOpts};
use sluice_job::{Work, WorkerJob};

/// `sluice job FILE`: the job a worker wrote, run as the command line
/// runs its command (`run::command`): statistics lines on stdout, the
/// summary to the worker's file, no status line.
pub fn run_file(file: &std::path::Path) -> Result<u8, Failure> {
    // A job is what a worker wrote: options and a few paths.
    let text = sluice_sys::input::read_capped(file, 16 << 20, "job file")
        .map_err(|e| bad_input(anyhow!("{}: cannot read: {e}", file.display())))?;
    let text = String::from_utf8_lossy(&text);
    let w: WorkerJob =
        serde_json::from_str(&text).map_err(|e| bad_input(anyhow!("{}: {e}", file.display())))?;
    let summary = w.summary_json.display().to_string();
    let (corrections, drift_ppm) = (w.clock_corrections, w.clock_drift_ppm);
    if !(drift_ppm.is_finite() && drift_ppm.abs() < 1e5) {
        return Err(bad_input(anyhow!(
            "{}: clock_drift_ppm: {drift_ppm}: below 100 000 expected",
            file.display()
        )));
    }
    let mut job = job_of(w);
    let run = job.run_opts_mut();
    run.stats_json = Some("-".into());
    run.summary_json = Some(summary);
    let mut p = crate::prepare(&mut job)?;
    if corrections || drift_ppm != 0.0 {
        let live = p.plan.live();
        if drift_ppm != 0.0 {
            // A clock that runs fast runs the schedule as fast.
            live.change(sluice_pace::Change::Scale(1.0 + drift_ppm * 1e-6), None)
                .map_err(|e| bad_input(anyhow!("clock_drift_ppm: {e}")))?;
        }
        if corrections {
            std::thread::Builder::new()
                .name("corrections".into())
                .spawn(move || read_corrections(std::io::stdin().lock(), &live))
                .context("starting the corrections thread")?;
        }
    }
    p.run()
}

/// Applies the worker's clock corrections, one line `shift NS` each, until
/// the worker closes the pipe; a line of anything else is ignored (the
/// worker writes only these).
fn read_corrections(input: impl std::io::BufRead, live: &sluice_engine::LiveRate) {
    // Lines are bounded: the worker writes short ones.
    for line in input.split(b'\n').map_while(Result::ok) {
        let text = String::from_utf8_lossy(&line[..line.len().min(64)]);
        if let Some(ns) = text
            .strip_prefix("shift ")
            .and_then(|n| n.trim().parse::<i64>().ok())
        {
            live.set_shift(ns);
        }
    }
}

/// The job a worker was given, as the command it runs: no status line,
/// no statistics file, no summary file (the caller adds what it wants).
pub fn job_of(w: WorkerJob) -> Job {
    // The worker checked the job as it came (`jobwire::from_proto`);
    // the command checks its options again, as for any command line.
    let mut run = RunOpts::new(w.to, w.job.send);
    run.quiet = true;
    run.rx_streams_from = w.streams_from;
    run.clock_shift = w.clock_shift;
    if let Some(r) = w.receive {
        run.rx = Some(r.iface);
        run.rx_wait = r.wait;
        run.rx_clock = r.clocks;
    }
    let part = ShareOpts {
        start_at: Some(w.start_at),
        share: w
            .share
            .map(|(index, count)| sluice_source::Share { index, count }),
    };
    match w.job.work {
        Work::Replay(opts) => Job::Replay(ReplayArgs {
            part,
            ..ReplayArgs::of(vec![w.input], opts, run)
        }),
        Work::Flows(opts) => Job::Flows(RunArgs {
            session: w.input,
            opts,
            run,
            part,
            // A template's capture is an upload beside the session.
            confine_inputs: true,
        }),
        Work::Series { opts, .. } => Job::Series(PlayArgs {
            archive: w.input,
            map: w.map,
            opts,
            run,
            part,
            also_to: w.also_to,
        }),
        Work::Profile(opts) => Job::Profile(ProfileRunArgs {
            profile: w.input,
            opts,
            run,
            part,
            share_by: w.share_by,
            fourier: w.fourier,
            also_to: w.also_to,
            // A profile's `from:` captures are uploads beside it, nothing else.
            confine_inputs: true,
        }),
    }
}
