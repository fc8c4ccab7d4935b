//! `sluice report` arguments.

use super::common::RefTiming;
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
    #[command(flatten)]
    pub timing: RefTiming,
    /// The page's title (default: the input's name).
    #[arg(long)]
    pub title: Option<String>,
}
