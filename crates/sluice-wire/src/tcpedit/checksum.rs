//! Checksums where and as tcprewrite computes them (tcpedit's
//! `fix_ipv4_checksums`, `fix_ipv6_checksums` and `do_checksum`), for
//! output byte-identical to its own: over the IP length, whatever the TCP
//! header's data offset says, a UDP checksum of 0 left 0.

use crate::layers::{PROTO_TCP, PROTO_UDP};
use crate::{fold, ipv4_header_checksum, parse_layers, sum16, Ip};

const PROTO_ICMP: u8 = 1;
const PROTO_ICMPV6: u8 = 58;

/// The checksums of `frame` (Ethernet) computed anew; `whole`: the record
/// holds the whole packet (captured length = original length). IPv4: the
/// L4 checksum of a whole packet that is no fragment and whose IP length
/// is the bytes after the L2 header (else none at all), then the header
/// checksum. IPv6: the L4 checksum of a whole packet where the header
/// chain ends in this frame (sluice leaves a later fragment's bytes and a
/// routing header's pseudo header to the rewrite).
pub fn tcpedit_checksums(frame: &mut [u8], whole: bool) {
    let l = parse_layers(frame);
    let l3 = l.l3_offset;
    match l.ip {
        Some(Ip::V4 {
            header_len,
            total_len,
            fragment,
            ..
        }) => {
            if frame.len() < l3 + 20 {
                return;
            }
            if whole && !fragment {
                if total_len != frame.len() - l3 {
                    return;
                }
                let proto = frame[l3 + 9];
                let src_dst = sum16(&frame[l3 + 12..l3 + 20], 0);
                l4_checksum(
                    frame,
                    proto,
                    l3 + header_len,
                    total_len.saturating_sub(header_len),
                    src_dst,
                );
            }
            if frame.len() >= l3 + header_len {
                let c = ipv4_header_checksum(&frame[l3..l3 + header_len]);
                frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
            }
        }
        Some(Ip::V6 { payload_len, .. }) if whole => {
            let Some(l4) = l.l4 else {
                return;
            };
            let ext = l4.offset - (l3 + 40);
            // tcpedit compares the payload length as stored (network
            // order, read as a host number) with the header's length.
            let raw = u16::from_le_bytes([frame[l3 + 4], frame[l3 + 5]]);
            if usize::from(raw) < 40 + ext {
                return;
            }
            let src_dst = sum16(&frame[l3 + 8..l3 + 40], 0);
            l4_checksum(
                frame,
                l4.proto,
                l4.offset,
                payload_len.saturating_sub(ext),
                src_dst,
            );
        }
        _ => {}
    }
}

/// tcpedit's `do_checksum` for one L4 protocol: `len` bytes from `at`
/// (cut to the frame), the pseudo header's addresses summed in `src_dst`.
fn l4_checksum(frame: &mut [u8], proto: u8, at: usize, len: usize, src_dst: u32) {
    let end = (at + len).min(frame.len());
    if at > end {
        return;
    }
    let (field, min, pseudo) = match proto {
        PROTO_TCP => (16, 20, true),
        PROTO_UDP => (6, 8, true),
        PROTO_ICMP => (2, 4, false),
        PROTO_ICMPV6 => (2, 4, true),
        _ => return,
    };
    if len < min || at + field + 2 > end {
        return;
    }
    if proto == PROTO_UDP && frame[at + 6..at + 8] == [0, 0] {
        return;
    }
    frame[at + field..at + field + 2].copy_from_slice(&[0, 0]);
    let mut sum = if pseudo {
        sum16(&[0, proto], src_dst) + (len as u32 & 0xffff)
    } else {
        0
    };
    sum = sum16(&frame[at..end], sum);
    let c = fold(sum);
    frame[at + field..at + field + 2].copy_from_slice(&c.to_be_bytes());
}
