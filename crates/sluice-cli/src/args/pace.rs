//! `sluice pace` arguments.

use super::common::RunOpts;
use super::values::{positive_count, positive_duration, rate};
use clap::{ArgGroup, Args};
use sluice_core::Nanos;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("law").required(true).args(["gap", "pps", "mbps", "ipd"])))]
pub struct PaceArgs {
    /// TAP device to read from: created, or attached to when it exists (`ip tuntap add dev NAME mode tap`); brought up.
    #[arg(long)]
    pub tap: String,
    /// The same gap between departures, e.g. 20us.
    #[arg(long, value_parser = positive_duration)]
    pub gap: Option<Nanos>,
    /// Departures per second (a constant gap of 1/N).
    #[arg(long, value_parser = rate)]
    pub pps: Option<f64>,
    /// Bit rate in Mbit/s: each frame's gap is its own length (bytes without FCS, as tbf counts) at this rate.
    #[arg(long, value_parser = rate)]
    pub mbps: Option<f64>,
    /// Gaps drawn from a profile's `ipd` law and mean (its packet and size parts are ignored).
    #[arg(long)]
    pub ipd: Option<PathBuf>,
    /// Seed of the --ipd draws (default: the profile's).
    #[arg(long, requires = "ipd")]
    pub seed: Option<u64>,
    /// One gap law per flow (symmetric 5-tuple), like TCP pacing per connection; default: one for the link.
    #[arg(long)]
    pub per_flow: bool,
    /// Most frames waiting to depart; one arriving to a full backlog is dropped and counted.
    #[arg(long, value_parser = positive_count, default_value_t = 1000)]
    pub queue_limit: u64,
    /// Frames that may leave back to back after an idle spell (a token bucket's depth, in frames).
    #[arg(long, value_parser = positive_count, default_value_t = 1)]
    pub burst: u64,
    /// Write frames arriving on the --to interface for the TAP's MAC (and broadcasts) back into the TAP: TCP stays closed-loop.
    #[arg(long = "return")]
    pub return_path: bool,
    /// Emulate a timer-driven emulator's scheduling (NIST Net's 122us, netem on a HZ kernel): each frame leaves at the first tick at or after its time, so frames due within one tick leave back to back; --log-requested keeps the untimed gaps (Caliper Fig. 8).
    #[arg(long, value_parser = positive_duration)]
    pub tick: Option<Nanos>,
    /// Write each departure's requested gap (ns, one per line) to PATH, for `analyze --gaps`.
    #[arg(long)]
    pub log_requested: Option<String>,
    #[command(flatten)]
    pub run: RunOpts,
}
