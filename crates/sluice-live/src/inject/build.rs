//! Frames from descriptions: headers (given, or built from fields), the
//! payload prefix, zeros up to the total length; then the IP and UDP
//! lengths and every checksum set. The zero tail adds nothing to a one's
//! complement sum, so only headers and prefix are summed.

use super::proto::{decode, descs, split, Desc, Fields, Head, Message, ProtoError};
use sluice_wire::checksum::{
    fold, ipv4_header_checksum, pseudo_header_v4, pseudo_header_v6, sum16,
};
use sluice_wire::layers::{parse_layers, Ip};
use std::net::IpAddr;

/// Appends the frame `d` describes to `out`; `macs` = (source,
/// destination) for frames built from fields.
pub fn build(out: &mut Vec<u8>, d: &Desc<'_>, macs: ([u8; 6], [u8; 6])) {
    let start = out.len();
    match d.head {
        Head::Raw(h) => out.extend_from_slice(h),
        Head::Fields(f) => write_fields(out, &f, macs),
    }
    let head_end = out.len() - start;
    out.extend_from_slice(d.prefix);
    let summed = out.len() - start;
    out.resize(start + usize::from(d.total_len), 0);
    fix(&mut out[start..], head_end, summed);
}

fn write_fields(out: &mut Vec<u8>, f: &Fields, (src_mac, dst_mac): ([u8; 6], [u8; 6])) {
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    let ttl = if f.ttl == 0 { 64 } else { f.ttl };
    match (f.src, f.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            out.extend_from_slice(&[
                0x08, 0x00, 0x45, f.tos, 0, 0, 0, 0, 0x40, 0, ttl, f.proto, 0, 0,
            ]);
            out.extend_from_slice(&s.octets());
            out.extend_from_slice(&d.octets());
        }
        (s, d) => {
            let s = to_v6(s);
            let d = to_v6(d);
            out.extend_from_slice(&[0x86, 0xdd]);
            let vtc = 0x6000_0000u32 | (u32::from(f.tos) << 20);
            out.extend_from_slice(&vtc.to_be_bytes());
            out.extend_from_slice(&[0, 0, f.proto, ttl]);
            out.extend_from_slice(&s);
            out.extend_from_slice(&d);
        }
    }
    out.extend_from_slice(&f.sport.to_be_bytes());
    out.extend_from_slice(&f.dport.to_be_bytes());
    if f.proto == 6 {
        out.extend_from_slice(&f.seq.to_be_bytes());
        out.extend_from_slice(&f.ack.to_be_bytes());
        out.extend_from_slice(&[5 << 4, f.tcp_flags]);
        out.extend_from_slice(&f.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
    } else {
        out.extend_from_slice(&[0, 0, 0, 0]);
    }
}

fn to_v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
    }
}

/// Sets the IP (and UDP) length fields of `frame` to its length and
/// recomputes the IPv4 header checksum and the TCP/UDP checksum; bytes
/// past `summed` are zero. Frames that are not IP, or whose headers do not
/// fit in `head_end`, are left as they are (a raw frame is the client's).
fn fix(frame: &mut [u8], head_end: usize, summed: usize) {
    let layers = parse_layers(&frame[..head_end]);
    let l3 = layers.l3_offset;
    let Some(ip) = layers.ip else { return };
    let ip_len = frame.len() - l3;
    let (proto, l4_at) = match ip {
        Ip::V4 {
            header_len,
            fragment,
            ..
        } => {
            let Ok(total) = u16::try_from(ip_len) else {
                return;
            };
            frame[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
            frame[l3 + 10..l3 + 12].copy_from_slice(&[0, 0]);
            let c = ipv4_header_checksum(&frame[l3..l3 + header_len]);
            frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
            if fragment {
                return;
            }
            (frame[l3 + 9], l3 + header_len)
        }
        Ip::V6 { fragment, .. } => {
            let Ok(payload) = u16::try_from(ip_len - 40) else {
                return;
            };
            frame[l3 + 4..l3 + 6].copy_from_slice(&payload.to_be_bytes());
            if fragment {
                return;
            }
            // The L4 header is found behind the extension headers once the
            // length covers it.
            match parse_layers(&frame[..head_end]).l4 {
                Some(l4) => (l4.proto, l4.offset),
                None => return,
            }
        }
    };
    let l4_len = frame.len() - l4_at;
    let csum_at = match proto {
        6 if head_end >= l4_at + 20 => l4_at + 16,
        17 if head_end >= l4_at + 8 => {
            frame[l4_at + 4..l4_at + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
            l4_at + 6
        }
        _ => return,
    };
    frame[csum_at..csum_at + 2].copy_from_slice(&[0, 0]);
    let pseudo = match ip {
        Ip::V4 { .. } => {
            let s: [u8; 4] = frame[l3 + 12..l3 + 16].try_into().expect("4 bytes");
            let d: [u8; 4] = frame[l3 + 16..l3 + 20].try_into().expect("4 bytes");
            pseudo_header_v4(&s, &d, proto, l4_len as u16)
        }
        Ip::V6 { .. } => {
            let s: [u8; 16] = frame[l3 + 8..l3 + 24].try_into().expect("16 bytes");
            let d: [u8; 16] = frame[l3 + 24..l3 + 40].try_into().expect("16 bytes");
            pseudo_header_v6(&s, &d, proto, l4_len as u32)
        }
    };
    let mut c = fold(sum16(&frame[l4_at..summed.max(l4_at)], pseudo));
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    frame[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Walks a client's byte stream as sluice does: every message split off,
/// decoded, every description of an accepted DESCS built. Returns the
/// descriptions built, or the first error. Never panics (tests and the
/// fuzz target drive it with arbitrary bytes).
pub fn walk_stream(bytes: &[u8]) -> Result<u64, ProtoError> {
    let mut pos = 0usize;
    let mut hello = false;
    let mut built = 0u64;
    let mut frame = Vec::new();
    let mut stored = super::payloads::Payloads::default();
    while let Some(m) = split(&bytes[pos..], pos as u64)? {
        match decode(m.kind, m.body, m.at, hello)? {
            Message::Hello(_) => hello = true,
            Message::Payload { id, bytes } => stored.store(id, bytes.to_vec(), m.at)?,
            Message::Descs { body, .. } => {
                stored.check(body, m.at)?;
                for d in descs(body) {
                    let d = Desc {
                        prefix: stored.prefix(&d),
                        ..d
                    };
                    frame.clear();
                    build(&mut frame, &d, ([2; 6], [4; 6]));
                    assert_eq!(frame.len(), usize::from(d.total_len), "frame length");
                    built += 1;
                }
            }
            Message::Bye => {}
        }
        pos += m.len;
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_wire::payload::verify_checksums;
    use std::net::Ipv4Addr;

    fn fields(proto: u8, src: IpAddr, dst: IpAddr) -> Fields {
        Fields {
            proto,
            tcp_flags: 0x18,
            ttl: 0,
            tos: 0,
            window: 1000,
            src,
            dst,
            sport: 1234,
            dport: 80,
            seq: 7,
            ack: 9,
        }
    }

    fn desc<'a>(head: Head<'a>, total: u16, prefix: &'a [u8]) -> Desc<'a> {
        Desc {
            seq: 1,
            time: 0,
            total_len: total,
            head,
            prefix,
            payload: None,
            pos: 0,
        }
    }

    const MACS: ([u8; 6], [u8; 6]) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 0x99]);

    #[test]
    fn frames_built_from_fields_have_right_lengths_and_checksums() {
        let v4 = |a| IpAddr::V4(Ipv4Addr::new(10, 0, 0, a));
        let v6 = |a: u16| IpAddr::V6(std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, a));
        for (f, total) in [
            (fields(6, v4(1), v4(2)), 1514u16),
            (fields(17, v4(1), v4(2)), 60),
            (fields(6, v6(1), v6(2)), 200),
            (fields(17, v6(1), v6(2)), 1514),
        ] {
            let mut out = Vec::new();
            build(&mut out, &desc(Head::Fields(f), total, b"hello"), MACS);
            assert_eq!(out.len(), usize::from(total));
            verify_checksums(&out).unwrap_or_else(|e| panic!("{f:?}: {e}"));
            let l = parse_layers(&out);
            assert_eq!(l.ip.unwrap().packet_len(), out.len() - 14);
            let l4 = l.l4.unwrap();
            assert_eq!(&out[l4.payload_offset..l4.payload_offset + 5], b"hello");
            assert!(out[l4.payload_offset + 5..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn raw_headers_get_lengths_and_checksums_fixed() {
        let mut first = Vec::new();
        let f = fields(17, "10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        build(&mut first, &desc(Head::Fields(f), 100, b""), MACS);
        // The same headers, with wrong lengths and checksums, made longer.
        let mut head = first[..42].to_vec();
        head[16] ^= 0x55;
        head[24] ^= 0xff;
        head[40] ^= 0x12;
        let mut out = Vec::new();
        build(&mut out, &desc(Head::Raw(&head), 300, b"xyz"), MACS);
        assert_eq!(out.len(), 300);
        verify_checksums(&out).unwrap();
        assert_eq!(&out[42..45], b"xyz");
    }

    #[test]
    fn a_raw_frame_that_is_not_ip_is_left_alone() {
        let head = [0xffu8; 14];
        let mut out = Vec::new();
        build(&mut out, &desc(Head::Raw(&head), 60, b"ab"), MACS);
        assert_eq!(&out[..14], &head);
        assert_eq!(&out[14..16], b"ab");
        assert_eq!(out.len(), 60);
    }
}
