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

use crate::checksum::{incremental_update, ipv4_header_checksum};
use crate::ethernet::MacAddr;
use crate::layers::{parse_full, Ip, PROTO_TCP, PROTO_UDP};
use crate::payload::complete_checksum;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// `A/n:B/m`: addresses in A become B's network with their own host bits
/// below B's prefix (a /32 or /128 B maps all of A onto B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CidrMap {
    pub from: (IpAddr, u8),
    pub to: (IpAddr, u8),
}

fn parse_cidr(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, n) = s.split_once('/').unwrap_or((s, ""));
    let addr: IpAddr = a
        .parse()
        .map_err(|_| format!("'{a}' is not an IP address"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let n = if n.is_empty() {
        max
    } else {
        n.parse::<u8>()
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| format!("'/{n}' is not a prefix length of {a} (0..={max})"))?
    };
    Ok((addr, n))
}

impl FromStr for CidrMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // IPv6 addresses hold colons: the separator is the colon after the
        // first prefix length ("/n:").
        let split = s
            .find('/')
            .and_then(|i| s[i..].find(':').map(|j| i + j))
            .or_else(|| s.find(':').filter(|_| !s.contains("::")));
        let Some(at) = split else {
            return Err(format!("'{s}': expected FROM/n:TO/m"));
        };
        let from = parse_cidr(&s[..at])?;
        let to = parse_cidr(&s[at + 1..])?;
        if from.0.is_ipv4() != to.0.is_ipv4() {
            return Err(format!("'{s}': both sides must be IPv4 or both IPv6"));
        }
        Ok(CidrMap { from, to })
    }
}

fn mask(bits: u8, width: u32) -> u128 {
    if bits == 0 {
        0
    } else {
        (!0u128 << (width - u32::from(bits))) & (!0u128 >> (128 - width))
    }
}

impl CidrMap {
    fn apply_bytes(&self, addr: &mut [u8]) -> bool {
        let width = (addr.len() * 8) as u32;
        let v = addr.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b));
        let (from, to) = (ip_bits(self.from.0), ip_bits(self.to.0));
        if (self.from.0.is_ipv4() && addr.len() != 4) || (self.from.0.is_ipv6() && addr.len() != 16)
        {
            return false;
        }
        let fm = mask(self.from.1, width);
        if v & fm != from & fm {
            return false;
        }
        let tm = mask(self.to.1, width);
        let new = (to & tm) | (v & !tm & (!0u128 >> (128 - width)));
        for (i, b) in addr.iter_mut().enumerate() {
            *b = (new >> (8 * (addr_len(width) - 1 - i))) as u8;
        }
        true
    }
}

fn addr_len(width: u32) -> usize {
    (width / 8) as usize
}

fn ip_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

/// `--ttl`: set, or move up or down (saturating at 1 and 255).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlOp {
    Set(u8),
    Add(u8),
    Sub(u8),
}

impl FromStr for TtlOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}': expected N, +N or -N (0..=255)");
        let (op, n): (fn(u8) -> TtlOp, &str) = match s.as_bytes().first() {
            Some(b'+') => (TtlOp::Add, &s[1..]),
            Some(b'-') => (TtlOp::Sub, &s[1..]),
            _ => (TtlOp::Set, s),
        };
        Ok(op(n.parse().map_err(|_| bad())?))
    }
}

impl TtlOp {
    fn apply(self, ttl: u8) -> u8 {
        match self {
            TtlOp::Set(n) => n,
            TtlOp::Add(n) => ttl.saturating_add(n),
            TtlOp::Sub(n) => ttl.saturating_sub(n).max(1),
        }
    }
}

/// `--portmap`: `FROM:TO`, or `LO-HI:TO` (a range onto one port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortMap {
    pub lo: u16,
    pub hi: u16,
    pub to: u16,
}

impl FromStr for PortMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}': expected FROM:TO or LO-HI:TO (ports 0..=65535)");
        let (from, to) = s.split_once(':').ok_or_else(bad)?;
        let (lo, hi) = from.split_once('-').unwrap_or((from, from));
        let p = |x: &str| x.trim().parse::<u16>().map_err(|_| bad());
        let (lo, hi, to) = (p(lo)?, p(hi)?, p(to)?);
        if lo > hi {
            return Err(bad());
        }
        Ok(PortMap { lo, hi, to })
    }
}

impl fmt::Display for PortMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}:{}", self.lo, self.to)
        } else {
            write!(f, "{}-{}:{}", self.lo, self.hi, self.to)
        }
    }
}

/// What to rewrite in every frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeaderRewrite {
    pub enet_dmac: Option<MacAddr>,
    pub enet_smac: Option<MacAddr>,
    pub srcipmap: Vec<CidrMap>,
    pub dstipmap: Vec<CidrMap>,
    pub portmap: Vec<PortMap>,
    pub ttl: Option<TtlOp>,
    pub tos: Option<u8>,
    pub fixcsum: bool,
}

/// Checksum updates collected while fields change: (old word, new word)
/// pairs for the IPv4 header and for the L4 checksum.
#[derive(Default)]
struct Deltas {
    ip: Vec<(u16, u16)>,
    l4: Vec<(u16, u16)>,
}

fn words(old: &[u8], new: &[u8], out: &mut Vec<(u16, u16)>) {
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        let w = |c: &[u8]| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
        if o != n {
            out.push((w(o), w(n)));
        }
    }
}

impl HeaderRewrite {
    pub fn is_empty(&self) -> bool {
        *self == HeaderRewrite::default()
    }

    /// Rewrites `frame` (Ethernet) in place; true when a byte changed.
    pub fn apply(&self, frame: &mut [u8]) -> bool {
        let mut changed = false;
        if frame.len() >= 12 {
            for (mac, at) in [(self.enet_dmac, 0), (self.enet_smac, 6)] {
                if let Some(m) = mac {
                    if frame[at..at + 6] != m.0 {
                        frame[at..at + 6].copy_from_slice(&m.0);
                        changed = true;
                    }
                }
            }
        }
        let (layers, extra) = parse_full(frame);
        let Some(ip) = layers.ip else {
            return changed;
        };
        let l3 = layers.l3_offset;
        let mut d = Deltas::default();
        let (src_at, dst_at, alen) = match ip {
            Ip::V4 { .. } => (l3 + 12, l3 + 16, 4),
            Ip::V6 { .. } => (l3 + 8, l3 + 24, 16),
        };
        // A routing header's final hop, not the IPv6 destination field, is
        // in the pseudo header: leave that part of the L4 checksum alone.
        let dst_in_pseudo = match (ip, extra.final_dst) {
            (Ip::V6 { .. }, Some(crate::layers::FinalDst::V6(f))) => {
                f[..] == frame[dst_at..dst_at + 16]
            }
            (Ip::V4 { .. }, Some(crate::layers::FinalDst::V4(f))) => {
                f[..] == frame[dst_at..dst_at + 4]
            }
            _ => false,
        };
        for (maps, at, in_pseudo) in [
            (&self.srcipmap, src_at, true),
            (&self.dstipmap, dst_at, dst_in_pseudo),
        ] {
            if let Some(m) = maps.iter().find(|m| {
                let mut probe = frame[at..at + alen].to_vec();
                m.apply_bytes(&mut probe)
            }) {
                let old = frame[at..at + alen].to_vec();
                m.apply_bytes(&mut frame[at..at + alen]);
                if old[..] != frame[at..at + alen] {
                    if matches!(ip, Ip::V4 { .. }) {
                        words(&old, &frame[at..at + alen], &mut d.ip);
                    }
                    if in_pseudo {
                        words(&old, &frame[at..at + alen], &mut d.l4);
                    }
                }
            }
        }
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
            }
            Ip::V6 { .. } => {
                if let Some(op) = self.ttl {
                    frame[l3 + 7] = op.apply(frame[l3 + 7]);
                }
            }
        }
        let ports = layers
            .l4
            .filter(|l4| matches!(l4.proto, PROTO_TCP | PROTO_UDP) && !self.portmap.is_empty());
        if let Some(l4) = ports {
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
        let touched = !d.ip.is_empty()
            || !d.l4.is_empty()
            || self.ttl.is_some() && matches!(ip, Ip::V6 { .. });
        if self.fixcsum {
            if let Ip::V4 { header_len, .. } = ip {
                if frame.len() >= l3 + header_len {
                    let c = ipv4_header_checksum(&frame[l3..l3 + header_len]);
                    frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
                }
            }
            complete_checksum(frame);
            return true;
        }
        if let Ip::V4 { .. } = ip {
            let mut c = u16::from_be_bytes([frame[l3 + 10], frame[l3 + 11]]);
            for &(o, n) in &d.ip {
                c = incremental_update(c, o, n);
            }
            frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        }
        // The L4 checksum: in this frame when its header is (the first
        // fragment's covers the datagram; the update is linear, so right).
        if let Some(l4) = layers.l4 {
            let proto = l4.proto;
            let at = match proto {
                PROTO_TCP => Some(l4.offset + 16),
                PROTO_UDP => Some(l4.offset + 6),
                _ => None,
            };
            if let Some(at) = at.filter(|&a| a + 2 <= frame.len()) {
                let stored = u16::from_be_bytes([frame[at], frame[at + 1]]);
                let none = proto == PROTO_UDP && stored == 0 && matches!(ip, Ip::V4 { .. });
                if !none && !d.l4.is_empty() {
                    let mut c = stored;
                    for &(o, n) in &d.l4 {
                        c = incremental_update(c, o, n);
                    }
                    if proto == PROTO_UDP && c == 0 {
                        c = 0xffff;
                    }
                    frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
                }
            }
        }
        changed || touched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::verify_checksums;

    /// Ethernet + IPv4 + TCP or UDP with 6 payload bytes, checksums right.
    fn frame(proto: u8) -> Vec<u8> {
        let l4_len = if proto == PROTO_TCP { 20 } else { 8 } + 6;
        let mut f = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0x10]);
        f.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
        f.extend_from_slice(&[
            0x12, 0x34, 0x40, 0, 64, proto, 0, 0, 10, 1, 2, 3, 192, 168, 7, 9,
        ]);
        f.extend_from_slice(&1234u16.to_be_bytes());
        f.extend_from_slice(&80u16.to_be_bytes());
        if proto == PROTO_TCP {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&(l4_len as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        f.extend_from_slice(b"sluice");
        let c = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert!(complete_checksum(&mut f));
        verify_checksums(&f).unwrap();
        f
    }

    fn all() -> HeaderRewrite {
        HeaderRewrite {
            enet_dmac: Some(MacAddr([0x02, 0, 0, 0, 0, 0x42])),
            enet_smac: Some(MacAddr([0x02, 0, 0, 0, 0, 0x43])),
            srcipmap: vec!["10.0.0.0/8:172.16.0.0/12".parse().unwrap()],
            dstipmap: vec!["192.168.7.9/32:10.77.0.2/32".parse().unwrap()],
            portmap: vec![
                "80:8080".parse().unwrap(),
                "1000-2000:3000".parse().unwrap(),
            ],
            ttl: Some("-10".parse().unwrap()),
            tos: Some(0xb8),
            fixcsum: false,
        }
    }

    #[test]
    fn every_field_changes_and_incremental_checksums_match_a_recompute() {
        for proto in [PROTO_TCP, PROTO_UDP] {
            let mut f = frame(proto);
            assert!(all().apply(&mut f));
            assert_eq!(f[..6], [0x02, 0, 0, 0, 0, 0x42]);
            assert_eq!(f[6..12], [0x02, 0, 0, 0, 0, 0x43]);
            assert_eq!(f[15], 0xb8);
            assert_eq!(f[22], 54);
            // 10.1.2.3 in 10/8 onto 172.16/12: host bits below /12 kept.
            assert_eq!(f[26..30], [172, 17, 2, 3]);
            assert_eq!(f[30..34], [10, 77, 0, 2]);
            assert_eq!(u16::from_be_bytes([f[34], f[35]]), 3000);
            assert_eq!(u16::from_be_bytes([f[36], f[37]]), 8080);
            verify_checksums(&f).unwrap();
            let mut g = f.clone();
            HeaderRewrite {
                fixcsum: true,
                ..Default::default()
            }
            .apply(&mut g);
            assert_eq!(f, g, "incremental and full checksums differ");
        }
    }

    #[test]
    fn a_wrong_checksum_stays_exactly_as_wrong_unless_fixcsum() {
        // The error, in one's complement arithmetic: wrong − right.
        let err = |wrong: &[u8], right: &[u8], at: usize| {
            let w = |f: &[u8]| u16::from_be_bytes([f[at], f[at + 1]]);
            crate::checksum::fold(u32::from(w(wrong)) + u32::from(!w(right)))
        };
        let mut f = frame(PROTO_TCP);
        let mut right = f.clone();
        f[50] ^= 0x5a; // the TCP checksum
        f[24] ^= 0x0f; // the IPv4 header checksum
        let before = (err(&f, &right, 50), err(&f, &right, 24));
        all().apply(&mut f);
        all().apply(&mut right);
        assert!(verify_checksums(&f).is_err());
        assert_eq!((err(&f, &right, 50), err(&f, &right, 24)), before);
        let fix = HeaderRewrite {
            fixcsum: true,
            ..all()
        };
        fix.apply(&mut f);
        verify_checksums(&f).unwrap();
    }

    #[test]
    fn udp_without_checksum_keeps_none_and_unmatched_frames_stay() {
        let mut f = frame(PROTO_UDP);
        f[40..42].copy_from_slice(&[0, 0]);
        all().apply(&mut f);
        assert_eq!(f[40..42], [0, 0]);
        let mut g = frame(PROTO_TCP);
        let before = g.clone();
        let other = HeaderRewrite {
            srcipmap: vec!["11.0.0.0/8:1.2.3.4/32".parse().unwrap()],
            portmap: vec!["443:8443".parse().unwrap()],
            ..Default::default()
        };
        assert!(!other.apply(&mut g));
        assert_eq!(g, before);
    }

    #[test]
    fn options_parse_and_refuse_nonsense() {
        let m: CidrMap = "2001:db8::/32:fd00::/8".parse().unwrap();
        assert_eq!(m.from.1, 32);
        assert_eq!(m.to.1, 8);
        assert!("10.0.0.0/8:2001:db8::/32".parse::<CidrMap>().is_err());
        assert!("10.0.0.0/33:1.1.1.1".parse::<CidrMap>().is_err());
        assert!("bogus".parse::<CidrMap>().is_err());
        assert_eq!("+3".parse::<TtlOp>().unwrap(), TtlOp::Add(3));
        assert_eq!("7".parse::<TtlOp>().unwrap(), TtlOp::Set(7));
        assert!("300".parse::<TtlOp>().is_err());
        assert!("2000-1000:5".parse::<PortMap>().is_err());
        assert!("80".parse::<PortMap>().is_err());
        assert_eq!(TtlOp::Sub(100).apply(64), 1);
        let mut a = [10u8, 9, 8, 7];
        let one: CidrMap = "10.0.0.0/8:1.2.3.4".parse().unwrap();
        assert!(one.apply_bytes(&mut a));
        assert_eq!(a, [1, 2, 3, 4]);
    }

    /// Frames from traces sluice did not write: mutated and truncated
    /// headers must never panic, and a frame keeps its length.
    #[test]
    fn mutated_frames_never_panic_and_keep_their_length() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let seeds = [frame(PROTO_TCP), frame(PROTO_UDP)];
        let mut changed = 0;
        for i in 0..20_000 {
            let mut f = seeds[i % 2].clone();
            for _ in 0..1 + next() % 4 {
                let at = next() as usize % f.len();
                f[at] = next() as u8;
            }
            f.truncate(1 + next() as usize % f.len());
            let len = f.len();
            for fixcsum in [false, true] {
                let rw = HeaderRewrite { fixcsum, ..all() };
                changed += usize::from(rw.apply(&mut f));
                assert_eq!(f.len(), len);
            }
        }
        // Most mutants still parse far enough to be rewritten.
        assert!(changed > 10_000, "{changed}");
    }
}
