//! What a worker holds: the lease (its session, uploads, port map and
//! job), the service over it, and the worker's clock as the controller
//! sees it.

use super::config::{WorkerConfig, SESSION_KEY};
use crate::error::Result;
use crate::now_ns;
use crate::pb::{self};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::{Request, Status};

/// The lease's task's child process (`sluice job FILE`), while it runs.
pub(crate) struct Child {
    pub(crate) pid: u32,
    /// Clock corrections to the job's stdin (a task that asked for them).
    pub(crate) corrections: Option<tokio::sync::mpsc::Sender<i64>>,
}

/// The controller that registered last, while it holds the worker.
pub(crate) struct Lease {
    pub(crate) session: String,
    pub(crate) name: String,
    pub(crate) last: Instant,
}

pub(crate) struct State {
    /// The worker's private (0700) directory: one sub-directory per lease.
    pub(crate) root: tempfile::TempDir,
    /// The lease's upload directory.
    pub(crate) dir: Option<PathBuf>,
    /// Uploads of the lease: plain name → path.
    pub(crate) files: HashMap<String, PathBuf>,
    pub(crate) upload_bytes: u64,
    pub(crate) ports: Vec<pb::GlobalPort>,
    pub(crate) lease: Option<Lease>,
    pub(crate) job: Option<Child>,
    pub(crate) next: u64,
}

impl State {
    /// Whether a lease is held now: its job runs, or it called within
    /// `idle`.
    pub(crate) fn held(&self, idle: Duration) -> bool {
        self.lease
            .as_ref()
            .is_some_and(|l| self.job.is_some() || l.last.elapsed() < idle)
    }

    /// Ends the lease: its port map and every upload go.
    pub(crate) fn end_lease(&mut self) -> usize {
        let n = self.files.len();
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        self.files.clear();
        self.upload_bytes = 0;
        self.ports.clear();
        self.lease = None;
        n
    }

    pub(crate) fn name(&self) -> String {
        self.lease
            .as_ref()
            .map(|l| l.name.clone())
            .unwrap_or_default()
    }
}

pub(crate) struct Service {
    pub(crate) cfg: Arc<WorkerConfig>,
    pub(crate) state: Arc<Mutex<State>>,
    /// When it started (CLOCK_REALTIME): a test drift runs from here.
    pub(crate) born_ns: i64,
    /// The uploads being received, reserved chunk by chunk.
    pub(crate) in_flight: Arc<crate::reserve::InFlight>,
}

/// A broken stderr (its reader gone) loses the line, never the worker.
pub(crate) fn log(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "sluice worker: {msg}");
}

impl Service {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The state, for a call of the lease holder; others are refused.
    pub(crate) fn leased<T>(
        &self,
        req: &Request<T>,
    ) -> Result<std::sync::MutexGuard<'_, State>, Status> {
        let given = req
            .metadata()
            .get(SESSION_KEY)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let mut st = self.lock();
        match &mut st.lease {
            Some(l) if sluice_sys::secret::same(l.session.as_bytes(), given.as_bytes()) => {
                l.last = Instant::now();
                Ok(st)
            }
            _ => Err(Status::permission_denied(
                "no lease of this worker: register first (another controller may hold it)",
            )),
        }
    }
}

pub(crate) fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock leaves plain data: keep using it.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A lease's secret: 128 random bits, hex.
pub(crate) fn session_secret() -> Result<String, Status> {
    sluice_sys::secret::random::<16>()
        .map(|b| sluice_sys::secret::hex(&b))
        .map_err(|e| Status::internal(format!("/dev/urandom: {e}")))
}

impl Service {
    pub(crate) fn clock(&self) -> WorkerClock {
        WorkerClock {
            offset_ns: self.cfg.clock_offset_ns,
            drift_ppm: self.cfg.clock_drift_ppm,
            born_ns: self.born_ns,
        }
    }

    pub(crate) async fn release_lease<T>(&self, req: &Request<T>) -> Result<(), Status> {
        let mut st = self.leased(req)?;
        if st.job.is_some() {
            return Err(Status::failed_precondition(
                "the lease's job runs: Stop it; the lease ends with it",
            ));
        }
        let n = st.end_lease();
        drop(st);
        log(&format!("lease released; {n} uploads removed"));
        Ok(())
    }
}

/// This worker's clock as it answers the controller: the host's, moved by
/// the test offset and drift.
#[derive(Clone, Copy)]
pub(crate) struct WorkerClock {
    pub(crate) offset_ns: i64,
    pub(crate) drift_ppm: f64,
    pub(crate) born_ns: i64,
}

impl WorkerClock {
    /// The worker's clock at host time `real`.
    pub(crate) fn host(&self, real: i64) -> i64 {
        real + self.offset_ns + (self.drift_ppm * 1e-6 * (real - self.born_ns) as f64) as i64
    }

    pub(crate) fn now(&self) -> i64 {
        self.host(now_ns())
    }

    /// The host time at which the worker's clock reads `t`.
    pub(crate) fn real(&self, t: i64) -> i64 {
        let r = 1.0 + self.drift_ppm * 1e-6;
        self.born_ns + ((t - self.offset_ns - self.born_ns) as f64 / r) as i64
    }
}
