//! Templates from outside: a frame given as hex, taken from a capture or
//! built from a short description, sent as it is with the field engine's
//! fields varied in it (TRex's streams over scapy packets, trafgen's
//! packet configurations).
//!
//! A template is looked into once ([`Template::new`]): its Ethernet
//! header, VLAN tags and MPLS labels, each IP header down through the
//! tunnels [`crate::tunnel::find`] knows (VXLAN, GRE, GTP-U, IP-in-IP),
//! and the checksums each level carries. Fields are then placed by name
//! (as a session's layers name them: `vlan[1].id`, `vxlan.vni`,
//! `gre.key`, `gtpu.teid`, a tunnel's `src`, `dst`, `ttl`; `ip.*`,
//! `sport` and `dport` are the innermost packet's) or by offset, and each
//! write updates every checksum covering it (RFC 1624), inner and outer.
//! A checksum that was wrong in the template stays as wrong, unless the
//! template's checksums are computed when it is read (the default).

use crate::encap::EncapLayer;
use crate::fields::{
    hits, put_placed, Cover, FieldEngine, FieldSpec, Hits, Per, Window, MAX_COVERS, MAX_LEVELS,
};
use crate::flowpkt::{FlowEnds, FlowHeaders, FlowProto, PacketFields};
use crate::layers::{be16, Ip, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};
use crate::tunnel::{InnerStart, TunnelKind};
use crate::MacAddr;
use std::net::IpAddr;

/// The shortest template: an Ethernet header.
pub const MIN_TEMPLATE: usize = 14;
/// The longest template: a jumbo frame.
pub const MAX_TEMPLATE: usize = 9216;

/// A template looked into: where its fields and checksums are.
#[derive(Clone, Debug)]
pub struct Template {
    bytes: Vec<u8>,
    /// Checksums, innermost first.
    covers: Vec<Cover>,
    /// Fields of the outer layers.
    names: Vec<Named>,
    inner: Option<Inner>,
    /// Where `flow_frame` writes the flow's ends, with the checksums
    /// covering each: the innermost packet's addresses (IPv6: two 64-bit
    /// halves each), then the ports it has.
    ends: Vec<(Window, u8, Hits)>,
}

/// A field of a template's outer layers: the `nth` layer of `kind`'s
/// `key`.
#[derive(Clone, Copy, Debug)]
struct Named {
    kind: &'static str,
    nth: usize,
    key: &'static str,
    window: Window,
    bits: u8,
}

/// The innermost IP packet of a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inner {
    pub v6: bool,
    /// The IP protocol number (IPv6: the upper layer's, past extension
    /// headers).
    pub proto: u8,
    ip: usize,
    /// The L4 header, when the packet is not a fragment and the chain of
    /// extension headers was walked.
    l4: Option<usize>,
}

impl Inner {
    /// The flow's L4 as the session builder names it.
    pub fn flow_proto(&self) -> FlowProto {
        match self.proto {
            PROTO_UDP => FlowProto::Udp,
            PROTO_TCP => FlowProto::Tcp,
            PROTO_ICMP if !self.v6 => FlowProto::Icmp,
            PROTO_ICMPV6 if self.v6 => FlowProto::Icmp,
            p => FlowProto::Ip(p),
        }
    }

    /// Where the source and destination addresses are.
    fn addrs(&self) -> (usize, usize) {
        if self.v6 {
            (self.ip + 8, self.ip + 24)
        } else {
            (self.ip + 12, self.ip + 16)
        }
    }

    /// Where the flow's source port (ICMP: the echo identifier) and
    /// destination port are, if the template holds them.
    fn ports(&self) -> Option<(usize, Option<usize>)> {
        let l4 = self.l4?;
        match self.flow_proto() {
            FlowProto::Udp | FlowProto::Tcp => Some((l4, Some(l4 + 2))),
            FlowProto::Icmp => Some((l4 + 4, None)),
            FlowProto::Ip(_) => None,
        }
    }
}

impl Template {
    /// Looks into `bytes`; with `fix`, every checksum is computed first
    /// (IPv4 headers, TCP, UDP, ICMP, GRE; inner and outer).
    pub fn new(mut bytes: Vec<u8>, fix: bool) -> Result<Template, String> {
        if !(MIN_TEMPLATE..=MAX_TEMPLATE).contains(&bytes.len()) {
            return Err(format!(
                "{} bytes: a template is {MIN_TEMPLATE} to {MAX_TEMPLATE} bytes",
                bytes.len()
            ));
        }
        if fix {
            crate::HeaderRewrite {
                fixcsum: true,
                tunnel: crate::tunnel::TunnelMode::Both,
                ..Default::default()
            }
            .apply(&mut bytes);
        }
        let mut t = Template {
            bytes,
            covers: Vec::new(),
            names: Vec::new(),
            inner: None,
            ends: Vec::new(),
        };
        let end = t.bytes.len();
        t.level(0, end, InnerStart::Ethernet, 0);
        t.covers.reverse();
        crate::fields::link(&mut t.covers);
        if let Some(i) = t.inner {
            // Windows of at most 8 bytes: an IPv6 address is two.
            let (src, dst) = i.addrs();
            let mut spots = if i.v6 {
                vec![(src, 8), (src + 8, 8), (dst, 8), (dst + 8, 8)]
            } else {
                vec![(src, 4), (dst, 4)]
            };
            if let Some((s, d)) = i.ports() {
                spots.push((s, 2));
                spots.extend(d.map(|d| (d, 2)));
            }
            t.ends = spots
                .into_iter()
                .map(|(at, n)| ((at, n, 0), 8 * n as u8, hits(&t.covers, at, n).collect()))
                .collect();
        }
        Ok(t)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The innermost IP packet, if the template carries one.
    pub fn inner(&self) -> Option<&Inner> {
        self.inner.as_ref()
    }

    /// The innermost packet's addresses and ports (ICMP: the echo
    /// identifier as `sport`).
    pub fn ends(&self) -> Option<FlowEnds> {
        let i = self.inner?;
        let b = &self.bytes;
        let (s, d) = i.addrs();
        let (src, dst) = if i.v6 {
            let a = |at: usize| IpAddr::from(<[u8; 16]>::try_from(&b[at..at + 16]).unwrap());
            (a(s), a(d))
        } else {
            let a = |at: usize| IpAddr::from(<[u8; 4]>::try_from(&b[at..at + 4]).unwrap());
            (a(s), a(d))
        };
        let (sport, dport) = i.ports().map_or((0, 0), |(s, d)| {
            let at = |k: usize| be16(b, k).unwrap_or(0);
            (at(s), d.map_or(0, at))
        });
        Some(FlowEnds {
            src,
            dst,
            sport,
            dport,
        })
    }

    /// Whether the innermost packet's ports (ICMP: its echo identifier)
    /// are in the template: not a fragment, not cut by its IP length.
    pub fn has_ports(&self) -> bool {
        self.inner.is_some_and(|i| i.ports().is_some())
    }

    /// The engine of `specs` over this template (it knows the template's
    /// checksums: give it to this template's `flow_frame` and `write`
    /// only); errors name the key.
    pub fn engine(&self, specs: &[FieldSpec], seed: u64) -> Result<FieldEngine, String> {
        let e = FieldEngine::placed(specs, &|n| self.place(n), &self.covers, seed)?;
        if e.min_frame() > self.bytes.len() {
            return Err(format!(
                "fields: a field by offset ends at byte {}, past the template's {} bytes",
                e.min_frame(),
                self.bytes.len()
            ));
        }
        Ok(e)
    }

    /// The frame of a flow into `out` (cleared): the template with the
    /// flow's addresses and ports as its innermost packet's (a template
    /// without an IP packet is left alone) and `engine`'s fields drawn per
    /// flow (`flow`), every checksum kept right. Packets then add the
    /// fields drawn per packet ([`Template::write`]).
    pub fn flow_frame(
        &self,
        out: &mut Vec<u8>,
        ends: &FlowEnds,
        engine: Option<&FieldEngine>,
        flow: u64,
    ) {
        out.clear();
        out.extend_from_slice(&self.bytes);
        // The ends' values in the order of `self.ends`, from `skip` on.
        let mut v = [0u64; 6];
        let mut skip = 0;
        if let Some(i) = self.inner {
            let addrs = if i.v6 { 4 } else { 2 };
            if i.v6 == ends.src.is_ipv6() && i.v6 == ends.dst.is_ipv6() {
                for (k, a) in [ends.src, ends.dst].into_iter().enumerate() {
                    match a {
                        IpAddr::V4(a) => v[k] = u64::from(u32::from(a)),
                        IpAddr::V6(a) => {
                            let a = u128::from(a);
                            (v[2 * k], v[2 * k + 1]) = ((a >> 64) as u64, a as u64);
                        }
                    }
                }
            } else {
                skip = addrs;
            }
            v[addrs] = u64::from(ends.sport);
            v[addrs + 1] = u64::from(ends.dport);
        }
        let ends = self
            .ends
            .iter()
            .zip(v)
            .skip(skip)
            .map(|((w, bits, hits), v)| (*w, *bits, v, &hits[..]));
        let fields = engine
            .into_iter()
            .flat_map(|e| e.placed_writes(Per::Flow, flow));
        put_placed(out, &self.covers, ends.chain(fields));
    }

    /// Appends a packet's frame to `out`: `base` (its flow's
    /// [`Template::flow_frame`]) with `engine`'s fields drawn per packet
    /// (`packet`), written after those drawn per flow.
    pub fn write(&self, out: &mut Vec<u8>, base: &[u8], engine: Option<&FieldEngine>, packet: u64) {
        let at = out.len();
        out.extend_from_slice(base);
        if let Some(e) = engine.filter(|e| e.varies_packets()) {
            put_placed(
                &mut out[at..],
                &self.covers,
                e.placed_writes(Per::Packet, packet),
            );
        }
    }

    /// Where a named field is.
    fn place(&self, name: &str) -> Result<(Window, u8), String> {
        let inner = || {
            self.inner
                .ok_or_else(|| "the template carries no IP packet".to_string())
        };
        match name {
            "eth.dst" => return Ok(((0, 6, 0), 48)),
            "eth.src" => return Ok(((6, 6, 0), 48)),
            "ip.src" | "ip.dst" | "ip.ttl" | "ip.tos" | "ip.id" => {
                let i = inner()?;
                return ip_field(i.ip, i.v6, &name[3..])
                    .ok_or_else(|| "an IPv6 header has no ID".to_string());
            }
            "sport" | "dport" => {
                let i = inner()?;
                let (s, d) = i
                    .ports()
                    .and_then(|(s, d)| Some((s, d?)))
                    .ok_or("the template's innermost packet has no ports")?;
                return Ok((
                    if name == "sport" {
                        (s, 2, 0)
                    } else {
                        (d, 2, 0)
                    },
                    16,
                ));
            }
            _ => {}
        }
        let (layer, key) = name
            .split_once('.')
            .ok_or_else(|| format!("not a field ({})", self.known()))?;
        let (kind, nth) = match layer.split_once('[') {
            Some((k, rest)) => (
                k,
                rest.strip_suffix(']')
                    .and_then(|n| n.parse::<usize>().ok())
                    .ok_or_else(|| format!("'{layer}': KIND[N] expected"))?,
            ),
            None => (layer, 0),
        };
        self.names
            .iter()
            .find(|n| n.kind == kind && n.nth == nth && n.key == key)
            .map(|n| (n.window, n.bits))
            .ok_or_else(|| format!("the template has no such field ({})", self.known()))
    }

    /// The names the template has, for error messages.
    fn known(&self) -> String {
        let mut v: Vec<String> = vec!["eth.dst".into(), "eth.src".into()];
        if let Some(i) = self.inner {
            v.extend(["ip.src", "ip.dst", "ip.ttl", "ip.tos"].map(String::from));
            if !i.v6 {
                v.push("ip.id".into());
            }
            if i.ports().is_some_and(|(_, d)| d.is_some()) {
                v.extend(["sport".into(), "dport".into()]);
            }
        }
        for n in &self.names {
            v.push(format!("{}[{}].{}", n.kind, n.nth, n.key));
        }
        v.join(", ")
    }

    fn name(&mut self, kind: &'static str, key: &'static str, window: Window, bits: u8) {
        let nth = self
            .names
            .iter()
            .filter(|n| n.kind == kind && n.key == key)
            .count();
        if window.0 + window.1 <= self.bytes.len() {
            self.names.push(Named {
                kind,
                nth,
                key,
                window,
                bits,
            });
        }
    }

    /// Looks into the level starting at `at` with `start`.
    fn level(&mut self, at: usize, end: usize, start: InnerStart, depth: usize) {
        if depth >= MAX_LEVELS || self.covers.len() + 3 > MAX_COVERS || at >= end {
            return;
        }
        // The level as an Ethernet frame, as `parse_layers` reads one: the
        // bytes of its carrier's packet, not the carrier's trailer.
        let bytes = &self.bytes[at..end.min(self.bytes.len())];
        let (view, shift): (Vec<u8>, usize) = match start {
            InnerStart::Ethernet => (bytes.to_vec(), at),
            InnerStart::Ipv4 | InnerStart::Ipv6 => {
                let et: u16 = if start == InnerStart::Ipv4 {
                    0x0800
                } else {
                    0x86dd
                };
                let mut v = vec![0u8; 12];
                v.extend_from_slice(&et.to_be_bytes());
                v.extend_from_slice(bytes);
                // The view's offset k is the frame's k + at - 14.
                (v, at.wrapping_sub(14))
            }
        };
        let abs = |k: usize| k.wrapping_add(shift);
        if start == InnerStart::Ethernet {
            self.tags_and_labels(&view, shift);
        }
        let (layers, extra) = crate::layers::parse_full(&view);
        let Some(ip) = layers.ip else { return };
        let ip_at = abs(layers.l3_offset);
        let v6 = matches!(ip, Ip::V6 { .. });
        // A source route or routing header puts its final hop, not the
        // header's destination, in the L4 pseudo header: the header's
        // destination is then not covered (and the final hop is not named).
        let header_dst = if v6 {
            view.get(layers.l3_offset + 24..layers.l3_offset + 40)
        } else {
            view.get(layers.l3_offset + 16..layers.l3_offset + 20)
        };
        let routed = match (extra.final_dst, header_dst) {
            (Some(crate::layers::FinalDst::V4(d)), Some(h)) => d[..] != *h,
            (Some(crate::layers::FinalDst::V6(d)), Some(h)) => d[..] != *h,
            _ => true,
        };
        let ip_end = abs(layers.ip_end().unwrap_or(view.len()).min(view.len()));
        if let Ip::V4 { header_len, .. } = ip {
            self.covers.push(Cover {
                at: ip_at + 10,
                lo: ip_at,
                hi: ip_at + header_len,
                ..Cover::NONE
            });
        }
        let l4 = layers.l4.filter(|_| !ip.is_fragment());
        if let Some(l) = l4 {
            let l4_at = abs(l.offset);
            let (pseudo, csum) = match (l.proto, v6) {
                (PROTO_UDP, _) => (true, Some(6)),
                (PROTO_TCP, _) => (true, Some(16)),
                (PROTO_ICMP, false) => (false, Some(2)),
                (PROTO_ICMPV6, true) => (true, Some(2)),
                _ => (false, None),
            };
            let stored = be16(&self.bytes, l4_at + csum.unwrap_or(0));
            // A UDP checksum of 0 is none (IPv4; tunnels' over IPv6, RFC
            // 6935) and stays 0.
            let none = l.proto == PROTO_UDP && stored == Some(0);
            if let (Some(c), false, true) = (csum, none, l4_at + l.header_len <= ip_end) {
                let (lo, hi) = match (pseudo, v6, routed) {
                    (false, ..) => (0, 0),
                    (true, false, false) => (ip_at + 12, ip_at + 20),
                    (true, false, true) => (ip_at + 12, ip_at + 16),
                    (true, true, false) => (ip_at + 8, ip_at + 40),
                    (true, true, true) => (ip_at + 8, ip_at + 24),
                };
                self.covers.push(Cover {
                    at: l4_at + c,
                    tail: l4_at,
                    end: ip_end,
                    lo,
                    hi,
                    udp: l.proto == PROTO_UDP,
                    ..Cover::NONE
                });
            }
        }
        // This packet is the innermost until a tunnel shows one inside.
        self.inner = Some(Inner {
            v6,
            proto: l4
                .map(|l| l.proto)
                .or(extra.frag_proto)
                .unwrap_or_else(|| ip_proto(&view, layers.l3_offset, v6)),
            ip: ip_at,
            l4: l4.map(|l| abs(l.offset)),
        });
        let tunnel = crate::tunnel::find(&view).filter(|_| l4.is_some());
        let Some(t) = tunnel else {
            return;
        };
        let l = l4.expect("a tunnel has an L4 header");
        let kind = match t.kind {
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::Gre => "gre",
            TunnelKind::GtpU => "gtpu",
            TunnelKind::IpInIp => "ipip",
        };
        for key in ["src", "dst", "ttl"] {
            if let Some((w, bits)) = ip_field(ip_at, v6, key) {
                self.name(kind, key, w, bits);
            }
        }
        let (l4_at, payload) = (abs(l.offset), abs(l.payload_offset));
        match t.kind {
            TunnelKind::Vxlan => {
                self.name(kind, "vni", (payload + 4, 4, 8), 24);
                self.name(kind, "sport", (l4_at, 2, 0), 16);
            }
            TunnelKind::GtpU => self.name(kind, "teid", (payload + 4, 4, 0), 32),
            TunnelKind::Gre => {
                let flags = self.bytes.get(l4_at).copied().unwrap_or(0);
                if flags & 0x20 != 0 {
                    let key_at = l4_at + 4 + if flags & 0x80 != 0 { 4 } else { 0 };
                    self.name(kind, "key", (key_at, 4, 0), 32);
                }
                if let Some(c) = t.cover {
                    self.covers.push(Cover {
                        at: abs(c.at),
                        tail: abs(c.start),
                        end: abs(t.end),
                        ..Cover::NONE
                    });
                }
            }
            TunnelKind::IpInIp => {}
        }
        self.level(abs(t.offset), abs(t.end), t.inner, depth + 1);
    }

    /// Names the VLAN tags and MPLS labels of an Ethernet header at view
    /// offset 0 (frame offset `shift`).
    fn tags_and_labels(&mut self, view: &[u8], shift: usize) {
        let mut p = 12;
        let mut et = be16(view, p).unwrap_or(0);
        while matches!(et, 0x8100 | 0x88a8 | 0x9100) && p + 6 <= view.len() {
            let kind = if et == 0x8100 { "vlan" } else { "svlan" };
            self.name(kind, "id", (shift + p + 2, 2, 0), 12);
            self.name(kind, "pcp", (shift + p + 2, 2, 13), 3);
            p += 4;
            et = be16(view, p).unwrap_or(0);
        }
        if matches!(et, 0x8847 | 0x8848) {
            let mut q = p + 2;
            while q + 4 <= view.len() {
                let at = shift + q;
                self.name("mpls", "label", (at, 4, 12), 20);
                self.name("mpls", "tc", (at, 4, 9), 3);
                self.name("mpls", "ttl", (at + 3, 1, 0), 8);
                q += 4;
                if view[q - 2] & 1 == 1 {
                    break;
                }
            }
        }
    }
}

/// The protocol field of an IP header at `ip` of `view` (IPv6: its next
/// header, for a packet whose chain was not walked).
fn ip_proto(view: &[u8], ip: usize, v6: bool) -> u8 {
    view.get(ip + if v6 { 6 } else { 9 }).copied().unwrap_or(0)
}

/// A field of the IP header at `ip`: `src`, `dst` (IPv6: their low 64
/// bits), `ttl`, `tos`, `id` (IPv4).
fn ip_field(ip: usize, v6: bool, key: &str) -> Option<(Window, u8)> {
    Some(match (key, v6) {
        ("src", false) => ((ip + 12, 4, 0), 32),
        ("dst", false) => ((ip + 16, 4, 0), 32),
        ("ttl", false) => ((ip + 8, 1, 0), 8),
        ("tos", false) => ((ip + 1, 1, 0), 8),
        ("id", false) => ((ip + 4, 2, 0), 16),
        ("src", true) => ((ip + 16, 8, 0), 64),
        ("dst", true) => ((ip + 32, 8, 0), 64),
        ("ttl", true) => ((ip + 7, 1, 0), 8),
        ("tos", true) => ((ip, 2, 4), 8),
        _ => return None,
    })
}

/// A frame written as hex: pairs of digits, with spaces, colons, dashes
/// or line breaks between them as a hex dump has; `0x` may lead.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let digits: Vec<u8> = t
        .bytes()
        .filter(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b':' | b'-'))
        .collect();
    if let Some(k) = digits.iter().position(|c| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "hex digit {k}: '{}' is not a hex digit",
            char::from(digits[k]).escape_default()
        ));
    }
    if digits.len() % 2 == 1 {
        return Err(format!("{} hex digits: an odd number", digits.len()));
    }
    Ok(digits
        .chunks(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16).expect("checked") as u8;
            d(p[0]) << 4 | d(p[1])
        })
        .collect())
}

/// A frame built from a short description, as a session's flow is:
/// `PROTO [KEY=VALUE ...]` with PROTO one of udp4, udp6, tcp4, tcp6,
/// icmp4, icmp6, ip4, ip6 and keys `src`, `dst`, `sport`, `dport`,
/// `ipproto`, `payload` (bytes), `src_mac`, `dst_mac` and `encap` (layers
/// as a session's `encap` writes them, outermost first, joined by `/`).
pub fn describe(text: &str) -> Result<Vec<u8>, String> {
    let mut words = text.split_whitespace();
    let proto = words
        .next()
        .ok_or("empty (PROTO [KEY=VALUE ...] expected)")?;
    let (v6, l4) = match proto {
        "udp4" => (false, FlowProto::Udp),
        "udp6" => (true, FlowProto::Udp),
        "tcp4" => (false, FlowProto::Tcp),
        "tcp6" => (true, FlowProto::Tcp),
        "icmp4" => (false, FlowProto::Icmp),
        "icmp6" => (true, FlowProto::Icmp),
        "ip4" => (false, FlowProto::Ip(253)),
        "ip6" => (true, FlowProto::Ip(253)),
        _ => {
            return Err(format!(
                "'{proto}' is not a protocol (udp4, udp6, tcp4, tcp6, icmp4, icmp6, ip4, ip6)"
            ))
        }
    };
    let (mut src, mut dst): (IpAddr, IpAddr) = if v6 {
        ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap())
    } else {
        ([10, 0, 0, 1].into(), [10, 0, 0, 2].into())
    };
    let (mut sport, mut dport, mut payload, mut l4) = (1024u16, 9u16, 0usize, l4);
    let (mut src_mac, mut dst_mac) = (MacAddr::LOCAL_SRC, MacAddr::LOCAL_DST);
    let mut layers: Vec<EncapLayer> = Vec::new();
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("'{w}': KEY=VALUE expected"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k}: '{v}': {e}");
        match k {
            "src" => src = v.parse().map_err(|e| bad(&e))?,
            "dst" => dst = v.parse().map_err(|e| bad(&e))?,
            "sport" => sport = v.parse().map_err(|e| bad(&e))?,
            "dport" => dport = v.parse().map_err(|e| bad(&e))?,
            "payload" => {
                payload = v.parse().map_err(|e| bad(&e))?;
                if payload > MAX_TEMPLATE {
                    return Err(format!("payload: {payload}: over {MAX_TEMPLATE} bytes"));
                }
            }
            "ipproto" if matches!(l4, FlowProto::Ip(_)) => {
                l4 = FlowProto::Ip(v.parse().map_err(|e| bad(&e))?)
            }
            "src_mac" => src_mac = v.parse().map_err(|e| bad(&e))?,
            "dst_mac" => dst_mac = v.parse().map_err(|e| bad(&e))?,
            "encap" => {
                layers = v
                    .split('/')
                    .map(|l| l.parse::<EncapLayer>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| bad(&e))?;
                crate::encap::check(&layers).map_err(|e| format!("encap: {e}"))?;
            }
            _ => {
                return Err(format!(
                    "'{k}' is not a key (src, dst, sport, dport, ipproto with ip4/ip6, \
                     payload, src_mac, dst_mac, encap)"
                ))
            }
        }
    }
    if src.is_ipv6() != v6 || dst.is_ipv6() != v6 {
        return Err(format!(
            "src {src}, dst {dst}: not the addresses of {proto}"
        ));
    }
    let mut h = FlowHeaders::new(
        src_mac,
        dst_mac,
        FlowEnds {
            src,
            dst,
            sport,
            dport,
        },
        l4,
        false,
    )?;
    if !layers.is_empty() {
        let stack = crate::encapstack::EncapStack::new(&layers, src_mac, dst_mac)
            .map_err(|e| format!("encap: {e}"))?;
        h = h.with_encap(&std::sync::Arc::new(stack));
    }
    if h.frame_len(payload) > MAX_TEMPLATE {
        return Err(format!(
            "payload: {payload}: the frame would be {} bytes, over {MAX_TEMPLATE}",
            h.frame_len(payload)
        ));
    }
    let mut out = Vec::with_capacity(h.frame_len(payload));
    h.write(
        &mut out,
        &PacketFields {
            index: 0,
            last: false,
            payload_len: payload,
            tcp_seq: 0,
            prefix: &[],
            stamp: None,
        },
    );
    Ok(out)
}

#[cfg(test)]
mod tests;
