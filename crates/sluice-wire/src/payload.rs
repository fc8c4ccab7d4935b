//! Payload rewriting (TCPivo §3.3) and checksum verification.
//!
//! TCPivo lets a replayer send captured traffic with its L4 payload kept,
//! zeroed (same length, e.g. to scrub private data while keeping the
//! packet-size distribution) or truncated (headers only, to stress
//! packet-rate rather than bandwidth). [`rewrite_payload`] does this in
//! place on one Ethernet frame and leaves every length field and checksum
//! consistent, so that receivers, middleboxes and the analyzer accept the
//! result. [`verify_checksums`] checks the IPv4 header and L4 checksums of a
//! frame; the tests and the analyzer use it.
//!
//! Design decisions:
//!
//! * **Full recompute, not incremental update.** Once the payload changed,
//!   the captured checksum says nothing useful. Recomputing from scratch
//!   (with the IPv4 or IPv6 pseudo header) also repairs checksums that were
//!   never valid in the capture, e.g. those left partial by checksum
//!   offload on the capturing host. The cost — one pass over at most the
//!   headers, since a zeroed payload adds nothing to the sum — is small.
//! * **Conservative where correctness cannot be guaranteed.** The frame is
//!   left byte-for-byte unchanged (`changed == false`) when:
//!   - it is an IP fragment (first or later): the L4 checksum covers the
//!     whole datagram, which no single fragment holds, and truncating a
//!     fragment would desynchronise the fragment offsets;
//!   - the frame holds fewer bytes than the IP length says (snaplen cut):
//!     the missing payload bytes are unknown, so no checksum can be fixed;
//!   - it is not IP, or its IP/L4 header is malformed (bad lengths, TCP
//!     data offset below 5, UDP length disagreeing with the IP length);
//!   - the L4 checksum needs a final destination that cannot be determined
//!     (an IPv6 routing header of an undecoded type with segments left);
//!   - it is an IPv6 jumbogram and the mode is `Truncate` (its length lives
//!     in a hop-by-hop option, which is left alone).
//! * **Other IP payloads** (GRE, ESP, SCTP, ...): `Zero` zeroes the whole IP
//!   payload and fixes nothing else (the IPv4 header checksum is unchanged
//!   because the header is); `Truncate` cuts right after the IP header
//!   (after the IPv6 extension headers) and fixes the IP length and the
//!   IPv4 header checksum. Their own integrity checks, if any, are not
//!   recomputed.
//! * UDP over IPv4 with checksum 0 means "no checksum" and stays 0; a
//!   computed UDP checksum of 0 is sent as 0xffff (RFC 768).
//! * `Truncate` cannot shrink a `&mut [u8]`: it returns the new length and
//!   the caller cuts the frame there. Bytes beyond it are left as they were.
//!   Ethernet padding after the IP packet is dropped along with the
//!   payload; a frame under 60 bytes is padded again by the NIC.

use std::fmt;
use std::str::FromStr;

use crate::checksum::{fold, ipv4_header_checksum, sum16};
use crate::layers::{
    be16, parse_full, Extra, FinalDst, Ip, Layers, L4, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP,
    PROTO_UDP,
};

const IPV6_HEADER_LEN: usize = 40;

/// What to do with the L4 payload of each frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PayloadMode {
    /// Send the payload as captured.
    #[default]
    Keep,
    /// Overwrite the payload with zero bytes, keeping its length.
    Zero,
    /// Cut the frame right after the L4 header.
    Truncate,
}

impl PayloadMode {
    /// The name [`FromStr`] accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadMode::Keep => "keep",
            PayloadMode::Zero => "zero",
            PayloadMode::Truncate => "truncate",
        }
    }
}

impl fmt::Display for PayloadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not a payload mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown payload mode {input:?}: expected one of \"keep\", \"zero\", \"truncate\"")]
pub struct ParsePayloadModeError {
    input: String,
}

impl FromStr for PayloadMode {
    type Err = ParsePayloadModeError;

    /// Parses `keep`, `zero` or `truncate` (ASCII case-insensitive,
    /// surrounding whitespace ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "keep" => Ok(PayloadMode::Keep),
            "zero" => Ok(PayloadMode::Zero),
            "truncate" => Ok(PayloadMode::Truncate),
            _ => Err(ParsePayloadModeError {
                input: s.to_owned(),
            }),
        }
    }
}

/// The outcome of [`rewrite_payload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    /// Whether the frame was modified (bytes or length).
    pub changed: bool,
    /// The length to send: the frame length, or for `Truncate` the offset
    /// right after the L4 header.
    pub new_len: usize,
}

/// A checksum that does not match the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumError {
    /// The IPv4 header checksum is wrong.
    #[error("bad IPv4 header checksum {found:#06x}, expected {expected:#06x}")]
    Ipv4Header {
        /// The value in the header.
        found: u16,
        /// The correct value.
        expected: u16,
    },
    /// The TCP, UDP, ICMP or ICMPv6 checksum is wrong.
    #[error("bad {} checksum {found:#06x}, expected {expected:#06x}", proto_name(*.proto))]
    L4 {
        /// IP protocol number.
        proto: u8,
        /// The value in the header.
        found: u16,
        /// The correct value.
        expected: u16,
    },
    /// The frame holds only part of the IP packet (snaplen cut): the L4
    /// checksum cannot be verified.
    #[error("frame holds {captured} of {needed} IP packet bytes: L4 checksum not verifiable")]
    Truncated {
        /// IP bytes in the frame.
        captured: usize,
        /// IP length according to the header.
        needed: usize,
    },
    /// The UDP length field is below 8 or beyond the IP payload.
    #[error("UDP length {udp_len} does not fit the {available}-byte IP payload")]
    UdpLength {
        /// The UDP length field.
        udp_len: usize,
        /// Bytes from the UDP header to the end of the IP packet.
        available: usize,
    },
}

fn proto_name(proto: u8) -> &'static str {
    match proto {
        PROTO_TCP => "TCP",
        PROTO_UDP => "UDP",
        PROTO_ICMP => "ICMP",
        PROTO_ICMPV6 => "ICMPv6",
        _ => "L4",
    }
}

/// How to compute the L4 checksum of one frame.
#[derive(Debug, Clone, Copy)]
struct L4Checksum {
    proto: u8,
    /// Frame offset of the L4 header (start of the checksummed data).
    start: usize,
    /// Frame offset of the 16-bit checksum field.
    field: usize,
    /// Pseudo header sum without the length (0 for ICMP).
    pseudo: u32,
    /// Whether a pseudo header (and so the length) is part of the sum.
    has_pseudo: bool,
    /// UDP over IPv4: 0 means "no checksum".
    zero_means_none: bool,
}

impl L4Checksum {
    /// The checksum of `frame[start..end]` with the field taken as zero.
    fn compute(&self, frame: &[u8], end: usize) -> u16 {
        let len = (end - self.start) as u32;
        let mut s = self.pseudo;
        if self.has_pseudo {
            s += (len >> 16) + (len & 0xffff);
        }
        let s = sum16(&frame[self.start..self.field], s);
        let s = sum16(&frame[self.field + 2..end], s);
        match fold(s) {
            0 if self.proto == PROTO_UDP => 0xffff,
            c => c,
        }
    }

    fn stored(&self, frame: &[u8]) -> u16 {
        u16::from_be_bytes([frame[self.field], frame[self.field + 1]])
    }

    /// UDP over IPv4 sent without a checksum (0): it stays 0.
    fn none(&self, frame: &[u8]) -> bool {
        self.zero_means_none && self.stored(frame) == 0
    }

    fn store(&self, frame: &mut [u8], value: u16) {
        frame[self.field..self.field + 2].copy_from_slice(&value.to_be_bytes());
    }
}

/// Why no checksum plan could be made.
enum NoPlan {
    /// The protocol has no checksum we maintain.
    NotChecksummed,
    /// The pseudo header's final destination is unknown.
    UnknownDestination,
}

fn checksum_plan(
    frame: &[u8],
    layers: &Layers,
    extra: &Extra,
    l4: &L4,
) -> Result<L4Checksum, NoPlan> {
    let field_at = match (l4.proto, l4.header_len) {
        (PROTO_TCP, h) if h >= 20 => 16,
        (PROTO_UDP, 8) => 6,
        (PROTO_ICMP | PROTO_ICMPV6, 8) => 2,
        _ => return Err(NoPlan::NotChecksummed),
    };
    let l3 = layers.l3_offset;
    let (pseudo, has_pseudo, zero_means_none) = match (layers.ip, extra.final_dst) {
        (Some(Ip::V4 { .. }), Some(FinalDst::V4(dst))) => {
            if l4.proto == PROTO_ICMP {
                (0, false, false)
            } else {
                let s = sum16(&frame[l3 + 12..l3 + 16], 0);
                (
                    sum16(&dst, s) + u32::from(l4.proto),
                    true,
                    l4.proto == PROTO_UDP,
                )
            }
        }
        (Some(Ip::V6 { .. }), Some(FinalDst::V6(dst))) => {
            let s = sum16(&frame[l3 + 8..l3 + 24], 0);
            (sum16(&dst, s) + u32::from(l4.proto), true, false)
        }
        _ => return Err(NoPlan::UnknownDestination),
    };
    Ok(L4Checksum {
        proto: l4.proto,
        start: l4.offset,
        field: l4.offset + field_at,
        pseudo,
        has_pseudo,
        zero_means_none,
    })
}

/// Applies `mode` to the L4 payload of an Ethernet frame, in place, and
/// fixes the lengths and checksums (see the module documentation for the
/// frames left unchanged). For `Truncate` the caller must cut the frame to
/// `new_len`.
pub fn rewrite_payload(frame: &mut [u8], mode: PayloadMode) -> Rewrite {
    let unchanged = Rewrite {
        changed: false,
        new_len: frame.len(),
    };
    if mode == PayloadMode::Keep {
        return unchanged;
    }
    let (layers, extra) = parse_full(frame);
    let (Some(ip), Some(l4)) = (layers.ip, layers.l4) else {
        return unchanged;
    };
    let l3 = layers.l3_offset;
    let ip_end = l3 + ip.packet_len();
    if ip.is_fragment() || ip_end > frame.len() || l4.end() != ip_end {
        return unchanged;
    }
    let plan = match checksum_plan(frame, &layers, &extra, &l4) {
        Ok(plan) => Some(plan),
        Err(NoPlan::NotChecksummed) => None,
        Err(NoPlan::UnknownDestination) => return unchanged,
    };
    if l4.proto == PROTO_UDP && plan.is_some() {
        let udp_len = be16(frame, l4.offset + 4).map_or(0, usize::from);
        if udp_len != ip_end - l4.offset {
            return unchanged;
        }
    }
    match mode {
        PayloadMode::Keep => unchanged,
        PayloadMode::Zero => {
            let payload = &mut frame[l4.payload_offset..ip_end];
            if payload.iter().all(|&b| b == 0) {
                return unchanged;
            }
            payload.fill(0);
            if let Some(plan) = plan {
                if !plan.none(frame) {
                    let c = plan.compute(frame, ip_end);
                    plan.store(frame, c);
                }
            }
            Rewrite {
                changed: true,
                new_len: frame.len(),
            }
        }
        PayloadMode::Truncate => {
            let new_len = l4.payload_offset;
            if new_len == frame.len() {
                return unchanged;
            }
            match ip {
                Ip::V4 { header_len, .. } => {
                    let total = (new_len - l3) as u16;
                    frame[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
                    let c = ipv4_header_checksum(&frame[l3..l3 + header_len]);
                    frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
                }
                Ip::V6 { .. } => {
                    if extra.jumbo {
                        return unchanged;
                    }
                    let payload_len = (new_len - l3 - IPV6_HEADER_LEN) as u16;
                    frame[l3 + 4..l3 + 6].copy_from_slice(&payload_len.to_be_bytes());
                }
            }
            if let Some(plan) = plan {
                if l4.proto == PROTO_UDP {
                    frame[l4.offset + 4..l4.offset + 6].copy_from_slice(&8u16.to_be_bytes());
                }
                if !plan.none(frame) {
                    let c = plan.compute(frame, new_len);
                    plan.store(frame, c);
                }
            }
            Rewrite {
                changed: true,
                new_len,
            }
        }
    }
}

/// Computes the IPv4 header checksum (where there is one) and the TCP,
/// UDP, ICMP or ICMPv6 checksum of a frame, whatever they held, but a UDP
/// checksum of 0 over IPv4 ("none"), which stays 0 as tcprewrite's
/// `--fixcsum` leaves it (VXLAN and GTP-U send none, RFC 7348). Over IPv6
/// 0 is not a checksum (RFC 8200) and is computed, as everywhere else in
/// this crate.
///
/// With `l4_by_device` (checksum offload), a TCP or UDP checksum the sink
/// leaves to the device ([`leave_checksum_to_device`]) is not computed.
pub(crate) fn recompute_checksums(frame: &mut [u8], l4_by_device: bool) {
    let layers = crate::layers::parse_layers(frame);
    let l3 = layers.l3_offset;
    if let Some(Ip::V4 { header_len, .. }) = layers.ip {
        if frame.len() >= l3 + header_len {
            let c = ipv4_header_checksum(&frame[l3..l3 + header_len]);
            frame[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        }
    }
    if !(l4_by_device && device_plan(frame).is_some()) {
        complete(frame, true);
    }
}

/// Completes the TCP, UDP, ICMP or ICMPv6 checksum of a frame whose
/// checksum was left to offload (`CHECKSUM_PARTIAL`: a frame taken from a
/// veth or loopback before the device computed it). True when a checksum
/// was written; frames we cannot checksum (fragments, cut short, unknown
/// protocols) are left as they are.
pub fn complete_checksum(frame: &mut [u8]) -> bool {
    complete(frame, false)
}

/// [`complete_checksum`]; with `keep_none`, a UDP checksum of 0 over IPv4
/// stays 0.
fn complete(frame: &mut [u8], keep_none: bool) -> bool {
    let (layers, extra) = parse_full(frame);
    let (Some(ip), Some(l4)) = (layers.ip, layers.l4) else {
        return false;
    };
    let ip_end = layers.l3_offset + ip.packet_len();
    if ip.is_fragment() || ip_end > frame.len() || l4.end() != ip_end {
        return false;
    }
    let Ok(plan) = checksum_plan(frame, &layers, &extra, &l4) else {
        return false;
    };
    if keep_none && plan.none(frame) {
        return false;
    }
    let c = plan.compute(frame, ip_end);
    plan.store(frame, c);
    true
}

/// Where a device is to compute an L4 checksum left to it
/// ([`leave_checksum_to_device`]): the sum runs from `start` to the end of
/// the frame and is stored at `start + offset` (a virtio-net header's
/// `csum_start` and `csum_offset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceChecksum {
    pub start: u16,
    pub offset: u16,
}

/// Leaves the TCP or UDP checksum of a frame to the device (checksum
/// offload): the field gets the pseudo header's sum, not complemented,
/// which is what a device that sums from the L4 header on expects
/// (`CHECKSUM_PARTIAL`). Returns where the device must sum and store, or
/// None for a frame left as it is: not TCP or UDP, an IP fragment, padded or
/// cut short (the device sums to the end of the frame), or UDP over IPv4
/// without a checksum (0).
pub fn leave_checksum_to_device(frame: &mut [u8]) -> Option<DeviceChecksum> {
    let plan = device_plan(frame)?;
    // Offsets a virtio-net header can hold, before the field is touched.
    let at = DeviceChecksum {
        start: u16::try_from(plan.start).ok()?,
        offset: u16::try_from(plan.field - plan.start).ok()?,
    };
    let len = (frame.len() - plan.start) as u32;
    let partial = !fold(plan.pseudo + (len >> 16) + (len & 0xffff));
    plan.store(frame, partial);
    Some(at)
}

/// The checksum a device can compute for `frame`, summing from the L4
/// header to the frame's end (see [`leave_checksum_to_device`]).
fn device_plan(frame: &[u8]) -> Option<L4Checksum> {
    let (layers, extra) = parse_full(frame);
    let (ip, l4) = (layers.ip?, layers.l4?);
    let ip_end = layers.l3_offset + ip.packet_len();
    if ip.is_fragment() || ip_end != frame.len() || l4.end() != ip_end {
        return None;
    }
    if l4.proto != PROTO_TCP && l4.proto != PROTO_UDP {
        return None;
    }
    let plan = checksum_plan(frame, &layers, &extra, &l4).ok()?;
    (!plan.none(frame)).then_some(plan)
}

/// Verifies the IPv4 header checksum and the TCP, UDP, ICMP or ICMPv6
/// checksum of an Ethernet frame.
///
/// `Ok` means every checksum that can be checked is right. Not checked (and
/// so not an error): non-IP frames, the L4 checksum of IP fragments (it
/// spans the datagram), other IP protocols, malformed L4 headers, a UDP
/// checksum of 0 over IPv4, an L4 checksum whose IPv6 routing header type
/// is not decoded. A frame shorter than its IP length gives
/// [`ChecksumError::Truncated`] once the IPv4 header checked out.
pub fn verify_checksums(frame: &[u8]) -> Result<(), ChecksumError> {
    let (layers, extra) = parse_full(frame);
    let Some(ip) = layers.ip else { return Ok(()) };
    let l3 = layers.l3_offset;
    if let Ip::V4 { header_len, .. } = ip {
        let header = &frame[l3..l3 + header_len];
        if fold(sum16(header, 0)) != 0 {
            return Err(ChecksumError::Ipv4Header {
                found: u16::from_be_bytes([header[10], header[11]]),
                expected: ipv4_header_checksum(header),
            });
        }
    }
    if ip.is_fragment() {
        return Ok(());
    }
    let ip_end = l3 + ip.packet_len();
    if ip_end > frame.len() {
        return Err(ChecksumError::Truncated {
            captured: frame.len() - l3,
            needed: ip.packet_len(),
        });
    }
    let Some(l4) = layers.l4 else { return Ok(()) };
    let Ok(plan) = checksum_plan(frame, &layers, &extra, &l4) else {
        return Ok(());
    };
    if plan.none(frame) {
        return Ok(());
    }
    let found = plan.stored(frame);
    let mut end = ip_end;
    if l4.proto == PROTO_UDP {
        let available = ip_end - l4.offset;
        let udp_len = be16(frame, l4.offset + 4).map_or(0, usize::from);
        match udp_len {
            0 if extra.jumbo => {}
            8.. if udp_len <= available => end = l4.offset + udp_len,
            _ => return Err(ChecksumError::UdpLength { udp_len, available }),
        }
    }
    let expected = plan.compute(frame, end);
    // Compare by verification (sum including the field folds to zero) so
    // that 0x0000 and 0xffff, both "negative zero", are accepted alike.
    let s = sum16(&frame[plan.start..end], plan.pseudo);
    let len = (end - plan.start) as u32;
    let s = if plan.has_pseudo {
        s + (len >> 16) + (len & 0xffff)
    } else {
        s
    };
    if fold(s) != 0 {
        return Err(ChecksumError::L4 {
            proto: l4.proto,
            found,
            expected,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::parse_layers;
    use crate::layers::tests::{hex, tcp6_frame, udp4_frame};

    /// ICMP echo request, zeek's `icmp_5-pings.pcap` frame 1 (valid):
    /// 172.16.133.2 -> 172.217.11.78, 56 data bytes.
    fn icmp4_frame() -> Vec<u8> {
        hex("a683 e70c 9064 000c 29cf 3015 0800 4500 \
             0054 946a 4000 4001 bd04 ac10 8502 acd9 \
             0b4e 0800 ef24 04ca 0001 8bcf cf5f 0000 \
             0000 db0d 0f00 0000 0000 1011 1213 1415 \
             1617 1819 1a1b 1c1d 1e1f 2021 2223 2425 \
             2627 2829 2a2b 2c2d 2e2f 3031 3233 3435 \
             3637")
    }

    /// MLDv2 report behind a hop-by-hop header (router alert), tcpdump's
    /// `icmpv6.pcap` frame 2 (valid).
    fn mld6_frame() -> Vec<u8> {
        hex("3333 0000 0016 0015 17cc e546 86dd 6000 \
             0000 0024 0001 fe80 0000 0000 0000 0215 \
             17ff fecc e546 ff02 0000 0000 0000 0000 \
             0000 0000 0016 3a00 0502 0000 0100 8f00 \
             1fc5 0000 0001 0400 0000 ff02 0000 0000 \
             0000 0000 0db8 1122 3344")
    }

    fn csum_at(frame: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([frame[at], frame[at + 1]])
    }

    #[test]
    fn mode_from_str() {
        assert_eq!("keep".parse(), Ok(PayloadMode::Keep));
        assert_eq!(" Zero ".parse(), Ok(PayloadMode::Zero));
        assert_eq!("TRUNCATE".parse(), Ok(PayloadMode::Truncate));
        let e = "strip".parse::<PayloadMode>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown payload mode \"strip\": expected one of \"keep\", \"zero\", \"truncate\""
        );
        for m in [PayloadMode::Keep, PayloadMode::Zero, PayloadMode::Truncate] {
            assert_eq!(m.to_string().parse(), Ok(m));
        }
    }

    #[test]
    fn real_frames_verify() {
        for f in [udp4_frame(), tcp6_frame(), icmp4_frame(), mld6_frame()] {
            assert_eq!(verify_checksums(&f), Ok(()));
        }
    }

    #[test]
    fn keep_is_a_no_op() {
        let mut f = udp4_frame();
        let r = rewrite_payload(&mut f, PayloadMode::Keep);
        assert_eq!(
            r,
            Rewrite {
                changed: false,
                new_len: 98
            }
        );
        assert_eq!(f, udp4_frame());
    }

    #[test]
    fn zero_udp4() {
        let mut f = udp4_frame();
        let r = rewrite_payload(&mut f, PayloadMode::Zero);
        assert_eq!(
            r,
            Rewrite {
                changed: true,
                new_len: 98
            }
        );
        assert!(f[42..].iter().all(|&b| b == 0));
        assert_eq!(f[..40], udp4_frame()[..40]);
        // Value confirmed independently with tshark.
        assert_eq!(csum_at(&f, 40), ZERO_UDP4_CSUM);
        assert_eq!(verify_checksums(&f), Ok(()));
        // Zeroing again changes nothing.
        assert!(!rewrite_payload(&mut f, PayloadMode::Zero).changed);
    }

    #[test]
    fn truncate_udp4() {
        let mut f = udp4_frame();
        let r = rewrite_payload(&mut f, PayloadMode::Truncate);
        assert_eq!(
            r,
            Rewrite {
                changed: true,
                new_len: 42
            }
        );
        let t = &f[..42];
        assert_eq!(u16::from_be_bytes([t[16], t[17]]), 28);
        assert_eq!(u16::from_be_bytes([t[38], t[39]]), 8);
        assert_eq!(csum_at(t, 24), TRUNC_UDP4_IP_CSUM);
        assert_eq!(csum_at(t, 40), TRUNC_UDP4_CSUM);
        assert_eq!(verify_checksums(t), Ok(()));
    }

    #[test]
    fn udp4_zero_checksum_stays_zero() {
        let mut f = udp4_frame();
        f[40] = 0;
        f[41] = 0;
        assert_eq!(verify_checksums(&f), Ok(()));
        assert!(rewrite_payload(&mut f, PayloadMode::Zero).changed);
        assert_eq!(csum_at(&f, 40), 0);
        let mut f = udp4_frame();
        f[40] = 0;
        f[41] = 0;
        let r = rewrite_payload(&mut f, PayloadMode::Truncate);
        assert_eq!(csum_at(&f[..r.new_len], 40), 0);
        assert_eq!(verify_checksums(&f[..r.new_len]), Ok(()));
    }

    #[test]
    fn zero_and_truncate_icmp4() {
        let mut f = icmp4_frame();
        assert!(rewrite_payload(&mut f, PayloadMode::Zero).changed);
        assert!(f[42..].iter().all(|&b| b == 0));
        assert_eq!(csum_at(&f, 36), ZERO_ICMP4_CSUM);
        assert_eq!(verify_checksums(&f), Ok(()));

        let mut f = icmp4_frame();
        let r = rewrite_payload(&mut f, PayloadMode::Truncate);
        assert_eq!(r.new_len, 42);
        assert_eq!(verify_checksums(&f[..42]), Ok(()));
        // Only the header is summed: type 8 code 0, id 0x04ca, seq 1.
        assert_eq!(
            csum_at(&f, 36),
            fold(sum16(&[8, 0, 0, 0, 0x04, 0xca, 0, 1], 0))
        );
    }

    #[test]
    fn zero_and_truncate_icmpv6_behind_hop_by_hop() {
        let mut f = mld6_frame();
        let r = rewrite_payload(&mut f, PayloadMode::Zero);
        assert!(r.changed);
        // ICMPv6 at 62, payload (after the 8-byte header) at 70.
        assert!(f[70..].iter().all(|&b| b == 0));
        assert_eq!(csum_at(&f, 64), ZERO_MLD6_CSUM);
        assert_eq!(verify_checksums(&f), Ok(()));

        let mut f = mld6_frame();
        let r = rewrite_payload(&mut f, PayloadMode::Truncate);
        assert_eq!(r.new_len, 70);
        // Payload length covers the hop-by-hop header and the ICMPv6 header.
        assert_eq!(u16::from_be_bytes([f[18], f[19]]), 16);
        assert_eq!(verify_checksums(&f[..70]), Ok(()));
    }

    #[test]
    fn tcp6_with_payload() {
        // Give the real SYN-ACK 5 bytes of data and a correct checksum.
        let mut f = tcp6_frame();
        f.extend_from_slice(b"hello");
        f[19] += 5;
        f[70] = 0;
        f[71] = 0;
        let l4 = parse_layers(&f).l4.unwrap();
        assert_eq!(l4.payload_len, 5);
        let mut s = sum16(&f[22..54], 0) + 6 + (f.len() - 54) as u32;
        s = sum16(&f[54..], s);
        let c = fold(s);
        f[70..72].copy_from_slice(&c.to_be_bytes());
        assert_eq!(verify_checksums(&f), Ok(()));

        let mut z = f.clone();
        assert!(rewrite_payload(&mut z, PayloadMode::Zero).changed);
        assert_eq!(&z[86..], &[0; 5]);
        assert_eq!(verify_checksums(&z), Ok(()));
        // Truncating gives back the captured SYN-ACK, byte for byte.
        let r = rewrite_payload(&mut f, PayloadMode::Truncate);
        assert_eq!(r.new_len, 86);
        assert_eq!(f[..86], tcp6_frame()[..]);
    }

    #[test]
    fn bad_checksums_are_reported() {
        let mut f = udp4_frame();
        f[40] ^= 0x01;
        assert_eq!(
            verify_checksums(&f),
            Err(ChecksumError::L4 {
                proto: 17,
                found: 0x7924,
                expected: 0x7824
            })
        );
        let mut f = udp4_frame();
        f[24] = 0;
        f[25] = 0;
        assert_eq!(
            verify_checksums(&f),
            Err(ChecksumError::Ipv4Header {
                found: 0,
                expected: 0x94ae
            })
        );
        assert_eq!(
            ChecksumError::L4 {
                proto: 6,
                found: 1,
                expected: 2
            }
            .to_string(),
            "bad TCP checksum 0x0001, expected 0x0002"
        );
        let mut f = tcp6_frame();
        f[60] ^= 0x80;
        assert!(matches!(
            verify_checksums(&f),
            Err(ChecksumError::L4 { proto: 6, .. })
        ));
        // UDP length beyond the IP payload.
        let mut f = udp4_frame();
        f[39] = 0x50;
        assert_eq!(
            verify_checksums(&f),
            Err(ChecksumError::UdpLength {
                udp_len: 0x50,
                available: 64
            })
        );
    }

    #[test]
    fn fragments_are_left_alone() {
        let mut f = udp4_frame();
        f[20] = 0x20; // MF
        let c = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let orig = f.clone();
        for mode in [PayloadMode::Zero, PayloadMode::Truncate] {
            assert_eq!(
                rewrite_payload(&mut f, mode),
                Rewrite {
                    changed: false,
                    new_len: 98
                }
            );
            assert_eq!(f, orig);
        }
        assert_eq!(verify_checksums(&f), Ok(()));
    }

    #[test]
    fn snaplen_cut_is_left_alone() {
        let orig = udp4_frame();
        let mut f = orig[..60].to_vec();
        for mode in [PayloadMode::Zero, PayloadMode::Truncate] {
            assert!(!rewrite_payload(&mut f, mode).changed);
            assert_eq!(f, orig[..60]);
        }
        assert_eq!(
            verify_checksums(&f),
            Err(ChecksumError::Truncated {
                captured: 46,
                needed: 84
            })
        );
    }

    #[test]
    fn non_ip_is_left_alone() {
        let arp = hex("ffff ffff ffff 0200 0000 0001 0806 0001 0800 0604 0001 0200 0000 0001");
        let mut f = arp.clone();
        for mode in [PayloadMode::Zero, PayloadMode::Truncate] {
            assert!(!rewrite_payload(&mut f, mode).changed);
        }
        assert_eq!(f, arp);
        assert_eq!(verify_checksums(&arp), Ok(()));
    }

    #[test]
    fn padding_is_dropped_by_truncate_and_kept_by_zero() {
        let mut f = icmp4_frame();
        f.truncate(42); // header-only echo: no payload
        f[17] = 28;
        let c = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let c = fold(sum16(&[8, 0, 0, 0, 0x04, 0xca, 0, 1], 0));
        f[36..38].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&[0xaa; 18]); // Ethernet padding to 60
        assert_eq!(verify_checksums(&f), Ok(()));
        assert!(!rewrite_payload(&mut f, PayloadMode::Zero).changed);
        assert_eq!(&f[42..], &[0xaa; 18]);
        assert_eq!(
            rewrite_payload(&mut f, PayloadMode::Truncate),
            Rewrite {
                changed: true,
                new_len: 42
            }
        );
        assert_eq!(verify_checksums(&f[..42]), Ok(()));
    }

    #[test]
    fn other_protocols() {
        // The UDP frame relabelled as GRE (47): the IP payload is opaque.
        let mut f = udp4_frame();
        f[23] = 47;
        let c = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let mut z = f.clone();
        assert!(rewrite_payload(&mut z, PayloadMode::Zero).changed);
        assert!(z[34..].iter().all(|&b| b == 0));
        assert_eq!(z[..34], f[..34]);
        assert_eq!(verify_checksums(&z), Ok(()));
        let r = rewrite_payload(&mut f, PayloadMode::Truncate);
        assert_eq!(r.new_len, 34);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 20);
        assert_eq!(verify_checksums(&f[..34]), Ok(()));
    }

    #[test]
    fn a_partial_checksum_is_completed() {
        for mut f in [udp4_frame(), tcp6_frame()] {
            let good = f.clone();
            // What offload leaves: some other value in the field.
            let field = if f[12..14] == [0x08, 0x00] {
                40
            } else {
                14 + 40 + 16
            };
            f[field] ^= 0x5a;
            assert!(verify_checksums(&f).is_err());
            assert!(complete_checksum(&mut f));
            assert_eq!(f, good);
        }
        let mut short = udp4_frame();
        short.truncate(30);
        assert!(!complete_checksum(&mut short));
    }

    /// What a device does with a checksum left to it (the kernel's
    /// `skb_checksum_help`): sum from `start` to the end, complement, store.
    fn device_completes(f: &mut [u8], at: DeviceChecksum) {
        let start = usize::from(at.start);
        let c = fold(sum16(&f[start..], 0));
        let field = start + usize::from(at.offset);
        f[field..field + 2].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn a_checksum_left_to_the_device_comes_out_right() {
        for f in [udp4_frame(), tcp6_frame()] {
            let good = f.clone();
            let mut partial = f.clone();
            let at = leave_checksum_to_device(&mut partial).expect("TCP/UDP offloaded");
            assert_eq!(usize::from(at.start), parse_layers(&f).l4.unwrap().offset);
            assert_ne!(partial, good, "the field holds the pseudo-header sum");
            device_completes(&mut partial, at);
            assert_eq!(partial, good);
        }
        // Left as they are: ICMP, UDP over IPv4 without a checksum, a frame
        // with padding after the IP packet, a cut one.
        let mut icmp = icmp4_frame();
        assert_eq!(leave_checksum_to_device(&mut icmp), None);
        assert_eq!(icmp, icmp4_frame());
        let mut none = udp4_frame();
        none[40..42].copy_from_slice(&[0, 0]);
        let kept = none.clone();
        assert_eq!(leave_checksum_to_device(&mut none), None);
        assert_eq!(none, kept);
        let mut padded = udp4_frame();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(leave_checksum_to_device(&mut padded), None);
        let mut short = udp4_frame();
        short.truncate(38);
        assert_eq!(leave_checksum_to_device(&mut short), None);
    }

    #[test]
    fn invalid_checksums_are_repaired() {
        // An offloaded (partial) checksum becomes a correct one.
        let mut f = udp4_frame();
        f[40] = 0x12;
        f[41] = 0x34;
        assert!(verify_checksums(&f).is_err());
        rewrite_payload(&mut f, PayloadMode::Zero);
        assert_eq!(csum_at(&f, 40), ZERO_UDP4_CSUM);
    }

    #[test]
    fn never_panics_on_garbage() {
        let mut x: u32 = 99;
        let seeds = [udp4_frame(), tcp6_frame(), icmp4_frame(), mld6_frame()];
        for n in 0..20_000usize {
            let mut f = seeds[n % 4].clone();
            f.truncate(n % (f.len() + 1));
            for _ in 0..(n % 5) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if !f.is_empty() {
                    let i = (x >> 8) as usize % f.len();
                    f[i] = (x >> 20) as u8;
                }
            }
            let _ = verify_checksums(&f);
            let mode = [PayloadMode::Zero, PayloadMode::Truncate][n % 2];
            let before_ok = verify_checksums(&f).is_ok();
            let r = rewrite_payload(&mut f, mode);
            assert!(r.new_len <= f.len());
            if r.changed && before_ok {
                assert_eq!(verify_checksums(&f[..r.new_len]), Ok(()), "frame {n}");
            }
        }
    }

    // Expected values, computed here and independently confirmed with
    // tshark 4.0 (`-o udp.check_checksum:TRUE` etc. report "Good"); the
    // same frames are part of tests/tshark.rs.
    const ZERO_UDP4_CSUM: u16 = 0xc75c;
    const TRUNC_UDP4_IP_CSUM: u16 = 0x94e6;
    const TRUNC_UDP4_CSUM: u16 = 0xc7cc;
    const ZERO_ICMP4_CSUM: u16 = 0xf334;
    const ZERO_MLD6_CSUM: u16 = 0x74e6;
}
