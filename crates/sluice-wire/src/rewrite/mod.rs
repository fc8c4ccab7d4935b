//! Header rewriting with tcprewrite's names and meaning: Ethernet
//! addresses, IP addresses mapped CIDR to CIDR (host bits kept, as
//! tcprewrite's pseudo-NAT does), ports, TTL / hop limit and TOS.
//!
//! Checksums are updated incrementally (RFC 1624 equation 3) for every
//! 16-bit word that changed, as tcprewrite does: a checksum that was wrong
//! in the trace stays exactly as wrong, which IDS and firewall tests rely
//! on. `fixcsum` recomputes them all instead. A UDP checksum of 0 over IPv4
//! ("none") stays 0; an update that yields 0 is sent as 0xffff (RFC 768).
//! IPv6 routing headers that name another final destination are left
//! alone for the destination's part of the pseudo header (the checksum
//! covers that final hop, not the rewritten address).

use crate::checksum::incremental_update;
use crate::ethernet::MacAddr;
use crate::layers::{parse_full, Ip, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP, VLAN_TPIDS};
use crate::payload::recompute_checksums;
use crate::tunnel::{self, TunnelMode};
use std::net::IpAddr;

mod edits;

use edits::{to_int, write_int};
pub use edits::{CidrMap, FixLen, PortMap, TtlOp, VlanOp};

/// What to rewrite in every frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeaderRewrite {
    pub enet_dmac: Option<MacAddr>,
    pub enet_smac: Option<MacAddr>,
    /// MACs for side 1 (server to client) of a split; None: as side 0.
    pub enet_dmac_2: Option<MacAddr>,
    pub enet_smac_2: Option<MacAddr>,
    /// `--endpoints IP1:IP2`: side 0 goes from IP1 to IP2, side 1 from IP2
    /// to IP1 (needs a split).
    pub endpoints: Option<(IpAddr, IpAddr)>,
    pub vlan: Option<VlanOp>,
    pub srcipmap: Vec<CidrMap>,
    pub dstipmap: Vec<CidrMap>,
    pub portmap: Vec<PortMap>,
    pub ttl: Option<TtlOp>,
    pub tos: Option<u8>,
    /// `--mtu-trunc`: frames whose L3 packet exceeds this are cut to it.
    pub mtu_trunc: Option<u16>,
    pub fixlen: Option<FixLen>,
    /// `--seed`: tcprewrite's pseudo-random address rewrite, by its seed.
    pub seed: Option<u32>,
    /// tcprewrite's `--skipbroadcast`: multicast and broadcast addresses
    /// (IPv4 224.0.0.0/4, IPv6 ff00::/8) keep their value under the maps
    /// and `--seed`.
    pub skip_multicast: bool,
    /// tcprewrite's `--tcp-sequence`: this is added to every TCP sequence
    /// number, and to the acknowledgment number but a SYN's without ACK
    /// ([`tcp_sequence_offset`] makes it from the option's seed).
    pub tcp_seq: Option<u32>,
    /// IPv6 traffic class byte (`--tclass`).
    pub tclass: Option<u8>,
    /// IPv6 flow label (`--flowlabel`), added to the cleared field as
    /// tcprewrite adds it.
    pub flowlabel: Option<u32>,
    /// `--unique-ip`: pass k (0-based) moves the last 32 address bits of
    /// each end by k, apart from each other (tcpreplay's `--unique-ip`), so
    /// every pass holds new flows and a flow's two directions stay one.
    pub unique_ip: bool,
    pub fixcsum: bool,
    /// `--csum-offload`: the sink leaves the outermost TCP or UDP checksum
    /// to the device, so a recompute (`fixcsum`, a length change) skips it.
    pub l4_csum_by_device: bool,
    /// `--tunnel`: whether the address, port, TTL and TOS options reach
    /// the headers inside VXLAN, GRE, GTP-U and IP-in-IP.
    pub tunnel: TunnelMode,
}

/// What became of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rewritten {
    Unchanged,
    Changed,
    /// `--fixlen del` on a cut frame: do not send it.
    Dropped,
}

/// (old word, new word) pairs of one checksum, kept on the stack: this
/// runs for every packet.
#[derive(Default)]
struct Words {
    pairs: [(u16, u16); 24],
    len: usize,
}

impl Words {
    fn push(&mut self, pair: (u16, u16)) {
        // At most two IPv6 addresses (16 words), two ports and two IPv4
        // header words change: the capacity is never reached.
        if self.len < self.pairs.len() {
            self.pairs[self.len] = pair;
            self.len += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn apply(&self, mut csum: u16) -> u16 {
        for &(o, n) in &self.pairs[..self.len] {
            csum = incremental_update(csum, o, n);
        }
        csum
    }
}

/// Checksum updates collected while fields change, for the IPv4 header
/// and for the L4 checksum.
#[derive(Default)]
struct Deltas {
    ip: Words,
    l4: Words,
}

/// Where a packet's IP addresses sit in the frame, and how long they are.
#[derive(Clone, Copy)]
struct AddrAt {
    src: usize,
    dst: usize,
    len: usize,
    v4: bool,
}

impl AddrAt {
    fn of(ip: Ip, l3: usize) -> AddrAt {
        match ip {
            Ip::V4 { .. } => AddrAt {
                src: l3 + 12,
                dst: l3 + 16,
                len: 4,
                v4: true,
            },
            Ip::V6 { .. } => AddrAt {
                src: l3 + 8,
                dst: l3 + 24,
                len: 16,
                v4: false,
            },
        }
    }

    /// (source, destination) as integers.
    fn read(self, frame: &[u8]) -> (u128, u128) {
        (
            to_int(&frame[self.src..self.src + self.len]),
            to_int(&frame[self.dst..self.dst + self.len]),
        )
    }
}

/// The group MAC of a multicast IP address (4 or 16 bytes): 01:00:5e
/// and the low 23 bits of an IPv4 group (RFC 1112), 33:33 and the low 32
/// bits of an IPv6 one (RFC 2464); None for any other address.
pub fn group_mac(a: &[u8]) -> Option<[u8; 6]> {
    match a.len() {
        4 if a[0] & 0xf0 == 0xe0 => Some([0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]]),
        16 if a[0] == 0xff => Some([0x33, 0x33, a[12], a[13], a[14], a[15]]),
        _ => None,
    }
}

/// Sets the destination MAC of a multicast destination address; true
/// when it did.
fn multicast_mac(frame: &mut [u8], at: AddrAt) -> bool {
    match group_mac(&frame[at.dst..at.dst + at.len]) {
        Some(m) => {
            frame[..6].copy_from_slice(&m);
            true
        }
        None => false,
    }
}

/// Updates the IPv4 header checksum and the L4 checksum by the words that
/// changed (RFC 1624). The L4 checksum is in this frame when its header
/// is (the first fragment's covers the datagram; the update is linear, so
/// right).
fn update_checksums(
    frame: &mut [u8],
    v4: bool,
    l3: usize,
    l4: Option<crate::layers::L4>,
    d: &Deltas,
) {
    if v4 && !d.ip.is_empty() {
        let c =
            d.ip.apply(u16::from_be_bytes([frame[l3 + 10], frame[l3 + 11]]));
        frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    }
    let Some(l4) = l4.filter(|_| !d.l4.is_empty()) else {
        return;
    };
    let proto = l4.proto;
    let at = match proto {
        PROTO_TCP => Some(l4.offset + 16),
        PROTO_UDP => Some(l4.offset + 6),
        // ICMPv6 covers the IPv6 pseudo header; ICMP has none.
        PROTO_ICMPV6 if !v4 => Some(l4.offset + 2),
        _ => None,
    };
    if let Some(at) = at.filter(|&a| a + 2 <= frame.len()) {
        let stored = u16::from_be_bytes([frame[at], frame[at + 1]]);
        let none = proto == PROTO_UDP && stored == 0 && v4;
        if !none {
            let mut c = d.l4.apply(stored);
            if proto == PROTO_UDP && c == 0 {
                c = 0xffff;
            }
            frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
        }
    }
}

/// Checksum word pairs of a changed address (`words` 16-bit words).
#[inline]
fn int_words(old: u128, new: u128, words: u32, out: &mut Words) {
    for i in (0..words).rev() {
        let (o, n) = ((old >> (16 * i)) as u16, (new >> (16 * i)) as u16);
        if o != n {
            out.push((o, n));
        }
    }
}

fn words(old: &[u8], new: &[u8], out: &mut Words) {
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        let w = |c: &[u8]| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
        if o != n {
            out.push((w(o), w(n)));
        }
    }
}

/// tcpreplay's `tcpr_random` (the C standard's rand_r, widened to 32 bits):
/// the next draw, `seed` moved on.
pub fn tcpr_random(seed: &mut u32) -> u32 {
    let mut next = *seed;
    let mut step = || {
        next = next.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        next / 65_536
    };
    let mut r = step() % 2048;
    r = (r << 10) ^ (step() % 1024);
    r = (r << 10) ^ (step() % 1024);
    *seed = next;
    r
}

/// tcprewrite mixes the user's seed with five draws before use.
fn mixed_seed(user: u32) -> u32 {
    let mut s = user;
    for _ in 0..5 {
        tcpr_random(&mut s);
    }
    s
}

/// tcprewrite's `--tcp-sequence` offset: the fifth draw from its seed.
pub fn tcp_sequence_offset(seed: u32) -> u32 {
    let mut s = seed;
    let mut r = 0;
    for _ in 0..5 {
        r = tcpr_random(&mut s);
    }
    r
}

/// Multicast (and, for IPv4, tcprewrite's "broadcast") addresses.
fn is_multicast(a: u128, v4: bool) -> bool {
    if v4 {
        a >> 28 == 0xe
    } else {
        a >> 120 == 0xff
    }
}

/// tcprewrite's `randomize_ipv4_addr`, computed as it is on a
/// little-endian host (its arithmetic runs on the address as loaded from
/// memory), so the addresses match its output there. Multicast stays
/// multicast, unicast stays unicast.
fn randomize_v4(b: &mut [u8], seed: u32) {
    let multicast = |x: &[u8; 4]| x[0] & 0xf0 == 0xe0;
    let orig: [u8; 4] = [b[0], b[1], b[2], b[3]];
    let ip = u32::from_le_bytes(orig);
    let s = u32::from_le_bytes(seed.to_be_bytes());
    let mut res = (ip ^ s).wrapping_sub(ip & s).to_le_bytes();
    if multicast(&orig) && !multicast(&res) {
        res[0] = (res[0] & 0x0f) | 0xe0;
    } else if !multicast(&orig) && multicast(&res) {
        res[0] &= 0x7f;
    }
    b[..4].copy_from_slice(&res);
}

fn randomize_v6(b: &mut [u8], seed: u32) {
    let was = b[0] == 0xff;
    let s = u32::from_le_bytes(seed.to_be_bytes());
    for w in b[..16].chunks_mut(4) {
        let ip = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        w.copy_from_slice(&(ip ^ s).wrapping_sub(ip & s).to_le_bytes());
    }
    if was && b[0] != 0xff {
        b[0] = 0xff;
    } else if !was && b[0] == 0xff {
        b[0] = 0xaa;
    }
}

const ETHERTYPE_ARP: u16 = 0x0806;

/// `--fixlen pad` pads to at most this (libpcap's largest snap length).
pub const MAX_PADDED: usize = 262_144;

impl HeaderRewrite {
    pub fn is_empty(&self) -> bool {
        *self == HeaderRewrite::default()
    }

    /// Whether pass `k` is rewritten differently from pass 0 (a preloaded
    /// first pass cannot simply be repeated).
    pub fn varies_by_pass(&self) -> bool {
        self.unique_ip
    }

    /// Rewrites an Ethernet frame of pass `pass` (0-based) whose original
    /// length was `orig_len` (more than `frame.len()` when the capture cut
    /// it).
    /// `side` is the packet's side of a split (0 without one).
    pub fn apply_frame(
        &self,
        frame: &mut Vec<u8>,
        orig_len: usize,
        pass: u64,
        side: u8,
    ) -> Rewritten {
        let cut = orig_len > frame.len();
        if cut && self.fixlen == Some(FixLen::Del) {
            return Rewritten::Dropped;
        }
        let mut changed = self.vlan.is_some_and(|op| edit_vlan(frame, op));
        // Length changes make the old checksums meaningless: those frames
        // get theirs computed (as tcprewrite does).
        let mut recompute = false;
        if cut {
            match self.fixlen {
                Some(FixLen::Pad) => {
                    // A corrupt original length must not become an
                    // allocation: no frame is longer than the largest
                    // snap length.
                    frame.resize(orig_len.min(MAX_PADDED), 0);
                    recompute = true;
                }
                Some(FixLen::Trunc) => recompute = set_ip_len(frame, None),
                _ => {}
            }
        }
        if let Some(mtu) = self.mtu_trunc {
            recompute |= set_ip_len(frame, Some(usize::from(mtu)));
        }
        changed |= recompute;
        changed |= self.edit(frame, pass, recompute, side);
        if changed {
            Rewritten::Changed
        } else {
            Rewritten::Unchanged
        }
    }

    /// Rewrites the fields of `frame` (Ethernet) in place, lengths kept;
    /// true when a byte changed. Checksums are updated incrementally, or
    /// computed when `fixcsum` or `recompute`.
    pub fn apply(&self, frame: &mut [u8]) -> bool {
        self.edit(frame, 0, false, 0)
    }

    fn edit(&self, frame: &mut [u8], pass: u64, recompute: bool, side: u8) -> bool {
        let (dmac, smac) = self.macs(side);
        let mut changed = false;
        if frame.len() >= 12 {
            for (mac, at) in [(dmac, 0), (smac, 6)] {
                if let Some(m) = mac {
                    if frame[at..at + 6] != m.0 {
                        frame[at..at + 6].copy_from_slice(&m.0);
                        changed = true;
                    }
                }
            }
        }
        let level = Level {
            pass,
            recompute: recompute || self.fixcsum,
            side,
            mac_set: dmac.is_some(),
            depth: 0,
        };
        changed | self.edit_level(frame, level)
    }

    /// One layer of a frame (the outermost, or a tunnelled packet behind
    /// an Ethernet header): its tunnel's inside first, then its own
    /// headers when the mode reaches them.
    fn edit_level(&self, frame: &mut [u8], level: Level) -> bool {
        let tunnel = match self.tunnel {
            TunnelMode::Outer => None,
            _ if level.depth >= MAX_TUNNEL_DEPTH => None,
            _ => tunnel::find(frame),
        };
        let Some(t) = tunnel else {
            return self.edit_headers(frame, level);
        };
        let mut changed = self.edit_inside(frame, &t, level);
        if self.tunnel == TunnelMode::Both {
            changed |= self.edit_headers(frame, level);
        } else if level.recompute {
            // The outer headers are not rewritten, but their checksums
            // are computed as --fixcsum (or a length change) asks.
            recompute_checksums(frame, self.by_device(level));
            changed = true;
        }
        if level.recompute {
            if let Some(c) = t.cover {
                c.recompute_gre(frame, t.end);
            }
        }
        changed
    }

    /// Rewrites the packet a tunnel carries, and the outer checksum that
    /// covers it; true when a byte changed.
    fn edit_inside(&self, frame: &mut [u8], t: &tunnel::Tunnel, level: Level) -> bool {
        let old = &frame[t.offset..t.end];
        // An inner IP packet gets a stand-in Ethernet header, so one
        // parser and one rewrite serve every layer.
        let ethertype = match t.inner {
            tunnel::InnerStart::Ethernet => None,
            tunnel::InnerStart::Ipv4 => Some(crate::layers::ETHERTYPE_IPV4),
            tunnel::InnerStart::Ipv6 => Some(crate::layers::ETHERTYPE_IPV6),
        };
        let mut inner = Vec::with_capacity(old.len() + 14);
        if let Some(e) = ethertype {
            inner.extend_from_slice(&[0; 12]);
            inner.extend_from_slice(&e.to_be_bytes());
        }
        let head = inner.len();
        inner.extend_from_slice(old);
        let inner_level = Level {
            mac_set: false,
            depth: level.depth + 1,
            ..level
        };
        self.edit_level(&mut inner, inner_level);
        if inner[head..] == *old {
            return false;
        }
        let old = old.to_vec();
        frame[t.offset..t.end].copy_from_slice(&inner[head..]);
        if let Some(c) = t.cover {
            c.update(frame, t.offset, &old);
        }
        true
    }

    /// The IP (or ARP) headers of one layer.
    /// Whether the device computes this level's L4 checksum: only the
    /// outermost one's (a tunnelled packet's is part of the outer payload).
    fn by_device(&self, level: Level) -> bool {
        self.l4_csum_by_device && level.depth == 0
    }

    fn edit_headers(&self, frame: &mut [u8], level: Level) -> bool {
        let Level {
            pass,
            recompute,
            side,
            mac_set,
            ..
        } = level;
        let mut changed = false;
        let (layers, extra) = parse_full(frame);
        let Some(ip) = layers.ip else {
            if layers.ethertype == ETHERTYPE_ARP {
                changed |= self.edit_arp(frame, layers.l3_offset);
            }
            return changed;
        };
        let l3 = layers.l3_offset;
        let at = AddrAt::of(ip, l3);
        // A routing header's final hop, not the IPv6 destination field, is
        // in the pseudo header: leave that part of the L4 checksum alone.
        let dst_in_pseudo = match (ip, extra.final_dst) {
            (Ip::V6 { .. }, Some(crate::layers::FinalDst::V6(f))) => {
                to_int(&f) == to_int(&frame[at.dst..at.dst + 16])
            }
            (Ip::V4 { .. }, Some(crate::layers::FinalDst::V4(f))) => {
                to_int(&f) == to_int(&frame[at.dst..at.dst + 4])
            }
            _ => false,
        };
        let old = at.read(frame);
        self.edit_addresses(frame, at, side, pass);
        let new = at.read(frame);
        // A multicast destination gets its multicast MAC (tcprewrite does
        // so since its issue 563), unless the user set the MAC.
        if old.1 != new.1 && !mac_set && !extra.mpls {
            changed |= multicast_mac(frame, at);
        }
        let mut d = Deltas::default();
        let n_words = if at.v4 { 2 } else { 8 };
        for (old, new, in_pseudo) in [(old.0, new.0, true), (old.1, new.1, dst_in_pseudo)] {
            if old != new {
                if at.v4 {
                    int_words(old, new, n_words, &mut d.ip);
                }
                if in_pseudo {
                    int_words(old, new, n_words, &mut d.l4);
                }
            }
        }
        changed |= self.edit_ttl_tos(frame, ip, l3, &mut d);
        let l4 = layers.l4.or_else(|| l4_header(frame, ip, l3, true));
        self.edit_ports(frame, l4, &mut d);
        let seq_at = layers.l4.or_else(|| l4_header(frame, ip, l3, false));
        changed |= self.edit_tcp_sequence(frame, seq_at);
        changed |= !d.ip.is_empty() || !d.l4.is_empty();
        if recompute {
            recompute_checksums(frame, self.by_device(level));
            return true;
        }
        update_checksums(frame, at.v4, l3, l4, &d);
        changed
    }

    /// The MACs a packet of `side` (0: the client's, 1: the server's)
    /// gets, if any.
    fn macs(&self, side: u8) -> (Option<MacAddr>, Option<MacAddr>) {
        if side == 0 {
            (self.enet_dmac, self.enet_smac)
        } else {
            (
                self.enet_dmac_2.or(self.enet_dmac),
                self.enet_smac_2.or(self.enet_smac),
            )
        }
    }

    /// The address maps, `--endpoints`, `--seed` and `--unique-ip`, in
    /// that order (tcprewrite's).
    fn edit_addresses(&self, frame: &mut [u8], at: AddrAt, side: u8, pass: u64) {
        let (old_src, old_dst) = at.read(frame);
        for (maps, pos, old) in [
            (&self.srcipmap, at.src, old_src),
            (&self.dstipmap, at.dst, old_dst),
        ] {
            if self.skip_multicast && is_multicast(old, at.v4) {
                continue;
            }
            if let Some(n) = maps.iter().find_map(|m| m.map(old, at.v4)) {
                write_int(&mut frame[pos..pos + at.len], n);
            }
        }
        if let Some((one, two)) = self.endpoints {
            let (s, d) = if side == 0 { (one, two) } else { (two, one) };
            for (a, pos) in [(s, at.src), (d, at.dst)] {
                match a {
                    IpAddr::V4(a) if at.v4 => frame[pos..pos + 4].copy_from_slice(&a.octets()),
                    IpAddr::V6(a) if !at.v4 => frame[pos..pos + 16].copy_from_slice(&a.octets()),
                    _ => {}
                }
            }
        }
        if let Some(user) = self.seed {
            let s = mixed_seed(user);
            for pos in [at.dst, at.src] {
                let a = to_int(&frame[pos..pos + at.len]);
                if self.skip_multicast && is_multicast(a, at.v4) {
                    continue;
                }
                if at.v4 {
                    randomize_v4(&mut frame[pos..pos + 4], s);
                } else {
                    randomize_v6(&mut frame[pos..pos + 16], s);
                }
            }
        }
        if self.unique_ip && pass > 0 {
            unique(frame, at.src + at.len - 4, at.dst + at.len - 4, pass);
        }
    }

    /// `--tos` and `--ttl`; the IPv4 header checksum's words into `d`.
    /// True when an IPv6 hop limit changed (IPv4 changes show in `d`).
    fn edit_ttl_tos(&self, frame: &mut [u8], ip: Ip, l3: usize, d: &mut Deltas) -> bool {
        match ip {
            Ip::V4 { .. } => {
                let old = [frame[l3], frame[l3 + 1], frame[l3 + 8], frame[l3 + 9]];
                if let Some(t) = self.tos {
                    frame[l3 + 1] = t;
                }
                if let Some(op) = self.ttl {
                    frame[l3 + 8] = op.apply(frame[l3 + 8]);
                }
                let new = [frame[l3], frame[l3 + 1], frame[l3 + 8], frame[l3 + 9]];
                words(&old, &new, &mut d.ip);
                false
            }
            Ip::V6 { .. } => {
                let first =
                    u32::from_be_bytes([frame[l3], frame[l3 + 1], frame[l3 + 2], frame[l3 + 3]]);
                let mut word = first;
                if let Some(tc) = self.tclass {
                    word = (word & 0xf00f_ffff).wrapping_add(u32::from(tc) << 20);
                }
                if let Some(fl) = self.flowlabel {
                    word = (word & 0xfff0_0000).wrapping_add(fl);
                }
                frame[l3..l3 + 4].copy_from_slice(&word.to_be_bytes());
                let old = frame[l3 + 7];
                if let Some(op) = self.ttl {
                    frame[l3 + 7] = op.apply(old);
                }
                frame[l3 + 7] != old || word != first
            }
        }
    }

    /// `--portmap` on TCP and UDP ports; the checksum's words into `d`.
    fn edit_ports(&self, frame: &mut [u8], l4: Option<crate::layers::L4>, d: &mut Deltas) {
        let ports = l4.filter(|l4| {
            matches!(l4.proto, PROTO_TCP | PROTO_UDP)
                && !self.portmap.is_empty()
                && l4.offset + 4 <= frame.len()
        });
        let Some(l4) = ports else {
            return;
        };
        for at in [l4.offset, l4.offset + 2] {
            let p = u16::from_be_bytes([frame[at], frame[at + 1]]);
            if let Some(m) = self.portmap.iter().find(|m| (m.lo..=m.hi).contains(&p)) {
                if m.to != p {
                    frame[at..at + 2].copy_from_slice(&m.to.to_be_bytes());
                    d.l4.push((p, m.to));
                }
            }
        }
    }

    /// `--tcp-sequence`: the sequence and acknowledgment numbers moved by
    /// the offset, the TCP checksum updated for them in place; true when
    /// they changed.
    fn edit_tcp_sequence(&self, frame: &mut [u8], l4: Option<crate::layers::L4>) -> bool {
        let Some(delta) = self.tcp_seq else {
            return false;
        };
        let at = l4.filter(|l4| l4.proto == PROTO_TCP).map(|l4| l4.offset);
        let Some(o) = at.filter(|o| o + 14 <= frame.len()) else {
            return false;
        };
        let syn_only = frame[o + 13] & 0x02 != 0 && frame[o + 13] & 0x10 == 0;
        let mut w = Words::default();
        for at in [o + 4, o + 8] {
            if at == o + 8 && syn_only {
                continue;
            }
            let old = u32::from_be_bytes([frame[at], frame[at + 1], frame[at + 2], frame[at + 3]]);
            let new = old.wrapping_add(delta);
            frame[at..at + 4].copy_from_slice(&new.to_be_bytes());
            int_words(u128::from(old), u128::from(new), 2, &mut w);
        }
        // The checksum, where it was captured.
        if o + 18 <= frame.len() {
            let c = w.apply(u16::from_be_bytes([frame[o + 16], frame[o + 17]]));
            frame[o + 16..o + 18].copy_from_slice(&c.to_be_bytes());
        }
        !w.is_empty()
    }

    /// ARP requests and replies for IPv4 carry addresses too: the maps and
    /// `--seed` rewrite them (tcprewrite does; ARP has no checksum).
    fn edit_arp(&self, frame: &mut [u8], l3: usize) -> bool {
        let Some(h) = frame.get(l3..l3 + 8) else {
            return false;
        };
        let (pro, hln, pln, op) = (
            u16::from_be_bytes([h[2], h[3]]),
            usize::from(h[4]),
            usize::from(h[5]),
            u16::from_be_bytes([h[6], h[7]]),
        );
        if pro != 0x0800 || pln != 4 || !matches!(op, 1 | 2) {
            return false;
        }
        let spa = l3 + 8 + hln;
        let tpa = spa + 4 + hln;
        if tpa + 4 > frame.len() {
            return false;
        }
        let before = frame.to_vec();
        let skip =
            |f: &[u8], at: usize| self.skip_multicast && is_multicast(to_int(&f[at..at + 4]), true);
        for (maps, at) in [(&self.srcipmap, spa), (&self.dstipmap, tpa)] {
            let old = to_int(&frame[at..at + 4]);
            if self.skip_multicast && is_multicast(old, true) {
                continue;
            }
            if let Some(n) = maps.iter().find_map(|m| m.map(old, true)) {
                write_int(&mut frame[at..at + 4], n);
            }
        }
        if let Some(user) = self.seed {
            let s = mixed_seed(user);
            for at in [spa, tpa] {
                if !skip(frame, at) {
                    randomize_v4(&mut frame[at..at + 4], s);
                }
            }
        }
        before[..] != frame[..]
    }
}

/// Where the TCP or UDP header of a packet starts when the walk of the
/// layers found none that fits its IP length (a header cut by the IP
/// length, a first fragment too short for it): right after the IPv4
/// header of any packet but a later fragment, as tcprewrite finds it, when
/// its fixed part (TCP 20 bytes, UDP 8) was captured, or (`fixed_part`
/// false) a TCP header's first 14 bytes.
fn l4_header(frame: &[u8], ip: Ip, l3: usize, fixed_part: bool) -> Option<crate::layers::L4> {
    let Ip::V4 {
        header_len,
        fragment,
        first_fragment,
        ..
    } = ip
    else {
        return None;
    };
    let proto = *frame.get(l3 + 9)?;
    let offset = l3 + header_len;
    let later = fragment && !first_fragment;
    // The ports need the fixed part; `--tcp-sequence` its first 14 bytes
    // (numbers and flags).
    let fixed = match (proto, fixed_part) {
        (PROTO_TCP, true) => 20,
        (PROTO_TCP, false) => 14,
        _ => 8,
    };
    (matches!(proto, PROTO_TCP | PROTO_UDP) && !later && offset + fixed <= frame.len()).then_some(
        crate::layers::L4 {
            proto,
            offset,
            header_len: 0,
            payload_offset: offset,
            payload_len: 0,
        },
    )
}

/// How deep tunnels are followed (a tunnel in a tunnel in a tunnel...).
const MAX_TUNNEL_DEPTH: u8 = 4;

/// What every layer of one frame's rewrite shares.
#[derive(Clone, Copy)]
struct Level {
    pass: u64,
    /// Compute checksums instead of updating them (`--fixcsum`, or a
    /// length that changed).
    recompute: bool,
    side: u8,
    /// The user set this layer's destination MAC: a new multicast
    /// destination does not choose it.
    mac_set: bool,
    depth: u8,
}

/// `--unique-ip` for pass `k`: the lower of the two 32-bit address tails
/// moves down by k and the higher up by k (tcpreplay's rule), so both
/// directions of a flow map onto the same new pair.
fn unique(frame: &mut [u8], src: usize, dst: usize, k: u64) {
    let get = |f: &[u8], at: usize| u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
    let (s, d) = (get(frame, src), get(frame, dst));
    let k = k as u32;
    let (s, d) = if d > s {
        (s.wrapping_sub(k), d.wrapping_add(k))
    } else {
        (s.wrapping_add(k), d.wrapping_sub(k))
    };
    frame[src..src + 4].copy_from_slice(&s.to_be_bytes());
    frame[dst..dst + 4].copy_from_slice(&d.to_be_bytes());
}

/// Adds, removes or edits the outermost VLAN tag; true when changed.
fn edit_vlan(frame: &mut Vec<u8>, op: VlanOp) -> bool {
    if frame.len() < 14 {
        return false;
    }
    let outer = u16::from_be_bytes([frame[12], frame[13]]);
    if outer < 0x0600 {
        // 802.3 length field: no Ethernet II type to tag in front of.
        return false;
    }
    let tagged = VLAN_TPIDS.contains(&outer) && frame.len() >= 18;
    let tci = if tagged {
        u16::from_be_bytes([frame[14], frame[15]])
    } else {
        0
    };
    let make = |tag: u16, pri: u8, cfi: bool| {
        (u16::from(pri & 7) << 13) | (u16::from(cfi) << 12) | (tag & 0x0fff)
    };
    let old_pri = (tci >> 13) as u8;
    let old_cfi = tci & 0x1000 != 0;
    match op {
        VlanOp::Add {
            tag,
            pri,
            cfi,
            proto,
        } => {
            let t = make(tag, pri.unwrap_or(old_pri), cfi.unwrap_or(old_cfi));
            let mut hdr = [0u8; 4];
            hdr[..2].copy_from_slice(&proto.to_be_bytes());
            hdr[2..].copy_from_slice(&t.to_be_bytes());
            frame.splice(12..12, hdr);
            true
        }
        VlanOp::Del if tagged => {
            frame.drain(12..16);
            true
        }
        VlanOp::Edit { tag, pri, cfi } if tagged => {
            let t = make(
                tag.unwrap_or(tci & 0x0fff),
                pri.unwrap_or(old_pri),
                cfi.unwrap_or(old_cfi),
            );
            frame[14..16].copy_from_slice(&t.to_be_bytes());
            t != tci
        }
        _ => false,
    }
}

/// Sets the IP length field to what the frame holds (`mtu` None) or cuts
/// an IP packet longer than `mtu` to it; true when the frame changed.
/// Later fragments and non-IP frames are left alone.
fn set_ip_len(frame: &mut Vec<u8>, mtu: Option<usize>) -> bool {
    let layers = crate::layers::parse_layers(frame);
    let l3 = layers.l3_offset;
    let Some(ip) = layers.ip else {
        return false;
    };
    let want = match mtu {
        Some(m) if frame.len() > l3 + m => m,
        Some(_) => return false,
        None => frame.len() - l3,
    };
    frame.truncate(l3 + want);
    match ip {
        Ip::V4 { total_len, .. } if total_len != want => {
            frame[l3 + 2..l3 + 4].copy_from_slice(&(want as u16).to_be_bytes());
        }
        Ip::V6 { payload_len, .. } if payload_len + 40 != want && want >= 40 => {
            frame[l3 + 4..l3 + 6].copy_from_slice(&((want - 40) as u16).to_be_bytes());
        }
        _ => {}
    }
    true
}

#[cfg(test)]
mod tests;
