//! Option groups shared by the sending commands (`replay`, `series play`,
//! `flows run`), defined once. Defaults shown in `--help` are the
//! libraries' own (`EngineConfig::default()`, `TxMode::default()`).

use super::values::{cpus, duration, named, positive_count, positive_duration, queues, CpuList};
use clap::Args;
use sluice_core::Nanos;
use sluice_engine::{ClockChoice, EngineConfig};
use sluice_sink::{LaunchTime, SinkSpec, TxMode, XdpMode};

/// Where packets go and when the run stops, TX threads, their CPUs and
/// priority, timing precision, statistics: every sending command's, declared
/// once here.
#[derive(Args, Debug)]
pub struct RunOpts {
    /// Where packets go: null, pcap:PATH, afpacket:IFACE, xdp:IFACE (series play also udp:HOST:PORT).
    #[arg(long, short = 't', default_value_t = SinkSpec::Null)]
    pub to: SinkSpec,
    /// Stop after N packets (series play: records).
    #[arg(long, value_parser = positive_count)]
    pub limit: Option<u64>,
    /// Stop after this long, e.g. 10s.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<Nanos>,
    /// TX threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin TX threads to these CPUs, e.g. 1, 0,1 or 0-3.
    #[arg(long, value_parser = cpus)]
    pub cpu: Option<CpuList>,
    /// Do not pin TX threads (by default they go to the last CPUs when there are more CPUs than TX threads).
    #[arg(long, conflicts_with = "cpu")]
    pub no_pin: bool,
    /// SCHED_FIFO priority and mlockall for the TX threads.
    #[arg(long)]
    pub rt: bool,
    /// How frames reach an afpacket interface: a TX ring (falling back to sendmmsg), or sendmmsg batches.
    #[arg(long, value_parser = named::<TxMode>(TxMode::NAMES), default_value_t = TxMode::default())]
    pub tx_mode: TxMode,
    /// Leave TCP and UDP checksums to the device (afpacket only): a virtio-net header asks the driver to compute them, or the kernel where the driver cannot.
    #[arg(long)]
    pub csum_offload: bool,
    /// How an xdp interface is bound: zero-copy where the driver has it, else copy mode (auto); copy only; zero-copy only.
    #[arg(long, value_parser = named::<XdpMode>(XdpMode::NAMES), default_value_t = XdpMode::default())]
    pub xdp_mode: XdpMode,
    /// Interface queues of an xdp sink, one per TX thread, e.g. 0,1 or 2-3 (default: thread k on queue k).
    #[arg(long, value_parser = queues)]
    pub tx_queues: Option<CpuList>,
    /// Departures timed by the NIC: not built yet, so on is refused on every platform (with the reason); auto (default) and off pace in software.
    #[arg(long, value_parser = named::<LaunchTime>(LaunchTime::NAMES), default_value_t = LaunchTime::default())]
    pub launch_time: LaunchTime,

    /// Put a receive stamp (stream, sequence, departure time; 24 bytes) at the end of each frame's payload, over its last bytes or in bytes added, for a receiver (`sluice rx`) to count loss, reordering and one-way latency.
    #[arg(long, value_name = "replace|append", value_parser = ["replace", "append"])]
    pub rx_stamp: Option<String>,
    /// Count the stamped frames arriving on this interface while sending (loss, duplicates, reordering, one-way latency, jitter per stream, in the summary); implies --rx-stamp replace.
    #[arg(long, value_name = "IFACE")]
    pub rx: Option<String>,
    /// With --rx: how long after the last frame left the receiver still counts arrivals.
    #[arg(long, value_parser = duration, default_value = "200ms", requires = "rx")]
    pub rx_wait: Nanos,
    /// The first stream id of this sender's stamps: TX thread k stamps stream N + k (+256 on a second port), so that senders on several hosts stay apart at one receiver.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rx_streams_from: u32,
    /// With --rx: stamps of streams FIRST to LAST come from a clock OFFSET ahead of this host's (negative: behind), e.g. 1024-1279=-2.5ms; their one-way latency is corrected by it. Repeatable.
    #[arg(
        long,
        value_name = "FIRST[-LAST]=OFFSET",
        requires = "rx",
        allow_hyphen_values = true
    )]
    pub rx_clock: Vec<sluice_analyze::streams::ClockCorrection>,
    /// Test only: this process's wall clock, as stamps and receive times read it, is this much ahead of the host's.
    #[arg(long, value_parser = super::values::signed_duration, allow_hyphen_values = true, hide = true, default_value_t = 0)]
    pub clock_shift: i64,
    /// Write one JSON object per second to PATH (- for stdout).
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the final summary as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// No live status line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Clock: monotonic (CLOCK_MONOTONIC), tsc (the CPU's invariant time-stamp counter, calibrated against it, drift reported) or virtual (instant, deterministic; for tests and conversion).
    #[arg(long, value_parser = named::<ClockChoice>(ClockChoice::NAMES), default_value_t = ClockChoice::default())]
    pub clock: ClockChoice,

    /// Drift window T_d: drop (and count as time violations) packets later than this.
    #[arg(long, value_parser = duration)]
    pub drift: Option<Nanos>,
    /// Count a packet as late when ε exceeds this.
    #[arg(long, value_parser = duration, default_value_t = EngineConfig::default().late_threshold)]
    pub late_threshold: Nanos,
    /// Spin instead of sleeping for the last stretch before each send: long
    /// sleeps wake up late on a busy or virtual machine, so a TX thread uses
    /// its CPU fully unless packets are further apart.
    #[arg(long, value_parser = duration, default_value_t = EngineConfig::default().spin)]
    pub spin: Nanos,
}

/// How the run being judged was timed, so the reference trace is scheduled
/// as `replay` scheduled it (`analyze` and `report`, with `--reference`).
#[derive(Args, Debug)]
pub struct RefTiming {
    /// With a reference: the run sent at this fixed packet rate (as replay's pps option); |D_M − D_R| is measured against that.
    #[arg(long, value_parser = super::values::rate, requires = "reference", group = "timing")]
    pub pps: Option<f64>,
    /// With a reference: the run sent at this fixed bit rate over frame bytes (as replay's mbps option).
    #[arg(long, value_parser = super::values::rate, requires = "reference", group = "timing")]
    pub mbps: Option<f64>,
    /// With a reference: the run scaled the recorded timing by this (as replay's multiplier).
    #[arg(long, short = 'x', requires = "reference", group = "timing")]
    pub multiplier: Option<f64>,
}

impl RefTiming {
    /// The timing mode given, if any; a multiplier must be positive.
    pub fn mode(&self) -> Result<Option<sluice_pace::TimingMode>, String> {
        use sluice_pace::TimingMode;
        Ok(match (self.pps, self.mbps, self.multiplier) {
            (Some(p), ..) => Some(TimingMode::Pps(p)),
            (_, Some(m), _) => Some(TimingMode::Mbps(m)),
            (_, _, Some(x)) if !(x.is_finite() && x > 0.0) => {
                return Err(format!("--multiplier: {x} is not a positive number"))
            }
            (_, _, Some(x)) => Some(TimingMode::Recorded { multiplier: x }),
            _ => None,
        })
    }
}

/// One host's part of a job split over several (what `sluice worker` gives
/// each job of a distributed run; usable by hand too).
#[derive(Args, Debug, Default)]
pub struct ShareOpts {
    /// Start at this CLOCK_REALTIME instant, in ns since the epoch (hosts whose clocks agree start together).
    #[arg(long, value_name = "NS", value_parser = super::values::start_instant)]
    pub start_at: Option<u64>,
    /// Send only share K of N (1 <= K <= N) of the job: flows by symmetric 5-tuple (replay, flows run), devices (series play) or every Nth packet of the global schedule (profile run).
    #[arg(long, value_name = "K/N", value_parser = sluice_source::Share::parse)]
    pub share: Option<sluice_source::Share>,
}
