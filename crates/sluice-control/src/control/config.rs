//! What a controller is given and keeps: its settings, the clock
//! checks and statistics it reports to, one connection per worker with
//! its lease key, and the timeouts of every stage.

use super::results::{Status, WorkerResult};
use crate::error::{input, Result};
use crate::pb::worker_client::WorkerClient;
use crate::plan::Plan;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// A worker's client: every call carries the lease Register gave.
pub(crate) type Client = WorkerClient<InterceptedService<Channel, SessionKey>>;

/// Adds the lease (`sluice-session`) to every call once Register set it.
#[derive(Clone, Default)]
pub struct SessionKey(Arc<std::sync::Mutex<Option<tonic::metadata::AsciiMetadataValue>>>);

impl SessionKey {
    pub fn set(&self, session: &str) -> Result<()> {
        let v = session
            .parse()
            .map_err(|_| input!("the worker's session is not printable ASCII"))?;
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        Ok(())
    }
}

impl tonic::service::Interceptor for SessionKey {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            req.metadata_mut().insert(crate::worker::SESSION_KEY, v);
        }
        Ok(req)
    }
}

/// What to do when a worker is lost mid-run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnLoss {
    /// Stop every other worker (within a second).
    #[default]
    Abort,
    /// Let the others finish.
    Continue,
}

sluice_core::named_values!(OnLoss {
    Abort => "abort",
    Continue => "continue",
});

/// Receives (worker name, global port, statistics line).
pub type StatsSink = Box<dyn FnMut(&str, u32, &Value) + Send>;
/// Receives (worker name, global port, a clock check during the run).
pub type ClockSink = Box<dyn FnMut(&str, u32, &ClockCheck) + Send>;

/// A worker's clock offset measured again while its job runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClockCheck {
    /// Seconds since t_tos.
    pub t: f64,
    /// Worker − controller now, ns.
    pub offset_ns: i64,
    /// Half the minimum round trip of this check, ns.
    pub uncertainty_ns: u64,
    /// How far the offset moved since the one the start used, ns.
    pub drift_ns: i64,
    /// The worker's job was moved by `drift_ns` (a correction) after it.
    #[serde(default)]
    pub corrected: bool,
}

pub struct ControlConfig {
    pub plan: Plan,
    /// The plan's job, typed (the CLI parses the plan's words into it
    /// before any worker is contacted); each task sends it with the plan's
    /// duration, and receive stamps where a worker receives.
    pub job: sluice_job::RemoteJob,
    /// Key directory; None: plain TCP (workers on loopback only).
    pub tls: Option<PathBuf>,
    /// How far ahead t_tos is set; None: from the measured RTTs.
    pub start_in: Option<Duration>,
    /// Refuse to start when a worker's offset is known no better than this.
    pub max_skew_ns: u64,
    pub on_loss: OnLoss,
    /// Apply the measured offsets (off only to show what they correct).
    pub correct: bool,
    /// Clock exchanges per worker.
    pub rounds: usize,
    /// Set by SIGINT/SIGTERM: stop every worker, still summarise.
    pub stop: Arc<AtomicBool>,
    /// Called with each worker's statistics line (`--stats-json`).
    pub on_stats: StatsSink,
    /// How often each worker's clock offset is measured again while the
    /// job runs (None: only before the start).
    pub clock_every: Option<Duration>,
    /// Called with each such measurement.
    pub on_clock: ClockSink,
    /// Called once a second with the live totals.
    pub on_status: Box<dyn FnMut(&Status) + Send>,
}

pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) result: WorkerResult,
}

/// Grace after t_tos + duration before a worker stops a job by itself.
pub(crate) const GRACE: Duration = Duration::from_secs(3);
/// How long a receiving worker counts after its own last frame left: the
/// others' frames still on their way (well inside GRACE).
pub(crate) const RX_WAIT: Duration = Duration::from_millis(500);
/// Clock exchanges of a check during the run (fewer than before the
/// start: it is a running worker's time).
pub(crate) const CHECK_ROUNDS: usize = 8;
/// Past a worker's deadline, how long its summary may take (the worker
/// kills its job 2 s after the deadline's SIGTERM) before it is lost.
pub(crate) const LOST_AFTER: Duration = Duration::from_secs(5);
/// After an interruption, how long the workers have to send summaries.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(3);
/// TCP connect, TLS handshake and Register, together.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Any one call before the run (port map, clock, release).
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const CHUNK: usize = 1 << 20;
