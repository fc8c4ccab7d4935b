//! `sluice inject` arguments.

use super::common::RunOpts;
use super::values::{count, positive_count, positive_duration};
use clap::Args;
use sluice_live::inject::Listen;
use sluice_wire::MacAddr;

#[derive(Args, Debug)]
pub struct InjectArgs {
    /// Where clients connect: unix:PATH (a socket only its owner, or root, may use) or tcp:ADDR:PORT on a loopback address (with --token-file, or --insecure-tcp).
    #[arg(long)]
    pub listen: Listen,
    /// With tcp: the secret clients send after HELLO's body: 64 hex digits in a file only its owner may read; made (mode 0600) when it does not exist.
    #[arg(long)]
    pub token_file: Option<std::path::PathBuf>,
    /// With tcp: serve without a secret, to every local user (they may send frames on --to and read what arrives on --return).
    #[arg(long, conflicts_with = "token_file")]
    pub insecure_tcp: bool,
    /// Hand frames arriving on this interface back to the clients that ask for them (HELLO flag), stamped with their arrival time.
    #[arg(long = "return")]
    pub return_iface: Option<String>,
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
    #[arg(long, value_parser = positive_duration, default_value_t = sluice_core::Nanos(sluice_live::inject::DEFAULT_LEAD_NS))]
    pub lead: sluice_core::Nanos,
    /// Descriptions one client may have unacknowledged before sluice stops reading it (its socket then pushes back).
    #[arg(long, value_parser = positive_count, default_value_t = 262_144)]
    pub window: u64,
    /// Write one CSV line per acknowledged description (session, seq, requested time, departure, status; times in the session's base): requested beside measured, as Caliper logs them.
    #[arg(long, value_name = "FILE")]
    pub log_requested: Option<String>,
    /// Source MAC of frames built from fields (default: the --to interface's, else 02:00:00:00:00:01); a client's HELLO may give its own.
    #[arg(long)]
    pub src_mac: Option<MacAddr>,
    /// Destination MAC of frames built from fields (default ff:ff:ff:ff:ff:ff); a client's HELLO may give its own.
    #[arg(long)]
    pub dst_mac: Option<MacAddr>,
    /// End the run once this many client sessions have ended (default: run until stopped).
    #[arg(long, value_parser = positive_count)]
    pub sessions: Option<u64>,
    #[command(flatten)]
    pub run: RunOpts,
}
