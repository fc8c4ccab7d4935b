//! `sluice report` arguments.

use super::values::rate;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run's --stats-json lines, or a capture (pcap or pcapng).
    pub input: PathBuf,
    /// Where the HTML page goes (- for stdout); written whole, then renamed into place.
    #[arg(long, short = 'o')]
    pub output: String,
    /// With a capture: the trace that was sent (loss, reordering, |D_M − D_R|).
    #[arg(long, short = 'r')]
    pub reference: Option<PathBuf>,
    /// With a reference: the run sent at this fixed packet rate (as replay's pps option).
    #[arg(long, value_parser = rate, requires = "reference", group = "timing")]
    pub pps: Option<f64>,
    /// With a reference: the run sent at this fixed bit rate (as replay's mbps option).
    #[arg(long, value_parser = rate, requires = "reference", group = "timing")]
    pub mbps: Option<f64>,
    /// With a reference: the run scaled the recorded timing by this (as replay's multiplier).
    #[arg(long, short = 'x', requires = "reference", group = "timing")]
    pub multiplier: Option<f64>,
    /// The page's title (default: the input's name).
    #[arg(long)]
    pub title: Option<String>,
}
