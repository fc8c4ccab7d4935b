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
    /// An IPv6 extension header after the IP header, repeatable, in order (IPv6 flows): hbh[:router_alert], dst[:router_alert], routing:ADDR[+ADDR…], frag[:ID]; within --size.
    #[arg(long = "ipv6-ext", value_name = "EXT")]
    #[serde(default, with = "text::vec")]
    pub ipv6_ext: Vec<sluice_wire::ip6ext::Ipv6Ext>,
    /// A header field varied per flow or per packet, repeatable: NAME[,KEY=VALUE…] or offset=N,bits=B[,KEY=VALUE…], keys op (inc, dec, random, list), from, to, step, values (joined by +), per (flow, packet), seed; e.g. vlan.id,from=10,to=19.
    #[arg(long = "field", value_name = "FIELD")]
    #[serde(default, with = "text::vec")]
    pub fields: Vec<sluice_wire::fields::FieldSpec>,
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
        if !self.ipv6_ext.is_empty() {
            if !self.src.is_ipv6() {
                return Err("--ipv6-ext: extension headers are for IPv6 flows (--src)".into());
            }
            sluice_wire::ip6ext::Ipv6ExtStack::new(&self.ipv6_ext)
                .map_err(|e| format!("--ipv6-ext: {e}"))?;
        }
        if !self.fields.is_empty() {
            let e = sluice_wire::fields::FieldEngine::new(&self.fields, &self.encap, self.seed)
                .map_err(|e| format!("--field: {e}"))?;
            if e.min_frame() > usize::from(self.size) {
                return Err(format!(
                    "--field: a field by offset ends at byte {}, past --size {}",
                    e.min_frame(),
                    self.size
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(extra: serde_json::Value) -> Result<OnOffOpts, String> {
        let mut v = serde_json::json!({"on": "constant:1ms", "off": "constant:1ms",
            "gap": "constant:10us", "src": "2001:db8::1", "dst": "2001:db8::2"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let o: OnOffOpts = serde_json::from_value(v).map_err(|e| e.to_string())?;
        o.check()?;
        Ok(o)
    }

    #[test]
    fn layers_extension_headers_and_fields_travel_as_the_command_line_writes_them() {
        let o = opts(serde_json::json!({
            "encap": ["vlan:5:0"],
            "ipv6_ext": ["hbh:router_alert", "routing:2001:db8::9+2001:db8::2", "frag:7"],
            "fields": ["vlan.id,from=10,to=13", "offset=150,bits=16,op=list,values=1+0xbeef"],
        }))
        .unwrap();
        assert_eq!(o.ipv6_ext.len(), 3);
        assert_eq!(o.fields[1].offset, Some(150));
        let again: OnOffOpts = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert_eq!(again, o);
    }

    #[test]
    fn bad_extension_headers_and_fields_name_the_option() {
        for (extra, says) in [
            (
                serde_json::json!({"ipv6_ext": ["routing:10.0.0.1"]}),
                "is not an IPv6 address",
            ),
            (
                serde_json::json!({"fields": ["vxlan.vni"]}),
                "--field: fields[0].field: 'vxlan.vni'",
            ),
            (
                serde_json::json!({"fields": ["offset=600,bits=8"]}),
                "--field: a field by offset ends at byte 601, past --size 512",
            ),
            (
                serde_json::json!({"fields": ["vlan.id,from=3,to=2"], "encap": ["vlan:1"]}),
                "--field: fields[0].from",
            ),
            (
                serde_json::json!({"src": "10.0.0.1", "dst": "10.0.0.2", "ipv6_ext": ["hbh"]}),
                "--ipv6-ext: extension headers are for IPv6 flows",
            ),
        ] {
            let e = opts(extra.clone()).unwrap_err();
            assert!(e.contains(says), "{extra}: {e}");
        }
    }
}
