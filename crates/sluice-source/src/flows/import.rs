//! Flow records → a session that regenerates them (`sluice flows import`).
//!
//! Input: nfdump-style CSV (`nfdump -o csv` column names), header required:
//! `ts,te,td,sa,da,sp,dp,pr,flg,...,ipkt,ibyt,...` (only ts, td, sa, da, sp,
//! dp, pr, ipkt and ibyt are used; ts/te ISO 8601). Each record becomes one
//! flow with the same 5-tuple, start time (relative to the earliest record),
//! packet count, IP byte count (`bytes:`, spread over the packets so the
//! total is exact) and duration: intensity (ipkt − 1)/td (FLOR eq. 5.1).
//! Records without a duration (no te/td) are spread 1 s apart and counted;
//! protocols other than TCP, UDP, ICMP and ICMPv6 are skipped and counted.
//! ICMP records become echo requests (identifier = source port).

use super::session::Proto;
use sluice_archive::Stamp;
use std::fmt::Write as _;
use std::net::IpAddr;

/// IP bytes of one packet at most.
const MAX_IP_PACKET: u64 = 65_535;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportStats {
    pub records: u64,
    pub flows: u64,
    pub skipped_protocol: u64,
    pub no_duration: u64,
    /// Records whose bytes are fewer than the packets' headers need.
    pub short_bytes: u64,
    /// Records whose bytes are more than their packets can carry (65 535
    /// IP bytes each): lowered to that.
    pub long_bytes: u64,
    /// Records of no packets, skipped.
    pub no_packets: u64,
}

struct Record {
    line: usize,
    ts_us: i64,
    td_s: Option<f64>,
    sa: IpAddr,
    da: IpAddr,
    sp: u16,
    dp: u16,
    pr: String,
    ipkt: u64,
    ibyt: u64,
}

/// Converts CSV text to session YAML. Errors name the line and column.
pub fn import_csv(name: &str, text: &str) -> Result<(String, ImportStats), String> {
    let mut lines = text.lines().enumerate();
    let header = lines
        .next()
        .map(|(_, l)| l.trim_start_matches('\u{feff}').trim_end_matches('\r'));
    let cols: Vec<&str> = header.unwrap_or("").split(',').collect();
    let col = |n: &str| {
        cols.iter()
            .position(|c| *c == n)
            .ok_or_else(|| format!("{name}: line 1: no '{n}' column (nfdump CSV header expected)"))
    };
    let (ts, td, sa, da, sp, dp, pr, ipkt, ibyt) = (
        col("ts")?,
        col("td")?,
        col("sa")?,
        col("da")?,
        col("sp")?,
        col("dp")?,
        col("pr")?,
        col("ipkt")?,
        col("ibyt")?,
    );
    let mut records = Vec::new();
    for (i, raw) in lines {
        let line = i + 1;
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split(',').collect();
        if f.len() != cols.len() {
            return Err(format!(
                "{name}: line {line}: {} columns, the header has {}",
                f.len(),
                cols.len()
            ));
        }
        let bad = |c: usize, what: &str| {
            format!(
                "{name}: line {line}, column {} ({}): '{}' {what}",
                c + 1,
                cols[c],
                f[c]
            )
        };
        let stamp = Stamp::parse_iso(f[ts])
            .map_err(|e| format!("{}: {e}", bad(ts, "is not a timestamp")))?;
        let td_s = if f[td].is_empty() {
            None
        } else {
            Some(
                f[td]
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| bad(td, "is not a duration in seconds"))?,
            )
        };
        let ip = |c: usize| {
            f[c].parse::<IpAddr>()
                .map_err(|_| bad(c, "is not an IP address"))
        };
        let port = |c: usize| {
            // nfdump writes ICMP type.code in dp ("8.0"): keep the integer part.
            f[c].split('.')
                .next()
                .unwrap_or("")
                .parse::<u16>()
                .map_err(|_| bad(c, "is not a port"))
        };
        let num = |c: usize| f[c].parse::<u64>().map_err(|_| bad(c, "is not a count"));
        records.push(Record {
            line,
            ts_us: stamp.unix_micros(),
            td_s,
            sa: ip(sa)?,
            da: ip(da)?,
            sp: port(sp)?,
            dp: port(dp)?,
            pr: f[pr].to_ascii_uppercase(),
            ipkt: num(ipkt)?,
            ibyt: num(ibyt)?,
        });
    }
    let mut stats = ImportStats {
        records: records.len() as u64,
        ..ImportStats::default()
    };
    let t0 = records.iter().map(|r| r.ts_us).min().unwrap_or(0);
    records.sort_by_key(|r| (r.ts_us, r.line));
    let mut out =
        format!("# Imported from {name} by `sluice flows import`: one flow per record.\nflows:\n");
    for r in &records {
        let v6 = r.sa.is_ipv6();
        if r.da.is_ipv6() != v6 {
            return Err(format!(
                "{name}: line {}: source and destination are of different IP versions",
                r.line
            ));
        }
        let proto = match (r.pr.as_str(), v6) {
            ("TCP" | "6", false) => Proto::Tcp4,
            ("TCP" | "6", true) => Proto::Tcp6,
            ("UDP" | "17", false) => Proto::Udp4,
            ("UDP" | "17", true) => Proto::Udp6,
            ("ICMP" | "1", false) => Proto::Icmp4,
            ("ICMP6" | "ICMPV6" | "58", true) | ("ICMP", true) => Proto::Icmp6,
            _ => {
                stats.skipped_protocol += 1;
                continue;
            }
        };
        if r.ipkt == 0 {
            stats.no_packets += 1;
            continue;
        }
        let at = |what: &str| format!("{name}: line {}: {what}", r.line);
        let least = (proto.header_len() as u64)
            .checked_mul(r.ipkt)
            .ok_or_else(|| {
                at(&format!(
                    "{} packets of headers overflow a byte count",
                    r.ipkt
                ))
            })?;
        let most = r.ipkt.saturating_mul(MAX_IP_PACKET);
        let mut bytes = r.ibyt;
        if bytes < least {
            stats.short_bytes += 1;
            bytes = least;
        } else if bytes > most {
            // What `flows run` could not send: no packet carries more.
            stats.long_bytes += 1;
            bytes = most;
        }
        // Records may span millennia (4-digit years): the start, in ns
        // after the first record, must still fit 64 bits (584 years).
        let start_ns = u64::try_from(r.ts_us - t0)
            .ok()
            .and_then(|us| us.checked_mul(1000))
            .ok_or_else(|| at("starts more than 584 years after the first record"))?;
        let _ = write!(
            out,
            "  - {{proto: {}, src: '{}', dst: '{}', sport: {}, dport: {}, start: {start_ns}, packets: {}, bytes: {bytes}",
            proto.name(), r.sa, r.da, r.sp, r.dp, r.ipkt
        );
        if r.ipkt > 1 {
            match r.td_s {
                Some(td) if td > 0.0 => {
                    let _ = write!(out, ", pps: {}", (r.ipkt - 1) as f64 / td);
                }
                Some(_) => {
                    // All packets in the same instant (ms resolution): 1 µs apart.
                    let _ = write!(out, ", pps: 1000000");
                }
                None => {
                    stats.no_duration += 1;
                    let _ = write!(out, ", pps: 1");
                }
            }
        }
        out.push_str("}\n");
        stats.flows += 1;
    }
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::Session;

    const HEAD: &str = "ts,te,td,sa,da,sp,dp,pr,flg,ipkt,ibyt\n";

    #[test]
    fn a_record_imports_as_one_flow_that_parses_back() {
        let text = format!(
            "{HEAD}2023-02-28T09:46:01Z,2023-02-28T09:46:12Z,11.000,10.0.0.1,10.0.0.2,17000,53,UDP,.,3,330\n"
        );
        let (yaml, stats) = import_csv("f.csv", &text).unwrap();
        assert_eq!((stats.records, stats.flows), (1, 1));
        let s = Session::parse("f.yaml", &yaml, true).unwrap();
        assert_eq!(s.flows.len(), 1);
        assert_eq!(s.flows[0].packets, 3);
    }

    /// Found by the `text_inputs` fuzz target: these overflowed and panicked.
    #[test]
    fn counts_and_times_out_of_range_are_refused_naming_the_line() {
        let huge = format!(
            "{HEAD}2023-02-28T09:46:01Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,{},100\n",
            u64::MAX / 3
        );
        let e = import_csv("f.csv", &huge).unwrap_err();
        assert!(e.contains("f.csv: line 2") && e.contains("overflow"), "{e}");
        let far = format!(
            "{HEAD}0001-01-01T00:00:00Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,2,100\n\
             9999-01-01T00:00:00Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,2,100\n"
        );
        let e = import_csv("f.csv", &far).unwrap_err();
        assert!(e.contains("line 3") && e.contains("584 years"), "{e}");
    }

    /// `flows import` wrote sessions `flows run` refused: more bytes than
    /// the packets can carry.
    #[test]
    fn bytes_no_packet_could_carry_are_lowered_and_the_session_runs() {
        let text = format!(
            "{HEAD}2023-02-28T09:46:01Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,1,100000\n\
             2023-02-28T09:46:02Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,0,0\n"
        );
        let (yaml, stats) = import_csv("f.csv", &text).unwrap();
        assert_eq!((stats.long_bytes, stats.no_packets, stats.flows), (1, 1, 1));
        assert_eq!(stats.skipped_protocol, 0);
        let s = Session::parse("f.yaml", &yaml, true).expect("flows run accepts it");
        assert_eq!(s.flows[0].bytes, Some(65_535));
    }
}
