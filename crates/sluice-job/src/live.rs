//! How the live sources send: `sluice pace`'s gap law and backlog,
//! `sluice inject`'s queue and clients. The TAP, the listening socket,
//! a profile's path, the token and the logs are the command line's own.

use crate::values::{count, positive_count, positive_duration, rate};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_core::Nanos;
use sluice_wire::MacAddr;

/// `sluice pace`'s own options (`--ipd PROFILE` is the command line's:
/// it names a file).
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PaceOpts {
    /// The same gap between departures, e.g. 20us.
    #[arg(long, value_parser = positive_duration)]
    #[serde(with = "crate::fields::opt_positive_duration")]
    pub gap: Option<Nanos>,
    /// Departures per second (a constant gap of 1/N).
    #[arg(long, value_parser = rate)]
    #[serde(with = "crate::fields::opt_rate")]
    pub pps: Option<f64>,
    /// Bit rate in Mbit/s: each frame's gap is its own length (bytes without FCS, as tbf counts) at this rate.
    #[arg(long, value_parser = rate)]
    #[serde(with = "crate::fields::opt_rate")]
    pub mbps: Option<f64>,
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
    #[serde(rename = "return")]
    pub return_path: bool,
    /// Emulate a timer-driven emulator's scheduling (NIST Net's 122us, netem on a HZ kernel): each frame leaves at the first tick at or after its time, so frames due within one tick leave back to back; --log-requested keeps the untimed gaps (Caliper Fig. 8).
    #[arg(long, value_parser = positive_duration)]
    #[serde(with = "crate::fields::opt_positive_duration")]
    pub tick: Option<Nanos>,
}

impl Default for PaceOpts {
    fn default() -> Self {
        PaceOpts {
            gap: None,
            pps: None,
            mbps: None,
            seed: None,
            per_flow: false,
            queue_limit: 1000,
            burst: 1,
            return_path: false,
            tick: None,
        }
    }
}

impl PaceOpts {
    /// What the command line's value parsers and relations refuse,
    /// checked again for a job that did not come through it (`ipd` is
    /// the caller's: whether one was given).
    pub fn check(&self, ipd: bool) -> Result<(), String> {
        let laws = [
            self.gap.is_some(),
            self.pps.is_some(),
            self.mbps.is_some(),
            ipd,
        ];
        if laws.iter().filter(|l| **l).count() != 1 {
            return Err("give one gap law: gap, pps, mbps or ipd".into());
        }
        if self.queue_limit == 0 || self.burst == 0 {
            return Err("queue_limit and burst must be at least 1".into());
        }
        Ok(())
    }
}

/// `sluice inject`'s own options (where it listens, its token and its
/// log are the command line's).
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InjectOpts {
    /// Most descriptions waiting to leave (all clients); one arriving to a full queue is dropped and acknowledged as such.
    #[arg(long, value_parser = positive_count, default_value_t = 1_000_000)]
    pub queue_limit: u64,
    /// Bytes of built frames held waiting for their time (all clients); a description arriving past it is dropped and acknowledged as such (default: 256M, or the memory budget when that is less).
    #[arg(long, value_parser = count)]
    pub queue_bytes: Option<u64>,
    /// Clients connected at once, at most; more are closed as they connect.
    #[arg(long, value_parser = positive_count, default_value_t = 64)]
    pub max_clients: u64,
    /// How long before its time a frame is handed to the TX thread: longer rides out late wake-ups of a busy machine; a description arriving within it, due before frames already handed over, leaves behind them.
    #[arg(long, value_parser = positive_duration, default_value_t = Nanos(sluice_live::inject::DEFAULT_LEAD_NS))]
    #[serde(with = "crate::fields::positive_duration")]
    pub lead: Nanos,
    /// Descriptions one client may have unacknowledged before sluice stops reading it (its socket then pushes back).
    #[arg(long, value_parser = positive_count, default_value_t = 262_144)]
    pub window: u64,
    /// Source MAC of frames built from fields (default: the --to interface's, else 02:00:00:00:00:01); a client's HELLO may give its own.
    #[arg(long)]
    #[serde(with = "crate::text::opt")]
    pub src_mac: Option<MacAddr>,
    /// Destination MAC of frames built from fields (default ff:ff:ff:ff:ff:ff); a client's HELLO may give its own.
    #[arg(long)]
    #[serde(with = "crate::text::opt")]
    pub dst_mac: Option<MacAddr>,
    /// End the run once this many client sessions have ended (default: run until stopped).
    #[arg(long, value_parser = positive_count)]
    pub sessions: Option<u64>,
}

impl Default for InjectOpts {
    fn default() -> Self {
        InjectOpts {
            queue_limit: 1_000_000,
            queue_bytes: None,
            max_clients: 64,
            lead: Nanos(sluice_live::inject::DEFAULT_LEAD_NS),
            window: 262_144,
            src_mac: None,
            dst_mac: None,
            sessions: None,
        }
    }
}

impl InjectOpts {
    /// What the command line's value parsers refuse, checked again for a
    /// job that did not come through it.
    pub fn check(&self) -> Result<(), String> {
        if self.queue_limit == 0 || self.max_clients == 0 || self.window == 0 {
            return Err("queue_limit, max_clients and window must be at least 1".into());
        }
        if self.lead.0 == 0 || self.sessions == Some(0) {
            return Err("lead and sessions must be more than 0".into());
        }
        Ok(())
    }
}
