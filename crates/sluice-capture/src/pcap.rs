//! Classic pcap: the 24-byte file header and the 16-byte record headers.
//!
//! Design: accept what libpcap accepts, refuse what it refuses, and never
//! trust a length. Both byte orders and both timestamp resolutions
//! (microsecond magic 0xa1b2c3d4, nanosecond 0xa1b23c4d); any snaplen, and
//! records longer than the snaplen are read in full (libpcap does too; the
//! testdata has such files) up to [`MAX_RECORD`], a sanity cap so that a
//! garbage length cannot make us allocate gigabytes. Sub-second fields that
//! are out of range are converted as they are (`sec * 1e9 + usec * 1000`),
//! which cannot overflow `u64`. Versions before 2.3 stored `caplen` and
//! `len` the other way round; like libpcap we swap them back (always before
//! 2.3, and in 2.3 files when `caplen > len`).

use crate::buffer::StreamBuf;
use crate::bytes::{u16_at, u32_at};
use crate::error::ErrorKind;
use crate::linktype::LinkType;
use crate::{Fault, PacketPos};

/// Largest captured length of one record (and total length of one pcapng
/// block) that the reader accepts: 256 MiB.
pub const MAX_RECORD: u32 = 256 << 20;

pub(crate) const FILE_HEADER_LEN: usize = 24;
pub(crate) const RECORD_HEADER_LEN: usize = 16;

/// Link-type bits that libpcap requires to be zero (bits 16..25; the top
/// bits hold an optional FCS length).
const LINKTYPE_RESERVED: u32 = 0x03ff_0000;

/// Byte order and resolution of a pcap magic, if it is one.
pub(crate) fn magic(first4: [u8; 4]) -> Option<(bool, bool)> {
    match first4 {
        [0xd4, 0xc3, 0xb2, 0xa1] => Some((false, false)),
        [0xa1, 0xb2, 0xc3, 0xd4] => Some((true, false)),
        [0x4d, 0x3c, 0xb2, 0xa1] => Some((false, true)),
        [0xa1, 0xb2, 0x3c, 0x4d] => Some((true, true)),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LengthOrder {
    Normal,
    Swapped,
    MaybeSwapped,
}

/// A parsed pcap file header.
#[derive(Debug, Clone)]
pub(crate) struct PcapHeader {
    pub big_endian: bool,
    pub nanos: bool,
    pub snaplen: u32,
    pub linktype: LinkType,
    order: LengthOrder,
}

/// Parses the 24-byte file header (`h` must hold at least 24 bytes and start
/// with a pcap magic).
pub(crate) fn parse_file_header(h: &[u8]) -> Result<PcapHeader, ErrorKind> {
    let Some((be, nanos)) = magic([h[0], h[1], h[2], h[3]]) else {
        return Err(ErrorKind::NotACapture {
            magic: u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
        });
    };
    let major = u16_at(h, 4, be);
    let minor = u16_at(h, 6, be);
    if major != 2 {
        return Err(ErrorKind::UnsupportedVersion { major, minor });
    }
    let snaplen = u32_at(h, 16, be);
    let field = u32_at(h, 20, be);
    if field & LINKTYPE_RESERVED != 0 {
        return Err(ErrorKind::BadLinkType(field));
    }
    let order = match minor {
        0..=2 => LengthOrder::Swapped,
        3 => LengthOrder::MaybeSwapped,
        _ => LengthOrder::Normal,
    };
    Ok(PcapHeader {
        big_endian: be,
        nanos,
        snaplen,
        linktype: LinkType::from_header(field),
        order,
    })
}

/// Reads the next record header and makes its data available; consumes the
/// whole record. `Ok(None)` at a clean end of stream.
#[inline]
pub(crate) fn next_record(h: &PcapHeader, buf: &mut StreamBuf) -> Result<Option<PacketPos>, Fault> {
    let at = buf.offset();
    let fail = |kind| Fault::record(at, kind);
    let have = buf
        .fill(RECORD_HEADER_LEN)
        .map_err(|e| fail(ErrorKind::Io(e)))?;
    if have < RECORD_HEADER_LEN {
        if have == 0 {
            return Ok(None);
        }
        return Err(fail(ErrorKind::TruncatedRecordHeader {
            need: RECORD_HEADER_LEN as u64,
            got: have as u64,
        }));
    }
    let r = buf.avail();
    let be = h.big_endian;
    let sec = u32_at(r, 0, be);
    let frac = u32_at(r, 4, be);
    let mut caplen = u32_at(r, 8, be);
    let mut orig_len = u32_at(r, 12, be);
    match h.order {
        LengthOrder::Normal => {}
        LengthOrder::Swapped => std::mem::swap(&mut caplen, &mut orig_len),
        LengthOrder::MaybeSwapped if caplen > orig_len => {
            std::mem::swap(&mut caplen, &mut orig_len)
        }
        LengthOrder::MaybeSwapped => {}
    }
    if caplen > MAX_RECORD {
        return Err(fail(ErrorKind::RecordTooLarge {
            caplen,
            limit: MAX_RECORD,
        }));
    }
    let total = RECORD_HEADER_LEN + caplen as usize;
    let have = buf.fill(total).map_err(|e| fail(ErrorKind::Io(e)))?;
    if have < total {
        return Err(fail(ErrorKind::TruncatedRecord {
            need: u64::from(caplen),
            got: (have - RECORD_HEADER_LEN) as u64,
        }));
    }
    // u32 seconds * 1e9 + u32 fraction * 1000 < 2^64: cannot overflow.
    let mult = if h.nanos { 1 } else { 1_000 };
    let ts_ns = u64::from(sec) * 1_000_000_000 + u64::from(frac) * mult;
    let data_start = buf.pos() + RECORD_HEADER_LEN;
    buf.consume(total);
    Ok(Some(PacketPos {
        data_start,
        caplen: caplen as usize,
        ts_ns,
        orig_len,
        linktype: h.linktype,
        interface: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// File header of the testdata `tcpdump__tcp-handshake-nano.pcap`
    /// (LE, nanosecond, v2.4, snaplen 262144, LINUX_SLL).
    const NANO_SLL_HDR: [u8; 24] = [
        0x4d, 0x3c, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x04,
        0x00, 0x71, 0x00, 0x00, 0x00,
    ];

    fn buf(bytes: Vec<u8>) -> StreamBuf {
        StreamBuf::new(Box::new(Cursor::new(bytes)))
    }

    #[test]
    fn header_variants() {
        let h = parse_file_header(&NANO_SLL_HDR).unwrap();
        assert!(h.nanos && !h.big_endian);
        assert_eq!(h.snaplen, 262_144);
        assert_eq!(h.linktype, LinkType::LINUX_SLL);

        // Big-endian microsecond header of tcpdump__pptp.pcap.
        let be: [u8; 24] = [
            0xa1, 0xb2, 0xc3, 0xd4, 0x00, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00,
            0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
        ];
        let h = parse_file_header(&be).unwrap();
        assert!(h.big_endian && !h.nanos);
        assert_eq!(h.snaplen, 65_535);
        assert_eq!(h.linktype, LinkType::ETHERNET);
    }

    #[test]
    fn header_refusals() {
        // libpcap tests/pcap-invalid-version-1.pcap: version 1.4.
        let mut v1 = NANO_SLL_HDR;
        v1[4] = 1;
        assert!(matches!(
            parse_file_header(&v1),
            Err(ErrorKind::UnsupportedVersion { major: 1, minor: 4 })
        ));
        // libpcap tests/linktype-reserved-field-not-zero.pcap: 0x00300000.
        let mut lt = NANO_SLL_HDR;
        lt[20..24].copy_from_slice(&[0x00, 0x00, 0x30, 0x00]);
        assert!(matches!(
            parse_file_header(&lt),
            Err(ErrorKind::BadLinkType(0x0030_0000))
        ));
        // FCS length bits are allowed and ignored.
        let mut fcs = NANO_SLL_HDR;
        fcs[23] = 0x64;
        assert_eq!(
            parse_file_header(&fcs).unwrap().linktype,
            LinkType::LINUX_SLL
        );
    }

    fn record(sec: u32, frac: u32, caplen: u32, len: u32, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for x in [sec, frac, caplen, len] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn records_microsecond_and_out_of_range_fraction() {
        let mut hdr = NANO_SLL_HDR;
        hdr[0..4].copy_from_slice(&[0xd4, 0xc3, 0xb2, 0xa1]);
        let h = parse_file_header(&hdr).unwrap();
        let mut bytes = record(1_700_000_000, 123_456, 3, 60, b"abc");
        // tcpdump timestamp_invalid_micro.pcap style: usec >= 1_000_000.
        bytes.extend(record(1, 1_500_000, 0, 0, b""));
        let mut b = buf(bytes);
        let r = next_record(&h, &mut b).unwrap().unwrap();
        assert_eq!(r.ts_ns, 1_700_000_000_123_456_000);
        assert_eq!((r.caplen, r.orig_len), (3, 60));
        assert_eq!(&b.storage()[r.data_start..r.data_start + 3], b"abc");
        let r = next_record(&h, &mut b).unwrap().unwrap();
        assert_eq!(r.ts_ns, 2_500_000_000);
        assert!(next_record(&h, &mut b).unwrap().is_none());
        assert_eq!(b.offset(), 16 + 3 + 16);
    }

    #[test]
    fn truncation_and_size_limit() {
        let h = parse_file_header(&NANO_SLL_HDR).unwrap();
        let mut bytes = record(1, 2, 4, 4, b"abcd");
        bytes.extend(record(1, 2, 66, 66, &[7; 30]));
        let mut b = buf(bytes);
        assert!(next_record(&h, &mut b).unwrap().is_some());
        let f = next_record(&h, &mut b).unwrap_err();
        assert_eq!(f.offset, 20);
        assert!(matches!(
            f.kind,
            ErrorKind::TruncatedRecord { need: 66, got: 30 }
        ));

        let mut b = buf(record(1, 2, 4, 4, b"abcd")[..9].to_vec());
        let f = next_record(&h, &mut b).unwrap_err();
        assert!(matches!(
            f.kind,
            ErrorKind::TruncatedRecordHeader { need: 16, got: 9 }
        ));

        let mut b = buf(record(1, 2, MAX_RECORD + 1, 4, b""));
        let f = next_record(&h, &mut b).unwrap_err();
        assert!(matches!(f.kind, ErrorKind::RecordTooLarge { .. }));
    }

    #[test]
    fn old_versions_swap_lengths() {
        let mut hdr = NANO_SLL_HDR;
        hdr[6] = 2; // v2.2: len before caplen
        let h = parse_file_header(&hdr).unwrap();
        let mut b = buf(record(0, 0, 1500, 2, b"xy"));
        let r = next_record(&h, &mut b).unwrap().unwrap();
        assert_eq!((r.caplen, r.orig_len), (2, 1500));

        hdr[6] = 3; // v2.3: swap only when caplen > len
        let h = parse_file_header(&hdr).unwrap();
        let mut bytes = record(0, 0, 1500, 2, b"xy");
        bytes.extend(record(0, 0, 2, 1500, b"xy"));
        let mut b = buf(bytes);
        for _ in 0..2 {
            let r = next_record(&h, &mut b).unwrap().unwrap();
            assert_eq!((r.caplen, r.orig_len), (2, 1500));
        }
    }
}
