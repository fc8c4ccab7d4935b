//! `sluice demo` arguments.

use super::values::{positive_count, rate};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where the demo writes its trace and capture (kept after the run).
    #[arg(long, default_value = "sluice-demo")]
    pub dir: PathBuf,
    /// Packets per second of the demo trace.
    #[arg(long, value_parser = rate, default_value = "20k")]
    pub pps: f64,
    /// Packets in the demo trace.
    #[arg(long, value_parser = positive_count, default_value = "20000")]
    pub packets: u64,
    /// Never use a veth pair, even as root.
    #[arg(long)]
    pub no_veth: bool,
}
