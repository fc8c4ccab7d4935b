//! A symmetric flow hash, to keep the frames of one connection together.
//!
//! When the replay engine spreads frames over several senders (or the
//! analyzer groups them), both directions of a connection must land in the
//! same place, in order. [`flow_hash`] hashes the 5-tuple (IP addresses,
//! protocol, TCP/UDP ports) so that swapping source and destination gives
//! the same value.
//!
//! Design decisions:
//!
//! * Symmetry by ordering, not by XOR: the two (address, port) endpoints are
//!   sorted before hashing. XOR-ing source and destination would also be
//!   symmetric, but it maps every flow between equal halves (and every
//!   `a↔b` / `c↔d` pair with equal XOR) to the same value.
//! * IP fragments hash by addresses and protocol only, for first and later
//!   fragments alike, because later fragments carry no ports: all fragments
//!   of a datagram stay together (though not with the unfragmented packets
//!   of the same flow, as with NIC receive-side scaling). Non-IP frames hash
//!   by the (sorted) MAC pair.
//! * FNV-1a over the fields, then the MurmurHash3 64-bit finalizer so that
//!   the low bits — the ones `hash % senders` uses — depend on every input
//!   bit. No allocation, no random seed: the value is stable across runs,
//!   processes and machines, so a run can be reproduced.

use crate::layers::{parse_full, Ip, PROTO_TCP, PROTO_UDP};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

struct Fnv(u64);

impl Fnv {
    fn new(tag: u8) -> Fnv {
        let mut h = Fnv(FNV_OFFSET);
        h.write(&[tag]);
        h
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    fn finish(self) -> u64 {
        // MurmurHash3 fmix64.
        let mut k = self.0;
        k ^= k >> 33;
        k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
        k ^= k >> 33;
        k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        k ^ (k >> 33)
    }
}

const TAG_IPV4: u8 = 4;
const TAG_IPV6: u8 = 6;
const TAG_MAC: u8 = 0;
const TAG_RUNT: u8 = 0xff;

/// A symmetric hash of the frame's flow: the same for both directions of a
/// connection, stable across runs. See the module documentation for what
/// is hashed.
pub fn flow_hash(frame: &[u8]) -> u64 {
    let (layers, extra) = parse_full(frame);
    let l3 = layers.l3_offset;
    let Some(ip) = layers.ip else {
        if frame.len() < 12 {
            let mut h = Fnv::new(TAG_RUNT);
            h.write(frame);
            return h.finish();
        }
        let (a, b) = (&frame[0..6], &frame[6..12]);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let mut h = Fnv::new(TAG_MAC);
        h.write(lo);
        h.write(hi);
        return h.finish();
    };
    // parse_full only reports an IP header whose fixed part is captured.
    let (tag, src, dst, proto_field) = match ip {
        Ip::V4 { .. } => (
            TAG_IPV4,
            &frame[l3 + 12..l3 + 16],
            &frame[l3 + 16..l3 + 20],
            frame[l3 + 9],
        ),
        Ip::V6 { .. } => (
            TAG_IPV6,
            &frame[l3 + 8..l3 + 24],
            &frame[l3 + 24..l3 + 40],
            frame[l3 + 6],
        ),
    };
    let (proto, sport, dport) = if ip.is_fragment() {
        (extra.frag_proto.unwrap_or(proto_field), [0; 2], [0; 2])
    } else {
        match layers.l4 {
            Some(l4) if (l4.proto == PROTO_TCP || l4.proto == PROTO_UDP) && l4.header_len >= 8 => {
                let p = &frame[l4.offset..l4.offset + 4];
                (l4.proto, [p[0], p[1]], [p[2], p[3]])
            }
            Some(l4) => (l4.proto, [0; 2], [0; 2]),
            None => (proto_field, [0; 2], [0; 2]),
        }
    };
    let a = (src, sport);
    let b = (dst, dport);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut h = Fnv::new(tag);
    h.write(&[proto]);
    h.write(lo.0);
    h.write(&lo.1);
    h.write(hi.0);
    h.write(&hi.1);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::tests::{hex, tcp6_frame, udp4_frame};

    /// Swaps MACs, IP addresses and L4 ports: the reply direction.
    fn reverse(frame: &[u8], l3: usize, v6: bool, l4: Option<usize>) -> Vec<u8> {
        let mut r = frame.to_vec();
        r[0..6].copy_from_slice(&frame[6..12]);
        r[6..12].copy_from_slice(&frame[0..6]);
        let (s, d, n) = if v6 {
            (l3 + 8, l3 + 24, 16)
        } else {
            (l3 + 12, l3 + 16, 4)
        };
        r[s..s + n].copy_from_slice(&frame[d..d + n]);
        r[d..d + n].copy_from_slice(&frame[s..s + n]);
        if let Some(o) = l4 {
            r[o..o + 2].copy_from_slice(&frame[o + 2..o + 4]);
            r[o + 2..o + 4].copy_from_slice(&frame[o..o + 2]);
        }
        r
    }

    #[test]
    fn symmetric_udp4_and_tcp6() {
        let f = udp4_frame();
        assert_eq!(flow_hash(&f), flow_hash(&reverse(&f, 14, false, Some(34))));
        let f = tcp6_frame();
        assert_eq!(flow_hash(&f), flow_hash(&reverse(&f, 14, true, Some(54))));
    }

    #[test]
    fn sensitive_to_each_field() {
        let base = udp4_frame();
        let h = flow_hash(&base);
        for i in [26, 29, 30, 33, 34, 35, 36, 37] {
            let mut f = base.clone();
            f[i] ^= 1;
            assert_ne!(flow_hash(&f), h, "byte {i}");
        }
        // Payload, TTL, IP ID, MACs do not matter.
        for i in [0, 11, 18, 22, 50, 97] {
            let mut f = base.clone();
            f[i] ^= 1;
            assert_eq!(flow_hash(&f), h, "byte {i}");
        }
        // Protocol matters.
        let mut f = base.clone();
        f[23] = 47;
        assert_ne!(flow_hash(&f), h);
        // Swapping only the ports (not the addresses) is another flow.
        assert_ne!(flow_hash(&reverse(&base, 14, false, None)), h);
        let mut f = base.clone();
        f.swap(34, 36);
        f.swap(35, 37);
        assert_ne!(flow_hash(&f), h);
    }

    #[test]
    fn fragments_hash_without_ports() {
        let mut first = udp4_frame();
        first[20] = 0x20; // MF, offset 0
        let mut later = udp4_frame();
        later[21] = 0x07; // offset 7, last fragment
        later[34..42].fill(0x5a); // fragment data, not a UDP header
        assert_eq!(flow_hash(&first), flow_hash(&later));
        assert_ne!(flow_hash(&first), flow_hash(&udp4_frame()));
        assert_eq!(
            flow_hash(&later),
            flow_hash(&reverse(&later, 14, false, None))
        );
    }

    #[test]
    fn ipv6_fragments_hash_by_fragment_protocol() {
        let base = tcp6_frame();
        let with_frag = |fo: u16, data: &[u8]| {
            let mut f = base[..54].to_vec();
            f.extend_from_slice(&[6, 0]);
            f.extend_from_slice(&fo.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 9]);
            f.extend_from_slice(data);
            f[20] = 44;
            f[18..20].copy_from_slice(&((8 + data.len()) as u16).to_be_bytes());
            f
        };
        let first = with_frag(1, &base[54..]);
        let later = with_frag(4 << 3, &[0xaa; 16]);
        assert_eq!(flow_hash(&first), flow_hash(&later));
    }

    #[test]
    fn non_ip_by_mac_pair() {
        let arp = hex("0200 0000 0002 0200 0000 0001 0806 0001 0800 0604 0002");
        let mut rev = arp.clone();
        rev[0..6].copy_from_slice(&arp[6..12]);
        rev[6..12].copy_from_slice(&arp[0..6]);
        assert_eq!(flow_hash(&arp), flow_hash(&rev));
        let mut other = arp.clone();
        other[5] = 3;
        assert_ne!(flow_hash(&arp), flow_hash(&other));
        // Short frames hash without panicking.
        let _ = flow_hash(&[]);
        let _ = flow_hash(&arp[..7]);
    }

    #[test]
    fn stable_values() {
        // Pinned so that an accidental change of the hash (which would
        // reshuffle flows between senders across versions) is noticed.
        assert_eq!(flow_hash(&udp4_frame()), PINNED_UDP4);
        assert_eq!(flow_hash(&tcp6_frame()), PINNED_TCP6);
    }

    const PINNED_UDP4: u64 = 17_782_940_334_092_915_799;
    const PINNED_TCP6: u64 = 9_017_217_555_394_623_436;
}
