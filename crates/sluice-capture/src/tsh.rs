//! TSH, NLANR's Time Sequenced Headers (the other trace format TCPivo
//! replays), read record by record.
//!
//! Every record is 44 bytes, big-endian, with no file header:
//! - bytes 0-3: seconds since the epoch;
//! - byte 4: the interface the packet was seen on;
//! - bytes 5-7: microseconds (24 bits);
//! - bytes 8-27: the IPv4 header (options not kept);
//! - bytes 28-43: the first 16 bytes of the transport header.
//!
//! Each record is handed out as raw IPv4 (link type 228): the 36 bytes
//! kept, or fewer when the IP total length says the packet was shorter
//! (the rest of the record is then no part of it), with the IP total
//! length as its wire length: a sender that needs the whole packet pads
//! it (as tcpreplay does for truncated records).

use crate::buffer::StreamBuf;
use crate::error::ErrorKind;
use crate::linktype::LinkType;
use crate::{Fault, PacketPos};

/// One record.
pub(crate) const RECORD_LEN: usize = 44;
/// The packet bytes of a record: the IP header and 16 transport bytes.
const DATA_LEN: usize = 36;

/// Reads the next record; `Ok(None)` at a clean end of stream.
pub(crate) fn next_record(buf: &mut StreamBuf) -> Result<Option<PacketPos>, Fault> {
    let at = buf.offset();
    let fail = |kind| Fault::record(at, kind);
    let have = buf.fill(RECORD_LEN).map_err(|e| fail(ErrorKind::Io(e)))?;
    if have < RECORD_LEN {
        if have == 0 {
            return Ok(None);
        }
        return Err(fail(ErrorKind::TruncatedRecord {
            need: RECORD_LEN as u64,
            got: have as u64,
        }));
    }
    let r = buf.avail();
    let secs = u64::from(u32::from_be_bytes([r[0], r[1], r[2], r[3]]));
    let iface = u32::from(r[4]);
    let micros = u64::from(u32::from_be_bytes([0, r[5], r[6], r[7]]));
    if r[8] >> 4 != 4 {
        return Err(fail(ErrorKind::BadTshRecord { version: r[8] >> 4 }));
    }
    // The wire length: the IP total length.
    let total = usize::from(u16::from_be_bytes([r[10], r[11]]));
    let data_start = buf.pos() + 8;
    buf.consume(RECORD_LEN);
    Ok(Some(PacketPos {
        data_start,
        caplen: DATA_LEN.min(total),
        ts_ns: secs * 1_000_000_000 + micros * 1_000,
        orig_len: total as u32,
        linktype: LinkType::IPV4,
        interface: iface,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A TSH record of a UDP packet `len` bytes long (IP total length).
    pub(crate) fn record(secs: u32, micros: u32, iface: u8, len: u16) -> Vec<u8> {
        let mut r = secs.to_be_bytes().to_vec();
        r.push(iface);
        r.extend(&micros.to_be_bytes()[1..]);
        r.extend([0x45, 0]);
        r.extend(len.to_be_bytes());
        r.extend([0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        r.extend([0x04, 0x00, 0x00, 0x35]);
        r.extend((len - 20).to_be_bytes());
        r.extend([0; 10]);
        r
    }

    #[test]
    fn records_are_raw_ipv4_with_their_wire_length() {
        let mut v = record(1_000, 999_999, 2, 1500);
        v.extend(record(1_001, 5, 0, 28));
        let mut b = StreamBuf::new(Box::new(Cursor::new(v.clone())));
        let p = next_record(&mut b).unwrap().unwrap();
        assert_eq!(
            (p.ts_ns, p.orig_len, p.interface),
            (1_000_999_999_000, 1500, 2)
        );
        assert_eq!(
            &b.storage()[p.data_start..p.data_start + p.caplen],
            &v[8..44]
        );
        let p = next_record(&mut b).unwrap().unwrap();
        // 28 bytes on the wire: the record's last 8 are no part of it.
        assert_eq!((p.ts_ns, p.orig_len, p.caplen), (1_001_000_005_000, 28, 28));
        assert_eq!(p.linktype, LinkType::IPV4);
        assert!(next_record(&mut b).unwrap().is_none());
    }

    #[test]
    fn a_cut_record_and_a_non_ipv4_one_are_named() {
        let mut v = record(1, 0, 0, 100);
        v.extend(&record(2, 0, 0, 100)[..20]);
        let mut b = StreamBuf::new(Box::new(Cursor::new(v)));
        assert!(next_record(&mut b).unwrap().is_some());
        let e = next_record(&mut b).unwrap_err();
        assert_eq!(e.offset, 44);
        assert!(e.kind.is_truncation());
        let mut v = record(1, 0, 0, 100);
        v[8] = 0x60;
        let mut b = StreamBuf::new(Box::new(Cursor::new(v)));
        let e = next_record(&mut b).unwrap_err();
        assert!(e.kind.to_string().contains("IP version 6"), "{}", e.kind);
    }
}
