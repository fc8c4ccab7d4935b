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
}
