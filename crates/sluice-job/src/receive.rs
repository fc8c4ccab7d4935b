//! How `sluice rx` counts and `sluice rfc2544` benchmarks: the interfaces
//! and the output files are the command line's own.

use crate::text;
use crate::values::{positive_count, positive_duration};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_analyze::streams::ClockCorrection;
use sluice_core::Nanos;
use sluice_sys::xdp::rx::RxPath;
use sluice_wire::MacAddr;
use std::net::Ipv4Addr;

/// `sluice rx`'s own options.
#[derive(Args, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RxOpts {
    /// Stop after this long.
    #[arg(long, value_parser = positive_duration)]
    #[serde(with = "crate::fields::opt_positive_duration")]
    pub duration: Option<Nanos>,
    /// Stop once this many stamped frames arrived.
    #[arg(long, value_parser = positive_count)]
    #[serde(with = "crate::fields::opt_positive_count")]
    pub count: Option<u64>,
    /// Stop once no stamped frame arrived for this long, after the first.
    #[arg(long, value_parser = positive_duration)]
    #[serde(with = "crate::fields::opt_positive_duration")]
    pub idle: Option<Nanos>,
    /// Stamps of streams FIRST to LAST come from a clock OFFSET ahead of this host's (negative: behind), e.g. 1024-1279=-2.5ms; their one-way latency is corrected by it. Repeatable.
    #[arg(long, value_name = "FIRST[-LAST]=OFFSET", allow_hyphen_values = true)]
    #[serde(with = "text::vec")]
    pub rx_clock: Vec<ClockCorrection>,
    /// How frames are taken: auto (AF_XDP where it binds in zero-copy mode, else the TPACKET ring), xdp (any mode), or ring (kernel receive times, and the kernel's stack keeps every frame).
    #[arg(long, value_name = "auto|xdp|ring", default_value_t = RxPath::Auto)]
    pub rx_path: RxPath,
}

fn sizes() -> Vec<String> {
    ["64", "128", "256", "512", "1024", "1280", "1518"]
        .map(String::from)
        .to_vec()
}
fn tests() -> Vec<String> {
    ["throughput", "latency", "loss"].map(String::from).to_vec()
}

/// `sluice rfc2544`'s own options.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rfc2544Opts {
    /// Frame sizes in bytes with the FCS, as RFC 2544 §9 counts them (64 to 9018: §9's 64 to 1518, and jumbo frames above), or imix (7:4:1 of 64, 594 and 1518).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,128,256,512,1024,1280,1518"
    )]
    pub sizes: Vec<String>,
    /// Length of each trial (RFC 2544 asks 60 s for throughput).
    #[arg(long, value_parser = positive_duration, default_value = "10s")]
    #[serde(with = "crate::fields::positive_duration")]
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
    #[serde(with = "text")]
    pub src_mac: MacAddr,
    /// Destination MAC (the device under test's input port).
    #[arg(long, default_value = "02:00:00:00:00:02")]
    #[serde(with = "text")]
    pub dst_mac: MacAddr,
    /// Source IPv4 address of the test frames.
    #[arg(long, default_value = "198.18.0.1")]
    pub src_ip: Ipv4Addr,
    /// Destination IPv4 address (RFC 2544 Appendix C: 198.18.0.0/15).
    #[arg(long, default_value = "198.19.0.1")]
    pub dst_ip: Ipv4Addr,
    /// After each trial, how long frames still on their way are waited for (RFC 2544 §23: 2 s).
    #[arg(long, value_parser = positive_duration, default_value = "2s")]
    #[serde(with = "crate::fields::positive_duration")]
    pub wait: Nanos,
}

impl Default for Rfc2544Opts {
    fn default() -> Self {
        Rfc2544Opts {
            sizes: sizes(),
            trial: Nanos::from_secs(10),
            loss: 0.0,
            resolution: 0.5,
            max_pps: None,
            max_trials: 24,
            tests: tests(),
            b2b_max: None,
            b2b_repeats: 3,
            both: false,
            src_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            dst_mac: MacAddr([2, 0, 0, 0, 0, 2]),
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip: Ipv4Addr::new(198, 19, 0, 1),
            wait: Nanos::from_secs(2),
        }
    }
}
