//! Phase two of every sending command: from parsed arguments to what the
//! libraries run (sinks per TX thread, CPU placement, the engine
//! settings), then the report and the exit code.

use crate::args::RunOpts;
use crate::dest::{self, Dest};
use crate::progress::Progress;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_engine::{EngineConfig, EngineError, Summary};
use sluice_sink::{
    AfPacketSink, DualSink, NullSink, PcapSink, Sink, SinkError, SinkSpec, UdpSink, XdpSink,
};
use sluice_source::Fault;
use std::io::Write;
use std::path::Path;

/// Opens the outputs (one sink per TX thread, `--stats-json`, signal
/// handlers), runs `go` with them and the engine settings `cfg` (its stop
/// flag wired to the signals), and concludes: summary, `--summary-json`,
/// exit code. Every sending command ends here.
///
/// Before anything is opened, no output (`--to pcap:`, `--stats-json`,
/// `--summary-json`) may be one of `inputs` or another output; every
/// output is prepared before the run (a bad path fails before sending).
pub fn send(
    o: &RunOpts,
    allow_udp: bool,
    inputs: &[&Path],
    cfg: EngineConfig,
    go: impl FnOnce(Vec<Box<dyn Sink>>, &EngineConfig, &mut Progress) -> Result<Summary, EngineError>,
) -> Result<u8, Failure> {
    send_two(o, None, allow_udp, inputs, cfg, go)
}

/// [`send`] with a second output (two-port replay, `--to2`): each TX
/// thread gets one sink of each, joined in a [`DualSink`].
pub fn send_two(
    o: &RunOpts,
    to2: Option<&SinkSpec>,
    allow_udp: bool,
    inputs: &[&Path],
    cfg: EngineConfig,
    go: impl FnOnce(Vec<Box<dyn Sink>>, &EngineConfig, &mut Progress) -> Result<Summary, EngineError>,
) -> Result<u8, Failure> {
    if o.clock == sluice_engine::ClockChoice::Tsc {
        sluice_sys::tsc::invariant().map_err(|e| bad_input(anyhow!("--clock tsc: {e}")))?;
    }
    let to = &o.to;
    let mut outputs = run_outputs(o);
    if let Some(SinkSpec::Pcap(p)) = to2 {
        outputs.push(p.to_string_lossy().into_owned());
    }
    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    dest::check(inputs, &outputs)?;
    crate::json::set_inputs(inputs);
    let summary_out = o.summary_json.as_deref().map(Dest::open).transpose()?;
    let stats_out = o.stats_json.as_deref().map(Dest::open).transpose()?;
    let mut sinks = open_sinks(o, to, allow_udp)?;
    if let Some(to2) = to2 {
        let second = open_sinks(o, to2, allow_udp)?;
        sinks = sinks
            .into_iter()
            .zip(second)
            .map(|(a, b)| Box::new(DualSink::new(a, b)) as Box<dyn Sink>)
            .collect();
    }
    let stop = crate::signals::install().context("installing signal handlers")?;
    let mut progress = Progress::new(o.quiet, stats_out);
    progress.length = crate::progress::Length {
        duration_s: cfg.duration.map(|d| d.0 as f64 / 1e9),
        packets: cfg.limit,
    };
    let cfg = EngineConfig { stop, ..cfg };
    let result = go(sinks, &cfg, &mut progress);
    conclude(progress, summary_out, result)
}

/// The files a sending command writes: `--to pcap:`, `--stats-json`,
/// `--summary-json` (a command with outputs of its own checks them with
/// these against its inputs, before [`send`]).
pub fn run_outputs(o: &RunOpts) -> Vec<String> {
    let pcap = match &o.to {
        SinkSpec::Pcap(p) => Some(p.to_string_lossy().into_owned()),
        _ => None,
    };
    [pcap, o.stats_json.clone(), o.summary_json.clone()]
        .into_iter()
        .flatten()
        .collect()
}

/// Checks the thread count against the sink.
pub fn check_threads(o: &RunOpts, to: &SinkSpec) -> Result<(), Failure> {
    if o.threads == 0 || o.threads > 256 {
        return Err(bad_input(anyhow!("--threads must be between 1 and 256")));
    }
    if matches!(to, SinkSpec::Pcap(_)) && o.threads > 1 {
        return Err(bad_input(anyhow!(
            "--threads > 1 needs a network or null sink: one pcap file cannot take several writers"
        )));
    }
    Ok(())
}

/// `--tx-queues`: an xdp sink's, one distinct queue per TX thread.
fn check_queues(o: &RunOpts, to: &SinkSpec) -> Result<(), Failure> {
    if let Some(q) = &o.tx_queues {
        if !matches!(to, SinkSpec::Xdp(_)) {
            return Err(bad_input(anyhow!("--tx-queues needs an xdp:IFACE sink")));
        }
        if q.0.len() != o.threads {
            return Err(bad_input(anyhow!(
                "--tx-queues names {} queue(s) for {} TX thread(s): give one per thread",
                q.0.len(),
                o.threads
            )));
        }
        let mut seen = q.0.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != q.0.len() {
            return Err(bad_input(anyhow!(
                "--tx-queues names a queue twice: an interface queue takes one XDP socket"
            )));
        }
    }
    Ok(())
}

/// One sink per TX thread. `udp` is allowed only where datagrams make sense.
fn open_sinks(o: &RunOpts, to: &SinkSpec, allow_udp: bool) -> Result<Vec<Box<dyn Sink>>, Failure> {
    check_queues(o, to)?;
    sluice_sink::launch::check(o.launch_time, to, o.xdp_mode).map_err(|e| bad_input(anyhow!(e)))?;
    (0..o.threads)
        .map(|k| -> Result<Box<dyn Sink>, Failure> {
            Ok(match to {
                SinkSpec::Null => Box::new(NullSink::default()),
                SinkSpec::Pcap(p) => Box::new(PcapSink::create(p).map_err(|e| match e {
                    // Like every file output: unwritable is exit 1, aliasing 2.
                    SinkError::Output(e) => crate::dest::output_failure(e),
                    other => bad_input(other),
                })?),
                SinkSpec::AfPacket(iface) => {
                    Box::new(AfPacketSink::open(iface, o.tx_mode).map_err(crate::open_failure)?)
                }
                SinkSpec::Xdp(iface) => {
                    let queue = o.tx_queues.as_ref().and_then(|q| q.0.get(k)).copied().unwrap_or(k) as u32;
                    Box::new(XdpSink::open(iface, queue, o.xdp_mode).map_err(crate::open_failure)?)
                }
                SinkSpec::Udp(target) if allow_udp => {
                    Box::new(UdpSink::open(target).map_err(crate::open_failure)?)
                }
                SinkSpec::Udp(_) => {
                    return Err(bad_input(anyhow!(
                        "replay sends whole frames; the udp sink takes datagram payloads (use it with `sluice series play`)"
                    )))
                }
            })
        })
        .collect()
}

/// `--cpu` if given; else, when there are more CPUs than TX threads, the
/// last CPUs (TX thread i on CPU n-1-i), leaving CPU 0 and up to the IO
/// thread, the aggregator and the rest of the system: a TX thread that
/// shares its CPU is late by whatever runs there.
pub fn tx_cpus(o: &RunOpts) -> Vec<usize> {
    if let Some(c) = &o.cpu {
        return c.0.clone();
    }
    let n = sluice_sys::cpus::online_cpus();
    if o.no_pin || n <= o.threads {
        return Vec::new();
    }
    (0..o.threads).map(|i| n - 1 - i).collect()
}

/// Engine settings from the shared options (the stop flag is wired by
/// [`send`]).
pub fn engine_config(o: &RunOpts, topspeed: bool) -> EngineConfig {
    EngineConfig {
        limit: o.limit,
        duration: o.duration,
        clock: o.clock,
        spin: o.spin,
        drift: o.drift,
        late_threshold: o.late_threshold,
        cpus: tx_cpus(o),
        realtime: o.rt,
        topspeed,
        ..EngineConfig::default()
    }
}

/// Writes `--summary-json`, then prints the summary on stderr: the file
/// comes first, so a reader that dies (or a stderr that blocks) never
/// costs the run its summary.
fn report(s: &Summary, out: Option<Dest>) -> Result<(), Failure> {
    let written = match out {
        Some(mut out) => crate::json::pretty(crate::json::Kind::Summary, s)
            .and_then(|text| {
                writeln!(out, "{text}")
                    .and_then(|_| out.commit())
                    .context("writing --summary-json")
            })
            .map_err(Failure::from),
        None => Ok(()),
    };
    eoutln!("{}", s.render());
    if s.packets >= 1000 && s.late * 20 > s.packets {
        eoutln!(
            "hint: {} of {} packets left late: `sluice doctor` checks the clock, \
             CPUs, priority and the platform's timing floor, and says what to fix",
            s.late,
            s.packets
        );
    }
    written
}

/// After a run: the summary (or the error, as bad input when the input was
/// at fault), `--summary-json`, a `--stats-json` write failure, and the
/// exit code.
fn conclude(
    mut progress: Progress,
    summary_out: Option<Dest>,
    result: Result<Summary, EngineError>,
) -> Result<u8, Failure> {
    progress.finish();
    let summary = match result {
        Ok(s) => s,
        Err(EngineError::AfterSending { error, summary }) => {
            // What was sent before the failure is reported all the same.
            report(&summary, summary_out)?;
            return Err(engine_failure(*error));
        }
        Err(e) => return Err(engine_failure(e)),
    };
    report(&summary, summary_out)?;
    if let Some(e) = progress.json_error {
        return Err(anyhow::Error::new(e).context("writing --stats-json").into());
    }
    Ok(exit_code(&summary))
}

/// An engine error with the exit code it deserves: bad input for what the
/// sources read, a run-time failure for a device (a sink's, or a live
/// source's TAP or socket) and everything else.
fn engine_failure(e: EngineError) -> Failure {
    match e.fault() {
        Fault::Input => bad_input(e),
        // A sink, or a TAP or socket failing mid-run.
        Fault::Environment => Failure::from(e),
    }
}

/// The documented exit code for a finished run.
fn exit_code(s: &Summary) -> u8 {
    if s.interrupted {
        exit::INTERRUPTED
    } else if s.oversize + s.too_short + s.rejected > 0 {
        exit::PARTIAL
    } else {
        exit::OK
    }
}
