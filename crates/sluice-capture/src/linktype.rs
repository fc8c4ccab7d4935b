//! Link-layer header types (`LINKTYPE_*` values of pcap and pcapng).
//!
//! Design: a transparent `u32` newtype rather than an enum, so every value a
//! file can carry is representable and round-trips unchanged to the writer;
//! names come from a small table of the types seen in practice and read like
//! tcpdump's `link-type EN10MB (Ethernet)`.

use std::fmt;

/// A `LINKTYPE_*` value. Only the low 16 bits are meaningful in files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback (4-byte host-order address family).
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet.
    pub const ETHERNET: LinkType = LinkType(1);
    /// PPP.
    pub const PPP: LinkType = LinkType(9);
    /// Raw IP, version from the first nibble.
    pub const RAW: LinkType = LinkType(101);
    /// Cisco HDLC.
    pub const C_HDLC: LinkType = LinkType(104);
    /// 802.11 without radio header.
    pub const IEEE802_11: LinkType = LinkType(105);
    /// OpenBSD loopback (4-byte network-order address family).
    pub const LOOP: LinkType = LinkType(108);
    /// Linux cooked capture v1.
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// 802.11 with radiotap header.
    pub const IEEE802_11_RADIOTAP: LinkType = LinkType(127);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux netfilter NFLOG.
    pub const NFLOG: LinkType = LinkType(239);
    /// Linux cooked capture v2.
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// The link type a capture-file header value stands for: the low 16
    /// bits, with the platform `DLT_RAW` values 12 (most BSDs, Linux) and 14
    /// (OpenBSD) that old writers stored verbatim mapped to [`LinkType::RAW`]
    /// (as Wireshark does).
    pub fn from_header(field: u32) -> LinkType {
        match field & 0xffff {
            12 | 14 => LinkType::RAW,
            v => LinkType(v),
        }
    }

    /// Name and description as tcpdump prints them, e.g. `"EN10MB (Ethernet)"`;
    /// `"unknown"` for types not in the table.
    pub fn name(self) -> &'static str {
        match self.entry() {
            Some((_, full)) => full,
            None => "unknown",
        }
    }

    /// The bare `DLT_` name, e.g. `"EN10MB"`; `"unknown"` if not in the table.
    pub fn short_name(self) -> &'static str {
        match self.entry() {
            Some((short, _)) => short,
            None => "unknown",
        }
    }

    /// True when the name table knows this type.
    pub fn is_known(self) -> bool {
        self.entry().is_some()
    }

    fn entry(self) -> Option<(&'static str, &'static str)> {
        Some(match self.0 {
            0 => ("NULL", "NULL (BSD loopback)"),
            1 => ("EN10MB", "EN10MB (Ethernet)"),
            6 => ("IEEE802", "IEEE802 (Token ring)"),
            8 => ("SLIP", "SLIP (SLIP)"),
            9 => ("PPP", "PPP (PPP)"),
            10 => ("FDDI", "FDDI (FDDI)"),
            50 => ("PPP_SERIAL", "PPP_SERIAL (PPP over serial)"),
            51 => ("PPP_ETHER", "PPP_ETHER (PPPoE)"),
            101 => ("RAW", "RAW (Raw IP)"),
            104 => ("C_HDLC", "C_HDLC (Cisco HDLC)"),
            105 => ("IEEE802_11", "IEEE802_11 (802.11)"),
            107 => ("FRELAY", "FRELAY (Frame Relay)"),
            108 => ("LOOP", "LOOP (OpenBSD loopback)"),
            113 => ("LINUX_SLL", "LINUX_SLL (Linux cooked v1)"),
            119 => ("PRISM_HEADER", "PRISM_HEADER (802.11 plus Prism header)"),
            127 => (
                "IEEE802_11_RADIO",
                "IEEE802_11_RADIO (802.11 plus radiotap header)",
            ),
            143 => ("DOCSIS", "DOCSIS (DOCSIS)"),
            189 => ("USB_LINUX", "USB_LINUX (USB with Linux header)"),
            192 => ("PPI", "PPI (Per-Packet Information)"),
            220 => (
                "USB_LINUX_MMAPPED",
                "USB_LINUX_MMAPPED (USB with padded Linux header)",
            ),
            228 => ("IPV4", "IPV4 (Raw IPv4)"),
            229 => ("IPV6", "IPV6 (Raw IPv6)"),
            239 => ("NFLOG", "NFLOG (Linux netfilter log messages)"),
            242 => ("IPOIB", "IPOIB (RFC 4391 IP-over-Infiniband)"),
            249 => ("USBPCAP", "USBPCAP (USB with USBPcap header)"),
            274 => ("ETHERNET_MPACKET", "ETHERNET_MPACKET (802.3br mPackets)"),
            276 => ("LINUX_SLL2", "LINUX_SLL2 (Linux cooked v2)"),
            _ => return None,
        })
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry() {
            Some((_, full)) => f.write_str(full),
            None => write!(f, "LINKTYPE {} (unknown)", self.0),
        }
    }
}

impl From<LinkType> for u32 {
    fn from(l: LinkType) -> u32 {
        l.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_like_tcpdump() {
        assert_eq!(LinkType::ETHERNET.to_string(), "EN10MB (Ethernet)");
        assert_eq!(LinkType::ETHERNET.name(), "EN10MB (Ethernet)");
        assert_eq!(LinkType::ETHERNET.short_name(), "EN10MB");
        assert_eq!(
            LinkType::LINUX_SLL2.to_string(),
            "LINUX_SLL2 (Linux cooked v2)"
        );
        assert_eq!(LinkType(4242).to_string(), "LINKTYPE 4242 (unknown)");
        assert_eq!(LinkType(4242).name(), "unknown");
        assert!(!LinkType(4242).is_known());
    }

    #[test]
    fn header_values_map_platform_raw_and_drop_upper_bits() {
        assert_eq!(LinkType::from_header(12), LinkType::RAW);
        assert_eq!(LinkType::from_header(14), LinkType::RAW);
        assert_eq!(LinkType::from_header(101), LinkType::RAW);
        // FCS length in the top bits is not part of the link type.
        assert_eq!(LinkType::from_header(0x6400_0001), LinkType::ETHERNET);
        assert_eq!(LinkType::from_header(276), LinkType::LINUX_SLL2);
    }
}
