//! How a job sends: the options every sending command shares that name no
//! file and no device, so a worker may take them from a peer as they are.
//! Where packets go, the outputs and the receiver are the caller's
//! (`sluice-cli`'s `RunOpts`, or what a worker sets itself).

use crate::text;
use crate::values::{cpus, named, positive_count, positive_duration, queues, CpuList};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_core::Nanos;
use sluice_engine::{ClockChoice, EngineConfig, RxStampMode};
use sluice_sink::{LaunchTime, SinkOptions, TxMode, XdpMode};

/// TX threads, their CPUs and priority, how frames reach the device, the
/// limits, timing precision and receive stamps of a run.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SendOpts {
    /// Stop after N packets (series play: records).
    #[arg(long, value_parser = positive_count)]
    #[serde(with = "crate::fields::opt_positive_count")]
    pub limit: Option<u64>,
    /// Stop after this long, e.g. 10s.
    #[arg(long, value_parser = positive_duration)]
    #[serde(with = "crate::fields::opt_positive_duration")]
    pub duration: Option<Nanos>,
    /// Ramp the rate from the start: FROM..TO/OVER (linear, e.g. 0..200k/5s), FROM..TO/OVER:STEPS (in equal steps) or TIME=RATE,… (linear between points; two at one time are a step), then hold the last rate. Rates are in the job's own unit (packets/s with --pps, Mbit/s with --mbps, a multiplier for recorded timing and profiles) or xF, F times the planned rate.
    #[arg(long, value_name = "RAMP")]
    #[serde(with = "text::opt")]
    pub ramp: Option<crate::rate::Ramp>,
    /// Send in bursts: SIZE[xCOUNT][/GAP], e.g. 1000x5/10ms (five bursts of 1000 packets, 10 ms added between them), 1000/10ms (bursts without end), 1000 (one burst). Packets within a burst keep the job's timing; a rate change scales the gaps too.
    #[arg(long, value_name = "SIZE[xCOUNT][/GAP]")]
    #[serde(with = "text::opt")]
    pub bursts: Option<sluice_core::Burst>,
    /// TX threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin TX threads to these CPUs, e.g. 1, 0,1 or 0-3.
    #[arg(long, value_parser = cpus)]
    #[serde(with = "crate::fields::opt_cpus")]
    pub cpu: Option<CpuList>,
    /// Pin the planners (the threads that read or plan packets: flows run's --planners, series play's --workers, the reader of the others) to these CPUs, e.g. 2 or 2-3 (by default the CPUs below the TX threads' when enough remain).
    #[arg(long, value_parser = cpus)]
    #[serde(with = "crate::fields::opt_cpus")]
    pub planner_cpu: Option<CpuList>,
    /// Do not pin TX threads or planners (by default TX threads go to the last CPUs when there are more CPUs than TX threads).
    #[arg(long, conflicts_with_all = ["cpu", "planner_cpu"])]
    pub no_pin: bool,
    /// Keep threads and memory on this NUMA node: TX threads, planners and helpers on its CPUs, pages preferred there (default: the node of the output interface's device, on a host with more than one node).
    #[arg(long, value_name = "NODE")]
    pub numa_node: Option<usize>,
    /// SCHED_FIFO priority and mlockall for the TX threads.
    #[arg(long)]
    pub rt: bool,
    /// How frames reach an afpacket interface: a TX ring (falling back to sendmmsg), or sendmmsg batches.
    #[arg(long, value_parser = named::<TxMode>(TxMode::NAMES), default_value_t = TxMode::default())]
    #[serde(with = "text")]
    pub tx_mode: TxMode,
    /// Leave TCP and UDP checksums to the device (afpacket only): a virtio-net header asks the driver to compute them, or the kernel where the driver cannot.
    #[arg(long)]
    pub csum_offload: bool,
    /// How an xdp interface is bound: zero-copy where the driver has it, else copy mode (auto); copy only; zero-copy only.
    #[arg(long, value_parser = named::<XdpMode>(XdpMode::NAMES), default_value_t = XdpMode::default())]
    #[serde(with = "text")]
    pub xdp_mode: XdpMode,
    /// Interface queues of an xdp sink, one per TX thread, e.g. 0,1 or 2-3 (default: thread k on queue k).
    #[arg(long, value_parser = queues)]
    #[serde(with = "crate::fields::opt_queues")]
    pub tx_queues: Option<CpuList>,
    /// Departures timed by the NIC: not built yet, so on is refused on every platform (with the reason); auto (default) and off pace in software.
    #[arg(long, value_parser = named::<LaunchTime>(LaunchTime::NAMES), default_value_t = LaunchTime::default())]
    #[serde(with = "text")]
    pub launch_time: LaunchTime,

    /// Put a receive stamp (stream, sequence, departure time; 24 bytes) at the end of each frame's payload, over its last bytes or in bytes added, for a receiver (`sluice rx`) to count loss, reordering and one-way latency.
    #[arg(long, value_name = "replace|append", value_parser = named::<RxStampMode>(RxStampMode::NAMES))]
    #[serde(with = "text::opt")]
    pub rx_stamp: Option<RxStampMode>,

    /// Clock: monotonic (CLOCK_MONOTONIC), tsc (the CPU's invariant time-stamp counter, calibrated against it, drift reported) or virtual (instant, deterministic; for tests and conversion).
    #[arg(long, value_parser = named::<ClockChoice>(ClockChoice::NAMES), default_value_t = ClockChoice::default())]
    #[serde(with = "text")]
    pub clock: ClockChoice,
    /// Drift window T_d: drop (and count as time violations) packets later than this.
    #[arg(long, value_parser = crate::values::duration)]
    #[serde(with = "crate::fields::opt_duration")]
    pub drift: Option<Nanos>,
    /// Count a packet as late when ε exceeds this.
    #[arg(long, value_parser = crate::values::duration, default_value_t = EngineConfig::default().late_threshold)]
    #[serde(with = "crate::fields::duration")]
    pub late_threshold: Nanos,
    /// Spin instead of sleeping for the last stretch before each send: long
    /// sleeps wake up late on a busy or virtual machine, so a TX thread uses
    /// its CPU fully unless packets are further apart.
    #[arg(long, value_parser = crate::values::duration, default_value_t = EngineConfig::default().spin)]
    #[serde(with = "crate::fields::duration")]
    pub spin: Nanos,
    /// Drop this share of frames as they leave, in percent (tcpreplay's --loss): seeded, after their receive stamp (a receiver counts them lost), counted in the summary's loss_dropped.
    #[arg(long, value_name = "PCT", value_parser = crate::values::loss_percent)]
    #[serde(with = "crate::fields::opt_loss")]
    pub loss: Option<f64>,
    /// Seed of --loss's draws (each TX thread draws from its own stream): the same seed drops the same frames.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "loss")]
    pub loss_seed: u64,
}

impl Default for SendOpts {
    /// The command line's defaults (a test in `sluice-cli` holds the two
    /// together).
    fn default() -> Self {
        let e = EngineConfig::default();
        SendOpts {
            limit: None,
            duration: None,
            ramp: None,
            bursts: None,
            threads: 1,
            cpu: None,
            planner_cpu: None,
            no_pin: false,
            numa_node: None,
            rt: false,
            tx_mode: TxMode::default(),
            csum_offload: false,
            xdp_mode: XdpMode::default(),
            tx_queues: None,
            launch_time: LaunchTime::default(),
            rx_stamp: None,
            clock: ClockChoice::default(),
            drift: None,
            late_threshold: e.late_threshold,
            spin: e.spin,
            loss: None,
            loss_seed: 1,
        }
    }
}

impl SendOpts {
    /// What opens the run's sinks (`SinkSpec::check`, `SinkSpec::open`).
    pub fn sink_options(&self) -> SinkOptions {
        SinkOptions {
            threads: self.threads,
            tx_mode: self.tx_mode,
            csum_offload: self.csum_offload,
            xdp_mode: self.xdp_mode,
            tx_queues: self.tx_queues.as_ref().map(|q| q.0.clone()),
            launch_time: self.launch_time,
            xdp_keep: 0,
        }
    }

    /// The engine settings these options give (the caller adds what is
    /// its own: CPUs, top speed, statistics, stamps' streams).
    pub fn engine(&self) -> EngineConfig {
        EngineConfig {
            limit: self.limit,
            duration: self.duration,
            burst: self.bursts,
            clock: self.clock,
            spin: self.spin,
            drift: self.drift,
            late_threshold: self.late_threshold,
            realtime: self.rt,
            rx_stamp: self.rx_stamp,
            loss: self.loss.map(|pct| sluice_engine::Loss {
                share: pct / 100.0,
                seed: self.loss_seed,
            }),
            ..EngineConfig::default()
        }
    }

    /// What the command line's argument relations refuse, checked again for
    /// a job that did not come through it.
    pub fn check(&self) -> Result<(), String> {
        if self.no_pin && self.cpu.is_some() {
            return Err("no_pin and cpu exclude each other".into());
        }
        if self.threads == 0 || self.threads > sluice_sink::open::MAX_THREADS {
            return Err(format!(
                "threads must be between 1 and {}",
                sluice_sink::open::MAX_THREADS
            ));
        }
        Ok(())
    }
}
