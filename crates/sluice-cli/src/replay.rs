//! `sluice replay`: phase two (validated plan: open the trace and sinks),
//! then run and report.

use crate::args::ReplayArgs;
use crate::progress::Progress;
use crate::runopts::{check_threads, engine_config, exit_code, open_output, open_sinks, report};
use crate::{bad_input, signals, Failure};
use anyhow::{anyhow, Context};
use sluice_engine::{run_replay, EngineConfig, EngineError};
use sluice_pace::TimingMode;
use sluice_source::{ReplayConfig, ReplaySource, SourceError};

pub fn run(a: ReplayArgs) -> Result<u8, Failure> {
    let timing = timing_mode(&a)?;
    check_threads(&a.run, &a.to)?;
    let source = ReplaySource::open(ReplayConfig {
        path: a.trace.clone(),
        timing,
        loops: a.loops,
        limit: a.limit,
        max_due: a.duration,
        payload: a.payload,
        src_mac: a.src_mac,
        dst_mac: a.dst_mac,
        skip_unsupported: a.skip_unsupported,
        threads: a.run.threads,
        preload: a.preload,
    })
    .map_err(bad_input)?;
    let sinks = open_sinks(&a.run, &a.to, false)?;
    let stats_out = a.run.stats_json.as_deref().map(open_output).transpose()?;
    let stop = signals::install().context("installing signal handlers")?;
    let cfg = EngineConfig {
        duration: a.duration,
        preload_budget: a.preload_max,
        ..engine_config(&a.run, stop, timing == TimingMode::TopSpeed)
    };
    let mut progress = Progress::new(a.run.quiet, stats_out);
    let result = run_replay(source, sinks, &cfg, &mut progress);
    progress.finish();
    let summary = result.map_err(|e| match e {
        EngineError::Source(SourceError::Capture(_)) | EngineError::Source(_) => bad_input(e),
        other => Failure::from(other),
    })?;
    report(&a.run, &summary)?;
    if let Some(e) = progress.json_error {
        return Err(anyhow::Error::new(e).context("writing --stats-json").into());
    }
    Ok(exit_code(&summary))
}

fn timing_mode(a: &ReplayArgs) -> Result<TimingMode, Failure> {
    Ok(if a.topspeed {
        TimingMode::TopSpeed
    } else if let Some(pps) = a.pps {
        TimingMode::Pps(pps)
    } else if let Some(mbps) = a.mbps {
        TimingMode::Mbps(mbps)
    } else {
        let m = a.multiplier.unwrap_or(1.0);
        if !(m.is_finite() && m > 0.0) {
            return Err(bad_input(anyhow!(
                "--multiplier must be a positive number, got {m}"
            )));
        }
        TimingMode::Recorded { multiplier: m }
    })
}
