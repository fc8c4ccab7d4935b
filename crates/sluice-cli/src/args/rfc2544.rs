//! `sluice rfc2544` arguments.

use clap::Args;
use sluice_job::receive::Rfc2544Opts;
use sluice_sink::SinkSpec;

#[derive(Args, Debug)]
pub struct Rfc2544Args {
    /// Where the test frames leave: afpacket:IFACE or xdp:IFACE (the device under test's input).
    #[arg(long, short = 't')]
    pub to: SinkSpec,
    /// Where they come back (the device under test's output), counted by stream and sequence number.
    #[arg(long, value_name = "IFACE")]
    pub rx: String,
    #[command(flatten)]
    pub opts: Rfc2544Opts,
    /// Write the results as JSON to PATH (- for stdout).
    #[arg(long)]
    pub json: Option<String>,
}
