//! Command-line arguments, as parsed (phase one: no side effects).

use crate::series::SeriesArgs;
use clap::{Args, Parser, Subcommand, ValueEnum};
use sluice_core::{parse_count, parse_duration, parse_rate, Nanos};
use sluice_sink::SinkSpec;
use sluice_wire::{MacAddr, PayloadMode};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    version,
    about = "A precise, fast software traffic generator"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Replay a pcap/pcapng trace with its recorded timing (or scaled, fixed rate, top speed).
    Replay(Box<ReplayArgs>),
    /// Analyze a capture: counts, rates, inter-arrival times; against a reference: loss, reordering, |D_M − D_R|.
    Analyze(AnalyzeArgs),
    /// Build a small trace, replay it (through a veth pair as root, else to a pcap file), analyze the result.
    Demo(DemoArgs),
    /// Time-series archives: convert a CSV into an archive, dump an archive as CSV.
    Series(SeriesArgs),
    /// Generate flows and meta-flows from a session, or import flow records into one.
    Flows(crate::flows::FlowsArgs),
}

fn duration(s: &str) -> Result<Nanos, String> {
    parse_duration(s).map_err(|e| e.to_string())
}
fn rate(s: &str) -> Result<f64, String> {
    parse_rate(s).map_err(|e| e.to_string())
}
fn count(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}
/// A comma-separated CPU list (a newtype: clap reads `Option<Vec<T>>` as a
/// repeated option of T, not as one value parsed into a list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

fn cpus(s: &str) -> Result<CpuList, String> {
    sluice_sys::cpus::parse_cpu_list(s).map(CpuList)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Virtual,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TxModeArg {
    /// PACKET_TX_RING (mmap), falling back to sendmmsg.
    Ring,
    /// sendmmsg batches.
    Sendmmsg,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace to replay (pcap or pcapng, optionally gzip-compressed).
    pub trace: PathBuf,
    /// Where packets go: null, pcap:PATH, afpacket:IFACE.
    #[arg(long, short = 't', default_value = "null")]
    pub to: SinkSpec,

    /// Speed up (>1) or slow down (<1) the recorded timing.
    #[arg(long, short = 'x', group = "timing")]
    pub multiplier: Option<f64>,
    /// Send at a fixed packet rate, e.g. 100k.
    #[arg(long, value_parser = rate, group = "timing")]
    pub pps: Option<f64>,
    /// Send at a fixed bit rate in Mbit/s (frame bytes), e.g. 250.
    #[arg(long, value_parser = rate, group = "timing")]
    pub mbps: Option<f64>,
    /// Send as fast as the output accepts.
    #[arg(long, group = "timing")]
    pub topspeed: bool,

    /// Passes over the trace (0 = forever). Time continues across passes.
    #[arg(long = "loop", default_value = "1", value_parser = count)]
    pub loops: u64,
    /// Stop after N packets.
    #[arg(long, value_parser = count)]
    pub limit: Option<u64>,
    /// Read the trace into memory before starting and send every pass from
    /// there (no file reading while sending). Falls back to streaming, with a
    /// warning, if the trace needs more than half of the available memory.
    #[arg(long)]
    pub preload: bool,
    /// Memory budget of --preload in bytes (default: half of MemAvailable).
    #[arg(long, value_parser = count, hide = true)]
    pub preload_max: Option<u64>,
    /// Stop after this long, e.g. 10s.
    #[arg(long, value_parser = duration)]
    pub duration: Option<Nanos>,

    /// Payload handling: keep, zero (same length), truncate (headers only); checksums are recomputed.
    #[arg(long, default_value = "keep")]
    pub payload: PayloadMode,
    /// Source MAC for frames whose link type has none (raw IP, SLL, NULL).
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub src_mac: MacAddr,
    /// Destination MAC for frames whose link type has none.
    #[arg(long, default_value = "02:00:00:00:00:02")]
    pub dst_mac: MacAddr,
    /// Skip (and count) packets of unsupported link types instead of refusing the trace.
    #[arg(long)]
    pub skip_unsupported: bool,

    #[command(flatten)]
    pub run: RunOpts,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Capture to analyze (pcap or pcapng).
    pub capture: PathBuf,
    /// The trace that was sent: match packets by content, report loss, reordering, |D_M − D_R|.
    #[arg(long, short = 'r')]
    pub reference: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Act as a flow collector: 7-tuple flow records (first/last, packets, bytes).
    #[arg(long, conflicts_with = "reference")]
    pub flows: bool,
    /// With --flows: the session that was generated; report per-flow start and duration errors and count mismatches.
    #[arg(long, requires = "flows")]
    pub session: Option<PathBuf>,
    /// With --session: the seed the run used (default: the session's).
    #[arg(long, requires = "session")]
    pub seed: Option<u64>,
    /// Flow meter active timeout: a longer flow is split.
    #[arg(long, value_parser = duration, default_value = "30min")]
    pub active_timeout: Nanos,
    /// Flow meter idle timeout: a longer gap ends a flow.
    #[arg(long, value_parser = duration, default_value = "15s")]
    pub idle_timeout: Nanos,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Keep the demo's files in this directory (default: a temporary one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Packets per second of the demo trace.
    #[arg(long, value_parser = rate, default_value = "20k")]
    pub pps: f64,
    /// Packets in the demo trace.
    #[arg(long, value_parser = count, default_value = "20000")]
    pub packets: u64,
    /// Never use a veth pair, even as root.
    #[arg(long)]
    pub no_veth: bool,
}

/// Options every sending command shares: threads and their CPUs, timing
/// precision, outputs of statistics.
#[derive(Args, Debug)]
pub struct RunOpts {
    /// TX threads (replay: each flow goes to the least-loaded thread when first seen, per-flow order kept).
    #[arg(long, default_value = "1")]
    pub threads: usize,
    /// Pin TX threads to these CPUs, e.g. 1 or 0,1.
    #[arg(long, value_parser = cpus)]
    pub cpu: Option<CpuList>,
    /// Do not pin TX threads (by default they go to the last CPUs when there are more CPUs than TX threads).
    #[arg(long, conflicts_with = "cpu")]
    pub no_pin: bool,
    /// SCHED_FIFO priority and mlockall for the TX threads.
    #[arg(long)]
    pub rt: bool,
    /// How frames reach an afpacket interface.
    #[arg(long, value_enum, default_value = "ring")]
    pub tx_mode: TxModeArg,

    /// Write one JSON object per second to PATH (- for stdout).
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the final summary as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// No live status line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Clock: monotonic (real) or virtual (instant, deterministic; for tests and conversion).
    #[arg(long, value_enum, default_value = "monotonic", hide = true)]
    pub clock: ClockArg,

    /// Drift window T_d: drop (and count as time violations) packets (records) later than this.
    #[arg(long, value_parser = duration)]
    pub drift: Option<Nanos>,
    /// Count a packet as late when ε exceeds this.
    #[arg(long, value_parser = duration, default_value = "10us")]
    pub late_threshold: Nanos,
    /// Spin instead of sleeping for the last stretch before each send. Long
    /// sleeps wake up late on a busy or virtual machine (1 ms here gave ε
    /// p99.9 of 0.8 ms at 100 packets/s), so the default spins 10 ms: a TX
    /// thread uses its CPU fully unless packets are further apart.
    #[arg(long, value_parser = duration, default_value = "10ms")]
    pub spin: Nanos,
}
