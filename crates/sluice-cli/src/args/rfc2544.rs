//! `sluice rfc2544` arguments.

use super::values::positive_duration;
use clap::Args;
use sluice_core::Nanos;
use sluice_sink::SinkSpec;
use sluice_wire::MacAddr;
use std::net::Ipv4Addr;

#[derive(Args, Debug)]
pub struct Rfc2544Args {
    /// Where the test frames leave: afpacket:IFACE or xdp:IFACE (the device under test's input).
    #[arg(long, short = 't')]
    pub to: SinkSpec,
    /// Where they come back (the device under test's output), counted by stream and sequence number.
    #[arg(long, value_name = "IFACE")]
    pub rx: String,
    /// Frame sizes in bytes with the FCS, as RFC 2544 §9 counts them (64 to 9018: §9's 64 to 1518, and jumbo frames above), or imix (7:4:1 of 64, 594 and 1518).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,128,256,512,1024,1280,1518"
    )]
    pub sizes: Vec<String>,
    /// Length of each trial (RFC 2544 asks 60 s for throughput).
    #[arg(long, value_parser = positive_duration, default_value = "10s")]
    pub trial: Nanos,
    /// Frame loss a trial may show and still pass, in percent of the frames sent (RFC 2544: 0).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// The search ends once its bounds are this close, in percent of the upper bound.
    #[arg(long, default_value_t = 0.5)]
    pub resolution: f64,
    /// Highest rate tried, in frames per second (default: the sender's top speed, measured by a first trial).
    #[arg(long)]
    pub max_pps: Option<f64>,
    /// Trials per size before the throughput search gives up (its result is then marked not converged).
    #[arg(long, default_value_t = 24)]
    pub max_trials: u32,
    /// The tests to run: throughput, latency (at the throughput found), loss (the frame loss rate table), b2b (back-to-back bursts).
    #[arg(long, value_delimiter = ',', default_value = "throughput,latency,loss")]
    pub tests: Vec<String>,
    /// b2b: the longest burst tried, in frames (default: the frames of one trial at the highest rate).
    #[arg(long)]
    pub b2b_max: Option<u64>,
    /// b2b: searches per size, their burst lengths averaged (RFC 2544 asks 50).
    #[arg(long, default_value_t = 3)]
    pub b2b_repeats: u32,
    /// Both directions at once: frames also leave by the receiving interface (at the same rate, addresses swapped) and are counted where they come back on the sending one.
    #[arg(long)]
    pub both: bool,
    /// Source MAC of the test frames.
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub src_mac: MacAddr,
    /// Destination MAC (the device under test's input port).
    #[arg(long, default_value = "02:00:00:00:00:02")]
    pub dst_mac: MacAddr,
    /// Source IPv4 address of the test frames.
    #[arg(long, default_value = "198.18.0.1")]
    pub src_ip: Ipv4Addr,
    /// Destination IPv4 address (RFC 2544 Appendix C: 198.18.0.0/15).
    #[arg(long, default_value = "198.19.0.1")]
    pub dst_ip: Ipv4Addr,
    /// After each trial, how long frames still on their way are waited for (RFC 2544 §23: 2 s).
    #[arg(long, value_parser = positive_duration, default_value = "2s")]
    pub wait: Nanos,
    /// Write the results as JSON to PATH (- for stdout).
    #[arg(long)]
    pub json: Option<String>,
}
