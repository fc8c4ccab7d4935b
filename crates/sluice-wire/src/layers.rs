//! Locate the L3 and L4 headers inside an Ethernet frame.
//!
//! [`parse_layers`] walks Ethernet II, any stack of VLAN tags (TPIDs 0x8100,
//! 0x88a8, 0x9100, 0x9200), IPv4 (with options) or IPv6 (with the
//! hop-by-hop, routing, fragment, destination options and AH extension
//! headers) and finally TCP, UDP, ICMP or ICMPv6, and reports *offsets*
//! into the frame, not copies or views. The payload rewriter patches
//! lengths and checksums at those offsets; the flow hash reads addresses
//! and ports there.
//!
//! Design decisions:
//!
//! * Never panic, never fail: every read is bounds-checked and the walk
//!   simply stops at the first header it cannot parse (short frame, snaplen
//!   cut, wrong version nibble, bad header length). What was found is
//!   reported; what was not is `None`. Callers decide what is safe to do.
//! * Two lengths bound every L4 payload: the bytes actually captured and the
//!   length the IP header claims. Ethernet padding after a short IP packet
//!   is therefore never taken for payload, and a snaplen-cut frame reports
//!   only what it holds (callers compare [`Layers::ip_end`] with the frame
//!   length to detect the cut).
//! * An IP payload that is not TCP, UDP, ICMP (over IPv4) or ICMPv6 (over
//!   IPv6) — GRE, ESP, SCTP, ... — is still reported as an [`L4`] with
//!   `header_len == 0`, so that its protocol and offset are known and the
//!   payload covers the whole IP payload. Later IP fragments carry no L4
//!   header and have `l4 == None`.
//! * Extra facts that only the checksum code needs (the *final*
//!   destination address after IPv4 source routes or IPv6 routing headers,
//!   IPv6 jumbograms) are computed by the same walk but kept crate-private,
//!   so the public types stay small.

/// Ethernet II header length.
pub const ETH_HEADER_LEN: usize = 14;
/// Ethertype of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethertype of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// Tag protocol identifiers recognised as VLAN tags (802.1Q, 802.1ad and
/// the two pre-standard QinQ values).
pub const VLAN_TPIDS: [u16; 4] = [0x8100, 0x88a8, 0x9100, 0x9200];
/// MPLS unicast and multicast.
const MPLS_TYPES: [u16; 2] = [0x8847, 0x8848];

/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;

const IPV6_HEADER_LEN: usize = 40;
const NH_HOP_BY_HOP: u8 = 0;
const NH_ROUTING: u8 = 43;
const NH_FRAGMENT: u8 = 44;
const NH_AH: u8 = 51;
const NH_NO_NEXT: u8 = 59;
const NH_DEST_OPTS: u8 = 60;

/// Where the headers of one Ethernet frame are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// Offset of the L3 header: 14 plus 4 per VLAN tag, past MPLS labels
    /// (and a pseudowire's inner Ethernet header). For a frame too
    /// short to hold its Ethernet header (or a VLAN tag), the offset where
    /// parsing stopped.
    pub l3_offset: usize,
    /// The innermost type/length field (after the VLAN tags); 0 for a frame
    /// shorter than 14 bytes. Values below 0x0600 are 802.3 lengths.
    pub ethertype: u16,
    /// The IP header, when the ethertype is IPv4/IPv6 and the fixed header
    /// (IPv4: including options) is captured with a sane version and length.
    pub ip: Option<Ip>,
    /// The L4 header, when it is present in this frame (not a later
    /// fragment) and fully captured within the IP length.
    pub l4: Option<L4>,
}

/// The IP header of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ip {
    /// IPv4.
    V4 {
        /// IHL × 4, options included (20..=60).
        header_len: usize,
        /// The total length field, as the header says (not checked against
        /// the captured bytes; it may even be smaller than `header_len`).
        total_len: usize,
        /// More-fragments set or fragment offset non-zero.
        fragment: bool,
        /// A fragment with offset zero (the one carrying the L4 header).
        /// False for unfragmented packets.
        first_fragment: bool,
    },
    /// IPv6.
    V6 {
        /// The payload length field (bytes after the 40-byte fixed header,
        /// extension headers included); for a jumbogram (field 0 with a
        /// Jumbo Payload hop-by-hop option) the jumbo length.
        payload_len: usize,
        /// The extension header chain was walked to its end inside the
        /// captured bytes, so the upper-layer protocol and its offset are
        /// known (also true for "no next header"). False when the chain is
        /// cut short or the packet is a later fragment.
        l4_proto_offset_known: bool,
        /// A fragment header with M set or a non-zero offset (an "atomic"
        /// fragment header, offset 0 and M clear, is not a fragment).
        fragment: bool,
        /// A fragment with offset zero. False for unfragmented packets.
        first_fragment: bool,
    },
}

impl Ip {
    /// Whether this packet is an IP fragment (first or later).
    pub fn is_fragment(&self) -> bool {
        match *self {
            Ip::V4 { fragment, .. } | Ip::V6 { fragment, .. } => fragment,
        }
    }

    /// Length of the whole IP packet according to its header.
    pub fn packet_len(&self) -> usize {
        match *self {
            Ip::V4 { total_len, .. } => total_len,
            Ip::V6 { payload_len, .. } => IPV6_HEADER_LEN + payload_len,
        }
    }
}

/// The L4 header of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L4 {
    /// IP protocol number (for IPv6 the upper-layer next header value).
    pub proto: u8,
    /// Frame offset of the L4 header.
    pub offset: usize,
    /// TCP data offset × 4, UDP 8, ICMP / ICMPv6 8, any other protocol 0.
    pub header_len: usize,
    /// `offset + header_len`.
    pub payload_offset: usize,
    /// Payload bytes, bounded by the captured bytes and by the IP length.
    pub payload_len: usize,
}

impl L4 {
    /// One past the last payload byte in the frame.
    pub fn end(&self) -> usize {
        self.payload_offset + self.payload_len
    }
}

impl Layers {
    /// Frame offset one past the last byte of the IP packet according to
    /// its length field (may exceed the frame length for a snaplen-cut
    /// frame). `None` without an IP header.
    pub fn ip_end(&self) -> Option<usize> {
        self.ip.map(|ip| self.l3_offset + ip.packet_len())
    }
}

/// Locates the headers of an Ethernet frame. Never panics: on short or
/// garbage input it stops at what it can parse.
pub fn parse_layers(frame: &[u8]) -> Layers {
    parse_full(frame).0
}

/// The layers of `frame` and, for an IPv6 fragment, where its fragment
/// header is and the byte naming it (the fixed header's next header
/// field, or the first byte of the extension header before it): what a
/// receiver needs to put fragments back together.
pub fn parse_with_fragment_header(frame: &[u8]) -> (Layers, Option<(usize, usize)>) {
    let (layers, extra) = parse_full(frame);
    (layers, extra.frag_header)
}

/// Crate-private facts found by the same walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extra {
    /// Destination address the L4 pseudo header must use: the IP header's
    /// one, or the final hop of a source route / routing header. `None`
    /// when it cannot be known (an unsupported IPv6 routing header type
    /// with segments left).
    pub final_dst: Option<FinalDst>,
    /// An IPv6 jumbogram (payload length 0 with a Jumbo Payload option).
    pub jumbo: bool,
    /// For fragments: the protocol the fragments carry (IPv4 protocol field,
    /// or the next header field of the IPv6 fragment header).
    pub frag_proto: Option<u8>,
    /// For IPv6 fragments: the offset of the fragment header, and of the
    /// byte naming it (the fixed header's next header field, or the first
    /// byte of the extension header before it).
    pub frag_header: Option<(usize, usize)>,
    /// The IP header sits behind MPLS labels (the outer Ethernet header
    /// is not its own).
    pub mpls: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinalDst {
    V4([u8; 4]),
    V6([u8; 16]),
}

pub(crate) fn be16(frame: &[u8], at: usize) -> Option<u16> {
    match frame.get(at..at.checked_add(2)?)? {
        &[a, b] => Some(u16::from_be_bytes([a, b])),
        _ => None,
    }
}

fn be32(frame: &[u8], at: usize) -> Option<u32> {
    let b = frame.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn addr<const N: usize>(frame: &[u8], at: usize) -> Option<[u8; N]> {
    frame.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// Walks the Ethernet header, VLAN tags and MPLS label stacks: (l3
/// offset, ethertype). After the bottom label the payload's first nibble
/// tells IPv4 (4) or IPv6 (6); 0 is a pseudowire control word followed by
/// an Ethernet frame, which is walked in turn (as tcpreplay does). Other
/// payloads stop the walk with the MPLS ethertype.
fn ethernet(frame: &[u8]) -> (usize, u16, bool) {
    let Some(mut ethertype) = be16(frame, 12) else {
        return (frame.len(), 0, false);
    };
    let mut off = ETH_HEADER_LEN;
    let mut mpls = false;
    loop {
        if VLAN_TPIDS.contains(&ethertype) {
            match be16(frame, off + 2) {
                Some(inner) => {
                    ethertype = inner;
                    off += 4;
                    continue;
                }
                None => break,
            }
        }
        if !MPLS_TYPES.contains(&ethertype) {
            break;
        }
        let mut at = off;
        let bottom = loop {
            match frame.get(at..at + 4) {
                Some(l) if l[2] & 1 == 1 => break Some(at + 4),
                Some(_) => at += 4,
                None => break None,
            }
        };
        let Some(payload) = bottom else { break };
        match frame.get(payload).map(|b| b >> 4) {
            Some(4) => return (payload, ETHERTYPE_IPV4, true),
            Some(6) => return (payload, ETHERTYPE_IPV6, true),
            Some(0) => match be16(frame, payload + 4 + 12) {
                Some(inner) => {
                    ethertype = inner;
                    off = payload + 4 + ETH_HEADER_LEN;
                    mpls = true;
                }
                None => break,
            },
            _ => break,
        }
    }
    (off, ethertype, mpls)
}

pub(crate) fn parse_full(frame: &[u8]) -> (Layers, Extra) {
    let (l3_offset, ethertype, mpls) = ethernet(frame);
    let mut layers = Layers {
        l3_offset,
        ethertype,
        ip: None,
        l4: None,
    };
    let mut extra = Extra {
        final_dst: None,
        jumbo: false,
        frag_proto: None,
        frag_header: None,
        mpls,
    };
    match ethertype {
        ETHERTYPE_IPV4 => parse_ipv4(frame, &mut layers, &mut extra),
        ETHERTYPE_IPV6 => parse_ipv6(frame, &mut layers, &mut extra),
        _ => {}
    }
    (layers, extra)
}

fn parse_ipv4(frame: &[u8], layers: &mut Layers, extra: &mut Extra) {
    let l3 = layers.l3_offset;
    let Some(&vihl) = frame.get(l3) else { return };
    let header_len = usize::from(vihl & 0x0f) * 4;
    if vihl >> 4 != 4 || header_len < 20 || frame.len() < l3 + header_len {
        return;
    }
    let header = &frame[l3..l3 + header_len];
    let total_len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    let flags_frag = u16::from_be_bytes([header[6], header[7]]);
    let frag_offset = flags_frag & 0x1fff;
    let fragment = flags_frag & 0x2000 != 0 || frag_offset != 0;
    let proto = header[9];
    layers.ip = Some(Ip::V4 {
        header_len,
        total_len,
        fragment,
        first_fragment: fragment && frag_offset == 0,
    });
    extra.final_dst = Some(FinalDst::V4(ipv4_final_dst(header)));
    if fragment {
        extra.frag_proto = Some(proto);
    }
    if frag_offset == 0 {
        layers.l4 = l4_at(frame, proto, l3 + header_len, l3 + total_len, false);
    }
}

/// The destination the TCP/UDP pseudo header uses: the last address of an
/// unfinished loose or strict source route option (RFC 791), otherwise the
/// header's destination.
fn ipv4_final_dst(header: &[u8]) -> [u8; 4] {
    let mut dst = [header[16], header[17], header[18], header[19]];
    let mut i = 20;
    while i < header.len() {
        let kind = header[i];
        match kind {
            0 => break,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = header.get(i + 1) else { break };
        let len = usize::from(len);
        if len < 2 || i + len > header.len() {
            break;
        }
        // LSRR (0x83) / SSRR (0x89): type, length, pointer, addresses.
        if (kind == 0x83 || kind == 0x89) && len >= 7 {
            let pointer = usize::from(header[i + 2]);
            let n = (len - 3) / 4;
            if n > 0 && pointer <= len {
                let last = i + 3 + (n - 1) * 4;
                dst.copy_from_slice(&header[last..last + 4]);
            }
        }
        i += len;
    }
    dst
}

fn parse_ipv6(frame: &[u8], layers: &mut Layers, extra: &mut Extra) {
    let l3 = layers.l3_offset;
    let Some(fixed) = frame.get(l3..l3 + IPV6_HEADER_LEN) else {
        return;
    };
    if fixed[0] >> 4 != 6 {
        return;
    }
    let mut payload_len = usize::from(u16::from_be_bytes([fixed[4], fixed[5]]));
    let mut next = fixed[6];
    let mut final_dst = addr::<16>(fixed, 24);
    let mut off = l3 + IPV6_HEADER_LEN;
    let mut naming = l3 + 6;
    let mut fragment = false;
    let mut first_fragment = false;
    let mut known = false;
    let mut upper = None;
    loop {
        let len = match next {
            NH_HOP_BY_HOP | NH_ROUTING | NH_DEST_OPTS => {
                frame.get(off + 1).map(|&l| (usize::from(l) + 1) * 8)
            }
            NH_AH => frame.get(off + 1).map(|&l| (usize::from(l) + 2) * 4),
            NH_FRAGMENT => Some(8),
            NH_NO_NEXT => {
                known = true;
                break;
            }
            proto => {
                known = true;
                upper = Some(proto);
                break;
            }
        };
        let Some(len) = len.filter(|&l| off + l <= frame.len()) else {
            break;
        };
        let ext = &frame[off..off + len];
        match next {
            NH_HOP_BY_HOP if payload_len == 0 => {
                if let Some(j) = jumbo_len(ext) {
                    payload_len = j;
                    extra.jumbo = true;
                }
            }
            NH_ROUTING if ext[3] > 0 => final_dst = routing_final_dst(ext),
            NH_FRAGMENT => {
                let fo = u16::from_be_bytes([ext[2], ext[3]]);
                let offset = fo >> 3;
                if offset != 0 || fo & 1 != 0 {
                    fragment = true;
                    first_fragment = offset == 0;
                    extra.frag_proto = Some(ext[0]);
                    extra.frag_header = Some((off, naming));
                }
                if offset != 0 {
                    // A later fragment: what follows is fragment data.
                    break;
                }
            }
            _ => {}
        }
        next = ext[0];
        naming = off;
        off += len;
    }
    layers.ip = Some(Ip::V6 {
        payload_len,
        l4_proto_offset_known: known,
        fragment,
        first_fragment,
    });
    extra.final_dst = final_dst.map(FinalDst::V6);
    if let Some(proto) = upper {
        layers.l4 = l4_at(frame, proto, off, l3 + IPV6_HEADER_LEN + payload_len, true);
    }
}

/// The Jumbo Payload option (type 0xc2, RFC 2675) of a hop-by-hop header.
fn jumbo_len(ext: &[u8]) -> Option<usize> {
    let mut i = 2;
    while i < ext.len() {
        match ext[i] {
            0 => i += 1,
            kind => {
                let len = usize::from(*ext.get(i + 1)?);
                if kind == 0xc2 && len == 4 {
                    return be32(ext, i + 2).map(|v| v as usize);
                }
                i += 2 + len;
            }
        }
    }
    None
}

/// The final destination named by a routing header with segments left:
/// type 0 (RFC 2460) and type 2 (RFC 6275) list it last, a segment routing
/// header (type 4, RFC 8754) first. Other types (e.g. RPL's compressed
/// type 3) are not decoded: `None`.
fn routing_final_dst(ext: &[u8]) -> Option<[u8; 16]> {
    match ext[2] {
        0 | 2 => {
            let n = (ext.len() - 8) / 16;
            if n == 0 {
                return None;
            }
            addr::<16>(ext, 8 + (n - 1) * 16)
        }
        4 => addr::<16>(ext, 8),
        _ => None,
    }
}

/// The L4 header at `offset`, bounded by the captured bytes and `ip_end`.
fn l4_at(frame: &[u8], proto: u8, offset: usize, ip_end: usize, v6: bool) -> Option<L4> {
    let end = frame.len().min(ip_end);
    let avail = end.checked_sub(offset)?;
    let header_len = match (proto, v6) {
        (PROTO_TCP, _) => {
            let doff = usize::from(*frame.get(offset + 12)? >> 4) * 4;
            if doff < 20 || doff > avail {
                return None;
            }
            doff
        }
        (PROTO_UDP, _) | (PROTO_ICMP, false) | (PROTO_ICMPV6, true) => {
            if avail < 8 {
                return None;
            }
            8
        }
        _ => 0,
    };
    Some(L4 {
        proto,
        offset,
        header_len,
        payload_offset: offset + header_len,
        payload_len: avail - header_len,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A DNS query over UDP/IPv4 with an EDNS OPT record: tcpdump's
    /// `dns_udp.pcap`, frame 1 (checksums valid), 192.168.1.11:43966 ->
    /// 209.87.249.18:53.
    pub(crate) fn udp4_frame() -> Vec<u8> {
        hex("0011 2233 4466 0011 2233 4455 0800 4500 \
             0054 59cd 0000 4011 94ae c0a8 010b d157 \
             f912 abbe 0035 0040 7824 5934 0120 0001 \
             0000 0000 0001 0377 7777 0774 6370 6475 \
             6d70 036f 7267 0000 0100 0100 0029 1000 \
             0000 0000 000c 000a 0008 42f5 d009 96f9 \
             0b13")
    }

    /// Hex string (whitespace ignored) to bytes.
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
        assert_eq!(digits.len() % 2, 0, "odd number of hex digits");
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    /// A TCP/IPv6 SYN-ACK with MSS, SACK-permitted and window-scale
    /// options (32-byte TCP header, no payload): tcpreplay's `test.pcap`,
    /// frame 30 (checksum valid), [2606:4700::6812:69c]:80 ->
    /// [2001:4958:15a0:24:c1b3:b766:7fff:d0b3]:43250.
    pub(crate) fn tcp6_frame() -> Vec<u8> {
        hex("ac1f 6bac 27da 943f c2d3 52bd 86dd 600d \
             0899 0020 0638 2606 4700 0000 0000 0000 \
             0000 6812 069c 2001 4958 15a0 0024 c1b3 \
             b766 7fff d0b3 0050 a8f2 7d79 2949 6e21 \
             0cf8 8012 ffff 7fa4 0000 0204 0550 0101 \
             0402 0103 030a")
    }

    #[test]
    fn udp_ipv4() {
        let f = udp4_frame();
        let l = parse_layers(&f);
        assert_eq!(l.l3_offset, 14);
        assert_eq!(l.ethertype, 0x0800);
        assert_eq!(
            l.ip,
            Some(Ip::V4 {
                header_len: 20,
                total_len: 84,
                fragment: false,
                first_fragment: false
            })
        );
        let l4 = l.l4.unwrap();
        assert_eq!((l4.proto, l4.offset, l4.header_len), (17, 34, 8));
        assert_eq!((l4.payload_offset, l4.payload_len), (42, 56));
        assert_eq!(l4.end(), f.len());
        assert_eq!(l.ip_end(), Some(f.len()));
    }

    #[test]
    fn ethernet_padding_is_not_payload() {
        let mut f = udp4_frame();
        f.extend_from_slice(&[0xee; 6]);
        let l4 = parse_layers(&f).l4.unwrap();
        assert_eq!(l4.payload_len, 56);
        assert_eq!(l4.end(), f.len() - 6);
    }

    #[test]
    fn snaplen_cut_bounds_payload_by_captured_bytes() {
        let f = udp4_frame();
        let l = parse_layers(&f[..50]);
        assert_eq!(l.ip_end(), Some(98));
        assert_eq!(l.l4.unwrap().payload_len, 8);
        // Cut inside the UDP header: no L4.
        assert_eq!(parse_layers(&f[..40]).l4, None);
        // Cut inside the IP header: no IP.
        let l = parse_layers(&f[..30]);
        assert_eq!((l.ethertype, l.ip, l.l4), (0x0800, None, None));
    }

    #[test]
    fn tcp_ipv6() {
        let f = tcp6_frame();
        let l = parse_layers(&f);
        assert_eq!(
            l.ip,
            Some(Ip::V6 {
                payload_len: 32,
                l4_proto_offset_known: true,
                fragment: false,
                first_fragment: false
            })
        );
        let l4 = l.l4.unwrap();
        assert_eq!(
            (l4.proto, l4.offset, l4.header_len, l4.payload_len),
            (6, 54, 32, 0)
        );
    }

    #[test]
    fn vlan_and_qinq() {
        let plain = udp4_frame();
        for tpids in [
            &[0x8100u16][..],
            &[0x88a8, 0x8100],
            &[0x9100, 0x9200, 0x8100],
        ] {
            let mut f = plain[..12].to_vec();
            for (i, tpid) in tpids.iter().enumerate() {
                f.extend_from_slice(&tpid.to_be_bytes());
                f.extend_from_slice(&(100 + i as u16).to_be_bytes());
            }
            f.extend_from_slice(&plain[12..]);
            let l = parse_layers(&f);
            assert_eq!(l.l3_offset, 14 + 4 * tpids.len());
            assert_eq!(l.ethertype, 0x0800);
            let l4 = l.l4.unwrap();
            assert_eq!(l4.offset, l.l3_offset + 20);
            assert_eq!(l4.payload_len, 56);
        }
        // A tag cut in the middle stops at the tag.
        let f = [&plain[..12], &[0x81, 0x00, 0x00]].concat();
        let l = parse_layers(&f);
        assert_eq!((l.l3_offset, l.ethertype, l.ip), (14, 0x8100, None));
    }

    #[test]
    fn ipv4_options_and_fragments() {
        let mut f = udp4_frame();
        // Insert 4 bytes of options (NOP NOP NOP EOL): IHL 6.
        f.splice(34..34, [1, 1, 1, 0]);
        f[14] = 0x46;
        f[17] += 4;
        let l = parse_layers(&f);
        assert!(matches!(
            l.ip,
            Some(Ip::V4 {
                header_len: 24,
                total_len: 88,
                ..
            })
        ));
        assert_eq!(l.l4.unwrap().offset, 38);

        // First fragment (MF): L4 parsed, flagged as a fragment.
        let mut first = udp4_frame();
        first[20] = 0x20;
        first[21] = 0;
        let l = parse_layers(&first);
        assert!(matches!(
            l.ip,
            Some(Ip::V4 {
                fragment: true,
                first_fragment: true,
                ..
            })
        ));
        assert!(l.l4.is_some());
        // Later fragment: no L4.
        let mut later = udp4_frame();
        later[20] = 0x00;
        later[21] = 0x03;
        let l = parse_layers(&later);
        assert!(matches!(
            l.ip,
            Some(Ip::V4 {
                fragment: true,
                first_fragment: false,
                ..
            })
        ));
        assert_eq!(l.l4, None);
        assert_eq!(parse_full(&later).1.frag_proto, Some(17));
    }

    #[test]
    fn ipv4_source_route_final_destination() {
        // LSRR with two addresses, pointer at the first: the final
        // destination is the last address.
        let mut h = udp4_frame()[14..34].to_vec();
        h.extend_from_slice(&[1, 0x83, 11, 4, 10, 0, 0, 1, 10, 0, 0, 9]);
        h[0] = 0x48;
        assert_eq!(ipv4_final_dst(&h), [10, 0, 0, 9]);
        // Route complete (pointer past the end): the header's destination.
        h[23] = 12;
        assert_eq!(ipv4_final_dst(&h), [209, 87, 249, 18]);
    }

    #[test]
    fn ipv6_extension_headers() {
        let base = tcp6_frame();
        // Hop-by-hop (8 bytes: next=60, len 0, PadN 4) then destination
        // options (8 bytes: next=6, len 0, PadN 4), then TCP.
        let mut f = base[..54].to_vec();
        f.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        f.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        f.extend_from_slice(&base[54..]);
        f[20] = 0;
        f[19] = 32 + 16;
        let l = parse_layers(&f);
        assert!(matches!(
            l.ip,
            Some(Ip::V6 {
                payload_len: 48,
                l4_proto_offset_known: true,
                ..
            })
        ));
        let l4 = l.l4.unwrap();
        assert_eq!((l4.proto, l4.offset, l4.header_len), (6, 70, 32));

        // AH (payload len 4 -> (4+2)*4 = 24 bytes) in front of TCP.
        let mut f = base[..54].to_vec();
        let mut ah = vec![6, 4, 0, 0];
        ah.resize(24, 0xaa);
        f.extend_from_slice(&ah);
        f.extend_from_slice(&base[54..]);
        f[20] = 51;
        f[19] = 32 + 24;
        assert_eq!(parse_layers(&f).l4.unwrap().offset, 78);

        // Chain cut short: upper layer unknown.
        let l = parse_layers(&f[..60]);
        assert!(matches!(
            l.ip,
            Some(Ip::V6 {
                l4_proto_offset_known: false,
                ..
            })
        ));
        assert_eq!(l.l4, None);
    }

    #[test]
    fn ipv6_fragments() {
        let base = tcp6_frame();
        let with_frag = |fo: u16| {
            let mut f = base[..54].to_vec();
            f.extend_from_slice(&[6, 0]);
            f.extend_from_slice(&fo.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 7]);
            f.extend_from_slice(&base[54..]);
            f[20] = 44;
            f[19] = 32 + 8;
            f
        };
        // First fragment (offset 0, M set).
        let l = parse_layers(&with_frag(1));
        assert!(matches!(
            l.ip,
            Some(Ip::V6 {
                fragment: true,
                first_fragment: true,
                ..
            })
        ));
        assert_eq!(l.l4.unwrap().offset, 62);
        // Later fragment (offset 8 units).
        let f = with_frag(8 << 3);
        let (l, x) = parse_full(&f);
        assert!(matches!(
            l.ip,
            Some(Ip::V6 {
                fragment: true,
                first_fragment: false,
                l4_proto_offset_known: false,
                ..
            })
        ));
        assert_eq!((l.l4, x.frag_proto), (None, Some(6)));
        // Atomic fragment: not a fragment.
        let l = parse_layers(&with_frag(0));
        assert!(matches!(
            l.ip,
            Some(Ip::V6 {
                fragment: false,
                first_fragment: false,
                ..
            })
        ));
        assert_eq!(l.l4.unwrap().proto, 6);
    }

    #[test]
    fn ipv6_routing_header_final_destination() {
        let base = tcp6_frame();
        // Type 0, one address (ff02::99), segments left 1.
        let mut f = base[..54].to_vec();
        f.extend_from_slice(&[6, 2, 0, 1, 0, 0, 0, 0]);
        let mut a = [0u8; 16];
        a[0] = 0xff;
        a[1] = 0x02;
        a[15] = 0x99;
        f.extend_from_slice(&a);
        f.extend_from_slice(&base[54..]);
        f[20] = 43;
        f[19] = 32 + 24;
        let (l, x) = parse_full(&f);
        assert_eq!(l.l4.unwrap().offset, 78);
        assert_eq!(x.final_dst, Some(FinalDst::V6(a)));
        // Segments left 0: the header's destination.
        f[57] = 0;
        assert_eq!(
            parse_full(&f).1.final_dst,
            Some(FinalDst::V6(base[38..54].try_into().unwrap()))
        );
        // Unknown routing type with segments left: unknown.
        f[56] = 3;
        f[57] = 1;
        assert_eq!(parse_full(&f).1.final_dst, None);
    }

    #[test]
    fn icmp_and_other_protocols() {
        let mut f = udp4_frame();
        f[23] = 1; // ICMP
        let l4 = parse_layers(&f).l4.unwrap();
        assert_eq!((l4.proto, l4.header_len, l4.payload_len), (1, 8, 56));
        f[23] = 47; // GRE: whole IP payload
        let l4 = parse_layers(&f).l4.unwrap();
        assert_eq!(
            (l4.proto, l4.header_len, l4.payload_offset, l4.payload_len),
            (47, 0, 34, 64)
        );
        f[23] = 58; // ICMPv6 inside IPv4 is not ICMPv6
        assert_eq!(parse_layers(&f).l4.unwrap().header_len, 0);
    }

    #[test]
    fn non_ip_and_garbage_never_panic() {
        assert_eq!(
            parse_layers(&[]),
            Layers {
                l3_offset: 0,
                ethertype: 0,
                ip: None,
                l4: None
            }
        );
        assert_eq!(parse_layers(&[0; 13]).ethertype, 0);
        let arp = hex("ffff ffff ffff 0200 0000 0001 0806 0001 0800 0604 0001");
        let l = parse_layers(&arp);
        assert_eq!((l.l3_offset, l.ethertype, l.ip), (14, 0x0806, None));
        // Deterministic pseudo-random garbage with IP ethertypes.
        let mut x: u32 = 12345;
        for n in 0..4000usize {
            let mut f: Vec<u8> = (0..n % 200)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            if f.len() > 15 {
                let et: u16 = [0x0800, 0x86dd, 0x8100][n % 3];
                f[12..14].copy_from_slice(&et.to_be_bytes());
                f[14] = [0x45, 0x4f, 0x60, 0x41][n % 4];
            }
            let (l, _) = parse_full(&f);
            if let Some(l4) = l.l4 {
                assert!(l4.end() <= f.len());
            }
        }
    }
}
