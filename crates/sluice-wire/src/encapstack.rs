//! A checked [`EncapLayer`] stack made into bytes once, and the few fields
//! each packet changes in it.
//!
//! The bytes run from the frame's EtherType field (offset 12) to the
//! flow's IP header, for a flow of each IP version (the last type field,
//! an EtherType or an IP protocol, names it). Per packet, innermost tunnel
//! first: the GRE and GTP-U sequence numbers, the GTP-U length, the UDP length (and,
//! over IPv6, the UDP checksum over everything it carries), the outer IP
//! length, ID and header checksum. Over IPv4 the UDP checksum of VXLAN and
//! GTP-U is zero, as RFC 7348 and Linux's tunnels send it; over IPv6 a zero
//! checksum is not allowed (RFC 8200), so it is computed.

use crate::checksum::{fold, sum16};
use crate::encap::{check, EncapLayer, TunnelSpec, ETHERTYPE_MPLS};
use crate::ethernet::MacAddr;
use crate::tunnel::GTPU_PORT;
use std::net::IpAddr;

/// The bytes of a stack for flows of either IP version.
#[derive(Clone, Debug)]
pub struct EncapStack {
    /// For IPv4 flows, then IPv6 flows.
    fam: [Built; 2],
    /// Some tunnel takes its UDP source port from the flow.
    entropy: bool,
}

#[derive(Clone, Debug)]
struct Built {
    /// From the frame's EtherType field to the flow's IP header.
    bytes: Vec<u8>,
    /// Outermost first; offsets in the frame.
    tunnels: Vec<Patch>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Patch {
    /// Outer IP header.
    ip: usize,
    v6: bool,
    /// IPv4: the header's sum with length, ID and checksum zero.
    ip_sum: u32,
    /// The UDP header (VXLAN, GTP-U).
    udp: Option<usize>,
    /// The source port is the flow's entropy.
    auto_sport: bool,
    /// IPv6 pseudo-header sum without the length.
    pseudo: u32,
    /// The GTP-U header.
    gtp: Option<usize>,
    /// GRE's sequence number.
    gre_seq: Option<usize>,
    /// GTP-U's sequence number.
    gtp_seq: Option<usize>,
}

/// Where the type of the next header goes.
#[derive(Clone, Copy)]
enum Slot {
    /// An EtherType (the frame's, after a tag, an inner Ethernet header's).
    Ether(usize),
    /// An IP header's protocol or next header field.
    Proto(usize),
    /// GRE's protocol type (an EtherType).
    Gre(usize),
    /// None: after MPLS and GTP-U the IP version nibble tells.
    Implied,
}

/// Bytes of the stack: the same for flows of either IP version.
pub fn len(layers: &[EncapLayer]) -> usize {
    layers
        .iter()
        .map(|l| match l {
            EncapLayer::Vlan { .. } | EncapLayer::Mpls { .. } => 4,
            EncapLayer::Tunnel(t) => {
                let ip = if t.src.is_ipv6() { 40 } else { 20 };
                ip + match t.kind {
                    TunnelSpec::Vxlan { .. } | TunnelSpec::Geneve { .. } => 8 + 8 + 14,
                    TunnelSpec::Gre { key, seq, ethernet } => {
                        4 + 4 * usize::from(key.is_some())
                            + 4 * usize::from(seq)
                            + 14 * usize::from(ethernet)
                    }
                    TunnelSpec::GtpU { qfi, seq, .. } => {
                        8 + 8
                            + 4 * usize::from(qfi.is_some() || seq)
                            + 4 * usize::from(qfi.is_some())
                    }
                    TunnelSpec::IpIp => 0,
                }
            }
        })
        .sum()
}

/// Each layer and where its own bytes start in the frame (a tag's TCI, a
/// label's entry, a tunnel's outer IP header).
pub fn starts(layers: &[EncapLayer]) -> impl Iterator<Item = (&EncapLayer, usize)> {
    layers.iter().scan(14, |at, l| {
        let start = *at;
        *at += len(std::slice::from_ref(l));
        Some((l, start))
    })
}

impl EncapStack {
    /// Checks `layers` ([`check`]) and builds their bytes; an inner
    /// Ethernet header without MACs of its own gets `src_mac`, `dst_mac`
    /// (the frame's).
    pub fn new(layers: &[EncapLayer], src_mac: MacAddr, dst_mac: MacAddr) -> Result<Self, String> {
        check(layers)?;
        let fam = [
            build(layers, src_mac, dst_mac, false),
            build(layers, src_mac, dst_mac, true),
        ];
        Ok(EncapStack {
            entropy: fam[0].tunnels.iter().any(|p| p.auto_sport),
            fam,
        })
    }

    /// The checksums the tunnels carry, innermost first: (outer IP header
    /// offset, it is IPv6, the UDP header whose checksum covers the rest
    /// over IPv6). Over IPv4, the IP header checksum covers the header.
    pub(crate) fn checksums(
        &self,
        v6: bool,
    ) -> impl Iterator<Item = (usize, bool, Option<usize>)> + '_ {
        self.fam[usize::from(v6)]
            .tunnels
            .iter()
            .rev()
            .map(|p| (p.ip, p.v6, p.udp.filter(|_| p.v6)))
    }

    /// From the EtherType field to the IP header of a flow of version 6
    /// (`v6`) or 4.
    pub fn bytes(&self, v6: bool) -> &[u8] {
        &self.fam[usize::from(v6)].bytes
    }

    /// Whether a tunnel takes its UDP source port from the flow.
    pub fn uses_entropy(&self) -> bool {
        self.entropy
    }

    /// Writes the flow's UDP source port, `entropy`, into the tunnels
    /// without one of their own.
    pub fn write_entropy(&self, frame: &mut [u8], v6: bool, entropy: u16) {
        for p in &self.fam[usize::from(v6)].tunnels {
            if let (Some(u), true) = (p.udp, p.auto_sport) {
                frame[u..u + 2].copy_from_slice(&entropy.to_be_bytes());
            }
        }
    }

    /// Sets the per-packet fields of a whole `frame` (the flow's headers
    /// and checksums already written): `index` is the packet's in its
    /// flow;
    /// `resum`: fields were written into the layers, so the outer IPv4
    /// headers are summed again rather than from their templates.
    pub fn patch(&self, frame: &mut [u8], v6: bool, index: u64, resum: bool) {
        let n = frame.len();
        for p in self.fam[usize::from(v6)].tunnels.iter().rev() {
            if let Some(at) = p.gre_seq {
                frame[at..at + 4].copy_from_slice(&(index as u32).to_be_bytes());
            }
            if let Some(at) = p.gtp_seq {
                frame[at..at + 2].copy_from_slice(&(index as u16).to_be_bytes());
            }
            if let Some(g) = p.gtp {
                frame[g + 2..g + 4].copy_from_slice(&((n - g - 8) as u16).to_be_bytes());
            }
            if let Some(u) = p.udp {
                let len = n - u;
                frame[u + 4..u + 6].copy_from_slice(&(len as u16).to_be_bytes());
                if p.v6 {
                    frame[u + 6..u + 8].fill(0);
                    let pseudo = if resum {
                        sum16(&frame[p.ip + 8..p.ip + 40], 17)
                    } else {
                        p.pseudo
                    };
                    let mut c = fold(sum16(&frame[u..], pseudo + len as u32));
                    if c == 0 {
                        c = 0xffff;
                    }
                    frame[u + 6..u + 8].copy_from_slice(&c.to_be_bytes());
                }
            }
            let ip = p.ip;
            if p.v6 {
                frame[ip + 4..ip + 6].copy_from_slice(&((n - ip - 40) as u16).to_be_bytes());
            } else {
                let total = (n - ip) as u16;
                let id = index as u16;
                frame[ip + 2..ip + 4].copy_from_slice(&total.to_be_bytes());
                frame[ip + 4..ip + 6].copy_from_slice(&id.to_be_bytes());
                let c = if resum {
                    frame[ip + 10..ip + 12].fill(0);
                    fold(sum16(&frame[ip..ip + 20], 0))
                } else {
                    fold(p.ip_sum + u32::from(total) + u32::from(id))
                };
                frame[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
            }
        }
    }
}

fn fill(b: &mut [u8], slot: Slot, v6: bool) {
    match slot {
        Slot::Ether(at) | Slot::Gre(at) => {
            let t: u16 = if v6 { 0x86dd } else { 0x0800 };
            b[at..at + 2].copy_from_slice(&t.to_be_bytes());
        }
        Slot::Proto(at) => b[at] = if v6 { 41 } else { 4 },
        Slot::Implied => {}
    }
}

fn ether(b: &mut [u8], slot: Slot, t: u16) {
    if let Slot::Ether(at) = slot {
        b[at..at + 2].copy_from_slice(&t.to_be_bytes());
    }
}

/// The bytes of a checked stack for a flow of version 6 (`v6`) or 4.
fn build(layers: &[EncapLayer], src_mac: MacAddr, dst_mac: MacAddr, v6: bool) -> Built {
    const AT: usize = 12; // where the bytes go in the frame
    let mut b = vec![0u8; 2];
    let mut slot = Slot::Ether(0);
    let mut tunnels = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        match *l {
            EncapLayer::Vlan {
                tpid,
                pcp,
                dei,
                vid,
            } => {
                ether(&mut b, slot, tpid);
                let tci = u16::from(pcp) << 13 | u16::from(dei) << 12 | (vid & 0x0fff);
                b.extend_from_slice(&tci.to_be_bytes());
                slot = Slot::Ether(b.len());
                b.extend_from_slice(&[0, 0]);
            }
            EncapLayer::Mpls { label, tc, ttl } => {
                ether(&mut b, slot, ETHERTYPE_MPLS);
                let bottom = !matches!(layers.get(i + 1), Some(EncapLayer::Mpls { .. }));
                let entry =
                    label << 12 | u32::from(tc) << 9 | u32::from(bottom) << 8 | u32::from(ttl);
                b.extend_from_slice(&entry.to_be_bytes());
                slot = Slot::Implied;
            }
            EncapLayer::Tunnel(t) => {
                let outer6 = t.src.is_ipv6();
                fill(&mut b, slot, outer6);
                let ip = b.len();
                let mut p = Patch {
                    ip: AT + ip,
                    v6: outer6,
                    ..Patch::default()
                };
                let proto_at = match (t.src, t.dst) {
                    (IpAddr::V4(s), IpAddr::V4(d)) => {
                        b.extend_from_slice(&[0x45, t.tos, 0, 0, 0, 0, 0, 0, t.ttl, 0, 0, 0]);
                        b.extend_from_slice(&s.octets());
                        b.extend_from_slice(&d.octets());
                        ip + 9
                    }
                    (IpAddr::V6(s), IpAddr::V6(d)) => {
                        b.extend_from_slice(&[0x60 | t.tos >> 4, t.tos << 4, 0, 0, 0, 0, 0, t.ttl]);
                        b.extend_from_slice(&s.octets());
                        b.extend_from_slice(&d.octets());
                        p.pseudo = sum16(&s.octets(), sum16(&d.octets(), 17));
                        ip + 6
                    }
                    _ => unreachable!("families checked"),
                };
                let udp = |b: &mut Vec<u8>, p: &mut Patch, sport: Option<u16>, dport: u16| {
                    b[proto_at] = 17;
                    p.udp = Some(AT + b.len());
                    p.auto_sport = sport.is_none();
                    b.extend_from_slice(&sport.unwrap_or(0).to_be_bytes());
                    b.extend_from_slice(&dport.to_be_bytes());
                    b.extend_from_slice(&[0; 4]);
                };
                let inner_eth = |b: &mut Vec<u8>| {
                    b.extend_from_slice(&t.inner_dst_mac.unwrap_or(dst_mac).0);
                    b.extend_from_slice(&t.inner_src_mac.unwrap_or(src_mac).0);
                    let at = b.len();
                    b.extend_from_slice(&[0, 0]);
                    Slot::Ether(at)
                };
                slot = match t.kind {
                    TunnelSpec::Vxlan { vni, sport, dport } => {
                        udp(&mut b, &mut p, sport, dport);
                        b.extend_from_slice(&[0x08, 0, 0, 0]);
                        b.extend_from_slice(&(vni << 8).to_be_bytes());
                        inner_eth(&mut b)
                    }
                    TunnelSpec::Geneve { vni, sport, dport } => {
                        udp(&mut b, &mut p, sport, dport);
                        // Version 0, no options, not OAM, no critical
                        // options; transparent Ethernet bridging.
                        b.extend_from_slice(&[0, 0, 0x65, 0x58]);
                        b.extend_from_slice(&(vni << 8).to_be_bytes());
                        inner_eth(&mut b)
                    }
                    TunnelSpec::Gre { key, seq, ethernet } => {
                        b[proto_at] = 47;
                        let flags =
                            if key.is_some() { 0x20 } else { 0 } | if seq { 0x10 } else { 0 };
                        let at = b.len() + 2;
                        b.extend_from_slice(&[flags, 0, 0x65, 0x58]);
                        if let Some(k) = key {
                            b.extend_from_slice(&k.to_be_bytes());
                        }
                        if seq {
                            p.gre_seq = Some(AT + b.len());
                            b.extend_from_slice(&[0; 4]);
                        }
                        if ethernet {
                            inner_eth(&mut b)
                        } else {
                            Slot::Gre(at)
                        }
                    }
                    TunnelSpec::GtpU {
                        teid,
                        qfi,
                        uplink,
                        seq,
                    } => {
                        udp(&mut b, &mut p, Some(GTPU_PORT), GTPU_PORT);
                        p.gtp = Some(AT + b.len());
                        let e = qfi.is_some();
                        let flags = 0x30 | if e { 0x04 } else { 0 } | if seq { 0x02 } else { 0 };
                        b.extend_from_slice(&[flags, 0xff, 0, 0]);
                        b.extend_from_slice(&teid.to_be_bytes());
                        if e || seq {
                            // Sequence number (the packet's index in its
                            // flow, with `seq`), N-PDU number, next
                            // extension header type.
                            if seq {
                                p.gtp_seq = Some(AT + b.len());
                            }
                            b.extend_from_slice(&[0, 0, 0, if e { 0x85 } else { 0 }]);
                        }
                        if let Some(q) = qfi {
                            // PDU session container: one 4-byte unit, PDU
                            // type (0 downlink, 1 uplink), QFI, no next.
                            b.extend_from_slice(&[1, u8::from(uplink) << 4, q, 0]);
                        }
                        Slot::Implied
                    }
                    TunnelSpec::IpIp => Slot::Proto(proto_at),
                };
                tunnels.push(p);
            }
        }
    }
    fill(&mut b, slot, v6);
    for p in &mut tunnels {
        if !p.v6 {
            p.ip_sum = sum16(&b[p.ip - AT..p.ip - AT + 20], 0);
        }
    }
    debug_assert_eq!(b.len() - 2, len(layers));
    Built { bytes: b, tunnels }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encap::{TunnelLayer, TPID_CTAG};
    use crate::flowpkt::{FlowEnds, FlowHeaders, FlowProto, PacketFields};
    use crate::payload::verify_checksums;
    use crate::tunnel::{find, InnerStart, TunnelKind};
    use std::sync::Arc;

    const MAC_A: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const MAC_B: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn tunnel(kind: TunnelSpec, src: &str, dst: &str) -> EncapLayer {
        EncapLayer::Tunnel(TunnelLayer {
            kind,
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            ttl: 64,
            tos: 0,
            inner_src_mac: None,
            inner_dst_mac: None,
        })
    }

    fn frame(layers: &[EncapLayer], inner: (&str, &str), proto: FlowProto, sport: u16) -> Vec<u8> {
        let stack = Arc::new(EncapStack::new(layers, MAC_A, MAC_B).unwrap());
        let ends = FlowEnds {
            src: inner.0.parse().unwrap(),
            dst: inner.1.parse().unwrap(),
            sport,
            dport: 80,
        };
        let h = FlowHeaders::new(MAC_A, MAC_B, ends, proto, false)
            .unwrap()
            .with_encap(&stack);
        let mut out = Vec::new();
        h.write(
            &mut out,
            &PacketFields {
                index: 3,
                last: false,
                payload_len: 101,
                tcp_seq: 77,
                prefix: b"GET / HTTP/1.1",
                stamp: Some(5),
            },
        );
        assert_eq!(out.len(), h.frame_len(101));
        assert_eq!(
            out.len(),
            14 + len(layers) + h.frame_len(101) - len(layers) - 14
        );
        out
    }

    /// The packet a tunnel carries, as an Ethernet frame.
    fn inner_frame(f: &[u8], start: InnerStart, at: usize) -> Vec<u8> {
        match start {
            InnerStart::Ethernet => f[at..].to_vec(),
            InnerStart::Ipv4 | InnerStart::Ipv6 => {
                let t: u16 = if start == InnerStart::Ipv4 {
                    0x0800
                } else {
                    0x86dd
                };
                let mut e = vec![0u8; 12];
                e.extend_from_slice(&t.to_be_bytes());
                e.extend_from_slice(&f[at..]);
                e
            }
        }
    }

    fn kinds() -> Vec<(TunnelSpec, TunnelKind)> {
        vec![
            (
                TunnelSpec::Vxlan {
                    vni: 0xabcdef,
                    sport: None,
                    dport: VXLAN_PORT_FOR_TESTS,
                },
                TunnelKind::Vxlan,
            ),
            (
                TunnelSpec::Gre {
                    key: Some(9),
                    seq: true,
                    ethernet: false,
                },
                TunnelKind::Gre,
            ),
            (
                TunnelSpec::Gre {
                    key: None,
                    seq: false,
                    ethernet: true,
                },
                TunnelKind::Gre,
            ),
            (
                TunnelSpec::GtpU {
                    teid: 0x1234_5678,
                    qfi: Some(9),
                    uplink: true,
                    seq: true,
                },
                TunnelKind::GtpU,
            ),
            (
                TunnelSpec::GtpU {
                    teid: 1,
                    qfi: None,
                    uplink: false,
                    seq: false,
                },
                TunnelKind::GtpU,
            ),
            (TunnelSpec::IpIp, TunnelKind::IpInIp),
        ]
    }
    const VXLAN_PORT_FOR_TESTS: u16 = crate::encap::VXLAN_PORT;

    #[test]
    fn every_tunnel_carries_the_flow_with_its_lengths_and_checksums_right() {
        let tag = EncapLayer::Vlan {
            tpid: TPID_CTAG,
            pcp: 0,
            dei: false,
            vid: 5,
        };
        for outer in [
            ("192.0.2.1", "192.0.2.2"),
            ("2001:db8:1::1", "2001:db8:1::2"),
        ] {
            for (kind, found) in kinds() {
                let layers = [tag, tunnel(kind, outer.0, outer.1)];
                for inner in [("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")] {
                    for proto in [FlowProto::Udp, FlowProto::Tcp, FlowProto::Icmp] {
                        let what = format!("{outer:?} {kind:?} {inner:?} {proto:?}");
                        let f = frame(&layers, inner, proto, 4000);
                        verify_checksums(&f).unwrap_or_else(|e| panic!("{what}: outer: {e:?}"));
                        let ip = 18;
                        if outer.0.contains(':') {
                            assert_eq!(
                                usize::from(u16::from_be_bytes([f[ip + 4], f[ip + 5]])),
                                f.len() - ip - 40,
                                "{what}"
                            );
                        } else {
                            assert_eq!(
                                usize::from(u16::from_be_bytes([f[ip + 2], f[ip + 3]])),
                                f.len() - ip,
                                "{what}"
                            );
                        }
                        let t = find(&f).unwrap_or_else(|| panic!("{what}: no tunnel found"));
                        assert_eq!(t.kind, found, "{what}");
                        assert_eq!(t.end, f.len(), "{what}");
                        let want = if kind.carries_ethernet() {
                            InnerStart::Ethernet
                        } else if inner.0.contains(':') {
                            InnerStart::Ipv6
                        } else {
                            InnerStart::Ipv4
                        };
                        assert_eq!(t.inner, want, "{what}");
                        let i = inner_frame(&f, t.inner, t.offset);
                        verify_checksums(&i).unwrap_or_else(|e| panic!("{what}: inner: {e:?}"));
                        // The inner packet is the flow's, as without the tunnel.
                        let plain = frame(&[], inner, proto, 4000);
                        assert_eq!(&i[14..], &plain[14..], "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn tunnels_nest_as_written() {
        let layers = [
            tunnel(
                TunnelSpec::Vxlan {
                    vni: 7,
                    sport: Some(5555),
                    dport: VXLAN_PORT_FOR_TESTS,
                },
                "2001:db8:1::1",
                "2001:db8:1::2",
            ),
            EncapLayer::Mpls {
                label: 30,
                tc: 0,
                ttl: 9,
            },
            tunnel(
                TunnelSpec::Gre {
                    key: Some(1),
                    seq: false,
                    ethernet: false,
                },
                "192.0.2.1",
                "192.0.2.2",
            ),
        ];
        let f = frame(&layers, ("10.0.0.1", "10.0.0.2"), FlowProto::Udp, 4000);
        verify_checksums(&f).unwrap();
        let outer = find(&f).unwrap();
        assert_eq!(outer.kind, TunnelKind::Vxlan);
        assert_eq!(
            u16::from_be_bytes([f[54], f[55]]),
            5555,
            "the given source port"
        );
        let mid = inner_frame(&f, outer.inner, outer.offset);
        // The inner Ethernet frame carries MPLS, then GRE over IPv4.
        assert_eq!(&mid[12..14], &[0x88, 0x47]);
        assert_eq!(mid[16] & 1, 1, "bottom of stack");
        let mut no_label = mid[..12].to_vec();
        no_label.extend_from_slice(&[0x08, 0x00]);
        no_label.extend_from_slice(&mid[18..]);
        verify_checksums(&no_label).unwrap();
        let gre = find(&no_label).unwrap();
        assert_eq!(gre.kind, TunnelKind::Gre);
        let inner = inner_frame(&no_label, gre.inner, gre.offset);
        verify_checksums(&inner).unwrap();
        let plain = frame(&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp, 4000);
        assert_eq!(&inner[14..], &plain[14..]);
    }

    #[test]
    fn the_source_port_follows_the_flow() {
        let vx = [tunnel(
            TunnelSpec::Vxlan {
                vni: 1,
                sport: None,
                dport: VXLAN_PORT_FOR_TESTS,
            },
            "192.0.2.1",
            "192.0.2.2",
        )];
        let sport = |flow_port| {
            let f = frame(&vx, ("10.0.0.1", "10.0.0.2"), FlowProto::Udp, flow_port);
            u16::from_be_bytes([f[34], f[35]])
        };
        let ports: std::collections::HashSet<u16> = (4000..4064).map(sport).collect();
        assert!(ports.iter().all(|p| *p >= 0xc000), "{ports:?}");
        assert!(ports.len() > 50, "64 flows, {} source ports", ports.len());
        assert_eq!(sport(4000), sport(4000));
    }
}
