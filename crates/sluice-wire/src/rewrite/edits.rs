//! tcpedit's typed edits, each parsed from tcprewrite's own text: CIDR
//! maps (pseudo-NAT), port maps, TTL/hop-limit operations, 802.1Q
//! operations and what to do with frames cut by the snap length. The
//! rewrite (`super`) applies them; the compat front-ends build them.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// `A/n:B/m`: addresses in A become B's network with their own host bits
/// below B's prefix (a /32 or /128 B maps all of A onto B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CidrMap {
    pub from: (IpAddr, u8),
    pub to: (IpAddr, u8),
}

fn parse_cidr(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, n) = s.split_once('/').unwrap_or((s, ""));
    let addr: IpAddr = a
        .parse()
        .map_err(|_| format!("'{a}' is not an IP address"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let n = if n.is_empty() {
        max
    } else {
        n.parse::<u8>()
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| format!("'/{n}' is not a prefix length of {a} (0..={max})"))?
    };
    Ok((addr, n))
}

impl FromStr for CidrMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // IPv6 addresses hold colons: the separator is the colon after the
        // first prefix length ("/n:").
        let split = s
            .find('/')
            .and_then(|i| s[i..].find(':').map(|j| i + j))
            .or_else(|| s.find(':').filter(|_| !s.contains("::")));
        let Some(at) = split else {
            return Err(format!("'{s}': expected FROM/n:TO/m"));
        };
        let from = parse_cidr(&s[..at])?;
        let to = parse_cidr(&s[at + 1..])?;
        if from.0.is_ipv4() != to.0.is_ipv4() {
            return Err(format!("'{s}': both sides must be IPv4 or both IPv6"));
        }
        Ok(CidrMap { from, to })
    }
}

impl fmt::Display for CidrMap {
    /// `FROM/n:TO/m`, as [`CidrMap::from_str`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((a, n), (b, m)) = (self.from, self.to);
        write!(f, "{a}/{n}:{b}/{m}")
    }
}

fn mask(bits: u8, width: u32) -> u128 {
    if bits == 0 {
        0
    } else {
        (!0u128 << (width - u32::from(bits))) & (!0u128 >> (128 - width))
    }
}

impl CidrMap {
    /// Whether `addr` (4 or 16 bytes) lies in the map's source network.
    pub fn matches(&self, addr: &[u8]) -> bool {
        self.map(to_int(addr), addr.len() == 4).is_some()
    }

    /// Where the IPv4 address `a` goes, if it lies in the source network.
    pub fn map_v4(&self, a: [u8; 4]) -> Option<[u8; 4]> {
        self.map(to_int(&a), true).map(|n| (n as u32).to_be_bytes())
    }

    /// Where the address `a` (an integer; IPv4 in the low 32 bits) goes,
    /// if it lies in the source network.
    #[inline]
    pub(super) fn map(&self, a: u128, v4: bool) -> Option<u128> {
        if self.from.0.is_ipv4() != v4 {
            return None;
        }
        let width = if v4 { 32 } else { 128 };
        let fm = mask(self.from.1, width);
        if a & fm != ip_bits(self.from.0) & fm {
            return None;
        }
        let tm = mask(self.to.1, width);
        Some((ip_bits(self.to.0) & tm) | (a & !tm & mask(width as u8, width)))
    }

    #[cfg(test)]
    pub(super) fn apply_bytes(&self, addr: &mut [u8]) -> bool {
        match self.map(to_int(addr), addr.len() == 4) {
            Some(n) => {
                write_int(addr, n);
                true
            }
            None => false,
        }
    }
}

/// An address of 4 or 16 bytes as an integer.
#[inline]
pub(super) fn to_int(a: &[u8]) -> u128 {
    match a.len() {
        4 => u128::from(u32::from_be_bytes([a[0], a[1], a[2], a[3]])),
        _ => u128::from_be_bytes(a[..16].try_into().expect("16 bytes")),
    }
}

#[inline]
pub(super) fn write_int(a: &mut [u8], v: u128) {
    match a.len() {
        4 => a.copy_from_slice(&(v as u32).to_be_bytes()),
        _ => a[..16].copy_from_slice(&v.to_be_bytes()),
    }
}

fn ip_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

/// `--ttl`: set, or move up or down (saturating at 1 and 255).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlOp {
    Set(u8),
    Add(u8),
    Sub(u8),
}

impl FromStr for TtlOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}': expected N, +N or -N (0..=255)");
        let (op, n): (fn(u8) -> TtlOp, &str) = match s.as_bytes().first() {
            Some(b'+') => (TtlOp::Add, &s[1..]),
            Some(b'-') => (TtlOp::Sub, &s[1..]),
            _ => (TtlOp::Set, s),
        };
        // Digits only: `u8::from_str` would take a second sign (`++1`).
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Ok(op(n.parse().map_err(|_| bad())?))
    }
}

impl fmt::Display for TtlOp {
    /// `N`, `+N` or `-N`, as [`TtlOp::from_str`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TtlOp::Set(n) => write!(f, "{n}"),
            TtlOp::Add(n) => write!(f, "+{n}"),
            TtlOp::Sub(n) => write!(f, "-{n}"),
        }
    }
}

impl TtlOp {
    pub(super) fn apply(self, ttl: u8) -> u8 {
        match self {
            TtlOp::Set(n) => n,
            TtlOp::Add(n) => ttl.saturating_add(n),
            TtlOp::Sub(n) => ttl.saturating_sub(n).max(1),
        }
    }
}

/// `--portmap`: `FROM:TO`, or `LO-HI:TO` (a range onto one port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortMap {
    pub lo: u16,
    pub hi: u16,
    pub to: u16,
}

impl FromStr for PortMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}': expected FROM:TO or LO-HI:TO (ports 0..=65535)");
        let (from, to) = s.split_once(':').ok_or_else(bad)?;
        let (lo, hi) = from.split_once('-').unwrap_or((from, from));
        let p = |x: &str| x.trim().parse::<u16>().map_err(|_| bad());
        let (lo, hi, to) = (p(lo)?, p(hi)?, p(to)?);
        if lo > hi {
            return Err(bad());
        }
        Ok(PortMap { lo, hi, to })
    }
}

impl fmt::Display for PortMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}:{}", self.lo, self.to)
        } else {
            write!(f, "{}-{}:{}", self.lo, self.hi, self.to)
        }
    }
}

/// `--enet-vlan`: tcprewrite's add and del, and edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlanOp {
    /// Push a tag (TPID `proto`, 0x8100 or 0x88a8) in front of the frame's
    /// type; priority and CFI not given are taken from a tag the frame
    /// already has, else 0.
    Add {
        tag: u16,
        pri: Option<u8>,
        cfi: Option<bool>,
        proto: u16,
    },
    /// Remove the outermost tag (untagged frames are left alone).
    Del,
    /// Change the given fields of the outermost tag (untagged frames are
    /// left alone).
    Edit {
        tag: Option<u16>,
        pri: Option<u8>,
        cfi: Option<bool>,
    },
}

/// `--fixlen`: what to do with a frame cut short by the capture's snap
/// length (captured bytes < original length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixLen {
    /// Zeros up to the original length, checksums computed over them.
    Pad,
    /// Keep the captured bytes and make the IP length say so.
    Trunc,
    /// Drop the frame.
    Del,
}
