//! One worker's share of a job split over several (`--share K/N`): a
//! distributed run gives worker K of N the packets, flows or devices whose
//! key falls to it, and every worker computes the same keys, so each unit
//! of the job goes out exactly once. The key is stable across hosts and
//! runs (no per-process hash seed).

use std::fmt;
use std::net::IpAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// 0-based.
    pub index: u32,
    pub count: u32,
}

impl Share {
    /// Parses `K/N` (1-based K, as a user counts workers: `1/3`, `2/3`, `3/3`).
    pub fn parse(s: &str) -> Result<Share, String> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("'{s}': K/N expected, e.g. 2/3"))?;
        let k: u32 = k
            .trim()
            .parse()
            .map_err(|_| format!("'{s}': K is not a number"))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("'{s}': N is not a number"))?;
        if n == 0 || k == 0 || k > n {
            return Err(format!("'{s}': 1 <= K <= N expected"));
        }
        Ok(Share {
            index: k - 1,
            count: n,
        })
    }

    /// Whether the unit with this key is this share's.
    #[inline]
    pub fn takes(&self, key: u64) -> bool {
        // The key is mixed first: sequential keys (packet indices) spread
        // round-robin, hashed keys stay uniform.
        key % u64::from(self.count) == u64::from(self.index)
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// FNV-1a over bytes, then a final avalanche (splitmix64's finaliser) so
/// that `key % N` uses every bit.
pub fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A symmetric 5-tuple key: the same for both directions of a flow.
pub fn flow_key(src: IpAddr, sport: u16, dst: IpAddr, dport: u16, proto: u8) -> u64 {
    let end = |ip: IpAddr, port: u16| {
        let mut v = match ip {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        v.extend_from_slice(&port.to_be_bytes());
        v
    };
    let (a, b) = (end(src, sport), end(dst, dport));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    stable_hash(&[&lo, &hi, &[proto]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_and_cover_every_key_once() {
        assert_eq!(Share::parse("2/3"), Ok(Share { index: 1, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(Share::parse(bad).is_err(), "{bad}");
        }
        let shares: Vec<Share> = (1..=3)
            .map(|k| Share::parse(&format!("{k}/3")).unwrap())
            .collect();
        for key in 0..1000u64 {
            let k = stable_hash(&[&key.to_le_bytes()]);
            assert_eq!(shares.iter().filter(|s| s.takes(k)).count(), 1);
        }
    }

    #[test]
    fn flow_keys_are_symmetric_and_spread() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(flow_key(a, 1000, b, 80, 6), flow_key(b, 80, a, 1000, 6));
        assert_ne!(flow_key(a, 1000, b, 80, 6), flow_key(a, 1001, b, 80, 6));
        let s = Share::parse("1/4").unwrap();
        let n = (0..4000u16)
            .filter(|&p| s.takes(flow_key(a, p, b, 80, 17)))
            .count();
        assert!((800..1200).contains(&n), "{n}");
    }
}
