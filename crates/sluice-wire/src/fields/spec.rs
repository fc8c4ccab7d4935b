//! What a field is: its spec as a session or a template writes it, its
//! operation and value, and where in a frame it lives (`Target`).

use serde::Deserialize;

/// The most fields a session varies.
pub const MAX_FIELDS: usize = 16;

/// A field as a session writes it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// A named field.
    #[serde(default)]
    pub field: Option<String>,
    /// Or a byte offset in the frame and a width in bits (1..64).
    #[serde(default)]
    pub offset: Option<usize>,
    #[serde(default)]
    pub bits: Option<u8>,
    #[serde(default)]
    pub op: Op,
    #[serde(default)]
    pub from: Option<Value>,
    #[serde(default)]
    pub to: Option<Value>,
    #[serde(default)]
    pub step: Option<u64>,
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    #[serde(default)]
    pub per: Per,
    #[serde(default)]
    pub seed: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    #[default]
    Inc,
    Dec,
    Random,
    List,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    #[default]
    Flow,
    Packet,
}

/// A value: a number, or text: `0x…`, an IPv4 address (its 32 bits), an
/// IPv6 address (its low 64 bits), a MAC (its 48 bits).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Value {
    Num(u64),
    Text(String),
}

impl Value {
    pub(crate) fn get(&self) -> Result<u64, String> {
        match self {
            Value::Num(n) => Ok(*n),
            Value::Text(t) => {
                if let Some(h) = t.strip_prefix("0x") {
                    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(format!("'{t}' is not hex"));
                    }
                    return u64::from_str_radix(h, 16).map_err(|_| format!("'{t}' is not hex"));
                }
                if let Ok(a) = t.parse::<std::net::Ipv4Addr>() {
                    return Ok(u64::from(u32::from(a)));
                }
                if let Ok(a) = t.parse::<std::net::Ipv6Addr>() {
                    return Ok(u128::from(a) as u64);
                }
                if let Ok(m) = t.parse::<crate::MacAddr>() {
                    let mut b = [0u8; 8];
                    b[2..].copy_from_slice(&m.0);
                    return Ok(u64::from_be_bytes(b));
                }
                Err(format!(
                    "'{t}' is not a number, 0x hex, an IP address or a MAC"
                ))
            }
        }
    }
}

/// Where a field sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// In front of the flow's IP header in every frame (Ethernet, the
    /// layers): (byte offset, window bytes, shift).
    Front(usize, usize, u8),
    /// By offset: anywhere, the same in every frame.
    Fixed(usize, usize, u8),
    /// In the flow's IP header.
    Ip(IpKey),
    Sport,
    Dport,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IpKey {
    Src,
    Dst,
    Ttl,
    Tos,
    Id,
}

#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub(crate) target: Target,
    pub(crate) bits: u8,
    pub(crate) op: Op,
    pub(crate) from: u64,
    /// Values in `from..=to` (0: all 2^64).
    pub(crate) span: u64,
    pub(crate) step: u64,
    pub(crate) values: Vec<u64>,
    pub(crate) per: Per,
    pub(crate) seed: u64,
    /// Written in front of the IP header over an outer IPv4 header or IPv6
    /// address, whose checksums are then summed again.
    pub(crate) resum: bool,
    /// A template's field: the checksums covering its window, found once.
    pub(crate) hits: Hits,
}

/// The named fields, for error messages.
pub(crate) const NAMES: &str =
    "eth.src, eth.dst, ip.src, ip.dst, ip.ttl, ip.tos, ip.id, sport, dport, \
     vlan.id, vlan.pcp, svlan.id, svlan.pcp, mpls.label, mpls.tc, mpls.ttl, vxlan.vni, \
     vxlan.sport, geneve.vni, geneve.sport, gre.key, gtpu.teid, gtpu.qfi, and a tunnel's src, dst, ttl; \
     KIND[N].KEY names the N-th layer of a kind";

impl Field {
    /// Written into the flow's template: the flow's own addresses, TTL,
    /// TOS and ports, which no per-packet field of the writer overlaps.
    pub(crate) fn in_template(&self) -> bool {
        matches!(
            self.target,
            Target::Ip(IpKey::Src | IpKey::Dst | IpKey::Ttl | IpKey::Tos)
                | Target::Sport
                | Target::Dport
        )
    }

    /// What the value is drawn from.
    pub(crate) fn k(&self, flow: u64, packet: u64) -> u64 {
        match self.per {
            Per::Flow => flow,
            Per::Packet => packet,
        }
    }

    pub(crate) fn value(&self, k: u64, index: usize) -> u64 {
        let span = |x: u64| {
            if self.span == 0 {
                x
            } else if (x | self.span) >> 32 == 0 {
                // A 32-bit division is several times cheaper.
                u64::from(x as u32 % self.span as u32)
            } else {
                x % self.span
            }
        };
        match self.op {
            Op::Inc => self.from.wrapping_add(span(k.wrapping_mul(self.step))),
            Op::Dec => self
                .from
                .wrapping_add(self.span.wrapping_sub(1))
                .wrapping_sub(span(k.wrapping_mul(self.step))),
            Op::Random => {
                let mut x = self.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ k;
                let r = splitmix(&mut x);
                if self.span == 0 {
                    r
                } else {
                    self.from + ((u128::from(r) * u128::from(self.span)) >> 64) as u64
                }
            }
            Op::List => self.values[(k % self.values.len() as u64) as usize],
        }
    }
}

pub(crate) fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) fn mask(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The checksums covering a window: each one's index in the covers and
/// the window's bytes it covers (a mask over the window's value).
pub(crate) type Hits = Vec<(usize, u64)>;
