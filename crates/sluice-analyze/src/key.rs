//! The content key of a frame: a 64-bit hash of its captured bytes.
//!
//! Design decision: frames are matched by *content*, not by a signature or
//! sequence number the generator planted, so that any trace (a customer's
//! capture, a peer generator's output) can be judged. The key is 64-bit
//! FNV-1a over the captured bytes followed by the MurmurHash3 `fmix64`
//! finaliser. Why these: FNV-1a is tiny, dependency-free and stable; two
//! frames that differ in a single byte always get different FNV values
//! (each step is a bijection of the state), which is the common case for
//! generated traffic (a counter or checksum changes). Its low bits are
//! poorly mixed, though, and the matcher relies on keys being uniformly
//! distributed (interpolation search), so the bijective `fmix64` spreads
//! them; it does not add collisions. With 64 bits, a collision among 10
//! million distinct frames has probability about 3e-6.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `data`.
pub(crate) fn fnv1a64(data: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// MurmurHash3's 64-bit finaliser (a bijection that mixes all bits).
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The key that matches a capture frame to a reference frame.
pub fn frame_key(data: &[u8]) -> u64 {
    fmix64(fnv1a64(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn fnv1a_known_vectors() {
        // From the FNV reference test suite.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn one_byte_differences_never_collide() {
        let base = [0u8; 64];
        let mut keys = HashSet::new();
        assert!(keys.insert(frame_key(&base)));
        for pos in 0..64 {
            for v in 1..=255u8 {
                let mut f = base;
                f[pos] = v;
                assert!(keys.insert(frame_key(&f)), "collision at {pos}={v}");
            }
        }
        // Length matters too.
        assert!(keys.insert(frame_key(&base[..63])));
    }
}
