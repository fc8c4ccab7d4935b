//! `sluice pace` arguments.

use super::common::RunOpts;
use clap::{ArgGroup, Args};
use sluice_job::live::PaceOpts;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("law").required(true).args(["gap", "pps", "mbps", "ipd"])))]
pub struct PaceArgs {
    /// TAP device to read from: created, or attached to when it exists (`ip tuntap add dev NAME mode tap`); brought up.
    #[arg(long)]
    pub tap: String,
    #[command(flatten)]
    pub opts: PaceOpts,
    /// Gaps drawn from a profile's `ipd` law and mean (its packet and size parts are ignored).
    #[arg(long)]
    pub ipd: Option<PathBuf>,
    /// Write each departure's requested gap (ns, one per line) to PATH, for `analyze --gaps`.
    #[arg(long)]
    pub log_requested: Option<String>,
    #[command(flatten)]
    pub run: RunOpts,
}
