//! `sluice doctor` arguments.

use super::values::positive_duration;
use clap::Args;
use sluice_core::Nanos;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Also check this interface: state, carrier, MTU, speed, and what it offers the fast path (AF_XDP modes, queues, tx_maxrate, launch time, hardware timestamps, checksum offload).
    #[arg(long)]
    pub iface: Option<String>,
    /// How long to measure the platform floor (stalls of the CPU clock).
    #[arg(long, value_parser = positive_duration, default_value = "1s")]
    pub floor: Nanos,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
