//! `sluice profile run`'s job.

use super::common::{RunOpts, ShareOpts};
use crate::profile::{ProfileOpts, ShareBy};
use crate::values::named;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ProfileRunArgs {
    /// Profile (.yaml/.yml or .json).
    pub profile: PathBuf,
    #[command(flatten)]
    pub opts: ProfileOpts,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
    /// What --share deals out: packets (every Nth of the global schedule) or components (Fourier queues, with --mode fourier).
    #[arg(long, value_parser = named::<ShareBy>(ShareBy::NAMES), default_value_t = ShareBy::default(), requires = "share")]
    pub share_by: ShareBy,
    /// A further output (repeatable, the paper's generating ports): the run's Fourier queues (or flows) leave by output (rank mod (1 + outputs)), --to being output 0.
    #[arg(long = "also-to", value_name = "SINK")]
    pub also_to: Vec<sluice_sink::SinkSpec>,
    /// What a worker adds: its Fourier queues as the controller computed them (never the command line's).
    #[arg(skip)]
    pub fourier: Option<sluice_profile::Components>,
    /// What a worker adds: the profile's from: captures are plain names of files beside it (uploads), never paths.
    #[arg(long, hide = true)]
    pub confine_inputs: bool,
}
