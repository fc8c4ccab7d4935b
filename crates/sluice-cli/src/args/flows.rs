//! `sluice flows` arguments: run, import.

use super::common::{RunOpts, ShareOpts};
use super::values::named;
use clap::{Args, Subcommand};
use sluice_flows::{FlowConfig, Planner};
use sluice_wire::MacAddr;
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
pub struct RunArgs {
    /// Session file (.yaml/.yml or .json).
    pub session: PathBuf,
    /// How packets of concurrent flows are scheduled: exact per-flow times from a calendar, or FLOR's stochastic planning.
    #[arg(long, value_parser = named::<Planner>(Planner::NAMES), default_value_t = FlowConfig::default().planner)]
    pub planner: Planner,
    /// Planner threads building packets in parallel, each for its part of the flows (by 5-tuple) and its own TX threads (at least as many TX threads run); not with --limit.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub planners: u32,
    /// Seed of every random choice (overrides the session's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write a sequence signature ("SLF1", flow id, packet index) after the payload prefix.
    #[arg(long)]
    pub stamp: bool,
    /// Send in calendar order as fast as the output takes packets (ignore the times).
    #[arg(long)]
    pub topspeed: bool,
    /// Source MAC of every frame.
    #[arg(long, default_value_t = FlowConfig::default().src_mac)]
    pub src_mac: MacAddr,
    /// Destination MAC of every frame.
    #[arg(long, default_value_t = FlowConfig::default().dst_mac)]
    pub dst_mac: MacAddr,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// nfdump-style CSV (`ts,te,td,sa,da,sp,dp,pr,flg,...,ipkt,ibyt,...`).
    pub records: PathBuf,
    /// Session to write (YAML).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}
