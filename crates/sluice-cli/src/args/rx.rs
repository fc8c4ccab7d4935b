//! `sluice rx` arguments.

use clap::Args;
use sluice_job::receive::RxOpts;

#[derive(Args, Debug)]
pub struct RxArgs {
    /// The interface stamped frames arrive on.
    pub iface: String,
    #[command(flatten)]
    pub opts: RxOpts,
    /// Write the per-stream counts once a second to PATH (- for stdout), one JSON object per line.
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the final per-stream counts as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// Test only: this process's wall clock, as receive times read it, is this much ahead of the host's.
    #[arg(long, value_parser = super::values::signed_duration, allow_hyphen_values = true, hide = true, default_value_t = 0)]
    pub clock_shift: i64,
    /// No live status line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
