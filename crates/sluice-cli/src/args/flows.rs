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
    /// Change a session and save it, checked as `flows run` reads it.
    ///
    /// Indices name entries of the session as read: sets apply first,
    /// then deletions, then appended entries. What is not edited is
    /// written back as read (YAML comments and anchors excepted).
    Edit(EditArgs),
}

#[derive(Args, Debug)]
pub struct EditArgs {
    /// Session to read (YAML or JSON).
    pub session: PathBuf,
    /// Session to write: YAML if it ends in .yaml or .yml, else JSON; `-` for standard output (in the input's format). Never the input.
    #[arg(long, short = 'o')]
    pub output: String,
    /// Set a field: `seed=9`, `flows[0].pps=250`, `flows[*].dport=53`, `flows[2:5].vary.src=10.9.0.0/16` (VALUE read as YAML; negative indices count from the end). Repeatable.
    #[arg(long, value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Remove a field (`flows[0].vary`) or entries (`flows[3]`, `flows[2:5]`). Repeatable.
    #[arg(long, value_name = "PATH")]
    pub delete: Vec<String>,
    /// Add a flow entry at the end, as YAML: `{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 10, pps: 100}`. Repeatable.
    #[arg(long, value_name = "ENTRY")]
    pub append: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// nfdump-style CSV (`ts,te,td,sa,da,sp,dp,pr,flg,...,ipkt,ibyt,...`).
    pub records: PathBuf,
    /// Session to write (YAML).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}
