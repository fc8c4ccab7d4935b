//! The driver: read the reference (if any) into a content index, stream the
//! capture once through the statistics and the matcher, build the
//! [`Report`].
//!
//! Design decision: one pass over each file, reference first. Why: the
//! capture can be far larger than memory, and reading it once keeps the
//! analysis as fast as the disk; the reference has to be indexed before the
//! first capture frame can be matched anyway. A capture or reference that
//! ends in a truncated record is analyzed up to the cut, and the report says
//! so; any other read error fails the analysis.

use std::path::Path;

use sluice_capture::{CaptureReader, Packet};
use sluice_pace::{Schedule, TimingMode};

use crate::compare::Comparison;
use crate::error::AnalyzeError;
use crate::matching::{Matcher, Reference, MAX_REFERENCE_PACKETS};
use crate::report::Report;
use crate::stats::StatsBuilder;

/// Tuning of [`analyze_with`].
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Most values (inter-arrival times, gap errors) kept per distribution
    /// for exact percentiles, 8 bytes each; beyond it the percentiles come
    /// from a 3-significant-digit histogram and `Dist::exact` is false.
    /// Default 2^25 (256 MiB per distribution at most).
    pub max_sort: usize,
    /// How the run that made the capture timed the reference: the
    /// requested times |D_M − D_R| is measured against are the reference's
    /// timestamps mapped as the run mapped them (`replay --pps`, `--mbps`,
    /// `-x`), by the same schedule. Top speed requests no times.
    pub timing: TimingMode,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_sort: 1 << 25,
            timing: TimingMode::Recorded { multiplier: 1.0 },
        }
    }
}

/// Analyzes `capture`, and compares it with `reference` when given, with
/// default [`Options`].
pub fn analyze(capture: &Path, reference: Option<&Path>) -> Result<Report, AnalyzeError> {
    analyze_with(capture, reference, &Options::default())
}

/// [`analyze`] with explicit options.
pub fn analyze_with(
    capture: &Path,
    reference: Option<&Path>,
    opts: &Options,
) -> Result<Report, AnalyzeError> {
    let mut matcher = match reference {
        Some(path) => Some(load_reference(path, opts.timing)?),
        None => None,
    };

    let mut stats = StatsBuilder::new(opts.max_sort);
    let truncated = for_each_packet(capture, |p| {
        stats.push(p.ts_ns, p.orig_len);
        if let Some((m, _)) = matcher.as_mut() {
            m.observe(p.ts_ns, p.data);
        }
        Ok(())
    })?;

    let comparison = matcher
        .as_ref()
        .map(|(m, cut)| Comparison::from_matcher(m, opts.max_sort, cut.clone()));
    Ok(Report {
        capture: capture.display().to_string(),
        stats: stats.finish(truncated),
        reference: reference.map(|p| p.display().to_string()),
        comparison,
    })
}

/// Indexes the reference; returns the matcher and the truncation message.
fn load_reference(
    path: &Path,
    timing: TimingMode,
) -> Result<(Matcher, Option<String>), AnalyzeError> {
    let mut r = Reference::new();
    // Requested times keep the trace's first timestamp as their origin, so
    // the recorded mode leaves the reference exactly as it is.
    let mut schedule = Schedule::new(timing);
    let mut origin = None;
    let cut = for_each_packet(path, |p| {
        let first = *origin.get_or_insert(p.ts_ns);
        let ts = match timing {
            TimingMode::Recorded { multiplier: 1.0 } => p.ts_ns,
            _ => first.saturating_add(schedule.due(p.ts_ns, p.data.len()).0),
        };
        r.push(ts, p.data)
            .map_err(|_| AnalyzeError::ReferenceTooLarge {
                file: path.display().to_string(),
                limit: MAX_REFERENCE_PACKETS,
            })
    })?;
    Ok((Matcher::new(r), cut))
}

/// Calls `f` for each complete packet of `path`. Returns the truncation
/// message if the file ends in a cut record; other errors fail.
fn for_each_packet(
    path: &Path,
    mut f: impl FnMut(&Packet<'_>) -> Result<(), AnalyzeError>,
) -> Result<Option<String>, AnalyzeError> {
    let mut reader = CaptureReader::open(path)?;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => f(&p)?,
            Ok(None) => return Ok(None),
            Err(e) if e.is_truncation() => return Ok(Some(e.to_string())),
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn testdata(name: &str) -> PathBuf {
        sluice_testkit::testdata("pcap").join(name)
    }

    #[test]
    fn real_capture_count_and_duration() {
        let r = analyze(&testdata("tcpreplay__test.pcap"), None).unwrap();
        let s = &r.stats;
        assert_eq!(s.packets, 179);
        assert!(s.truncated.is_none());
        assert!(s.duration_s > 0.0);
        assert_eq!(s.duration_s, (s.last_ns - s.first_ns) as f64 / 1e9);
        assert_eq!(s.iat.as_ref().unwrap().count, 178);
        assert!(r.comparison.is_none());
        assert!(r.render_text().starts_with("capture "));
    }

    #[test]
    fn truncated_capture_is_analyzed_not_failed() {
        let r = analyze(
            &testdata("DERIVED__tcpreplay_test_cut-mid-packet.pcap"),
            None,
        )
        .unwrap();
        assert_eq!(r.stats.packets, 99);
        let msg = r.stats.truncated.as_deref().expect("truncation reported");
        assert!(msg.contains("truncated"), "{msg}");
        assert!(r.render_text().contains("truncated: "));
    }

    #[test]
    fn capture_against_itself_and_its_truncated_copy() {
        let full = testdata("tcpreplay__test.pcap");
        let cut = testdata("DERIVED__tcpreplay_test_cut-mid-packet.pcap");
        let r = analyze(&full, Some(&full)).unwrap();
        let c = r.comparison.unwrap();
        assert_eq!(
            (c.expected, c.lost, c.duplicates, c.foreign),
            (179, 0, 0, 0)
        );
        assert_eq!((c.received, c.reordered, c.rate_err_pct), (179, 0, 0.0));
        assert_eq!(c.gap_err.unwrap().percentiles.max_ns, 0);

        // The cut copy as capture: the first 99 arrive.
        let c = analyze(&cut, Some(&full)).unwrap().comparison.unwrap();
        assert_eq!((c.received, c.lost, c.foreign), (99, 80, 0));
        // The cut copy as reference: noted, and the rest of the full
        // capture is duplicates or foreign.
        let c = analyze(&full, Some(&cut)).unwrap().comparison.unwrap();
        assert!(c.reference_truncated.is_some());
        assert_eq!((c.expected, c.received), (99, 99));
        assert_eq!(c.duplicates + c.foreign, 80);
    }

    #[test]
    fn unreadable_capture_fails() {
        let e = analyze(&testdata("libpcap__pcap-invalid-version-1.pcap"), None).unwrap_err();
        assert!(matches!(e, AnalyzeError::Capture(_)), "{e}");
        let e = analyze(Path::new("/nonexistent/x.pcap"), None).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.pcap"), "{e}");
    }

    #[test]
    fn small_max_sort_gives_approximate_percentiles() {
        let opts = Options {
            max_sort: 10,
            ..Options::default()
        };
        let r = analyze_with(&testdata("tcpreplay__test.pcap"), None, &opts).unwrap();
        let iat = r.stats.iat.unwrap();
        assert!(!iat.exact);
        let exact = analyze(&testdata("tcpreplay__test.pcap"), None)
            .unwrap()
            .stats
            .iat
            .unwrap();
        assert_eq!(
            (iat.min_ns, iat.percentiles.max_ns, iat.count),
            (exact.min_ns, exact.percentiles.max_ns, exact.count)
        );
    }
}
