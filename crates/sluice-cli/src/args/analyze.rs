//! `sluice analyze` arguments.

use super::values::duration;
use clap::Args;
use sluice_analyze::Timeouts;
use sluice_core::Nanos;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Capture to analyze (pcap or pcapng).
    pub capture: PathBuf,
    /// The trace that was sent: match packets by content, report loss, reordering, |D_M − D_R|.
    #[arg(long, short = 'r')]
    pub reference: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
