//! `sluice keygen`, `sluice worker`, `sluice control run`.

use super::values::{duration, named, signed_duration};
use clap::{Args, Subcommand};
use sluice_control::control::OnLoss;
use sluice_core::Nanos;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Directory to write ca.pem, ca.key, worker.pem, worker.key, controller.pem, controller.key into (never overwritten).
    pub dir: PathBuf,
    /// More names or IP addresses for the worker certificate (it always carries sluice-worker, which the controller checks).
    #[arg(long)]
    pub san: Vec<String>,
}

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// Where to serve the control plane: unix:PATH (a 0600 socket; only this user and root may connect) or ADDR:PORT with --tls
    #[arg(long)]
    pub listen: sluice_control::worker::WorkerListen,
    /// Key directory from sluice keygen (ca.pem, worker.pem, worker.key): TCP with mutual TLS.
    #[arg(long)]
    pub tls: Option<PathBuf>,
    /// Bytes one controller's uploads (the job file and the files it reads) may hold in all.
    #[arg(long, value_parser = super::values::count, default_value = "4G")]
    pub max_upload: u64,
    /// The host's clock service to report to controllers: auto (chrony, then linuxptp, at their default sockets), none, chrony[:ADDRESS] (chronyc -h) or ptp[:UDS_PATH] (ptp4l's uds_address).
    #[arg(long, value_name = "SERVICE", default_value = "auto")]
    pub clock_service: sluice_control::clocksvc::ClockServiceSpec,
    /// Test only: this worker's clock reads this much ahead (negative: behind) of the host's, so clock correction can be tested on one host.
    #[arg(long, value_parser = signed_duration, allow_hyphen_values = true, hide = true)]
    pub clock_offset: Option<i64>,
    /// Test only: this worker's clock runs this many parts per million fast (negative: slow) from its start, and its jobs' schedules as fast, so drift correction can be tested on one host.
    #[arg(long, allow_hyphen_values = true, hide = true, value_parser = drift_ppm)]
    pub clock_drift_ppm: Option<f64>,
    /// Directory the worker keeps its uploads in (a private sub-directory is made there; default: the system's temporary directory).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ControlArgs {
    #[command(subcommand)]
    pub command: ControlCommand,
}

#[derive(Subcommand, Debug)]
pub enum ControlCommand {
    /// Run a plan: its job split over its workers, started on all of them at one instant, gathered into one status and one summary.
    Run(Box<ControlRunArgs>),
}

#[derive(Args, Debug)]
pub struct ControlRunArgs {
    /// The plan (YAML; format in docs/FORMATS.md).
    pub plan: PathBuf,
    /// Key directory from sluice keygen (ca.pem, controller.pem, controller.key); without it every worker address must be unix:PATH.
    #[arg(long)]
    pub tls: Option<PathBuf>,
    /// Start this long after the plan is ready (default: 1.5 s plus 20 round trips to the farthest worker).
    #[arg(long, value_parser = duration)]
    pub start_in: Option<Nanos>,
    /// Refuse to start when a worker's clock offset is known no better than this.
    #[arg(long, value_parser = duration, default_value = "100us")]
    pub max_skew: Nanos,
    /// When a worker fails or is lost mid-run: abort stops the others, continue lets them finish.
    #[arg(long, value_parser = named::<OnLoss>(OnLoss::NAMES), default_value_t = OnLoss::default())]
    pub on_worker_loss: OnLoss,
    /// Clock exchanges per worker (the one with the smallest delay gives the offset).
    #[arg(long, default_value_t = 32)]
    pub clock_rounds: usize,
    /// Measure every worker's clock offset again this often while the job runs, reporting its drift and correcting it: the job's due times move by the drift (0: only before the start).
    #[arg(long, value_parser = duration, default_value = "10s")]
    pub clock_every: Nanos,
    /// Start every worker at t_tos on its own clock, uncorrected, and correct no drift during the run (shows what correction does).
    #[arg(long, hide = true)]
    pub no_clock_correction: bool,
    /// Write every worker's per-second statistics as JSON lines to PATH (- for stdout).
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the summary (per worker and total) as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// No live status line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// A test drift: finite, under 100 000 ppm either way.
fn drift_ppm(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v.abs() < 1e5 => Ok(v),
        _ => Err(format!("'{s}': parts per million, under 100000 either way")),
    }
}
