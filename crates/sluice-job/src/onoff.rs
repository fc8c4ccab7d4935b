//! How `sluice profile onoff` sends: superposed ON/OFF flows, their laws
//! and their frames. Nothing here names a file or a device.

use crate::text;
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_profile::{GapLaw, PacketSpec};
use sluice_wire::MacAddr;
use std::net::IpAddr;

/// A gap law as written (`DIST:MEAN[,std=DURATION|,shape=K]`) and ready
/// to sample: the text is kept, so a job writes back what it read.
#[derive(Clone, Debug)]
pub struct Law {
    text: String,
    pub law: GapLaw,
}

impl std::str::FromStr for Law {
    type Err = String;
    fn from_str(s: &str) -> Result<Law, String> {
        Ok(Law {
            text: s.to_string(),
            law: GapLaw::parse(s)?,
        })
    }
}

impl std::fmt::Display for Law {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Law {
    fn eq(&self, o: &Law) -> bool {
        self.text == o.text
    }
}

fn law(s: &str) -> Result<Law, String> {
    s.parse()
}

// The packet's defaults are a profile's (`PacketSpec`).
fn one() -> u32 {
    PacketSpec::default().flows
}
fn size() -> u16 {
    512
}
fn src() -> IpAddr {
    PacketSpec::default().src
}
fn dst() -> IpAddr {
    PacketSpec::default().dst
}
fn sport() -> u16 {
    PacketSpec::default().sport
}
fn dport() -> u16 {
    PacketSpec::default().dport
}
fn src_mac() -> MacAddr {
    MacAddr::LOCAL_SRC
}
fn dst_mac() -> MacAddr {
    MacAddr::LOCAL_DST
}
fn seed() -> u64 {
    1
}

#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffOpts {
    /// Lengths of ON periods, a law DIST:MEAN[,std=DURATION|,shape=K] (constant, poisson, uniform, normal, lognormal, pareto, weibull, gamma), e.g. pareto:100ms,shape=1.5.
    #[arg(long, value_parser = law)]
    #[serde(with = "text")]
    pub on: Law,
    /// Lengths of OFF periods, a law as for --on.
    #[arg(long, value_parser = law)]
    #[serde(with = "text")]
    pub off: Law,
    /// Gaps between a flow's frames while it is ON, a law as for --on, e.g. constant:100us.
    #[arg(long, value_parser = law)]
    #[serde(with = "text")]
    pub gap: Law,
    /// Independent ON/OFF flows, superposed (UDP source ports --sport, --sport + 1, …).
    #[arg(long, default_value_t = one(), value_parser = clap::value_parser!(u32).range(1..=65_536))]
    #[serde(default = "one")]
    pub flows: u32,
    /// Frame length in bytes without FCS, headers included (42 to 9000 for IPv4, 62 for IPv6).
    #[arg(long, default_value_t = size())]
    #[serde(default = "size")]
    pub size: u16,
    /// Source IP address of every frame (IPv4 or IPv6).
    #[arg(long, default_value_t = src())]
    #[serde(default = "src")]
    pub src: IpAddr,
    /// Destination IP address of every frame.
    #[arg(long, default_value_t = dst())]
    #[serde(default = "dst")]
    pub dst: IpAddr,
    /// UDP source port of the first flow.
    #[arg(long, default_value_t = sport())]
    #[serde(default = "sport")]
    pub sport: u16,
    /// UDP destination port.
    #[arg(long, default_value_t = dport())]
    #[serde(default = "dport")]
    pub dport: u16,
    /// Source MAC of every frame.
    #[arg(long, default_value_t = src_mac())]
    #[serde(default = "src_mac", with = "text")]
    pub src_mac: MacAddr,
    /// Destination MAC of every frame.
    #[arg(long, default_value_t = dst_mac())]
    #[serde(default = "dst_mac", with = "text")]
    pub dst_mac: MacAddr,
    /// A layer in front of the IP header, repeatable, outermost first: vlan:ID[:PCP[:dei]] (802.1Q), svlan:ID[:PCP[:dei]] (802.1ad), mpls:LABEL[:TC[:TTL]], or a tunnel: vxlan:vni=N,src=IP,dst=IP, gre:src=IP,dst=IP[,key=N][,seq], gtpu:teid=N,src=IP,dst=IP[,qfi=N], ipip:src=IP,dst=IP; within --size.
    #[arg(long = "encap", value_name = "LAYER")]
    #[serde(default, with = "text::vec")]
    pub encap: Vec<sluice_wire::encap::EncapLayer>,
    /// Seed of every draw: the same seed sends the same frames at the same times.
    #[arg(long, default_value_t = seed())]
    #[serde(default = "seed")]
    pub seed: u64,
}

impl OnOffOpts {
    /// What the command line's value parsers refuse, checked again for a
    /// job that did not come through it.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=65_536).contains(&self.flows) {
            return Err("flows must be between 1 and 65536".into());
        }
        if self.src.is_ipv6() != self.dst.is_ipv6() {
            return Err(format!(
                "--src {} and --dst {}: both IPv4 or both IPv6",
                self.src, self.dst
            ));
        }
        sluice_wire::encap::check(&self.encap).map_err(|e| format!("--{e}"))?;
        Ok(())
    }
}
