//! IPv6 extension headers of generated IPv6 packets, between the IPv6
//! header and the L4 header, in the order written (RFC 8200 §4.1
//! recommends hop-by-hop first; the order is the user's to test):
//!
//! * `{hop_by_hop: {router_alert: true}}`: hop-by-hop options, a Router
//!   Alert (RFC 2711, value 0, MLD) if asked, padded to 8 bytes;
//! * `{destination: {}}`: destination options, padding only;
//! * `{routing: {segments: [A, B]}}`: a segment routing header (RFC 8754)
//!   through the segments, in path order, to the flow's destination: the
//!   IPv6 destination is the first segment, the segment list holds the
//!   flow's destination first (list[0], the last segment) and the
//!   segments reversed after it, segments left = their count;
//! * `{fragment: {id: N}}`: an atomic fragment (RFC 6946: offset 0, no
//!   more fragments) with identification N.
//!
//! The L4 checksum's pseudo header takes the flow's destination, the final
//! one (RFC 8200 §8.1).

use serde::Deserialize;
use std::net::Ipv6Addr;

/// The most extension headers a packet carries.
pub const MAX_EXT: usize = 8;
/// The most segments of a routing header.
pub const MAX_SEGMENTS: usize = 16;

const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const DESTINATION: u8 = 60;

/// One extension header as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ipv6Ext {
    HopByHop(Options),
    Destination(Options),
    Routing(Routing),
    Fragment(Fragment),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    #[serde(default)]
    pub router_alert: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Routing {
    pub segments: Vec<Ipv6Addr>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fragment {
    #[serde(default)]
    pub id: u32,
}

/// A header as written: one key of these.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExt {
    #[serde(default)]
    hop_by_hop: Option<Options>,
    #[serde(default)]
    destination: Option<Options>,
    #[serde(default)]
    routing: Option<Routing>,
    #[serde(default)]
    fragment: Option<Fragment>,
}

impl<'de> Deserialize<'de> for Ipv6Ext {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawExt::deserialize(d)?;
        let mut given = Vec::new();
        given.extend(r.hop_by_hop.map(Ipv6Ext::HopByHop));
        given.extend(r.destination.map(Ipv6Ext::Destination));
        given.extend(r.routing.map(Ipv6Ext::Routing));
        given.extend(r.fragment.map(Ipv6Ext::Fragment));
        match given.len() {
            1 => Ok(given.remove(0)),
            _ => Err(serde::de::Error::custom(
                "an extension header is one of hop_by_hop, destination, routing or fragment",
            )),
        }
    }
}

/// The headers' bytes, built once, and where each packet's own values go.
#[derive(Clone, Debug)]
pub struct Ipv6ExtStack {
    /// From the first extension header to the L4 header.
    bytes: Vec<u8>,
    /// The IPv6 header's next header.
    first: u8,
    /// The last header's next header field (the flow's L4 protocol).
    last_next: usize,
    /// A routing header: where its segment list[0] (the flow's
    /// destination) goes, and the IPv6 destination (the first segment).
    routing: Option<(usize, Ipv6Addr)>,
}

/// Checks the headers: their count, a routing header's segments, one
/// routing header and one fragment header at most. Errors name the key
/// (`ipv6_ext[1].routing.segments: …`).
pub fn check(ext: &[Ipv6Ext]) -> Result<(), String> {
    if ext.len() > MAX_EXT {
        return Err(format!(
            "ipv6_ext: {} headers, at most {MAX_EXT}",
            ext.len()
        ));
    }
    let (mut routing, mut fragment) = (0, 0);
    for (i, e) in ext.iter().enumerate() {
        match e {
            Ipv6Ext::Routing(r) => {
                routing += 1;
                if r.segments.is_empty() || r.segments.len() > MAX_SEGMENTS {
                    return Err(format!(
                        "ipv6_ext[{i}].routing.segments: {} segments, 1..{MAX_SEGMENTS} expected",
                        r.segments.len()
                    ));
                }
                if routing > 1 {
                    return Err(format!(
                        "ipv6_ext[{i}].routing: a second routing header (one per packet)"
                    ));
                }
            }
            Ipv6Ext::Fragment(_) => {
                fragment += 1;
                if fragment > 1 {
                    return Err(format!(
                        "ipv6_ext[{i}].fragment: a second fragment header (one per packet)"
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

impl Ipv6ExtStack {
    /// Builds checked headers ([`check`]).
    pub fn new(ext: &[Ipv6Ext]) -> Result<Self, String> {
        check(ext)?;
        let mut b = Vec::new();
        let mut last_next = None;
        let mut routing = None;
        let types: Vec<u8> = ext
            .iter()
            .map(|e| match e {
                Ipv6Ext::HopByHop(_) => HOP_BY_HOP,
                Ipv6Ext::Destination(_) => DESTINATION,
                Ipv6Ext::Routing(_) => ROUTING,
                Ipv6Ext::Fragment(_) => FRAGMENT,
            })
            .collect();
        for (i, e) in ext.iter().enumerate() {
            let next = types.get(i + 1).copied().unwrap_or(0);
            last_next = Some(b.len());
            match e {
                Ipv6Ext::HopByHop(o) | Ipv6Ext::Destination(o) => {
                    b.extend_from_slice(&[next, 0]);
                    if o.router_alert {
                        // Router Alert (type 5, 2 bytes: MLD), PadN of 0.
                        b.extend_from_slice(&[5, 2, 0, 0, 1, 0]);
                    } else {
                        b.extend_from_slice(&[1, 4, 0, 0, 0, 0]);
                    }
                }
                Ipv6Ext::Routing(r) => {
                    let n = r.segments.len();
                    let at = b.len();
                    // Next, length in 8-byte units past the first 8 (n + 1
                    // entries of 16 bytes), type 4, segments left and last
                    // entry (list[n], the first segment, is active), flags,
                    // tag.
                    let units = (2 * (n + 1)) as u8;
                    b.extend_from_slice(&[next, units, 4, n as u8, n as u8, 0, 0, 0]);
                    b.extend_from_slice(&[0; 16]); // list[0]: the flow's destination
                    for s in r.segments.iter().rev() {
                        b.extend_from_slice(&s.octets());
                    }
                    routing = Some((at + 8, r.segments[0]));
                }
                Ipv6Ext::Fragment(f) => {
                    b.extend_from_slice(&[next, 0, 0, 0]);
                    b.extend_from_slice(&f.id.to_be_bytes());
                }
            }
        }
        Ok(Ipv6ExtStack {
            bytes: b,
            first: types.first().copied().unwrap_or(0),
            last_next: last_next.unwrap_or(0),
            routing,
        })
    }

    /// The headers' length.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Where a routing header puts the final destination, from the first
    /// extension header.
    pub(crate) fn final_dst_at(&self) -> Option<usize> {
        self.routing.map(|(at, _)| at)
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Sets a packet's own values: `frame[ip..]` is its IPv6 header, the
    /// headers follow it; the IPv6 header still names the flow's L4
    /// protocol and destination, which move into the headers.
    pub(crate) fn patch(&self, frame: &mut [u8], ip: usize) {
        let at = ip + 40;
        frame[at + self.last_next] = frame[ip + 6];
        frame[ip + 6] = self.first;
        if let Some((list0, first)) = self.routing {
            frame.copy_within(ip + 24..ip + 40, at + list0);
            frame[ip + 24..ip + 40].copy_from_slice(&first.octets());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_headers_are_refused_naming_the_key() {
        let r = |n: usize| {
            Ipv6Ext::Routing(Routing {
                segments: vec![Ipv6Addr::LOCALHOST; n],
            })
        };
        let frag = Ipv6Ext::Fragment(Fragment { id: 1 });
        for (ext, says) in [
            (vec![r(0)], "ipv6_ext[0].routing.segments: 0 segments"),
            (vec![r(17)], "ipv6_ext[0].routing.segments: 17 segments"),
            (
                vec![r(1), r(1)],
                "ipv6_ext[1].routing: a second routing header",
            ),
            (
                vec![frag.clone(), frag.clone()],
                "ipv6_ext[1].fragment: a second",
            ),
            (vec![frag; 9], "9 headers, at most 8"),
        ] {
            let e = check(&ext).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
