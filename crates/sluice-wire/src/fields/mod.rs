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

mod parse;
mod spec;

use crate::checksum::fold;
use crate::encap::EncapLayer;
use crate::encapstack::EncapStack;
use crate::flowpkt::{FlowEnds, FlowHeaders, Layout, Varies};
use parse::{field, named};
pub(crate) use spec::Hits;
use spec::*;
pub use spec::{FieldSpec, Op, Per, Value, MAX_FIELDS};
use std::net::IpAddr;

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

impl Varies for FieldEngine {
    fn has_front(&self) -> bool {
        FieldEngine::has_front(self)
    }
    fn write_front(&self, frame: &mut [u8], lay: &Layout, flow: u64, packet: u64) -> bool {
        FieldEngine::write_front(self, frame, lay, flow, packet)
    }
    fn apply(&self, frame: &mut [u8], h: &FlowHeaders, flow: u64, packet: u64) {
        FieldEngine::apply(self, frame, h, flow, packet)
    }
}

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

/// Where a field sits in a frame: (byte offset, window bytes, shift of
/// its low bit in the window).
pub(crate) type Window = (usize, usize, u8);

/// Where a template's named field is and its width in bits.
pub(crate) type Place<'a> = dyn Fn(&str) -> Result<(Window, u8), String> + 'a;

#[cfg(test)]
pub(crate) mod tests;
