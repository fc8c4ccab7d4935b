//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Every checksum sluice touches — the IPv4 header checksum, TCP, UDP,
//! ICMP and ICMPv6 — is the 16-bit one's complement of the one's complement
//! sum of 16-bit big-endian words. The work is split in two steps so a
//! caller can accumulate several pieces (pseudo header, L4 header, payload)
//! without copying them into one buffer:
//!
//! 1. [`sum16`] adds bytes into a 32-bit accumulator, starting from an
//!    `initial` value returned by a previous call or by [`pseudo_header_v4`]
//!    / [`pseudo_header_v6`]; it returns the sum with its carries added
//!    back (at most 0xffff) but not complemented;
//! 2. [`fold`] folds the carries back in and complements, giving the value
//!    to store in the checksum field.
//!
//! Design decision: the accumulator is widened to `u64` inside [`sum16`] and
//! summed eight bytes at a time, in native byte order, as two 32-bit halves.
//! A 32-bit word `hi·2¹⁶ + lo` is congruent to `hi + lo` modulo `0xffff`
//! (because `2¹⁶ ≡ 1`), so summing 32-bit words gives the same one's
//! complement result as summing 16-bit words; the sum is byte-order
//! independent (RFC 1071 §2(B)), so a little-endian sum is swapped once at
//! the end instead of swapping every word, a cost paid per payload byte
//! (see docs/BENCHMARKS.md). The public accumulator is a `u32` holding at
//! most 0xffff, so chaining calls and adding pseudo header fields to it
//! cannot overflow.
//!
//! Only the last piece of a chained sum may have an odd length: an odd
//! length is padded with one zero byte, which is right only at the very end
//! of the checksummed data.

/// Adds `data` to the one's complement accumulator `initial` and returns the
/// new accumulator, not complemented (pass it to [`fold`] or to another
/// `sum16` call). The result has its carries added back and is at most
/// 0xffff, so adding a few 16-bit values to it (pseudo header fields) is
/// safe.
///
/// Words are big-endian (network order). An odd trailing byte is padded
/// with a zero byte, as RFC 1071 prescribes.
pub fn sum16(data: &[u8], initial: u32) -> u32 {
    // Native (little-endian) order, eight bytes at a time as two 32-bit
    // halves: the one's complement sum is byte-order independent (RFC 1071
    // §2(B)), so the folded little-endian sum only needs its two bytes
    // swapped at the end. Each step adds < 2³³, so a u64 cannot overflow
    // below 2³¹ steps (16 GiB).
    let mut acc = 0u64;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        acc += (v & 0xffff_ffff) + (v >> 32);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        // Zero padding at the end: an odd trailing byte becomes the high
        // byte of a big-endian word, as RFC 1071 prescribes.
        let mut tail = [0u8; 8];
        tail[..rest.len()].copy_from_slice(rest);
        let v = u64::from_le_bytes(tail);
        acc += (v & 0xffff_ffff) + (v >> 32);
    }
    // End-around carries down to 16 bits (2^16 ≡ 1 mod 0xffff).
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    let mut sum = u32::from((acc as u16).swap_bytes()) + (initial & 0xffff) + (initial >> 16);
    // The result stays ≤ 0xffff so callers can add a few more values.
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// Folds the carries of a [`sum16`] accumulator into 16 bits and returns its
/// one's complement: the value to write into a checksum field.
///
/// When verifying, sum the data *including* the stored checksum: the data is
/// intact exactly when `fold(sum) == 0`.
pub fn fold(sum: u32) -> u16 {
    let mut s = sum;
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The IPv4 header checksum of `header` (the whole header, options
/// included), computed with the checksum field (bytes 10..12) taken as zero
/// whatever it holds. A header shorter than 12 bytes is summed as it is.
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    if header.len() < 12 {
        return fold(sum16(header, 0));
    }
    fold(sum16(&header[12..], sum16(&header[..10], 0)))
}

/// RFC 1624 equation 3: the new checksum after one 16-bit word of the
/// checksummed data changed from `old` to `new`, without re-reading the
/// data: `HC' = ~(~HC + ~m + m')`.
///
/// Unlike RFC 1141's equation 2, equation 3 agrees with a full
/// recomputation in the boundary case RFC 1624 §4 shows (it gives 0x0000
/// where equation 2 gives 0xffff).
pub fn incremental_update(old_csum: u16, old: u16, new: u16) -> u16 {
    let sum = u32::from(!old_csum) + u32::from(!old) + u32::from(new);
    fold(sum)
}

/// The one's complement sum of the IPv4 pseudo header used by TCP and UDP:
/// source and destination addresses, zero, protocol, and the L4 length.
/// Feed the result to [`sum16`] as its `initial` value.
pub fn pseudo_header_v4(src: &[u8; 4], dst: &[u8; 4], proto: u8, l4_len: u16) -> u32 {
    let s = sum16(src, 0);
    let s = sum16(dst, s);
    s + u32::from(proto) + u32::from(l4_len)
}

/// The one's complement sum of the IPv6 pseudo header (RFC 8200 §8.1) used
/// by TCP, UDP and ICMPv6: source, final destination, the 32-bit
/// upper-layer length and the next header value. Feed the result to
/// [`sum16`] as its `initial` value.
pub fn pseudo_header_v6(src: &[u8; 16], dst: &[u8; 16], proto: u8, l4_len: u32) -> u32 {
    let s = sum16(src, 0);
    let s = sum16(dst, s);
    s + (l4_len >> 16) + (l4_len & 0xffff) + u32::from(proto)
}

/// A checksum over a region of a frame (a UDP or GRE header and what
/// follows), to update when bytes inside the region change: an outer
/// header's over a tunnelled packet, an L4 checksum over a receive stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cover {
    /// Where the checksummed data start (the UDP or GRE header).
    pub start: usize,
    /// Where the checksum field sits.
    pub at: usize,
    /// A UDP checksum: 0 means none and stays 0; a computed 0 is sent as
    /// 0xffff (RFC 768).
    pub udp: bool,
}

impl Cover {
    /// Updates the checksum after the bytes at `start` changed from `old`
    /// to what `frame` holds there now (RFC 1624 equation 3 over the sums
    /// of the two versions): a checksum that was wrong stays as wrong.
    pub fn update(&self, frame: &mut [u8], start: usize, old: &[u8]) {
        let Some(stored) = crate::layers::be16(frame, self.at) else {
            return;
        };
        if self.udp && stored == 0 {
            return;
        }
        let sums = |b: &[u8]| {
            let s = sum16(b, 0) as u16;
            // Data at an odd distance from the checksum's start sit in the
            // other byte of each word.
            if (start - self.start) % 2 == 1 {
                s.swap_bytes()
            } else {
                s
            }
        };
        let (m, m2) = (sums(old), sums(&frame[start..start + old.len()]));
        let c = fold(u32::from(!stored) + u32::from(!m) + u32::from(m2));
        self.store(frame, c);
    }

    /// Computes a GRE checksum over `start..end`; UDP checksums are left
    /// to the caller's full recompute (they need the pseudo header).
    pub fn recompute_gre(&self, frame: &mut [u8], end: usize) {
        if self.udp || self.at + 2 > end || end > frame.len() {
            return;
        }
        frame[self.at..self.at + 2].fill(0);
        let c = fold(sum16(&frame[self.start..end], 0));
        self.store(frame, c);
    }

    fn store(&self, frame: &mut [u8], c: u16) {
        let c = if self.udp && c == 0 { 0xffff } else { c };
        frame[self.at..self.at + 2].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 §3 numerical example.
    #[test]
    fn agrees_with_a_plain_16_bit_sum_for_every_length_and_start() {
        // The textbook definition: big-endian 16-bit words, end-around carry.
        fn naive(data: &[u8], initial: u32) -> u32 {
            let mut acc = u64::from(initial);
            for w in data.chunks(2) {
                acc += u64::from(w[0]) << 8 | u64::from(*w.get(1).unwrap_or(&0));
            }
            while acc > 0xffff {
                acc = (acc & 0xffff) + (acc >> 16);
            }
            acc as u32
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let data: Vec<u8> = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for len in 0..data.len() {
            for initial in [0, 1, 0xfffe, 0xffff] {
                assert_eq!(
                    fold(sum16(&data[..len], initial)),
                    fold(naive(&data[..len], initial)),
                    "len {len} initial {initial:#x}"
                );
            }
        }
        assert_eq!(fold(sum16(&[0xff; 64], 0)), fold(naive(&[0xff; 64], 0)));
    }

    #[test]
    fn rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        let s = sum16(&data, 0);
        // Folded sum is 0xddf2; the checksum is its complement.
        assert_eq!(fold(s), !0xddf2);
        assert_eq!(fold(s), 0x220d);
    }

    #[test]
    fn odd_length_is_zero_padded() {
        assert_eq!(sum16(&[0xab], 0), 0xab00);
        assert_eq!(sum16(&[0x01, 0x02, 0xab], 0), 0x0102 + 0xab00);
        assert_eq!(sum16(&[1, 2, 3, 4, 5], 0), sum16(&[1, 2, 3, 4, 5, 0], 0));
        assert_eq!(
            sum16(&[1, 2, 3, 4, 5, 6, 7], 0),
            sum16(&[1, 2, 3, 4, 5, 6, 7, 0], 0)
        );
    }

    #[test]
    fn chained_sum_equals_one_shot() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1501).collect();
        let one = fold(sum16(&data, 0));
        for split in [0, 2, 4, 6, 100, 1000, 1500] {
            let s = sum16(&data[..split], 0);
            assert_eq!(fold(sum16(&data[split..], s)), one, "split {split}");
        }
    }

    #[test]
    fn large_input_does_not_overflow() {
        let data = vec![0xffu8; 1 << 20];
        // Every word is 0xffff, i.e. negative zero: the sum is 0xffff.
        assert_eq!(fold(sum16(&data, u32::MAX)), 0);
        let s = sum16(&data, 0);
        assert_eq!(fold(s), 0);
    }

    /// The textbook header (Wikipedia "IPv4 header checksum"):
    /// 4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7.
    const WIKI_HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    #[test]
    fn ipv4_header_known_checksum() {
        assert_eq!(ipv4_header_checksum(&WIKI_HEADER), 0xb861);
        // The field is ignored, whatever it holds.
        let mut h = WIKI_HEADER;
        h[10] = 0x12;
        h[11] = 0x34;
        assert_eq!(ipv4_header_checksum(&h), 0xb861);
        // Verification over the whole header (field included) folds to 0.
        assert_eq!(fold(sum16(&WIKI_HEADER, 0)), 0);
        // Short input does not panic.
        assert_eq!(ipv4_header_checksum(&[]), 0xffff);
        assert_eq!(
            ipv4_header_checksum(&WIKI_HEADER[..7]),
            fold(sum16(&WIKI_HEADER[..7], 0))
        );
    }

    /// RFC 1624 §4 example: HC = 0xdd2f, m = 0x5555 -> m' = 0x3285 gives
    /// HC' = 0x0000 with equation 3.
    #[test]
    fn rfc1624_example() {
        assert_eq!(incremental_update(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    #[test]
    fn incremental_matches_full_recompute() {
        // Decrement the TTL (high byte of word 4) and rewrite the total length.
        let mut h = WIKI_HEADER;
        let old_word = u16::from_be_bytes([h[8], h[9]]);
        h[8] -= 1;
        let new_word = u16::from_be_bytes([h[8], h[9]]);
        let inc = incremental_update(0xb861, old_word, new_word);
        assert_eq!(inc, ipv4_header_checksum(&h));

        let old_len = u16::from_be_bytes([h[2], h[3]]);
        h[2..4].copy_from_slice(&0x0014u16.to_be_bytes());
        let inc2 = incremental_update(inc, old_len, 0x0014);
        assert_eq!(inc2, ipv4_header_checksum(&h));
    }

    #[test]
    fn pseudo_headers() {
        // Pseudo header sums equal summing the explicit RFC 768 / RFC 8200
        // pseudo header layouts.
        let src = [192, 168, 0, 1];
        let dst = [10, 0, 0, 255];
        let explicit = [192, 168, 0, 1, 10, 0, 0, 255, 0, 17, 0x01, 0x2c];
        assert_eq!(
            fold(pseudo_header_v4(&src, &dst, 17, 300)),
            fold(sum16(&explicit, 0))
        );

        let s6: [u8; 16] = core::array::from_fn(|i| i as u8 * 7);
        let d6: [u8; 16] = core::array::from_fn(|i| 0xff - i as u8);
        let mut explicit6 = Vec::new();
        explicit6.extend_from_slice(&s6);
        explicit6.extend_from_slice(&d6);
        explicit6.extend_from_slice(&0x0001_0203u32.to_be_bytes());
        explicit6.extend_from_slice(&[0, 0, 0, 58]);
        assert_eq!(
            fold(pseudo_header_v6(&s6, &d6, 58, 0x0001_0203)),
            fold(sum16(&explicit6, 0))
        );
    }
}
