//! tcpprep's auto modes (`tcpprep -a bridge|router|client|server|first`,
//! tcpreplay's `tree.c`), rule for rule, so that the caches they make are
//! byte-identical to tcpprep's on a little-endian host.
//!
//! A first pass over the trace classifies each packet by its source host:
//! - TCP: flags exactly SYN → client, exactly SYN+ACK → server (tcpprep
//!   ignores source port 20 meaning FTP data, but compares the port in
//!   network byte order on a little-endian host: port 5120 is ignored);
//! - UDP to port 53 → server if bit 15 of payload bytes 4–5, read
//!   little-endian (tcpprep reads the DNS header's question count there,
//!   not its flags), else client; from port 53 → client only if that
//!   value is exactly 0x8000 (within 19 bits), else server;
//! - ICMP port unreachable → server; anything else says nothing.
//!
//! Every IPv6 source is one host (tcpprep's tree compares an IPv6 address
//! with itself). A host is a server when its server count is at least
//! `ratio` times its client count, a client when it has counts otherwise,
//! unknown without counts. `first`: a packet's source, when new, is a
//! client, its destination, when new, a server. The second pass sends a
//! client's packets as primary and a server's as secondary; an unknown
//! host's as primary in `client` and `router` modes (secondary in `router`
//! with `--nonip`), as secondary in `server`, `bridge` and `first`.
//! `router` fails, as tcpprep's does, when the lowest host in tcpprep's
//! tree order (IPv4 by its address read little-endian, then IPv6) is a
//! client; otherwise it splits as `client`.

use sluice_wire::{parse_layers, Ip};
use std::collections::HashMap;
use std::str::FromStr;

/// Which auto mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoKind {
    Bridge,
    Router,
    Client,
    Server,
    First,
}

impl FromStr for AutoKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "bridge" => AutoKind::Bridge,
            "router" => AutoKind::Router,
            "client" => AutoKind::Client,
            "server" => AutoKind::Server,
            "first" => AutoKind::First,
            _ => {
                return Err(format!(
                "auto:{s}: one of auto:bridge, auto:router, auto:client, auto:server, auto:first"
            ))
            }
        })
    }
}

/// What a packet says of its source host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Client,
    Server,
    Unknown,
}

/// A host in tcpprep's tree: IPv4 by its address, every IPv6 source one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Host {
    /// The address read little-endian: tcpprep's tree order.
    V4(u32),
    V6,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    client: u64,
    server: u64,
}

/// Hosts the first pass remembers at most (a few dozen bytes each).
pub const MAX_HOSTS: usize = 4 << 20;

/// The hosts of a trace, classified (after the first pass).
#[derive(Debug, Default)]
pub struct Hosts {
    counts: HashMap<Host, Counts>,
    roles: HashMap<Host, Role>,
}

/// A frame's source and destination hosts and what it says of its source.
fn look(frame: &[u8]) -> Option<(Host, Host, Role)> {
    let l = parse_layers(frame);
    let ip = l.ip?;
    let at = l.l3_offset;
    let (src, dst, proto, l4) = match ip {
        Ip::V4 { .. } => {
            let a = |o: usize| u32::from_le_bytes(frame[at + o..at + o + 4].try_into().expect("4"));
            let ihl = usize::from(frame[at] & 0x0f) * 4;
            (Host::V4(a(12)), Host::V4(a(16)), frame[at + 9], at + ihl)
        }
        // tcpprep takes the next header as it is (no extension walk).
        Ip::V6 { .. } => (Host::V6, Host::V6, frame[at + 6], at + 40),
    };
    let b = |o: usize| frame.get(l4 + o).copied();
    let be16 = |o: usize| Some(u16::from_be_bytes([b(o)?, b(o + 1)?]));
    let role = match proto {
        6 => match (be16(0), b(13)) {
            (Some(5120), _) => Role::Unknown,
            (_, Some(0x02)) => Role::Client,
            (_, Some(0x12)) => Role::Server,
            _ => Role::Unknown,
        },
        17 => {
            // Bytes 4-5 of the payload, as tcpprep reads its "flags".
            let flags = match (b(8 + 4), b(8 + 5)) {
                (Some(lo), Some(hi)) => Some(u32::from(u16::from_le_bytes([lo, hi]))),
                _ => None,
            };
            match (be16(0), be16(2), flags) {
                (_, Some(53), Some(f)) if f & 0x8000 != 0 => Role::Server,
                (_, Some(53), Some(_)) => Role::Client,
                (Some(53), _, Some(f)) if (f & 0x7ffff) ^ 0x8000 != 0 => Role::Server,
                (Some(53), _, Some(_)) => Role::Client,
                _ => Role::Unknown,
            }
        }
        1 if b(0) == Some(3) && b(1) == Some(3) => Role::Server,
        _ => Role::Unknown,
    };
    Some((src, dst, role))
}

impl Hosts {
    /// Pass one, one frame (Ethernet) at a time.
    pub fn learn(&mut self, kind: AutoKind, frame: &[u8]) -> Result<(), String> {
        let Some((src, dst, role)) = look(frame) else {
            return Ok(());
        };
        if self.counts.len() >= MAX_HOSTS && !self.counts.contains_key(&src) {
            return Err(format!(
                "auto: more than {MAX_HOSTS} source hosts; split this trace with cidr: or port"
            ));
        }
        if kind == AutoKind::First {
            self.counts.entry(src).or_insert(Counts {
                client: 1000,
                server: 0,
            });
            self.counts.entry(dst).or_insert(Counts {
                client: 0,
                server: 1000,
            });
            return Ok(());
        }
        let c = self.counts.entry(src).or_default();
        match role {
            Role::Client => c.client += 1,
            Role::Server => c.server += 1,
            Role::Unknown => {}
        }
        Ok(())
    }

    /// Ends pass one: every host's role by `ratio`; `router` checks that
    /// tcpprep would find its servers.
    pub fn settle(&mut self, kind: AutoKind, ratio: f64) -> Result<(), String> {
        self.roles = self
            .counts
            .iter()
            .map(|(h, c)| {
                let role = if c.server > 0 || c.client > 0 {
                    if c.server as f64 >= c.client as f64 * ratio {
                        Role::Server
                    } else {
                        Role::Client
                    }
                } else {
                    Role::Unknown
                };
                (*h, role)
            })
            .collect();
        if kind == AutoKind::Router {
            let lowest = self.roles.keys().min();
            if lowest.is_some_and(|h| self.roles[h] == Role::Client) {
                return Err(
                    "auto:router: unable to build a valid list of servers (as tcpprep); try another --ratio or auto mode"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// Pass two: Some(true) primary, Some(false) secondary; None for a
    /// frame without IP (the caller's non-IP rule).
    pub fn primary(&self, kind: AutoKind, nonip: bool, frame: &[u8]) -> Option<bool> {
        let (src, _, _) = look(frame)?;
        Some(
            match self.roles.get(&src).copied().unwrap_or(Role::Unknown) {
                Role::Client => true,
                Role::Server => false,
                Role::Unknown => match kind {
                    AutoKind::Client => true,
                    AutoKind::Router => !nonip,
                    AutoKind::Server | AutoKind::Bridge | AutoKind::First => false,
                },
            },
        )
    }
}
