//! The jobs of the sending commands whose packets are drawn or arrive as
//! they run: `sluice profile onoff`, `sluice pace`, `sluice inject`.

use super::common::RunOpts;
use crate::live::{InjectOpts, PaceOpts};
use crate::onoff::OnOffOpts;
use clap::{ArgGroup, Args};
use sluice_live::inject::Listen;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct OnOffArgs {
    #[command(flatten)]
    pub opts: OnOffOpts,
    #[command(flatten)]
    pub run: RunOpts,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("law").required(true).args(["gap", "pps", "mbps", "ipd"])))]
pub struct PaceArgs {
    /// TAP device to read from: created, or attached to when it exists (`ip tuntap add dev NAME mode tap`); brought up.
    #[arg(long)]
    pub tap: String,
    #[command(flatten)]
    pub opts: PaceOpts,
    /// Gaps drawn from a profile's `ipd` law and mean (its packet and size parts are ignored).
    #[arg(long)]
    pub ipd: Option<PathBuf>,
    /// Write each departure's requested gap (ns, one per line) to PATH, for `analyze --gaps`.
    #[arg(long)]
    pub log_requested: Option<String>,
    #[command(flatten)]
    pub run: RunOpts,
}

#[derive(Args, Debug)]
pub struct InjectArgs {
    /// Where clients connect: unix:PATH (a socket only its owner, or root, may use) or tcp:ADDR:PORT on a loopback address (with --token-file, or --insecure-tcp).
    #[arg(long)]
    pub listen: Listen,
    /// With tcp: the secret clients send after HELLO's body: 64 hex digits in a file only its owner may read; made (mode 0600) when it does not exist.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
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
