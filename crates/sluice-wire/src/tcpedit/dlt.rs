//! The link types other than Ethernet that tcprewrite reads, as tcpedit's
//! DLT plugins decode them (tcpreplay 4.5's `src/tcpedit/plugins/`): Linux
//! cooked captures (SLL, what `tcpdump -i any` writes, and SLL2), raw IP,
//! and BSD's null and loopback headers. None of these plugins encodes, so
//! tcprewrite writes such packets unchanged unless `--dlt` names another
//! link type; with `--dlt enet` each packet becomes an Ethernet frame
//! (which the Ethernet editor then edits): the destination MAC from
//! `--enet-dmac` or 00:00:00:00:00:00, the source MAC from `--enet-smac`
//! or the SLL header's address, the type from the SLL protocol field, the
//! IP version, or the null header's address family.

/// An input link type one of tcpedit's decoders reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoder {
    /// Linux cooked capture v1: 16 bytes.
    Sll,
    /// Linux cooked capture v2: 20 bytes.
    Sll2,
    /// Raw IPv4 or IPv6, no link-layer header.
    Raw,
    /// BSD null (0) or loopback (108): a 4-byte address family.
    Null,
}

impl Decoder {
    /// The decoder of pcap link type `linktype`, if tcpedit has one
    /// (Ethernet is the editor's own; IPv4 and IPv6, 228 and 229, it has
    /// none for).
    pub fn of(linktype: u32) -> Option<Decoder> {
        match linktype {
            113 => Some(Decoder::Sll),
            276 => Some(Decoder::Sll2),
            101 => Some(Decoder::Raw),
            0 | 108 => Some(Decoder::Null),
            _ => None,
        }
    }

    /// Whether the decoded packets carry a source address (SLL's) that
    /// stands in for `--enet-smac`.
    pub fn has_source(self) -> bool {
        matches!(self, Decoder::Sll | Decoder::Sll2)
    }

    /// The plugin's name, as `--dlt` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Decoder::Sll => "linuxsll",
            Decoder::Sll2 => "linuxsll2",
            Decoder::Raw => "raw",
            Decoder::Null => "null",
        }
    }

    /// `frame` as an Ethernet frame into `out` (the MACs from the SLL
    /// address where it has one, else zero: the editor sets the ones the
    /// options give); the bytes it grew by (negative: shrank). Err: why
    /// tcpedit's decoder gives up on it (a soft error: tcprewrite writes
    /// the packet as it is, or leaves it out with `--skip-soft-errors`).
    pub fn to_ethernet(self, frame: &[u8], out: &mut Vec<u8>) -> Result<isize, &'static str> {
        let (l2len, proto, src): (usize, [u8; 2], Option<&[u8]>) = match self {
            Decoder::Sll => {
                if frame.len() < 16 {
                    return Err("shorter than a DLT_LINUX_SLL header");
                }
                if !ether_or_loopback(u16::from_be_bytes([frame[2], frame[3]])) {
                    return Err(
                        "DLT_LINUX_SLL pcap's must contain only ethernet or loopback packets",
                    );
                }
                (16, [frame[14], frame[15]], Some(&frame[6..12]))
            }
            Decoder::Sll2 => {
                if frame.len() < 20 {
                    return Err("shorter than a DLT_LINUX_SLL2 header");
                }
                if !ether_or_loopback(u16::from_be_bytes([frame[8], frame[9]])) {
                    return Err(
                        "DLT_LINUX_SLL2 pcap's must contain only ethernet or loopback packets",
                    );
                }
                (20, [frame[0], frame[1]], Some(&frame[12..18]))
            }
            Decoder::Raw => {
                if frame.len() < 20 {
                    return Err("shorter than an IPv4 header");
                }
                match frame[0] >> 4 {
                    4 => (0, [0x08, 0x00], None),
                    6 => (0, [0x86, 0xdd], None),
                    _ => return Err("Unsupported DLT_RAW packet: doesn't look like IPv4 or IPv6"),
                }
            }
            Decoder::Null => {
                if frame.len() < 4 {
                    return Err("shorter than a DLT_NULL header");
                }
                let le = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
                // The capturing host's byte order, whichever it was.
                let is = |v: u32| le == v || le == v.swap_bytes();
                if is(2) {
                    (4, [0x08, 0x00], None)
                } else if [10, 24, 28, 30].into_iter().any(is) {
                    (4, [0x86, 0xdd], None)
                } else {
                    return Err("Unsupported DLT_NULL/DLT_LOOP PF_ type");
                }
            }
        };
        out.clear();
        out.extend_from_slice(&[0; 6]);
        match src {
            Some(mac) => out.extend_from_slice(mac),
            None => out.extend_from_slice(&[0; 6]),
        }
        out.extend_from_slice(&proto);
        out.extend_from_slice(&frame[l2len..]);
        Ok(14 - l2len as isize)
    }
}

/// ARPHRD_ETHER (1) or ARPHRD_LOOPBACK (772): the SLL packets tcpedit
/// decodes.
fn ether_or_loopback(arphrd: u16) -> bool {
    arphrd == 1 || arphrd == 772
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4() -> Vec<u8> {
        let mut ip = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        ip.extend_from_slice(&[0, 9, 0, 9, 0, 8, 0, 0]);
        ip
    }

    #[test]
    fn each_header_becomes_ethernet_as_tcpedit_decodes_it() {
        let ip = ipv4();
        let mut out = Vec::new();
        // SLL: packet type, ARPHRD_ETHER, address length 6, address, pad, IPv4.
        let mut sll = vec![0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 7, 0, 0, 0x08, 0x00];
        sll.extend_from_slice(&ip);
        assert_eq!(Decoder::Sll.to_ethernet(&sll, &mut out), Ok(-2));
        assert_eq!(
            &out[..14],
            &[0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 7, 0x08, 0x00]
        );
        assert_eq!(&out[14..], &ip[..]);
        // SLL2: protocol first, ARPHRD at 8, address at 12.
        let mut sll2 = vec![
            0x86, 0xdd, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 0, 0, 0, 0, 8, 0, 0,
        ];
        sll2.extend_from_slice(&ip);
        assert_eq!(Decoder::Sll2.to_ethernet(&sll2, &mut out), Ok(-6));
        assert_eq!(&out[6..14], &[2, 0, 0, 0, 0, 8, 0x86, 0xdd]);
        // An SLL packet of another hardware type is tcpedit's soft error.
        sll[3] = 0x20;
        assert!(Decoder::Sll.to_ethernet(&sll, &mut out).is_err());
        // Raw: the version nibble.
        assert_eq!(Decoder::Raw.to_ethernet(&ip, &mut out), Ok(14));
        assert_eq!(&out[12..14], &[0x08, 0x00]);
        let mut v6 = vec![0x60; 40];
        v6[1] = 0;
        Decoder::Raw.to_ethernet(&v6, &mut out).unwrap();
        assert_eq!(&out[12..14], &[0x86, 0xdd]);
        assert!(Decoder::Raw.to_ethernet(&[0x50; 20], &mut out).is_err());
        // Null in either byte order; loopback's IPv6 families.
        for fam in [[2, 0, 0, 0], [0, 0, 0, 2], [30, 0, 0, 0], [0, 0, 0, 24]] {
            let mut null = fam.to_vec();
            null.extend_from_slice(&ip);
            assert_eq!(Decoder::Null.to_ethernet(&null, &mut out), Ok(10));
            let want = if fam.contains(&2) {
                [8, 0]
            } else {
                [0x86, 0xdd]
            };
            assert_eq!(&out[12..14], &want, "{fam:?}");
        }
        assert!(Decoder::Null
            .to_ethernet(&[7, 0, 0, 0, 1], &mut out)
            .is_err());
    }
}
