//! `sluice series` arguments: convert, dump, play.

use super::common::{RunOpts, ShareOpts};
use super::values::{count, duration, named, probability, Size};
use clap::{Args, Subcommand};
use sluice_archive::DataEncoding;
use sluice_core::Nanos;
use sluice_engine::{SeriesConfig, SeriesPayload};
use sluice_source::series::{DeviceCount, DeviceSteps, FlowMap, Ooo};
use sluice_wire::MacAddr;
use std::net::Ipv4Addr;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SeriesArgs {
    #[command(subcommand)]
    pub command: SeriesCommand,
}

#[derive(Subcommand, Debug)]
pub enum SeriesCommand {
    /// Convert a CSV (header `timestamp,device_id,value...`) into a time-series archive.
    Convert(ConvertArgs),
    /// Print a time-series archive as CSV.
    Dump(DumpArgs),
    /// Play an archive as UDP datagrams: on time, faster, or as fast as possible.
    ///
    /// Records of one device may leave from several TX threads; with 2+ TX
    /// threads a record its own thread left unsent past its time is sent by
    /// another (rescue).
    Play(Box<PlayArgs>),
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// CSV input: `timestamp,device_id,value...` header, ISO 8601 timestamps.
    pub input: PathBuf,
    /// Archive to write (created or overwritten; removed again on error).
    pub output: PathBuf,
    /// How values are stored: text (columns as written), i32, f32 or f64 (big-endian binary).
    #[arg(long, default_value_t = DataEncoding::Text, value_name = "text|i32|f32|f64")]
    pub data: DataEncoding,
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Archive to print.
    pub archive: PathBuf,
    /// How the data fields were stored: text, i32, f32 or f64.
    #[arg(long, default_value_t = DataEncoding::Text, value_name = "text|i32|f32|f64")]
    pub data: DataEncoding,
    /// Write the CSV here instead of to stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlayArgs {
    /// Archive to play (see `series convert`).
    pub archive: PathBuf,

    /// Ignore timestamps: one record every INTERVAL (0 = as fast as possible).
    #[arg(long, value_parser = duration, group = "timing")]
    pub tight_loop: Option<Nanos>,
    /// Scale time: FACTOR 2 plays twice as fast as recorded.
    #[arg(long, group = "timing")]
    pub fast_forward: Option<f64>,
    /// Shorten recorded gaps longer than this to it (the archive is read once more before the run).
    #[arg(long, value_parser = duration, conflicts_with = "tight_loop")]
    pub max_gap: Option<Nanos>,

    /// Out-of-order probability P: such records go to a separate queue.
    #[arg(long, value_parser = probability, default_value_t = Ooo::default().prob)]
    pub ooo_prob: f64,
    /// Out-of-order window T_w: such a record leaves at a random time in [T_0, T_0 + T_w].
    #[arg(long, value_parser = duration, default_value_t = Ooo::default().window)]
    pub ooo_window: Nanos,
    /// TX threads that also send out-of-order records.
    #[arg(long, default_value_t = SeriesConfig::default().ooo_threads)]
    pub ooo_threads: usize,

    /// Device → flow mapping (YAML or CSV; see docs/FORMATS.md).
    #[arg(long)]
    pub map: Option<PathBuf>,
    /// Simulated devices: N plays only the first N devices, xK plays each device K times on K flows.
    #[arg(long)]
    pub devices: Option<DeviceCount>,
    /// Play only the devices whose name matches GLOB (`*`, `?`); `!GLOB` leaves matching devices out. Repeatable or comma-separated; decided before --devices N counts.
    #[arg(long, value_name = "GLOB", value_delimiter = ',')]
    pub device_filter: Vec<String>,
    /// Simulated devices live over play time, e.g. 0s=4,2s=16,5s=8: from each time on, only the first COUNT simulated devices (flows: device × copies + copy) send; none before the first step.
    #[arg(long, value_name = "TIME=COUNT,...")]
    pub device_steps: Option<DeviceSteps>,
    /// Destination address of flows the mapping does not set.
    #[arg(long, default_value_t = FlowMap::DEFAULT_DST_IP)]
    pub dst_ip: Ipv4Addr,
    /// Destination port of flows the mapping does not set.
    #[arg(long, default_value_t = FlowMap::DEFAULT_DST_PORT)]
    pub dst_port: u16,
    /// What a datagram carries: the record's data field, or the whole record.
    #[arg(long, value_parser = named::<SeriesPayload>(SeriesPayload::NAMES), default_value_t = SeriesPayload::default())]
    pub payload: SeriesPayload,
    /// IP MTU: longer datagrams are sent as IP fragments (default: the interface's MTU for afpacket, else 1500).
    #[arg(long)]
    pub mtu: Option<usize>,
    /// Source MAC of the frames.
    #[arg(long, default_value_t = SeriesConfig::default().src_mac)]
    pub src_mac: MacAddr,
    /// Destination MAC of the frames.
    #[arg(long, default_value_t = SeriesConfig::default().dst_mac)]
    pub dst_mac: MacAddr,
    /// Seed of the out-of-order choices: the same seed gives the same run.
    #[arg(long, default_value_t = SeriesConfig::default().seed)]
    pub seed: u64,

    /// Size of each IO buffer (two per worker).
    #[arg(long, default_value_t = Size(SeriesConfig::default().buffer_size))]
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
    pub rescue_after: Nanos,
    /// Never send another TX thread's records (the paper's behaviour).
    #[arg(long)]
    pub no_rescue: bool,

    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
}

fn default_rescue_after() -> Nanos {
    SeriesConfig::default().rescue_after.unwrap_or_default()
}
