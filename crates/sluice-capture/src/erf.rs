//! ERF, the Extensible Record Format of Endace DAG cards (the format of
//! TCPivo's traces), read record by record.
//!
//! A record is a 16-byte header, extension headers, then the payload:
//! - `ts`: u64 little-endian, seconds in the upper 32 bits and a binary
//!   fraction of a second in the lower 32;
//! - `type`: bit 7 set when extension headers follow; the low 7 bits name
//!   the payload (2 Ethernet, 22 IPv4, 23 IPv6, 48 padding, ...);
//! - `flags`: bits 0-1 the capture port, bit 3 truncated, bit 4 RX error;
//! - `rlen`: u16 big-endian, the whole record's length, header included;
//! - `lctr`: u16 big-endian, frames lost before this one (or a colour);
//! - `wlen`: u16 big-endian, the length on the wire.
//!
//! Each extension header is 8 bytes; bit 7 of its first byte says another
//! follows. Ethernet payloads start with 2 bytes (offset, pad) before the
//! frame. A DAG card records the Ethernet FCS, and `wlen` counts it: the
//! frame handed out stops before it (as Wireshark decodes ERF by default),
//! and so does its wire length. Records shorter than `wlen` were cut by the
//! card's snap length; longer ones carry padding to an 8-byte boundary,
//! which is not handed out. Padding records (type 48) and provenance
//! records (type 27) are skipped; other payload types are handed out with
//! link type 197 (LINKTYPE_ERF), which a sender counts as unsupported.

use crate::buffer::StreamBuf;
use crate::error::ErrorKind;
use crate::linktype::LinkType;
use crate::{Fault, PacketPos};

/// The record header.
pub(crate) const HEADER_LEN: usize = 16;
/// Most extension headers followed before a record is refused (each is 8
/// bytes; a record is at most 65 535 bytes).
const MAX_EXTENSIONS: usize = 64;
const TYPE_ETH: u8 = 2;
const TYPE_COLOR_ETH: u8 = 11;
const TYPE_DSM_COLOR_ETH: u8 = 16;
const TYPE_COLOR_HASH_ETH: u8 = 20;
const TYPE_IPV4: u8 = 22;
const TYPE_IPV6: u8 = 23;
const TYPE_META: u8 = 27;
const TYPE_PAD: u8 = 48;
/// What ERF records of other payloads are handed out as.
pub const LINKTYPE_ERF: LinkType = LinkType(197);
const FCS_LEN: usize = 4;

/// Reads the next packet record, skipping padding and provenance records;
/// `Ok(None)` at a clean end of stream.
pub(crate) fn next_record(buf: &mut StreamBuf) -> Result<Option<PacketPos>, Fault> {
    loop {
        let at = buf.offset();
        let fail = |kind| Fault::record(at, kind);
        let have = buf.fill(HEADER_LEN).map_err(|e| fail(ErrorKind::Io(e)))?;
        if have < HEADER_LEN {
            if have == 0 {
                return Ok(None);
            }
            return Err(fail(ErrorKind::TruncatedRecordHeader {
                need: HEADER_LEN as u64,
                got: have as u64,
            }));
        }
        let h = buf.avail();
        let ts = u64::from_le_bytes(h[0..8].try_into().expect("8 bytes"));
        let ty = h[8];
        let flags = h[9];
        let rlen = usize::from(u16::from_be_bytes([h[10], h[11]]));
        let wlen = usize::from(u16::from_be_bytes([h[14], h[15]]));
        if rlen < HEADER_LEN {
            return Err(fail(ErrorKind::BadErfRecord {
                rlen: rlen as u16,
                reason: "shorter than its 16-byte header",
            }));
        }
        let have = buf.fill(rlen).map_err(|e| fail(ErrorKind::Io(e)))?;
        if have < rlen {
            return Err(fail(ErrorKind::TruncatedRecord {
                need: (rlen - HEADER_LEN) as u64,
                got: (have - HEADER_LEN) as u64,
            }));
        }
        let rec = &buf.avail()[..rlen];
        // Extension headers.
        let mut body = HEADER_LEN;
        let mut more = ty & 0x80 != 0;
        let mut n = 0;
        while more {
            if body + 8 > rlen || n == MAX_EXTENSIONS {
                return Err(fail(ErrorKind::BadErfRecord {
                    rlen: rlen as u16,
                    reason: "its extension headers run past its end",
                }));
            }
            more = rec[body] & 0x80 != 0;
            body += 8;
            n += 1;
        }
        let kind = ty & 0x7f;
        let (linktype, pad, fcs) = match kind {
            TYPE_ETH | TYPE_COLOR_ETH | TYPE_DSM_COLOR_ETH | TYPE_COLOR_HASH_ETH => {
                (LinkType::ETHERNET, 2, FCS_LEN)
            }
            TYPE_IPV4 => (LinkType::IPV4, 0, 0),
            TYPE_IPV6 => (LinkType::IPV6, 0, 0),
            _ => (LINKTYPE_ERF, 0, 0),
        };
        if kind == TYPE_PAD || kind == TYPE_META {
            buf.consume(rlen);
            continue;
        }
        if body + pad > rlen {
            return Err(fail(ErrorKind::BadErfRecord {
                rlen: rlen as u16,
                reason: "too short for its Ethernet pad bytes",
            }));
        }
        let data = body + pad;
        // The frame on the wire without its FCS; what the record holds of
        // it (less when cut by a snap length, never the padding after it).
        let wire = wlen.saturating_sub(fcs);
        let caplen = (rlen - data).min(wire);
        let secs = ts >> 32;
        let frac = ((ts & 0xffff_ffff) * 1_000_000_000 + (1 << 31)) >> 32;
        let ts_ns = secs
            .checked_mul(1_000_000_000)
            .and_then(|s| s.checked_add(frac))
            .ok_or_else(|| fail(ErrorKind::TimestampOverflow))?;
        let data_start = buf.pos() + data;
        buf.consume(rlen);
        return Ok(Some(PacketPos {
            data_start,
            caplen,
            ts_ns,
            orig_len: wire as u32,
            linktype,
            interface: u32::from(flags & 0x03),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// An ERF Ethernet record: `frame` (without FCS), its FCS, padded to
    /// 8 bytes; `ext` extension headers.
    pub(crate) fn record(ts: u64, frame: &[u8], ext: usize, port: u8) -> Vec<u8> {
        let mut body = Vec::new();
        for i in 0..ext {
            let more = if i + 1 < ext { 0x80 } else { 0 };
            body.extend([more | 0x01, 0, 0, 0, 0, 0, 0, 0]);
        }
        body.extend([0, 0]);
        body.extend_from_slice(frame);
        body.extend([0xde, 0xad, 0xbe, 0xef]);
        while !(HEADER_LEN + body.len()).is_multiple_of(8) {
            body.push(0);
        }
        let mut r = ts.to_le_bytes().to_vec();
        r.push(TYPE_ETH | if ext > 0 { 0x80 } else { 0 });
        r.push(port);
        r.extend(((HEADER_LEN + body.len()) as u16).to_be_bytes());
        r.extend(0u16.to_be_bytes());
        r.extend(((frame.len() + FCS_LEN) as u16).to_be_bytes());
        r.extend(body);
        r
    }

    /// (ts_ns, bytes, orig_len, interface) of a packet.
    type Read = (u64, Vec<u8>, u32, u32);

    fn read_all(bytes: Vec<u8>) -> Result<Vec<Read>, Fault> {
        let mut b = StreamBuf::new(Box::new(Cursor::new(bytes)));
        let mut out = Vec::new();
        while let Some(p) = next_record(&mut b)? {
            let d = b.storage()[p.data_start..p.data_start + p.caplen].to_vec();
            out.push((p.ts_ns, d, p.orig_len, p.interface));
        }
        Ok(out)
    }

    #[test]
    fn ethernet_records_lose_fcs_and_padding_and_keep_their_port() {
        let f1: Vec<u8> = (0..60).collect();
        let f2: Vec<u8> = (0..61).map(|i| i as u8 ^ 0x55).collect();
        // 1.5 s and 2 + 2^-32 s.
        let mut v = record((1 << 32) | (1 << 31), &f1, 0, 0);
        v.extend(record((2 << 32) | 1, &f2, 2, 3));
        let got = read_all(v).unwrap();
        assert_eq!(got[0], (1_500_000_000, f1.clone(), 60, 0));
        assert_eq!(got[1], (2_000_000_000, f2, 61, 3));
    }

    #[test]
    fn padding_records_are_skipped_and_a_snap_length_cuts_the_frame() {
        let mut pad = vec![0u8; 8];
        pad.extend([TYPE_PAD, 0, 0, 24, 0, 0, 0, 0]);
        pad.extend([0; 8]);
        let frame: Vec<u8> = (0..100).collect();
        // Recorded: 40 bytes of a 104-byte wire frame.
        let mut cut = 5u64.to_le_bytes().to_vec();
        cut.extend([TYPE_ETH, 0]);
        cut.extend(((HEADER_LEN + 2 + 40) as u16).to_be_bytes());
        cut.extend([0, 0]);
        cut.extend(104u16.to_be_bytes());
        cut.extend([0, 0]);
        cut.extend(&frame[..40]);
        let mut v = pad;
        v.extend(cut);
        let got = read_all(v).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].1.as_slice(), got[0].2), (&frame[..40], 100));
    }

    #[test]
    fn bad_records_name_what_is_wrong() {
        let frame = [0u8; 60];
        // rlen below the header.
        let mut v = record(0, &frame, 0, 0);
        v[10..12].copy_from_slice(&8u16.to_be_bytes());
        let e = read_all(v).unwrap_err();
        assert!(
            e.kind
                .to_string()
                .contains("shorter than its 16-byte header"),
            "{}",
            e.kind
        );
        // Extensions that never end.
        let mut v = record(0, &frame, 1, 0);
        for b in v[16..].chunks_mut(8) {
            b[0] |= 0x80;
        }
        let e = read_all(v).unwrap_err();
        assert!(
            e.kind.to_string().contains("extension headers"),
            "{}",
            e.kind
        );
        // Cut inside the second record.
        let mut v = record(0, &frame, 0, 0);
        let two = record(1, &frame, 0, 0);
        let first = v.len() as u64;
        v.extend(&two[..30]);
        let e = read_all(v).unwrap_err();
        assert_eq!(e.offset, first);
        assert!(e.kind.is_truncation());
    }
}
