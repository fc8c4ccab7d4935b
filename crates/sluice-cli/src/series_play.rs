//! `sluice series play`: time-series records as UDP datagrams, on time.

use crate::args::RunOpts;
use crate::runopts::{check_threads, conclude, engine_config, outputs, Outputs};
use crate::{bad_input, Failure};
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use sluice_core::{parse_count, parse_duration, Nanos};
use sluice_engine::{run_series, EngineConfig, SeriesConfig, SeriesPayload};
use sluice_sink::SinkSpec;
use sluice_source::series::{DeviceCount, FlowMap, Ooo, SeriesTiming, MIN_BUFFER};
use sluice_wire::MacAddr;
use std::net::Ipv4Addr;
use std::path::PathBuf;

fn duration(s: &str) -> Result<Nanos, String> {
    parse_duration(s).map_err(|e| e.to_string())
}
fn count(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}
/// Bytes with an optional binary suffix: 65536, 512K, 64M, 1G.
fn size(s: &str) -> Result<usize, String> {
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1usize << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("'{s}' is not a size (e.g. 65536, 512K, 64M)"))
}
fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("'{s}' is not a probability between 0 and 1")),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PayloadArg {
    /// The record's Data field.
    Data,
    /// The whole record: length, timestamp, device ID, data.
    Record,
}

#[derive(Args, Debug)]
pub struct PlayArgs {
    /// Archive to play (see `series convert`).
    pub archive: PathBuf,
    /// Where datagrams go: null, pcap:PATH, afpacket:IFACE, udp:HOST:PORT.
    #[arg(long, short = 't', default_value = "null")]
    pub to: SinkSpec,

    /// Ignore timestamps: one record every INTERVAL (0 = as fast as possible).
    #[arg(long, value_parser = duration, group = "timing")]
    pub tight_loop: Option<Nanos>,
    /// Scale time: FACTOR 2 plays twice as fast as recorded.
    #[arg(long, group = "timing")]
    pub fast_forward: Option<f64>,
    /// Stop after N records.
    #[arg(long, value_parser = count)]
    pub limit: Option<u64>,
    /// Stop after this long, e.g. 10s.
    #[arg(long, value_parser = duration)]
    pub duration: Option<Nanos>,

    /// Out-of-order probability P: such records go to a separate queue.
    #[arg(long, value_parser = probability, default_value = "0")]
    pub ooo_prob: f64,
    /// Out-of-order window T_w: such a record leaves at a random time in [T_0, T_0 + T_w].
    #[arg(long, value_parser = duration, default_value = "1ms")]
    pub ooo_window: Nanos,
    /// TX threads that also send out-of-order records.
    #[arg(long, default_value = "1")]
    pub ooo_threads: usize,

    /// Device → flow mapping (YAML or CSV; see the README).
    #[arg(long)]
    pub map: Option<PathBuf>,
    /// Simulated devices: N plays only the first N devices, xK plays each device K times on K flows.
    #[arg(long)]
    pub devices: Option<DeviceCount>,
    /// Destination address of flows the mapping does not set.
    #[arg(long, default_value = "10.0.0.2")]
    pub dst_ip: Ipv4Addr,
    /// Destination port of flows the mapping does not set.
    #[arg(long, default_value = "9000")]
    pub dst_port: u16,
    /// What a datagram carries.
    #[arg(long, value_enum, default_value = "data")]
    pub payload: PayloadArg,
    /// IP MTU: longer datagrams are sent as IP fragments (default: the interface's MTU for afpacket, else 1500).
    #[arg(long)]
    pub mtu: Option<usize>,
    /// Source MAC of the frames.
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub src_mac: MacAddr,
    /// Destination MAC of the frames.
    #[arg(long, default_value = "02:00:00:00:00:02")]
    pub dst_mac: MacAddr,
    /// Seed of the out-of-order choices: the same seed gives the same run.
    #[arg(long, default_value = "1")]
    pub seed: u64,

    /// Size of each IO buffer (two per worker).
    #[arg(long, value_parser = size, default_value = "64M")]
    pub buffer_size: usize,
    /// Worker threads (buffers → queue entries).
    #[arg(long, default_value = "1")]
    pub workers: usize,
    /// In-order MPMC queues (at most min(workers, threads)).
    #[arg(long, default_value = "1")]
    pub queues: usize,
    /// Read and index the whole archive before the clock starts: while
    /// sending, only the TX threads run. Falls back to streaming, with a
    /// warning, if it needs more than half of the available memory.
    #[arg(long)]
    pub preload: bool,
    /// Memory budget of --preload in bytes (default: half of MemAvailable).
    #[arg(long, value_parser = count, hide = true)]
    pub preload_max: Option<u64>,
    /// With several TX threads, a record its own thread has not sent this
    /// long after its time (the thread's CPU was taken away) is sent by
    /// another TX thread.
    #[arg(long, value_parser = duration, default_value = "2us")]
    pub rescue_after: Nanos,
    /// Never send another TX thread's records (the paper's behaviour).
    #[arg(long)]
    pub no_rescue: bool,

    #[command(flatten)]
    pub run: RunOpts,
}

pub fn run(a: PlayArgs) -> Result<u8, Failure> {
    check_threads(&a.run, &a.to)?;
    let timing = match (a.tight_loop, a.fast_forward) {
        (Some(iv), _) => SeriesTiming::TightLoop(iv),
        (_, Some(f)) if f.is_finite() && f > 0.0 => SeriesTiming::FastForward(f),
        (_, Some(f)) => {
            return Err(bad_input(anyhow!(
                "--fast-forward must be a positive number, got {f}"
            )))
        }
        _ => SeriesTiming::Conforming,
    };
    if a.buffer_size < MIN_BUFFER {
        return Err(bad_input(anyhow!(
            "--buffer-size must be at least {MIN_BUFFER} bytes (one record of the largest size)"
        )));
    }
    if a.workers == 0 || a.workers > 64 {
        return Err(bad_input(anyhow!("--workers must be between 1 and 64")));
    }
    let mut flows = FlowMap::new(a.dst_ip, a.dst_port);
    if let Some(m) = &a.map {
        flows = flows.load(m).map_err(bad_input)?;
    }
    let mtu = match (a.mtu, &a.to) {
        (Some(m), _) => m,
        (None, SinkSpec::AfPacket(iface)) => sluice_sys::net::interface_mtu(iface).unwrap_or(1500),
        _ => 1500,
    };
    if !(68..=65_535).contains(&mtu) {
        return Err(bad_input(anyhow!(
            "--mtu must be between 68 and 65535, got {mtu}"
        )));
    }
    let cfg = SeriesConfig {
        buffer_size: a.buffer_size,
        workers: a.workers,
        queues: a.queues.max(1),
        timing,
        ooo: (a.ooo_prob > 0.0).then_some(Ooo {
            prob: a.ooo_prob,
            window: a.ooo_window,
        }),
        ooo_threads: a.ooo_threads,
        devices: a.devices.unwrap_or(DeviceCount::All),
        payload: match a.payload {
            PayloadArg::Data => SeriesPayload::Data,
            PayloadArg::Record => SeriesPayload::Record,
        },
        mtu,
        src_mac: a.src_mac,
        dst_mac: a.dst_mac,
        seed: a.seed,
        rescue_after: (!a.no_rescue).then_some(a.rescue_after),
        ..SeriesConfig::new(a.archive.clone(), flows)
    };
    let Outputs {
        sinks,
        stop,
        mut progress,
    } = outputs(&a.run, &a.to, true)?;
    let topspeed = timing == SeriesTiming::TightLoop(Nanos(0));
    let ecfg = EngineConfig {
        duration: a.duration,
        limit: a.limit,
        preload: a.preload,
        preload_budget: a.preload_max,
        ..engine_config(&a.run, stop, topspeed)
    };
    let result = run_series(cfg, sinks, &ecfg, &mut progress);
    conclude(&a.run, progress, result)
}
