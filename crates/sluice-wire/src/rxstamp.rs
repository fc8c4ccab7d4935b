//! The receive stamp (`--rx-stamp`): 24 bytes at the end of a packet's L4
//! payload that let a receiver count loss, duplicates and reordering per
//! stream and measure one-way latency.
//!
//! | bytes | content |
//! |---|---|
//! | 0-3 | ASCII `SLR1` |
//! | 4-7 | stream id, u32 big-endian |
//! | 8-15 | sequence number in the stream, u64 big-endian, from 0 |
//! | 16-23 | departure, ns since the UNIX epoch (CLOCK_REALTIME), u64 big-endian |
//!
//! A payload of 16 to 23 bytes (a 64-byte Ethernet frame of IPv4 and UDP
//! holds 18) gets the short stamp instead, 16 bytes:
//!
//! | bytes | content |
//! |---|---|
//! | 0-1 | ASCII `Sr` |
//! | 2-3 | stream id, u16 big-endian |
//! | 4-7 | sequence number, u32 big-endian (the receiver extends it) |
//! | 8-15 | departure, as above |
//!
//! The stamp sits at the end of the payload the IP length bounds (not the
//! frame's end: Ethernet padding follows it), so a receiver finds it
//! whatever headers a NAT, a tunnel end or a rewrite put in front. The
//! departure is written as the frame leaves (the engine's measured send
//! time, not its due time), and the L4 checksum is updated for the 24
//! bytes (RFC 1624 over their sums): a checksum right before is right
//! after, a UDP checksum of 0 (none, IPv4) stays 0.

use crate::checksum::Cover;
use crate::layers::{
    parse_layers, ETHERTYPE_IPV4, ETH_HEADER_LEN, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP,
};

/// Bytes of a stamp.
pub const RX_STAMP_LEN: usize = 24;
/// Its first four bytes.
pub const RX_STAMP_MAGIC: [u8; 4] = *b"SLR1";
/// Bytes of the short stamp, for payloads too small for the long one.
pub const SHORT_STAMP_LEN: usize = 16;
/// Its first two bytes.
pub const SHORT_STAMP_MAGIC: [u8; 2] = *b"Sr";

/// What a stamp says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxStamp {
    pub stream: u32,
    pub seq: u64,
    /// Departure, ns since the UNIX epoch.
    pub tx_ns: u64,
    /// Read from a short stamp: `stream` and `seq` hold their low 16 and
    /// 32 bits only.
    pub short: bool,
}

impl RxStamp {
    fn bytes(&self, len: usize) -> [u8; RX_STAMP_LEN] {
        let mut b = [0u8; RX_STAMP_LEN];
        if len == SHORT_STAMP_LEN {
            b[..2].copy_from_slice(&SHORT_STAMP_MAGIC);
            b[2..4].copy_from_slice(&(self.stream as u16).to_be_bytes());
            b[4..8].copy_from_slice(&(self.seq as u32).to_be_bytes());
            b[8..16].copy_from_slice(&self.tx_ns.to_be_bytes());
            return b;
        }
        b[..4].copy_from_slice(&RX_STAMP_MAGIC);
        b[4..8].copy_from_slice(&self.stream.to_be_bytes());
        b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        b[16..24].copy_from_slice(&self.tx_ns.to_be_bytes());
        b
    }
}

/// Where a frame's stamp goes: the last [`RX_STAMP_LEN`] bytes of its L4
/// payload, and the checksum that covers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StampSpot {
    pub at: usize,
    /// [`RX_STAMP_LEN`], or [`SHORT_STAMP_LEN`] for a short payload.
    pub len: usize,
    /// The L4 checksum, which covers the stamp's bytes.
    cover: Cover,
}

/// The spot for a stamp in `frame` (Ethernet): an unfragmented IPv4 or
/// IPv6 packet, captured whole, carrying TCP, UDP, ICMP or ICMPv6 with at
/// least [`SHORT_STAMP_LEN`] payload bytes (the long stamp from
/// [`RX_STAMP_LEN`]). None otherwise (not stamped).
pub fn spot(frame: &[u8]) -> Option<StampSpot> {
    let (_, _, l4, csum_at) = stampable(frame)?;
    let len = match l4.payload_len {
        n if n >= RX_STAMP_LEN => RX_STAMP_LEN,
        n if n >= SHORT_STAMP_LEN => SHORT_STAMP_LEN,
        _ => return None,
    };
    Some(StampSpot {
        at: l4.end() - len,
        len,
        cover: Cover {
            start: l4.offset,
            at: l4.offset + csum_at,
            udp: l4.proto == PROTO_UDP,
        },
    })
}

/// The layers of a frame a stamp can go into (an unfragmented IPv4 or
/// IPv6 packet, captured whole, carrying TCP, UDP, ICMP or ICMPv6), with
/// the offset of its L4 checksum within the L4 header.
fn stampable(frame: &[u8]) -> Option<(crate::Layers, crate::Ip, crate::L4, usize)> {
    let layers = parse_layers(frame);
    let (ip, l4) = (layers.ip?, layers.l4?);
    // A cut frame (the capture's snap length) has no end to stamp.
    if ip.is_fragment() || l4.header_len == 0 || layers.ip_end()? != l4.end() {
        return None;
    }
    let csum_at = match l4.proto {
        PROTO_TCP => 16,
        PROTO_UDP => 6,
        PROTO_ICMP | PROTO_ICMPV6 => 2,
        _ => return None,
    };
    Some((layers, ip, l4, csum_at))
}

/// Writes `s` at `spot` in `frame` and updates the L4 checksum.
pub fn write(frame: &mut [u8], spot: &StampSpot, s: &RxStamp) {
    let region = spot.at..spot.at + spot.len;
    let mut old = [0u8; RX_STAMP_LEN];
    old[..spot.len].copy_from_slice(&frame[region.clone()]);
    frame[region].copy_from_slice(&s.bytes(spot.len)[..spot.len]);
    spot.cover.update(frame, spot.at, &old[..spot.len]);
}

/// The stamp `frame` carries, if any.
#[inline]
pub fn read(frame: &[u8]) -> Option<RxStamp> {
    match plain_udp4(frame) {
        Some(end) => at_end(frame, end, end.checked_sub(PLAIN_UDP4_PAYLOAD)?),
        None => read_walked(frame),
    }
}

/// Where a plain frame's UDP payload starts: Ethernet, IPv4 without
/// options, UDP.
const PLAIN_UDP4_PAYLOAD: usize = 42;

/// The end of the UDP payload of a frame that is plain Ethernet, IPv4
/// without options and not a fragment, and UDP (what `--rx-stamp` sends
/// unless told otherwise): found without walking the headers, as the
/// walk would find it. `None` for every other frame.
#[inline]
fn plain_udp4(frame: &[u8]) -> Option<usize> {
    let h = frame.get(..PLAIN_UDP4_PAYLOAD)?;
    // IPv4 with a 20-byte header; neither more fragments nor an offset.
    let plain = h[12..14] == ETHERTYPE_IPV4.to_be_bytes()
        && h[14] == 0x45
        && h[20] & 0x3f == 0
        && h[21] == 0
        && h[23] == PROTO_UDP;
    if !plain {
        return None;
    }
    let ip_len = usize::from(u16::from_be_bytes([h[16], h[17]]));
    Some(frame.len().min(ETH_HEADER_LEN + ip_len))
}

/// `read` for any frame: the headers walked to the L4 payload's end.
#[inline(never)]
fn read_walked(frame: &[u8]) -> Option<RxStamp> {
    let layers = parse_layers(frame);
    // A first fragment's end is not its datagram's.
    if layers.ip?.is_fragment() {
        return None;
    }
    let l4 = layers.l4?;
    if l4.header_len == 0 {
        return None;
    }
    at_end(frame, l4.end(), l4.payload_len)
}

/// The stamp at the end (`end`) of an L4 payload of `payload_len` bytes.
#[inline]
fn at_end(frame: &[u8], end: usize, payload_len: usize) -> Option<RxStamp> {
    if payload_len < SHORT_STAMP_LEN {
        return None;
    }
    let u64_of = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    if payload_len >= RX_STAMP_LEN {
        let b = frame.get(end - RX_STAMP_LEN..end)?;
        if b[..4] == RX_STAMP_MAGIC {
            return Some(RxStamp {
                stream: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                seq: u64_of(&b[8..16]),
                tx_ns: u64_of(&b[16..24]),
                short: false,
            });
        }
        return None;
    }
    let b = frame.get(end - SHORT_STAMP_LEN..end)?;
    if b[..2] != SHORT_STAMP_MAGIC {
        return None;
    }
    Some(RxStamp {
        stream: u32::from(u16::from_be_bytes([b[2], b[3]])),
        seq: u64::from(u32::from_be_bytes([b[4], b[5], b[6], b[7]])),
        tx_ns: u64_of(&b[8..16]),
        short: true,
    })
}

/// A datagram payload with its stamp (the kernel or a template builds the
/// headers and checksums around it): `payload` into `out`, 24 zero bytes
/// added with `append`, then the stamp `s` gives over its end (the short
/// one for 16 to 23 bytes). False when the payload has no room (under 16
/// bytes): `out` then holds it unstamped, and `s` is not asked.
pub fn stamp_payload(
    out: &mut Vec<u8>,
    payload: &[u8],
    append: bool,
    s: impl FnOnce() -> RxStamp,
) -> bool {
    out.clear();
    out.extend_from_slice(payload);
    if append {
        out.extend_from_slice(&[0; RX_STAMP_LEN]);
    }
    let len = match out.len() {
        n if n >= RX_STAMP_LEN => RX_STAMP_LEN,
        n if n >= SHORT_STAMP_LEN => SHORT_STAMP_LEN,
        _ => return false,
    };
    let at = out.len() - len;
    out[at..].copy_from_slice(&s().bytes(len)[..len]);
    true
}

/// `--rx-stamp append`: makes room for a stamp by lengthening the L4
/// payload of the frame at `data[start..]` (the last one in `data`) by
/// [`RX_STAMP_LEN`] zero bytes, IP and UDP lengths and checksums set (an
/// appended frame's checksums are computed). A frame [`spot`] would not
/// stamp, or that would grow past 65 535 bytes of IP, is left alone.
pub fn append_room(data: &mut Vec<u8>, start: usize) {
    let Some((layers, ip, l4, _)) = stampable(&data[start..]) else {
        return;
    };
    if ip.packet_len() + RX_STAMP_LEN > 65_535 {
        return;
    }
    let end = start + l4.end();
    data.splice(end..end, [0u8; RX_STAMP_LEN]);
    let frame = &mut data[start..];
    let l3 = layers.l3_offset;
    let grow = |f: &mut [u8], at: usize| {
        let v = u16::from_be_bytes([f[at], f[at + 1]]) + RX_STAMP_LEN as u16;
        f[at..at + 2].copy_from_slice(&v.to_be_bytes());
    };
    match ip {
        crate::Ip::V4 { .. } => grow(frame, l3 + 2),
        crate::Ip::V6 { .. } => grow(frame, l3 + 4),
    }
    if l4.proto == PROTO_UDP {
        grow(frame, l4.offset + 4);
    }
    crate::payload::recompute_checksums(frame, false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::tests::{tcp6_frame, udp4_frame};
    use crate::verify_checksums;

    #[test]
    fn a_stamp_keeps_checksums_right_and_reads_back() {
        for base in [udp4_frame(), tcp6_frame()] {
            let mut f = base.clone();
            let Some(s) = spot(&f) else {
                // Too short a payload: make room first.
                let mut d = base.clone();
                append_room(&mut d, 0);
                assert_eq!(d.len(), base.len() + RX_STAMP_LEN);
                verify_checksums(&d).unwrap();
                f = d;
                let s = spot(&f).expect("room made");
                let st = RxStamp {
                    stream: 7,
                    seq: u64::MAX - 1,
                    tx_ns: 1_795_000_000_123_456_789,
                    short: false,
                };
                write(&mut f, &s, &st);
                verify_checksums(&f).unwrap();
                assert_eq!(read(&f), Some(st));
                continue;
            };
            let st = RxStamp {
                stream: 1,
                seq: 42,
                tx_ns: 5,
                short: false,
            };
            write(&mut f, &s, &st);
            verify_checksums(&f).unwrap();
            assert_eq!(read(&f), Some(st));
            // A second stamp over the first: still right.
            let st2 = RxStamp {
                stream: 2,
                seq: 43,
                tx_ns: 6,
                short: false,
            };
            write(&mut f, &s, &st2);
            verify_checksums(&f).unwrap();
            assert_eq!(read(&f), Some(st2));
        }
    }

    #[test]
    fn the_plain_frames_shortcut_reads_what_the_walk_reads() {
        // Stamped frames (long and short stamps) with the bytes the
        // shortcut looks at, and the IP length, set to values around its
        // conditions; cut anywhere. Each reads as the walk reads it.
        let mut long = udp4_frame();
        append_room(&mut long, 0);
        let st = RxStamp {
            stream: 5,
            seq: 6,
            tx_ns: 7,
            short: false,
        };
        let at = spot(&long).unwrap();
        write(&mut long, &at, &st);
        let mut short = long.clone();
        short.truncate(14 + 20 + 8 + 18);
        short[16..18].copy_from_slice(&46u16.to_be_bytes());
        let at = spot(&short).unwrap();
        write(&mut short, &at, &st);
        let (mut shortcut, mut stamped) = (0, 0);
        for base in [long, short] {
            let ip_len = u16::from_be_bytes([base[16], base[17]]);
            for (at, values) in [
                (12, vec![0x08, 0x81, 0x86]),
                (13, vec![0x00, 0xdd]),
                (14, vec![0x45, 0x46, 0x55, 0x44]),
                (20, vec![0x00, 0x20, 0x40, 0x80, 0x01]),
                (21, vec![0x00, 0x01, 0xff]),
                (23, vec![17, 6, 1]),
            ] {
                for v in values {
                    for len in [ip_len - 1, ip_len, ip_len + 1, 7, 27, 28, 0, 0xffff] {
                        let mut f = base.clone();
                        f[at] = v;
                        f[16..18].copy_from_slice(&len.to_be_bytes());
                        for cut in [f.len(), f.len() - 1, 60, 42, 41, 14, 0] {
                            let g = &f[..cut.min(f.len())];
                            let got = read(g);
                            assert_eq!(
                                got,
                                read_walked(g),
                                "byte {at} = {v:#x}, ip length {len}, {cut} bytes"
                            );
                            shortcut += usize::from(plain_udp4(g).is_some());
                            stamped += usize::from(got.is_some());
                        }
                    }
                }
            }
        }
        assert!(shortcut > 100 && stamped > 20, "{shortcut} {stamped}");
    }

    #[test]
    fn odd_offsets_padding_and_short_payloads() {
        // A UDP payload of odd length puts the stamp at an odd offset from
        // the UDP header; Ethernet padding follows the IP packet.
        let mut d = udp4_frame();
        for _ in 0..2 {
            append_room(&mut d, 0);
        }
        let mut odd = d.clone();
        let n = odd.len();
        odd.insert(n - 1, 0xab);
        // Fix the lengths and checksum for the one byte more.
        for at in [16, 38] {
            let v = u16::from_be_bytes([odd[at], odd[at + 1]]) + 1;
            odd[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
        odd[24..26].fill(0);
        let c = crate::ipv4_header_checksum(&odd[14..34]);
        odd[24..26].copy_from_slice(&c.to_be_bytes());
        crate::complete_checksum(&mut odd);
        odd.extend_from_slice(&[0; 5]); // padding
        verify_checksums(&odd).unwrap();
        let s = spot(&odd).unwrap();
        assert_eq!(s.at, odd.len() - 5 - RX_STAMP_LEN);
        let st = RxStamp {
            stream: 3,
            seq: 9,
            tx_ns: 77,
            short: false,
        };
        write(&mut odd, &s, &st);
        verify_checksums(&odd).unwrap();
        assert_eq!(read(&odd), Some(st));
        // A 64-byte frame (18 UDP payload bytes) takes the short stamp.
        let mut small = udp4_frame();
        small.truncate(14 + 20 + 8 + 18);
        small[16..18].copy_from_slice(&46u16.to_be_bytes());
        small[38..40].copy_from_slice(&26u16.to_be_bytes());
        small[24..26].fill(0);
        let c = crate::ipv4_header_checksum(&small[14..34]);
        small[24..26].copy_from_slice(&c.to_be_bytes());
        crate::complete_checksum(&mut small);
        let s = spot(&small).unwrap();
        assert_eq!(
            (s.at, s.len),
            (small.len() - SHORT_STAMP_LEN, SHORT_STAMP_LEN)
        );
        let st = RxStamp {
            stream: 0x1_0005,
            seq: (1 << 32) + 7,
            tx_ns: 99,
            short: false,
        };
        write(&mut small, &s, &st);
        verify_checksums(&small).unwrap();
        let got = read(&small).unwrap();
        assert_eq!(
            (got.stream, got.seq, got.tx_ns, got.short),
            (5, 7, 99, true)
        );
        // Nothing to stamp: no IP.
        assert_eq!(spot(&[0u8; 60]), None);
        assert_eq!(read(&[0u8; 60]), None);
    }
}
