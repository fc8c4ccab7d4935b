//! `sluice series play`'s job.

use super::common::{RunOpts, ShareOpts};
use crate::series::SeriesOpts;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct PlayArgs {
    /// Archive to play (see `series convert`).
    pub archive: PathBuf,

    /// Device → flow mapping (YAML or CSV; see docs/FORMATS.md).
    #[arg(long)]
    pub map: Option<PathBuf>,
    #[command(flatten)]
    pub opts: SeriesOpts,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
    /// A further output (repeatable, several NICs in one run): device flow k leaves by output k mod (1 + outputs), --to being output 0.
    #[arg(long = "also-to", value_name = "SINK")]
    pub also_to: Vec<sluice_sink::SinkSpec>,
}
