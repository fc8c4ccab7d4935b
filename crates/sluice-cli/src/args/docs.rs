//! `sluice completions` and `sluice man` arguments.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write sluice.1 and one page per command (sluice-replay.1, ...) into this directory instead of printing sluice.1.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}
