//! `sluice prep` arguments.

use clap::{Args, ValueEnum};
use sluice_source::SplitMode;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct PrepArgs {
    /// Trace to split (pcap or pcapng, optionally gzip-compressed).
    pub trace: PathBuf,
    /// How to split, by tcpprep's rules: cidr:NET[,NET] (sources in NET are client to server), regex:RE, mac:MAC[,MAC], port, auto:bridge|router|client|server|first; or auto (per flow, its opener is the client).
    #[arg(long, value_name = "MODE")]
    pub split: SplitMode,
    #[command(flatten)]
    pub split_opts: sluice_job::command::SplitOpts,
    #[command(flatten)]
    pub select: sluice_job::command::PacketSelect,
    /// The cache to write (replay --split cache:FILE, or tcpprep:FILE with --format tcpprep).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// The cache's format: sluice (tied to the trace's size) or tcpprep (version 04, byte for byte what tcpprep writes without its command-line comment; tcpreplay reads it).
    #[arg(long, value_enum, default_value = "sluice")]
    pub format: PrepFormat,
    /// A comment stored in a tcpprep cache, as tcpprep stores its own comment option's.
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrepFormat {
    Sluice,
    Tcpprep,
}
