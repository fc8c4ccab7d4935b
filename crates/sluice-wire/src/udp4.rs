//! Ethernet + IPv4 + UDP frames around a payload the caller owns, with IP
//! fragmentation by headers only.
//!
//! A [`Udp4Template`] holds the fixed fields of one flow (MACs, addresses,
//! ports, TTL); [`Udp4Template::fragments`] yields, for one datagram, a
//! header per fragment and the slice of the payload that follows it. The
//! payload is never copied here: the sink writes header and slice straight
//! into its own buffer (a ring slot, a pcap record).
//!
//! Checksums: the IPv4 header checksum of every fragment and the UDP
//! checksum over the whole datagram (pseudo header, UDP header, payload) are
//! computed, so a receiving kernel accepts the datagram on any path.

use crate::checksum::{fold, ipv4_header_checksum, pseudo_header_v4, sum16};
use crate::ethernet::MacAddr;

pub const ETH_LEN: usize = 14;
pub const IPV4_LEN: usize = 20;
pub const UDP_LEN: usize = 8;
/// Ethernet + IPv4 + UDP.
pub const HEADERS_LEN: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
/// Largest UDP payload of one IPv4 datagram (65535 − 20 − 8).
pub const MAX_PAYLOAD: usize = 65_507;

/// One UDP/IPv4 flow's addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Udp4Flow {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
}

#[derive(Clone, Debug)]
pub struct Udp4Template {
    /// Ethernet + IPv4 + UDP with every per-datagram field zero.
    head: [u8; HEADERS_LEN],
    /// Pseudo-header sum without the length (added per datagram).
    pseudo: u32,
    pub flow: Udp4Flow,
}

/// Why a datagram cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Udp4Error {
    #[error("UDP payload of {0} bytes exceeds the IPv4 maximum of 65507")]
    TooLong(usize),
    #[error("MTU {0} is below the IPv4 minimum of 68")]
    Mtu(usize),
}

impl Udp4Template {
    pub fn new(src_mac: MacAddr, dst_mac: MacAddr, flow: Udp4Flow, ttl: u8) -> Self {
        let mut h = [0u8; HEADERS_LEN];
        h[0..6].copy_from_slice(&dst_mac.0);
        h[6..12].copy_from_slice(&src_mac.0);
        h[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut h[ETH_LEN..ETH_LEN + IPV4_LEN];
        ip[0] = 0x45;
        ip[8] = ttl;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&flow.src_ip);
        ip[16..20].copy_from_slice(&flow.dst_ip);
        let udp = &mut h[ETH_LEN + IPV4_LEN..];
        udp[0..2].copy_from_slice(&flow.src_port.to_be_bytes());
        udp[2..4].copy_from_slice(&flow.dst_port.to_be_bytes());
        Udp4Template {
            head: h,
            pseudo: pseudo_header_v4(&flow.src_ip, &flow.dst_ip, 17, 0),
            flow,
        }
    }

    /// The fragments of one datagram carrying `payload`, for a link whose
    /// IP MTU is `mtu` (1500 on Ethernet). `ip_id` identifies the datagram
    /// among the flow's fragments (the receiver reassembles by it).
    pub fn fragments<'p>(
        &self,
        payload: &'p [u8],
        ip_id: u16,
        mtu: usize,
    ) -> Result<Fragments<'_, 'p>, Udp4Error> {
        if payload.len() > MAX_PAYLOAD {
            return Err(Udp4Error::TooLong(payload.len()));
        }
        if mtu < 68 {
            return Err(Udp4Error::Mtu(mtu));
        }
        let udp_len = (UDP_LEN + payload.len()) as u16;
        let mut udp = [0u8; UDP_LEN];
        udp.copy_from_slice(&self.head[ETH_LEN + IPV4_LEN..]);
        udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
        let sum = sum16(payload, sum16(&udp, self.pseudo + u32::from(udp_len)));
        let csum = match fold(sum) {
            0 => 0xffff, // RFC 768: a computed zero is sent as all ones
            c => c,
        };
        udp[6..8].copy_from_slice(&csum.to_be_bytes());
        Ok(Fragments {
            t: self,
            udp,
            payload,
            ip_id,
            // Fragment data is a multiple of 8 bytes, except the last.
            per_fragment: (mtu - IPV4_LEN) & !7,
            sent: 0,
            total: UDP_LEN + payload.len(),
            head: [0; HEADERS_LEN],
        })
    }
}

/// Iterator-like source of `(header, payload slice)` pairs; call
/// [`Fragments::next_fragment`] until it returns None.
pub struct Fragments<'t, 'p> {
    t: &'t Udp4Template,
    udp: [u8; UDP_LEN],
    payload: &'p [u8],
    ip_id: u16,
    per_fragment: usize,
    /// Bytes of the IP payload (UDP header + payload) already emitted.
    sent: usize,
    total: usize,
    head: [u8; HEADERS_LEN],
}

impl<'p> Fragments<'_, 'p> {
    /// Number of frames this datagram takes.
    pub fn count(&self) -> usize {
        self.total.div_ceil(self.per_fragment)
    }

    /// The next frame: its headers (Ethernet + IPv4, plus UDP in the first
    /// fragment) and the payload bytes that follow them.
    pub fn next_fragment(&mut self) -> Option<(&[u8], &'p [u8])> {
        if self.sent >= self.total {
            return None;
        }
        let first = self.sent == 0;
        let take = (self.total - self.sent).min(self.per_fragment);
        let last = self.sent + take == self.total;
        self.head.copy_from_slice(&self.t.head);
        let ip = &mut self.head[ETH_LEN..ETH_LEN + IPV4_LEN];
        ip[2..4].copy_from_slice(&((IPV4_LEN + take) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&self.ip_id.to_be_bytes());
        let mut frag = (self.sent / 8) as u16;
        if !last {
            frag |= 0x2000; // more fragments
        }
        ip[6..8].copy_from_slice(&frag.to_be_bytes());
        let csum = ipv4_header_checksum(ip);
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
        let (head_len, body) = if first {
            self.head[ETH_LEN + IPV4_LEN..].copy_from_slice(&self.udp);
            (HEADERS_LEN, &self.payload[..take - UDP_LEN])
        } else {
            let from = self.sent - UDP_LEN;
            (ETH_LEN + IPV4_LEN, &self.payload[from..from + take])
        };
        self.sent += take;
        Some((&self.head[..head_len], body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Udp4Template {
        Udp4Template::new(
            MacAddr([2, 0, 0, 0, 0, 1]),
            MacAddr([2, 0, 0, 0, 0, 2]),
            Udp4Flow {
                src_ip: [10, 0, 0, 1],
                dst_ip: [10, 0, 0, 2],
                src_port: 4000,
                dst_port: 5000,
            },
            64,
        )
    }

    fn frames(payload: &[u8], mtu: usize) -> Vec<Vec<u8>> {
        let t = template();
        let mut f = t.fragments(payload, 77, mtu).unwrap();
        let n = f.count();
        let mut out = Vec::new();
        while let Some((h, b)) = f.next_fragment() {
            out.push([h, b].concat());
        }
        assert_eq!(out.len(), n);
        out
    }

    #[test]
    fn small_datagram_is_one_valid_frame() {
        let out = frames(b"hello", 1500);
        assert_eq!(out.len(), 1);
        let f = &out[0];
        assert_eq!(f.len(), HEADERS_LEN + 5);
        let ip = &f[ETH_LEN..ETH_LEN + IPV4_LEN];
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 33);
        assert_eq!(fold(sum16(ip, 0)), 0, "IPv4 header checksum");
        // UDP checksum verifies over pseudo header + UDP header + payload.
        let udp = &f[ETH_LEN + IPV4_LEN..];
        let s = sum16(
            udp,
            pseudo_header_v4(&[10, 0, 0, 1], &[10, 0, 0, 2], 17, 13),
        );
        assert_eq!(fold(s), 0);
        assert_eq!(&udp[8..], b"hello");
    }

    #[test]
    fn large_datagram_fragments_on_8_byte_boundaries() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let out = frames(&payload, 1500);
        assert_eq!(out.len(), 3);
        let mut reassembled = Vec::new();
        for (i, f) in out.iter().enumerate() {
            let ip = &f[ETH_LEN..ETH_LEN + IPV4_LEN];
            assert_eq!(fold(sum16(ip, 0)), 0);
            assert!(f.len() - ETH_LEN <= 1500);
            let frag = u16::from_be_bytes([ip[6], ip[7]]);
            assert_eq!(frag & 0x2000 != 0, i < 2, "MF flag");
            assert_eq!(usize::from(frag & 0x1fff) * 8, reassembled.len());
            assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 77);
            reassembled.extend_from_slice(&f[ETH_LEN + IPV4_LEN..]);
        }
        assert_eq!(reassembled.len(), 3008);
        assert_eq!(&reassembled[8..], &payload[..]);
        let s = sum16(
            &reassembled,
            pseudo_header_v4(&[10, 0, 0, 1], &[10, 0, 0, 2], 17, 3008),
        );
        assert_eq!(fold(s), 0, "UDP checksum over the reassembled datagram");
    }

    #[test]
    fn limits_are_errors() {
        let t = template();
        assert!(matches!(
            t.fragments(&vec![0; MAX_PAYLOAD + 1], 0, 1500),
            Err(Udp4Error::TooLong(_))
        ));
        assert!(matches!(t.fragments(b"x", 0, 40), Err(Udp4Error::Mtu(40))));
        assert_eq!(frames(&vec![1; MAX_PAYLOAD], 9000).len(), 8);
    }
}
