//! `sluice rx` arguments.

use super::values::{positive_count, positive_duration};
use clap::Args;
use sluice_core::Nanos;

#[derive(Args, Debug)]
pub struct RxArgs {
    /// The interface stamped frames arrive on.
    pub iface: String,
    /// Stop after this long.
    #[arg(long, value_parser = positive_duration)]
    pub duration: Option<Nanos>,
    /// Stop once this many stamped frames arrived.
    #[arg(long, value_parser = positive_count)]
    pub count: Option<u64>,
    /// Stop once no stamped frame arrived for this long, after the first.
    #[arg(long, value_parser = positive_duration)]
    pub idle: Option<Nanos>,
    /// Write the per-stream counts once a second to PATH (- for stdout), one JSON object per line.
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the final per-stream counts as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// Stamps of streams FIRST to LAST come from a clock OFFSET ahead of this host's (negative: behind), e.g. 1024-1279=-2.5ms; their one-way latency is corrected by it. Repeatable.
    #[arg(long, value_name = "FIRST[-LAST]=OFFSET", allow_hyphen_values = true)]
    pub rx_clock: Vec<sluice_analyze::streams::ClockCorrection>,
    /// Test only: this process's wall clock, as receive times read it, is this much ahead of the host's.
    #[arg(long, value_parser = super::values::signed_duration, allow_hyphen_values = true, hide = true, default_value_t = 0)]
    pub clock_shift: i64,
    /// No live status line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
