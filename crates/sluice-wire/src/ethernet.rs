//! Synthesize an Ethernet header for captures of other link types.
//!
//! The replay engine sends Ethernet frames, but captures are also taken on
//! raw IP interfaces (tunnels, `tun`), on Linux's "any" pseudo-device
//! (cooked SLL / SLL2 headers) and on BSD loopback (NULL / LOOP). For those
//! [`to_ethernet`] replaces the captured link-layer header with a 14-byte
//! Ethernet II header built from caller-chosen MAC addresses and an
//! ethertype derived from the original header.
//!
//! Design decisions:
//!
//! * The output goes into a caller-owned `Vec` that is cleared first, so the
//!   per-packet path reuses one buffer and never allocates once it has grown.
//! * The cooked headers' own link-layer address is ignored: it is only the
//!   *source* address, often of another link type, and the replay target
//!   needs both addresses set consistently; the caller supplies them.
//! * SLL protocol values below 0x0600 are not ethertypes. The two that
//!   denote 802.3 framing (1 = Novell raw 802.3, 4 = 802.2 LLC) become an
//!   802.3 header with a length field; any other is an error rather than a
//!   frame with a made-up type.
//! * DLT_NULL's family is in the *capturing* host's byte order, which the
//!   file does not record; family values are small, so whichever order
//!   gives a value below 2¹⁶ wins. DLT_LOOP is always network order.

use std::fmt;
use std::str::FromStr;

use crate::layers::{ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// 02:00:00:00:00:01, locally administered: the default source of
    /// frames sluice builds.
    pub const LOCAL_SRC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    /// 02:00:00:00:00:02, locally administered: the default destination.
    pub const LOCAL_DST: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
}

/// A string that is not a MAC address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address {input:?}: expected six hex bytes like \"02:00:00:00:00:01\"")]
pub struct ParseMacError {
    input: String,
}

impl FromStr for MacAddr {
    type Err = ParseMacError;

    /// Parses six 1- or 2-digit hex bytes separated by `:` or `-`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseMacError {
            input: s.to_owned(),
        };
        let mut mac = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut mac {
            let part = parts.next().ok_or_else(err)?;
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(MacAddr(mac))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// The link-layer framing of captured packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkFraming {
    /// Ethernet II (LINKTYPE_ETHERNET, 1).
    Ethernet,
    /// Raw IPv4 or IPv6, version from the first nibble (LINKTYPE_RAW, 101;
    /// DLT_RAW 12 and OpenBSD's 14).
    RawIp,
    /// Raw IPv4 (LINKTYPE_IPV4, 228).
    Ipv4,
    /// Raw IPv6 (LINKTYPE_IPV6, 229).
    Ipv6,
    /// Linux cooked capture v1 (LINKTYPE_LINUX_SLL, 113): 16-byte header.
    LinuxSll,
    /// Linux cooked capture v2 (LINKTYPE_LINUX_SLL2, 276): 20-byte header.
    LinuxSll2,
    /// BSD loopback, family in host byte order (LINKTYPE_NULL, 0).
    Null,
    /// OpenBSD loopback, family in network byte order (LINKTYPE_LOOP, 108).
    Loop,
}

/// The framing of a pcap/pcapng link type, `None` for unsupported ones.
pub fn framing_of_linktype(linktype: u32) -> Option<LinkFraming> {
    Some(match linktype {
        1 => LinkFraming::Ethernet,
        101 | 12 | 14 => LinkFraming::RawIp,
        228 => LinkFraming::Ipv4,
        229 => LinkFraming::Ipv6,
        113 => LinkFraming::LinuxSll,
        276 => LinkFraming::LinuxSll2,
        0 => LinkFraming::Null,
        108 => LinkFraming::Loop,
        _ => return None,
    })
}

/// A packet that cannot be given an Ethernet header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// The input ends before the header it must start with.
    #[error("packet too short: {got} bytes, {expected} needs {needed}")]
    TooShort {
        /// What the input must hold.
        expected: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// A raw IP packet whose version nibble is neither 4 nor 6.
    #[error("raw IP packet with IP version {0} (expected 4 or 6)")]
    UnknownIpVersion(u8),
    /// A NULL/LOOP address family that is not IPv4 or IPv6.
    #[error("loopback address family {0} (expected 2 for IPv4, or 24, 28, 30 for IPv6)")]
    UnknownFamily(u32),
    /// A Linux cooked protocol value that is not an ethertype.
    #[error("Linux cooked capture protocol {0:#06x} is not an ethertype")]
    UnsupportedProtocol(u16),
}

/// What to put in the type/length field.
enum TypeOrLen {
    Type(u16),
    /// An 802.3 frame (SLL protocol value kept): the field is the payload
    /// length.
    Len8023(u16),
}

fn need(data: &[u8], needed: usize, expected: &'static str) -> Result<(), FramingError> {
    if data.len() < needed {
        return Err(FramingError::TooShort {
            expected,
            needed,
            got: data.len(),
        });
    }
    Ok(())
}

fn cooked_protocol(proto: u16) -> Result<TypeOrLen, FramingError> {
    match proto {
        0x0600.. => Ok(TypeOrLen::Type(proto)),
        1 | 4 => Ok(TypeOrLen::Len8023(proto)),
        _ => Err(FramingError::UnsupportedProtocol(proto)),
    }
}

fn loopback_family(family: u32) -> Result<u16, FramingError> {
    match family {
        2 => Ok(ETHERTYPE_IPV4),
        24 | 28 | 30 => Ok(ETHERTYPE_IPV6),
        f => Err(FramingError::UnknownFamily(f)),
    }
}

/// Writes into `out` (cleared first) the Ethernet II frame carrying the
/// packet `data` captured with framing `framing`: a 14-byte header
/// `dst, src, ethertype` followed by the packet without its original
/// link-layer header. `Ethernet` input is copied as is (addresses kept).
pub fn to_ethernet(
    framing: LinkFraming,
    data: &[u8],
    src: MacAddr,
    dst: MacAddr,
    out: &mut Vec<u8>,
) -> Result<(), FramingError> {
    out.clear();
    let (kind, payload) = match framing {
        LinkFraming::Ethernet => {
            out.extend_from_slice(data);
            return Ok(());
        }
        LinkFraming::RawIp => {
            need(data, 1, "a raw IP header")?;
            let kind = match data[0] >> 4 {
                4 => ETHERTYPE_IPV4,
                6 => ETHERTYPE_IPV6,
                v => return Err(FramingError::UnknownIpVersion(v)),
            };
            (TypeOrLen::Type(kind), data)
        }
        LinkFraming::Ipv4 => {
            need(data, 1, "an IPv4 header")?;
            (TypeOrLen::Type(ETHERTYPE_IPV4), data)
        }
        LinkFraming::Ipv6 => {
            need(data, 1, "an IPv6 header")?;
            (TypeOrLen::Type(ETHERTYPE_IPV6), data)
        }
        LinkFraming::LinuxSll => {
            need(data, 16, "a 16-byte Linux cooked (SLL) header")?;
            (
                cooked_protocol(u16::from_be_bytes([data[14], data[15]]))?,
                &data[16..],
            )
        }
        LinkFraming::LinuxSll2 => {
            need(data, 20, "a 20-byte Linux cooked v2 (SLL2) header")?;
            (
                cooked_protocol(u16::from_be_bytes([data[0], data[1]]))?,
                &data[20..],
            )
        }
        LinkFraming::Null => {
            need(data, 4, "a 4-byte NULL loopback header")?;
            let b = [data[0], data[1], data[2], data[3]];
            let le = u32::from_le_bytes(b);
            let family = if le <= 0xffff {
                le
            } else {
                u32::from_be_bytes(b)
            };
            (TypeOrLen::Type(loopback_family(family)?), &data[4..])
        }
        LinkFraming::Loop => {
            need(data, 4, "a 4-byte LOOP loopback header")?;
            let family = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
            (TypeOrLen::Type(loopback_family(family)?), &data[4..])
        }
    };
    let field = match kind {
        TypeOrLen::Type(t) => t,
        TypeOrLen::Len8023(proto) => {
            // An 802.3 length above 1500 would read as an ethertype.
            if payload.len() > 1500 {
                return Err(FramingError::UnsupportedProtocol(proto));
            }
            payload.len() as u16
        }
    };
    out.reserve(14 + payload.len());
    out.extend_from_slice(&dst.0);
    out.extend_from_slice(&src.0);
    out.extend_from_slice(&field.to_be_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::parse_layers;
    use crate::layers::tests::{hex, udp4_frame};

    const SRC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
    const DST: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);

    fn ip4_packet() -> Vec<u8> {
        udp4_frame()[14..].to_vec()
    }

    fn header(ethertype: u16) -> Vec<u8> {
        let mut h = DST.0.to_vec();
        h.extend_from_slice(&SRC.0);
        h.extend_from_slice(&ethertype.to_be_bytes());
        h
    }

    #[test]
    fn mac_parse_and_display() {
        let m: MacAddr = "02:00:00:00:00:01".parse().unwrap();
        assert_eq!(m, SRC);
        assert_eq!(m.to_string(), "02:00:00:00:00:01");
        assert_eq!(
            "AA-bb-0c-d-EE-ff".parse(),
            Ok(MacAddr([0xaa, 0xbb, 0x0c, 0x0d, 0xee, 0xff]))
        );
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:01:02",
            "02:00:00:00:00:0g",
            "002:0:0:0:0:1",
            "02::00:00:00:00",
            "+2:0:0:0:0:1",
        ] {
            let e = bad.parse::<MacAddr>().unwrap_err();
            assert!(e.to_string().starts_with("invalid MAC address"), "{bad}");
        }
        assert_eq!(MacAddr::BROADCAST.to_string(), "ff:ff:ff:ff:ff:ff");
    }

    #[test]
    fn linktypes() {
        assert_eq!(framing_of_linktype(1), Some(LinkFraming::Ethernet));
        for lt in [101, 12, 14] {
            assert_eq!(framing_of_linktype(lt), Some(LinkFraming::RawIp));
        }
        assert_eq!(framing_of_linktype(228), Some(LinkFraming::Ipv4));
        assert_eq!(framing_of_linktype(229), Some(LinkFraming::Ipv6));
        assert_eq!(framing_of_linktype(113), Some(LinkFraming::LinuxSll));
        assert_eq!(framing_of_linktype(276), Some(LinkFraming::LinuxSll2));
        assert_eq!(framing_of_linktype(0), Some(LinkFraming::Null));
        assert_eq!(framing_of_linktype(108), Some(LinkFraming::Loop));
        assert_eq!(framing_of_linktype(104), None);
    }

    #[test]
    fn ethernet_is_copied() {
        let f = udp4_frame();
        let mut out = vec![1, 2, 3];
        to_ethernet(LinkFraming::Ethernet, &f, SRC, DST, &mut out).unwrap();
        assert_eq!(out, f);
    }

    #[test]
    fn raw_ip() {
        let p = ip4_packet();
        let mut out = Vec::new();
        to_ethernet(LinkFraming::RawIp, &p, SRC, DST, &mut out).unwrap();
        assert_eq!(out, [header(0x0800), p.clone()].concat());
        // The synthesized frame parses like the original.
        assert_eq!(parse_layers(&out).l4, parse_layers(&udp4_frame()).l4);

        let v6 = hex("6000 0000 0000 3b40");
        to_ethernet(LinkFraming::RawIp, &v6, SRC, DST, &mut out).unwrap();
        assert_eq!(out[12..14], [0x86, 0xdd]);
        assert_eq!(
            to_ethernet(LinkFraming::RawIp, &[0x55], SRC, DST, &mut out),
            Err(FramingError::UnknownIpVersion(5))
        );
        let e = to_ethernet(LinkFraming::RawIp, &[], SRC, DST, &mut out).unwrap_err();
        assert_eq!(
            e,
            FramingError::TooShort {
                expected: "a raw IP header",
                needed: 1,
                got: 0
            }
        );
        assert_eq!(
            e.to_string(),
            "packet too short: 0 bytes, a raw IP header needs 1"
        );

        to_ethernet(LinkFraming::Ipv4, &p, SRC, DST, &mut out).unwrap();
        assert_eq!(out[12..14], [0x08, 0x00]);
        to_ethernet(LinkFraming::Ipv6, &v6, SRC, DST, &mut out).unwrap();
        assert_eq!(out[12..14], [0x86, 0xdd]);
    }

    #[test]
    fn linux_sll() {
        // Outgoing (4), ARPHRD_ETHER (1), 6-byte address, protocol IPv4.
        let sll = hex("0004 0001 0006 0011 2233 4455 0000 0800");
        let p = ip4_packet();
        let mut out = Vec::new();
        to_ethernet(
            LinkFraming::LinuxSll,
            &[sll.clone(), p.clone()].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [header(0x0800), p.clone()].concat());

        // ARP is kept with its ethertype.
        let arp = hex("0001 0800 0604 0001");
        let mut s = sll.clone();
        s[14] = 0x08;
        s[15] = 0x06;
        to_ethernet(
            LinkFraming::LinuxSll,
            &[s, arp.clone()].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [header(0x0806), arp.clone()].concat());

        // 802.2 LLC becomes an 802.3 length.
        let mut s = sll.clone();
        s[14] = 0;
        s[15] = 4;
        to_ethernet(
            LinkFraming::LinuxSll,
            &[s.clone(), vec![0x42, 0x42, 0x03]].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[12..], [0, 3, 0x42, 0x42, 0x03]);
        // Netlink-style protocol values are rejected.
        s[15] = 0x10;
        assert_eq!(
            to_ethernet(LinkFraming::LinuxSll, &s, SRC, DST, &mut out),
            Err(FramingError::UnsupportedProtocol(0x10))
        );

        assert_eq!(
            to_ethernet(LinkFraming::LinuxSll, &sll[..15], SRC, DST, &mut out),
            Err(FramingError::TooShort {
                expected: "a 16-byte Linux cooked (SLL) header",
                needed: 16,
                got: 15
            })
        );
    }

    #[test]
    fn linux_sll2() {
        // Protocol IPv6, reserved, ifindex 2, ARPHRD_ETHER, outgoing, len 6, address.
        let sll2 = hex("86dd 0000 0000 0002 0001 0406 0011 2233 4455 0000");
        let v6 = hex("6000 0000 0000 3b40");
        let mut out = Vec::new();
        to_ethernet(
            LinkFraming::LinuxSll2,
            &[sll2.clone(), v6.clone()].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [header(0x86dd), v6].concat());
        assert!(matches!(
            to_ethernet(LinkFraming::LinuxSll2, &sll2[..19], SRC, DST, &mut out),
            Err(FramingError::TooShort {
                needed: 20,
                got: 19,
                ..
            })
        ));
    }

    #[test]
    fn null_and_loop() {
        let p = ip4_packet();
        let mut out = Vec::new();
        // Little-endian host: AF_INET = 2.
        to_ethernet(
            LinkFraming::Null,
            &[vec![2, 0, 0, 0], p.clone()].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [header(0x0800), p.clone()].concat());
        // Big-endian host.
        to_ethernet(
            LinkFraming::Null,
            &[vec![0, 0, 0, 2], p.clone()].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[12..14], [0x08, 0x00]);
        // AF_INET6 values of the BSDs and macOS, both orders.
        for fam in [24u32, 28, 30] {
            to_ethernet(LinkFraming::Null, &fam.to_le_bytes(), SRC, DST, &mut out).unwrap();
            assert_eq!(out, header(0x86dd));
            to_ethernet(LinkFraming::Null, &fam.to_be_bytes(), SRC, DST, &mut out).unwrap();
            assert_eq!(out, header(0x86dd));
        }
        assert_eq!(
            to_ethernet(LinkFraming::Null, &[7, 0, 0, 0], SRC, DST, &mut out),
            Err(FramingError::UnknownFamily(7))
        );
        // LOOP is network order only.
        to_ethernet(
            LinkFraming::Loop,
            &[vec![0, 0, 0, 24], p.clone()].concat(),
            SRC,
            DST,
            &mut out,
        )
        .unwrap();
        assert_eq!(out[12..14], [0x86, 0xdd]);
        assert_eq!(
            to_ethernet(LinkFraming::Loop, &[2, 0, 0, 0], SRC, DST, &mut out),
            Err(FramingError::UnknownFamily(0x0200_0000))
        );
        assert!(matches!(
            to_ethernet(LinkFraming::Loop, &[0, 0, 2], SRC, DST, &mut out),
            Err(FramingError::TooShort {
                needed: 4,
                got: 3,
                ..
            })
        ));
    }
}
