//! The result of an analysis, [`Report`], and its human-readable form.
//!
//! Design decision: one serialisable struct for machines (JSON via
//! [`Report::to_json`]) and one text rendering for people. The comparison
//! lines of the text reproduce `bench/gaperr.py`'s output format
//! character for character (same rounding: rate to 3 decimals with a sign,
//! spans to the microsecond, mean rounded half to even), so a reader can
//! diff the two tools' output; the capture statistics come first.

use std::fmt::Write as _;

use serde::Serialize;

use crate::compare::Comparison;
use crate::dist::Dist;
use crate::stats::CaptureStats;

/// Everything known about one capture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The capture file, as given.
    pub capture: String,
    /// Statistics of the capture on its own.
    pub stats: CaptureStats,
    /// The reference file, as given, if any.
    pub reference: Option<String>,
    /// The capture against the reference, if one was given.
    pub comparison: Option<Comparison>,
}

impl Report {
    /// Pretty-printed JSON (NaN rates become `null`).
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// A multi-line human-readable summary ending in a newline.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out)
            .expect("writing to a String cannot fail");
        out
    }

    fn write_text(&self, o: &mut String) -> std::fmt::Result {
        let s = &self.stats;
        writeln!(o, "capture {}", self.capture)?;
        writeln!(
            o,
            "packets {} ({} bytes) in {:.9} s: {:.3} pps, {}",
            s.packets,
            s.bytes,
            s.duration_s,
            s.pps,
            bits_per_second(s.bps)
        )?;
        if s.packets > 0 {
            writeln!(
                o,
                "time {} .. {} (s since epoch)",
                epoch(s.first_ns),
                epoch(s.last_ns)
            )?;
        }
        if let Some(d) = &s.iat {
            writeln!(
                o,
                "inter-arrival ns: min {} p50 {} p90 {} p99 {} p99.9 {} max {} mean {:.1} stddev {:.1}{}",
                d.min_ns,
                d.percentiles.p50_ns,
                d.percentiles.p90_ns,
                d.percentiles.p99_ns,
                d.percentiles.p999_ns,
                d.percentiles.max_ns,
                d.mean_ns,
                d.stddev_ns,
                approx(d)
            )?;
        }
        if s.ts_backwards > 0 {
            writeln!(
                o,
                "warning: {} timestamps go backwards (counted as 0 ns gaps)",
                s.ts_backwards
            )?;
        }
        if let Some(msg) = &s.truncated {
            writeln!(
                o,
                "truncated: {msg} (statistics cover the {} complete packets before it)",
                s.packets
            )?;
        }

        let Some(c) = &self.comparison else {
            return Ok(());
        };
        writeln!(
            o,
            "reference {}",
            self.reference.as_deref().unwrap_or("(unnamed)")
        )?;
        if let Some(msg) = &c.reference_truncated {
            writeln!(
                o,
                "reference truncated: {msg} (expected counts its {} complete packets)",
                c.expected
            )?;
        }
        // The received, achieved-rate and |D_M - D_R| lines are gaperr.py's.
        writeln!(
            o,
            "received {}/{} (lost {}, reordered {})",
            c.received, c.expected, c.lost, c.reordered
        )?;
        writeln!(o, "duplicates {}, foreign {}", c.duplicates, c.foreign)?;
        let rate = if c.rate_err_pct.is_nan() {
            "n/a".to_string()
        } else {
            format!("{:+.3}%", c.rate_err_pct)
        };
        writeln!(
            o,
            "achieved rate vs requested: {rate}  (span {:.6}s, requested {:.6}s)",
            c.achieved_span_s, c.requested_span_s
        )?;
        match &c.gap_err {
            Some(d) => writeln!(
                o,
                "|D_M - D_R| ns: p50 {} p90 {} p99 {} p99.9 {} max {} mean {}{}",
                d.percentiles.p50_ns,
                d.percentiles.p90_ns,
                d.percentiles.p99_ns,
                d.percentiles.p999_ns,
                d.percentiles.max_ns,
                d.mean_rounded_ns(),
                approx(d)
            )?,
            None => writeln!(
                o,
                "|D_M - D_R| ns: none (no two consecutive reference packets both arrived)"
            )?,
        }
        if c.received == 0 && c.foreign > 0 && c.expected > 0 {
            writeln!(
                o,
                "note: no capture frame matched the reference by content; are the link \
                 types, snap lengths or VLAN tags different?"
            )?;
        }
        Ok(())
    }
}

fn approx(d: &Dist) -> &'static str {
    if d.exact {
        ""
    } else {
        " (percentiles approx. 0.1%)"
    }
}

/// `seconds.nanoseconds` since the epoch.
fn epoch(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// A bit rate with a decimal SI prefix, 3 decimals.
fn bits_per_second(bps: f64) -> String {
    const UNITS: [(f64, &str); 4] = [
        (1e12, "Tbit/s"),
        (1e9, "Gbit/s"),
        (1e6, "Mbit/s"),
        (1e3, "kbit/s"),
    ];
    for (scale, unit) in UNITS {
        if bps >= scale {
            return format!("{:.3} {unit}", bps / scale);
        }
    }
    format!("{bps:.3} bit/s")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(v: u64) -> Dist {
        Dist {
            count: 3,
            min_ns: v,
            mean_ns: v as f64 + 0.5,
            stddev_ns: 0.5,
            percentiles: crate::dist::Quantiles {
                p50_ns: v,
                p90_ns: v,
                p99_ns: v,
                p999_ns: v,
                max_ns: v + 1,
            },
            exact: true,
        }
    }

    fn report(comparison: Option<Comparison>) -> Report {
        Report {
            capture: "cap.pcap".into(),
            stats: CaptureStats {
                packets: 3,
                bytes: 192,
                first_ns: 1_700_000_000_000_000_000,
                last_ns: 1_700_000_000_000_020_000,
                duration_s: 2e-5,
                pps: 100_000.0,
                bps: 51_200_000.0,
                iat: Some(dist(10_000)),
                ts_backwards: 0,
                truncated: None,
            },
            reference: comparison.as_ref().map(|_| "ref.pcap".into()),
            comparison,
        }
    }

    #[test]
    fn stats_only() {
        let t = report(None).render_text();
        assert_eq!(
            t,
            "capture cap.pcap\n\
             packets 3 (192 bytes) in 0.000020000 s: 100000.000 pps, 51.200 Mbit/s\n\
             time 1700000000.000000000 .. 1700000000.000020000 (s since epoch)\n\
             inter-arrival ns: min 10000 p50 10000 p90 10000 p99 10000 p99.9 10000 max 10001 \
             mean 10000.5 stddev 0.5\n"
        );
    }

    #[test]
    fn comparison_lines_follow_gaperr() {
        let c = Comparison {
            expected: 1000,
            received: 995,
            lost: 5,
            duplicates: 1,
            foreign: 2,
            reordered: 1,
            rate_err_pct: 0.0123456,
            requested_span_s: 0.00999,
            achieved_span_s: 0.0099912,
            gap_err: Some(dist(12)),
            reference_truncated: None,
        };
        let t = report(Some(c)).render_text();
        let tail: Vec<&str> = t.lines().skip(4).collect();
        assert_eq!(
            tail,
            [
                "reference ref.pcap",
                "received 995/1000 (lost 5, reordered 1)",
                "duplicates 1, foreign 2",
                "achieved rate vs requested: +0.012%  (span 0.009991s, requested 0.009990s)",
                // mean 12.5 rounds half to even.
                "|D_M - D_R| ns: p50 12 p90 12 p99 12 p99.9 12 max 13 mean 12",
            ]
        );
    }

    #[test]
    fn nan_rate_no_gaps_and_mismatch_hint() {
        let c = Comparison {
            expected: 10,
            received: 0,
            lost: 10,
            duplicates: 0,
            foreign: 3,
            reordered: 0,
            rate_err_pct: f64::NAN,
            requested_span_s: 0.0,
            achieved_span_s: 0.0,
            gap_err: None,
            reference_truncated: Some("ref.pcap: cut".into()),
        };
        let r = report(Some(c));
        let t = r.render_text();
        assert!(t.contains("reference truncated: ref.pcap: cut"), "{t}");
        assert!(
            t.contains("achieved rate vs requested: n/a  (span 0.000000s"),
            "{t}"
        );
        assert!(t.contains("|D_M - D_R| ns: none"), "{t}");
        assert!(t.contains("note: no capture frame matched"), "{t}");
        let json = r.to_json().unwrap();
        assert!(json.contains("\"rate_err_pct\": null"), "{json}");
    }

    #[test]
    fn bit_rate_units() {
        assert_eq!(bits_per_second(0.0), "0.000 bit/s");
        assert_eq!(bits_per_second(1500.0), "1.500 kbit/s");
        assert_eq!(bits_per_second(9.95e9), "9.950 Gbit/s");
    }
}
