//! `sluice inject` arguments.

use super::common::RunOpts;
use clap::Args;
use sluice_job::live::InjectOpts;
use sluice_live::inject::Listen;

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
    /// Write one CSV line per acknowledged description (session, seq, requested time, departure, status; times in the session's base): requested beside measured, as Caliper logs them.
    #[arg(long, value_name = "FILE")]
    pub log_requested: Option<String>,
    #[command(flatten)]
    pub opts: InjectOpts,
    #[command(flatten)]
    pub run: RunOpts,
}
