//! `sluice worker`: serves the control plane and runs each task's typed
//! job (`sluice_job::RemoteJob`) in a `sluice job` child process (the same
//! binary, so a distributed job is exactly the job one host would run,
//! and a job that fails or is killed never takes the worker with it),
//! started at the agreed instant and given its part of the job. The
//! child's statistics lines are streamed back as they come; its summary
//! ends the stream. A task carries a deadline: the worker stops the child
//! at it whether or not a controller is still there.
//!
//! A worker acts only on what it was given, and the job's types decide
//! what that may be: sinks it announced itself, options that name no file
//! and no device, files uploaded to it by their plain names (never a path
//! of its own). Registering takes a lease: the port map,
//! uploads, job and `Stop` belong to the controller that registered, and
//! others are refused while it holds them. Without TLS it serves a 0600
//! unix socket whose peers' uids are checked, never TCP.

use crate::error::{input, Context, Result};
use crate::failure::{JobFailure, FAILURE_ENV};
use crate::now_ns;
use crate::partial::Partial;
use crate::pb::worker_server::{Worker, WorkerServer};
use crate::pb::{self, update};
use crate::shown::shown;
use crate::worker_checks::{check_task, without_dir};
use sluice_job::profile::ShareBy;
use sluice_job::remote::Receive;
use sluice_job::WorkerJob;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

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
    pub local: Option<Arc<dyn crate::local::LocalRunner>>,
}

/// Time after the deadline's SIGTERM before the child is killed.
const KILL_AFTER: Duration = Duration::from_secs(2);
/// By default, a lease with no job and no call for this long ends (its
/// uploads go).
pub const LEASE_IDLE: Duration = Duration::from_secs(30);
/// The metadata key every call after Register carries its lease in.
pub const SESSION_KEY: &str = "sluice-session";
/// TLS handshakes in progress at once, in all and from one address.
const HANDSHAKES: usize = 64;
const HANDSHAKES_PER_PEER: usize = 8;
/// How long a connection has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

struct Job {
    pid: u32,
    /// Clock corrections to the job's stdin (a task that asked for them).
    corrections: Option<tokio::sync::mpsc::Sender<i64>>,
}

/// The controller that registered last, while it holds the worker.
struct Lease {
    session: String,
    name: String,
    last: Instant,
}

struct State {
    /// The worker's private (0700) directory: one sub-directory per lease.
    root: tempfile::TempDir,
    /// The lease's upload directory.
    dir: Option<PathBuf>,
    /// Uploads of the lease: plain name → path.
    files: HashMap<String, PathBuf>,
    upload_bytes: u64,
    ports: Vec<pb::GlobalPort>,
    lease: Option<Lease>,
    job: Option<Job>,
    next: u64,
}

impl State {
    /// Whether a lease is held now: its job runs, or it called within
    /// `idle`.
    fn held(&self, idle: Duration) -> bool {
        self.lease
            .as_ref()
            .is_some_and(|l| self.job.is_some() || l.last.elapsed() < idle)
    }

    /// Ends the lease: its port map and every upload go.
    fn end_lease(&mut self) -> usize {
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

    fn name(&self) -> String {
        self.lease
            .as_ref()
            .map(|l| l.name.clone())
            .unwrap_or_default()
    }
}

struct Service {
    cfg: Arc<WorkerConfig>,
    state: Arc<Mutex<State>>,
    /// When it started (CLOCK_REALTIME): a test drift runs from here.
    born_ns: i64,
    /// The uploads being received, reserved chunk by chunk.
    in_flight: Arc<crate::reserve::InFlight>,
}

/// A broken stderr (its reader gone) loses the line, never the worker.
fn log(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "sluice worker: {msg}");
}

impl Service {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The state, for a call of the lease holder; others are refused.
    fn leased<T>(&self, req: &Request<T>) -> Result<std::sync::MutexGuard<'_, State>, Status> {
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

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock leaves plain data: keep using it.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A lease's secret: 128 random bits, hex.
fn session_secret() -> Result<String, Status> {
    sluice_sys::secret::random::<16>()
        .map(|b| sluice_sys::secret::hex(&b))
        .map_err(|e| Status::internal(format!("/dev/urandom: {e}")))
}

/// Interfaces this host can send on: every one in /sys/class/net.
pub(crate) fn ports() -> Vec<pb::Port> {
    let mut out = vec![pb::Port {
        sink: "null".into(),
        mtu: 0,
        mac: String::new(),
        up: true,
    }];
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return out;
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for n in names {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/sys/class/net/{n}/{f}"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let up =
            read("operstate") == "up" || read("flags").ends_with('1') || read("carrier") == "1";
        // Each interface by AF_PACKET and by AF_XDP (whether its driver
        // takes an XDP socket is known only when the job opens it).
        for kind in ["afpacket", "xdp"] {
            out.push(pb::Port {
                sink: format!("{kind}:{n}"),
                mtu: read("mtu").parse().unwrap_or(0),
                mac: read("address"),
                up,
            });
        }
    }
    out
}

type UpdateStream = Pin<Box<dyn Stream<Item = Result<pb::Update, Status>> + Send>>;

#[tonic::async_trait]
impl Worker for Service {
    async fn register(
        &self,
        req: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterReply>, Status> {
        let name = shown(&req.into_inner().name);
        let session = session_secret()?;
        {
            let mut st = self.lock();
            if st.held(self.cfg.lease_idle) {
                return Err(Status::unavailable(format!(
                    "this worker is held by controller '{}' (its job runs, or it called \
                     within the last {} s)",
                    st.name(),
                    self.cfg.lease_idle.as_secs()
                )));
            }
            let removed = st.end_lease();
            if removed > 0 {
                log(&format!("an expired lease's {removed} uploads removed"));
            }
            st.next += 1;
            let dir = st.root.path().join(format!("lease-{}", st.next));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| Status::internal(format!("the lease directory: {e}")))?;
            st.dir = Some(dir);
            st.lease = Some(Lease {
                session: session.clone(),
                name: name.clone(),
                last: Instant::now(),
            });
        }
        log(&format!("registered by a controller as '{name}'"));
        let spec = self.cfg.clock_service.clone();
        let service = tokio::task::spawn_blocking(move || crate::clocksvc::read(&spec))
            .await
            .ok()
            .flatten();
        if let Some(s) = &service {
            log(&format!(
                "{}: offset {} ns, bound {} ns",
                s.text, s.offset_ns, s.bound_ns
            ));
        }
        Ok(Response::new(pb::RegisterReply {
            version: env!("CARGO_PKG_VERSION").into(),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap_or_default()
                .trim()
                .to_string(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            ports: ports(),
            clock_service: service.as_ref().map(|s| s.text.clone()).unwrap_or_default(),
            clock_service_bound_ns: service.as_ref().map_or(0, |s| s.bound_ns),
            clock_service_offset_ns: service.as_ref().map_or(0, |s| s.offset_ns),
            session,
        }))
    }

    type ClockStream = Pin<Box<dyn Stream<Item = Result<pb::ClockReply, Status>> + Send>>;

    async fn clock(
        &self,
        req: Request<Streaming<pb::ClockRequest>>,
    ) -> Result<Response<Self::ClockStream>, Status> {
        drop(self.leased(&req)?);
        let clock = self.clock();
        let replies = req.into_inner().map(move |r| {
            r.map(|r| {
                let t2 = clock.now();
                pb::ClockReply {
                    t1_ns: r.t1_ns,
                    t2_ns: t2,
                    t3_ns: clock.now(),
                }
            })
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn publish_ports(&self, req: Request<pb::PortMap>) -> Result<Response<pb::Ack>, Status> {
        let mut st = self.leased(&req)?;
        let map = req.into_inner().ports;
        // This worker's entries name sinks it announced, nothing else: a
        // controller never makes a worker write a file (`pcap:PATH`).
        let own = ports();
        let me = st.name();
        for p in map.iter().filter(|p| p.worker == me) {
            if !own.iter().any(|o| o.sink == p.sink) {
                return Err(Status::invalid_argument(format!(
                    "port {}: '{}' is not a sink this worker announced (null, afpacket: or xdp: \
                     on one of its interfaces)",
                    p.id,
                    p.sink.chars().take(80).collect::<String>().escape_default()
                )));
            }
        }
        st.ports = map;
        Ok(Response::new(pb::Ack {}))
    }

    async fn upload(
        &self,
        req: Request<Streaming<pb::FileChunk>>,
    ) -> Result<Response<pb::UploadReply>, Status> {
        let (dir, session) = {
            let st = self.leased(&req)?;
            let dir = st.dir.clone().expect("a lease has a directory");
            let session = st.lease.as_ref().map(|l| l.session.clone());
            (dir, session)
        };
        let mut reserved = self.in_flight.reserve();
        let over_cap = |name: &str| {
            Status::resource_exhausted(format!(
                "upload '{}': this lease's uploads are over --max-upload {} bytes",
                shown(name),
                self.cfg.max_upload
            ))
        };
        let mut chunks = req.into_inner();
        // Removed unless the upload completes: a failed or abandoned
        // upload (its stream dropped) leaves nothing behind.
        let mut file: Option<(tokio::fs::File, Partial)> = None;
        let mut name = String::new();
        let mut total = 0u64;
        while let Some(c) = chunks.next().await {
            let c = c?;
            if file.is_none() {
                crate::partial::plain_name(&c.name)?;
                if self.lock().files.contains_key(&c.name) {
                    return Err(Status::already_exists(format!(
                        "upload '{}': this lease has a file of that name",
                        shown(&c.name)
                    )));
                }
                let p = dir.join(&c.name);
                let f = tokio::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&p)
                    .await
                    .map_err(|e| Status::internal(format!("upload '{}': {e}", shown(&c.name))))?;
                name = c.name.clone();
                file = Some((f, Partial::file(p)));
            }
            total += c.data.len() as u64;
            let kept = self.lock().upload_bytes;
            if !reserved.grow(c.data.len() as u64, kept, self.cfg.max_upload) {
                return Err(over_cap(&name));
            }
            let (f, _) = file.as_mut().expect("opened above");
            tokio::io::AsyncWriteExt::write_all(f, &c.data)
                .await
                .map_err(|e| Status::internal(format!("upload '{}': {e}", shown(&name))))?;
        }
        let Some((f, mut partial)) = file else {
            return Err(Status::invalid_argument("an empty upload"));
        };
        f.sync_all()
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let mut st = self.lock();
        // The lease may have ended (expired) meanwhile: its directory went.
        if st.lease.as_ref().map(|l| &l.session) != session.as_ref() {
            return Err(Status::aborted("the lease ended during the upload"));
        }
        if st.upload_bytes + total > self.cfg.max_upload {
            return Err(over_cap(&name));
        }
        st.upload_bytes += total;
        st.files.insert(name.clone(), partial.keep());
        Ok(Response::new(pb::UploadReply {
            id: name,
            bytes: total,
        }))
    }

    type RunStream = UpdateStream;

    async fn run(&self, req: Request<pb::Task>) -> Result<Response<UpdateStream>, Status> {
        let job = self.admit(req)?;
        log(&format!(
            "'{}': starting {} at {}",
            job.name, job.what, job.start
        ));
        let mut cmd = job_command(&self.cfg.exe, &job.args, &job.dir);
        if job.corrections {
            cmd.stdin(std::process::Stdio::piped());
        }
        let mut child = {
            let mut st = self.lock();
            if st.job.is_some() {
                return Err(Status::failed_precondition("a task is already running"));
            }
            let mut child = cmd
                .spawn()
                .map_err(|e| Status::internal(format!("starting the job: {e}")))?;
            let corrections = child.stdin.take().map(|stdin| {
                let (tx, rx) = tokio::sync::mpsc::channel(8);
                tokio::spawn(pass_corrections(stdin, rx));
                tx
            });
            st.job = Some(Job {
                pid: child.id().unwrap_or(0),
                corrections,
            });
            child
        };
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let accepted = pb::Accepted {
            start_ns: self.clock().host(job.start),
        };
        let _ = tx
            .send(Ok(pb::Update {
                kind: Some(update::Kind::Accepted(accepted)),
            }))
            .await;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let state = self.state.clone();
        tokio::spawn(async move {
            let ended = watch(&job, child, stdout, stderr, &tx).await;
            let kind = outcome(&job.summary, ended);
            // A lease serves one task: a long-lived worker keeps no old
            // inputs, and no later task can read this task's summary. It
            // ends before the last update, so the controller that gets it
            // may register again at once.
            {
                let mut st = lock(&state);
                st.job = None;
                st.end_lease();
            }
            log(&format!(
                "'{}': job ended; its lease and uploads are gone",
                job.name
            ));
            let _ = tx.send(Ok(pb::Update { kind: Some(kind) })).await;
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn correct(&self, req: Request<pb::Correction>) -> Result<Response<pb::Ack>, Status> {
        let tx = {
            let st = self.leased(&req)?;
            st.job
                .as_ref()
                .and_then(|j| j.corrections.clone())
                .ok_or_else(|| {
                    Status::failed_precondition("no job that takes clock corrections runs")
                })?
        };
        let shift = req.into_inner().shift_ns;
        // A correction over a second is no drift a run could have.
        if shift.unsigned_abs() > 1_000_000_000 {
            return Err(Status::invalid_argument(format!(
                "shift_ns: {shift}: at most 1 s either way"
            )));
        }
        // The newest correction is the one that counts: a full queue
        // drops this one rather than wait (the next one supersedes it).
        let _ = tx.try_send(shift);
        Ok(Response::new(pb::Ack {}))
    }

    async fn stop(&self, req: Request<pb::StopRequest>) -> Result<Response<pb::Ack>, Status> {
        if let Some(j) = &self.leased(&req)?.job {
            log("stop asked: stopping the job");
            let _ = sluice_sys::process::terminate(j.pid);
        }
        Ok(Response::new(pb::Ack {}))
    }

    async fn release(&self, req: Request<pb::ReleaseRequest>) -> Result<Response<pb::Ack>, Status> {
        self.release_lease(&req).await?;
        Ok(Response::new(pb::Ack {}))
    }
}

impl Service {
    fn clock(&self) -> WorkerClock {
        WorkerClock {
            offset_ns: self.cfg.clock_offset_ns,
            drift_ppm: self.cfg.clock_drift_ppm,
            born_ns: self.born_ns,
        }
    }

    async fn release_lease<T>(&self, req: &Request<T>) -> Result<(), Status> {
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

/// Log lines about refused connections: at most a few per period, then
/// a count, so a flood cannot fill the log.
struct Refusals {
    window: Instant,
    lines: u32,
    hidden: u64,
}

impl Refusals {
    const LINES: u32 = 10;
    const PERIOD: Duration = Duration::from_secs(10);

    /// A new period, nothing logged in it yet.
    fn new() -> Refusals {
        Refusals {
            window: Instant::now(),
            lines: 0,
            hidden: 0,
        }
    }

    fn log(state: &Mutex<Refusals>, line: impl FnOnce() -> String) {
        let mut r = state.lock().unwrap_or_else(|e| e.into_inner());
        if r.window.elapsed() >= Self::PERIOD {
            if r.hidden > 0 {
                log(&format!(
                    "{} more connections refused in the last {} s",
                    r.hidden,
                    Self::PERIOD.as_secs()
                ));
            }
            *r = Refusals::new();
        }
        if r.lines < Self::LINES {
            r.lines += 1;
            log(&line());
        } else {
            r.hidden += 1;
        }
    }
}

/// Waits before accepting again after an accept error: at the fd limit
/// (EMFILE, ENFILE) the listener stays readable, and retrying at once
/// would spin.
async fn accept_failed(e: &std::io::Error, refusals: &Mutex<Refusals>) {
    Refusals::log(refusals, || {
        format!("accepting a connection: {e} (retrying in 100 ms)")
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Removes the worker's unix socket when serving ends.
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One connection's share of the handshake caps, given back on drop.
struct Slot {
    _all: tokio::sync::OwnedSemaphorePermit,
    peers: Arc<Mutex<HashMap<std::net::IpAddr, usize>>>,
    ip: std::net::IpAddr,
}

impl Slot {
    /// A slot for a handshake from `ip`, if both caps allow one.
    fn take(
        all: &Arc<tokio::sync::Semaphore>,
        peers: &Arc<Mutex<HashMap<std::net::IpAddr, usize>>>,
        ip: std::net::IpAddr,
    ) -> Option<Slot> {
        let permit = all.clone().try_acquire_owned().ok()?;
        let mut p = peers.lock().unwrap_or_else(|e| e.into_inner());
        let n = p.entry(ip).or_insert(0);
        if *n >= HANDSHAKES_PER_PEER {
            return None;
        }
        *n += 1;
        Some(Slot {
            _all: permit,
            peers: peers.clone(),
            ip,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut p = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = p.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                p.remove(&self.ip);
            }
        }
    }
}

/// Serves until the process is stopped.
pub async fn serve(cfg: WorkerConfig) -> Result<()> {
    let tls = match (&cfg.tls, &cfg.listen) {
        (Some(dir), WorkerListen::Tcp(_)) => Some(crate::tls::server_config(dir)?),
        (None, WorkerListen::Unix(_)) => None,
        (Some(_), WorkerListen::Unix(p)) => {
            return Err(input!(
                "--listen unix:{}: a unix socket checks its peers' uid; --tls is for TCP",
                p.display()
            ))
        }
        (None, WorkerListen::Tcp(a)) => {
            return Err(input!(
                "--listen {a}: TCP needs --tls (any local user, and on other addresses \
                 anyone, could make the worker send); without keys serve unix:PATH"
            ))
        }
    };
    let root = tempfile::Builder::new()
        .prefix("sluice-worker-")
        .tempdir_in(cfg.work_dir.clone().unwrap_or_else(std::env::temp_dir))
        .context("a working directory")?;
    // Uploads are the controller's data: this user's only.
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("{}: making it private", root.path().display()))?;
    let jobs = cfg
        .local
        .clone()
        .map(|runner| {
            crate::jobs::JobsService::new(
                runner,
                root.path().join("jobs"),
                cfg.max_upload,
                cfg.lease_idle,
            )
            .context("the jobs' directory")
        })
        .transpose()?;
    let state = Arc::new(Mutex::new(State {
        root,
        dir: None,
        files: HashMap::new(),
        upload_bytes: 0,
        ports: Vec::new(),
        lease: None,
        job: None,
        next: 0,
    }));
    sweep_idle_leases(state.clone(), cfg.lease_idle);
    let cfg = Arc::new(cfg);
    let svc = Service {
        cfg: cfg.clone(),
        state,
        born_ns: now_ns(),
        in_flight: Default::default(),
    };
    let refusals = Arc::new(Mutex::new(Refusals::new()));
    let server = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(Some(Duration::from_secs(10)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .add_service(WorkerServer::new(svc).max_decoding_message_size(16 << 20))
        .add_optional_service(jobs.map(|j| {
            crate::pb::jobs_server::JobsServer::new(j).max_decoding_message_size(16 << 20)
        }));
    match (&cfg.listen, tls) {
        (WorkerListen::Unix(path), _) => {
            let std_listener = sluice_sys::peer::bind_private(path)?;
            let _file = SocketFile(path.clone());
            std_listener.set_nonblocking(true)?;
            let listener = tokio::net::UnixListener::from_std(std_listener)?;
            log(&format!(
                "listening on unix:{} (mode 0600: this user and root only, no TLS)",
                path.display()
            ));
            let rx = accept_unix(listener, refusals);
            server.serve_with_incoming(ReceiverStream::new(rx)).await?;
        }
        (WorkerListen::Tcp(addr), Some(tls)) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            log(&format!(
                "listening on {addr} (TLS, controllers must present a certificate of this CA)"
            ));
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            let rx = accept_tls(listener, acceptor, refusals);
            server.serve_with_incoming(ReceiverStream::new(rx)).await?;
        }
        (WorkerListen::Tcp(_), None) => unreachable!("refused above"),
    }
    Ok(())
}

/// A task admitted to run: its job (a file in the lease's directory),
/// where, and when.
struct Admitted {
    /// The job's process's arguments: `job FILE`.
    args: Vec<String>,
    /// What the job is, for the log.
    what: String,
    dir: PathBuf,
    summary: PathBuf,
    name: String,
    /// Start and deadline on this host's clock.
    start: i64,
    deadline: i64,
    /// The job takes clock corrections on its stdin.
    corrections: bool,
}

/// This worker's clock as it answers the controller: the host's, moved by
/// the test offset and drift.
#[derive(Clone, Copy)]
struct WorkerClock {
    offset_ns: i64,
    drift_ppm: f64,
    born_ns: i64,
}

impl WorkerClock {
    /// The worker's clock at host time `real`.
    fn host(&self, real: i64) -> i64 {
        real + self.offset_ns + (self.drift_ppm * 1e-6 * (real - self.born_ns) as f64) as i64
    }

    fn now(&self) -> i64 {
        self.host(now_ns())
    }

    /// The host time at which the worker's clock reads `t`.
    fn real(&self, t: i64) -> i64 {
        let r = 1.0 + self.drift_ppm * 1e-6;
        self.born_ns + ((t - self.offset_ns - self.born_ns) as f64 / r) as i64
    }
}

/// Writes each clock correction to the job's stdin as `shift NS`; ends
/// when the job's pipe or the worker's channel closes.
async fn pass_corrections(
    mut stdin: tokio::process::ChildStdin,
    mut rx: tokio::sync::mpsc::Receiver<i64>,
) {
    use tokio::io::AsyncWriteExt as _;
    while let Some(shift) = rx.recv().await {
        let line = format!("shift {shift}\n");
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

impl Service {
    /// The job's receiver: an interface this worker announced, and the
    /// other senders' clocks against this one.
    fn receive(&self, task: &pb::Task) -> Result<Option<Receive>, Status> {
        if task.rx.is_empty() {
            return Ok(None);
        }
        let iface = task
            .rx
            .strip_prefix("afpacket:")
            .filter(|_| ports().iter().any(|p| p.sink == task.rx))
            .ok_or_else(|| {
                Status::invalid_argument(format!(
                    "rx '{}' is not an interface this worker announced",
                    shown(&task.rx)
                ))
            })?;
        if task.rx_clocks.len() > crate::plan::MAX_STAMPING {
            return Err(Status::invalid_argument(
                "more rx clocks than senders a plan may have",
            ));
        }
        let mut clocks = Vec::with_capacity(task.rx_clocks.len());
        for c in &task.rx_clocks {
            if c.last < c.first {
                return Err(Status::invalid_argument(
                    "an rx clock's streams run backwards",
                ));
            }
            clocks.push(sluice_job::ClockCorrection {
                first: c.first,
                last: c.last,
                ahead_ns: c.ahead_ns,
            });
        }
        Ok(Some(Receive {
            iface: iface.to_string(),
            wait: sluice_job::Nanos(task.rx_wait_ns.clamp(1, 10_000_000_000)),
            clocks,
        }))
    }

    /// Checks a task against the lease (its uploads, its port map, a start
    /// still ahead), reads its job (the types refuse what a peer may not
    /// ask) and writes what the job's process runs.
    fn admit(&self, req: Request<pb::Task>) -> Result<Admitted, Status> {
        let job = req
            .get_ref()
            .job
            .as_ref()
            .ok_or_else(|| "the task holds no job".to_string())
            .and_then(crate::jobwire::from_proto)
            .map_err(|e| Status::invalid_argument(shown_long(&e, 300)))?;
        let (input, map, sinks, summary, name, dir) = {
            let st = self.leased(&req)?;
            let task = req.get_ref();
            if st.job.is_some() {
                return Err(Status::failed_precondition("a task is already running"));
            }
            let upload = |n: &str| {
                st.files.get(n).cloned().ok_or_else(|| {
                    Status::invalid_argument(format!("no uploaded file '{}'", shown(n)))
                })
            };
            let input = upload(&task.file_id)?;
            let map = job
                .uploads()
                .first()
                .map(|u| upload(u.as_str()))
                .transpose()?;
            if task.also_ports.len() > usize::from(u8::MAX) {
                return Err(Status::invalid_argument(format!(
                    "also_ports: {}: at most {} ports more",
                    task.also_ports.len(),
                    u8::MAX
                )));
            }
            let me = st.name();
            let mut sinks = Vec::with_capacity(1 + task.also_ports.len());
            for (k, &id) in std::iter::once(&task.port)
                .chain(&task.also_ports)
                .enumerate()
            {
                let p = st.ports.iter().find(|p| p.id == id).ok_or_else(|| {
                    Status::invalid_argument(format!("port {id} is not in the port map"))
                })?;
                if k > 0 && (p.worker != me || sinks.contains(&p.sink)) {
                    return Err(Status::invalid_argument(format!(
                        "also_ports[{}]: port {id} is not another port of this worker",
                        k - 1
                    )));
                }
                sinks.push(p.sink.clone());
            }
            let dir = st.dir.clone().expect("a lease has a directory");
            (input, map, sinks, dir.join(".summary.json"), me, dir)
        };
        let task = req.into_inner();
        // Only sinks this worker announced.
        let own = ports();
        if !sinks.iter().all(|s| own.iter().any(|p| &p.sink == s)) {
            return Err(Status::invalid_argument(
                "the task's port is not a sink this worker announced",
            ));
        }
        if sinks.len() > 1
            && !matches!(
                job.work,
                sluice_job::Work::Series { .. } | sluice_job::Work::Profile(_)
            )
        {
            return Err(Status::invalid_argument(format!(
                "also_ports: a {} job sends by one port (series and profile jobs by several)",
                job.work.command()
            )));
        }
        let mut specs = Vec::with_capacity(sinks.len());
        for sink in &sinks {
            specs.push(
                sink.parse::<sluice_job::SinkSpec>()
                    .map_err(|e| Status::internal(format!("announced sink '{sink}': {e}")))?,
            );
        }
        let to = specs.remove(0);
        let sink = sinks.join(", ");
        // Start and deadline on the host's clock: the controller's instant,
        // moved by this worker's measured offset, less the test shift.
        check_task(&task, now_ns())?;
        let clock = self.clock();
        let to_host = |t: i64| clock.real(t + task.offset_ns);
        let (start, deadline) = (to_host(task.start_ns), to_host(task.deadline_ns));
        if start < now_ns() {
            return Err(Status::invalid_argument("the start time has passed"));
        }
        // Split by components: the controller's decomposition, checked;
        // this worker never decomposes the profile itself.
        let fourier = match (task.split(), &task.fourier) {
            (pb::Split::Components, Some(f)) => Some(
                crate::jobwire::fourier_from_proto(f)
                    .map_err(|e| Status::invalid_argument(format!("the task: {e}")))?,
            ),
            (pb::Split::Components, None) => {
                return Err(Status::invalid_argument(
                    "split COMPONENTS: the task carries no Fourier components (the controller computes them once)",
                ))
            }
            (_, Some(_)) => {
                return Err(Status::invalid_argument(
                    "Fourier components come with split COMPONENTS only",
                ))
            }
            (_, None) => None,
        };
        let what = format!("{} on {sink}", job.work.command());
        let run = WorkerJob {
            job,
            input,
            map,
            to,
            also_to: specs,
            start_at: start as u64,
            share: (task.share_count > 1).then_some((task.share_index, task.share_count)),
            share_by: match task.split() {
                pb::Split::Components => ShareBy::Components,
                _ => ShareBy::Packets,
            },
            fourier,
            receive: self.receive(&task)?,
            streams_from: task.streams_from,
            clock_shift: self.cfg.clock_offset_ns,
            clock_corrections: task.clock_corrections,
            clock_drift_ppm: self.cfg.clock_drift_ppm,
            summary_json: summary.clone(),
        };
        let file = dir.join(".job.json");
        std::fs::write(&file, serde_json::to_vec(&run).expect("a job serialises"))
            .map_err(|e| Status::internal(format!("writing the job: {e}")))?;
        Ok(Admitted {
            corrections: task.clock_corrections,
            args: vec!["job".into(), file.display().to_string()],
            what,
            dir,
            summary,
            name,
            start,
            deadline,
        })
    }
}

/// How much of a job's stderr the worker keeps (its end).
const STDERR_TAIL: usize = 64 * 1024;

/// The job's process: `exe args` in `dir`, output piped, killed with the
/// worker.
fn job_command(exe: &Path, args: &[String], dir: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(args)
        .current_dir(dir)
        // A failure is told as one JSON line on stdout (sluice.failure/1).
        .env(FAILURE_ENV, "1")
        // A crash reports its message, never a backtrace with build paths.
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // A worker that dies takes its job with it (the job stops cleanly on
    // SIGTERM, summary flushed).
    sluice_sys::process::die_with_parent(cmd.as_std_mut());
    cmd
}

/// How a job's process ended.
struct Ended {
    /// None when it could not be waited for.
    status: Option<std::process::ExitStatus>,
    /// Its stderr, for a process that died without a failure line.
    stderr: String,
    /// Its `sluice.failure/1` line, when it failed and said so.
    failure: Option<JobFailure>,
}

/// Forwards the job's statistics lines until its output ends, stopping it
/// at its deadline (a controller that went away does not stop it: the
/// deadline does); how it ended.
async fn watch(
    job: &Admitted,
    mut child: tokio::process::Child,
    stdout: tokio::process::ChildStdout,
    mut stderr: tokio::process::ChildStderr,
    tx: &tokio::sync::mpsc::Sender<Result<pb::Update, Status>>,
) -> Ended {
    let pid = child.id().unwrap_or(0);
    let mut lines = BufReader::new(stdout).lines();
    let err_text = tokio::spawn(async move {
        let mut s = String::new();
        // Only the end is kept: a job that writes without end costs the
        // worker a bounded buffer.
        let mut buf = [0u8; 8192];
        let mut tail: Vec<u8> = Vec::new();
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    });
    let until = Duration::from_nanos(job.deadline.saturating_sub(now_ns()).max(0) as u64);
    let deadline_at = tokio::time::Instant::now() + until;
    let mut stopped = false;
    let mut failure = None;
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(l)) => match JobFailure::parse(&l) {
                    Some(f) => failure = Some(f),
                    None => {
                        let _ = tx.send(Ok(pb::Update { kind: Some(update::Kind::Stats(l)) })).await;
                    }
                },
                _ => break,
            },
            _ = tokio::time::sleep_until(deadline_at), if !stopped => {
                log(&format!("'{}': deadline reached: stopping the job", job.name));
                let _ = sluice_sys::process::terminate(pid);
                stopped = true;
            }
        }
    }
    let status = match tokio::time::timeout(KILL_AFTER, child.wait()).await {
        Ok(s) => s.ok(),
        Err(_) => {
            let _ = child.kill().await;
            child.wait().await.ok()
        }
    };
    Ended {
        status,
        stderr: err_text.await.unwrap_or_default(),
        failure,
    }
}

/// The job's last update: its summary, or why there is none. A job that
/// failed says why in its failure line; one without (killed, crashed) is
/// described by its exit status and stderr.
fn outcome(summary: &Path, ended: Ended) -> update::Kind {
    if let Ok(t) = std::fs::read_to_string(summary) {
        return update::Kind::Finished(t);
    }
    // The lease's files as the peer named them: this worker's own
    // directories are none of its business.
    let dir = summary.parent().unwrap_or(Path::new("/"));
    let plain = |t: &str| without_dir(t, dir);
    match ended.failure {
        // sluice exits 2 on bad input, before it sends anything.
        Some(f) if f.exit == 2 => update::Kind::Refused(plain(&f.error)),
        Some(f) => update::Kind::Failed(format!("{} (exit status: {})", plain(&f.error), f.exit)),
        None => update::Kind::Failed(format!(
            "{} ({})",
            plain(&last_error_line(&ended.stderr)),
            ended.status.map_or("killed".into(), |s| s.to_string())
        )),
    }
}

/// What a job that died without a failure line said last: a panic's
/// message, else its last line that is not part of a backtrace, at most
/// 300 characters. A backtrace (build paths, frames) never reaches the
/// controller.
fn last_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    let panic = lines.iter().rposition(|l| l.contains("panicked at"));
    let line = match panic {
        // The message is the line after `thread 'x' panicked at FILE:L:C:`.
        Some(i) => lines
            .get(i + 1)
            .filter(|l| !l.is_empty() && !l.starts_with("note:"))
            .map(|m| format!("the job panicked: {m}"))
            .unwrap_or_else(|| "the job panicked".into()),
        None => lines
            .iter()
            .rev()
            .find(|l| !l.is_empty() && !backtrace_line(l))
            .map_or_else(|| "no error message".into(), |l| l.to_string()),
    };
    shown_long(&line, 300)
}

/// A line of a Rust backtrace or its notes.
fn backtrace_line(l: &str) -> bool {
    let frame = l
        .split_once(':')
        .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    frame || l.starts_with("at ") || l.starts_with("stack backtrace") || l.starts_with("note: ")
}

/// `text` with control characters escaped, cut at `max` characters.
fn shown_long(text: &str, max: usize) -> String {
    let mut s = String::new();
    for c in text.chars().take(max) {
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    if text.chars().count() > max {
        s.push('…');
    }
    s
}

/// Ends leases nobody used for `idle`, with their uploads.
fn sweep_idle_leases(sweep: Arc<Mutex<State>>, idle: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(idle.min(Duration::from_secs(5)) / 2);
        loop {
            tick.tick().await;
            let mut st = lock(&sweep);
            if st.lease.is_some() && !st.held(idle) {
                let name = st.name();
                let n = st.end_lease();
                log(&format!(
                    "the lease of '{name}' expired unused: {n} uploads removed"
                ));
            }
        }
    });
}

/// Accepts unix-socket clients whose peer uid is admitted; the others are
/// refused and logged (rate-limited).
fn accept_unix(
    listener: tokio::net::UnixListener,
    refusals: Arc<Mutex<Refusals>>,
) -> tokio::sync::mpsc::Receiver<std::io::Result<tokio::net::UnixStream>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let sock = match listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    accept_failed(&e, &refusals).await;
                    continue;
                }
            };
            match sock.peer_cred() {
                Ok(c) if sluice_sys::peer::admitted(c.uid()) => {
                    if tx.send(Ok::<_, std::io::Error>(sock)).await.is_err() {
                        return;
                    }
                }
                Ok(c) => {
                    Refusals::log(&refusals, || format!("refused a client of uid {}", c.uid()))
                }
                Err(e) => Refusals::log(&refusals, || format!("refused a client: {e}")),
            }
        }
    });
    rx
}

/// Accepts TLS clients: handshakes capped in all and per address, each
/// within HANDSHAKE_TIMEOUT; failures refused and logged (rate-limited).
fn accept_tls(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    refusals: Arc<Mutex<Refusals>>,
) -> tokio::sync::mpsc::Receiver<
    std::io::Result<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>,
> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let all = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
    let peers = Arc::new(Mutex::new(HashMap::new()));
    tokio::spawn(async move {
        loop {
            let (sock, peer) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    accept_failed(&e, &refusals).await;
                    continue;
                }
            };
            // Unauthenticated handshakes are capped in all and per
            // address: a flood of idle connections cannot lock
            // controllers out, nor hold the worker's descriptors.
            let Some(slot) = Slot::take(&all, &peers, peer.ip()) else {
                Refusals::log(&refusals, || {
                    format!("refused {peer}: too many TLS handshakes in progress")
                });
                continue;
            };
            // Clock exchanges are single small messages: no Nagle.
            let _ = sock.set_nodelay(true);
            let (acceptor, tx, refusals) = (acceptor.clone(), tx.clone(), refusals.clone());
            tokio::spawn(async move {
                let r = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock)).await;
                drop(slot);
                match r {
                    Ok(Ok(s)) => {
                        let _ = tx.send(Ok::<_, std::io::Error>(s)).await;
                    }
                    Ok(Err(e)) => Refusals::log(&refusals, || format!("refused {peer}: {e}")),
                    Err(_) => Refusals::log(&refusals, || {
                        format!(
                            "refused {peer}: no TLS handshake within {} s",
                            HANDSHAKE_TIMEOUT.as_secs()
                        )
                    }),
                }
            });
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_crashed_job_reports_its_message_not_its_backtrace() {
        let panic = "thread 'main' panicked at /build/sluice/crates/x/src/a.rs:3:5:\n\
                     index out of bounds\nstack backtrace:\n   0: rust_begin_unwind\n\
                     \x20            at /rustc/abc/library/std/src/panicking.rs:652:5\n\
                     note: Some details are omitted\n";
        let l = last_error_line(panic);
        assert_eq!(l, "the job panicked: index out of bounds");
        let abort = "memory allocation of 34359738368 bytes failed\n";
        assert_eq!(
            last_error_line(abort),
            "memory allocation of 34359738368 bytes failed"
        );
        let chatty = "progress\nsluice: cannot open x\n  12: main\n      at /b/main.rs:1\n";
        assert_eq!(last_error_line(chatty), "sluice: cannot open x");
        assert_eq!(last_error_line(""), "no error message");
        assert!(last_error_line(&"y".repeat(1000)).chars().count() <= 301);
        assert!(!last_error_line("bad\x1b[2Jline").contains('\x1b'));
    }
}
