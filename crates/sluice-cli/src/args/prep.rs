//! `sluice prep` arguments.

use clap::Args;
use sluice_source::SplitMode;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct PrepArgs {
    /// Trace to split (pcap or pcapng, optionally gzip-compressed).
    pub trace: PathBuf,
    /// How to split: auto (per flow, its opener is the client), cidr:NET[,NET] (sources in NET are servers), port (the lower port is the server's).
    #[arg(long, value_name = "MODE")]
    pub split: SplitMode,
    /// The split cache to write (replay --split cache:FILE reads it).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
}
