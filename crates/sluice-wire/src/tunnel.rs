//! Tunnels the header rewrite can reach into: VXLAN, GRE, GTP-U and
//! IP-in-IP.
//!
//! [`find`] looks at one frame (or an inner packet, given an Ethernet
//! header) and says where the tunnelled packet sits, what it starts with
//! (an Ethernet frame or an IP packet) and which outer checksum covers its
//! bytes, so a rewrite of the inner headers can keep that checksum right:
//! the outer UDP checksum of VXLAN and GTP-U, GRE's own optional checksum.
//! IP-in-IP has none (the outer IPv4 header checksum covers the header
//! only).
//!
//! Recognised, as Wireshark does by default: VXLAN on UDP destination port
//! 4789 with its I flag set (RFC 7348); GTP-U version 1 G-PDUs on UDP port
//! 2152, optional fields and extension headers walked (3GPP TS 29.281);
//! GRE version 0 without the RFC 1701 routing field, carrying IPv4, IPv6
//! or transparent Ethernet bridging (RFC 2784, RFC 2890 key and sequence
//! number); IPv4 or IPv6 carried directly in IPv4 or IPv6 (protocols 4 and
//! 41). Fragments are not looked into: their inner headers are cut.

pub use crate::checksum::Cover;
use crate::layers::{be16, parse_layers, PROTO_UDP};

/// UDP destination port of VXLAN (IANA).
pub const VXLAN_PORT: u16 = 4789;
/// UDP port of GTP-U (3GPP TS 29.281).
pub const GTPU_PORT: u16 = 2152;
const PROTO_GRE: u8 = 47;
const PROTO_IPIP: u8 = 4;
const PROTO_IPV6: u8 = 41;
const GRE_ETHERNET: u16 = 0x6558;

/// `--tunnel`: which headers of a tunnelled packet the rewrite reaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TunnelMode {
    /// The outermost headers only (tcprewrite's behaviour).
    #[default]
    Outer,
    /// The innermost packet's headers only; a packet that is not a tunnel
    /// is its own innermost packet.
    Inner,
    /// Every layer, outer and inner.
    Both,
}

impl std::str::FromStr for TunnelMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "outer" => Ok(TunnelMode::Outer),
            "inner" => Ok(TunnelMode::Inner),
            "both" => Ok(TunnelMode::Both),
            _ => Err(format!("'{s}' is not a tunnel mode (inner, outer or both)")),
        }
    }
}

/// The kind of tunnel a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelKind {
    Vxlan,
    Gre,
    GtpU,
    IpInIp,
}

/// What the tunnelled packet starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InnerStart {
    Ethernet,
    Ipv4,
    Ipv6,
}

/// Where a tunnelled packet sits in its carrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunnel {
    pub kind: TunnelKind,
    pub inner: InnerStart,
    /// Offset of the tunnelled packet.
    pub offset: usize,
    /// One past its last byte (the outer IP length, bounded by the bytes
    /// captured).
    pub end: usize,
    pub cover: Option<Cover>,
}

/// The tunnel `frame` (Ethernet) carries, if any.
pub fn find(frame: &[u8]) -> Option<Tunnel> {
    let layers = parse_layers(frame);
    let ip = layers.ip?;
    if ip.is_fragment() {
        return None;
    }
    let l4 = layers.l4?;
    let end = l4.end();
    let (kind, inner, offset, cover) = match l4.proto {
        PROTO_UDP if l4.header_len == 8 => {
            let cover = Some(Cover {
                start: l4.offset,
                at: l4.offset + 6,
                udp: true,
            });
            let (sport, dport) = (be16(frame, l4.offset)?, be16(frame, l4.offset + 2)?);
            let p = l4.payload_offset;
            if dport == VXLAN_PORT {
                if frame.get(p)? & 0x08 == 0 {
                    return None;
                }
                (TunnelKind::Vxlan, InnerStart::Ethernet, p + 8, cover)
            } else if dport == GTPU_PORT || sport == GTPU_PORT {
                let at = gtpu(frame, p, end)?;
                (TunnelKind::GtpU, ip_start(frame, at)?, at, cover)
            } else {
                return None;
            }
        }
        PROTO_GRE => {
            let (inner, at, cover) = gre(frame, l4.offset)?;
            (TunnelKind::Gre, inner, at, cover)
        }
        PROTO_IPIP | PROTO_IPV6 => {
            let inner = ip_start(frame, l4.offset)?;
            let want = if l4.proto == PROTO_IPIP {
                InnerStart::Ipv4
            } else {
                InnerStart::Ipv6
            };
            if inner != want {
                return None;
            }
            (TunnelKind::IpInIp, inner, l4.offset, None)
        }
        _ => return None,
    };
    let enough = match inner {
        InnerStart::Ethernet => 14,
        InnerStart::Ipv4 => 20,
        InnerStart::Ipv6 => 40,
    };
    (offset + enough <= end).then_some(Tunnel {
        kind,
        inner,
        offset,
        end,
        cover,
    })
}

/// IPv4 or IPv6 by the version nibble at `at`.
fn ip_start(frame: &[u8], at: usize) -> Option<InnerStart> {
    match frame.get(at)? >> 4 {
        4 => Some(InnerStart::Ipv4),
        6 => Some(InnerStart::Ipv6),
        _ => None,
    }
}

/// The offset of a GTP-U G-PDU's payload whose header starts at `p`.
fn gtpu(frame: &[u8], p: usize, end: usize) -> Option<usize> {
    let flags = *frame.get(p)?;
    // Version 1, protocol type GTP (not GTP'), message type G-PDU.
    if flags >> 5 != 1 || flags & 0x10 == 0 || *frame.get(p + 1)? != 0xff {
        return None;
    }
    if flags & 0x07 == 0 {
        return Some(p + 8);
    }
    // Sequence number, N-PDU number and next extension header type.
    let mut next = *frame.get(p + 11)?;
    let mut at = p + 12;
    if flags & 0x04 == 0 {
        return Some(at);
    }
    while next != 0 {
        // Each extension header is a multiple of 4 bytes, its length
        // first (in 4-byte units) and the next header's type last.
        let len = usize::from(*frame.get(at)?) * 4;
        if len == 0 || at + len > end {
            return None;
        }
        next = frame[at + len - 1];
        at += len;
    }
    Some(at)
}

/// A GRE header at `at`: what it carries, where, and its checksum.
fn gre(frame: &[u8], at: usize) -> Option<(InnerStart, usize, Option<Cover>)> {
    let flags = be16(frame, at)?;
    let (csum, routing, key, seq) = (
        flags & 0x8000 != 0,
        flags & 0x4000 != 0,
        flags & 0x2000 != 0,
        flags & 0x1000 != 0,
    );
    // Version 1 is PPTP's enhanced GRE; RFC 1701 source routes are gone.
    if flags & 0x0007 != 0 || routing {
        return None;
    }
    let len = 4 + 4 * (usize::from(csum) + usize::from(key) + usize::from(seq));
    let inner = match be16(frame, at + 2)? {
        0x0800 => InnerStart::Ipv4,
        0x86dd => InnerStart::Ipv6,
        GRE_ETHERNET => InnerStart::Ethernet,
        _ => return None,
    };
    let cover = csum.then_some(Cover {
        start: at,
        at: at + 4,
        udp: false,
    });
    Some((inner, at + len, cover))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{fold, pseudo_header_v4, sum16};

    fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0];
        h.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        let len = (20 + payload.len()) as u16;
        h[2..4].copy_from_slice(&len.to_be_bytes());
        let c = crate::ipv4_header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(payload);
        h
    }

    fn ethernet(ethertype: u16, l3: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(l3);
        f
    }

    fn udp4(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut u = sport.to_be_bytes().to_vec();
        u.extend_from_slice(&dport.to_be_bytes());
        u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]);
        u.extend_from_slice(payload);
        let s = pseudo_header_v4(&[10, 0, 0, 1], &[10, 0, 0, 2], 17, u.len() as u16);
        let c = fold(sum16(&u, s));
        u[6..8].copy_from_slice(&c.to_be_bytes());
        ipv4(17, &u)
    }

    #[test]
    fn each_kind_is_found_where_it_starts() {
        let inner = ipv4(17, &[0; 12]);
        let inner_eth = ethernet(0x0800, &inner);
        let mut vx = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        vx.extend_from_slice(&inner_eth);
        let f = ethernet(0x0800, &udp4(5000, VXLAN_PORT, &vx));
        let t = find(&f).unwrap();
        assert_eq!(
            (t.kind, t.inner, t.offset, t.end),
            (
                TunnelKind::Vxlan,
                InnerStart::Ethernet,
                14 + 20 + 16,
                f.len()
            )
        );
        assert_eq!(
            t.cover,
            Some(Cover {
                start: 34,
                at: 40,
                udp: true
            })
        );

        // GTP-U with a sequence number and one extension header.
        let mut g = vec![
            0x36, 0xff, 0, 0, 0, 0, 0, 7, 0, 1, 0, 0x85, 1, 0xaa, 0xbb, 0,
        ];
        g.extend_from_slice(&inner);
        let f = ethernet(0x0800, &udp4(GTPU_PORT, GTPU_PORT, &g));
        let t = find(&f).unwrap();
        assert_eq!(
            (t.kind, t.inner, t.offset),
            (TunnelKind::GtpU, InnerStart::Ipv4, 42 + 16)
        );

        // GRE with checksum and key; Ethernet inside.
        let mut gr = vec![0xa0, 0, 0x65, 0x58, 0, 0, 0, 0, 0, 0, 0, 9];
        gr.extend_from_slice(&inner_eth);
        let f = ethernet(0x0800, &ipv4(47, &gr));
        let t = find(&f).unwrap();
        assert_eq!(
            (t.kind, t.inner, t.offset),
            (TunnelKind::Gre, InnerStart::Ethernet, 34 + 12)
        );
        assert_eq!(
            t.cover,
            Some(Cover {
                start: 34,
                at: 38,
                udp: false
            })
        );

        let f = ethernet(0x0800, &ipv4(4, &inner));
        let t = find(&f).unwrap();
        assert_eq!(
            (t.kind, t.inner, t.offset, t.cover),
            (TunnelKind::IpInIp, InnerStart::Ipv4, 34, None)
        );
    }

    #[test]
    fn lookalikes_and_cut_tunnels_are_not_tunnels() {
        let inner = ipv4(17, &[0; 12]);
        // VXLAN without its I flag, GTP-U that is not a G-PDU, GRE
        // version 1 and with routing, IPv6 claimed behind protocol 4.
        let mut vx = vec![0, 0, 0, 0, 0, 0, 42, 0];
        vx.extend_from_slice(&ethernet(0x0800, &inner));
        let mut gtp = vec![0x30, 0x01, 0, 0, 0, 0, 0, 7];
        gtp.extend_from_slice(&inner);
        let mut v1 = vec![0x30, 0x01, 0x88, 0x0b];
        v1.extend_from_slice(&inner);
        let mut routed = vec![0x40, 0, 0x08, 0];
        routed.extend_from_slice(&[0; 4]);
        routed.extend_from_slice(&inner);
        let mut six = inner.clone();
        six[0] = 0x60;
        for f in [
            ethernet(0x0800, &udp4(1, VXLAN_PORT, &vx)),
            ethernet(0x0800, &udp4(1, GTPU_PORT, &gtp)),
            ethernet(0x0800, &ipv4(47, &v1)),
            ethernet(0x0800, &ipv4(47, &routed)),
            ethernet(0x0800, &ipv4(4, &six)),
            ethernet(0x0800, &ipv4(4, &inner[..19])),
        ] {
            assert_eq!(find(&f), None, "{f:02x?}");
        }
        // Garbage and every prefix of a real tunnel: never a panic.
        let mut g = vec![0x34, 0xff, 0, 0, 0, 0, 0, 7, 0, 1, 0, 0x85, 0, 0, 0, 0];
        g.extend_from_slice(&inner);
        let f = ethernet(0x0800, &udp4(GTPU_PORT, GTPU_PORT, &g));
        for n in 0..f.len() {
            let _ = find(&f[..n]);
        }
        assert_eq!(find(&f), None, "a zero-length extension header");
    }

    #[test]
    fn a_cover_update_equals_a_recompute_at_either_parity() {
        for shift in 0..2usize {
            let mut data: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
            let cover = Cover {
                start: 0,
                at: 4,
                udp: false,
            };
            data[4..6].fill(0);
            let c = fold(sum16(&data, 0));
            data[4..6].copy_from_slice(&c.to_be_bytes());
            let start = 10 + shift;
            let old = data[start..start + 9].to_vec();
            for b in &mut data[start..start + 9] {
                *b = b.wrapping_add(91);
            }
            cover.update(&mut data, start, &old);
            assert_eq!(fold(sum16(&data, 0)), 0, "shift {shift}");
            let kept = data.clone();
            cover.recompute_gre(&mut data, 40);
            assert_eq!(data, kept);
        }
    }
}
