//! `sluice analyze --flows [--session S]`: the flow collector's records,
//! and, given the session that was generated, how well each flow came out.
//!
//! Generated flows are matched to collected ones by 5-tuple (ICMP: by
//! addresses and protocol), in start order. The constant offset between the
//! capture's clock and the session's time line (the median of first-packet
//! time minus planned start) is removed before the start errors are taken;
//! duration error is |(last − first) − (n − 1)·gap|.

use crate::args::AnalyzeArgs;
use crate::{bad_input, exit, Failure};
use serde::Serialize;
use sluice_analyze::{collect_flows, Dist, FlowRecord, Samples, Timeouts};
use sluice_flows::{Expander, Flow, FlowEntry, Proto, Session};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

#[derive(Serialize)]
struct Comparison {
    expected: u64,
    collected: u64,
    matched: u64,
    missing: u64,
    unexpected: u64,
    packet_mismatches: u64,
    byte_mismatches: u64,
    /// Flows whose byte count the session leaves open (random payloads).
    bytes_not_checked: u64,
    /// Null when no flow matched.
    start_error: Option<Dist>,
    duration_error: Option<Dist>,
    /// The first few mismatching flows, for a human to look at.
    examples: Vec<String>,
}

#[derive(Serialize)]
struct Out<'a> {
    flows: &'a [FlowRecord],
    /// Null without `--session`.
    session: Option<Comparison>,
}

type Key = (IpAddr, IpAddr, u16, u16, u8);

fn key_of_flow(f: &Flow) -> Key {
    let (proto, icmp) = match f.proto {
        Proto::Udp4 | Proto::Udp6 => (17, false),
        Proto::Tcp4 | Proto::Tcp6 => (6, false),
        Proto::Icmp4 => (1, true),
        Proto::Icmp6 => (58, true),
        Proto::Ip4 | Proto::Ip6 => (f.ipproto(), true),
    };
    if icmp {
        (f.src_ip(), f.dst_ip(), 0, 0, proto)
    } else {
        (f.src_ip(), f.dst_ip(), f.sport, f.dport, proto)
    }
}

fn key_of_record(r: &FlowRecord) -> Key {
    let k = &r.key;
    if k.proto == 1 || k.proto == 58 {
        (k.src, k.dst, 0, 0, k.proto)
    } else {
        (k.src, k.dst, k.sport, k.dport, k.proto)
    }
}

fn errors(v: Vec<u64>) -> Option<Dist> {
    let mut s = Samples::new(usize::MAX);
    for x in v {
        s.push(x);
    }
    s.finish()
}

/// IP bytes the session says a flow has, if it fixes them.
fn expected_bytes(f: &Flow) -> Option<u64> {
    let header = f.proto.header_len() as u64;
    if f.payload_total != sluice_flows::NO_TOTAL {
        return Some(f.payload_total + header * f.packets);
    }
    (f.payload.0 == f.payload.1).then(|| (u64::from(f.payload.0) + header) * f.packets)
}

fn compare(records: &[FlowRecord], expected: Vec<Flow>) -> Comparison {
    let mut by_key: BTreeMap<Key, VecDeque<&FlowRecord>> = BTreeMap::new();
    for r in records {
        by_key.entry(key_of_record(r)).or_default().push_back(r);
    }
    let mut pairs = Vec::new();
    let mut missing = 0;
    for f in &expected {
        match by_key.get_mut(&key_of_flow(f)).and_then(|q| q.pop_front()) {
            Some(r) => pairs.push((f, r)),
            None => missing += 1,
        }
    }
    let unexpected = by_key.values().map(|q| q.len() as u64).sum();
    let mut offsets: Vec<i128> = pairs
        .iter()
        .map(|(f, r)| i128::from(r.first_ns) - i128::from(f.start.0))
        .collect();
    offsets.sort_unstable();
    let offset = offsets.get(offsets.len() / 2).copied().unwrap_or(0);
    let (mut starts, mut durations) = (Vec::new(), Vec::new());
    let (mut packet_mismatches, mut byte_mismatches, mut unchecked) = (0, 0, 0);
    let mut examples = Vec::new();
    for (f, r) in &pairs {
        starts
            .push((i128::from(r.first_ns) - i128::from(f.start.0) - offset).unsigned_abs() as u64);
        let planned = ((f.packets.saturating_sub(1)) as f64 * f.gap_ns) as i128;
        durations.push((i128::from(r.last_ns - r.first_ns) - planned).unsigned_abs() as u64);
        if r.packets != f.packets {
            packet_mismatches += 1;
        }
        match expected_bytes(f) {
            Some(b) if b != r.bytes => byte_mismatches += 1,
            Some(_) => {}
            None => unchecked += 1,
        }
        if (r.packets != f.packets || expected_bytes(f).is_some_and(|b| b != r.bytes))
            && examples.len() < 5
        {
            examples.push(format!(
                "{} {}:{} -> {}:{}: {} packets / {} bytes collected, {} / {:?} planned",
                r.key.proto,
                r.key.src,
                r.key.sport,
                r.key.dst,
                r.key.dport,
                r.packets,
                r.bytes,
                f.packets,
                expected_bytes(f)
            ));
        }
    }
    Comparison {
        expected: expected.len() as u64,
        collected: records.len() as u64,
        matched: pairs.len() as u64,
        missing,
        unexpected,
        packet_mismatches,
        byte_mismatches,
        bytes_not_checked: unchecked,
        start_error: errors(starts),
        duration_error: errors(durations),
        examples,
    }
}

pub fn run(a: &AnalyzeArgs) -> Result<u8, Failure> {
    let t = Timeouts {
        active: a.active_timeout.0,
        idle: a.idle_timeout.0,
    };
    let records = collect_flows(a.capture_path(), t).map_err(bad_input)?;
    let session = match &a.session {
        Some(p) => {
            let s = Session::load(p).map_err(bad_input)?;
            if !s.fields.is_empty() || !s.ipv6_ext.is_empty() || s.template.is_some() {
                // The expansion knows the flows as planned, not as varied.
                return Err(bad_input(anyhow::anyhow!(
                    "{}: a session with fields, ipv6_ext or a template is not compared yet (its flows' addresses, ports and sizes are changed as they are built)",
                    p.display()
                )));
            }
            // Every planned flow is held for the comparison: refuse a
            // session too large for memory before expanding it.
            s.admit(
                std::mem::size_of::<Flow>() as u64,
                sluice_sys::mem::default_budget(),
                "expanded for the comparison",
                FlowEntry::flows,
            )
            .map_err(bad_input)?;
            let seed = a.seed.or(s.seed).unwrap_or(1);
            let flows: Vec<Flow> = Expander::new(s, seed).map_err(bad_input)?.collect();
            Some(compare(&records, flows))
        }
        None => None,
    };
    if a.json {
        let out = Out {
            flows: &records,
            session,
        };
        outln!("{}", crate::json::pretty(crate::json::Kind::Flows, &out)?)?;
        return Ok(exit::OK);
    }
    outln!("{} flows in {}", records.len(), a.capture_path().display())?;
    for r in records.iter().take(20) {
        let k = &r.key;
        outln!(
            "  proto {:>3} {}:{} -> {}:{} tos {} packets {} bytes {} duration {:.6} s",
            k.proto,
            k.src,
            k.sport,
            k.dst,
            k.dport,
            k.tos,
            r.packets,
            r.bytes,
            (r.last_ns - r.first_ns) as f64 / 1e9
        )?;
    }
    if records.len() > 20 {
        outln!(
            "  ... {} more (all of them with --json)",
            records.len() - 20
        )?;
    }
    if let Some(c) = session {
        outln!(
            "session: {} flows planned, {} matched, {} missing, {} unexpected; packet count mismatches {}, byte count mismatches {} ({} not fixed by the session)",
            c.expected, c.matched, c.missing, c.unexpected, c.packet_mismatches, c.byte_mismatches, c.bytes_not_checked
        )?;
        for (what, d) in [
            ("start error (offset removed)", &c.start_error),
            ("duration error", &c.duration_error),
        ] {
            if let Some(d) = d {
                let p = &d.percentiles;
                outln!(
                    "{what}: p50 {} p90 {} p99 {} max {} ns",
                    p.p50_ns,
                    p.p90_ns,
                    p.p99_ns,
                    p.max_ns
                )?;
            }
        }
        for e in &c.examples {
            outln!("  mismatch: {e}")?;
        }
    }
    Ok(exit::OK)
}
