//! `sluice replay` arguments.

use super::common::{RunOpts, ShareOpts};
use super::values::{count, duration, rate};
use clap::Args;
use sluice_core::Nanos;
use sluice_engine::EngineConfig;
use sluice_sink::SinkSpec;
use sluice_source::ReplayConfig;
use sluice_source::SplitMode;
use sluice_wire::{CidrMap, FixLen, HeaderRewrite, MacAddr, PayloadMode, PortMap, TtlOp, VlanOp};
use std::net::IpAddr;
use std::path::PathBuf;

/// `IP1:IP2` (IPv6 in brackets: `[2001:db8::1]:[2001:db8::2]`), one family.
fn endpoints(s: &str) -> Result<(IpAddr, IpAddr), String> {
    let bad = || format!("'{s}': expected IP1:IP2 of one family (IPv6 as [A]:[B])");
    let (a, b) = if let Some(rest) = s.strip_prefix('[') {
        let (a, rest) = rest.split_once("]:").ok_or_else(bad)?;
        (a, rest.trim_start_matches('[').trim_end_matches(']'))
    } else {
        s.split_once(':').ok_or_else(bad)?
    };
    let (a, b): (IpAddr, IpAddr) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a.is_ipv4() != b.is_ipv4() {
        return Err(bad());
    }
    Ok((a, b))
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Traces to replay (pcap or pcapng, optionally gzip-compressed), one after the other in every pass.
    #[arg(required = true, num_args = 1.., value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Second output for two-port replay: server-to-client packets of --split (or the second trace of --dualfile) leave here, client-to-server by --to.
    #[arg(long, help_heading = "Two ports")]
    pub to2: Option<SinkSpec>,
    /// Traces in pairs, each pair merged by timestamp: its first leaves by --to, its second by --to2 (tcpreplay's option of that name).
    #[arg(
        long,
        requires = "to2",
        conflicts_with = "split",
        help_heading = "Two ports"
    )]
    pub dualfile: bool,
    /// Which side each packet is on, by tcpprep's rules: cidr:NET[,NET] (sources in NET are client to server, --to), regex:RE (on the source address), mac:MAC[,MAC] (source MACs), port (TCP/UDP destination port 0-1023), auto:bridge|router|client|server|first, tcpprep:FILE (a tcpprep cache; it may skip packets); or auto (per flow, its opener is the client), cache:FILE (from sluice prep).
    #[arg(long, value_name = "MODE", help_heading = "Two ports")]
    pub split: Option<SplitMode>,
    #[command(flatten)]
    pub split_opts: super::split::SplitOpts,
    #[command(flatten)]
    pub select: super::select::SelectOpts,

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
    /// Pause this long between passes, e.g. 125ms (real time, whatever the rate).
    #[arg(long, value_parser = duration, group = "loop_delay", conflicts_with = "topspeed")]
    pub loopdelay: Option<Nanos>,
    /// The pause between passes in milliseconds (tcpreplay's option of that name).
    #[arg(long, value_parser = count, group = "loop_delay", conflicts_with = "topspeed")]
    pub loopdelay_ms: Option<u64>,
    /// The pause between passes in nanoseconds (tcpreplay's option of that name).
    #[arg(long, value_parser = count, group = "loop_delay", conflicts_with = "topspeed")]
    pub loopdelay_ns: Option<u64>,
    /// Read the trace into memory before starting and send every pass from
    /// there (no file reading while sending). Falls back to streaming, with a
    /// warning, if the trace needs more than half of the available memory.
    #[arg(long)]
    pub preload: bool,
    /// Memory budget of --preload in bytes (default: half of MemAvailable).
    #[arg(long, value_parser = count, hide = true)]
    pub preload_max: Option<u64>,
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
    /// Rewrite every frame's destination MAC; with --split a second MAC is for server-to-client packets (tcprewrite --enet-dmac).
    #[arg(
        long,
        value_name = "MAC[,MAC]",
        value_delimiter = ',',
        num_args = 1,
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub enet_dmac: Vec<MacAddr>,
    /// Rewrite every frame's source MAC, per side as --enet-dmac.
    #[arg(
        long,
        value_name = "MAC[,MAC]",
        value_delimiter = ',',
        num_args = 1,
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub enet_smac: Vec<MacAddr>,
    /// With --split: client-to-server packets go from IP1 to IP2, server-to-client from IP2 to IP1.
    #[arg(long, value_name = "IP1:IP2", value_parser = endpoints, requires = "split", help_heading = "Rewriting (tcprewrite's options)")]
    pub endpoints: Option<(IpAddr, IpAddr)>,
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
    /// Map source and destination addresses CIDR to CIDR, as --srcipmap and --dstipmap with one list.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["srcipmap", "dstipmap"], help_heading = "Rewriting (tcprewrite's options)")]
    pub pnat: Vec<CidrMap>,
    /// Rewrite every IPv4/IPv6 (and ARP) address pseudo-randomly from this seed, as tcprewrite does.
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub seed: Option<u32>,
    /// Move the addresses of each pass after the first apart by the pass number (tcpreplay --unique-ip): every pass makes new flows.
    #[arg(
        long,
        conflicts_with = "preload",
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    pub unique_ip: bool,
    /// Add a VLAN tag (needs the tag), delete the outermost one, or edit its fields.
    #[arg(long, value_name = "add|del|edit", value_parser = ["add", "del", "edit"], help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_vlan: Option<String>,
    /// VLAN ID of the added or edited tag (0..=4095).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=4095), help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_vlan_tag: Option<u16>,
    /// Priority (PCP) of the added or edited tag (0..=7).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7), help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_vlan_pri: Option<u8>,
    /// CFI/DEI bit of the added or edited tag (0 or 1).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=1), help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_vlan_cfi: Option<u8>,
    /// TPID of an added tag.
    #[arg(long, default_value = "802.1q", value_parser = ["802.1q", "802.1ad"], help_heading = "Rewriting (tcprewrite's options)")]
    pub enet_vlan_proto: String,
    /// Cut IP packets longer than --mtu to it, IP length and checksums set.
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub mtu_trunc: bool,
    /// The MTU of --mtu-trunc, in bytes of L3 packet.
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u16).range(68..), requires = "mtu_trunc", help_heading = "Rewriting (tcprewrite's options)")]
    pub mtu: u16,
    /// Frames cut by the capture's snap length: pad them back to their length with zeros (checksums right), make the IP length say what was captured, or drop them.
    #[arg(long, value_name = "pad|trunc|del", value_parser = ["pad", "trunc", "del"], help_heading = "Rewriting (tcprewrite's options)")]
    pub fixlen: Option<String>,
    /// Recompute every IPv4, TCP and UDP checksum (by default they are updated incrementally, so a wrong one stays wrong).
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub fixcsum: bool,
    /// Which headers of VXLAN, GRE, GTP-U and IP-in-IP packets the address, port, TTL and TOS options rewrite: the outer ones, the innermost packet's, or both.
    #[arg(long, value_name = "outer|inner|both", default_value = "outer", value_parser = ["outer", "inner", "both"], help_heading = "Rewriting (tcprewrite's options)")]
    pub tunnel: String,
    /// Skip (and count) packets of unsupported link types instead of refusing the trace.
    #[arg(long)]
    pub skip_unsupported: bool,

    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
}

impl ReplayArgs {
    /// The header rewriting these options ask for.
    pub fn rewrite(&self) -> Result<HeaderRewrite, String> {
        for (name, macs) in [
            ("--enet-dmac", &self.enet_dmac),
            ("--enet-smac", &self.enet_smac),
        ] {
            if macs.len() > 2 || (macs.len() == 2 && self.split.is_none()) {
                return Err(format!(
                    "{name} takes one MAC, or two (client side, server side) with --split"
                ));
            }
        }
        Ok(HeaderRewrite {
            enet_dmac: self.enet_dmac.first().copied(),
            enet_smac: self.enet_smac.first().copied(),
            enet_dmac_2: self.enet_dmac.get(1).copied(),
            enet_smac_2: self.enet_smac.get(1).copied(),
            endpoints: self.endpoints,
            vlan: self.vlan()?,
            srcipmap: if self.pnat.is_empty() {
                self.srcipmap.clone()
            } else {
                self.pnat.clone()
            },
            dstipmap: if self.pnat.is_empty() {
                self.dstipmap.clone()
            } else {
                self.pnat.clone()
            },
            portmap: self.portmap.clone(),
            ttl: self.ttl,
            tos: self.tos,
            mtu_trunc: self.mtu_trunc.then_some(self.mtu),
            fixlen: match self.fixlen.as_deref() {
                Some("pad") => Some(FixLen::Pad),
                Some("trunc") => Some(FixLen::Trunc),
                Some("del") => Some(FixLen::Del),
                _ => None,
            },
            seed: self.seed,
            unique_ip: self.unique_ip,
            fixcsum: self.fixcsum,
            l4_csum_by_device: self.run.csum_offload,
            tunnel: self.tunnel.parse()?,
        })
    }

    fn vlan(&self) -> Result<Option<VlanOp>, String> {
        let (tag, pri, cfi) = (
            self.enet_vlan_tag,
            self.enet_vlan_pri,
            self.enet_vlan_cfi.map(|c| c == 1),
        );
        let given = tag.is_some() || pri.is_some() || cfi.is_some();
        Ok(match self.enet_vlan.as_deref() {
            None if given => {
                return Err("--enet-vlan-tag/-pri/-cfi need --enet-vlan add or edit".into())
            }
            None => None,
            Some("add") => Some(VlanOp::Add {
                tag: tag.ok_or("--enet-vlan add needs --enet-vlan-tag")?,
                pri,
                cfi,
                proto: if self.enet_vlan_proto == "802.1ad" {
                    0x88a8
                } else {
                    0x8100
                },
            }),
            Some("del") if given => {
                return Err("--enet-vlan del takes no --enet-vlan-tag/-pri/-cfi".into())
            }
            Some("del") => Some(VlanOp::Del),
            _ if !given => {
                return Err("--enet-vlan edit needs --enet-vlan-tag, -pri or -cfi".into())
            }
            _ => Some(VlanOp::Edit { tag, pri, cfi }),
        })
    }
}
