//! `sluice analyze` arguments.

use super::common::RefTiming;
use super::values::{duration, positive_duration};
use clap::Args;
use sluice_analyze::Timeouts;
use sluice_core::Nanos;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Capture to analyze (pcap or pcapng).
    #[arg(required_unless_present = "live", conflicts_with = "live")]
    pub capture: Option<PathBuf>,
    /// Capture on this interface for --duration (kernel timestamps, promiscuous, both directions), then analyze what arrived: no tcpdump needed.
    #[arg(long = "capture", value_name = "IFACE", requires = "duration")]
    pub live: Option<String>,
    /// With --capture: how long to capture (SIGINT ends it sooner).
    #[arg(long, value_parser = positive_duration, requires = "live")]
    pub duration: Option<Nanos>,
    /// With --capture: keep the capture in this pcap file (default: a temporary file, removed).
    #[arg(long, value_name = "PATH", requires = "live")]
    pub save: Option<PathBuf>,
    /// The trace that was sent: match packets by content, report loss, reordering, |D_M − D_R|.
    #[arg(long, short = 'r')]
    pub reference: Option<PathBuf>,
    #[command(flatten)]
    pub timing: RefTiming,
    /// With --reference: the run's --summary-json, whose recorded timing mode (--pps, --mbps, -x or recorded) schedules the reference.
    #[arg(long, value_name = "SUMMARY", requires = "reference", group = "timing")]
    pub run: Option<PathBuf>,
    /// Exit 4 when a figure crosses a threshold, e.g. 'lost>0,p99_ns>50000,rate_err_pct>0.1': each KEY OP NUMBER (> >= < <= ==), KEY a figure of the --json output by name or dotted path; a figure that is null fails.
    #[arg(long, conflicts_with_all = ["target", "flows"])]
    pub fail_if: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Judge against a target: a profile (.yaml/.yml/.json), the trace it should reproduce (pcap), or per-bin counts (.csv); the paper's measures as bench/ratejudge.py defines them.
    #[arg(long, conflicts_with_all = ["reference", "flows"])]
    pub target: Option<PathBuf>,
    /// With --target: the bin width t_sample.
    #[arg(long, value_parser = positive_duration, default_value = "1ms", requires = "target")]
    pub sample: Nanos,
    /// With --target: the capture is aligned to the target by a lag of at most this many bins.
    #[arg(long, default_value_t = 50, requires = "target")]
    pub max_lag: i64,
    /// With --target: draw the target and generated rate histograms and CDFs into this SVG; with --gap or --gaps: the requested and measured gaps' CDFs, overlaid.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Requested constant gap between departures: report |D_R − D_M| percentiles of consecutive frames (Caliper's measure; p95 is its headline).
    #[arg(long, value_parser = positive_duration, conflicts_with_all = ["reference", "flows", "target", "gaps"])]
    pub gap: Option<Nanos>,
    /// Requested gaps, ns one per line in departure order (`pace --log-requested`): |D_R − D_M| percentiles.
    #[arg(long, conflicts_with_all = ["reference", "flows", "target"])]
    pub gaps: Option<PathBuf>,
    /// With --gap: compare only gaps between frames of at least this many bytes (full-size segments).
    #[arg(long, default_value_t = 0)]
    pub min_size: u32,
    /// Act as a flow collector: 7-tuple flow records (first/last, packets, bytes).
    #[arg(long, conflicts_with = "reference")]
    pub flows: bool,
    /// With --flows: the session that was generated; report per-flow start and duration errors and count mismatches.
    #[arg(long, requires = "flows")]
    pub session: Option<PathBuf>,
    /// With --session: the seed the run used (default: the session's).
    #[arg(long, requires = "session")]
    pub seed: Option<u64>,
    /// Flow meter active timeout: a longer flow is split.
    #[arg(long, value_parser = duration, default_value_t = Nanos(Timeouts::default().active))]
    pub active_timeout: Nanos,
    /// Flow meter idle timeout: a longer gap ends a flow.
    #[arg(long, value_parser = duration, default_value_t = Nanos(Timeouts::default().idle))]
    pub idle_timeout: Nanos,
}

impl AnalyzeArgs {
    /// The capture file to analyze (after `--capture IFACE`, the one made).
    pub fn capture_path(&self) -> &std::path::Path {
        self.capture
            .as_deref()
            .expect("a capture file, or --capture which makes one first")
    }
}
