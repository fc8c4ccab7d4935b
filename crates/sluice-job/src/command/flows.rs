//! `sluice flows run`'s job.

use super::common::{RunOpts, ShareOpts};
use crate::flows::FlowsOpts;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Session file (.yaml/.yml or .json).
    pub session: PathBuf,
    #[command(flatten)]
    pub opts: FlowsOpts,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
    /// What a worker adds: the session's template.pcap is the plain name of a file beside it (an upload), never a path.
    #[arg(long, hide = true)]
    pub confine_inputs: bool,
}
