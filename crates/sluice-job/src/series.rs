//! How `sluice series play` plays an archive: timing, out-of-order
//! records, devices, datagrams, IO stages. The archive and the device
//! map are files: the command line's, or a worker's uploads.

use crate::text;
use crate::values::{count, duration, named, probability, Size};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_core::Nanos;
use sluice_engine::{SeriesConfig, SeriesPayload};
use sluice_source::series::{DeviceCount, DeviceSteps, FlowMap, Ooo};
use sluice_wire::MacAddr;
use std::net::Ipv4Addr;

/// Most IO workers, queues and out-of-order threads a job may ask for.
pub const MAX_STAGE_THREADS: usize = 256;

#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SeriesOpts {
    /// Ignore timestamps: one record every INTERVAL (0 = as fast as possible).
    #[arg(long, value_parser = duration, group = "timing")]
    #[serde(with = "crate::fields::opt_duration")]
    pub tight_loop: Option<Nanos>,
    /// Scale time: FACTOR 2 plays twice as fast as recorded.
    #[arg(long, group = "timing")]
    pub fast_forward: Option<f64>,
    /// Shorten recorded gaps longer than this to it (the archive is read once more before the run).
    #[arg(long, value_parser = duration, conflicts_with = "tight_loop")]
    #[serde(with = "crate::fields::opt_duration")]
    pub max_gap: Option<Nanos>,

    /// Out-of-order probability P: such records go to a separate queue.
    #[arg(long, value_parser = probability, default_value_t = Ooo::default().prob)]
    #[serde(with = "crate::fields::probability")]
    pub ooo_prob: f64,
    /// Out-of-order window T_w: such a record leaves at a random time in [T_0, T_0 + T_w].
    #[arg(long, value_parser = duration, default_value_t = Ooo::default().window)]
    #[serde(with = "crate::fields::duration")]
    pub ooo_window: Nanos,
    /// TX threads that also send out-of-order records.
    #[arg(long, default_value_t = SeriesConfig::default().ooo_threads)]
    pub ooo_threads: usize,

    /// Simulated devices: N plays only the first N devices, xK plays each device K times on K flows.
    #[arg(long)]
    #[serde(with = "text::opt")]
    pub devices: Option<DeviceCount>,
    /// Play only the devices whose name matches GLOB (`*`, `?`, `[EZ]`, `[a-f]`, `[!0-9]`, `{a,b}`, `\\*`); `!GLOB` leaves matching devices out. Repeatable or comma-separated; decided before --devices N counts; a filter no device passes is an error.
    #[arg(long, value_name = "GLOB")]
    pub device_filter: Vec<String>,
    /// Simulated devices live over play time, e.g. 0s=4,2s=16,5s=8: from each time on, only the first COUNT simulated devices (flows: device × copies + copy) send; none before the first step.
    #[arg(long, value_name = "TIME=COUNT,...")]
    #[serde(with = "text::opt")]
    pub device_steps: Option<DeviceSteps>,
    /// Destination address of flows the mapping does not set.
    #[arg(long, default_value_t = FlowMap::DEFAULT_DST_IP)]
    pub dst_ip: Ipv4Addr,
    /// Destination port of flows the mapping does not set.
    #[arg(long, default_value_t = FlowMap::DEFAULT_DST_PORT)]
    pub dst_port: u16,
    /// What a datagram carries: the record's data field, or the whole record.
    #[arg(long, value_parser = named::<SeriesPayload>(SeriesPayload::NAMES), default_value_t = SeriesPayload::default())]
    #[serde(with = "text")]
    pub payload: SeriesPayload,
    /// IP MTU: longer datagrams are sent as IP fragments (default: the interface's MTU for afpacket, else 1500).
    #[arg(long)]
    pub mtu: Option<usize>,
    /// Source MAC of the frames.
    #[arg(long, default_value_t = SeriesConfig::default().src_mac)]
    #[serde(with = "text")]
    pub src_mac: MacAddr,
    /// Destination MAC of the frames.
    #[arg(long, default_value_t = SeriesConfig::default().dst_mac)]
    #[serde(with = "text")]
    pub dst_mac: MacAddr,
    /// Seed of the out-of-order choices: the same seed gives the same run.
    #[arg(long, default_value_t = SeriesConfig::default().seed)]
    pub seed: u64,

    /// Size of each IO buffer (two per worker).
    #[arg(long, default_value_t = Size(SeriesConfig::default().buffer_size))]
    #[serde(with = "text")]
    pub buffer_size: Size,
    /// Worker threads (buffers → queue entries).
    #[arg(long, default_value_t = SeriesConfig::default().workers)]
    pub workers: usize,
    /// In-order MPMC queues (at most min(workers, threads)).
    #[arg(long, default_value_t = SeriesConfig::default().queues)]
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
    #[arg(long, value_parser = duration, default_value_t = default_rescue_after())]
    #[serde(with = "crate::fields::duration")]
    pub rescue_after: Nanos,
    /// Never send another TX thread's records (the paper's behaviour).
    #[arg(long)]
    pub no_rescue: bool,
}

fn default_rescue_after() -> Nanos {
    SeriesConfig::default().rescue_after.unwrap_or_default()
}

impl Default for SeriesOpts {
    fn default() -> Self {
        let s = SeriesConfig::default();
        SeriesOpts {
            tight_loop: None,
            fast_forward: None,
            max_gap: None,
            ooo_prob: Ooo::default().prob,
            ooo_window: Ooo::default().window,
            ooo_threads: s.ooo_threads,
            devices: None,
            device_filter: Vec::new(),
            device_steps: None,
            dst_ip: FlowMap::DEFAULT_DST_IP,
            dst_port: FlowMap::DEFAULT_DST_PORT,
            payload: SeriesPayload::default(),
            mtu: None,
            src_mac: s.src_mac,
            dst_mac: s.dst_mac,
            seed: s.seed,
            buffer_size: Size(s.buffer_size),
            workers: s.workers,
            queues: s.queues,
            preload: false,
            preload_max: None,
            rescue_after: default_rescue_after(),
            no_rescue: false,
        }
    }
}

impl SeriesOpts {
    /// What the command line's argument relations refuse, and thread
    /// counts a job from a peer could make unbounded.
    pub fn check(&self) -> Result<(), String> {
        if self.tight_loop.is_some() && (self.fast_forward.is_some() || self.max_gap.is_some()) {
            return Err("tight_loop excludes fast_forward and max_gap".into());
        }
        for (key, n) in [
            ("workers", self.workers),
            ("queues", self.queues),
            ("ooo_threads", self.ooo_threads),
        ] {
            if n > MAX_STAGE_THREADS {
                return Err(format!("{key} {n}: at most {MAX_STAGE_THREADS}"));
            }
        }
        Ok(())
    }
}
