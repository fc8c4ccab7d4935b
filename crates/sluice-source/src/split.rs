//! Two-port split (tcpprep's job): which side of a conversation each
//! packet of a trace is on. Side 0 is client to server (the first port,
//! `--to`), side 1 server to client (`--to2`).
//!
//! Modes: `auto` (per flow, the end that opened it is the client: the
//! sender of a TCP SYN, else of the flow's first packet), `cidr:NETS`
//! (a source address in NETS is a server, tcpprep `--cidr`), `port` (the
//! lower of the two TCP/UDP ports is the server's), `cache:FILE` (a split
//! written by `sluice prep`). Packets without an IP header, and in `port`
//! mode without TCP/UDP ports, are client packets (tcpprep's default).
//!
//! The cache file (`sluice prep -o FILE`), little-endian:
//! `SLCSPLT1` (8 bytes), the packet count (u64), the trace file's size in
//! bytes (u64, so a cache made for another trace is refused), then one bit
//! per packet from the lowest bit of the first byte: 1 = side 1.

use sluice_wire::layers::{PROTO_TCP, PROTO_UDP};
use sluice_wire::{flow_hash, parse_layers, CidrMap, Ip};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub const MAGIC: &[u8; 8] = b"SLCSPLT1";
const HEADER: usize = 24;

/// How to split (`--split`).
#[derive(Clone, Debug, PartialEq)]
pub enum SplitMode {
    Auto,
    /// Networks whose sources are servers (maps onto themselves).
    Cidr(Vec<CidrMap>),
    Port,
    Cache(PathBuf),
}

impl FromStr for SplitMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "auto" => Ok(SplitMode::Auto),
            None if s == "port" => Ok(SplitMode::Port),
            Some(("cidr", nets)) => nets
                .split(',')
                .map(|n| format!("{n}:{n}").parse::<CidrMap>())
                .collect::<Result<Vec<_>, _>>()
                .map(SplitMode::Cidr)
                .map_err(|e| format!("--split cidr: {e}")),
            Some(("cache", f)) if !f.is_empty() => Ok(SplitMode::Cache(f.into())),
            _ => Err(format!(
                "'{s}': expected auto, port, cidr:NET[,NET...] or cache:FILE"
            )),
        }
    }
}

/// A `sluice prep` cache, in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitCache {
    pub packets: u64,
    pub trace_bytes: u64,
    pub bits: Vec<u8>,
}

impl SplitCache {
    pub fn side(&self, index: u64) -> Option<u8> {
        (index < self.packets).then(|| (self.bits[(index / 8) as usize] >> (index % 8)) & 1)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.bits.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.packets.to_le_bytes());
        out.extend_from_slice(&self.trace_bytes.to_le_bytes());
        out.extend_from_slice(&self.bits);
        out
    }

    /// Reads a cache; errors name the file and the offset.
    pub fn read(path: &Path) -> Result<Self, String> {
        let name = path.display();
        let data = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
        if data.len() < HEADER || &data[..8] != MAGIC {
            return Err(format!(
                "{name}: offset 0: not a sluice split cache (made by `sluice prep`)"
            ));
        }
        let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
        let (packets, trace_bytes) = (u64_at(8), u64_at(16));
        let want = packets.div_ceil(8);
        if (data.len() - HEADER) as u64 != want {
            return Err(format!(
                "{name}: offset {HEADER}: {} bytes of sides for {packets} packets, expected {want}",
                data.len() - HEADER
            ));
        }
        Ok(SplitCache {
            packets,
            trace_bytes,
            bits: data[HEADER..].to_vec(),
        })
    }
}

/// Classifies packets one after the other (state: the flows seen, in
/// `auto` mode).
pub struct Splitter {
    mode: SplitMode,
    cache: Option<SplitCache>,
    cache_name: String,
    /// Flow hash -> the client's address and port.
    clients: HashMap<u64, End>,
    /// Packets of flows `auto` had no room to remember, split by port.
    pub by_port: u64,
    max_flows: usize,
}

/// Most flows `auto` remembers (tens of bytes each): a trace with more
/// splits the flows beyond them by port, so memory stays bounded.
pub const MAX_FLOWS: usize = 4 << 20;

/// One end of a packet: address (IPv4 in the first 4 bytes), port (0
/// without TCP/UDP).
type End = ([u8; 16], u16);

/// A frame's ends, source then destination, and its TCP flags.
fn ends(frame: &[u8]) -> Option<(End, End, Option<u8>)> {
    let l = parse_layers(frame);
    let ip = l.ip?;
    let at = l.l3_offset;
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    match ip {
        Ip::V4 { .. } => {
            src[..4].copy_from_slice(&frame[at + 12..at + 16]);
            dst[..4].copy_from_slice(&frame[at + 16..at + 20]);
        }
        Ip::V6 { .. } => {
            src.copy_from_slice(&frame[at + 8..at + 24]);
            dst.copy_from_slice(&frame[at + 24..at + 40]);
        }
    }
    let (mut sp, mut dp, mut flags) = (0, 0, None);
    if let Some(l4) = l.l4.filter(|l4| matches!(l4.proto, PROTO_TCP | PROTO_UDP)) {
        let o = l4.offset;
        sp = u16::from_be_bytes([frame[o], frame[o + 1]]);
        dp = u16::from_be_bytes([frame[o + 2], frame[o + 3]]);
        if l4.proto == PROTO_TCP {
            flags = frame.get(o + 13).copied();
        }
    }
    Some(((src, sp), (dst, dp), flags))
}

/// `port` mode: the lower of two TCP/UDP ports is the server's.
fn by_port(src: End, dst: End) -> u8 {
    u8::from(src.1 != 0 && dst.1 != 0 && src.1 < dst.1)
}

impl Splitter {
    /// `trace` is the file the cache must have been made for.
    pub fn new(mode: SplitMode, trace: &Path) -> Result<Self, String> {
        let (cache, cache_name) = match &mode {
            SplitMode::Cache(f) => {
                let c = SplitCache::read(f)?;
                let size = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
                if c.trace_bytes != size {
                    return Err(format!(
                        "{}: made for a trace of {} bytes, {} has {size} (run `sluice prep` on it again)",
                        f.display(),
                        c.trace_bytes,
                        trace.display()
                    ));
                }
                (Some(c), f.display().to_string())
            }
            _ => (None, String::new()),
        };
        Ok(Splitter {
            mode,
            cache,
            cache_name,
            clients: HashMap::new(),
            by_port: 0,
            max_flows: MAX_FLOWS,
        })
    }

    /// The side of packet `index` (0-based in its pass), an Ethernet frame.
    pub fn side(&mut self, index: u64, frame: &[u8]) -> Result<u8, String> {
        if let Some(c) = &self.cache {
            return c.side(index).ok_or_else(|| {
                format!(
                    "{}: holds the sides of {} packets, the trace has more",
                    self.cache_name, c.packets
                )
            });
        }
        let Some((src, dst, flags)) = ends(frame) else {
            return Ok(0);
        };
        Ok(match &self.mode {
            SplitMode::Cidr(nets) => {
                let v4 = parse_layers(frame)
                    .ip
                    .is_some_and(|ip| matches!(ip, Ip::V4 { .. }));
                let a = if v4 { &src.0[..4] } else { &src.0[..] };
                u8::from(nets.iter().any(|n| n.matches(a)))
            }
            SplitMode::Port => by_port(src, dst),
            _ => {
                let key = flow_hash(frame);
                if self.clients.len() >= self.max_flows && !self.clients.contains_key(&key) {
                    self.by_port += 1;
                    return Ok(by_port(src, dst));
                }
                // A SYN-ACK seen first: its destination opened the flow.
                let synack = flags.is_some_and(|f| f & 0x12 == 0x12);
                let client = *self
                    .clients
                    .entry(key)
                    .or_insert(if synack { dst } else { src });
                u8::from(client != src)
            }
        })
    }
}

/// `sluice prep`: the side of every packet of `trace` (records of link
/// types replay cannot send count as client packets, so indices match a
/// replay with `--skip-unsupported`). Returns the cache and the number of
/// server-to-client packets.
pub fn prep(trace: &Path, mode: SplitMode) -> Result<(SplitCache, u64), crate::SourceError> {
    use sluice_wire::{encap_for_linktype, to_ethernet, Encap, MacAddr};
    let mut reader = sluice_capture::CaptureReader::open(trace)?;
    let file = reader.name().to_string();
    if matches!(mode, SplitMode::Cache(_)) {
        return Err(crate::SourceError::Split(
            "prep makes a cache; give it auto, port or cidr:NETS".into(),
        ));
    }
    let mut sp = Splitter::new(mode, trace).map_err(crate::SourceError::Split)?;
    let (mut bits, mut n, mut side_1) = (Vec::new(), 0u64, 0u64);
    let mut buf = Vec::new();
    while let Some(p) = reader.next_packet()? {
        let side = match encap_for_linktype(p.linktype.0) {
            Some(Encap::Ethernet) => sp.side(n, p.data),
            Some(e) => {
                match to_ethernet(e, p.data, MacAddr::LOCAL_SRC, MacAddr::LOCAL_DST, &mut buf) {
                    Ok(()) => sp.side(n, &buf),
                    Err(_) => Ok(0),
                }
            }
            None => Ok(0),
        }
        .map_err(|reason| crate::SourceError::BadPacket {
            file: file.clone(),
            packet: n + 1,
            reason,
        })?;
        if n % 8 == 0 {
            bits.push(0);
        }
        *bits.last_mut().expect("pushed") |= side << (n % 8);
        side_1 += u64::from(side);
        n += 1;
    }
    let trace_bytes = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
    Ok((
        SplitCache {
            packets: n,
            trace_bytes,
            bits,
        },
        side_1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: [u8; 4], sp: u16, dst: [u8; 4], dp: u16, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[23] = 6;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sp.to_be_bytes());
        f[36..38].copy_from_slice(&dp.to_be_bytes());
        f[46] = 0x50;
        f[47] = flags;
        f
    }

    #[test]
    fn modes_agree_on_a_handshake() {
        let c = [10, 0, 0, 1];
        let s = [192, 168, 1, 9];
        let syn = tcp(c, 40000, s, 80, 0x02);
        let synack = tcp(s, 80, c, 40000, 0x12);
        let t = Path::new("/nonexistent");
        for mode in ["auto", "port", "cidr:192.168.0.0/16"] {
            let mut sp = Splitter::new(mode.parse().unwrap(), t).unwrap();
            assert_eq!(sp.side(0, &syn).unwrap(), 0, "{mode}");
            assert_eq!(sp.side(1, &synack).unwrap(), 1, "{mode}");
        }
        // auto: a flow first seen at its SYN-ACK still knows its client.
        let mut sp = Splitter::new(SplitMode::Auto, t).unwrap();
        assert_eq!(sp.side(0, &synack).unwrap(), 1);
        assert_eq!(sp.side(1, &syn).unwrap(), 0);
        // Non-IP: client side.
        assert_eq!(sp.side(2, &[0u8; 20]).unwrap(), 0);
    }

    #[test]
    fn auto_remembers_a_bounded_number_of_flows_then_splits_by_port() {
        let mut sp = Splitter::new(SplitMode::Auto, Path::new("/nonexistent")).unwrap();
        sp.max_flows = 2;
        let s = [192, 168, 1, 9];
        for i in 0..2u8 {
            // A flow first seen from its server's side: remembered as such.
            let reply = tcp(s, 80, [10, 0, 0, i], 40000, 0x10);
            assert_eq!(sp.side(0, &reply).unwrap(), 0);
            assert_eq!(sp.side(1, &reply).unwrap(), 0);
        }
        // A third flow: no room, so the lower port (80) is the server's.
        let reply = tcp(s, 80, [10, 0, 0, 7], 40000, 0x10);
        assert_eq!(sp.side(2, &reply).unwrap(), 1);
        assert_eq!((sp.clients.len(), sp.by_port), (2, 1));
    }

    #[test]
    fn cache_round_trips_and_refuses_garbage_with_offsets() {
        let c = SplitCache {
            packets: 10,
            trace_bytes: 123,
            bits: vec![0b1010_0110, 0b10],
        };
        let d = std::env::temp_dir().join(format!("sluice-split-{}", std::process::id()));
        std::fs::write(&d, c.to_bytes()).unwrap();
        let r = SplitCache::read(&d).unwrap();
        assert_eq!(r, c);
        assert_eq!(
            (0..10).map(|i| r.side(i).unwrap()).collect::<Vec<_>>(),
            [0, 1, 1, 0, 0, 1, 0, 1, 0, 1]
        );
        assert_eq!(r.side(10), None);
        let mut bad = c.to_bytes();
        bad.pop();
        std::fs::write(&d, &bad).unwrap();
        assert!(SplitCache::read(&d).unwrap_err().contains("offset 24"));
        std::fs::write(&d, b"pcap").unwrap();
        assert!(SplitCache::read(&d).unwrap_err().contains("offset 0"));
        std::fs::remove_file(&d).unwrap();
    }
}
