//! A flow collector over a capture (`sluice analyze --flows`): packets are
//! grouped by the 7-tuple (source and destination address, source and
//! destination port, protocol, ToS / traffic class, capture interface) into
//! flow records with first/last time, packets and IP bytes, split by an
//! active timeout (a long flow is exported every T_a) and an idle timeout
//! (a gap longer than T_i ends a flow), as NetFlow/IPFIX meters do.
//!
//! ICMP and ICMPv6 flows carry port 0 and type·256 + code as destination
//! port (nfdump's convention). IP fragments after the first count towards
//! the flow of their addresses and protocol with ports 0.

use crate::error::AnalyzeError;
use serde::Serialize;
use sluice_capture::CaptureReader;
use sluice_wire::{parse_layers, Ip};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub tos: u8,
    pub interface: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowRecord {
    #[serde(flatten)]
    pub key: FlowKey,
    /// Capture timestamps of the first and last packet, ns since the epoch.
    pub first_ns: u64,
    pub last_ns: u64,
    pub packets: u64,
    /// IP bytes (IP header included), as flow records count them.
    #[serde(rename = "ip_bytes")]
    pub bytes: u64,
}

/// Flow meter timeouts in ns.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub active: u64,
    pub idle: u64,
}

impl Default for Timeouts {
    /// Cisco's NetFlow defaults: 30 min active, 15 s idle.
    fn default() -> Self {
        Timeouts {
            active: 1_800_000_000_000,
            idle: 15_000_000_000,
        }
    }
}

/// The key and IP length of one frame, if it is IP.
pub fn frame_flow(data: &[u8], interface: u32) -> Option<(FlowKey, u64)> {
    let layers = parse_layers(data);
    let ip = layers.ip?;
    let l3 = layers.l3_offset;
    let (src, dst, tos, mut proto) = match ip {
        Ip::V4 { .. } => {
            let h = data.get(l3..l3 + 20)?;
            let a = |o: usize| IpAddr::V4(Ipv4Addr::new(h[o], h[o + 1], h[o + 2], h[o + 3]));
            (a(12), a(16), h[1], h[9])
        }
        Ip::V6 { .. } => {
            let h = data.get(l3..l3 + 40)?;
            let a = |o: usize| {
                let mut b = [0u8; 16];
                b.copy_from_slice(&h[o..o + 16]);
                IpAddr::V6(Ipv6Addr::from(b))
            };
            (a(8), a(24), (h[0] << 4) | (h[1] >> 4), h[6])
        }
    };
    let (mut sport, mut dport) = (0, 0);
    if let Some(l4) = layers.l4 {
        proto = l4.proto;
        let p = data.get(l4.offset..l4.offset + 4);
        match (l4.proto, p) {
            (6 | 17, Some(p)) => {
                sport = u16::from_be_bytes([p[0], p[1]]);
                dport = u16::from_be_bytes([p[2], p[3]]);
            }
            (1 | 58, Some(p)) => dport = u16::from(p[0]) << 8 | u16::from(p[1]),
            _ => {}
        }
    }
    let key = FlowKey {
        src,
        dst,
        sport,
        dport,
        proto,
        tos,
        interface,
    };
    Some((key, ip.packet_len() as u64))
}

/// Meters a whole capture; records come out ordered by first packet. A
/// truncated last record ends the capture (what came before is metered);
/// other capture errors are returned.
pub fn collect_flows(capture: &Path, t: Timeouts) -> Result<Vec<FlowRecord>, AnalyzeError> {
    let mut r = CaptureReader::open(capture)?;
    let mut active: HashMap<FlowKey, FlowRecord> = HashMap::new();
    let mut done = Vec::new();
    loop {
        let p = match r.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) if e.is_truncation() => break,
            Err(e) => return Err(e.into()),
        };
        let Some((key, len)) = frame_flow(p.data, p.interface) else {
            continue;
        };
        let ts = p.ts_ns;
        if let Some(f) = active.get_mut(&key) {
            let expired =
                ts.saturating_sub(f.last_ns) > t.idle || ts.saturating_sub(f.first_ns) > t.active;
            if !expired {
                f.last_ns = ts;
                f.packets += 1;
                f.bytes += len;
                continue;
            }
            if let Some(old) = active.remove(&key) {
                done.push(old);
            }
        }
        active.insert(
            key,
            FlowRecord {
                key,
                first_ns: ts,
                last_ns: ts,
                packets: 1,
                bytes: len,
            },
        );
    }
    done.extend(active.into_values());
    done.sort_by_key(|a| (a.first_ns, a.key.src, a.key.sport));
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_corpus_capture_is_metered_or_refused_cleanly() {
        let dir = sluice_testkit::testdata("pcap");
        let entries = std::fs::read_dir(&dir).expect("testdata/pcap is in the repository");
        let mut metered = 0;
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md" || x == "tsv") {
                continue;
            }
            if let Ok(flows) = collect_flows(&p, Timeouts::default()) {
                metered += 1;
                for f in &flows {
                    assert!(f.packets >= 1 && f.first_ns <= f.last_ns, "{}", p.display());
                }
            }
        }
        assert!(metered > 50, "{metered} captures metered");
        let t = collect_flows(&dir.join("tcpreplay__test.pcap"), Timeouts::default()).unwrap();
        assert!(!t.is_empty());
        assert!(t.iter().map(|f| f.packets).sum::<u64>() <= 179);
    }
}
