//! `sluice profile onoff` arguments.

use super::common::RunOpts;
use clap::Args;
use sluice_profile::GapLaw;
use sluice_wire::MacAddr;
use std::net::IpAddr;

/// A gap law on one line (`DIST:MEAN[,std=DURATION|,shape=K]`).
fn law(s: &str) -> Result<GapLaw, String> {
    GapLaw::parse(s)
}

#[derive(Args, Debug)]
pub struct OnOffArgs {
    /// Lengths of ON periods, a law DIST:MEAN[,std=DURATION|,shape=K] (constant, poisson, uniform, normal, lognormal, pareto, weibull, gamma), e.g. pareto:100ms,shape=1.5.
    #[arg(long, value_parser = law)]
    pub on: GapLaw,
    /// Lengths of OFF periods, a law as for --on.
    #[arg(long, value_parser = law)]
    pub off: GapLaw,
    /// Gaps between a flow's frames while it is ON, a law as for --on, e.g. constant:100us.
    #[arg(long, value_parser = law)]
    pub gap: GapLaw,
    /// Independent ON/OFF flows, superposed (UDP source ports --sport, --sport + 1, …).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub flows: u32,
    /// Frame length in bytes without FCS, headers included (42 to 9000 for IPv4, 62 for IPv6).
    #[arg(long, default_value_t = 512)]
    pub size: u16,
    /// Source IP address of every frame (IPv4 or IPv6).
    #[arg(long, default_value = "10.0.0.1")]
    pub src: IpAddr,
    /// Destination IP address of every frame.
    #[arg(long, default_value = "10.0.0.2")]
    pub dst: IpAddr,
    /// UDP source port of the first flow.
    #[arg(long, default_value_t = 1024)]
    pub sport: u16,
    /// UDP destination port.
    #[arg(long, default_value_t = 9)]
    pub dport: u16,
    /// Source MAC of every frame.
    #[arg(long, default_value_t = MacAddr::LOCAL_SRC)]
    pub src_mac: MacAddr,
    /// Destination MAC of every frame.
    #[arg(long, default_value_t = MacAddr::LOCAL_DST)]
    pub dst_mac: MacAddr,
    /// Seed of every draw: the same seed sends the same frames at the same times.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub run: RunOpts,
}
