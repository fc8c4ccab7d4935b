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
//! in turn.
//!
//! Fields are written before the checksums that cover them are taken, so
//! a varied field costs about what a fixed one does: the flow's own
//! addresses, TTL, TOS and ports go into its template ([`FieldEngine::vary`],
//! whose sums are taken again), fields in front of the IP header (tags,
//! labels, VNI, TEID, tunnel addresses) into the frame before the layers'
//! lengths and checksums are set. The rest (the IPv4 ID, bytes by offset
//! behind the IP header) is written last, every covering checksum, inner
//! and outer, updated by RFC 1624's incremental update.

use crate::checksum::fold;
use crate::encap::{EncapLayer, TunnelSpec, TPID_STAG};
use crate::encapstack::EncapStack;
use crate::flowpkt::{FlowEnds, FlowHeaders, Layout};
use serde::Deserialize;
use std::net::IpAddr;

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
                    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(format!("'{t}' is not hex"));
                    }
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
    /// In front of the flow's IP header in every frame (Ethernet, the
    /// layers): (byte offset, window bytes, shift).
    Front(usize, usize, u8),
    /// By offset: anywhere, the same in every frame.
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
    /// Written in front of the IP header over an outer IPv4 header or IPv6
    /// address, whose checksums are then summed again.
    resum: bool,
    /// A template's field: the checksums covering its window, found once.
    hits: Hits,
}

/// The fields of a session, checked and placed.
#[derive(Clone, Debug)]
pub struct FieldEngine {
    fields: Vec<Field>,
    /// Some field may lie behind the IP header outside the template (the
    /// IPv4 ID, a field by offset).
    late: bool,
    /// Some field of the template changes per packet (asked per packet by
    /// the source, so kept rather than found each time).
    varies_packets: bool,
    /// Some field may lie in front of the IP header (asked per packet).
    front: bool,
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
                field(s, &|n| named(n, layers), seed.wrapping_add(i as u64))
                    .map_err(|e| format!("fields[{i}].{e}"))
            })
            .collect::<Result<Vec<Field>, _>>()?;
        // The outer IPv4 headers and IPv6 addresses (of a UDP checksum's
        // pseudo header): a field over one has its checksums taken again.
        let v4_headers: Vec<_> = crate::encapstack::starts(layers)
            .filter_map(|(l, at)| match l {
                EncapLayer::Tunnel(t) if t.src.is_ipv4() => Some(at..at + 20),
                EncapLayer::Tunnel(_) => Some(at + 8..at + 40),
                _ => None,
            })
            .collect();
        let mut fields = fields;
        for f in &mut fields {
            f.resum = match f.target {
                Target::Front(at, n, _) => {
                    v4_headers.iter().any(|r| r.start < at + n && at < r.end)
                }
                _ => true,
            };
        }
        let late = fields
            .iter()
            .any(|f| matches!(f.target, Target::Ip(IpKey::Id) | Target::Fixed(..)));
        // Fields by offset may lie anywhere; named ones in front are Front.
        let front = fields
            .iter()
            .any(|f| matches!(f.target, Target::Front(..) | Target::Fixed(..)));
        let varies_packets = fields
            .iter()
            .any(|f| f.in_template() && f.per == Per::Packet);
        Ok(FieldEngine {
            fields,
            late,
            varies_packets,
            front,
        })
    }

    /// The fields of a template: every name is placed by `place` (byte
    /// offset, window bytes, shift; width in bits), and every field is
    /// written by [`FieldEngine::placed_writes`] under the template's
    /// `covers`.
    pub(crate) fn placed(
        specs: &[FieldSpec],
        place: &Place<'_>,
        covers: &[Cover],
        seed: u64,
    ) -> Result<Self, String> {
        if specs.len() > MAX_FIELDS {
            return Err(format!(
                "fields: {} fields, at most {MAX_FIELDS}",
                specs.len()
            ));
        }
        let resolve = |n: &str| place(n).map(|((at, k, s), bits)| (Target::Fixed(at, k, s), bits));
        let mut fields = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                field(s, &resolve, seed.wrapping_add(i as u64))
                    .map_err(|e| format!("fields[{i}].{e}"))
            })
            .collect::<Result<Vec<Field>, _>>()?;
        for f in &mut fields {
            if let Target::Front(at, n, _) | Target::Fixed(at, n, _) = f.target {
                f.hits = hits(covers, at, n).collect();
            }
        }
        let varies_packets = fields.iter().any(|f| f.per == Per::Packet);
        Ok(FieldEngine {
            fields,
            late: true,
            varies_packets,
            front: false,
        })
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
                Target::Front(at, n, _) | Target::Fixed(at, n, _) => at + n,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// Whether some field may lie in front of the IP header (written by
    /// `write_front`).
    pub(crate) fn has_front(&self) -> bool {
        self.front
    }

    /// Whether the flow's own fields change per packet (its template is
    /// built again for each); of a template's engine, whether any field
    /// does.
    pub fn varies_packets(&self) -> bool {
        self.varies_packets
    }

    /// Varies the flow's addresses and ports before its template is built
    /// (so its sums cost nothing more): an IPv6 address's low 64 bits, the
    /// ports of a flow that has them (`ports`: UDP, TCP). `flow` is the
    /// flow's number, `packet` the packet's count.
    pub fn vary_ends(&self, ends: &mut FlowEnds, ports: bool, flow: u64, packet: u64) {
        let addr = |a: IpAddr, v: u64| match a {
            IpAddr::V4(_) => IpAddr::V4((v as u32).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) >> 64 << 64 | u128::from(v)).into()),
        };
        for (i, f) in self.fields.iter().enumerate() {
            let v = || f.value(f.k(flow, packet), i);
            match f.target {
                Target::Ip(IpKey::Src) => ends.src = addr(ends.src, v()),
                Target::Ip(IpKey::Dst) => ends.dst = addr(ends.dst, v()),
                Target::Sport if ports => ends.sport = v() as u16,
                Target::Dport if ports => ends.dport = v() as u16,
                _ => {}
            }
        }
    }

    /// Writes the flow's TTL and TOS fields into its template `h`, whose
    /// sums are then taken again: the frames built from it get their
    /// checksums as any other.
    pub fn vary(&self, h: &mut FlowHeaders, flow: u64, packet: u64) {
        let in_header = |f: &Field| matches!(f.target, Target::Ip(IpKey::Ttl | IpKey::Tos));
        if !self.fields.iter().any(in_header) {
            return;
        }
        let lay = h.template_layout();
        let head = h.head_mut();
        for (i, f) in self.fields.iter().enumerate() {
            if !in_header(f) {
                continue;
            }
            if let Some(w) = window(f.target, &lay) {
                put(head, w, f.bits, f.value(f.k(flow, packet), i));
            }
        }
        h.resum();
    }

    /// Writes the fields in front of the flow's IP header (Ethernet, the
    /// layers: VNI, labels, tags, tunnel addresses) into `frame`, before
    /// the layers' lengths and checksums are set. True if one was written
    /// over an outer IPv4 header or IPv6 address.
    pub(crate) fn write_front(
        &self,
        frame: &mut [u8],
        lay: &Layout,
        flow: u64,
        packet: u64,
    ) -> bool {
        let mut any = false;
        for (i, f) in self.fields.iter().enumerate() {
            if f.in_template() {
                continue;
            }
            if let Some(w @ (at, n, _)) = window(f.target, lay) {
                if at + n <= lay.ip {
                    put(frame, w, f.bits, f.value(f.k(flow, packet), i));
                    any |= f.resum;
                }
            }
        }
        any
    }

    /// Writes the remaining fields (the IPv4 ID, bytes by offset behind the
    /// IP header) into `frame`, built by `h`, and keeps every checksum
    /// covering them right. A field past the frame's end, or one the flow
    /// lacks (the ID of an IPv6 header) is left alone.
    pub fn apply(&self, frame: &mut [u8], h: &FlowHeaders, flow: u64, packet: u64) {
        if !self.late {
            return;
        }
        let lay = h.layout();
        // The checksums, innermost first, and what each gathers.
        let mut all = [Cover::NONE; MAX_COVERS];
        let covers = covers(&lay, h.encap(), &mut all);
        let writes = self.fields.iter().enumerate().filter_map(|(i, f)| {
            if f.in_template() {
                return None;
            }
            let w @ (at, n, _) = window(f.target, &lay)?;
            // In front of the IP header: written before.
            (at + n > lay.ip).then(|| (w, f.bits, f.value(f.k(flow, packet), i)))
        });
        put_covered(frame, covers, writes);
    }

    /// The writes of the fields drawn `per` flow or packet (all given by
    /// place: a template's), `k` being the flow's number or the packet's
    /// count, with the checksums each hits under the covers the engine
    /// was placed under (for [`put_placed`]).
    pub(crate) fn placed_writes(
        &self,
        per: Per,
        k: u64,
    ) -> impl Iterator<Item = (Window, u8, u64, &[(usize, u64)])> {
        self.fields
            .iter()
            .enumerate()
            .filter(move |(_, f)| f.per == per)
            .filter_map(move |(i, f)| match f.target {
                Target::Front(at, n, s) | Target::Fixed(at, n, s) => {
                    Some(((at, n, s), f.bits, f.value(k, i), &f.hits[..]))
                }
                _ => None,
            })
    }
}

/// The most checksums a frame's fields may touch: a template's levels
/// (an L4 checksum, an IPv4 header's, a GRE checksum each).
pub(crate) const MAX_COVERS: usize = 3 * MAX_LEVELS;
/// The most IP headers a template is looked into.
pub(crate) const MAX_LEVELS: usize = 2 + crate::encap::MAX_LAYERS;

/// Writes each (window, bits, value) into `frame` and updates every
/// checksum of `covers` (innermost first) covering the bytes that changed.
/// A window past the frame's end is left alone.
pub(crate) fn put_covered(
    frame: &mut [u8],
    covers: &[Cover],
    writes: impl Iterator<Item = ((usize, usize, u8), u8, u64)>,
) {
    let writes = writes.map(|(w @ (at, n, _), bits, v)| (w, bits, v, hits(covers, at, n)));
    put_hits(frame, covers, writes);
}

/// [`put_covered`] of windows whose `hits` under `covers` were found
/// before (by [`hits`]).
pub(crate) fn put_placed<'a>(
    frame: &mut [u8],
    covers: &[Cover],
    writes: impl Iterator<Item = (Window, u8, u64, &'a [(usize, u64)])>,
) {
    put_hits(
        frame,
        covers,
        writes.map(|(w, bits, v, h)| (w, bits, v, h.iter().copied())),
    );
}

/// Writes each (window, bits, value) into `frame` (one past the frame's
/// end is left alone) and updates the checksums each one hits.
fn put_hits<H: Iterator<Item = (usize, u64)>>(
    frame: &mut [u8],
    covers: &[Cover],
    writes: impl Iterator<Item = (Window, u8, u64, H)>,
) {
    let mut acc: Sums = [(0, 0); MAX_COVERS];
    let mut changed = false;
    for ((at, n, shift), bits, v, hits) in writes {
        if let Some((old, new)) = put(frame, (at, n, shift), bits, v) {
            gather(&mut acc, hits, at, n, old, new);
            changed = true;
        }
    }
    if changed {
        settle(frame, covers, &mut acc);
    }
}

/// Each checksum of `covers` covering some byte of the window of `n`
/// bytes at `at`: its index and the window's bytes it covers (a field by
/// offset may straddle two headers; only the bytes a checksum covers
/// count in it).
pub(crate) fn hits(
    covers: &[Cover],
    at: usize,
    n: usize,
) -> impl Iterator<Item = (usize, u64)> + '_ {
    covers
        .iter()
        .enumerate()
        .map(move |(j, c)| (j, c.mask(at, n)))
        .filter(|&(_, m)| m != 0)
}

/// The sums, per checksum, of the bytes that changed: before, after.
type Sums = [(u32, u32); MAX_COVERS];

/// Adds the change of a window (`old` to `new`, `n` bytes at `at`) to
/// the sums of each checksum hit: the sums of the window's bytes at their
/// place in 16-bit words (every checksummed range starts at an even
/// offset); the bytes around it are the same before and after, so they
/// are left out of both.
fn gather(
    acc: &mut Sums,
    hits: impl Iterator<Item = (usize, u64)>,
    at: usize,
    n: usize,
    old: u64,
    new: u64,
) {
    for (j, m) in hits {
        acc[j].0 += window_sum(old & m, at & 1, n);
        acc[j].1 += window_sum(new & m, at & 1, n);
    }
}

/// Writes each checksum of `covers` whose bytes changed (RFC 1624:
/// HC' = ~(~HC + ~m + m')), innermost first: a checksum that changes is
/// itself a change the outer ones covering it gather.
fn settle(frame: &mut [u8], covers: &[Cover], acc: &mut Sums) {
    for (j, c) in covers.iter().enumerate() {
        let (before, after) = acc[j];
        if before == after {
            continue;
        }
        let old = u16::from_be_bytes([frame[c.at], frame[c.at + 1]]);
        let m = !fold(before);
        let mut new = fold(u32::from(!old) + u32::from(!m) + fold_sum(after));
        if c.udp && new == 0 {
            new = 0xffff;
        }
        if new == old {
            continue;
        }
        frame[c.at..c.at + 2].copy_from_slice(&new.to_be_bytes());
        let mut outer = c.outer;
        while outer != 0 {
            let k = outer.trailing_zeros() as usize;
            outer &= outer - 1;
            acc[k].0 += u32::from(old);
            acc[k].1 += u32::from(new);
        }
    }
}

impl Field {
    /// Written into the flow's template: the flow's own addresses, TTL,
    /// TOS and ports, which no per-packet field of the writer overlaps.
    fn in_template(&self) -> bool {
        matches!(
            self.target,
            Target::Ip(IpKey::Src | IpKey::Dst | IpKey::Ttl | IpKey::Tos)
                | Target::Sport
                | Target::Dport
        )
    }

    /// What the value is drawn from.
    fn k(&self, flow: u64, packet: u64) -> u64 {
        match self.per {
            Per::Flow => flow,
            Per::Packet => packet,
        }
    }

    fn value(&self, k: u64, index: usize) -> u64 {
        let span = |x: u64| {
            if self.span == 0 {
                x
            } else if (x | self.span) >> 32 == 0 {
                // A 32-bit division is several times cheaper.
                u64::from(x as u32 % self.span as u32)
            } else {
                x % self.span
            }
        };
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

/// Writes the low `bits` of `v` into the window (offset, bytes, shift) of
/// `bytes`: the window's old and new values, None if it did not change.
fn put(
    bytes: &mut [u8],
    (at, n, shift): (usize, usize, u8),
    bits: u8,
    v: u64,
) -> Option<(u64, u64)> {
    let w = bytes.get_mut(at..at + n)?;
    let old = w.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let mask = mask(bits) << shift;
    let new = (old & !mask) | ((v << shift) & mask);
    if new == old {
        return None;
    }
    for (k, b) in w.iter_mut().enumerate() {
        *b = (new >> (8 * (n - 1 - k))) as u8;
    }
    Some((old, new))
}

/// The sum (not folded: at most 5 words) of the 16-bit words holding `n`
/// bytes (at most 8) of `v` (big-endian) that start `pad` (0 or 1) bytes
/// into a word.
fn window_sum(v: u64, pad: usize, n: usize) -> u32 {
    // The window's last byte is a word's high byte when pad + n is odd:
    // moved up a byte, the words are the 16-bit lanes of (lo, hi).
    let x = u128::from(v) << (8 * ((pad + n) & 1));
    let (lo, hi) = (x as u64, (x >> 64) as u64);
    const LANES: u64 = 0x0000_ffff_0000_ffff;
    let s = (lo & LANES) + ((lo >> 16) & LANES);
    ((s & 0xffff_ffff) + (s >> 32) + hi) as u32
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
        (Target::Front(at, n, s) | Target::Fixed(at, n, s), _) => (at, n, s),
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

/// A checksum and the bytes it covers: every byte from `tail` on, and
/// those in `lo..hi` (a header, or the addresses of a pseudo header).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cover {
    pub(crate) at: usize,
    /// Every byte from `tail` up to `end`.
    pub(crate) tail: usize,
    pub(crate) end: usize,
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    /// A second range: a routing header's final destination.
    pub(crate) lo2: usize,
    pub(crate) hi2: usize,
    /// UDP's: 0 is sent as 0xffff.
    pub(crate) udp: bool,
    /// The checksums (bits by index, all outer) covering this one, set by
    /// [`link`].
    pub(crate) outer: u32,
}

impl Cover {
    pub(crate) const NONE: Cover = Cover {
        at: 0,
        tail: usize::MAX,
        end: usize::MAX,
        lo: 0,
        hi: 0,
        lo2: 0,
        hi2: 0,
        udp: false,
        outer: 0,
    };

    fn covers(&self, o: usize) -> bool {
        (self.tail..self.end).contains(&o)
            || (self.lo..self.hi).contains(&o)
            || (self.lo2..self.hi2).contains(&o)
    }

    /// The bytes of the window of `n` bytes (at most 8) at `at` this
    /// checksum covers, as a mask over the window's big-endian value.
    fn mask(&self, at: usize, n: usize) -> u64 {
        let mut m = 0;
        for (lo, hi) in [
            (self.tail, self.end),
            (self.lo, self.hi),
            (self.lo2, self.hi2),
        ] {
            let (a, b) = (lo.max(at), hi.min(at + n));
            if a < b {
                // Window bytes a - at .. b - at; byte k is bits 8 (n - 1 - k).
                let run = u64::MAX >> (64 - 8 * (b - a));
                m |= run << (8 * (at + n - b));
            }
        }
        m
    }
}

/// The checksums of a frame laid out as `lay` behind `encap`, innermost
/// first, written into `all`.
fn covers<'a>(lay: &Layout, encap: Option<&EncapStack>, all: &'a mut [Cover]) -> &'a [Cover] {
    let mut n = 0;
    let ip = lay.ip;
    if let Some(at) = lay.l4_csum {
        // The pseudo header's addresses; behind a routing header the
        // destination is the final one, in the header.
        let ((lo, hi), (lo2, hi2)) = match (lay.pseudo, lay.v6, lay.final_dst) {
            (false, _, _) => ((0, 0), (0, 0)),
            (true, false, _) => ((ip + 12, ip + 20), (0, 0)),
            (true, true, None) => ((ip + 8, ip + 40), (0, 0)),
            (true, true, Some(f)) => ((ip + 8, ip + 24), (f, f + 16)),
        };
        all[n] = Cover {
            at,
            tail: lay.l4,
            end: usize::MAX,
            lo,
            hi,
            lo2,
            hi2,
            udp: lay.udp,
            outer: 0,
        };
        n += 1;
    }
    if !lay.v6 {
        all[n] = Cover {
            at: ip + 10,
            lo: ip,
            hi: ip + 20,
            ..Cover::NONE
        };
        n += 1;
    }
    if let Some(e) = encap {
        for (oip, v6, udp) in e.checksums(lay.v6) {
            if let Some(u) = udp {
                all[n] = Cover {
                    at: u + 6,
                    tail: u,
                    lo: oip + 8,
                    hi: oip + 40,
                    udp: true,
                    ..Cover::NONE
                };
                n += 1;
            }
            if !v6 {
                all[n] = Cover {
                    at: oip + 10,
                    lo: oip,
                    hi: oip + 20,
                    ..Cover::NONE
                };
                n += 1;
            }
        }
    }
    link(&mut all[..n]);
    &all[..n]
}

/// Notes in each checksum of `covers` (innermost first, at most
/// [`MAX_COVERS`]) the outer ones covering it.
pub(crate) fn link(covers: &mut [Cover]) {
    for j in 0..covers.len() {
        let at = covers[j].at;
        covers[j].outer = (j + 1..covers.len())
            .filter(|&k| covers[k].covers(at))
            .fold(0, |m, k| m | 1 << k);
    }
}

/// A sum of up to 2^16 16-bit terms folded to 16 bits (not complemented).
fn fold_sum(s: u32) -> u32 {
    u32::from(!fold(s))
}

/// The checksums covering a window: each one's index in the covers and
/// the window's bytes it covers (a mask over the window's value).
pub(crate) type Hits = Vec<(usize, u64)>;

/// Where a field sits in a frame: (byte offset, window bytes, shift of
/// its low bit in the window).
pub(crate) type Window = (usize, usize, u8);

/// Where a template's named field is and its width in bits.
pub(crate) type Place<'a> = dyn Fn(&str) -> Result<(Window, u8), String> + 'a;

/// Where a named field is and its width.
type Resolve<'a> = dyn Fn(&str) -> Result<(Target, u8), String> + 'a;

/// A spec checked and placed; errors start with the key (`to: …`).
fn field(s: &FieldSpec, named: &Resolve<'_>, seed: u64) -> Result<Field, String> {
    let (target, bits) = match (&s.field, s.offset) {
        (Some(name), None) => {
            if s.bits.is_some() {
                return Err("bits: a named field has its own width; bits go with offset".into());
            }
            named(name).map_err(|e| format!("field: '{name}': {e}"))?
        }
        (None, Some(at)) => {
            if at > 65_535 {
                return Err(format!("offset: {at}: past any frame (at most 65535)"));
            }
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
    // A VLAN id is 1..4094 (0 and 4095 are reserved, as `encap` says).
    let vlan_id = s.field.as_deref().is_some_and(|n| {
        n.split_once('.').is_some_and(|(layer, key)| {
            key == "id" && matches!(layer.split('[').next(), Some("vlan" | "svlan"))
        })
    });
    let (least, max) = if vlan_id { (1, 4094) } else { (0, mask(bits)) };
    let get = |v: &Value, key: &str| -> Result<u64, String> {
        let x = v.get().map_err(|e| format!("{key}: {e}"))?;
        if vlan_id && !(least..=max).contains(&x) {
            return Err(format!("{key}: {x}: a VLAN id is 1..4094"));
        }
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
        let from = s.from.as_ref().map_or(Ok(least), |v| get(v, "from"))?;
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
        resum: true,
        hits: Vec::new(),
    })
}

/// A named field: where it is and its width.
fn named(name: &str, layers: &[EncapLayer]) -> Result<(Target, u8), String> {
    let flow = match name {
        "eth.dst" => Some((Target::Front(0, 6, 0), 48)),
        "eth.src" => Some((Target::Front(6, 6, 0), 48)),
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
    let mut found = None;
    let mut seen = 0;
    for (l, at) in crate::encapstack::starts(layers) {
        if of_kind(l) {
            if seen == nth {
                found = Some((l, at));
                break;
            }
            seen += 1;
        }
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
            "id" => (Target::Front(start, 2, 0), 12),
            "pcp" => (Target::Front(start, 2, 13), 3),
            _ => return Err(unknown()),
        },
        EncapLayer::Mpls { .. } => match key {
            "label" => (Target::Front(start, 4, 12), 20),
            "tc" => (Target::Front(start, 4, 9), 3),
            "ttl" => (Target::Front(start + 3, 1, 0), 8),
            _ => return Err(unknown()),
        },
        EncapLayer::Tunnel(t) => {
            let v6 = t.src.is_ipv6();
            let ipl = if v6 { 40 } else { 20 };
            match (key, t.kind) {
                ("src", _) if v6 => (Target::Front(start + 16, 8, 0), 64),
                ("dst", _) if v6 => (Target::Front(start + 32, 8, 0), 64),
                ("src", _) => (Target::Front(start + 12, 4, 0), 32),
                ("dst", _) => (Target::Front(start + 16, 4, 0), 32),
                ("ttl", _) => (Target::Front(start + if v6 { 7 } else { 8 }, 1, 0), 8),
                ("vni", TunnelSpec::Vxlan { .. }) => (Target::Front(start + ipl + 12, 4, 8), 24),
                ("sport", TunnelSpec::Vxlan { .. }) => (Target::Front(start + ipl, 2, 0), 16),
                ("key", TunnelSpec::Gre { key: Some(_), .. }) => {
                    (Target::Front(start + ipl + 4, 4, 0), 32)
                }
                ("key", TunnelSpec::Gre { key: None, .. }) => {
                    return Err("this gre has no key (give it one to vary it)".into())
                }
                ("teid", TunnelSpec::GtpU { .. }) => (Target::Front(start + ipl + 12, 4, 0), 32),
                ("qfi", TunnelSpec::GtpU { qfi: Some(_), .. }) => {
                    (Target::Front(start + ipl + 8 + 8 + 4 + 2, 1, 0), 6)
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
pub(crate) mod tests {
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
        varied_headers(layers, inner, proto, None)
    }

    /// A flow's headers as a source builds them, its fields varied for
    /// (flow, packet) by `e`.
    fn varied_headers(
        layers: &[EncapLayer],
        inner: (&str, &str),
        proto: FlowProto,
        e: Option<(&FieldEngine, u64, u64)>,
    ) -> FlowHeaders {
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let mut ends = FlowEnds {
            src: inner.0.parse().unwrap(),
            dst: inner.1.parse().unwrap(),
            sport: 4000,
            dport: 80,
        };
        if let Some((e, flow, packet)) = e {
            let ports = matches!(proto, FlowProto::Udp | FlowProto::Tcp);
            e.vary_ends(&mut ends, ports, flow, packet);
        }
        let mut h = FlowHeaders::new(mac, mac, ends, proto, false).unwrap();
        if let Some((e, flow, packet)) = e {
            e.vary(&mut h, flow, packet);
        }
        if layers.is_empty() {
            h
        } else {
            h.with_encap(&Arc::new(EncapStack::new(layers, mac, mac).unwrap()))
        }
    }

    fn fields(index: u64) -> PacketFields<'static> {
        PacketFields {
            index,
            last: false,
            payload_len: 37,
            tcp_seq: 5,
            prefix: b"abc",
            stamp: Some(2),
        }
    }

    fn build(h: &FlowHeaders, index: u64) -> Vec<u8> {
        let mut out = Vec::new();
        h.write(&mut out, &fields(index));
        out
    }

    /// A frame as a source builds it: the template varied, then written
    /// with the other fields.
    fn build_varied(
        flow_of: (&[EncapLayer], (&str, &str), FlowProto),
        e: &FieldEngine,
        index: u64,
        flow: u64,
        packet: u64,
    ) -> Vec<u8> {
        let (layers, inner, proto) = flow_of;
        let h = varied_headers(layers, inner, proto, Some((e, flow, packet)));
        let mut out = Vec::new();
        h.write_varied(&mut out, &fields(index), e, flow, packet);
        out
    }

    /// Every checksum of a frame and of each packet its tunnels carry.
    pub(crate) fn check_all(frame: &[u8]) -> Result<usize, String> {
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
                            let plain = build(&h, flow);
                            let f = build_varied((stack, inner, proto), &engine, flow, flow, flow);
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
    fn fields_by_offset_across_headers_keep_every_checksum() {
        use crate::ip6ext::{Fragment, Ipv6Ext, Ipv6ExtStack, Routing};
        // IPv4 UDP: bytes 32..36 are the destination's low half (IPv4
        // header, pseudo header) and the source port (UDP header).
        let e = FieldEngine::new(
            &[spec(
                r#"{"offset": 32, "bits": 32, "op": "list", "values": ["0x12345678"]}"#,
            )],
            &[],
            1,
        )
        .unwrap();
        let udp: (&[EncapLayer], _, _) = (&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
        let f = build_varied(udp, &e, 0, 0, 0);
        assert_eq!(&f[32..36], &[0x12, 0x34, 0x56, 0x78]);
        verify_checksums(&f).unwrap();
        // IPv6 behind a routing header and a fragment header: the IPv6
        // destination (the segment, not in the pseudo header) at 38..54,
        // the final destination (segment list[0]) at 62..78, the fragment
        // header at 94..102, UDP from 102.
        let ext = Arc::new(
            Ipv6ExtStack::new(&[
                Ipv6Ext::Routing(Routing {
                    segments: vec!["2001:db8:a::1".parse().unwrap()],
                }),
                Ipv6Ext::Fragment(Fragment { id: 1 }),
            ])
            .unwrap(),
        );
        let e = FieldEngine::new(
            &[
                spec(r#"{"offset": 46, "bits": 16, "op": "list", "values": [48879]}"#),
                spec(
                    r#"{"offset": 70, "bits": 64, "op": "list", "values": ["0xdeadbeef01020304"]}"#,
                ),
                spec(r#"{"offset": 98, "bits": 48, "op": "list", "values": ["0xa1a2a3a4a5a6"]}"#),
            ],
            &[],
            1,
        )
        .unwrap();
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let ends = FlowEnds {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            sport: 4000,
            dport: 80,
        };
        for proto in [FlowProto::Udp, FlowProto::Tcp, FlowProto::Icmp] {
            let h = FlowHeaders::new(mac, mac, ends, proto, false)
                .unwrap()
                .with_ipv6_ext(&ext);
            let mut f = Vec::new();
            h.write_varied(&mut f, &fields(0), &e, 0, 0);
            assert_eq!(
                &f[70..78],
                &0xdead_beef_0102_0304u64.to_be_bytes(),
                "{proto:?}"
            );
            assert_eq!(
                &f[98..104],
                &[0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6],
                "{proto:?}"
            );
            verify_checksums(&f).unwrap_or_else(|err| panic!("{proto:?}: {err:?}"));
            // The L4 checksum is checked there (an atomic fragment is whole).
            let n = f.len();
            f[n - 1] ^= 1;
            assert!(verify_checksums(&f).is_err(), "{proto:?}");
        }
    }

    #[test]
    fn values_follow_the_op() {
        let seq = |text: &str, per_packet: bool| -> Vec<u64> {
            let e = FieldEngine::new(&[spec(text)], &[], 1).unwrap();
            (0..7)
                .map(|k| {
                    let (flow, packet) = if per_packet { (0, k) } else { (k, 0) };
                    let udp: (&[EncapLayer], _, _) =
                        (&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
                    let f = build_varied(udp, &e, 0, flow, packet);
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
        let udp: (&[EncapLayer], _, _) = (&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
        let f = build_varied(udp, &e, 0, 258, 0);
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
            (
                r#"{"field": "vlan.id", "to": 4095}"#,
                "fields[0].to: 4095: a VLAN id is 1..4094",
            ),
            (
                r#"{"field": "vlan[0].id", "op": "list", "values": [0]}"#,
                "fields[0].values[0]: 0: a VLAN id is 1..4094",
            ),
            (
                r#"{"offset": 18446744073709551615, "bits": 8}"#,
                "fields[0].offset: 18446744073709551615: past any frame",
            ),
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
