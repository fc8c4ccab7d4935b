//! Layers a generated frame carries between its Ethernet addresses and the
//! flow's IP header, outermost first: 802.1Q customer tags, 802.1ad service
//! tags (QinQ), MPLS label stacks, and tunnels (VXLAN, Geneve, GRE, GTP-U,
//! IP-in-IP), each tunnel with its own outer IP header.
//!
//! In a session or profile (`encap:`, YAML or JSON), each layer is one of
//! `{vlan: ID}`, `{vlan: {id, pcp, dei}}`, `{svlan: …}`, `{mpls: LABEL}`,
//! `{mpls: {label, tc, ttl}}`, `{vxlan: {vni, src, dst, …}}`,
//! `{gre: {src, dst, key, seq, ethernet}}`, `{gtpu: {teid, src, dst, qfi,
//! uplink, seq}}` or `{ipip: {src, dst}}`. On the command line the same
//! layers are `vlan:ID[:PCP[:dei]]`, `mpls:LABEL[:TC[:TTL]]` and
//! `KIND:KEY=VALUE,…` for tunnels (`vxlan:vni=7,src=…,dst=…`).
//!
//! The order is the wire's: tags follow an Ethernet header (the frame's,
//! or the inner one of a VXLAN or Ethernet-carrying GRE tunnel), labels
//! follow tags, and a tunnel's outer IP header may follow anything.
//! [`crate::encapstack::EncapStack`] turns a checked stack into bytes.

use crate::ethernet::MacAddr;
use serde::Deserialize;
use std::net::IpAddr;

/// 802.1Q customer tag.
pub const TPID_CTAG: u16 = 0x8100;
/// 802.1ad service tag.
pub const TPID_STAG: u16 = 0x88a8;
/// MPLS unicast.
pub const ETHERTYPE_MPLS: u16 = 0x8847;
/// The most layers a frame carries.
pub const MAX_LAYERS: usize = 8;
/// UDP destination port of VXLAN (IANA).
pub const VXLAN_PORT: u16 = crate::tunnel::VXLAN_PORT;
/// UDP destination port of Geneve (IANA, RFC 8926).
pub const GENEVE_PORT: u16 = 6081;

/// One layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncapLayer {
    /// A VLAN tag: TPID, priority (PCP, 0..7), drop eligible, VLAN id
    /// (1..4094).
    Vlan {
        tpid: u16,
        pcp: u8,
        dei: bool,
        vid: u16,
    },
    /// An MPLS label stack entry: label (0..2^20), traffic class (0..7),
    /// TTL. The last of consecutive labels is the bottom of the stack.
    Mpls { label: u32, tc: u8, ttl: u8 },
    /// A tunnel: an outer IP header and what follows it.
    Tunnel(TunnelLayer),
}

/// A tunnel's outer IP header and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TunnelLayer {
    pub kind: TunnelSpec,
    /// Outer addresses (both IPv4 or both IPv6).
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ttl: u8,
    /// IPv4 TOS, IPv6 traffic class.
    pub tos: u8,
    /// MACs of the inner Ethernet header (VXLAN, GRE with `ethernet`);
    /// unset: the frame's own.
    pub inner_src_mac: Option<MacAddr>,
    pub inner_dst_mac: Option<MacAddr>,
}

/// What a tunnel puts after its outer IP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelSpec {
    /// UDP, VXLAN (RFC 7348) and an inner Ethernet header. `sport` unset:
    /// from a hash of the inner flow (49152..65535), as RFC 7348 advises.
    Vxlan {
        vni: u32,
        sport: Option<u16>,
        dport: u16,
    },
    /// UDP, Geneve (RFC 8926: version 0, no options, protocol type
    /// 0x6558) and an inner Ethernet header; `sport` as VXLAN's.
    Geneve {
        vni: u32,
        sport: Option<u16>,
        dport: u16,
    },
    /// GRE (RFC 2784, RFC 2890): an optional key, a sequence number (each
    /// flow's packet index) and, with `ethernet`, transparent Ethernet
    /// bridging (an inner Ethernet header).
    Gre {
        key: Option<u32>,
        seq: bool,
        ethernet: bool,
    },
    /// UDP port 2152 and a GTP-U G-PDU header (3GPP TS 29.281) with its
    /// TEID; `qfi` adds a PDU session container extension header (5G,
    /// TS 38.415) for the uplink or downlink; `seq` a sequence number.
    GtpU {
        teid: u32,
        qfi: Option<u8>,
        uplink: bool,
        seq: bool,
    },
    /// IP directly in IP (protocol 4 or 41).
    IpIp,
}

impl TunnelSpec {
    /// The key a layer of this kind is written under.
    pub fn key(&self) -> &'static str {
        match self {
            TunnelSpec::Vxlan { .. } => "vxlan",
            TunnelSpec::Geneve { .. } => "geneve",
            TunnelSpec::Gre { .. } => "gre",
            TunnelSpec::GtpU { .. } => "gtpu",
            TunnelSpec::IpIp => "ipip",
        }
    }

    /// Whether an Ethernet header follows the tunnel's own.
    pub fn carries_ethernet(&self) -> bool {
        matches!(
            self,
            TunnelSpec::Vxlan { .. }
                | TunnelSpec::Geneve { .. }
                | TunnelSpec::Gre { ethernet: true, .. }
        )
    }
}

impl EncapLayer {
    fn key(&self) -> &'static str {
        match self {
            EncapLayer::Vlan { tpid, .. } if *tpid == TPID_STAG => "svlan",
            EncapLayer::Vlan { .. } => "vlan",
            EncapLayer::Mpls { .. } => "mpls",
            EncapLayer::Tunnel(t) => t.kind.key(),
        }
    }
}

/// Checks a stack: its size, each value's range, and the order. Errors
/// name the layer and key (`encap[2].mpls.label: …`).
pub fn check(layers: &[EncapLayer]) -> Result<(), String> {
    if layers.len() > MAX_LAYERS {
        return Err(format!(
            "encap: {} layers, at most {MAX_LAYERS}",
            layers.len()
        ));
    }
    // What the previous layer leaves: an Ethernet header that tags may
    // follow, labels, or an IP-carrying header.
    #[derive(PartialEq)]
    enum After {
        Ethernet,
        Tag,
        Label,
        Ip,
    }
    let mut after = After::Ethernet;
    for (i, l) in layers.iter().enumerate() {
        let key = l.key();
        let at = format!("encap[{i}].{key}");
        match *l {
            EncapLayer::Vlan { pcp, vid, .. } => {
                match after {
                    After::Label => {
                        return Err(format!(
                            "{at}: a tag after an MPLS label (MPLS carries an IP packet; put tags first)"
                        ))
                    }
                    After::Ip => {
                        return Err(format!(
                            "{at}: a tag needs an Ethernet header before it (the frame's, a vxlan's or a gre's with ethernet: true)"
                        ))
                    }
                    _ => {}
                }
                if !(1..=4094).contains(&vid) {
                    return Err(format!("{at}.id: {vid}: 1..4094 expected"));
                }
                if pcp > 7 {
                    return Err(format!("{at}.pcp: {pcp}: 0..7 expected"));
                }
                after = After::Tag;
            }
            EncapLayer::Mpls { label, tc, .. } => {
                if after == After::Ip {
                    return Err(format!(
                        "{at}: a label needs an Ethernet header before it (the frame's, a vxlan's or a gre's with ethernet: true)"
                    ));
                }
                if label >= 1 << 20 {
                    return Err(format!(
                        "{at}.label: {label}: below 1048576 (20 bits) expected"
                    ));
                }
                if tc > 7 {
                    return Err(format!("{at}.tc: {tc}: 0..7 expected"));
                }
                after = After::Label;
            }
            EncapLayer::Tunnel(t) => {
                if t.src.is_ipv6() != t.dst.is_ipv6() {
                    return Err(format!(
                        "{at}.dst: {} and src {}: both IPv4 or both IPv6",
                        t.dst, t.src
                    ));
                }
                match t.kind {
                    TunnelSpec::Vxlan { vni, .. } | TunnelSpec::Geneve { vni, .. }
                        if vni >= 1 << 24 =>
                    {
                        return Err(format!(
                            "{at}.vni: {vni}: below 16777216 (24 bits) expected"
                        ))
                    }
                    TunnelSpec::GtpU { qfi: Some(q), .. } if q >= 64 => {
                        return Err(format!("{at}.qfi: {q}: 0..63 expected"))
                    }
                    _ => {}
                }
                if !t.kind.carries_ethernet() {
                    if t.inner_src_mac.is_some() {
                        return Err(format!(
                            "{at}.inner_src_mac: this tunnel carries no Ethernet header"
                        ));
                    }
                    if t.inner_dst_mac.is_some() {
                        return Err(format!(
                            "{at}.inner_dst_mac: this tunnel carries no Ethernet header"
                        ));
                    }
                }
                after = if t.kind.carries_ethernet() {
                    After::Ethernet
                } else {
                    After::Ip
                };
            }
        }
    }
    Ok(())
}

/// A tunnel's fields as written, before they are checked.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TunnelFields {
    src: Option<IpAddr>,
    dst: Option<IpAddr>,
    ttl: Option<u8>,
    tos: Option<u8>,
    #[serde(default, deserialize_with = "opt_mac")]
    inner_src_mac: Option<MacAddr>,
    #[serde(default, deserialize_with = "opt_mac")]
    inner_dst_mac: Option<MacAddr>,
    vni: Option<u32>,
    sport: Option<u16>,
    dport: Option<u16>,
    key: Option<u32>,
    #[serde(default)]
    seq: bool,
    #[serde(default)]
    ethernet: bool,
    teid: Option<u32>,
    qfi: Option<u8>,
    #[serde(default)]
    uplink: bool,
}

fn opt_mac<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<MacAddr>, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map(Some).map_err(serde::de::Error::custom)
}

impl TunnelFields {
    /// The keys each kind takes beside the common ones.
    fn layer(self, kind: &str) -> Result<TunnelLayer, String> {
        let own: &[&str] = match kind {
            "vxlan" | "geneve" => &["vni", "sport", "dport", "inner_src_mac", "inner_dst_mac"],
            "gre" => &["key", "seq", "ethernet", "inner_src_mac", "inner_dst_mac"],
            "gtpu" => &["teid", "qfi", "uplink", "seq"],
            "ipip" => &[],
            _ => {
                return Err(format!(
                    "{kind}: not a tunnel (vxlan, geneve, gre, gtpu or ipip)"
                ))
            }
        };
        let given = [
            ("vni", self.vni.is_some()),
            ("sport", self.sport.is_some()),
            ("dport", self.dport.is_some()),
            ("key", self.key.is_some()),
            ("seq", self.seq),
            ("ethernet", self.ethernet),
            ("teid", self.teid.is_some()),
            ("qfi", self.qfi.is_some()),
            ("uplink", self.uplink),
            ("inner_src_mac", self.inner_src_mac.is_some()),
            ("inner_dst_mac", self.inner_dst_mac.is_some()),
        ];
        if let Some((k, _)) = given.iter().find(|(k, set)| *set && !own.contains(k)) {
            return Err(format!(
                "{kind}.{k}: not a key of {kind} (it takes src, dst, ttl, tos{}{})",
                if own.is_empty() { "" } else { ", " },
                own.join(", ")
            ));
        }
        let need = |v: Option<IpAddr>, k: &str| {
            v.ok_or_else(|| format!("{kind}.{k}: missing (the outer IP address)"))
        };
        let spec = match kind {
            "vxlan" => TunnelSpec::Vxlan {
                vni: self.vni.ok_or_else(|| format!("{kind}.vni: missing"))?,
                sport: self.sport,
                dport: self.dport.unwrap_or(VXLAN_PORT),
            },
            "geneve" => TunnelSpec::Geneve {
                vni: self.vni.ok_or_else(|| format!("{kind}.vni: missing"))?,
                sport: self.sport,
                dport: self.dport.unwrap_or(GENEVE_PORT),
            },
            "gre" => TunnelSpec::Gre {
                key: self.key,
                seq: self.seq,
                ethernet: self.ethernet,
            },
            "gtpu" => TunnelSpec::GtpU {
                teid: self.teid.ok_or_else(|| format!("{kind}.teid: missing"))?,
                qfi: self.qfi,
                uplink: self.uplink,
                seq: self.seq,
            },
            _ => TunnelSpec::IpIp,
        };
        Ok(TunnelLayer {
            kind: spec,
            src: need(self.src, "src")?,
            dst: need(self.dst, "dst")?,
            ttl: self.ttl.unwrap_or(64),
            tos: self.tos.unwrap_or(0),
            inner_src_mac: self.inner_src_mac,
            inner_dst_mac: self.inner_dst_mac,
        })
    }

    /// `KEY=VALUE,…` of the command line (flags may stand alone).
    fn from_pairs(kind: &str, text: &str) -> Result<Self, String> {
        let mut f = TunnelFields::default();
        for pair in text.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, "true"));
            let bad = |what: &str| format!("{kind}.{k}: '{v}' is not {what}");
            fn num<T: std::str::FromStr>(v: &str) -> Option<T> {
                v.parse().ok()
            }
            let flag = |v: &str| match v {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(bad("true or false")),
            };
            match k {
                "src" => f.src = Some(num(v).ok_or_else(|| bad("an IP address"))?),
                "dst" => f.dst = Some(num(v).ok_or_else(|| bad("an IP address"))?),
                "ttl" => f.ttl = Some(num(v).ok_or_else(|| bad("0..255"))?),
                "tos" => f.tos = Some(num(v).ok_or_else(|| bad("0..255"))?),
                "inner_src_mac" => f.inner_src_mac = Some(v.parse().map_err(|_| bad("a MAC"))?),
                "inner_dst_mac" => f.inner_dst_mac = Some(v.parse().map_err(|_| bad("a MAC"))?),
                "vni" => f.vni = Some(num(v).ok_or_else(|| bad("a number"))?),
                "sport" => f.sport = Some(num(v).ok_or_else(|| bad("a port"))?),
                "dport" => f.dport = Some(num(v).ok_or_else(|| bad("a port"))?),
                "key" => f.key = Some(num(v).ok_or_else(|| bad("a 32-bit number"))?),
                "teid" => f.teid = Some(num(v).ok_or_else(|| bad("a 32-bit number"))?),
                "qfi" => f.qfi = Some(num(v).ok_or_else(|| bad("0..63"))?),
                "seq" => f.seq = flag(v)?,
                "ethernet" => f.ethernet = flag(v)?,
                "uplink" => f.uplink = flag(v)?,
                _ => return Err(format!("{kind}.{k}: not a key of {kind}")),
            }
        }
        Ok(f)
    }
}

/// A layer as the command line writes it: `vlan:ID[:PCP[:dei]]`,
/// `svlan:ID[:PCP[:dei]]`, `mpls:LABEL[:TC[:TTL]]`, or a tunnel as
/// `vxlan:vni=N,src=IP,dst=IP[,sport=N][,dport=N]` (`geneve:` the same),
/// `gre:src=IP,dst=IP[,key=N][,seq][,ethernet]`,
/// `gtpu:teid=N,src=IP,dst=IP[,qfi=N][,uplink][,seq]` or
/// `ipip:src=IP,dst=IP` (every tunnel also takes `ttl`, `tos`, and the
/// Ethernet-carrying ones `inner_src_mac`, `inner_dst_mac`). Ranges
/// checked by [`check`].
impl std::str::FromStr for EncapLayer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        if matches!(kind, "vxlan" | "geneve" | "gre" | "gtpu" | "ipip") {
            let t = TunnelFields::from_pairs(kind, rest)
                .and_then(|f| f.layer(kind))
                .map_err(|e| format!("'{s}': {e}"))?;
            let layer = EncapLayer::Tunnel(t);
            check(std::slice::from_ref(&layer))
                .map_err(|e| format!("'{s}': {}", e.trim_start_matches("encap[0].")))?;
            return Ok(layer);
        }
        let parts: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(':').collect()
        };
        let num = |i: usize, what: &str| -> Result<Option<u32>, String> {
            parts
                .get(i)
                .map(|p| {
                    p.parse::<u32>()
                        .map_err(|_| format!("'{s}': {what} '{p}' is not a number"))
                })
                .transpose()
        };
        let small = |v: Option<u32>, what: &str, default: u8| -> Result<u8, String> {
            v.map_or(Ok(default), |v| {
                u8::try_from(v).map_err(|_| format!("'{s}': {what} {v} is above 255"))
            })
        };
        let layer = match kind {
            "vlan" | "svlan" => {
                if parts.is_empty() || parts.len() > 3 || parts.get(2).is_some_and(|d| *d != "dei")
                {
                    return Err(format!("'{s}': {kind}:ID[:PCP[:dei]] expected"));
                }
                let vid = num(0, "the VLAN id")?.unwrap_or(0);
                EncapLayer::Vlan {
                    tpid: if kind == "svlan" {
                        TPID_STAG
                    } else {
                        TPID_CTAG
                    },
                    pcp: small(num(1, "the PCP")?, "the PCP", 0)?,
                    dei: parts.len() == 3,
                    vid: u16::try_from(vid)
                        .map_err(|_| format!("'{s}': {kind}.id: {vid}: 1..4094 expected"))?,
                }
            }
            "mpls" => {
                if parts.is_empty() || parts.len() > 3 {
                    return Err(format!("'{s}': mpls:LABEL[:TC[:TTL]] expected"));
                }
                EncapLayer::Mpls {
                    label: num(0, "the label")?.unwrap_or(0),
                    tc: small(num(1, "the TC")?, "the TC", 0)?,
                    ttl: small(num(2, "the TTL")?, "the TTL", 64)?,
                }
            }
            _ => {
                return Err(format!(
                "'{s}': vlan:ID, svlan:ID, mpls:LABEL, vxlan:…, geneve:…, gre:…, gtpu:… or ipip:… expected"
            ))
            }
        };
        check(std::slice::from_ref(&layer))
            .map_err(|e| format!("'{s}': {}", e.trim_start_matches("encap[0].")))?;
        Ok(layer)
    }
}

impl std::fmt::Display for EncapLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            EncapLayer::Vlan { pcp, dei, vid, .. } => {
                write!(
                    f,
                    "{}:{vid}:{pcp}{}",
                    self.key(),
                    if dei { ":dei" } else { "" }
                )
            }
            EncapLayer::Mpls { label, tc, ttl } => write!(f, "mpls:{label}:{tc}:{ttl}"),
            EncapLayer::Tunnel(t) => {
                write!(f, "{}:", t.kind.key())?;
                match t.kind {
                    TunnelSpec::Vxlan { vni, sport, dport }
                    | TunnelSpec::Geneve { vni, sport, dport } => {
                        write!(f, "vni={vni},")?;
                        if let Some(p) = sport {
                            write!(f, "sport={p},")?;
                        }
                        write!(f, "dport={dport},")?;
                    }
                    TunnelSpec::Gre { key, seq, ethernet } => {
                        if let Some(k) = key {
                            write!(f, "key={k},")?;
                        }
                        write!(f, "seq={seq},ethernet={ethernet},")?;
                    }
                    TunnelSpec::GtpU {
                        teid,
                        qfi,
                        uplink,
                        seq,
                    } => {
                        write!(f, "teid={teid},")?;
                        if let Some(q) = qfi {
                            write!(f, "qfi={q},")?;
                        }
                        write!(f, "uplink={uplink},seq={seq},")?;
                    }
                    TunnelSpec::IpIp => {}
                }
                if let Some(m) = t.inner_src_mac {
                    write!(f, "inner_src_mac={m},")?;
                }
                if let Some(m) = t.inner_dst_mac {
                    write!(f, "inner_dst_mac={m},")?;
                }
                write!(f, "src={},dst={},ttl={},tos={}", t.src, t.dst, t.ttl, t.tos)
            }
        }
    }
}

/// A layer as written in a session or profile.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayer {
    #[serde(default)]
    vlan: Option<TagSpec>,
    #[serde(default)]
    svlan: Option<TagSpec>,
    #[serde(default)]
    mpls: Option<LabelSpec>,
    #[serde(default)]
    vxlan: Option<TunnelFields>,
    #[serde(default)]
    geneve: Option<TunnelFields>,
    #[serde(default)]
    gre: Option<TunnelFields>,
    #[serde(default)]
    gtpu: Option<TunnelFields>,
    #[serde(default)]
    ipip: Option<TunnelFields>,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a VLAN id, or {id, pcp, dei}")]
enum TagSpec {
    Id(u16),
    Full(TagFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TagFields {
    id: u16,
    #[serde(default)]
    pcp: u8,
    #[serde(default)]
    dei: bool,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "an MPLS label, or {label, tc, ttl}")]
enum LabelSpec {
    Label(u32),
    Full(LabelFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelFields {
    label: u32,
    #[serde(default)]
    tc: u8,
    #[serde(default = "ttl64")]
    ttl: u8,
}

fn ttl64() -> u8 {
    64
}

impl<'de> Deserialize<'de> for EncapLayer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawLayer::deserialize(d)?;
        let tag = |t: TagSpec, tpid| {
            let (vid, pcp, dei) = match t {
                TagSpec::Id(id) => (id, 0, false),
                TagSpec::Full(f) => (f.id, f.pcp, f.dei),
            };
            EncapLayer::Vlan {
                tpid,
                pcp,
                dei,
                vid,
            }
        };
        let mut given = Vec::new();
        if let Some(t) = r.vlan {
            given.push(tag(t, TPID_CTAG));
        }
        if let Some(t) = r.svlan {
            given.push(tag(t, TPID_STAG));
        }
        if let Some(m) = r.mpls {
            given.push(match m {
                LabelSpec::Label(label) => EncapLayer::Mpls {
                    label,
                    tc: 0,
                    ttl: 64,
                },
                LabelSpec::Full(f) => EncapLayer::Mpls {
                    label: f.label,
                    tc: f.tc,
                    ttl: f.ttl,
                },
            });
        }
        for (kind, t) in [
            ("vxlan", r.vxlan),
            ("geneve", r.geneve),
            ("gre", r.gre),
            ("gtpu", r.gtpu),
            ("ipip", r.ipip),
        ] {
            if let Some(t) = t {
                given.push(EncapLayer::Tunnel(
                    t.layer(kind).map_err(serde::de::Error::custom)?,
                ));
            }
        }
        match given[..] {
            [one] => Ok(one),
            _ => Err(serde::de::Error::custom(
                "a layer is one of vlan, svlan, mpls, vxlan, geneve, gre, gtpu or ipip",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_form_reads_back_what_it_writes() {
        for text in [
            "vlan:100:0",
            "svlan:7:5:dei",
            "mpls:16:3:9",
            "vxlan:vni=7,dport=4789,src=192.0.2.1,dst=192.0.2.2,ttl=64,tos=0",
            "geneve:vni=7,dport=6081,src=192.0.2.1,dst=192.0.2.2,ttl=64,tos=0",
            "geneve:vni=16777215,sport=5000,dport=6081,inner_dst_mac=02:00:00:00:00:02,src=2001:db8::1,dst=2001:db8::2,ttl=9,tos=0",
            "vxlan:vni=16777215,sport=5000,dport=8472,inner_src_mac=02:00:00:00:00:01,inner_dst_mac=02:00:00:00:00:02,src=2001:db8::1,dst=2001:db8::2,ttl=9,tos=184",
            "gre:key=42,seq=true,ethernet=false,src=10.0.0.1,dst=10.0.0.2,ttl=64,tos=0",
            "gre:seq=false,ethernet=true,src=10.0.0.1,dst=10.0.0.2,ttl=64,tos=0",
            "gtpu:teid=305419896,qfi=9,uplink=true,seq=false,src=10.0.0.1,dst=10.0.0.2,ttl=64,tos=0",
            "ipip:src=10.0.0.1,dst=10.0.0.2,ttl=64,tos=0",
        ] {
            let l: EncapLayer = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(l.to_string(), text);
        }
        assert_eq!(
            "mpls:16".parse::<EncapLayer>().unwrap(),
            EncapLayer::Mpls {
                label: 16,
                tc: 0,
                ttl: 64
            }
        );
        let EncapLayer::Tunnel(t) = "gre:src=10.0.0.1,dst=10.0.0.2,key=5,seq"
            .parse::<EncapLayer>()
            .unwrap()
        else {
            panic!("a tunnel")
        };
        assert_eq!(
            t.kind,
            TunnelSpec::Gre {
                key: Some(5),
                seq: true,
                ethernet: false
            }
        );
        for (bad, says) in [
            ("vlan:0", "vlan.id: 0"),
            ("vlan:5000", "vlan.id: 5000"),
            ("svlan:70000", "svlan.id: 70000"),
            ("vlan:5:9", "vlan.pcp: 9"),
            ("mpls:x", "the label 'x' is not a number"),
            ("gre:1", "gre.1: not a key of gre"),
            ("foo:1", "vlan:ID, svlan:ID, mpls:LABEL"),
            ("vlan", "vlan:ID[:PCP[:dei]] expected"),
            ("vxlan:src=10.0.0.1,dst=10.0.0.2", "vxlan.vni: missing"),
            (
                "vxlan:vni=16777216,src=10.0.0.1,dst=10.0.0.2",
                "vxlan.vni: 16777216: below 16777216 (24 bits)",
            ),
            ("vxlan:vni=1,src=10.0.0.1", "vxlan.dst: missing"),
            (
                "vxlan:vni=1,src=10.0.0.1,dst=::1",
                "vxlan.dst: ::1 and src 10.0.0.1",
            ),
            (
                "gtpu:teid=1,src=10.0.0.1,dst=10.0.0.2,qfi=64",
                "gtpu.qfi: 64: 0..63",
            ),
            ("gtpu:teid=x", "gtpu.teid: 'x' is not a 32-bit number"),
            (
                "ipip:src=10.0.0.1,dst=10.0.0.2,vni=3",
                "ipip.vni: not a key of ipip",
            ),
            (
                "ipip:src=10.0.0.1,dst=10.0.0.2,inner_src_mac=02:00:00:00:00:01",
                "ipip.inner_src_mac: not a key of ipip",
            ),
            (
                "gre:src=10.0.0.1,dst=10.0.0.2,seq=maybe",
                "gre.seq: 'maybe' is not true or false",
            ),
        ] {
            let e = bad.parse::<EncapLayer>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    fn vlan(vid: u16) -> EncapLayer {
        EncapLayer::Vlan {
            tpid: TPID_CTAG,
            pcp: 0,
            dei: false,
            vid,
        }
    }

    fn mpls(label: u32) -> EncapLayer {
        EncapLayer::Mpls {
            label,
            tc: 0,
            ttl: 64,
        }
    }

    #[test]
    fn bad_stacks_are_refused_naming_the_layer() {
        let gtp: EncapLayer = "gtpu:teid=1,src=10.0.0.1,dst=10.0.0.2".parse().unwrap();
        let vx: EncapLayer = "vxlan:vni=1,src=10.0.0.1,dst=10.0.0.2".parse().unwrap();
        for (layers, says) in [
            (vec![vlan(0)], "encap[0].vlan.id: 0"),
            (vec![vlan(4095)], "encap[0].vlan.id: 4095"),
            (vec![mpls(1 << 20)], "encap[0].mpls.label: 1048576"),
            (
                vec![mpls(1), vlan(5)],
                "encap[1].vlan: a tag after an MPLS label",
            ),
            (vec![vlan(1); 9], "9 layers"),
            (
                vec![gtp, vlan(5)],
                "encap[1].vlan: a tag needs an Ethernet header before it",
            ),
            (
                vec![gtp, mpls(5)],
                "encap[1].mpls: a label needs an Ethernet",
            ),
        ] {
            let e = check(&layers).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        // Tags of the inner frame after a VXLAN, labels before a tunnel.
        check(&[vlan(1), mpls(3), vx, vlan(2), gtp]).unwrap();
    }

    #[test]
    fn sessions_write_tunnels_as_maps() {
        #[derive(Deserialize)]
        struct S {
            encap: Vec<EncapLayer>,
        }
        let json = r#"{"encap": [{"vlan": 5}, {"vxlan": {"vni": 9, "src": "10.0.0.1", "dst": "10.0.0.2", "inner_dst_mac": "02:00:00:00:00:09"}}, {"gtpu": {"teid": 7, "src": "::1", "dst": "::2", "qfi": 5}}]}"#;
        let s: S = serde_json::from_str(json).unwrap();
        assert_eq!(s.encap.len(), 3);
        assert_eq!(s.encap[1].to_string(), "vxlan:vni=9,dport=4789,inner_dst_mac=02:00:00:00:00:09,src=10.0.0.1,dst=10.0.0.2,ttl=64,tos=0");
        assert_eq!(
            s.encap[2].to_string(),
            "gtpu:teid=7,qfi=5,uplink=false,seq=false,src=::1,dst=::2,ttl=64,tos=0"
        );
        for (bad, says) in [
            (
                r#"{"encap": [{"vxlan": {"vni": 1, "src": "10.0.0.1"}}]}"#,
                "vxlan.dst: missing",
            ),
            (
                r#"{"encap": [{"gre": {"src": "10.0.0.1", "dst": "10.0.0.2", "teid": 1}}]}"#,
                "gre.teid: not a key of gre",
            ),
            (
                r#"{"encap": [{"vlan": 1, "mpls": 2}]}"#,
                "a layer is one of",
            ),
            (
                r#"{"encap": [{"ipip": {"src": "10.0.0.1", "dst": "10.0.0.2", "mtu": 1}}]}"#,
                "unknown field `mtu`",
            ),
        ] {
            let e = serde_json::from_str::<S>(bad).err().unwrap().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
