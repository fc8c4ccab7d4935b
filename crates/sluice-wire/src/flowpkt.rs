//! Packets of generated flows: {IPv4, IPv6} × {UDP, TCP}, IPv4 + ICMP echo,
//! IPv6 + ICMPv6 echo, with a payload of zeros behind an optional prefix
//! and sequence stamp.
//!
//! A [`FlowHeaders`] is the per-flow template: everything but the fields
//! that change per packet is fixed, and the pseudo-header sum is computed
//! once. [`FlowHeaders::write`] copies the template into the output, patches
//! the per-packet fields (lengths, IPv4 ID, TCP sequence number and flags,
//! ICMP sequence number), appends prefix, stamp and zero payload, and
//! computes the checksums over the non-zero bytes only: the zero payload
//! adds nothing to a one's complement sum, so a 1400-byte payload costs no
//! more to checksum than a 0-byte one.
//!
//! TCP: the first packet carries SYN, the last FIN|ACK, the others ACK; the
//! sequence number starts at the flow's ISN and advances by each packet's
//! payload length (plus one for the SYN). The reverse direction of a
//! bi-flow starts with SYN|ACK. ICMP: echo request, identifier = the flow's
//! source port, sequence = packet index.

use crate::checksum::{fold, sum16};
use crate::encapstack::EncapStack;
use crate::ethernet::MacAddr;
use crate::ip6ext::Ipv6ExtStack;
use std::net::IpAddr;
use std::sync::Arc;

/// What varies a frame's fields as [`FlowHeaders::write_varied`] writes
/// it (the field engine, `fields::FieldEngine`): its tunnel-header fields
/// before the tunnel's own are patched, the rest after. A trait, so the
/// headers do not depend on the engine that varies them (monomorphised:
/// the same code as a direct call).
pub trait Varies {
    /// Whether it varies fields in front of the IP header (the tunnel's).
    fn has_front(&self) -> bool;
    /// Writes those; whether any was written.
    fn write_front(&self, frame: &mut [u8], lay: &Layout, flow: u64, packet: u64) -> bool;
    /// Writes the rest, checksums kept right.
    fn apply(&self, frame: &mut [u8], h: &FlowHeaders, flow: u64, packet: u64);
}

/// [`FlowHeaders::write`]: nothing varies.
enum NoVary {}

impl Varies for NoVary {
    fn has_front(&self) -> bool {
        match *self {}
    }
    fn write_front(&self, _: &mut [u8], _: &Layout, _: u64, _: u64) -> bool {
        match *self {}
    }
    fn apply(&self, _: &mut [u8], _: &FlowHeaders, _: u64, _: u64) {
        match *self {}
    }
}

/// Transport of a generated flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowProto {
    Udp,
    Tcp,
    /// ICMP echo over IPv4, ICMPv6 echo over IPv6.
    Icmp,
    /// No L4 header (FLOR's "L4 None"): the payload follows the IP header,
    /// whose protocol field is this number.
    Ip(u8),
}

/// Identifies a sequence-stamped payload: "SLF1" + flow id + packet index.
pub const STAMP_MAGIC: &[u8; 4] = b"SLF1";
pub const STAMP_LEN: usize = 12;

/// Addresses and ports of a flow (for ICMP, `sport` is the echo identifier
/// and `dport` is unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowEnds {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
}

/// Per-packet values.
#[derive(Clone, Copy, Debug)]
pub struct PacketFields<'a> {
    /// 0-based index of the packet in its flow.
    pub index: u64,
    /// This is the flow's last packet (TCP FIN).
    pub last: bool,
    /// Payload bytes (prefix and stamp included).
    pub payload_len: usize,
    /// TCP sequence number of this packet.
    pub tcp_seq: u32,
    /// Bytes at the start of the payload (cut to `payload_len`).
    pub prefix: &'a [u8],
    /// Flow id for the sequence stamp written after the prefix, if any.
    pub stamp: Option<u32>,
}

/// Where a flow's headers sit in its frames (offsets from the frame's
/// start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The flow's IP header.
    pub ip: usize,
    pub v6: bool,
    /// The L4 header (the payload for a flow without one).
    pub l4: usize,
    /// The L4 checksum, if the protocol has one.
    pub l4_csum: Option<usize>,
    /// The L4 checksum is UDP's (0 is sent as 0xffff).
    pub udp: bool,
    /// The L4 checksum covers the IP addresses (not ICMPv4's).
    pub pseudo: bool,
    /// The L4 header starts with source and destination ports.
    pub ports: bool,
    /// Behind a routing header: where the final destination is (the L4
    /// checksum's pseudo header takes it, not the IPv6 destination).
    pub final_dst: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct FlowHeaders {
    /// The template: Ethernet, IP and L4 headers.
    head: [u8; HEAD],
    /// Ethernet + IP header length.
    l3_end: usize,
    /// Ethernet + IP + L4 header length.
    l4_end: usize,
    v6: bool,
    proto: FlowProto,
    /// Pseudo-header sum without the length (TCP, UDP, ICMPv6).
    pseudo: u32,
    /// Reverse direction of a bi-flow (TCP starts with SYN|ACK).
    reverse: bool,
    /// One's complement sums of the IPv4 header and of the L4 header as
    /// templates (per-packet fields zero): per packet only the changed
    /// words are added, the frame is never read back.
    ip_sum: u32,
    l4_sum: u32,
    /// Layers between the Ethernet addresses and the IP header (tags,
    /// labels, tunnels), shared by every flow of a source.
    encap: Option<Arc<EncapStack>>,
    /// The flow's UDP source port for tunnels that take it from the flow.
    entropy: u16,
    /// IPv6 extension headers after the IP header (IPv6 flows).
    ext: Option<Arc<Ipv6ExtStack>>,
}

const ETH: usize = 14;
/// Ethernet, IPv6 and TCP.
const HEAD: usize = ETH + 40 + 20;

impl FlowHeaders {
    /// Fails when the addresses are of different families.
    pub fn new(
        src_mac: MacAddr,
        dst_mac: MacAddr,
        ends: FlowEnds,
        proto: FlowProto,
        reverse: bool,
    ) -> Result<Self, String> {
        let FlowEnds {
            src,
            dst,
            sport,
            dport,
        } = ends;
        let mut h = [0u8; HEAD];
        h[0..6].copy_from_slice(&dst_mac.0);
        h[6..12].copy_from_slice(&src_mac.0);
        let (v6, l3_end, next, pseudo) = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                h[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
                let ip = &mut h[ETH..ETH + 20];
                ip[0] = 0x45;
                ip[8] = 64;
                ip[12..16].copy_from_slice(&s.octets());
                ip[16..20].copy_from_slice(&d.octets());
                let p = match proto {
                    FlowProto::Udp => 17,
                    FlowProto::Tcp => 6,
                    FlowProto::Icmp => 1,
                    FlowProto::Ip(n) => n,
                };
                ip[9] = p;
                let pseudo = sum16(&s.octets(), sum16(&d.octets(), 0)) + u32::from(p);
                (false, ETH + 20, p, pseudo)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                h[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
                let ip = &mut h[ETH..ETH + 40];
                ip[0] = 0x60;
                ip[7] = 64;
                ip[8..24].copy_from_slice(&s.octets());
                ip[24..40].copy_from_slice(&d.octets());
                let p = match proto {
                    FlowProto::Udp => 17,
                    FlowProto::Tcp => 6,
                    FlowProto::Icmp => 58,
                    FlowProto::Ip(n) => n,
                };
                ip[6] = p;
                let pseudo = sum16(&s.octets(), sum16(&d.octets(), 0)) + u32::from(p);
                (true, ETH + 40, p, pseudo)
            }
            _ => {
                return Err(format!(
                    "source {src} and destination {dst} are of different IP versions"
                ))
            }
        };
        let _ = next;
        let l4 = &mut h[l3_end..];
        let l4_len = match proto {
            FlowProto::Udp => {
                l4[0..2].copy_from_slice(&sport.to_be_bytes());
                l4[2..4].copy_from_slice(&dport.to_be_bytes());
                8
            }
            FlowProto::Tcp => {
                l4[0..2].copy_from_slice(&sport.to_be_bytes());
                l4[2..4].copy_from_slice(&dport.to_be_bytes());
                l4[12] = 5 << 4; // data offset: 20 bytes
                l4[14..16].copy_from_slice(&65535u16.to_be_bytes()); // window
                20
            }
            FlowProto::Icmp => {
                l4[0] = if v6 { 128 } else { 8 }; // echo request
                l4[4..6].copy_from_slice(&sport.to_be_bytes()); // identifier
                8
            }
            FlowProto::Ip(_) => 0,
        };
        let ip_sum = if v6 { 0 } else { sum16(&h[ETH..l3_end], 0) };
        let l4_sum = sum16(&h[l3_end..l3_end + l4_len], 0);
        Ok(FlowHeaders {
            head: h,
            l3_end,
            l4_end: l3_end + l4_len,
            v6,
            proto,
            pseudo,
            reverse,
            ip_sum,
            l4_sum,
            encap: None,
            entropy: 0,
            ext: None,
        })
    }

    /// The same headers behind the layers of `encap` (tags, labels,
    /// tunnels). A tunnel without a UDP source port of its own takes one
    /// from a hash of the flow's addresses and ports, in 49152..65535.
    pub fn with_encap(mut self, encap: &Arc<EncapStack>) -> Self {
        if encap.uses_entropy() {
            // The sums cover the addresses, protocol and ports; a
            // multiply-xorshift spreads them over the port's 14 bits.
            let x = (u64::from(self.pseudo) << 32 | u64::from(self.l4_sum))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            self.entropy = 0xc000 | ((x ^ x >> 31) >> 50) as u16;
        }
        self.encap = Some(Arc::clone(encap));
        self
    }

    /// Where the flow's headers sit in its frames.
    pub fn layout(&self) -> Layout {
        self.layout_at(self.grow(), self.ext_len())
    }

    /// Where they sit in the template (without the layers).
    pub(crate) fn template_layout(&self) -> Layout {
        self.layout_at(0, 0)
    }

    /// The template: Ethernet, IP and L4 headers.
    pub(crate) fn head_mut(&mut self) -> &mut [u8] {
        &mut self.head[..self.l4_end]
    }

    /// Takes the template's sums again after its bytes changed (the
    /// per-packet fields are still zero in it).
    pub(crate) fn resum(&mut self) {
        let ip = &self.head[ETH..self.l3_end];
        let (addrs, proto) = if self.v6 {
            (&ip[8..40], ip[6])
        } else {
            (&ip[12..20], ip[9])
        };
        self.pseudo = sum16(addrs, 0) + u32::from(proto);
        self.ip_sum = if self.v6 { 0 } else { sum16(ip, 0) };
        self.l4_sum = sum16(&self.head[self.l3_end..self.l4_end], 0);
    }

    fn layout_at(&self, grow: usize, ext: usize) -> Layout {
        let l4 = self.l3_end + grow + ext;
        let (csum, ports) = match self.proto {
            FlowProto::Udp => (Some(6), true),
            FlowProto::Tcp => (Some(16), true),
            FlowProto::Icmp => (Some(2), false),
            FlowProto::Ip(_) => (None, false),
        };
        Layout {
            ip: ETH + grow,
            v6: self.v6,
            l4,
            l4_csum: csum.map(|c| l4 + c),
            udp: self.proto == FlowProto::Udp,
            pseudo: self.proto != FlowProto::Icmp || self.v6,
            ports,
            final_dst: self
                .ext
                .as_ref()
                .filter(|_| ext > 0)
                .and_then(|x| x.final_dst_at())
                .map(|at| ETH + grow + 40 + at),
        }
    }

    /// The layers in front of the IP header.
    pub fn encap(&self) -> Option<&EncapStack> {
        self.encap.as_deref()
    }

    /// The same headers with IPv6 extension headers after the IP header;
    /// an IPv4 flow is left as it is.
    pub fn with_ipv6_ext(mut self, ext: &Arc<Ipv6ExtStack>) -> Self {
        if self.v6 && !ext.is_empty() {
            self.ext = Some(Arc::clone(ext));
        }
        self
    }

    /// Bytes of the IPv6 extension headers.
    fn ext_len(&self) -> usize {
        self.ext.as_ref().map_or(0, |e| e.len())
    }

    /// Bytes the layers add.
    fn grow(&self) -> usize {
        self.encap
            .as_ref()
            .map_or(0, |e| e.bytes(self.v6).len() - 2)
    }

    /// Frame length for a payload of `payload_len` bytes.
    pub fn frame_len(&self, payload_len: usize) -> usize {
        self.grow() + self.ext_len() + self.l4_end + payload_len
    }

    /// Appends one frame to `out`.
    pub fn write(&self, out: &mut Vec<u8>, f: &PacketFields<'_>) {
        self.write_with::<NoVary>(out, f, None);
    }

    /// Appends one frame to `out` with the fields of `engine` that are not
    /// in the template (`fields::FieldEngine::vary` wrote those): `flow`
    /// is the flow's number, `packet` the packet's count.
    // Never inlined: a caller's own per-packet function (a source's frame
    // writer) stays small enough to be inlined into its fill loop, as when
    // this was a call into this crate.
    #[inline(never)]
    pub fn write_varied<V: Varies>(
        &self,
        out: &mut Vec<u8>,
        f: &PacketFields<'_>,
        engine: &V,
        flow: u64,
        packet: u64,
    ) {
        self.write_with(out, f, Some((engine, flow, packet)));
    }

    #[inline(always)]
    fn write_with<V: Varies>(
        &self,
        out: &mut Vec<u8>,
        f: &PacketFields<'_>,
        vary: Option<(&V, u64, u64)>,
    ) {
        let start = out.len();
        let l4_len = self.l4_end - self.l3_end + f.payload_len;
        let ext = self.ext_len();
        let grow = match (&self.encap, &self.ext) {
            (None, None) => {
                out.extend_from_slice(&self.head[..self.l4_end]);
                0
            }
            (encap, xs) => {
                let grow = match encap {
                    None => {
                        out.extend_from_slice(&self.head[..ETH]);
                        0
                    }
                    Some(e) => {
                        let b = e.bytes(self.v6);
                        out.extend_from_slice(&self.head[..12]);
                        out.extend_from_slice(b);
                        b.len() - 2
                    }
                };
                out.extend_from_slice(&self.head[ETH..self.l3_end]);
                if let Some(x) = xs {
                    out.extend_from_slice(x.bytes());
                }
                out.extend_from_slice(&self.head[self.l3_end..self.l4_end]);
                grow
            }
        };
        let (l3_end, l4_end) = (self.l3_end + grow + ext, self.l4_end + grow + ext);
        // Payload: prefix, stamp, zeros. Their sum is taken from the source
        // bytes; zeros add nothing.
        let pre = f.prefix.len().min(f.payload_len);
        out.extend_from_slice(&f.prefix[..pre]);
        let mut payload_sum = sum16(&f.prefix[..pre], 0);
        if let Some(flow) = f.stamp {
            let mut st = [0u8; STAMP_LEN];
            st[..4].copy_from_slice(STAMP_MAGIC);
            st[4..8].copy_from_slice(&flow.to_be_bytes());
            st[8..12].copy_from_slice(&(f.index as u32).to_be_bytes());
            let n = STAMP_LEN.min(f.payload_len - pre);
            out.extend_from_slice(&st[..n]);
            // Bytes at an odd offset: the sum of the same bytes, swapped.
            let mut ss = u32::from(!fold(sum16(&st[..n], 0)));
            if pre % 2 == 1 {
                ss = u32::from((ss as u16).swap_bytes());
            }
            payload_sum += ss;
        }
        out.resize(start + l4_end + f.payload_len, 0);
        let frame = &mut out[start..];
        // IP header.
        let ip = ETH + grow;
        if self.v6 {
            frame[ip + 4..ip + 6].copy_from_slice(&((ext + l4_len) as u16).to_be_bytes());
            if let Some(x) = &self.ext {
                x.patch(frame, ip);
            }
        } else {
            let total = (20 + l4_len) as u16;
            let id = f.index as u16;
            frame[ip + 2..ip + 4].copy_from_slice(&total.to_be_bytes());
            frame[ip + 4..ip + 6].copy_from_slice(&id.to_be_bytes());
            let c = fold(self.ip_sum + u32::from(total) + u32::from(id));
            frame[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        }
        self.write_l4(&mut frame[l3_end..l4_end], f, l4_len, payload_sum);
        if let Some(e) = &self.encap {
            if e.uses_entropy() {
                e.write_entropy(frame, self.v6, self.entropy);
            }
        }
        let front = match vary {
            Some((e, flow, packet)) if e.has_front() => {
                e.write_front(frame, &self.layout(), flow, packet)
            }
            _ => false,
        };
        if let Some(e) = &self.encap {
            e.patch(frame, self.v6, f.index, front);
        }
        if let Some((e, flow, packet)) = vary {
            e.apply(frame, self, flow, packet);
        }
    }

    /// The L4 header's per-packet fields and checksum: the changed words go
    /// into the checksum as they are written.
    fn write_l4(&self, l4: &mut [u8], f: &PacketFields<'_>, l4_len: usize, payload_sum: u32) {
        let mut sum = self.l4_sum + payload_sum;
        let csum_at = match self.proto {
            FlowProto::Udp => {
                l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
                sum += l4_len as u32;
                6
            }
            FlowProto::Tcp => {
                l4[4..8].copy_from_slice(&f.tcp_seq.to_be_bytes());
                sum += (f.tcp_seq >> 16) + (f.tcp_seq & 0xffff);
                let flags: u8 = if f.index == 0 {
                    if self.reverse {
                        0x12 // SYN|ACK
                    } else {
                        0x02 // SYN
                    }
                } else if f.last {
                    0x11 // FIN|ACK
                } else {
                    0x10 // ACK
                };
                l4[13] = flags;
                sum += u32::from(flags);
                16
            }
            FlowProto::Icmp => {
                let seq = f.index as u16;
                l4[6..8].copy_from_slice(&seq.to_be_bytes());
                sum += u32::from(seq);
                2
            }
            FlowProto::Ip(_) => return, // no L4 header, no checksum over the payload
        };
        if self.proto != FlowProto::Icmp || self.v6 {
            // ICMPv4 has no pseudo header.
            sum += self.pseudo + (l4_len as u32 & 0xffff) + (l4_len as u32 >> 16);
        }
        let mut c = fold(sum);
        if c == 0 && self.proto == FlowProto::Udp {
            c = 0xffff;
        }
        l4[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::verify_checksums;

    fn headers(src: &str, dst: &str, proto: FlowProto) -> FlowHeaders {
        FlowHeaders::new(
            MacAddr([2, 0, 0, 0, 0, 1]),
            MacAddr([2, 0, 0, 0, 0, 2]),
            FlowEnds {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                sport: 4000,
                dport: 80,
            },
            proto,
            false,
        )
        .unwrap()
    }

    #[test]
    fn every_protocol_gets_valid_checksums() {
        for (s, d) in [("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")] {
            for proto in [
                FlowProto::Udp,
                FlowProto::Tcp,
                FlowProto::Icmp,
                FlowProto::Ip(253),
            ] {
                let h = headers(s, d, proto);
                for len in [0, 1, 11, 12, 13, 100, 1400] {
                    let mut out = Vec::new();
                    h.write(
                        &mut out,
                        &PacketFields {
                            index: 3,
                            last: false,
                            payload_len: len,
                            tcp_seq: 12345,
                            prefix: b"GET /",
                            stamp: Some(7),
                        },
                    );
                    assert_eq!(out.len(), h.frame_len(len));
                    verify_checksums(&out).unwrap_or_else(|e| panic!("{s} {proto:?} {len}: {e:?}"));
                }
            }
        }
    }

    #[test]
    fn ip_only_flows_carry_the_payload_right_after_the_ip_header() {
        for (s, d, l3) in [
            ("10.0.0.1", "10.0.0.2", 34),
            ("2001:db8::1", "2001:db8::2", 54),
        ] {
            let h = headers(s, d, FlowProto::Ip(47));
            let mut out = Vec::new();
            let fields = PacketFields {
                index: 0,
                last: false,
                payload_len: 10,
                tcp_seq: 0,
                prefix: b"0123456789",
                stamp: None,
            };
            h.write(&mut out, &fields);
            assert_eq!(out.len(), l3 + 10);
            assert_eq!(&out[l3..], b"0123456789");
            let next = if l3 == 34 { out[14 + 9] } else { out[14 + 6] };
            assert_eq!(next, 47, "{s}: the IP protocol field");
        }
    }

    #[test]
    fn l2_layers_go_before_the_ip_header_and_checksums_stay_right() {
        use crate::encap::{EncapLayer, TPID_CTAG, TPID_STAG};
        let layers = [
            EncapLayer::Vlan {
                tpid: TPID_STAG,
                pcp: 0,
                dei: false,
                vid: 10,
            },
            EncapLayer::Vlan {
                tpid: TPID_CTAG,
                pcp: 3,
                dei: false,
                vid: 20,
            },
            EncapLayer::Mpls {
                label: 100,
                tc: 0,
                ttl: 64,
            },
        ];
        for (s, d) in [("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")] {
            for proto in [FlowProto::Udp, FlowProto::Tcp, FlowProto::Icmp] {
                let plain = headers(s, d, proto);
                let stack =
                    Arc::new(EncapStack::new(&layers, MacAddr([0; 6]), MacAddr([0; 6])).unwrap());
                let h = headers(s, d, proto).with_encap(&stack);
                let fields = PacketFields {
                    index: 2,
                    last: false,
                    payload_len: 33,
                    tcp_seq: 9,
                    prefix: b"x",
                    stamp: Some(1),
                };
                let (mut a, mut b) = (Vec::new(), Vec::new());
                plain.write(&mut a, &fields);
                h.write(&mut b, &fields);
                assert_eq!(b.len(), a.len() + 12);
                // The same packet behind the layers.
                assert_eq!(&b[..12], &a[..12]);
                assert_eq!(
                    &b[12..26],
                    [0x88, 0xa8, 0, 10, 0x81, 0, 0x60, 20, 0x88, 0x47, 0, 0x06, 0x41, 64]
                );
                assert_eq!(&b[26..], &a[14..], "{s} {proto:?}");
                verify_checksums(&b).unwrap_or_else(|e| panic!("{s} {proto:?}: {e:?}"));
            }
        }
    }

    #[test]
    fn tcp_flags_follow_the_flow() {
        let h = headers("10.0.0.1", "10.0.0.2", FlowProto::Tcp);
        let flags = |index, last| {
            let mut out = Vec::new();
            h.write(
                &mut out,
                &PacketFields {
                    index,
                    last,
                    payload_len: 4,
                    tcp_seq: 1,
                    prefix: b"",
                    stamp: None,
                },
            );
            out[14 + 20 + 13]
        };
        assert_eq!(flags(0, false), 0x02);
        assert_eq!(flags(1, false), 0x10);
        assert_eq!(flags(9, true), 0x11);
    }

    #[test]
    fn mixed_families_are_refused() {
        let e = FlowHeaders::new(
            MacAddr([0; 6]),
            MacAddr([0; 6]),
            FlowEnds {
                src: "10.0.0.1".parse().unwrap(),
                dst: "::1".parse().unwrap(),
                sport: 1,
                dport: 2,
            },
            FlowProto::Udp,
            false,
        );
        assert!(e.is_err());
    }
}
