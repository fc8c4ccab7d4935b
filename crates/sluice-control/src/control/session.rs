//! The controller's session with its workers: connect, register (a
//! lease each), publish the port map, measure the clocks, upload the
//! job's files, release.

use super::config::{
    Client, Conn, ControlConfig, SessionKey, CALL_TIMEOUT, CHUNK, CONNECT_TIMEOUT,
};
use super::results::{network_failure, WorkerResult};
use crate::error::{describe, input, Context, ControlError, Result};
use crate::now_ns;
use crate::pb::worker_client::WorkerClient;
use crate::pb::{self};
use crate::plan::Plan;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

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
pub(crate) fn dial_failure(e: tonic::transport::Error) -> ControlError {
    if network_failure(&e) {
        ControlError::Environment(format!("unreachable: {}", describe(&e)))
    } else {
        ControlError::Input(describe(&e))
    }
}

/// HTTP/2 pings every 5 s, idle or not, answered within 5 s: how a peer
/// that froze or vanished mid-run is found.
pub(crate) fn keep_alive(ep: Endpoint) -> Endpoint {
    ep.http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(5))
        .keep_alive_while_idle(true)
}

/// `f`, refused with a timeout error naming `what` after `limit`.
pub(crate) async fn within<T>(
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
pub(crate) async fn release_all(conns: &mut [Conn]) {
    for c in conns {
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            c.client.release(pb::ReleaseRequest {}),
        )
        .await;
    }
}

/// Waits for the stop flag (polled: the signal handler only sets it).
pub(crate) async fn stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `path` to one worker, read from disk in CHUNK pieces as the
/// stream drains: the controller holds a few chunks, never the whole file
/// (a trace may be gigabytes), once per worker.
pub(crate) async fn upload(client: &mut Client, path: &Path, worker: &str) -> Result<String> {
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
pub(crate) async fn prepare(
    cfg: &ControlConfig,
    conns: &mut Vec<Conn>,
) -> Result<(Vec<String>, u64)> {
    register_all(cfg, conns).await?;
    publish_ports(conns).await?;
    let max_rtt = measure_clocks(cfg, conns).await?;
    let ids = upload_all(&cfg.plan, conns).await?;
    Ok((ids, max_rtt))
}

/// Connects to one worker and takes its lease.
pub(crate) async fn register(
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
pub(crate) fn same_version(name: &str, version: &str) -> Result<()> {
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
pub(crate) async fn register_all(cfg: &ControlConfig, conns: &mut Vec<Conn>) -> Result<()> {
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
pub(crate) async fn publish_ports(conns: &mut [Conn]) -> Result<()> {
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
pub(crate) async fn measure_clocks(cfg: &ControlConfig, conns: &mut [Conn]) -> Result<u64> {
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
pub(crate) async fn upload_all(plan: &Plan, conns: &mut [Conn]) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for c in conns.iter_mut() {
        ids.push(upload(&mut c.client, &plan.file, &c.result.name).await?);
        for f in &plan.files {
            upload(&mut c.client, f, &c.result.name).await?;
        }
    }
    Ok(ids)
}
