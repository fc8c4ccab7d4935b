//! `sluice flows run` (sessions of flows and meta-flows) and
//! `sluice flows import` (flow records → a session).

use crate::args::RunOpts;
use crate::runopts::{check_threads, conclude, engine_config, outputs, Outputs};
use crate::{bad_input, Failure};
use anyhow::{anyhow, Context};
use clap::{Args, Subcommand, ValueEnum};
use sluice_core::{parse_count, parse_duration, Nanos};
use sluice_engine::{run_source, EngineConfig};
use sluice_sink::SinkSpec;
use sluice_source::flows::{import_csv, FlowConfig, FlowSource, Planner};
use sluice_wire::MacAddr;
use std::path::PathBuf;

fn duration(s: &str) -> Result<Nanos, String> {
    parse_duration(s).map_err(|e| e.to_string())
}
fn count(s: &str) -> Result<u64, String> {
    parse_count(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub struct FlowsArgs {
    #[command(subcommand)]
    pub command: FlowsCommand,
}

#[derive(Subcommand, Debug)]
pub enum FlowsCommand {
    /// Generate the flows of a session (YAML or JSON; schema in the README).
    Run(Box<RunArgs>),
    /// Turn nfdump-style flow records (CSV) into a session that regenerates them.
    Import(ImportArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlannerArg {
    /// Exact per-flow inter-packet times from a calendar (a heap of next-packet times).
    Calendar,
    /// FLOR's stochastic planning: a distribution tree picks flows by intensity.
    Stochastic,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Session file (.yaml/.yml or .json).
    pub session: PathBuf,
    /// Where packets go: null, pcap:PATH, afpacket:IFACE.
    #[arg(long, short = 't', default_value = "null")]
    pub to: SinkSpec,
    /// How packets of concurrent flows are scheduled.
    #[arg(long, value_enum, default_value = "calendar")]
    pub planner: PlannerArg,
    /// Seed of every random choice (overrides the session's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write a sequence signature ("SLF1", flow id, packet index) after the payload prefix.
    #[arg(long)]
    pub stamp: bool,
    /// Send in calendar order as fast as the output takes packets (ignore the times).
    #[arg(long)]
    pub topspeed: bool,
    /// Stop after N packets.
    #[arg(long, value_parser = count)]
    pub limit: Option<u64>,
    /// Stop after this long.
    #[arg(long, value_parser = duration)]
    pub duration: Option<Nanos>,
    /// Source MAC of every frame.
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub src_mac: MacAddr,
    /// Destination MAC of every frame.
    #[arg(long, default_value = "02:00:00:00:00:02")]
    pub dst_mac: MacAddr,
    #[command(flatten)]
    pub run: RunOpts,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// nfdump-style CSV (`ts,te,td,sa,da,sp,dp,pr,flg,...,ipkt,ibyt,...`).
    pub records: PathBuf,
    /// Session to write (YAML).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}

pub fn run(a: FlowsArgs) -> Result<u8, Failure> {
    match a.command {
        FlowsCommand::Run(r) => run_session(*r),
        FlowsCommand::Import(i) => import(i),
    }
}

fn run_session(a: RunArgs) -> Result<u8, Failure> {
    check_threads(&a.run, &a.to)?;
    let source = FlowSource::open(
        &a.session,
        FlowConfig {
            seed: a.seed,
            src_mac: a.src_mac,
            dst_mac: a.dst_mac,
            stamp: a.stamp,
            planner: match a.planner {
                PlannerArg::Calendar => Planner::Calendar,
                PlannerArg::Stochastic => Planner::Stochastic,
            },
        },
    )
    .map_err(bad_input)?;
    let Outputs {
        sinks,
        stop,
        mut progress,
    } = outputs(&a.run, &a.to, false)?;
    let cfg = EngineConfig {
        duration: a.duration,
        limit: a.limit,
        ..engine_config(&a.run, stop, a.topspeed)
    };
    let result = run_source(source, sinks, &cfg, &mut progress);
    conclude(&a.run, progress, result)
}

fn import(a: ImportArgs) -> Result<u8, Failure> {
    let name = a.records.display().to_string();
    let text = std::fs::read_to_string(&a.records)
        .with_context(|| format!("cannot read {name}"))
        .map_err(bad_input)?;
    let (yaml, s) = import_csv(&name, &text).map_err(|e| bad_input(anyhow!(e)))?;
    std::fs::write(&a.output, yaml)
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    eprintln!(
        "sluice: {name} -> {}: {} records, {} flows; skipped (protocol) {}, without duration (1 s apart) {}, bytes raised to the headers' minimum {}",
        a.output.display(),
        s.records,
        s.flows,
        s.skipped_protocol,
        s.no_duration,
        s.short_bytes
    );
    Ok(crate::exit::OK)
}
