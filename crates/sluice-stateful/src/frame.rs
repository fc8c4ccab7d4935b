//! The frames a stateful host reads and writes: Ethernet II carrying ARP,
//! or IPv4 carrying TCP or UDP. Parsing never panics on any input (a
//! frame too short or inconsistent is `Malformed`); building writes whole
//! frames with their checksums.
//!
//! L4 checksums of received frames are not verified: on veth and with
//! checksum offload the kernel hands a frame over before its checksum is
//! filled in (`TP_STATUS_CSUMNOTREADY`), and such a link does not corrupt.

use sluice_wire::checksum::{fold, ipv4_header_checksum, sum16};

pub const ETH_LEN: usize = 14;
pub const IPV4_LEN: usize = 20;
pub const TCP_LEN: usize = 20;
pub const UDP_LEN: usize = 8;
/// TCP header with the SYN options this stack sends: MSS (4), NOP and
/// window scale (4).
pub const TCP_SYN_LEN: usize = TCP_LEN + 8;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// A SYN's window scale when the option is left out (NOPs in its place).
pub const NO_WSCALE: u8 = 0xff;

pub type Mac = [u8; 6];
pub const BROADCAST: Mac = [0xff; 6];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp {
    pub op: u16,
    pub sha: Mac,
    pub spa: u32,
    pub tpa: u32,
}

#[derive(Debug, Clone, Copy)]
pub struct TcpSeg<'a> {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub wnd: u16,
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub payload: &'a [u8],
}

#[derive(Debug, Clone, Copy)]
pub struct UdpDgram<'a> {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub payload: &'a [u8],
}

#[derive(Debug)]
pub enum Parsed<'a> {
    Arp(Arp),
    Tcp(TcpSeg<'a>),
    Udp(UdpDgram<'a>),
    /// Well formed, but nothing a stateful host answers (IPv6, ICMP, ...).
    Other,
    /// Too short, a bad IPv4 header, a fragment, lengths that disagree.
    Malformed,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads one frame.
pub fn parse(f: &[u8]) -> Parsed<'_> {
    if f.len() < ETH_LEN {
        return Parsed::Malformed;
    }
    match be16(f, 12) {
        0x0806 => parse_arp(&f[ETH_LEN..]),
        0x0800 => parse_ipv4(&f[ETH_LEN..]),
        _ => Parsed::Other,
    }
}

fn parse_arp(a: &[u8]) -> Parsed<'_> {
    // Ethernet/IPv4 ARP only: htype 1, ptype 0x0800, hlen 6, plen 4.
    if a.len() < 28 || be16(a, 0) != 1 || be16(a, 2) != 0x0800 || a[4] != 6 || a[5] != 4 {
        return Parsed::Malformed;
    }
    let mut sha = [0u8; 6];
    sha.copy_from_slice(&a[8..14]);
    Parsed::Arp(Arp {
        op: be16(a, 6),
        sha,
        spa: be32(a, 14),
        tpa: be32(a, 24),
    })
}

fn parse_ipv4(ip: &[u8]) -> Parsed<'_> {
    if ip.len() < IPV4_LEN || ip[0] >> 4 != 4 {
        return Parsed::Malformed;
    }
    let ihl = usize::from(ip[0] & 0xf) * 4;
    let total = usize::from(be16(ip, 2));
    if ihl < IPV4_LEN || total < ihl || total > ip.len() {
        return Parsed::Malformed;
    }
    if fold(sum16(&ip[..ihl], 0)) != 0 {
        return Parsed::Malformed;
    }
    // A fragment (MF set or an offset) is not reassembled here.
    if be16(ip, 6) & 0x3fff != 0 {
        return Parsed::Malformed;
    }
    let (src, dst) = (be32(ip, 12), be32(ip, 16));
    let l4 = &ip[ihl..total];
    match ip[9] {
        6 => parse_tcp(src, dst, l4),
        17 => {
            if l4.len() < UDP_LEN || usize::from(be16(l4, 4)) != l4.len() {
                return Parsed::Malformed;
            }
            Parsed::Udp(UdpDgram {
                src,
                dst,
                sport: be16(l4, 0),
                dport: be16(l4, 2),
                payload: &l4[UDP_LEN..],
            })
        }
        _ => Parsed::Other,
    }
}

fn parse_tcp(src: u32, dst: u32, t: &[u8]) -> Parsed<'_> {
    if t.len() < TCP_LEN {
        return Parsed::Malformed;
    }
    let off = usize::from(t[12] >> 4) * 4;
    if off < TCP_LEN || off > t.len() {
        return Parsed::Malformed;
    }
    let (mut mss, mut wscale) = (None, None);
    let mut o = &t[TCP_LEN..off];
    while let Some(&kind) = o.first() {
        match kind {
            0 => break,
            1 => o = &o[1..],
            _ => {
                let Some(&len) = o.get(1) else {
                    return Parsed::Malformed;
                };
                let len = usize::from(len);
                if len < 2 || len > o.len() {
                    return Parsed::Malformed;
                }
                match (kind, len) {
                    (2, 4) => mss = Some(be16(o, 2)),
                    (3, 3) => wscale = Some(o[2].min(14)),
                    _ => {}
                }
                o = &o[len..];
            }
        }
    }
    Parsed::Tcp(TcpSeg {
        src,
        dst,
        sport: be16(t, 0),
        dport: be16(t, 2),
        seq: be32(t, 4),
        ack: be32(t, 8),
        flags: t[13] & 0x3f,
        wnd: be16(t, 14),
        mss,
        wscale,
        payload: &t[off..],
    })
}

/// Addresses of a frame to write.
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
}

/// The TCP header fields of a segment to write.
#[derive(Debug, Clone, Copy)]
pub struct TcpHead {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub wnd: u16,
    /// MSS and window scale ([`NO_WSCALE`]: none), on a SYN.
    pub syn_opts: Option<(u16, u8)>,
}

fn eth(out: &mut [u8], e: &Ends, ethertype: u16) {
    out[0..6].copy_from_slice(&e.dst_mac);
    out[6..12].copy_from_slice(&e.src_mac);
    out[12..14].copy_from_slice(&ethertype.to_be_bytes());
}

fn ipv4(out: &mut [u8], e: &Ends, proto: u8, l4_len: usize, id: u16) {
    let total = (IPV4_LEN + l4_len) as u16;
    out[0] = 0x45;
    out[1] = 0;
    out[2..4].copy_from_slice(&total.to_be_bytes());
    out[4..6].copy_from_slice(&id.to_be_bytes());
    out[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
    out[8] = 64;
    out[9] = proto;
    out[10..12].fill(0);
    out[12..16].copy_from_slice(&e.src.to_be_bytes());
    out[16..20].copy_from_slice(&e.dst.to_be_bytes());
    let c = ipv4_header_checksum(&out[..IPV4_LEN]);
    out[10..12].copy_from_slice(&c.to_be_bytes());
}

fn pseudo(e: &Ends, proto: u8, len: usize) -> u32 {
    let mut p = [0u8; 12];
    p[0..4].copy_from_slice(&e.src.to_be_bytes());
    p[4..8].copy_from_slice(&e.dst.to_be_bytes());
    p[9] = proto;
    p[10..12].copy_from_slice(&(len as u16).to_be_bytes());
    sum16(&p, 0)
}

/// Appends a TCP segment to `out` with `payload_len` bytes that `fill`
/// writes; returns the frame's length.
pub fn push_tcp(
    out: &mut Vec<u8>,
    e: &Ends,
    h: &TcpHead,
    id: u16,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> usize {
    let hlen = if h.syn_opts.is_some() {
        TCP_SYN_LEN
    } else {
        TCP_LEN
    };
    let l4 = hlen + payload_len;
    let t = push_ipv4(out, e, 6, l4, id);
    t[0..2].copy_from_slice(&e.sport.to_be_bytes());
    t[2..4].copy_from_slice(&e.dport.to_be_bytes());
    t[4..8].copy_from_slice(&h.seq.to_be_bytes());
    t[8..12].copy_from_slice(&h.ack.to_be_bytes());
    t[12] = ((hlen / 4) as u8) << 4;
    t[13] = h.flags;
    t[14..16].copy_from_slice(&h.wnd.to_be_bytes());
    t[16..20].fill(0);
    if let Some((mss, ws)) = h.syn_opts {
        t[20] = 2;
        t[21] = 4;
        t[22..24].copy_from_slice(&mss.to_be_bytes());
        if ws == NO_WSCALE {
            t[24..28].fill(1);
        } else {
            t[24] = 1;
            t[25] = 3;
            t[26] = 3;
            t[27] = ws;
        }
    }
    fill(&mut t[hlen..]);
    let c = fold(sum16(t, pseudo(e, 6, l4)));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    ETH_LEN + IPV4_LEN + l4
}

/// Appends an Ethernet and IPv4 header for `l4` bytes of protocol
/// `proto` to `out`, and room for them; returns that room.
fn push_ipv4<'a>(out: &'a mut Vec<u8>, e: &Ends, proto: u8, l4: usize, id: u16) -> &'a mut [u8] {
    let start = out.len();
    out.resize(start + ETH_LEN + IPV4_LEN + l4, 0);
    let f = &mut out[start..];
    eth(f, e, 0x0800);
    ipv4(&mut f[ETH_LEN..], e, proto, l4, id);
    &mut f[ETH_LEN + IPV4_LEN..]
}

/// Appends a UDP datagram to `out`; returns the frame's length.
pub fn push_udp(
    out: &mut Vec<u8>,
    e: &Ends,
    id: u16,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> usize {
    let l4 = UDP_LEN + payload_len;
    let u = push_ipv4(out, e, 17, l4, id);
    u[0..2].copy_from_slice(&e.sport.to_be_bytes());
    u[2..4].copy_from_slice(&e.dport.to_be_bytes());
    u[4..6].copy_from_slice(&(l4 as u16).to_be_bytes());
    u[6..8].fill(0);
    fill(&mut u[UDP_LEN..]);
    let mut c = fold(sum16(u, pseudo(e, 17, l4)));
    if c == 0 {
        c = 0xffff;
    }
    u[6..8].copy_from_slice(&c.to_be_bytes());
    ETH_LEN + IPV4_LEN + l4
}

/// Appends an ARP request (`op` 1) or reply (2) to `out`.
pub fn push_arp(out: &mut Vec<u8>, op: u16, sha: Mac, spa: u32, tha: Mac, tpa: u32) -> usize {
    let start = out.len();
    out.resize(start + ETH_LEN + 28, 0);
    let f = &mut out[start..];
    let dst = if op == 1 { BROADCAST } else { tha };
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&sha);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    let a = &mut f[ETH_LEN..];
    a[0..2].copy_from_slice(&1u16.to_be_bytes());
    a[2..4].copy_from_slice(&0x0800u16.to_be_bytes());
    a[4] = 6;
    a[5] = 4;
    a[6..8].copy_from_slice(&op.to_be_bytes());
    a[8..14].copy_from_slice(&sha);
    a[14..18].copy_from_slice(&spa.to_be_bytes());
    a[18..24].copy_from_slice(&if op == 1 { [0; 6] } else { tha });
    a[24..28].copy_from_slice(&tpa.to_be_bytes());
    ETH_LEN + 28
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends() -> Ends {
        Ends {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: 0x0a00_0001,
            dst: 0x0a00_0002,
            sport: 40000,
            dport: 80,
        }
    }

    #[test]
    fn a_syn_reads_back_with_its_options_and_a_valid_checksum() {
        let mut out = Vec::new();
        let h = TcpHead {
            seq: 7,
            ack: 0,
            flags: SYN,
            wnd: 65535,
            syn_opts: Some((1460, 7)),
        };
        let n = push_tcp(&mut out, &ends(), &h, 1, 0, |_| {});
        assert_eq!(n, out.len());
        let Parsed::Tcp(t) = parse(&out) else {
            panic!("not tcp")
        };
        assert_eq!(
            (t.seq, t.flags, t.mss, t.wscale),
            (7, SYN, Some(1460), Some(7))
        );
        assert_eq!(
            (t.sport, t.dport, t.src, t.dst),
            (40000, 80, 0x0a00_0001, 0x0a00_0002)
        );
        // The TCP checksum over the pseudo header verifies to zero.
        let t = &out[ETH_LEN + IPV4_LEN..];
        assert_eq!(fold(sum16(t, pseudo(&ends(), 6, t.len()))), 0);
    }

    #[test]
    fn a_udp_datagram_and_an_arp_reply_read_back() {
        let mut out = Vec::new();
        push_udp(&mut out, &ends(), 3, 5, |p| p.copy_from_slice(b"hello"));
        let Parsed::Udp(u) = parse(&out) else {
            panic!("not udp")
        };
        assert_eq!(u.payload, b"hello");
        let mut a = Vec::new();
        push_arp(&mut a, 2, [2; 6], 1, [3; 6], 2);
        match parse(&a) {
            Parsed::Arp(arp) => assert_eq!((arp.op, arp.sha, arp.spa, arp.tpa), (2, [2; 6], 1, 2)),
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn every_truncation_of_a_segment_parses_without_panic() {
        let mut out = Vec::new();
        let h = TcpHead {
            seq: 1,
            ack: 2,
            flags: ACK | PSH,
            wnd: 100,
            syn_opts: Some((1000, 2)),
        };
        push_tcp(&mut out, &ends(), &h, 1, 30, |p| p.fill(b'x'));
        for n in 0..out.len() {
            let _ = parse(&out[..n]);
        }
        // Every single-byte corruption too.
        for i in 0..out.len() {
            let mut f = out.clone();
            f[i] ^= 0xff;
            let _ = parse(&f);
        }
    }
}
