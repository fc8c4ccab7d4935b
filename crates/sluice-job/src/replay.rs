//! How `sluice replay` sends a trace: timing, passes and tcprewrite's
//! rewriting. Nothing here names a file or a device (the traces, the
//! second port and a split cache are the command line's own), so a worker
//! takes these options from a peer as they are.

use crate::text;
use crate::values::{count, duration, rate};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_core::Nanos;
use sluice_engine::EngineConfig;
use sluice_source::ReplayConfig;
use sluice_wire::{CidrMap, FixLen, MacAddr, PayloadMode, PortMap, TtlOp, VlanOp};

#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayOpts {
    /// Speed up (>1) or slow down (<1) the recorded timing.
    #[arg(long, short = 'x', group = "timing")]
    pub multiplier: Option<f64>,
    /// Send at a fixed packet rate, e.g. 100k.
    #[arg(long, value_parser = rate, group = "timing")]
    #[serde(with = "crate::fields::opt_rate")]
    pub pps: Option<f64>,
    /// Send at a fixed bit rate in Mbit/s (frame bytes), e.g. 250.
    #[arg(long, value_parser = rate, group = "timing")]
    #[serde(with = "crate::fields::opt_rate")]
    pub mbps: Option<f64>,
    /// Send as fast as the output accepts.
    #[arg(long, group = "timing")]
    pub topspeed: bool,

    /// Passes over the trace (0 = forever). Time continues across passes.
    #[arg(long = "loop", value_parser = count, default_value_t = EngineConfig::default().passes)]
    #[serde(rename = "loop")]
    pub loops: u64,
    /// Pause this long between passes, e.g. 125ms (real time, whatever the rate).
    #[arg(long, value_parser = duration, group = "loop_delay", conflicts_with = "topspeed")]
    #[serde(with = "crate::fields::opt_duration")]
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
    /// To xdp:IFACE or a bare IFACE a trace preloads without it when twice
    /// its size fits that budget (its frames then leave the UMEM uncopied).
    #[arg(long)]
    pub preload: bool,
    /// Memory budget of --preload in bytes (default: half of MemAvailable).
    #[arg(long, value_parser = count, hide = true)]
    pub preload_max: Option<u64>,
    /// Shorten recorded gaps longer than this to it (a clock jump in a
    /// capture would otherwise be waited for). Without it, the first gap
    /// over an hour is reported, and kept.
    #[arg(long, value_parser = duration)]
    #[serde(with = "crate::fields::opt_duration")]
    pub max_gap: Option<Nanos>,

    /// Payload handling: keep, zero (same length), truncate (headers only); checksums are recomputed.
    #[arg(long, default_value_t = ReplayConfig::default().payload)]
    #[serde(with = "text")]
    pub payload: PayloadMode,
    /// Source MAC for frames whose link type has none (raw IP, SLL, NULL; default 02:00:00:00:00:01); an Ethernet trace is refused (use --enet-smac).
    #[arg(long)]
    #[serde(with = "text::opt")]
    pub src_mac: Option<MacAddr>,
    /// Destination MAC for frames whose link type has none (default 02:00:00:00:00:02); an Ethernet trace is refused (use --enet-dmac).
    #[arg(long)]
    #[serde(with = "text::opt")]
    pub dst_mac: Option<MacAddr>,
    /// Rewrite every frame's destination MAC; with --split a second MAC is for server-to-client packets (tcprewrite --enet-dmac).
    #[arg(
        long,
        value_name = "MAC[,MAC]",
        value_delimiter = ',',
        num_args = 1,
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    #[serde(with = "text::vec")]
    pub enet_dmac: Vec<MacAddr>,
    /// Rewrite every frame's source MAC, per side as --enet-dmac.
    #[arg(
        long,
        value_name = "MAC[,MAC]",
        value_delimiter = ',',
        num_args = 1,
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    #[serde(with = "text::vec")]
    pub enet_smac: Vec<MacAddr>,
    /// Map source addresses CIDR to CIDR, host bits kept: 10.0.0.0/8:192.168.0.0/16[,...] (IPv4 or IPv6).
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    #[serde(with = "text::vec")]
    pub srcipmap: Vec<CidrMap>,
    /// Map destination addresses CIDR to CIDR, as --srcipmap.
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    #[serde(with = "text::vec")]
    pub dstipmap: Vec<CidrMap>,
    /// Map TCP/UDP ports (source and destination): 80:8080 or 1000-2000:3000[,...].
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    #[serde(with = "text::vec")]
    pub portmap: Vec<PortMap>,
    /// Set the IPv4 TTL / IPv6 hop limit (N), or raise (+N) or lower (-N) it.
    #[arg(
        long,
        allow_hyphen_values = true,
        help_heading = "Rewriting (tcprewrite's options)"
    )]
    #[serde(with = "text::opt")]
    pub ttl: Option<TtlOp>,
    /// Set the IPv4 TOS / DiffServ byte.
    #[arg(long, help_heading = "Rewriting (tcprewrite's options)")]
    pub tos: Option<u8>,
    /// Map source and destination addresses CIDR to CIDR, as --srcipmap and --dstipmap with one list.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["srcipmap", "dstipmap"], help_heading = "Rewriting (tcprewrite's options)")]
    #[serde(with = "text::vec")]
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
}

impl Default for ReplayOpts {
    /// The command line's defaults (a test in `sluice-cli` holds the two
    /// together).
    fn default() -> Self {
        ReplayOpts {
            multiplier: None,
            pps: None,
            mbps: None,
            topspeed: false,
            loops: EngineConfig::default().passes,
            loopdelay: None,
            loopdelay_ms: None,
            loopdelay_ns: None,
            preload: false,
            preload_max: None,
            max_gap: None,
            payload: ReplayConfig::default().payload,
            src_mac: None,
            dst_mac: None,
            enet_dmac: Vec::new(),
            enet_smac: Vec::new(),
            srcipmap: Vec::new(),
            dstipmap: Vec::new(),
            portmap: Vec::new(),
            ttl: None,
            tos: None,
            pnat: Vec::new(),
            seed: None,
            unique_ip: false,
            enet_vlan: None,
            enet_vlan_tag: None,
            enet_vlan_pri: None,
            enet_vlan_cfi: None,
            enet_vlan_proto: "802.1q".into(),
            mtu_trunc: false,
            mtu: 1500,
            fixlen: None,
            fixcsum: false,
            tunnel: "outer".into(),
            skip_unsupported: false,
        }
    }
}

/// `value` is one of `names`.
fn one_of(key: &str, value: &str, names: &[&str]) -> Result<(), String> {
    if names.contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{key}: '{value}' is not one of: {}",
            names.join(", ")
        ))
    }
}

impl ReplayOpts {
    /// What the command line's value parsers and argument relations
    /// refuse, checked again for a job that did not come through it.
    pub fn check(&self) -> Result<(), String> {
        let timings = [
            self.multiplier.is_some(),
            self.pps.is_some(),
            self.mbps.is_some(),
            self.topspeed,
        ];
        if timings.iter().filter(|t| **t).count() > 1 {
            return Err("multiplier, pps, mbps and topspeed exclude each other".into());
        }
        // As the command line's parsers take them: finite and above 0.
        for (key, v) in [
            ("multiplier", self.multiplier),
            ("pps", self.pps),
            ("mbps", self.mbps),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("{key}: {v}: a finite number above 0 is needed"));
            }
        }
        if let Some(m) = self.multiplier.filter(|m| !(1e-9..=1e9).contains(m)) {
            return Err(format!("multiplier: {m}: between 1e-9 and 1e9"));
        }
        let delays = [
            self.loopdelay.is_some(),
            self.loopdelay_ms.is_some(),
            self.loopdelay_ns.is_some(),
        ];
        match delays.iter().filter(|d| **d).count() {
            0 => {}
            1 if !self.topspeed => {}
            _ => return Err("one loopdelay at most, and none with topspeed".into()),
        }
        if self.unique_ip && self.preload {
            return Err("unique_ip and preload exclude each other".into());
        }
        let maps = !self.srcipmap.is_empty() || !self.dstipmap.is_empty();
        if !self.pnat.is_empty() && maps {
            return Err("pnat excludes srcipmap and dstipmap".into());
        }
        if let Some(v) = &self.enet_vlan {
            one_of("enet_vlan", v, &["add", "del", "edit"])?;
        }
        one_of(
            "enet_vlan_proto",
            &self.enet_vlan_proto,
            &["802.1q", "802.1ad"],
        )?;
        if let Some(f) = &self.fixlen {
            one_of("fixlen", f, &["pad", "trunc", "del"])?;
        }
        one_of("tunnel", &self.tunnel, &["outer", "inner", "both"])?;
        if self.enet_vlan_tag.is_some_and(|t| t > 4095)
            || self.enet_vlan_pri.is_some_and(|p| p > 7)
            || self.enet_vlan_cfi.is_some_and(|c| c > 1)
        {
            return Err("enet_vlan_tag 0..=4095, enet_vlan_pri 0..=7, enet_vlan_cfi 0..=1".into());
        }
        if self.mtu < 68 {
            return Err(format!("mtu {}: at least 68", self.mtu));
        }
        Ok(())
    }

    /// `--fixlen` as the rewriter takes it.
    pub fn fixlen(&self) -> Option<FixLen> {
        match self.fixlen.as_deref() {
            Some("pad") => Some(FixLen::Pad),
            Some("trunc") => Some(FixLen::Trunc),
            Some("del") => Some(FixLen::Del),
            _ => None,
        }
    }

    /// The VLAN edit these options ask for.
    pub fn vlan(&self) -> Result<Option<VlanOp>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_rates_are_finite_and_above_zero_as_the_command_lines_are() {
        for m in [f64::NAN, f64::INFINITY, 0.0, -1.0, 1e10] {
            let o = ReplayOpts {
                multiplier: Some(m),
                ..Default::default()
            };
            assert!(o.check().is_err(), "multiplier {m}");
        }
        for r in [f64::NAN, 0.0, -5.0] {
            let o = ReplayOpts {
                pps: Some(r),
                ..Default::default()
            };
            assert!(o.check().is_err(), "pps {r}");
        }
        let o = ReplayOpts {
            multiplier: Some(2.5),
            ..Default::default()
        };
        assert_eq!(o.check(), Ok(()));
    }
}
