//! How `sluice flows run` plans a session's packets (the session file is
//! the command line's, or an upload).

use crate::text;
use crate::values::named;
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_flows::{FlowConfig, Planner};
use sluice_wire::MacAddr;

/// Most planner threads.
pub const MAX_PLANNERS: u32 = 64;

#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlowsOpts {
    /// How packets of concurrent flows are scheduled: exact per-flow times from a calendar, or FLOR's stochastic planning.
    #[arg(long, value_parser = named::<Planner>(Planner::NAMES), default_value_t = FlowConfig::default().planner)]
    #[serde(with = "text")]
    pub planner: Planner,
    /// Planner threads building packets in parallel, each for its part of the flows (by 5-tuple) and its own TX threads (at least as many TX threads run); not with --limit.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_PLANNERS as i64))]
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
    #[serde(with = "text")]
    pub src_mac: MacAddr,
    /// Destination MAC of every frame.
    #[arg(long, default_value_t = FlowConfig::default().dst_mac)]
    #[serde(with = "text")]
    pub dst_mac: MacAddr,
}

impl Default for FlowsOpts {
    fn default() -> Self {
        let f = FlowConfig::default();
        FlowsOpts {
            planner: f.planner,
            planners: 1,
            seed: None,
            stamp: false,
            topspeed: false,
            src_mac: f.src_mac,
            dst_mac: f.dst_mac,
        }
    }
}

impl FlowsOpts {
    /// What the command line's value parsers refuse, checked again for a
    /// job that did not come through it.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_PLANNERS).contains(&self.planners) {
            return Err(format!("planners must be between 1 and {MAX_PLANNERS}"));
        }
        Ok(())
    }
}
