//! `sluice replay`: phase two (validated plan: open the trace and sinks),
//! then run and report.

use crate::args::{ClockArg, ReplayArgs, TxModeArg};
use crate::progress::Progress;
use crate::{bad_input, exit, signals, Failure};
use anyhow::{anyhow, Context};
use sluice_engine::{run_replay, ClockChoice, EngineConfig, EngineError, Summary};
use sluice_pace::TimingMode;
use sluice_sink::{AfPacketSink, NullSink, PcapSink, Sink, SinkSpec, TxMode};
use sluice_source::{ReplayConfig, ReplaySource, SourceError};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

pub fn run(a: ReplayArgs) -> Result<u8, Failure> {
    let timing = timing_mode(&a)?;
    if a.threads == 0 || a.threads > 256 {
        return Err(bad_input(anyhow!("--threads must be between 1 and 256")));
    }
    if let SinkSpec::Pcap(_) = a.to {
        if a.threads > 1 {
            return Err(bad_input(anyhow!(
                "--threads > 1 needs a network or null sink: one pcap file cannot take several writers"
            )));
        }
    }
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
        threads: a.threads,
        preload: a.preload,
    })
    .map_err(bad_input)?;
    let sinks = open_sinks(&a)?;
    let stats_out = a.stats_json.as_deref().map(open_output).transpose()?;
    let stop = signals::install().context("installing signal handlers")?;
    let cfg = EngineConfig {
        clock: match a.clock {
            ClockArg::Monotonic => ClockChoice::Monotonic,
            ClockArg::Virtual => ClockChoice::Virtual,
        },
        spin: a.spin,
        drift: a.drift,
        late_threshold: a.late_threshold,
        cpus: tx_cpus(&a),
        realtime: a.rt,
        duration: a.duration,
        stop,
        topspeed: timing == TimingMode::TopSpeed,
        preload_budget: a.preload_max,
        ..EngineConfig::default()
    };
    let mut progress = Progress::new(a.quiet, stats_out);
    let result = run_replay(source, sinks, &cfg, &mut progress);
    progress.finish();
    let summary = result.map_err(|e| match e {
        EngineError::Source(SourceError::Capture(_)) | EngineError::Source(_) => bad_input(e),
        other => Failure::from(other),
    })?;
    report(&a, &summary)?;
    if let Some(e) = progress.json_error {
        return Err(anyhow::Error::new(e).context("writing --stats-json").into());
    }
    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else if summary.oversize > 0 {
        exit::PARTIAL
    } else {
        exit::OK
    })
}

/// `--cpu` if given; else, when there are more CPUs than TX threads, the
/// last CPUs (TX thread i on CPU n-1-i), leaving CPU 0 and up to the IO
/// thread, the aggregator and the rest of the system. Pinning is what takes
/// the sender's ε p99 from microseconds to tens of nanoseconds on a small
/// machine (README, Benchmarks).
fn tx_cpus(a: &ReplayArgs) -> Vec<usize> {
    if let Some(c) = &a.cpu {
        return c.0.clone();
    }
    let n = sluice_sink::os::online_cpus();
    if a.no_pin || n <= a.threads {
        return Vec::new();
    }
    (0..a.threads).map(|i| n - 1 - i).collect()
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

fn open_sinks(a: &ReplayArgs) -> Result<Vec<Box<dyn Sink>>, Failure> {
    (0..a.threads)
        .map(|_| -> Result<Box<dyn Sink>, Failure> {
            Ok(match &a.to {
                SinkSpec::Null => Box::new(NullSink::default()),
                SinkSpec::Pcap(p) => Box::new(PcapSink::create(p).map_err(bad_input)?),
                SinkSpec::AfPacket(iface) => {
                    let mode = match a.tx_mode {
                        TxModeArg::Ring => TxMode::Auto,
                        TxModeArg::Sendmmsg => TxMode::Sendmmsg,
                    };
                    Box::new(AfPacketSink::open(iface, mode).map_err(bad_input)?)
                }
            })
        })
        .collect()
}

/// `-` is stdout; anything else a file created now (so a bad path fails
/// before the run, not after it).
fn open_output(spec: &str) -> Result<Box<dyn Write>, Failure> {
    if spec == "-" {
        return Ok(Box::new(std::io::stdout()));
    }
    let path = PathBuf::from(spec);
    let f = File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))
        .map_err(bad_input)?;
    Ok(Box::new(BufWriter::new(f)))
}

fn report(a: &ReplayArgs, s: &Summary) -> Result<(), Failure> {
    eprintln!("{}", s.render());
    if let Some(spec) = &a.summary_json {
        let mut out = open_output(spec)?;
        serde_json::to_writer_pretty(&mut out, s).context("writing --summary-json")?;
        writeln!(out)
            .and_then(|_| out.flush())
            .context("writing --summary-json")?;
    }
    Ok(())
}
