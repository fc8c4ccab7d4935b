//! Where and how a worker serves: its listen address, its settings and
//! the limits every room of the worker shares.

use crate::error::Result;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where a worker serves: TCP (with TLS only) or a unix socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerListen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for WorkerListen {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err("unix: needs a path".into());
            }
            return Ok(WorkerListen::Unix(p.into()));
        }
        s.parse()
            .map(WorkerListen::Tcp)
            .map_err(|_| format!("{s:?}: ADDR:PORT (with --tls) or unix:PATH expected"))
    }
}

impl std::fmt::Display for WorkerListen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerListen::Tcp(a) => write!(f, "{a}"),
            WorkerListen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// How `sluice worker` runs.
pub struct WorkerConfig {
    pub listen: WorkerListen,
    /// Key directory (`sluice keygen`); None: a unix socket only.
    pub tls: Option<PathBuf>,
    /// Test only: this worker's clock reads this much ahead of the host's.
    pub clock_offset_ns: i64,
    /// Test only: and runs this many parts per million fast (from the
    /// worker's start), its jobs' schedules as fast.
    pub clock_drift_ppm: f64,
    /// The sluice binary jobs run with.
    pub exe: PathBuf,
    /// Bytes one lease's uploads may hold in all.
    pub max_upload: u64,
    /// The host's clock service to report at registration.
    pub clock_service: crate::clocksvc::ClockServiceSpec,
    /// Where the worker's private upload directory is made (default: the
    /// system's temporary directory).
    pub work_dir: Option<PathBuf>,
    /// A lease with no job and no call for this long ends.
    pub lease_idle: Duration,
    /// Runs local jobs in this process: the worker then serves `Jobs`
    /// too (None: the distributed service alone).
    pub local: Option<Arc<crate::inprocess::InProcess>>,
}

/// Time after the deadline's SIGTERM before the child is killed.
pub(crate) const KILL_AFTER: Duration = Duration::from_secs(2);
/// By default, a lease with no job and no call for this long ends (its
/// uploads go).
pub const LEASE_IDLE: Duration = Duration::from_secs(30);
/// The metadata key every call after Register carries its lease in.
pub const SESSION_KEY: &str = "sluice-session";
/// TLS handshakes in progress at once, in all and from one address.
pub(crate) const HANDSHAKES: usize = 64;
pub(crate) const HANDSHAKES_PER_PEER: usize = 8;
/// How long a connection has to finish its TLS handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
