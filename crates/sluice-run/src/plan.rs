//! Phase two of every sending command: from parsed arguments to what the
//! libraries run (sinks per TX thread, CPU placement, the engine
//! settings), then the report and the exit code.

use crate::dest::{self, Dest};
use crate::progress::{Progress, Watch};
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_engine::{EngineConfig, EngineError, LiveRate, RxStampMode, Summary};
use sluice_job::command::RunOpts;
use sluice_job::rate::{Nominal, Ramp};
use sluice_pace::Timeline;
use sluice_receive::RxDoc;
use sluice_sink::{PortSink, Sink, SinkError, SinkOptions, SinkSpec};
use sluice_source::Fault;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A sending command's checked plan of its run (ripgrep's `HiArgs` is
/// the model): built once from the parsed [`RunOpts`], with every check of
/// them done and the engine settings typed, before anything is opened.
/// The command adds what is its own (inputs, outputs of its own, a second
/// port, engine settings beyond the shared ones), then [`SendPlan::run`]s
/// it; every sending command ends there.
pub struct SendPlan {
    opts: RunOpts,
    /// Outputs after `--to`: two-port replay's `--to2`, series play's
    /// `--also-to`.
    more: Vec<SinkSpec>,
    /// Whether the udp sink (datagram payloads) makes sense here.
    datagrams: bool,
    /// Files the run reads: no output may be one of them.
    inputs: Vec<PathBuf>,
    /// Files the run writes: `--to pcap:`, `--stats-json`,
    /// `--summary-json`, and the command's own.
    outputs: Vec<String>,
    /// The engine settings (the stop flag is wired by [`SendPlan::run`]).
    pub engine: EngineConfig,
    /// The rate the job was planned at ([`SendPlan::rate`]).
    pub nominal: Nominal,
    /// Bytes each xdp sink keeps room for in its UMEM, for the frames of
    /// a preloaded trace (placed once, sent with no copy).
    pub xdp_keep: u64,
}

impl SendPlan {
    /// Checks the shared options (threads against the sink, `--tx-queues`,
    /// `--launch-time`, `--clock tsc`) and types the engine settings.
    pub fn new(opts: &RunOpts, topspeed: bool) -> Result<Self, Failure> {
        sluice_sys::mem::check_address_space(sluice_sys::mem::MIN_ADDRESS_SPACE, "a sending run")
            .map_err(|e| bad_input(anyhow!(e)))?;
        if opts.send.clock == sluice_engine::ClockChoice::Tsc {
            sluice_sys::tsc::invariant().map_err(|e| bad_input(anyhow!("--clock tsc: {e}")))?;
        }
        opts.send.check().map_err(|e| bad_input(anyhow!(e)))?;
        check_sink(opts, &opts.to)?;
        let placement = crate::placement::place(opts, 1)?;
        Ok(SendPlan {
            opts: opts.clone(),
            more: Vec::new(),
            datagrams: false,
            // The metrics token is read (or made): no output may be it.
            inputs: opts.metrics_token_file.iter().cloned().collect(),
            outputs: run_outputs(opts),
            engine: engine_config(opts, topspeed, placement),
            nominal: Nominal::None("this command"),
            xdp_keep: 0,
        }
        .reads_ramp())
    }

    /// Places `n` planner threads (flows run's planners, series play's
    /// workers) instead of the one reader.
    pub fn planners(mut self, n: usize) -> Result<Self, Failure> {
        self.engine.placement = Some(crate::placement::place(&self.opts, n)?);
        Ok(self)
    }

    /// `--ramp-file` is read: no output may be it.
    fn reads_ramp(self) -> Self {
        match self.opts.ramp_file.clone() {
            Some(f) => self.reads(&f),
            None => self,
        }
    }

    /// The rate the job was planned at (top speed: none): `--ramp` and
    /// `--ramp-file` become the run's live timeline, in its unit.
    pub fn rate(mut self, nominal: Nominal) -> Result<Self, Failure> {
        self.nominal = if self.engine.topspeed {
            Nominal::None("a top-speed run")
        } else {
            nominal
        };
        let o = &self.opts;
        let (ramp, what) = match (&o.send.ramp, &o.ramp_file) {
            (Some(r), _) => (r.clone(), "--ramp".to_string()),
            (None, Some(f)) => (
                Ramp::read(f).map_err(|e| bad_input(anyhow!("--ramp-file {e}")))?,
                format!("--ramp-file {}", f.display()),
            ),
            (None, None) => return Ok(self),
        };
        let scales = ramp
            .scales(&self.nominal)
            .map_err(|e| bad_input(anyhow!("{what}: {e}")))?;
        let timeline =
            Timeline::from_points(&scales).map_err(|e| bad_input(anyhow!("{what}: {e}")))?;
        self.engine.live = Some(LiveRate::new(timeline));
        Ok(self)
    }

    /// The run's live rate (made at a constant scale of 1 when there was
    /// none), for a caller that changes it while the job runs.
    pub fn live(&mut self) -> Arc<LiveRate> {
        self.engine
            .live
            .get_or_insert_with(|| LiveRate::new(Timeline::constant(1.0)))
            .clone()
    }

    /// The run reads `path` (no output may be it).
    pub fn reads(mut self, path: &Path) -> Self {
        self.inputs.push(path.to_path_buf());
        self
    }

    /// The command writes `path` itself (checked with the run's outputs).
    pub fn writes(mut self, path: &str) -> Self {
        self.outputs.push(path.to_string());
        self
    }

    /// Another output (two-port replay's `--to2`, series play's
    /// `--also-to`): each TX thread gets one sink of each, joined in a
    /// [`PortSink`] (output k is port k, `--to` port 0).
    pub fn second_port(mut self, to2: &SinkSpec) -> Result<Self, Failure> {
        check_sink(&self.opts, to2)?;
        self.outputs
            .extend(sink_outputs(to2, self.opts.send.threads));
        self.more.push(to2.clone());
        Ok(self)
    }

    /// `--also-to`: further outputs, each a [`second_port`](Self::second_port).
    pub fn also_to(mut self, outs: &[SinkSpec]) -> Result<Self, Failure> {
        if outs.is_empty() {
            return Ok(self);
        }
        if std::iter::once(&self.opts.to)
            .chain(outs)
            .any(|s| matches!(s, SinkSpec::Udp(_)))
        {
            return Err(bad_input(anyhow!(
                "--also-to: several outputs take frames; the udp sink sends through the kernel's routes"
            )));
        }
        if outs.len() > usize::from(u8::MAX) {
            return Err(bad_input(anyhow!(
                "--also-to: at most {} outputs more",
                u8::MAX
            )));
        }
        for to in outs {
            self = self.second_port(to)?;
        }
        Ok(self)
    }

    /// The udp sink may be used (the command sends datagram payloads).
    pub fn datagrams(mut self) -> Self {
        self.datagrams = true;
        self
    }

    /// The files the run reads.
    fn input_paths(&self) -> Vec<&Path> {
        self.inputs.iter().map(PathBuf::as_path).collect()
    }

    /// No output is an input or another output (before a command opens
    /// outputs of its own; [`SendPlan::run`] checks again).
    pub fn check_files(&self) -> Result<(), Failure> {
        let outputs: Vec<&str> = self.outputs.iter().map(String::as_str).collect();
        dest::check(&self.input_paths(), &outputs)
    }

    /// What the command sends fits its sinks and its rate: datagrams only
    /// where the command makes them, a ramp only with a rate to change,
    /// bursts only with a schedule of their own (or at top speed, with no
    /// gap).
    fn check_sends(&self) -> Result<(), Failure> {
        let o = &self.opts;
        for to in std::iter::once(&o.to).chain(&self.more) {
            if matches!(to, SinkSpec::Udp(_)) && !self.datagrams {
                return Err(bad_input(anyhow!(
                    "--to {to}: this command sends whole frames; the udp sink takes datagram payloads (use it with `sluice series play`)"
                )));
            }
        }
        if o.send.ramp.is_some() || o.ramp_file.is_some() {
            if let Nominal::None(why) = self.nominal {
                return Err(bad_input(anyhow!(
                    "--ramp: {why}: it has no rate to change"
                )));
            }
        }
        if let (Some(b), Nominal::None(why)) = (o.send.bursts, self.nominal) {
            if !self.engine.topspeed {
                return Err(bad_input(anyhow!(
                    "--bursts {b}: {why} has no schedule of its own to send in bursts"
                )));
            }
        }
        if let Some(b) = o.send.bursts.filter(|b| b.gap.0 > 0) {
            if self.engine.topspeed {
                return Err(bad_input(anyhow!(
                    "--bursts {b}: a top-speed run keeps no gap; give a rate, or --limit for one burst"
                )));
            }
        }
        Ok(())
    }

    /// [`SendPlan::start`] stopped by SIGINT/SIGTERM, then
    /// [`Ran::conclude`]: the command line's run.
    pub fn run<'g>(self, go: impl GoFn + 'g) -> Result<u8, Failure> {
        let stop = crate::signals::install().context("installing signal handlers")?;
        self.start(stop, Box::new(go), None)?.conclude()
    }

    /// Opens the outputs (one sink per TX thread, `--stats-json`, the
    /// receiver) and runs `go` with them and the engine settings, stopped
    /// by `stop` and observed by `watch` too: the run, ended, before it is
    /// reported. Every output is prepared before the run, so a bad path
    /// fails before sending.
    pub fn start(
        self,
        stop: Arc<AtomicBool>,
        go: Go,
        watch: Option<Watch>,
    ) -> Result<Ran, Failure> {
        self.check_sends()?;
        let o = &self.opts;
        self.check_files()?;
        crate::json::set_inputs(&self.input_paths());
        let mut engine = self.engine;
        if let Some(p) = engine.placement.as_mut() {
            crate::placement::apply_memory(p);
        }
        let summary_out = o.summary_json.as_deref().map(Dest::open).transpose()?;
        let stats_out = o
            .stats_json
            .as_deref()
            .map(|p| Dest::open_log(p, "--stats-json"))
            .transpose()?;
        let mut sinks = open_sinks(o, &o.to, self.xdp_keep)?;
        if !self.more.is_empty() {
            let mut each: Vec<Vec<Box<dyn Sink>>> = sinks.into_iter().map(|s| vec![s]).collect();
            for to in &self.more {
                for (outs, s) in each.iter_mut().zip(open_sinks(o, to, self.xdp_keep)?) {
                    outs.push(s);
                }
            }
            sinks = each
                .into_iter()
                .map(|outs| Box::new(PortSink::new(outs)) as Box<dyn Sink>)
                .collect();
        }
        let metrics = o.metrics.map(|addr| serve_metrics(o, addr)).transpose()?;
        let mut progress = Progress::new(o.quiet, stats_out);
        progress
            .watch
            .extend(metrics.as_ref().map(crate::metrics::Metrics::watch));
        progress.watch.extend(watch);
        progress.length = crate::progress::Length {
            duration_s: engine.duration.map(|d| d.0 as f64 / 1e9),
            packets: engine.limit,
        };
        let eps_writer = match &o.eps_log {
            Some(path) => Some(start_eps_log(path, &mut engine)?),
            None => None,
        };
        let cfg = EngineConfig { stop, ..engine };
        if let Some(at) = cfg.start_at {
            let wait = at.saturating_sub(sluice_sys::clock::realtime_ns());
            if wait >= 1_000_000_000 && !o.quiet {
                eoutln!(
                    "sluice: waiting {} for --start-at {at} (SIGINT stops)",
                    sluice_core::Nanos(wait)
                );
            }
        }
        let beside = o
            .rx
            .as_deref()
            .map(|iface| {
                sluice_receive::Beside::start(iface, o.rx_clock.clone(), o.clock_shift, o.rx_path)
            })
            .transpose()
            .map_err(crate::failure::receive_failure)?;
        progress.rx = beside.as_ref().map(|b| b.live.clone());
        if let (Some(m), Some(b)) = (&metrics, &beside) {
            m.follow(b.live.clone());
        }
        let mut result = go(sinks, &cfg, &mut progress);
        // The ε log's writer ends once the last sender of its rows is gone.
        drop(cfg);
        if let Some(w) = eps_writer {
            w.end(&mut result)?;
        }
        // The last scrape may come until the run ends.
        drop(metrics);
        let rx = beside
            .map(|b| b.finish(std::time::Duration::from_nanos(o.rx_wait.0)))
            .transpose()
            .map_err(crate::failure::receive_failure)?;
        Ok(Ran {
            progress,
            summary_out,
            result,
            rx,
        })
    }
}

/// `--eps-log PATH`: its file and the thread writing it.
struct EpsWriter {
    path: String,
    thread: std::thread::JoinHandle<std::io::Result<(Dest, u64)>>,
    lost: Arc<std::sync::atomic::AtomicU64>,
}

fn start_eps_log(path: &str, engine: &mut EngineConfig) -> Result<EpsWriter, Failure> {
    if engine.topspeed {
        return Err(bad_input(anyhow!(
            "--eps-log {path}: a top-speed run has no schedule, so no send-time error to log"
        )));
    }
    let dest = Dest::open(path)?;
    let (log, rx) = sluice_engine::epslog::EpsLog::new();
    let lost = log.lost.clone();
    engine.eps_log = Some(log);
    let thread = std::thread::Builder::new()
        .name("sluice-epslog".into())
        .spawn(move || {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, dest);
            let rows = sluice_engine::epslog::write_csv(rx, &mut w)?;
            Ok((w.into_inner().map_err(|e| e.into_error())?, rows))
        })
        .context("starting the --eps-log writer")?;
    Ok(EpsWriter {
        path: path.to_string(),
        thread,
        lost,
    })
}

impl EpsWriter {
    /// Waits for the rows, then keeps the file if the run ended well (a
    /// failed run leaves an earlier file as it was); rows lost to a slow
    /// writer become a warning.
    fn end(self, result: &mut Result<Summary, EngineError>) -> Result<(), Failure> {
        let (dest, _rows) = self
            .thread
            .join()
            .map_err(|_| anyhow!("the --eps-log writer panicked"))?
            .with_context(|| format!("writing --eps-log {}", self.path))?;
        let complete = matches!(&*result, Ok(s) if !s.interrupted);
        dest.end(complete)
            .with_context(|| format!("writing --eps-log {}", self.path))?;
        let lost = self.lost.load(std::sync::atomic::Ordering::Relaxed);
        if let (Ok(s), true) = (result, lost > 0) {
            s.warnings.push(format!(
                "--eps-log {}: {lost} packets' rows lost: the file's writer fell behind the TX threads",
                self.path
            ));
        }
        Ok(())
    }
}

/// `--metrics ADDR`: the server, its token read (or made) first.
fn serve_metrics(
    o: &RunOpts,
    addr: std::net::SocketAddr,
) -> Result<crate::metrics::Metrics, Failure> {
    // The command line requires it; a job built in code may lack it.
    let file = o
        .metrics_token_file
        .as_deref()
        .ok_or_else(|| bad_input(anyhow!("--metrics {addr}: give --metrics-token-file")))?;
    let token = crate::token::read_or_make(file, "--metrics-token-file")?;
    let m = crate::metrics::Metrics::serve(addr, token)
        .map_err(|e| crate::open_failure(anyhow!("--metrics {addr}: {e}")))?;
    if !o.quiet || addr.port() == 0 {
        eoutln!(
            "sluice: metrics on http://{}/metrics (scrapes need the token of {})",
            m.addr,
            file.display()
        );
    }
    Ok(m)
}

/// What a sending command runs with its sinks and engine settings.
pub trait GoFn:
    FnOnce(Vec<Box<dyn Sink>>, &EngineConfig, &mut Progress) -> Result<Summary, EngineError>
{
}

impl<F> GoFn for F where
    F: FnOnce(Vec<Box<dyn Sink>>, &EngineConfig, &mut Progress) -> Result<Summary, EngineError>
{
}

/// A boxed [`GoFn`]: what a command's preparation hands its plan.
pub type Go<'g> = Box<dyn GoFn + 'g>;

/// A sending job prepared (`run::prepare`, each command's
/// `prepare`): its checked plan and what sends with it.
pub struct Prepared<'a> {
    pub plan: SendPlan,
    pub go: Go<'a>,
}

impl Prepared<'_> {
    /// The command line's run: [`SendPlan::run`].
    pub fn run(self) -> Result<u8, Failure> {
        self.plan.run(self.go)
    }
}

/// A run that has ended, before it is reported: by the command line
/// ([`Ran::conclude`]) or to a caller in this process ([`Ran::report`]).
pub struct Ran {
    progress: Progress,
    summary_out: Option<Dest>,
    result: Result<Summary, EngineError>,
    rx: Option<RxDoc>,
}

impl Ran {
    /// The typed report, printed nowhere (its `--stats-json` closed, a
    /// `--summary-json` left as it was): a run that is one part of a
    /// larger one (an RFC 2544 trial, `demo`).
    pub fn report(self) -> Result<Report, Failure> {
        let mut progress = self.progress;
        progress.finish(matches!(&self.result, Ok(s) if !s.interrupted));
        match self.result {
            Ok(summary) => Ok(Report {
                summary,
                rx: self.rx,
            }),
            Err(e) => Err(engine_failure(e)),
        }
    }

    /// The command line's ending: the summary on stderr, `--summary-json`
    /// and the exit code.
    pub fn conclude(self) -> Result<u8, Failure> {
        let Ran {
            mut progress,
            summary_out,
            result,
            rx,
        } = self;
        // Only a run that ended well replaces earlier outputs.
        let complete = matches!(&result, Ok(s) if !s.interrupted);
        if let Some(r) = &rx {
            progress.rx_final(r);
        }
        progress.finish(complete);
        let summary = match result {
            Ok(s) => s,
            Err(EngineError::AfterSending { error, summary }) => {
                // What was sent before the failure is reported all the same.
                report(&summary, rx.as_ref(), summary_out, false)?;
                return Err(engine_failure(*error));
            }
            Err(e) => return Err(engine_failure(e)),
        };
        report(&summary, rx.as_ref(), summary_out, complete)?;
        if let Some(e) = progress.json_error {
            return Err(anyhow::Error::new(e).context("writing --stats-json").into());
        }
        if let Some(r) = rx.as_ref().filter(|r| r.frames == 0 && summary.packets > 0) {
            return Err(Failure {
                code: exit::FATAL,
                error: anyhow!(
                    "--rx {}: none of the {} stamped frames sent arrived there ({} other frames did)",
                    r.iface,
                    summary.packets,
                    r.unstamped
                ),
            });
        }
        Ok(exit_code(&summary))
    }
}

/// A sending run's typed report: what `--summary-json` writes.
pub struct Report {
    pub summary: Summary,
    /// What `--rx` counted (none without it).
    pub rx: Option<RxDoc>,
}

impl Report {
    /// The `--summary-json` document.
    pub fn document(&self) -> impl serde::Serialize + '_ {
        WithRx {
            summary: &self.summary,
            rx: self.rx.as_ref(),
        }
    }
}

/// The files a sending command writes: `--to pcap:`, `--stats-json`,
/// `--summary-json`.
fn run_outputs(o: &RunOpts) -> Vec<String> {
    sink_outputs(&o.to, o.send.threads)
        .chain(
            [
                o.stats_json.clone(),
                o.summary_json.clone(),
                o.eps_log.clone(),
            ]
            .into_iter()
            .flatten(),
        )
        .collect()
}

/// The files `threads` sinks of `to` write, as the alias check takes them.
fn sink_outputs(to: &SinkSpec, threads: usize) -> impl Iterator<Item = String> {
    to.outputs(threads)
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Checks the run's sink options against the sink `to`.
fn check_sink(o: &RunOpts, to: &SinkSpec) -> Result<(), Failure> {
    to.check(&o.send.sink_options())
        .map_err(|e| bad_input(anyhow!(e)))
}

/// One sink per TX thread (the sink was checked by [`check_sink`]).
fn open_sinks(o: &RunOpts, to: &SinkSpec, keep: u64) -> Result<Vec<Box<dyn Sink>>, Failure> {
    let opts = SinkOptions {
        xdp_keep: keep,
        ..o.send.sink_options()
    };
    (0..o.send.threads)
        .map(|k| {
            to.open(k, &opts).map_err(|e| match e {
                // Like every file output: unwritable is exit 1, aliasing 2.
                SinkError::Output(e) => crate::dest::output_failure(e),
                other if matches!(to, SinkSpec::Pcap(_)) => bad_input(other),
                other => crate::open_failure(other),
            })
        })
        .collect()
}

/// Engine settings from the shared options (the stop flag is wired by
/// [`SendPlan::run`]).
fn engine_config(o: &RunOpts, topspeed: bool, p: sluice_engine::Placement) -> EngineConfig {
    let e = o.send.engine();
    EngineConfig {
        cpus: p.tx_cpus.clone(),
        placement: Some(p),
        topspeed,
        // A pass line goes where the interval lines go.
        pass_stats: o.stats_json.is_some(),
        // A receiver counts stamped frames only.
        rx_stamp: e
            .rx_stamp
            .or(o.rx.is_some().then_some(RxStampMode::Replace)),
        stamp_streams_from: o.rx_streams_from,
        stamp_clock_shift_ns: o.clock_shift,
        ..e
    }
}

/// Writes `--summary-json`, then prints the summary on stderr: the file
/// comes first, so a reader that dies (or a stderr that blocks) never
/// costs the run its summary.
fn report(
    s: &Summary,
    rx: Option<&RxDoc>,
    out: Option<Dest>,
    complete: bool,
) -> Result<(), Failure> {
    let doc = WithRx { summary: s, rx };
    let written = match out {
        Some(mut out) => crate::json::pretty(crate::json::Kind::Summary, &doc)
            .and_then(|text| {
                writeln!(out, "{text}")
                    .and_then(|_| out.end(complete))
                    .context("writing --summary-json")
            })
            .map_err(Failure::from),
        None => Ok(()),
    };
    eoutln!("{}", s.render());
    if let Some(r) = rx {
        eoutln!("{}", sluice_receive::render(r));
    }
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

/// A summary with what `--rx` counted (null without it).
#[derive(serde::Serialize)]
struct WithRx<'a> {
    #[serde(flatten)]
    summary: &'a Summary,
    rx: Option<&'a RxDoc>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_job::command::ReplayArgs;

    /// `sluice replay TRACE ARGS...`, parsed as the binary parses it.
    fn replay(args: &[&str]) -> ReplayArgs {
        let words: Vec<&str> = std::iter::once("in.pcap")
            .chain(args.iter().copied())
            .collect();
        crate::test_args::parse(&words)
    }

    fn refused(plan: Result<SendPlan, Failure>) -> String {
        match plan {
            Ok(_) => panic!("accepted"),
            Err(f) => {
                assert_eq!(f.code, exit::BAD_INPUT);
                format!("{:#}", f.error)
            }
        }
    }

    #[test]
    fn the_shared_options_become_typed_engine_settings_once() {
        let a = replay(&[
            "--to",
            "null",
            "--limit",
            "5",
            "--duration",
            "2s",
            "--threads",
            "2",
        ]);
        let plan = SendPlan::new(&a.run, true).expect("valid");
        assert_eq!(plan.engine.limit, Some(5));
        assert_eq!(
            plan.engine.duration,
            Some(sluice_core::Nanos(2_000_000_000))
        );
        assert!(plan.engine.topspeed);
        assert!(plan.outputs.is_empty(), "null writes no file");
    }

    #[test]
    fn options_that_do_not_fit_the_sink_are_refused_before_anything_opens() {
        let a = replay(&["--to", "pcap:out.pcap", "--threads", "2"]);
        assert!(refused(SendPlan::new(&a.run, false)).contains("--threads > 1"));
        let a = replay(&["--to", "null", "--tx-queues", "0,1"]);
        assert!(refused(SendPlan::new(&a.run, false)).contains("--tx-queues needs an xdp"));
        // A second port is held to the same rules.
        let a = replay(&["--to", "null", "--threads", "2"]);
        let to2 = SinkSpec::Pcap("b.pcap".into());
        let plan = SendPlan::new(&a.run, false).expect("valid");
        assert!(refused(plan.second_port(&to2)).contains("--threads > 1"));
    }

    #[test]
    fn every_file_written_is_checked_against_every_file_read() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("in.pcap");
        std::fs::write(&trace, b"x").unwrap();
        let out = format!("pcap:{}", trace.display());
        let a = replay(&["--to", "null"]);
        let to2: SinkSpec = out.parse().unwrap();
        let plan = SendPlan::new(&a.run, false)
            .unwrap()
            .reads(&trace)
            .second_port(&to2)
            .unwrap();
        let e = plan
            .check_files()
            .expect_err("the second port is the trace");
        assert_eq!(e.code, exit::BAD_INPUT);
        // A command's own output is checked the same way.
        let log = trace.to_string_lossy().into_owned();
        let plan = SendPlan::new(&a.run, false)
            .unwrap()
            .reads(&trace)
            .writes(&log);
        assert!(plan.check_files().is_err());
        let fine = dir.path().join("log.txt").to_string_lossy().into_owned();
        let plan = SendPlan::new(&a.run, false)
            .unwrap()
            .reads(&trace)
            .writes(&fine);
        assert!(plan.check_files().is_ok());
    }

    #[test]
    fn a_udp_sink_where_frames_are_sent_fails_before_any_output_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let summary = dir.path().join("summary.json");
        let summary = summary.to_string_lossy().into_owned();
        let a = replay(&["--to", "udp:127.0.0.1:9", "--summary-json", &summary]);
        let plan = SendPlan::new(&a.run, false).expect("valid so far");
        let e = plan
            .run(|_, _, _| panic!("nothing runs"))
            .expect_err("refused");
        assert_eq!(e.code, exit::BAD_INPUT);
        assert!(format!("{:#}", e.error).contains("udp sink takes datagram payloads"));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
    }
}
