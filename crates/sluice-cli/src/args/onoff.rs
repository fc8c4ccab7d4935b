//! `sluice profile onoff` arguments.

use super::common::RunOpts;
use clap::Args;
use sluice_job::onoff::OnOffOpts;

#[derive(Args, Debug)]
pub struct OnOffArgs {
    #[command(flatten)]
    pub opts: OnOffOpts,
    #[command(flatten)]
    pub run: RunOpts,
}
