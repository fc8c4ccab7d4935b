//! Command-line arguments, as parsed (phase one: no side effects). One
//! file per command; option groups the sending commands share are in
//! [`common`], value parsers in [`values`]. Defaults come from the
//! libraries' configs (their `Default` impls), never written twice.

mod analyze;
mod common;
mod converse;
mod demo;
pub mod distributed;
pub mod docs;
mod doctor;
mod flows;
mod jobs;
mod prep;
mod profile;
#[cfg(test)]
mod recipes;
mod report;
mod rfc2544;
mod rx;
mod series;
pub mod values;

pub use analyze::AnalyzeArgs;
// A sending command's job: its arguments are `sluice_job::command`'s.
pub use converse::ConverseArgs;
pub use demo::DemoArgs;
pub use distributed::{ControlArgs, ControlCommand, ControlRunArgs, KeygenArgs, WorkerArgs};
pub use doctor::DoctorArgs;
pub use flows::{EditArgs, FlowsArgs, FlowsCommand, ImportArgs};
pub use jobs::{ChangeArgs, JobsArgs, JobsCommand, SubmitArgs, TopArgs};
pub use prep::{PrepArgs, PrepFormat};
pub use profile::{FitArgs, ProfileArgs, ProfileCommand, SpectrumArgs, SynthArgs};
pub use report::ReportArgs;
pub use rfc2544::Rfc2544Args;
pub use rx::RxArgs;
pub use series::{ConvertArgs, DumpArgs, SeriesArgs, SeriesCommand};
pub use sluice_job::command::{InjectArgs, PaceArgs, ReplayArgs, RunOpts};

use clap::{Parser, Subcommand};

/// The version and the commit it was built from (`unknown` outside git).
pub const VERSION: &str = sluice_run::VERSION;

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    version = VERSION,
    about = "A precise, fast software traffic generator"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Memory budget of every large allocation (preloads, flow tables, inject's queue), e.g. 2G; default: half of the least of MemAvailable, the RLIMIT_AS/RLIMIT_DATA room and the room every cgroup level (v1 or v2) leaves.
    #[arg(long, global = true, value_parser = values::count, value_name = "BYTES")]
    pub max_memory: Option<u64>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Replay a pcap/pcapng trace with its recorded timing (or scaled, fixed rate, top speed).
    ///
    /// With several TX threads each flow (symmetric 5-tuple hash) goes to
    /// the least-loaded thread when first seen and stays there, so
    /// per-flow order is kept.
    Replay(Box<ReplayArgs>),
    /// Analyze a capture: counts, rates, inter-arrival times; against a reference: loss, reordering, |D_M − D_R|.
    Analyze(Box<AnalyzeArgs>),
    /// Build a small trace, replay it (through a veth pair as root, else to a pcap file), analyze the result.
    Demo(DemoArgs),
    /// Split a trace into client-to-server and server-to-client packets once (tcpprep) and keep the result for replay --split cache:FILE.
    Prep(PrepArgs),
    /// Time-series archives: convert a CSV into an archive, dump an archive as CSV, play it.
    Series(SeriesArgs),
    /// Generate flows and meta-flows from a session, or import flow records into one.
    Flows(FlowsArgs),
    /// Stochastic traffic profiles: synthesize, decompose into frequency components, generate.
    Profile(ProfileArgs),
    /// Pace live traffic: frames any program sends through a TAP device leave on an interface at requested gaps (constant, a rate, or a profile's law).
    ///
    /// With --return, frames arriving on that interface for the TAP side are
    /// written back into it, so TCP stays closed-loop.
    Pace(Box<PaceArgs>),
    /// Inject packets described by other programs: clients stream descriptions (time, headers, length, payload prefix) over a socket; each frame is built, sent at its time and acknowledged with its actual departure.
    ///
    /// The protocol is in docs/FORMATS.md; python/sluice_inject.py is a
    /// client. With --return, frames arriving on an interface are handed
    /// back to the clients, so a simulated sender can run closed-loop.
    Inject(Box<InjectArgs>),
    /// Receive stamped frames (--rx-stamp) on an interface: per stream, frames received, lost, duplicated and reordered, one-way latency and jitter.
    ///
    /// Run it on the far side of the device under test, in another network
    /// namespace or on another host (with synchronised clocks for latency).
    Rx(RxArgs),
    /// Stateful traffic: client and server TCP/UDP conversations on sluice's own stack (handshakes, windows, retransmission), from templates or a capture's conversations, at a rate of connections per second.
    ///
    /// The client side opens connections from a pool of addresses and
    /// ports on one interface; the server side accepts them on another (or
    /// a real server or the device answers). Counters per program:
    /// attempted, established, completed, reset, timed out, retransmitted,
    /// times to connect, to first byte, to completion.
    Converse(Box<ConverseArgs>),
    /// RFC 2544 benchmarks of a device between two interfaces: throughput by binary search, latency at that rate, the frame loss rate table; loss counted by stream and sequence number.
    Rfc2544(Box<Rfc2544Args>),
    /// Serve as a worker: jobs of this host changed live (sluice jobs, sluice top) and tasks of distributed runs from a controller holding a certificate of the same CA.
    #[command(alias = "serve")]
    Worker(WorkerArgs),
    /// Drive a worker's jobs: submit, list, watch, change the rate live, pause, resume, stop.
    Jobs(JobsArgs),
    /// A console of a worker's jobs: rates, send-time error, receive loss and latency, as they run; keys pause, resume, step the rate and stop.
    Top(TopArgs),
    /// Drive workers: run a plan's job split over several hosts, started together on corrected clocks.
    Control(ControlArgs),
    /// Write a CA and the worker and controller certificates for mutual TLS.
    Keygen(KeygenArgs),
    /// One self-contained HTML page with charts from a run's --stats-json lines or a capture (with --reference: loss, reordering, gap error).
    Report(ReportArgs),
    /// Check this machine for what limits sluice's timing (capabilities, clock, CPUs, an interface, the platform floor) and say what to fix.
    Doctor(DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "bash: sluice completions bash > /etc/bash_completion.d/sluice")]
    Completions(docs::CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    #[command(after_help = "man <(sluice man), or: sluice man --dir /usr/local/share/man/man1")]
    Man(docs::ManArgs),
    /// tcpreplay's command line (4.5's options, --load-opts files too): send a trace to interfaces, or -w FILE.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Tcpreplay(CompatArgs),
    /// tcprewrite's command line: rewrite a trace's headers into a new file, byte for byte as tcprewrite writes it.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Tcprewrite(CompatArgs),
    /// tcpprep's command line: write a tcpprep cache, or print one (-P, -I, -S).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Tcpprep(CompatArgs),
    /// Run the job a worker wrote for one of its tasks (what `sluice worker` starts; not for users).
    #[command(hide = true)]
    Job(JobArgs),
}

/// `sluice tcpreplay|tcprewrite|tcpprep ARGS...`: the tool's own words.
#[derive(clap::Args, Debug)]
pub struct CompatArgs {
    /// The tool's options and operands, as its manual page defines them (-h lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "ARGS")]
    pub args: Vec<String>,
}

/// `sluice job FILE`.
#[derive(clap::Args, Debug)]
pub struct JobArgs {
    /// The job (JSON of a worker's job: the controller's job, and the worker's sink, start, share and outputs).
    pub file: std::path::PathBuf,
}
