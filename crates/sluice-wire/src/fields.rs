//! The field engine: header fields of generated frames varied per flow or
//! per packet, the way TRex's field engine and trafgen's counters build
//! many distinct flows from one template.
//!
//! A field is named (`vxlan.vni`, `vlan[1].id`, `ip.src`, `sport`) or
//! given by byte offset and width in bits (the low `bits` of the
//! `ceil(bits / 8)` bytes at `offset`, big-endian). Its value is drawn
//! from the flow's number (`per: flow`, the default) or the packet's count
//! (`per: packet`): `inc` and `dec` step through `from..=to` and start
//! again, `random` draws uniformly in it (seeded), `list` takes `values`
//! in turn. The engine writes the frame after it is built and keeps every
//! checksum that covers the field right, inner and outer, by RFC 1624's
//! incremental update (a handful of adds per field, never a re-sum).

use crate::checksum::{fold, sum16};
use crate::encap::{EncapLayer, TunnelSpec, TPID_STAG};
use crate::encapstack::EncapStack;
use crate::flowpkt::{FlowHeaders, Layout};
use serde::Deserialize;

/// The most fields a session varies.
pub const MAX_FIELDS: usize = 16;

/// A field as a session writes it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// A named field.
    #[serde(default)]
    pub field: Option<String>,
    /// Or a byte offset in the frame and a width in bits (1..64).
    #[serde(default)]
    pub offset: Option<usize>,
    #[serde(default)]
    pub bits: Option<u8>,
    #[serde(default)]
    pub op: Op,
    #[serde(default)]
    pub from: Option<Value>,
    #[serde(default)]
    pub to: Option<Value>,
    #[serde(default)]
    pub step: Option<u64>,
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    #[serde(default)]
    pub per: Per,
    #[serde(default)]
    pub seed: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    #[default]
    Inc,
    Dec,
    Random,
    List,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    #[default]
    Flow,
    Packet,
}

/// A value: a number, or text: `0x…`, an IPv4 address (its 32 bits), an
/// IPv6 address (its low 64 bits), a MAC (its 48 bits).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Value {
    Num(u64),
    Text(String),
}

impl Value {
    fn get(&self) -> Result<u64, String> {
        match self {
            Value::Num(n) => Ok(*n),
            Value::Text(t) => {
                if let Some(h) = t.strip_prefix("0x") {
                    return u64::from_str_radix(h, 16).map_err(|_| format!("'{t}' is not hex"));
                }
                if let Ok(a) = t.parse::<std::net::Ipv4Addr>() {
                    return Ok(u64::from(u32::from(a)));
                }
                if let Ok(a) = t.parse::<std::net::Ipv6Addr>() {
                    return Ok(u128::from(a) as u64);
                }
                if let Ok(m) = t.parse::<crate::MacAddr>() {
                    let mut b = [0u8; 8];
                    b[2..].copy_from_slice(&m.0);
                    return Ok(u64::from_be_bytes(b));
                }
                Err(format!(
                    "'{t}' is not a number, 0x hex, an IP address or a MAC"
                ))
            }
        }
    }
}

/// Where a field sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Fixed in every frame: (byte offset, window bytes, shift).
    Fixed(usize, usize, u8),
    /// In the flow's IP header.
    Ip(IpKey),
    Sport,
    Dport,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IpKey {
    Src,
    Dst,
    Ttl,
    Tos,
    Id,
}

#[derive(Clone, Debug)]
struct Field {
    target: Target,
    bits: u8,
    op: Op,
    from: u64,
    /// Values in `from..=to` (0: all 2^64).
    span: u64,
    step: u64,
    values: Vec<u64>,
    per: Per,
    seed: u64,
}

/// The fields of a session, checked and placed.
#[derive(Clone, Debug)]
pub struct FieldEngine {
    fields: Vec<Field>,
}

/// The named fields, for error messages.
const NAMES: &str = "eth.src, eth.dst, ip.src, ip.dst, ip.ttl, ip.tos, ip.id, sport, dport, \
     vlan.id, vlan.pcp, svlan.id, svlan.pcp, mpls.label, mpls.tc, mpls.ttl, vxlan.vni, \
     vxlan.sport, gre.key, gtpu.teid, gtpu.qfi, and a tunnel's src, dst, ttl; \
     KIND[N].KEY names the N-th layer of a kind";

impl FieldEngine {
    /// Checks `specs` against the `layers` every frame carries; `seed` is
    /// the session's, the default of each random field (plus its index).
    /// Errors name the key: `fields[1].to: …`.
    pub fn new(specs: &[FieldSpec], layers: &[EncapLayer], seed: u64) -> Result<Self, String> {
        if specs.len() > MAX_FIELDS {
            return Err(format!(
                "fields: {} fields, at most {MAX_FIELDS}",
                specs.len()
            ));
        }
        let fields = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                field(s, layers, seed.wrapping_add(i as u64))
                    .map_err(|e| format!("fields[{i}].{e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(FieldEngine { fields })
    }

    /// Whether a field needs the flow's ports.
    pub fn uses_ports(&self) -> bool {
        self.fields
            .iter()
            .any(|f| matches!(f.target, Target::Sport | Target::Dport))
    }

    /// The bytes the frame must hold: the end of the furthest fixed field.
    pub fn min_frame(&self) -> usize {
        self.fields
            .iter()
            .map(|f| match f.target {
                Target::Fixed(at, n, _) => at + n,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// Writes every field into `frame`, built by `h`, and keeps its
    /// checksums right: `flow` is the flow's number, `packet` the packet's
    /// count. A field past the frame's end, or one the flow lacks (ports
    /// of an ICMP flow, the ID of an IPv6 header) is left alone.
    pub fn apply(&self, frame: &mut [u8], h: &FlowHeaders, flow: u64, packet: u64) {
        let lay = h.layout();
        for (i, f) in self.fields.iter().enumerate() {
            let Some((at, n, shift)) = window(f.target, &lay) else {
                continue;
            };
            if at + n > frame.len() {
                continue;
            }
            let k = match f.per {
                Per::Flow => flow,
                Per::Packet => packet,
            };
            let v = f.value(k, i);
            let mut w = [0u8; 8];
            w[8 - n..].copy_from_slice(&frame[at..at + n]);
            let old = u64::from_be_bytes(w);
            let mask = mask(f.bits) << shift;
            let new = (old & !mask) | ((v << shift) & mask);
            if new == old {
                continue;
            }
            // The one's complement sums of the even-aligned bytes around
            // the field, before and after (every checksummed range starts
            // at an even offset).
            let (a, b) = (at & !1, ((at + n + 1) & !1).min(frame.len()));
            let before = !fold(sum16(&frame[a..b], 0));
            frame[at..at + n].copy_from_slice(&new.to_be_bytes()[8 - n..]);
            let after = !fold(sum16(&frame[a..b], 0));
            fix_checksums(frame, &lay, h.encap(), a, before, after);
        }
    }
}

impl Field {
    fn value(&self, k: u64, index: usize) -> u64 {
        let span = |x: u64| if self.span == 0 { x } else { x % self.span };
        match self.op {
            Op::Inc => self.from.wrapping_add(span(k.wrapping_mul(self.step))),
            Op::Dec => self
                .from
                .wrapping_add(self.span.wrapping_sub(1))
                .wrapping_sub(span(k.wrapping_mul(self.step))),
            Op::Random => {
                let mut x = self.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ k;
                let r = splitmix(&mut x);
                if self.span == 0 {
                    r
                } else {
                    self.from + ((u128::from(r) * u128::from(self.span)) >> 64) as u64
                }
            }
            Op::List => self.values[(k % self.values.len() as u64) as usize],
        }
    }
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn mask(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// (byte offset, window bytes, shift) of a field in a frame laid out as
/// `lay`; None where the flow has no such field.
fn window(t: Target, lay: &Layout) -> Option<(usize, usize, u8)> {
    let ip = lay.ip;
    Some(match (t, lay.v6) {
        (Target::Fixed(at, n, s), _) => (at, n, s),
        (Target::Ip(IpKey::Src), false) => (ip + 12, 4, 0),
        (Target::Ip(IpKey::Dst), false) => (ip + 16, 4, 0),
        (Target::Ip(IpKey::Ttl), false) => (ip + 8, 1, 0),
        (Target::Ip(IpKey::Tos), false) => (ip + 1, 1, 0),
        (Target::Ip(IpKey::Id), false) => (ip + 4, 2, 0),
        (Target::Ip(IpKey::Src), true) => (ip + 16, 8, 0),
        (Target::Ip(IpKey::Dst), true) => (ip + 32, 8, 0),
        (Target::Ip(IpKey::Ttl), true) => (ip + 7, 1, 0),
        (Target::Ip(IpKey::Tos), true) => (ip, 2, 4),
        (Target::Ip(IpKey::Id), true) => return None,
        (Target::Sport, _) if lay.ports => (lay.l4, 2, 0),
        (Target::Dport, _) if lay.ports => (lay.l4 + 2, 2, 0),
        (Target::Sport | Target::Dport, _) => return None,
    })
}

/// Changed spans: (even offset, sum before, sum after).
struct Changes {
    list: [(usize, u16, u16); 20],
    n: usize,
}

/// Updates every checksum covering the bytes from `at` whose sum went from
/// `before` to `after`, innermost first: a checksum that changes is itself
/// a change the outer ones cover.
fn fix_checksums(
    frame: &mut [u8],
    lay: &Layout,
    encap: Option<&EncapStack>,
    at: usize,
    before: u16,
    after: u16,
) {
    let mut ch = Changes {
        list: [(0, 0, 0); 20],
        n: 1,
    };
    ch.list[0] = (at, before, after);
    let update = |frame: &mut [u8],
                  ch: &mut Changes,
                  csum: usize,
                  covers: &dyn Fn(usize) -> bool,
                  udp: bool| {
        let old = u16::from_be_bytes([frame[csum], frame[csum + 1]]);
        let mut c = old;
        for &(o, b, a) in &ch.list[..ch.n] {
            if covers(o) {
                c = fold(u32::from(!c) + u32::from(!b) + u32::from(a));
            }
        }
        if udp && c == 0 {
            c = 0xffff;
        }
        if c != old {
            frame[csum..csum + 2].copy_from_slice(&c.to_be_bytes());
            if ch.n < ch.list.len() {
                ch.list[ch.n] = (csum, old, c);
                ch.n += 1;
            }
        }
    };
    let ip = lay.ip;
    let addrs = if lay.v6 {
        ip + 8..ip + 40
    } else {
        ip + 12..ip + 20
    };
    if let Some(c) = lay.l4_csum {
        let (l4, pseudo) = (lay.l4, lay.pseudo);
        let covers = |o: usize| o >= l4 || (pseudo && addrs.contains(&o));
        update(frame, &mut ch, c, &covers, lay.udp);
    }
    if !lay.v6 {
        let covers = |o: usize| (ip..ip + 20).contains(&o);
        update(frame, &mut ch, ip + 10, &covers, false);
    }
    let Some(e) = encap else { return };
    for (oip, v6, udp) in e.checksums(lay.v6) {
        if let Some(u) = udp {
            let covers = |o: usize| o >= u || (oip + 8..oip + 40).contains(&o);
            update(frame, &mut ch, u + 6, &covers, true);
        }
        if !v6 {
            let covers = |o: usize| (oip..oip + 20).contains(&o);
            update(frame, &mut ch, oip + 10, &covers, false);
        }
    }
}

/// A spec checked and placed; errors start with the key (`to: …`).
fn field(s: &FieldSpec, layers: &[EncapLayer], seed: u64) -> Result<Field, String> {
    let (target, bits) = match (&s.field, s.offset) {
        (Some(name), None) => {
            if s.bits.is_some() {
                return Err("bits: a named field has its own width; bits go with offset".into());
            }
            named(name, layers).map_err(|e| format!("field: '{name}': {e}"))?
        }
        (None, Some(at)) => {
            let bits = s
                .bits
                .ok_or("bits: missing (the field's width, 1..64, with offset)")?;
            if !(1..=64).contains(&bits) {
                return Err(format!("bits: {bits}: 1..64 expected"));
            }
            (Target::Fixed(at, usize::from(bits).div_ceil(8), 0), bits)
        }
        _ => return Err("field: give a field name or an offset (and bits)".into()),
    };
    let max = mask(bits);
    let get = |v: &Value, key: &str| -> Result<u64, String> {
        let x = v.get().map_err(|e| format!("{key}: {e}"))?;
        if x > max {
            return Err(format!(
                "{key}: {x}: over the field's {bits} bits (at most {max})"
            ));
        }
        Ok(x)
    };
    let step = s.step.unwrap_or(1);
    if step == 0 {
        return Err("step: 0: at least 1".into());
    }
    let (from, to, values) = if s.op == Op::List {
        if s.from.is_some() || s.to.is_some() || s.step.is_some() {
            return Err("op: list takes values, not from, to or step".into());
        }
        let vs = s.values.as_ref().ok_or("values: missing (op: list)")?;
        if vs.is_empty() {
            return Err("values: empty".into());
        }
        let values = vs
            .iter()
            .enumerate()
            .map(|(k, v)| get(v, &format!("values[{k}]")))
            .collect::<Result<Vec<_>, _>>()?;
        (0, 0, values)
    } else {
        if s.values.is_some() {
            return Err("values: for op: list; inc, dec and random take from and to".into());
        }
        let from = s.from.as_ref().map_or(Ok(0), |v| get(v, "from"))?;
        let to = s.to.as_ref().map_or(Ok(max), |v| get(v, "to"))?;
        if from > to {
            return Err(format!(
                "from: {from} is above to {to} (a range does not wrap; give from <= to)"
            ));
        }
        (from, to, Vec::new())
    };
    if s.op == Op::Random && s.step.is_some() {
        return Err("step: random draws take no step".into());
    }
    Ok(Field {
        target,
        bits,
        op: s.op,
        from,
        span: to.wrapping_sub(from).wrapping_add(1),
        step,
        values,
        per: s.per,
        seed: s.seed.unwrap_or(seed),
    })
}

/// A named field: where it is and its width.
fn named(name: &str, layers: &[EncapLayer]) -> Result<(Target, u8), String> {
    let flow = match name {
        "eth.dst" => Some((Target::Fixed(0, 6, 0), 48)),
        "eth.src" => Some((Target::Fixed(6, 6, 0), 48)),
        "ip.src" => Some((Target::Ip(IpKey::Src), 64)),
        "ip.dst" => Some((Target::Ip(IpKey::Dst), 64)),
        "ip.ttl" => Some((Target::Ip(IpKey::Ttl), 8)),
        "ip.tos" => Some((Target::Ip(IpKey::Tos), 8)),
        "ip.id" => Some((Target::Ip(IpKey::Id), 16)),
        "sport" => Some((Target::Sport, 16)),
        "dport" => Some((Target::Dport, 16)),
        _ => None,
    };
    if let Some(t) = flow {
        return Ok(t);
    }
    let (layer, key) = name
        .split_once('.')
        .ok_or_else(|| format!("not a field ({NAMES})"))?;
    let (kind, nth) = match layer.split_once('[') {
        Some((k, rest)) => {
            let n = rest
                .strip_suffix(']')
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| format!("'{layer}': KIND[N] expected"))?;
            (k, n)
        }
        None => (layer, 0),
    };
    if !matches!(
        kind,
        "vlan" | "svlan" | "mpls" | "vxlan" | "gre" | "gtpu" | "ipip"
    ) {
        return Err(format!("not a field ({NAMES})"));
    }
    let of_kind = |l: &EncapLayer| match l {
        EncapLayer::Vlan { tpid, .. } => {
            (if *tpid == TPID_STAG { "svlan" } else { "vlan" }) == kind
        }
        EncapLayer::Mpls { .. } => kind == "mpls",
        EncapLayer::Tunnel(t) => t.kind.key() == kind,
    };
    let mut at = 14;
    let mut found = None;
    let mut seen = 0;
    for l in layers {
        if of_kind(l) {
            if seen == nth {
                found = Some((l, at));
                break;
            }
            seen += 1;
        }
        at += crate::encapstack::len(std::slice::from_ref(l));
    }
    let Some((l, start)) = found else {
        return Err(if seen == 0 {
            format!("the encap has no {kind} layer")
        } else {
            format!("the encap has {seen} {kind} layer(s), [{nth}] is past them")
        });
    };
    let unknown = || format!("{kind} has no field '{key}' ({NAMES})");
    Ok(match l {
        EncapLayer::Vlan { .. } => match key {
            "id" => (Target::Fixed(start, 2, 0), 12),
            "pcp" => (Target::Fixed(start, 2, 13), 3),
            _ => return Err(unknown()),
        },
        EncapLayer::Mpls { .. } => match key {
            "label" => (Target::Fixed(start, 4, 12), 20),
            "tc" => (Target::Fixed(start, 4, 9), 3),
            "ttl" => (Target::Fixed(start + 3, 1, 0), 8),
            _ => return Err(unknown()),
        },
        EncapLayer::Tunnel(t) => {
            let v6 = t.src.is_ipv6();
            let ipl = if v6 { 40 } else { 20 };
            match (key, t.kind) {
                ("src", _) if v6 => (Target::Fixed(start + 16, 8, 0), 64),
                ("dst", _) if v6 => (Target::Fixed(start + 32, 8, 0), 64),
                ("src", _) => (Target::Fixed(start + 12, 4, 0), 32),
                ("dst", _) => (Target::Fixed(start + 16, 4, 0), 32),
                ("ttl", _) => (Target::Fixed(start + if v6 { 7 } else { 8 }, 1, 0), 8),
                ("vni", TunnelSpec::Vxlan { .. }) => (Target::Fixed(start + ipl + 12, 4, 8), 24),
                ("sport", TunnelSpec::Vxlan { .. }) => (Target::Fixed(start + ipl, 2, 0), 16),
                ("key", TunnelSpec::Gre { key: Some(_), .. }) => {
                    (Target::Fixed(start + ipl + 4, 4, 0), 32)
                }
                ("key", TunnelSpec::Gre { key: None, .. }) => {
                    return Err("this gre has no key (give it one to vary it)".into())
                }
                ("teid", TunnelSpec::GtpU { .. }) => (Target::Fixed(start + ipl + 12, 4, 0), 32),
                ("qfi", TunnelSpec::GtpU { qfi: Some(_), .. }) => {
                    (Target::Fixed(start + ipl + 8 + 8 + 4 + 2, 1, 0), 6)
                }
                ("qfi", TunnelSpec::GtpU { qfi: None, .. }) => {
                    return Err("this gtpu has no qfi (give it one to vary it)".into())
                }
                _ => return Err(unknown()),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowpkt::{FlowEnds, FlowProto, PacketFields};
    use crate::payload::verify_checksums;
    use crate::MacAddr;
    use std::sync::Arc;

    fn spec(text: &str) -> FieldSpec {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn layers(text: &[&str]) -> Vec<EncapLayer> {
        text.iter().map(|t| t.parse().unwrap()).collect()
    }

    fn headers(layers: &[EncapLayer], inner: (&str, &str), proto: FlowProto) -> FlowHeaders {
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let ends = FlowEnds {
            src: inner.0.parse().unwrap(),
            dst: inner.1.parse().unwrap(),
            sport: 4000,
            dport: 80,
        };
        let h = FlowHeaders::new(mac, mac, ends, proto, false).unwrap();
        if layers.is_empty() {
            h
        } else {
            h.with_encap(&Arc::new(EncapStack::new(layers, mac, mac).unwrap()))
        }
    }

    fn build(h: &FlowHeaders, index: u64) -> Vec<u8> {
        let mut out = Vec::new();
        h.write(
            &mut out,
            &PacketFields {
                index,
                last: false,
                payload_len: 37,
                tcp_seq: 5,
                prefix: b"abc",
                stamp: Some(2),
            },
        );
        out
    }

    /// Every checksum of a frame and of each packet its tunnels carry.
    fn check_all(frame: &[u8]) -> Result<usize, String> {
        let mut f = frame.to_vec();
        let mut depth = 0;
        loop {
            verify_checksums(&f).map_err(|e| format!("depth {depth}: {e:?}"))?;
            let Some(t) = crate::tunnel::find(&f) else {
                return Ok(depth);
            };
            depth += 1;
            f = match t.inner {
                crate::tunnel::InnerStart::Ethernet => f[t.offset..].to_vec(),
                start => {
                    let ty: u16 = if start == crate::tunnel::InnerStart::Ipv4 {
                        0x0800
                    } else {
                        0x86dd
                    };
                    let mut e = vec![0u8; 12];
                    e.extend_from_slice(&ty.to_be_bytes());
                    e.extend_from_slice(&f[t.offset..]);
                    e
                }
            };
        }
    }

    #[test]
    fn every_named_field_changes_with_its_checksums_kept_right() {
        let stacks = [
            layers(&["svlan:10", "vlan:20", "mpls:100", "mpls:200"]),
            layers(&["vlan:3", "vxlan:vni=7,src=2001:db8:9::1,dst=2001:db8:9::2"]),
            layers(&["vxlan:vni=7,src=192.0.2.1,dst=192.0.2.2"]),
            layers(&["gre:src=192.0.2.1,dst=192.0.2.2,key=4,seq"]),
            layers(&["gtpu:teid=1,qfi=3,src=2001:db8:9::1,dst=2001:db8:9::2"]),
            layers(&[
                "ipip:src=192.0.2.1,dst=192.0.2.2",
                "gtpu:teid=1,src=192.0.2.3,dst=192.0.2.4",
            ]),
        ];
        let names = [
            "eth.src",
            "ip.src",
            "ip.dst",
            "ip.ttl",
            "ip.tos",
            "ip.id",
            "sport",
            "dport",
            "vlan.id",
            "vlan.pcp",
            "svlan.id",
            "mpls.label",
            "mpls[1].tc",
            "mpls.ttl",
            "vxlan.vni",
            "vxlan.sport",
            "vxlan.src",
            "vxlan.dst",
            "vxlan.ttl",
            "gre.key",
            "gre.dst",
            "gtpu.teid",
            "gtpu.qfi",
            "gtpu.src",
            "ipip.dst",
            "gtpu[0].ttl",
        ];
        let mut applied = 0;
        for stack in &stacks {
            for name in names {
                let Ok(engine) = FieldEngine::new(
                    &[spec(&format!(
                        r#"{{"field": "{name}", "op": "random", "from": 1, "to": 50}}"#
                    ))],
                    stack,
                    9,
                ) else {
                    continue;
                };
                for inner in [("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")] {
                    for proto in [
                        FlowProto::Udp,
                        FlowProto::Tcp,
                        FlowProto::Icmp,
                        FlowProto::Ip(253),
                    ] {
                        let h = headers(stack, inner, proto);
                        for flow in 0..8 {
                            let mut f = build(&h, flow);
                            let plain = f.clone();
                            engine.apply(&mut f, &h, flow, flow);
                            let what = format!("{stack:?} {name} {inner:?} {proto:?} flow {flow}");
                            check_all(&f).unwrap_or_else(|e| panic!("{what}: {e}"));
                            let lay = h.layout();
                            if let Some((at, n, shift)) = window(engine.fields[0].target, &lay) {
                                let mut w = [0u8; 8];
                                w[8 - n..].copy_from_slice(&f[at..at + n]);
                                let got =
                                    (u64::from_be_bytes(w) >> shift) & mask(engine.fields[0].bits);
                                assert_eq!(got, engine.fields[0].value(flow, 0), "{what}");
                                assert!((1..=50).contains(&got), "{what}: {got}");
                                applied += 1;
                            } else {
                                assert_eq!(
                                    f, plain,
                                    "{what}: a field the flow lacks is left alone"
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(applied > 3000, "{applied}");
    }

    #[test]
    fn values_follow_the_op() {
        let seq = |text: &str, per_packet: bool| -> Vec<u64> {
            let e = FieldEngine::new(&[spec(text)], &[], 1).unwrap();
            (0..7)
                .map(|k| {
                    let h = headers(&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
                    let mut f = build(&h, 0);
                    let (flow, packet) = if per_packet { (0, k) } else { (k, 0) };
                    e.apply(&mut f, &h, flow, packet);
                    verify_checksums(&f).unwrap();
                    u64::from(u16::from_be_bytes([f[34], f[35]]))
                })
                .collect()
        };
        assert_eq!(
            seq(r#"{"field": "sport", "from": 10, "to": 13}"#, false),
            [10, 11, 12, 13, 10, 11, 12]
        );
        assert_eq!(
            seq(
                r#"{"field": "sport", "from": 10, "to": 14, "step": 2, "per": "packet"}"#,
                true
            ),
            [10, 12, 14, 11, 13, 10, 12]
        );
        assert_eq!(
            seq(
                r#"{"field": "sport", "op": "dec", "from": 10, "to": 12}"#,
                false
            ),
            [12, 11, 10, 12, 11, 10, 12]
        );
        assert_eq!(
            seq(
                r#"{"field": "sport", "op": "list", "values": [5, 80, 443]}"#,
                false
            ),
            [5, 80, 443, 5, 80, 443, 5]
        );
        // Per packet, a per-flow field stays.
        assert_eq!(
            seq(r#"{"field": "sport", "from": 10, "to": 13}"#, true),
            [10; 7]
        );
        let r = seq(
            r#"{"field": "sport", "op": "random", "from": 1000, "to": 1999, "seed": 5}"#,
            false,
        );
        assert!(r.iter().all(|v| (1000..=1999).contains(v)), "{r:?}");
        assert_eq!(
            r,
            seq(
                r#"{"field": "sport", "op": "random", "from": 1000, "to": 1999, "seed": 5}"#,
                false
            )
        );
        assert_ne!(
            r,
            seq(
                r#"{"field": "sport", "op": "random", "from": 1000, "to": 1999, "seed": 6}"#,
                false
            )
        );
        // Addresses as text; an offset field.
        let e = FieldEngine::new(
            &[
                spec(r#"{"field": "ip.dst", "from": "10.1.0.0", "to": "10.1.255.255"}"#),
                spec(r#"{"offset": 42, "bits": 8, "op": "list", "values": ["0x7f"]}"#),
            ],
            &[],
            1,
        )
        .unwrap();
        let h = headers(&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
        let mut f = build(&h, 0);
        e.apply(&mut f, &h, 258, 0);
        assert_eq!(&f[30..34], &[10, 1, 1, 2]);
        assert_eq!(f[42], 0x7f);
        verify_checksums(&f).unwrap();
    }

    #[test]
    fn bad_fields_are_refused_naming_the_key() {
        let vx = layers(&[
            "vlan:3",
            "vxlan:vni=7,src=192.0.2.1,dst=192.0.2.2",
            "gre:src=192.0.2.1,dst=192.0.2.2",
        ]);
        for (text, says) in [
            (
                r#"{"field": "vxlan.vni", "from": 1, "to": 16777216}"#,
                "fields[0].to: 16777216: over the field's 24 bits (at most 16777215)",
            ),
            (
                r#"{"field": "vlan.id", "from": 100, "to": 10}"#,
                "fields[0].from: 100 is above to 10 (a range does not wrap",
            ),
            (
                r#"{"field": "mpls.label"}"#,
                "fields[0].field: 'mpls.label': the encap has no mpls layer",
            ),
            (
                r#"{"field": "vlan[1].id"}"#,
                "'vlan[1].id': the encap has 1 vlan layer(s), [1] is past them",
            ),
            (r#"{"field": "gre.key"}"#, "this gre has no key"),
            (r#"{"field": "vxlan.teid"}"#, "vxlan has no field 'teid'"),
            (
                r#"{"field": "tcp.window"}"#,
                "'tcp.window': not a field (eth.src",
            ),
            (r#"{"offset": 10}"#, "fields[0].bits: missing"),
            (r#"{"offset": 10, "bits": 65}"#, "fields[0].bits: 65: 1..64"),
            (
                r#"{"field": "sport", "bits": 8}"#,
                "fields[0].bits: a named field has its own width",
            ),
            (
                r#"{"field": "sport", "op": "list", "values": []}"#,
                "fields[0].values: empty",
            ),
            (
                r#"{"field": "sport", "op": "list", "values": [70000]}"#,
                "fields[0].values[0]: 70000: over the field's 16 bits",
            ),
            (r#"{"field": "sport", "step": 0}"#, "fields[0].step: 0"),
            (
                r#"{"field": "sport", "values": [1]}"#,
                "fields[0].values: for op: list",
            ),
            (
                r#"{"field": "ip.src", "from": "nope"}"#,
                "fields[0].from: 'nope' is not a number",
            ),
            (r#"{}"#, "fields[0].field: give a field name or an offset"),
        ] {
            let e = FieldEngine::new(&[spec(text)], &vx, 1).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let many = vec![spec(r#"{"field": "sport"}"#); 17];
        assert!(FieldEngine::new(&many, &vx, 1)
            .unwrap_err()
            .contains("17 fields, at most 16"));
        assert!(serde_json::from_str::<FieldSpec>(r#"{"field": "sport", "opp": 1}"#).is_err());
    }
}
