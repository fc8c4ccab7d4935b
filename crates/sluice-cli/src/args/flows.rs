//! `sluice flows` arguments: run, import.

use clap::{Args, Subcommand};
use sluice_job::command::RunArgs;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct FlowsArgs {
    #[command(subcommand)]
    pub command: FlowsCommand,
}

#[derive(Subcommand, Debug)]
pub enum FlowsCommand {
    /// Generate the flows of a session (YAML or JSON; schema in docs/FORMATS.md).
    ///
    /// With several TX threads a new flow goes to the thread with the
    /// fewest packets so far and stays there, so per-flow order is kept.
    Run(Box<RunArgs>),
    /// Turn nfdump-style flow records (CSV) into a session that regenerates them.
    Import(ImportArgs),
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// nfdump-style CSV (`ts,te,td,sa,da,sp,dp,pr,flg,...,ipkt,ibyt,...`).
    pub records: PathBuf,
    /// Session to write (YAML).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}
