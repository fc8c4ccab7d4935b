//! `sluice replay` arguments.

use super::common::RunOpts;
use super::values::{count, duration, positive_duration, rate};
use clap::Args;
use sluice_core::Nanos;
use sluice_engine::EngineConfig;
use sluice_sink::SinkSpec;
use sluice_source::ReplayConfig;
use sluice_wire::{CidrMap, HeaderRewrite, MacAddr, PayloadMode, PortMap, TtlOp};
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
    /// Source MAC for frames whose link type has none (raw IP, SLL, NULL; default 02:00:00:00:00:01); an Ethernet trace is refused (use --enet-smac).
    #[arg(long)]
    pub src_mac: Option<MacAddr>,
    /// Destination MAC for frames whose link type has none (default 02:00:00:00:00:02); an Ethernet trace is refused (use --enet-dmac).
    #[arg(long)]
    pub dst_mac: Option<MacAddr>,
    /// Rewrite every frame's destination MAC (tcprewrite --enet-dmac).
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_dmac: Option<MacAddr>,
    /// Rewrite every frame's source MAC (tcprewrite --enet-smac).
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_smac: Option<MacAddr>,
    /// Map source addresses CIDR to CIDR, host bits kept: 10.0.0.0/8:192.168.0.0/16[,...] (IPv4 or IPv6).
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub srcipmap: Vec<CidrMap>,
    /// Map destination addresses CIDR to CIDR, as --srcipmap.
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub dstipmap: Vec<CidrMap>,
    /// Map TCP/UDP ports (source and destination): 80:8080 or 1000-2000:3000[,...].
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub portmap: Vec<PortMap>,
    /// Set the IPv4 TTL / IPv6 hop limit (N), or raise (+N) or lower (-N) it.
    #[arg(
        long,
        allow_hyphen_values = true,
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub ttl: Option<TtlOp>,
    /// Set the IPv4 TOS / DiffServ byte.
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub tos: Option<u8>,
    /// Recompute every IPv4, TCP and UDP checksum (by default they are updated incrementally, so a wrong one stays wrong).
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub fixcsum: bool,
    /// Skip (and count) packets of unsupported link types instead of refusing the trace.
    #[arg(long)]
    pub skip_unsupported: bool,

    #[command(flatten)]
    pub run: RunOpts,
}

impl ReplayArgs {
    /// The header rewriting these options ask for.
    pub fn rewrite(&self) -> HeaderRewrite {
        HeaderRewrite {
            enet_dmac: self.enet_dmac,
            enet_smac: self.enet_smac,
            srcipmap: self.srcipmap.clone(),
            dstipmap: self.dstipmap.clone(),
            portmap: self.portmap.clone(),
            ttl: self.ttl,
            tos: self.tos,
            fixcsum: self.fixcsum,
        }
    }
}
