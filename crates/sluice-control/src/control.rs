//! `sluice control run PLAN`: connect, register, build and publish the
//! port map, measure every worker's clock offset, upload the job, start
//! every task at one instant t_tos, gather statistics, write one summary.

use crate::error::{chain, describe, input, Context, ControlError, Result};
use crate::now_ns;
use crate::pb::worker_client::WorkerClient;
use crate::pb::{self, update};
use crate::plan::Plan;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// A worker's client: every call carries the lease Register gave.
type Client = WorkerClient<InterceptedService<Channel, SessionKey>>;

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

/// Live totals over the workers.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub t: f64,
    pub packets: u64,
    pub pps: f64,
    pub bps: f64,
    /// The slowest worker's ε p99 in its last interval.
    pub eps_p99_ns: Option<u64>,
    pub workers_running: usize,
}

/// One worker in the summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerResult {
    pub name: String,
    pub address: String,
    pub port: u32,
    pub sink: String,
    /// Its further generating ports (`to:` a list in the plan): global
    /// port IDs following `port`, the worker's Fourier queues (or flows)
    /// dealt over all of them.
    #[serde(default)]
    pub also_to: Vec<PortOut>,
    /// Worker − controller, ns (four-timestamp exchange, minimum delay).
    pub offset_ns: i64,
    /// Half the minimum round-trip delay: the offset is known to ± this.
    pub offset_uncertainty_ns: u64,
    /// The worker's own clock service (chrony, linuxptp), if one answers:
    /// its reference, its offset of the worker's clock and its error bound.
    pub clock_service: Option<String>,
    pub clock_service_offset_ns: Option<i64>,
    pub clock_service_bound_ns: Option<u64>,
    /// When the worker said its job starts, on the controller's clock.
    pub start_ns: Option<i64>,
    /// Its job's `--summary-json` (sluice.summary/2).
    pub summary: Option<Value>,
    /// Why it did not finish: its job's error, or the connection lost.
    pub error: Option<String>,
    /// The worker refused the job as bad input (`error` says why).
    pub refused: bool,
    /// Given up: no summary by its deadline plus a margin, none soon
    /// after an interruption, or its connection broke before it sent one
    /// (`error` says which).
    pub lost: bool,
    /// The packets its last statistics line reported (a lost worker's
    /// last word: it sent at least these).
    pub last_packets: Option<u64>,
    /// Clock offsets measured again during the run (`--clock-every`): how
    /// many, the last one's move from the start's offset, and the largest
    /// move seen (its clock drifting from the controller's).
    pub clock_checks: u64,
    pub drift_ns: Option<i64>,
    pub drift_max_abs_ns: Option<u64>,
    /// Corrections sent to its job (each moved its schedule by the drift
    /// then measured), and the bound on the error left between them: the
    /// largest move of the offset from one check to the next, at that
    /// pace until the next correction landed (what builds up before it),
    /// plus the uncertainties of the start's and the checks' offsets.
    /// None: no correction was made.
    #[serde(default)]
    pub drift_corrections: u64,
    #[serde(default)]
    pub drift_residual_bound_ns: Option<u64>,
    /// When a worker of the plan receives: the first stream id of this
    /// worker's stamps (it stamps up to `plan::STREAMS_PER_WORKER`).
    pub streams_from: Option<u32>,
    /// The interface it counted stamped frames on (`rx:` in the plan);
    /// what it counted is its summary's `rx`.
    pub rx: Option<String>,
    /// With `rx`: each sender's clock against this worker's, by which
    /// the one-way latency of its streams was corrected.
    pub rx_clocks: Vec<SenderClock>,
}

/// A further port of a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PortOut {
    pub port: u32,
    pub sink: String,
}

/// A sender's streams as one receiving worker saw them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SenderClock {
    /// The sending worker.
    pub from: String,
    pub first_stream: u32,
    pub last_stream: u32,
    /// Its clock ahead of the receiver's, from the two measured offsets
    /// (sender − receiver); taken off its departure stamps. 0 when the
    /// offsets were not applied (`--no-correct`) or it is the receiver.
    pub ahead_ns: i64,
    /// The correction's error bound: the sum of the two offsets'
    /// uncertainties (half the minimum round trip of each). The one-way
    /// latency of these streams is known to ± this (plus the drift of the
    /// two clocks since they were measured).
    pub bound_ns: u64,
}

impl WorkerResult {
    /// Worker `w` of the plan, port `port`, as Register answered.
    fn registered(w: &crate::plan::WorkerEntry, port: u32, reg: &pb::RegisterReply) -> Self {
        // An empty text: no clock service answered on the worker.
        let service = !reg.clock_service.is_empty();
        WorkerResult {
            name: w.name.clone(),
            address: w.address.clone(),
            port,
            sink: w.to.clone(),
            also_to: w
                .also_to
                .iter()
                .zip(port + 1..)
                .map(|(sink, port)| PortOut {
                    port,
                    sink: sink.clone(),
                })
                .collect(),
            offset_ns: 0,
            offset_uncertainty_ns: 0,
            clock_service_offset_ns: service.then_some(reg.clock_service_offset_ns),
            clock_service_bound_ns: service.then_some(reg.clock_service_bound_ns),
            clock_service: service.then(|| reg.clock_service.clone()),
            start_ns: None,
            summary: None,
            error: None,
            refused: false,
            lost: false,
            last_packets: None,
            clock_checks: 0,
            drift_ns: None,
            drift_max_abs_ns: None,
            drift_corrections: 0,
            drift_residual_bound_ns: None,
            streams_from: None,
            rx: None,
            rx_clocks: Vec::new(),
        }
    }
}

/// Whether a connection failed in the network (refused, unreachable,
/// timed out) rather than in TLS or the address.
fn network_failure(e: &tonic::transport::Error) -> bool {
    use std::io::ErrorKind::*;
    let io_kind = |c: &(dyn std::error::Error + 'static)| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | TimedOut
                    | HostUnreachable
                    | NetworkUnreachable
                    | NetworkDown
                    | AddrNotAvailable
            )
        })
    };
    chain(e).any(io_kind) || describe(e).contains("timed out")
}

/// Sums over the workers: their summaries, and for a worker that did not
/// finish (lost, or its job failed) what its last statistics line said.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Totals {
    pub workers: usize,
    pub finished: usize,
    /// Workers given up as lost.
    pub lost: usize,
    /// Some worker that was not refused did not finish: its last
    /// statistics line (if any) is counted, not its end, so the counts
    /// are lower bounds: at least this many were sent.
    pub at_least: bool,
    pub packets: u64,
    pub frame_bytes: u64,
    pub late: u64,
    pub dropped: u64,
    /// Over the span from t_tos to the last worker's last send.
    pub pps: Option<f64>,
    pub bps: Option<f64>,
    /// The largest of the workers' ε p99 (the slowest worker).
    pub eps_p99_max_ns: Option<u64>,
}

/// The controller's summary (`sluice.control-summary/1`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ControlSummary {
    pub command: String,
    pub split: String,
    /// t_tos, CLOCK_REALTIME ns on the controller's clock.
    pub start_ns: i64,
    pub clock_corrected: bool,
    pub workers: Vec<WorkerResult>,
    pub total: Totals,
    pub interrupted: bool,
    pub aborted: Option<String>,
}

struct Conn {
    client: Client,
    result: WorkerResult,
}

/// Grace after t_tos + duration before a worker stops a job by itself.
const GRACE: Duration = Duration::from_secs(3);
/// How long a receiving worker counts after its own last frame left: the
/// others' frames still on their way (well inside GRACE).
const RX_WAIT: Duration = Duration::from_millis(500);
/// Clock exchanges of a check during the run (fewer than before the
/// start: it is a running worker's time).
const CHECK_ROUNDS: usize = 8;
/// Past a worker's deadline, how long its summary may take (the worker
/// kills its job 2 s after the deadline's SIGTERM) before it is lost.
const LOST_AFTER: Duration = Duration::from_secs(5);
/// After an interruption, how long the workers have to send summaries.
const STOP_WAIT: Duration = Duration::from_secs(3);
/// TCP connect, TLS handshake and Register, together.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Any one call before the run (port map, clock, release).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const CHUNK: usize = 1 << 20;

/// A channel to `address`: HOST:PORT (TLS when `tls`) or unix:PATH. The
/// HTTP/2 keep-alive finds a peer that froze or vanished mid-run.
pub async fn connect(
    address: &str,
    tls: Option<&tonic::transport::ClientTlsConfig>,
) -> Result<Channel> {
    if let Some(path) = address.strip_prefix("unix:") {
        if tls.is_some() {
            return Err(input!(
                "address '{address}': a unix socket checks its peer's uid; --tls is for TCP"
            ));
        }
        let path = PathBuf::from(path);
        // The URI is a placeholder: the connector dials the socket.
        let ch = keep_alive(Endpoint::from_static("http://[::1]:1"))
            .connect_with_connector(tower::service_fn(move |_| {
                let path = path.clone();
                async move {
                    let s = tokio::net::UnixStream::connect(&path).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
                }
            }))
            .await
            .map_err(dial_failure)?;
        return Ok(ch);
    }
    let Some(t) = tls else {
        return Err(input!(
            "address '{address}': TCP needs --tls (workers without keys serve unix:PATH)"
        ));
    };
    let ep = Endpoint::from_shared(format!("https://{address}"))
        .map_err(|e| input!("address '{address}': {e}"))?
        .connect_timeout(Duration::from_secs(3))
        .tcp_nodelay(true)
        .tls_config(t.clone())?;
    keep_alive(ep).connect().await.map_err(dial_failure)
}

/// A failed dial: the environment's fault when the network refused it
/// (see [`network_failure`]), else the address's or the keys'.
fn dial_failure(e: tonic::transport::Error) -> ControlError {
    if network_failure(&e) {
        ControlError::Environment(format!("unreachable: {}", describe(&e)))
    } else {
        ControlError::Input(describe(&e))
    }
}

/// HTTP/2 pings every 5 s, idle or not, answered within 5 s: how a peer
/// that froze or vanished mid-run is found.
fn keep_alive(ep: Endpoint) -> Endpoint {
    ep.http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(5))
        .keep_alive_while_idle(true)
}

/// `f`, refused with a timeout error naming `what` after `limit`.
async fn within<T>(
    limit: Duration,
    what: &str,
    f: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(ControlError::Environment(format!(
            "{what}: no answer within {} s",
            limit.as_secs()
        ))),
    }
}

/// Ends every lease (best effort, briefly): a controller that stops before
/// its run leaves no uploads and no held worker behind.
async fn release_all(conns: &mut [Conn]) {
    for c in conns {
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            c.client.release(pb::ReleaseRequest {}),
        )
        .await;
    }
}

/// Waits for the stop flag (polled: the signal handler only sets it).
async fn stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `path` to one worker, read from disk in CHUNK pieces as the
/// stream drains: the controller holds a few chunks, never the whole file
/// (a trace may be gigabytes), once per worker.
async fn upload(client: &mut Client, path: &Path, worker: &str) -> Result<String> {
    let (chunks, reader) = file_chunks(path).await?;
    let id = client
        .upload(chunks)
        .await
        .map_err(|e| input!("worker '{worker}': upload: {}", e.message()))?
        .into_inner()
        .id;
    read_whole(reader, path).await?;
    Ok(id)
}

/// The reader of [`file_chunks`]: whether it read the whole file.
pub(crate) type ChunkReader = tokio::task::JoinHandle<std::io::Result<()>>;

/// `path` as an upload's chunks under its plain name, read CHUNK at a
/// time as the stream drains (a few chunks held, never the whole file),
/// and the reader; [`read_whole`] it once the upload is answered.
pub(crate) async fn file_chunks(
    path: &Path,
) -> Result<(
    tokio_stream::wrappers::ReceiverStream<pb::FileChunk>,
    ChunkReader,
)> {
    use tokio::io::AsyncReadExt;
    let mut f = tokio::fs::File::open(path)
        .await
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let name = crate::plan::upload_name(path);
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let reader = tokio::spawn(async move {
        loop {
            let mut data = Vec::with_capacity(CHUNK);
            (&mut f).take(CHUNK as u64).read_to_end(&mut data).await?;
            if data.is_empty() {
                return Ok::<_, std::io::Error>(());
            }
            let chunk = pb::FileChunk {
                name: name.clone(),
                data,
            };
            if tx.send(chunk).await.is_err() {
                return Ok(()); // the upload failed: its error says why
            }
        }
    });
    Ok((tokio_stream::wrappers::ReceiverStream::new(rx), reader))
}

/// A read error ends the stream early: the peer got a truncated file, so
/// nothing may use it.
pub(crate) async fn read_whole(reader: ChunkReader, path: &Path) -> Result<()> {
    reader
        .await
        .context("the upload reader")?
        .with_context(|| format!("{}: cannot read", path.display()))
}

/// NTP's four-timestamp exchange, `rounds` times; the round with the
/// smallest delay gives the offset (worker − controller) and ± delay / 2.
pub async fn measure_offset<T>(client: &mut WorkerClient<T>, rounds: usize) -> Result<(i64, u64)>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    let mut best: Option<(i64, i64)> = None;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let mut replies = client
        .clock(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    for _ in 0..rounds.max(1) {
        let t1 = now_ns();
        tx.send(pb::ClockRequest { t1_ns: t1 })
            .await
            .map_err(|_| input!("the clock stream closed"))?;
        let r = replies
            .message()
            .await?
            .ok_or_else(|| input!("the clock stream ended"))?;
        let t4 = now_ns();
        let delay = (t4 - t1) - (r.t3_ns - r.t2_ns);
        let offset = ((r.t2_ns - t1) + (r.t3_ns - t4)) / 2;
        if best.is_none_or(|(d, _)| delay < d) {
            best = Some((delay, offset));
        }
    }
    let (delay, offset) = best.expect("at least one round");
    Ok((offset, (delay.max(0) / 2) as u64))
}

/// Registers every worker (at once), publishes the port map, measures the
/// clock offsets and uploads the job's files: the uploads' ids and the
/// largest round trip. `conns` holds every worker registered so far, for
/// the caller to release on an error.
async fn prepare(cfg: &ControlConfig, conns: &mut Vec<Conn>) -> Result<(Vec<String>, u64)> {
    register_all(cfg, conns).await?;
    publish_ports(conns).await?;
    let max_rtt = measure_clocks(cfg, conns).await?;
    let ids = upload_all(&cfg.plan, conns).await?;
    Ok((ids, max_rtt))
}

/// Connects to one worker and takes its lease.
async fn register(
    name: String,
    address: String,
    tls: Option<tonic::transport::ClientTlsConfig>,
) -> Result<(Client, pb::RegisterReply)> {
    let what = format!("worker '{name}' ({address})");
    within(CONNECT_TIMEOUT, &what, async {
        let ch = connect(&address, tls.as_ref())
            .await
            .map_err(|e| e.about(&what))?;
        let lease = SessionKey::default();
        let mut client =
            WorkerClient::with_interceptor(ch, lease.clone()).max_decoding_message_size(64 << 20);
        let reg = client
            .register(pb::RegisterRequest { name: name.clone() })
            .await
            .map_err(|e| {
                let text = format!("{what}: {}", e.message());
                if e.code() == tonic::Code::Unavailable {
                    ControlError::Environment(text)
                } else {
                    ControlError::Input(text)
                }
            })?
            .into_inner();
        lease.set(&reg.session)?;
        Ok((client, reg))
    })
    .await
}

/// A worker of another sluice version is refused: a job field one side
/// lacks would be dropped silently (protobuf's rule for unknown fields).
fn same_version(name: &str, version: &str) -> Result<()> {
    let ours = env!("CARGO_PKG_VERSION");
    if version == ours {
        return Ok(());
    }
    Err(input!(
        "worker '{name}' runs sluice {}, this controller {ours}: run one version on both",
        crate::shown::shown(version)
    ))
}

/// Registers every worker at once; each registered one goes to `conns`
/// (to be released), and the first failure is the error: a worker that
/// does not answer, or has no such port, or has it down.
async fn register_all(cfg: &ControlConfig, conns: &mut Vec<Conn>) -> Result<()> {
    let tls = match &cfg.tls {
        Some(d) => Some(crate::tls::client_config(d)?),
        None => None,
    };
    let plan = &cfg.plan;
    let tasks: Vec<_> = plan
        .workers
        .iter()
        .map(|w| tokio::spawn(register(w.name.clone(), w.address.clone(), tls.clone())))
        .collect();
    let mut first_error = None;
    // Global port IDs in plan order: a worker's sinks take consecutive IDs.
    let first_ports: Vec<u32> = plan
        .workers
        .iter()
        .scan(0u32, |next, w| {
            let first = *next;
            *next += 1 + w.also_to.len() as u32;
            Some(first)
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        let (client, reg) = match t.await.context("a connection task")? {
            Ok(r) => r,
            Err(e) => {
                // The others registered are still released by the caller.
                first_error.get_or_insert(e);
                continue;
            }
        };
        let w = &plan.workers[i];
        conns.push(Conn {
            client,
            result: WorkerResult::registered(w, first_ports[i], &reg),
        });
        if let Err(e) = same_version(&w.name, &reg.version) {
            first_error.get_or_insert(e);
        }
        for to in w.sinks() {
            match reg.ports.iter().find(|p| &p.sink == to) {
                None => {
                    let have: Vec<&str> = reg.ports.iter().map(|p| p.sink.as_str()).collect();
                    first_error.get_or_insert(input!(
                        "worker '{}': no port {} (it has {})",
                        w.name,
                        to,
                        have.join(", ")
                    ));
                }
                Some(p) if !p.up => {
                    first_error.get_or_insert(input!("worker '{}': {} is down", w.name, to));
                }
                Some(_) => {}
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The global port map (Fig. 6), every worker's sinks under consecutive
/// IDs, to every worker.
async fn publish_ports(conns: &mut [Conn]) -> Result<()> {
    let map = pb::PortMap {
        ports: conns
            .iter()
            .flat_map(|c| {
                let r = &c.result;
                std::iter::once((r.port, &r.sink))
                    .chain(r.also_to.iter().map(|p| (p.port, &p.sink)))
                    .map(|(id, sink)| pb::GlobalPort {
                        id,
                        worker: r.name.clone(),
                        sink: sink.clone(),
                    })
            })
            .collect(),
    };
    for c in conns.iter_mut() {
        let what = format!("worker '{}': the port map", c.result.name);
        within(CALL_TIMEOUT, &what, async {
            c.client
                .publish_ports(map.clone())
                .await
                .map_err(|e| input!("{what}: {}", e.message()))
        })
        .await?;
    }
    Ok(())
}

/// Every worker's clock offset; the largest round trip. A worker whose
/// offset is known no better than `--max-skew` is refused.
async fn measure_clocks(cfg: &ControlConfig, conns: &mut [Conn]) -> Result<u64> {
    let mut max_rtt = 0u64;
    for c in conns.iter_mut() {
        let what = format!("worker '{}': the clock exchange", c.result.name);
        let (off, unc) = within(
            CALL_TIMEOUT,
            &what,
            measure_offset(&mut c.client, cfg.rounds),
        )
        .await?;
        c.result.offset_ns = off;
        c.result.offset_uncertainty_ns = unc;
        max_rtt = max_rtt.max(2 * unc);
        if unc > cfg.max_skew_ns {
            return Err(ControlError::Environment(format!(
                "worker '{}': clock offset known to ±{} ns only, above --max-skew {} ns: not starting",
                c.result.name,
                unc,
                cfg.max_skew_ns
            )));
        }
    }
    Ok(max_rtt)
}

/// The job's files to every worker: the id of its main file on each. No
/// timeout (a trace may be large), but the keep-alive ends an upload when
/// a worker stops answering.
async fn upload_all(plan: &Plan, conns: &mut [Conn]) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for c in conns.iter_mut() {
        ids.push(upload(&mut c.client, &plan.file, &c.result.name).await?);
        for f in &plan.files {
            upload(&mut c.client, f, &c.result.name).await?;
        }
    }
    Ok(ids)
}

/// Runs the plan; the summary even when workers failed (the error says
/// which), an error only when nothing could start.
pub async fn run(mut cfg: ControlConfig) -> Result<ControlSummary> {
    // A split by components is decomposed here, once, before any worker
    // is contacted (the synthesis and FFT may take a while: off the
    // runtime's threads).
    let fourier = {
        let (file, split, workers) = (
            cfg.plan.file.clone(),
            cfg.plan.split,
            cfg.plan.workers.len(),
        );
        let job = cfg.job.clone();
        let work = tokio::task::spawn_blocking(move || {
            crate::fourier::plan_components(&file, split, workers, &job)
        });
        tokio::select! {
            r = work => r.map_err(|e| ControlError::Environment(format!("the Fourier plan: {e}")))??,
            _ = stopped(&cfg.stop) => return Err(ControlError::Environment(
                "interrupted while planning the Fourier components: nothing was sent".into(),
            )),
        }
    };
    let mut conns = Vec::new();
    let prepared = tokio::select! {
        r = prepare(&cfg, &mut conns) => r,
        _ = stopped(&cfg.stop) => Err(ControlError::Environment(
            "interrupted before the start: nothing was sent".into(),
        )),
    };
    let (ids, max_rtt) = match prepared {
        Ok(p) => p,
        Err(e) => {
            release_all(&mut conns).await;
            return Err(e);
        }
    };
    // t_tos: far enough ahead for every worker to get its task and load
    // its input.
    let lead = cfg
        .start_in
        .unwrap_or_else(|| Duration::from_millis(1500) + Duration::from_nanos(20 * max_rtt));
    plan_receivers(&cfg, &mut conns);
    let start_ns = now_ns() + lead.as_nanos() as i64;
    let deadline_ns = start_ns + cfg.plan.duration_ns as i64 + GRACE.as_nanos() as i64;
    let events = start_all(&cfg, &conns, &ids, fourier.as_ref(), start_ns, deadline_ns);
    let stoppers: Vec<Client> = conns.iter().map(|c| c.client.clone()).collect();
    let mut g = Gather::new(conns.len(), deadline_ns, stoppers);
    g.gather(&mut cfg, &mut conns, events, start_ns).await;
    let plan = &cfg.plan;
    Ok(ControlSummary {
        command: format!("{:?}", plan.command).to_lowercase(),
        split: format!("{:?}", plan.split).to_lowercase(),
        start_ns,
        clock_corrected: cfg.correct,
        total: totals(conns.iter().map(|c| &c.result).zip(&g.last)),
        workers: conns.into_iter().map(|c| c.result).collect(),
        interrupted: g.interrupted,
        aborted: g.aborted,
    })
}

/// When a worker of the plan receives: every worker's stamp streams, and
/// each receiver's corrections for the others' clocks.
fn plan_receivers(cfg: &ControlConfig, conns: &mut [Conn]) {
    let entries = &cfg.plan.workers;
    if entries.iter().all(|w| w.rx.is_none()) {
        return;
    }
    let clocks: Vec<(String, i64, u64)> = conns
        .iter()
        .map(|c| {
            let r = &c.result;
            (r.name.clone(), r.offset_ns, r.offset_uncertainty_ns)
        })
        .collect();
    let per = crate::plan::STREAMS_PER_WORKER;
    for (i, c) in conns.iter_mut().enumerate() {
        c.result.streams_from = Some(i as u32 * per);
        let Some(rx) = entries.get(i).and_then(|w| w.rx.clone()) else {
            continue;
        };
        let (_, own, own_unc) = clocks[i];
        c.result.rx_clocks = clocks
            .iter()
            .enumerate()
            .map(|(k, (from, off, unc))| SenderClock {
                from: from.clone(),
                first_stream: k as u32 * per,
                last_stream: k as u32 * per + per - 1,
                ahead_ns: if cfg.correct && k != i { off - own } else { 0 },
                bound_ns: if k == i { 0 } else { unc + own_unc },
            })
            .collect();
        c.result.rx = Some(rx);
    }
}

/// Gives every worker its task, starting at `start_ns`; each worker's
/// updates arrive as (worker index, event) on the channel returned.
fn start_all(
    cfg: &ControlConfig,
    conns: &[Conn],
    ids: &[String],
    fourier: Option<&sluice_profile::Components>,
    start_ns: i64,
    deadline_ns: i64,
) -> tokio::sync::mpsc::Receiver<(usize, Event)> {
    let plan = &cfg.plan;
    let n = conns.len() as u32;
    let (tx, rx) = tokio::sync::mpsc::channel::<(usize, Event)>(256);
    for (i, c) in conns.iter().enumerate() {
        let mut job = cfg.job.clone();
        job.send.duration = Some(sluice_job::Nanos(plan.duration_ns));
        if c.result.streams_from.is_some() && job.send.rx_stamp.is_none() {
            job.send.rx_stamp = Some(sluice_job::RxStampMode::Replace);
        }
        let task = pb::Task {
            file_id: ids[i].clone(),
            job: Some(crate::jobwire::to_proto(&job)),
            port: c.result.port,
            also_ports: c.result.also_to.iter().map(|p| p.port).collect(),
            clock_corrections: cfg.correct && cfg.clock_every.is_some(),
            split: plan.split as i32,
            share_index: i as u32,
            share_count: n,
            start_ns,
            offset_ns: if cfg.correct { c.result.offset_ns } else { 0 },
            deadline_ns,
            streams_from: c.result.streams_from.unwrap_or(0),
            rx: c
                .result
                .rx
                .as_ref()
                .map(|r| format!("afpacket:{r}"))
                .unwrap_or_default(),
            rx_wait_ns: RX_WAIT.as_nanos() as u64,
            rx_clocks: c
                .result
                .rx_clocks
                .iter()
                .map(|s| pb::RxClock {
                    first: s.first_stream,
                    last: s.last_stream,
                    ahead_ns: s.ahead_ns,
                })
                .collect(),
            fourier: fourier.map(|c| crate::jobwire::fourier_to_proto(&c.share(i as u32, n))),
        };
        tokio::spawn(follow(i, c.client.clone(), task, tx.clone()));
    }
    rx
}

/// Runs `task` on one worker and forwards its updates until it finished
/// or failed (a broken stream is a failure).
async fn follow(
    i: usize,
    mut client: Client,
    task: pb::Task,
    tx: tokio::sync::mpsc::Sender<(usize, Event)>,
) {
    let mut stream = match client.run(task).await {
        Ok(s) => s.into_inner(),
        Err(e) => {
            let _ = tx.send((i, Event::failed(e.message()))).await;
            return;
        }
    };
    loop {
        let ev = match stream.next().await {
            Some(Ok(u)) => match u.kind {
                Some(update::Kind::Accepted(a)) => Event::Accepted(a.start_ns),
                Some(update::Kind::Stats(l)) => Event::Stats(l),
                Some(update::Kind::Finished(s)) => Event::Finished(s),
                Some(update::Kind::Failed(e)) => Event::failed(&e),
                Some(update::Kind::Refused(error)) => Event::Failed {
                    error,
                    refused: true,
                    lost: false,
                },
                None => continue,
            },
            // The connection broke mid-run (the worker killed, frozen
            // past the keep-alive, its network gone): lost.
            Some(Err(e)) => Event::lost(&format!("its connection broke: {}", e.message())),
            None => Event::lost("its stream ended without a summary"),
        };
        let end = matches!(ev, Event::Finished(_) | Event::Failed { .. });
        let _ = tx.send((i, ev)).await;
        if end {
            return;
        }
    }
}

/// The controller's side of a running job: which workers are done, their
/// last statistics, and whether the run was aborted or interrupted.
struct Gather {
    open: usize,
    done: Vec<bool>,
    last: Vec<Option<Counts>>,
    aborted: Option<String>,
    interrupted: bool,
    /// When every worker still silent is given up.
    give_up_ns: i64,
    stoppers: Vec<Client>,
}

impl Gather {
    fn new(workers: usize, deadline_ns: i64, stoppers: Vec<Client>) -> Self {
        Gather {
            open: workers,
            done: vec![false; workers],
            last: vec![None; workers],
            aborted: None,
            interrupted: false,
            give_up_ns: deadline_ns + LOST_AFTER.as_nanos() as i64,
            stoppers,
        }
    }

    /// Gathers until every worker finished, failed or was lost: a worker
    /// that says nothing by its deadline plus LOST_AFTER (frozen, or its
    /// network gone) is given up, and so is every one still silent
    /// STOP_WAIT after an interruption.
    async fn gather(
        &mut self,
        cfg: &mut ControlConfig,
        conns: &mut [Conn],
        mut events: tokio::sync::mpsc::Receiver<(usize, Event)>,
        start_ns: i64,
    ) {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut ticks = 0u64;
        // Clock checks: each worker's offset again, every `clock_every`.
        let every = cfg
            .clock_every
            .unwrap_or(Duration::from_secs(3600 * 24 * 365));
        let first = tokio::time::Instant::now() + every;
        let mut check = tokio::time::interval_at(first, every);
        let (ctx, mut crx) = tokio::sync::mpsc::channel::<(usize, i64, u64, Option<Duration>)>(64);
        // When each worker's last check came in (its drift is the
        // result's), and the largest error built up before a correction
        // landed.
        let mut last_at = vec![tokio::time::Instant::now(); conns.len()];
        let mut max_step: Vec<u64> = vec![0; conns.len()];
        let mut max_unc: Vec<u64> = vec![0; conns.len()];
        let correct = cfg.correct;
        while self.open > 0 {
            tokio::select! {
                ev = events.recv() => {
                    let Some((i, ev)) = ev else { break };
                    self.on_event(cfg, &mut conns[i].result, i, ev);
                }
                _ = check.tick(), if cfg.clock_every.is_some() => {
                    for (i, c) in conns.iter().enumerate() {
                        if self.done[i] {
                            continue;
                        }
                        let (mut client, tx) = (c.client.clone(), ctx.clone());
                        let base = c.result.offset_ns;
                        tokio::spawn(async move {
                            let m = tokio::time::timeout(
                                CALL_TIMEOUT,
                                measure_offset(&mut client, CHECK_ROUNDS),
                            );
                            let Ok(Ok((off, unc))) = m.await else { return };
                            // The job keeps to the controller's clock: its
                            // schedule moves by the drift measured now.
                            let mut landed = None;
                            if correct {
                                let sent = tokio::time::Instant::now();
                                let fix = client.correct(pb::Correction { shift_ns: off - base });
                                if let Ok(Ok(_)) = tokio::time::timeout(CALL_TIMEOUT, fix).await {
                                    landed = Some(sent.elapsed());
                                }
                            }
                            let _ = tx.send((i, off, unc, landed)).await;
                        });
                    }
                }
                m = crx.recv() => {
                    let Some((i, off, unc, landed)) = m else { continue };
                    let corrected = landed.is_some();
                    if self.done[i] {
                        continue;
                    }
                    let r = &mut conns[i].result;
                    let drift = off - r.offset_ns;
                    let prev = r.drift_ns.unwrap_or(0);
                    r.clock_checks += 1;
                    r.drift_ns = Some(drift);
                    r.drift_max_abs_ns = Some(r.drift_max_abs_ns.unwrap_or(0).max(drift.unsigned_abs()));
                    // What builds up between two checks, at the rate seen
                    // between them, until this correction landed (the
                    // first check's drift, since the start's offset, is
                    // before any correction: the error until it came).
                    let at = tokio::time::Instant::now();
                    if r.clock_checks > 1 {
                        let dt = at.duration_since(last_at[i]).as_secs_f64().max(1e-6);
                        let late = landed.unwrap_or_default().as_secs_f64();
                        let built = drift.abs_diff(prev) as f64 * (dt + late) / dt;
                        max_step[i] = max_step[i].max(built.ceil() as u64);
                    }
                    max_unc[i] = max_unc[i].max(unc);
                    last_at[i] = at;
                    if corrected {
                        r.drift_corrections += 1;
                        r.drift_residual_bound_ns =
                            Some(max_step[i] + max_unc[i] + r.offset_uncertainty_ns);
                    }
                    let c = ClockCheck {
                        t: (now_ns() - start_ns) as f64 / 1e9,
                        offset_ns: off,
                        uncertainty_ns: unc,
                        drift_ns: drift,
                        corrected,
                    };
                    (cfg.on_clock)(&r.name, r.port, &c);
                }
                _ = tick.tick() => {
                    if cfg.stop.load(Ordering::Relaxed) && !self.interrupted {
                        self.interrupted = true;
                        self.stop_all();
                        self.give_up_ns = self.give_up_ns.min(now_ns() + STOP_WAIT.as_nanos() as i64);
                    }
                    if now_ns() >= self.give_up_ns {
                        self.give_up(cfg.on_loss, conns);
                    }
                    ticks += 1;
                    if ticks.is_multiple_of(4) {
                        self.status(cfg, start_ns);
                    }
                }
            }
        }
    }

    /// One worker's update.
    fn on_event(&mut self, cfg: &mut ControlConfig, r: &mut WorkerResult, i: usize, ev: Event) {
        if self.done[i] {
            return; // given up already
        }
        match ev {
            Event::Accepted(t) => r.start_ns = Some(t - r.offset_ns),
            Event::Stats(line) => {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    (cfg.on_stats)(&r.name, r.port, &v);
                    // Interval lines make the status (a pass line counts
                    // one pass, a receiver's line counts what arrived).
                    let other = ["sluice.pass/1", "sluice.rx/1"];
                    if !other.iter().any(|k| v["schema"] == *k) {
                        let c = Counts::of(&v);
                        r.last_packets = Some(c.packets);
                        self.last[i] = Some(c);
                    }
                }
            }
            Event::Finished(s) => {
                r.summary = serde_json::from_str(&s).ok();
                self.done[i] = true;
                self.open -= 1;
            }
            Event::Failed {
                error,
                refused,
                lost,
            } => {
                r.refused = refused;
                r.lost = lost;
                self.done[i] = true;
                self.open -= 1;
                let e = if lost {
                    format!(
                        "worker '{}': lost: {error} (it last reported {})",
                        r.name,
                        last_word(r.last_packets)
                    )
                } else {
                    format!("worker '{}': {error}", r.name)
                };
                self.failed(r, e, cfg.on_loss);
            }
        }
    }

    /// Gives up every worker not done yet.
    fn give_up(&mut self, on_loss: OnLoss, conns: &mut [Conn]) {
        for (i, c) in conns.iter_mut().enumerate() {
            if self.done[i] {
                continue;
            }
            self.done[i] = true;
            self.open -= 1;
            let r = &mut c.result;
            r.lost = true;
            let why = if self.interrupted {
                format!("no summary within {} s of the stop", STOP_WAIT.as_secs())
            } else {
                format!("no summary by its deadline plus {} s", LOST_AFTER.as_secs())
            };
            let e = format!(
                "worker '{}': lost: {why} (it last reported {})",
                r.name,
                last_word(r.last_packets)
            );
            self.failed(r, e, on_loss);
        }
    }

    /// Records a worker's failure; when `on_loss` says so and it is the
    /// first with others still running, aborts them.
    fn failed(&mut self, r: &mut WorkerResult, e: String, on_loss: OnLoss) {
        // A broken stderr must not end the controller.
        let _ = writeln!(std::io::stderr(), "sluice control: {e}");
        r.error = Some(e.clone());
        if on_loss == OnLoss::Abort && self.aborted.is_none() && self.open > 0 {
            self.aborted = Some(e);
            self.stop_all();
        }
    }

    /// Asks every worker to stop (each within a second, in the background).
    fn stop_all(&self) {
        for s in &self.stoppers {
            let mut s = s.clone();
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), s.stop(pb::StopRequest {})).await;
            });
        }
    }

    /// The live totals, to `on_status`.
    fn status(&self, cfg: &mut ControlConfig, start_ns: i64) {
        let mut s = Status {
            t: (now_ns() - start_ns) as f64 / 1e9,
            workers_running: self.open,
            ..Status::default()
        };
        for c in self.last.iter().flatten() {
            s.packets += c.packets;
            s.pps += c.pps.unwrap_or(0.0);
            s.bps += c.bps.unwrap_or(0.0);
            if let Some(p) = c.p99_ns() {
                s.eps_p99_ns = Some(s.eps_p99_ns.unwrap_or(0).max(p));
            }
        }
        if s.t > 0.0 {
            (cfg.on_status)(&s);
        }
    }
}

/// What the controller sums of a worker's summary (`sluice.summary`) or
/// statistics line (`sluice.interval`), read typed: the fields sluice
/// writes in both (a summary's span is `duration_s`, a line's time `t`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Counts {
    pub packets: u64,
    pub frame_bytes: u64,
    pub late: u64,
    pub dropped: u64,
    pub pps: Option<f64>,
    pub bps: Option<f64>,
    pub duration_s: Option<f64>,
    pub t: Option<f64>,
    pub eps: Option<Eps>,
}

/// A send-time error distribution's percentiles.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Eps {
    pub percentiles: sluice_core::Quantiles,
}

impl Counts {
    /// The counts of a worker's document (zero where it has none).
    pub fn of(v: &Value) -> Counts {
        Counts::deserialize(v).unwrap_or_default()
    }

    /// ε's p99, where the run measured it.
    pub fn p99_ns(&self) -> Option<u64> {
        self.eps.as_ref().map(|e| e.percentiles.p99_ns)
    }
}

/// What a lost worker last said, for its error.
fn last_word(packets: Option<u64>) -> String {
    packets.map_or("no packets".into(), |p| {
        format!("at least {p} packets sent")
    })
}

/// Sums over the workers, each with its last interval line: a finished
/// worker's summary, or the last line of one that did not finish (its
/// counts a lower bound, and the totals marked `at_least`).
fn totals<'a>(workers: impl Iterator<Item = (&'a WorkerResult, &'a Option<Counts>)>) -> Totals {
    let mut total = Totals::default();
    let mut end_s: f64 = 0.0;
    for (r, last) in workers {
        total.workers += 1;
        total.lost += usize::from(r.lost);
        let (c, end) = match (&r.summary, last) {
            (Some(s), _) => {
                total.finished += 1;
                let c = Counts::of(s);
                let end = c.duration_s;
                (c, end)
            }
            (None, _) if r.refused => continue,
            (None, last) => {
                total.at_least = true;
                match last {
                    Some(l) => (l.clone(), l.t),
                    None => continue,
                }
            }
        };
        total.packets += c.packets;
        total.frame_bytes += c.frame_bytes;
        total.late += c.late;
        total.dropped += c.dropped;
        end_s = end_s.max(end.unwrap_or(0.0));
        if let Some(p) = c.p99_ns() {
            total.eps_p99_max_ns = Some(total.eps_p99_max_ns.unwrap_or(0).max(p));
        }
    }
    if end_s >= 1e-3 && total.packets >= 2 {
        total.pps = Some(total.packets as f64 / end_s);
        total.bps = Some(total.frame_bytes as f64 * 8.0 / end_s);
    }
    total
}

enum Event {
    Accepted(i64),
    Stats(String),
    Finished(String),
    /// The job failed or the worker was lost; `refused`: the job's input
    /// or options were refused, nothing was sent.
    /// `lost`: the connection broke before a summary came (the worker
    /// killed or frozen, its network gone), not the job failing.
    Failed {
        error: String,
        refused: bool,
        lost: bool,
    },
}

impl Event {
    fn failed(error: &str) -> Event {
        Event::Failed {
            error: error.to_string(),
            refused: false,
            lost: false,
        }
    }

    fn lost(error: &str) -> Event {
        Event::Failed {
            error: error.to_string(),
            refused: false,
            lost: true,
        }
    }
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
