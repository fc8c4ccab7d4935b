//! `sluice jobs`: a client of a worker's local jobs.

use super::values::duration;
use clap::{ArgGroup, Args, Subcommand};
use sluice_core::Nanos;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct JobsArgs {
    /// The worker: unix:PATH (its 0600 socket) or HOST:PORT with --tls.
    #[arg(long, global = true, value_name = "ADDRESS")]
    pub worker: Option<String>,
    /// Key directory from sluice keygen (ca.pem, controller.pem, controller.key), for a worker on TCP.
    #[arg(long, global = true)]
    pub tls: Option<PathBuf>,
    #[command(subcommand)]
    pub command: JobsCommand,
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// Every job the worker knows: running, and the last ended ones.
    List {
        /// One JSON object per job, per line.
        #[arg(long)]
        json: bool,
    },
    /// Submit a job, written as its command line: `-- replay trace.pcap --pps 10k`; its input file is uploaded, and the job runs on the worker now.
    Submit(SubmitArgs),
    /// Print a job's statistics lines as they come, then its summary.
    Watch { id: u64 },
    /// Change a running job's rate (it takes effect at a planned instant, printed).
    Change(ChangeArgs),
    /// Stop a job.
    Stop { id: u64 },
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// Where it sends: a port the worker announced (null, afpacket:IFACE, xdp:IFACE).
    #[arg(long, default_value = "null")]
    pub to: String,
    /// An afpacket port of the worker to count the job's stamped frames on.
    #[arg(long, value_name = "PORT")]
    pub rx: Option<String>,
    /// A name to know the job by.
    #[arg(long, default_value = "")]
    pub name: String,
    /// Then watch it to its end.
    #[arg(long)]
    pub watch: bool,
    /// Ready but paused: nothing is sent until it is resumed (sluice jobs change ID with resume); its clock and duration run from now.
    #[arg(long)]
    pub paused: bool,
    /// The job: replay|flows|series|profile FILE [OPTIONS].
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "JOB"
    )]
    pub words: Vec<String>,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("what").required(true).args(["rate", "ramp", "pause", "resume"])))]
pub struct ChangeArgs {
    pub id: u64,
    /// The new rate: in the job's own unit (50k) or a multiple of its planned rate (x2).
    #[arg(long)]
    pub rate: Option<String>,
    /// A ramp from the rate now: TO/OVER (200k/5s) or points from now (0s=10k,2s=10k,2s=50k).
    #[arg(long)]
    pub ramp: Option<String>,
    #[arg(long)]
    pub pause: bool,
    #[arg(long)]
    pub resume: bool,
    /// At this time from the job's start rather than at once.
    #[arg(long, value_parser = duration)]
    pub at: Option<Nanos>,
}

#[derive(Args, Debug)]
pub struct TopArgs {
    /// The worker: unix:PATH (its 0600 socket) or HOST:PORT with --tls.
    #[arg(long, value_name = "ADDRESS")]
    pub worker: String,
    /// Key directory from sluice keygen (ca.pem, controller.pem, controller.key), for a worker on TCP.
    #[arg(long)]
    pub tls: Option<PathBuf>,
    /// How often the screen is refreshed.
    #[arg(long, value_parser = duration, default_value = "500ms")]
    pub interval: Nanos,
}
