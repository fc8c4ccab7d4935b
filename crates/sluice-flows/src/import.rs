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
use std::io::{BufRead, Read, Write};
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

/// Longest CSV line read: nfdump rows are a few hundred bytes.
const MAX_LINE: u64 = 64 * 1024;

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The records are malformed: the text names the file, line and column.
    #[error("{0}")]
    Input(String),
    /// Reading the records or writing the session failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The columns `import` uses, by position in the header.
struct Columns {
    count: usize,
    names: Vec<String>,
    ts: usize,
    td: usize,
    sa: usize,
    da: usize,
    sp: usize,
    dp: usize,
    pr: usize,
    ipkt: usize,
    ibyt: usize,
}

/// Reads the records one line at a time (a line of at most [`MAX_LINE`]
/// bytes), calling `each` with every record.
fn read_records<R: BufRead>(
    name: &str,
    mut input: R,
    mut each: impl FnMut(Record) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut buf = String::new();
    let mut next_line = |buf: &mut String, line: usize| -> Result<bool, ImportError> {
        buf.clear();
        let n = (&mut input)
            .take(MAX_LINE + 1)
            .read_line(buf)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    ImportError::Input(format!("{name}: line {line}: not UTF-8 text"))
                } else {
                    ImportError::Io(e)
                }
            })?;
        if n as u64 > MAX_LINE {
            return Err(ImportError::Input(format!(
                "{name}: line {line}: longer than {MAX_LINE} bytes"
            )));
        }
        Ok(n > 0)
    };
    next_line(&mut buf, 1)?;
    let header = buf
        .trim_start_matches('\u{feff}')
        .trim_end_matches(['\r', '\n']);
    let names: Vec<String> = header.split(',').map(str::to_owned).collect();
    let col = |n: &str| {
        names.iter().position(|c| c == n).ok_or_else(|| {
            ImportError::Input(format!(
                "{name}: line 1: no '{n}' column (nfdump CSV header expected)"
            ))
        })
    };
    let c = Columns {
        count: names.len(),
        ts: col("ts")?,
        td: col("td")?,
        sa: col("sa")?,
        da: col("da")?,
        sp: col("sp")?,
        dp: col("dp")?,
        pr: col("pr")?,
        ipkt: col("ipkt")?,
        ibyt: col("ibyt")?,
        names,
    };
    let mut line = 1;
    loop {
        line += 1;
        if !next_line(&mut buf, line)? {
            return Ok(());
        }
        let l = buf.trim_end_matches(['\r', '\n']);
        if l.trim().is_empty() {
            continue;
        }
        each(parse_record(name, line, l, &c).map_err(ImportError::Input)?)?;
    }
}

fn parse_record(name: &str, line: usize, l: &str, c: &Columns) -> Result<Record, String> {
    let f: Vec<&str> = l.split(',').collect();
    if f.len() != c.count {
        return Err(format!(
            "{name}: line {line}: {} columns, the header has {}",
            f.len(),
            c.count
        ));
    }
    let bad = |i: usize, what: &str| {
        format!(
            "{name}: line {line}, column {} ({}): '{}' {what}",
            i + 1,
            c.names[i],
            f[i]
        )
    };
    let stamp = Stamp::parse_iso(f[c.ts])
        .map_err(|e| format!("{}: {e}", bad(c.ts, "is not a timestamp")))?;
    let td_s = if f[c.td].is_empty() {
        None
    } else {
        Some(
            f[c.td]
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad(c.td, "is not a duration in seconds"))?,
        )
    };
    let ip = |i: usize| {
        f[i].parse::<IpAddr>()
            .map_err(|_| bad(i, "is not an IP address"))
    };
    let port = |i: usize| {
        // nfdump writes ICMP type.code in dp ("8.0"): keep the integer part.
        f[i].split('.')
            .next()
            .unwrap_or("")
            .parse::<u16>()
            .map_err(|_| bad(i, "is not a port"))
    };
    let num = |i: usize| f[i].parse::<u64>().map_err(|_| bad(i, "is not a count"));
    Ok(Record {
        line,
        ts_us: stamp.unix_micros(),
        td_s,
        sa: ip(c.sa)?,
        da: ip(c.da)?,
        sp: port(c.sp)?,
        dp: port(c.dp)?,
        pr: f[c.pr].to_ascii_uppercase(),
        ipkt: num(c.ipkt)?,
        ibyt: num(c.ibyt)?,
    })
}

/// Converts flow records to session YAML written to `out`, streaming: the
/// records are read twice (`open` is called for each pass), first for the
/// earliest start, then to write one flow per record in the input's order
/// (`flows run` orders flows by start itself). Memory does not grow with
/// the number of records. Errors name the line and column.
pub fn import_csv<R: BufRead>(
    name: &str,
    mut open: impl FnMut() -> std::io::Result<R>,
    out: &mut dyn Write,
) -> Result<ImportStats, ImportError> {
    let mut t0 = i64::MAX;
    read_records(name, open()?, |r| {
        t0 = t0.min(r.ts_us);
        Ok(())
    })?;
    writeln!(
        out,
        "# Imported from {name} by `sluice flows import`: one flow per record.\nflows:"
    )?;
    let mut stats = ImportStats::default();
    read_records(name, open()?, |r| {
        stats.records += 1;
        write_flow(name, &r, t0, &mut stats, out)
    })?;
    Ok(stats)
}

/// [`import_csv`] of text in memory, returning the session text.
pub fn import_text(name: &str, text: &str) -> Result<(String, ImportStats), ImportError> {
    let mut out = Vec::new();
    let stats = import_csv(name, || Ok(text.as_bytes()), &mut out)?;
    let yaml = String::from_utf8(out).expect("the session is written as UTF-8");
    Ok((yaml, stats))
}

fn write_flow(
    name: &str,
    r: &Record,
    t0: i64,
    stats: &mut ImportStats,
    out: &mut dyn Write,
) -> Result<(), ImportError> {
    let at = |what: &str| ImportError::Input(format!("{name}: line {}: {what}", r.line));
    let v6 = r.sa.is_ipv6();
    if r.da.is_ipv6() != v6 {
        return Err(at("source and destination are of different IP versions"));
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
            return Ok(());
        }
    };
    if r.ipkt == 0 {
        stats.no_packets += 1;
        return Ok(());
    }
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
    // Records may span millennia (4-digit years): the start, in ns after
    // the first record, must still fit 64 bits (584 years).
    let start_ns = u64::try_from(r.ts_us - t0)
        .ok()
        .and_then(|us| us.checked_mul(1000))
        .ok_or_else(|| at("starts more than 584 years after the first record"))?;
    let mut row = format!(
        "  - {{proto: {}, src: '{}', dst: '{}', sport: {}, dport: {}, start: {start_ns}ns, packets: {}, bytes: {bytes}",
        proto.name(), r.sa, r.da, r.sp, r.dp, r.ipkt
    );
    if r.ipkt > 1 {
        match r.td_s {
            Some(td) if td > 0.0 => {
                let _ = write!(row, ", pps: {}", (r.ipkt - 1) as f64 / td);
            }
            Some(_) => {
                // All packets in the same instant (ms resolution): 1 µs apart.
                row.push_str(", pps: 1000000");
            }
            None => {
                stats.no_duration += 1;
                row.push_str(", pps: 1");
            }
        }
    }
    row.push_str("}\n");
    out.write_all(row.as_bytes())?;
    stats.flows += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Session;

    const HEAD: &str = "ts,te,td,sa,da,sp,dp,pr,flg,ipkt,ibyt\n";

    #[test]
    fn a_record_imports_as_one_flow_that_parses_back() {
        let text = format!(
            "{HEAD}2023-02-28T09:46:01Z,2023-02-28T09:46:12Z,11.000,10.0.0.1,10.0.0.2,17000,53,UDP,.,3,330\n"
        );
        let (yaml, stats) = import_text("f.csv", &text).unwrap();
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
        let e = import_text("f.csv", &huge).unwrap_err().to_string();
        assert!(e.contains("f.csv: line 2") && e.contains("overflow"), "{e}");
        let far = format!(
            "{HEAD}0001-01-01T00:00:00Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,2,100\n\
             9999-01-01T00:00:00Z,x,1.0,10.0.0.1,10.0.0.2,1,2,UDP,.,2,100\n"
        );
        let e = import_text("f.csv", &far).unwrap_err().to_string();
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
        let (yaml, stats) = import_text("f.csv", &text).unwrap();
        assert_eq!((stats.long_bytes, stats.no_packets, stats.flows), (1, 1, 1));
        assert_eq!(stats.skipped_protocol, 0);
        let s = Session::parse("f.yaml", &yaml, true).expect("flows run accepts it");
        assert_eq!(s.flows[0].bytes, Some(65_535));
    }
}
