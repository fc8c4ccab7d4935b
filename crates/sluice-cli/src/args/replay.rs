//! `sluice replay` arguments.

use super::common::RunOpts;
use super::values::{count, duration, positive_duration, rate};
use clap::Args;
use sluice_core::Nanos;
use sluice_engine::EngineConfig;
use sluice_sink::SinkSpec;
use sluice_source::ReplayConfig;
use sluice_wire::{MacAddr, PayloadMode};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace to replay (pcap or pcapng, optionally gzip-compressed).
    pub trace: PathBuf,
    /// Where packets go: null, pcap:PATH, afpacket:IFACE.
    #[arg(long, short = 't', default_value_t = SinkSpec::Null)]
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
    #[arg(long = "loop", value_parser = count, default_value_t = EngineConfig::default().passes)]
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
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<Nanos>,
    /// Shorten recorded gaps longer than this to it (a clock jump in a
    /// capture would otherwise be waited for). Without it, the first gap
    /// over an hour is reported, and kept.
    #[arg(long, value_parser = duration)]
    pub max_gap: Option<Nanos>,

    /// Payload handling: keep, zero (same length), truncate (headers only); checksums are recomputed.
    #[arg(long, default_value_t = ReplayConfig::default().payload)]
    pub payload: PayloadMode,
    /// Source MAC for frames whose link type has none (raw IP, SLL, NULL).
    #[arg(long, default_value_t = ReplayConfig::default().src_mac)]
    pub src_mac: MacAddr,
    /// Destination MAC for frames whose link type has none.
    #[arg(long, default_value_t = ReplayConfig::default().dst_mac)]
    pub dst_mac: MacAddr,
    /// Skip (and count) packets of unsupported link types instead of refusing the trace.
    #[arg(long)]
    pub skip_unsupported: bool,

    #[command(flatten)]
    pub run: RunOpts,
}
