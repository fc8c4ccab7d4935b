//! `sluice worker`: serves the control plane and runs each task as a
//! `sluice` child process (the same binary), so a distributed job is
//! exactly the job one host would run, started at the agreed instant with
//! `--start-at` and given its part with `--share`. The child's
//! `--stats-json` lines are streamed back as they come; its
//! `--summary-json` ends the stream. A task carries a deadline: the worker
//! stops the child at it whether or not a controller is still there.

use crate::pb::worker_server::{Worker, WorkerServer};
use crate::pb::{self, update};
use crate::{command_words, now_ns, split_flag};
use anyhow::{anyhow, Context, Result};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

/// How `sluice worker` runs.
pub struct WorkerConfig {
    pub listen: SocketAddr,
    /// Key directory (`sluice keygen`); None: plain TCP on loopback only.
    pub tls: Option<PathBuf>,
    /// Test only: this worker's clock reads this much ahead of the host's.
    pub clock_offset_ns: i64,
    /// The sluice binary jobs run with.
    pub exe: PathBuf,
    /// Largest job file accepted.
    pub max_upload: u64,
    /// The host's clock service to report at registration.
    pub clock_service: crate::clocksvc::ClockServiceSpec,
}

/// Time after the deadline's SIGTERM before the child is killed.
const KILL_AFTER: Duration = Duration::from_secs(2);

struct Job {
    pid: u32,
}

struct State {
    dir: tempfile::TempDir,
    files: HashMap<String, PathBuf>,
    ports: Vec<pb::GlobalPort>,
    name: String,
    job: Option<Job>,
    next: u64,
}

struct Service {
    cfg: Arc<WorkerConfig>,
    state: Arc<Mutex<State>>,
}

/// A broken stderr (its reader gone) loses the line, never the worker.
fn log(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "sluice worker: {msg}");
}

impl Service {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data: keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Interfaces this host can send on: every one in /sys/class/net.
fn ports() -> Vec<pb::Port> {
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
        out.push(pb::Port {
            sink: format!("afpacket:{n}"),
            mtu: read("mtu").parse().unwrap_or(0),
            mac: read("address"),
            up: read("operstate") == "up" || read("flags").ends_with('1') || read("carrier") == "1",
        });
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
        let name = req.into_inner().name;
        log(&format!("registered by a controller as '{name}'"));
        self.lock().name = name;
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
        }))
    }

    type ClockStream = Pin<Box<dyn Stream<Item = Result<pb::ClockReply, Status>> + Send>>;

    async fn clock(
        &self,
        req: Request<Streaming<pb::ClockRequest>>,
    ) -> Result<Response<Self::ClockStream>, Status> {
        let shift = self.cfg.clock_offset_ns;
        let replies = req.into_inner().map(move |r| {
            r.map(|r| {
                let t2 = now_ns() + shift;
                pb::ClockReply {
                    t1_ns: r.t1_ns,
                    t2_ns: t2,
                    t3_ns: now_ns() + shift,
                }
            })
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn publish_ports(&self, req: Request<pb::PortMap>) -> Result<Response<pb::Ack>, Status> {
        let map = req.into_inner().ports;
        let mut st = self.lock();
        // This worker's entries name sinks it announced, nothing else: a
        // controller never makes a worker write a file (`pcap:PATH`).
        let own = ports();
        for p in map.iter().filter(|p| p.worker == st.name) {
            if !own.iter().any(|o| o.sink == p.sink) {
                return Err(Status::invalid_argument(format!(
                    "port {}: '{}' is not a sink this worker announced (null or afpacket: \
                     one of its interfaces)",
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
        let mut chunks = req.into_inner();
        let (path, id) = {
            let mut st = self.lock();
            st.next += 1;
            let id = format!("job-{}", st.next);
            (st.dir.path().join(&id), id)
        };
        let mut file: Option<(tokio::fs::File, PathBuf)> = None;
        let mut total = 0u64;
        while let Some(c) = chunks.next().await {
            let c = c?;
            if file.is_none() {
                // The extension tells the job what the file is.
                let ext = Path::new(&c.name)
                    .extension()
                    .map(|e| e.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let p = path.with_extension(ext);
                let f = tokio::fs::File::create(&p)
                    .await
                    .map_err(|e| Status::internal(format!("{}: {e}", p.display())))?;
                file = Some((f, p));
            }
            total += c.data.len() as u64;
            if total > self.cfg.max_upload {
                return Err(Status::resource_exhausted(format!(
                    "the job file is over {} bytes",
                    self.cfg.max_upload
                )));
            }
            let (f, _) = file.as_mut().expect("opened above");
            tokio::io::AsyncWriteExt::write_all(f, &c.data)
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        let Some((f, p)) = file else {
            return Err(Status::invalid_argument("an empty upload"));
        };
        f.sync_all()
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        self.lock().files.insert(id.clone(), p);
        Ok(Response::new(pb::UploadReply { id, bytes: total }))
    }

    type RunStream = UpdateStream;

    async fn run(&self, req: Request<pb::Task>) -> Result<Response<UpdateStream>, Status> {
        let task = req.into_inner();
        let file_id = task.file_id.clone();
        let (file, sink, summary, name) = {
            let st = self.lock();
            if st.job.is_some() {
                return Err(Status::failed_precondition("a task is already running"));
            }
            let file =
                st.files.get(&task.file_id).cloned().ok_or_else(|| {
                    Status::invalid_argument(format!("no file '{}'", task.file_id))
                })?;
            let sink = st
                .ports
                .iter()
                .find(|p| p.id == task.port)
                .map(|p| p.sink.clone())
                .ok_or_else(|| {
                    Status::invalid_argument(format!("port {} is not in the port map", task.port))
                })?;
            let summary = st.dir.path().join(format!("summary-{}.json", st.next));
            (file, sink, summary, st.name.clone())
        };
        let words =
            command_words(task.command()).ok_or_else(|| Status::invalid_argument("no command"))?;
        // Only sinks this worker announced, only options that name no file.
        if !ports().iter().any(|p| p.sink == sink) {
            return Err(Status::invalid_argument(
                "the task's port is not a sink this worker announced",
            ));
        }
        crate::jobargs::check(task.command(), &task.args).map_err(Status::invalid_argument)?;
        // Start and deadline on the host's clock: the controller's instant,
        // moved by this worker's measured offset, less the test shift.
        let to_host = |t: i64| t + task.offset_ns - self.cfg.clock_offset_ns;
        let start = to_host(task.start_ns);
        let deadline = to_host(task.deadline_ns);
        if start < now_ns() {
            return Err(Status::invalid_argument("the start time has passed"));
        }
        let mut args: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        args.push(file.display().to_string());
        args.extend([
            "--to".into(),
            sink,
            "--start-at".into(),
            start.to_string(),
            "-q".into(),
            "--stats-json".into(),
            "-".into(),
            "--summary-json".into(),
            summary.display().to_string(),
        ]);
        if task.share_count > 1 {
            args.push("--share".into());
            args.push(format!("{}/{}", task.share_index + 1, task.share_count));
            if let Some(by) = split_flag(task.split()) {
                args.push("--share-by".into());
                args.push(by.into());
            }
        }
        args.extend(task.args.iter().cloned());
        log(&format!("'{name}': starting {} at {start}", args.join(" ")));
        let mut cmd = tokio::process::Command::new(&self.cfg.exe);
        cmd.args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // A worker that dies takes its job with it (the job stops cleanly
        // on SIGTERM, summary flushed).
        #[allow(unsafe_code)]
        // SAFETY: runs in the forked child before exec; prctl is
        // async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Status::internal(format!("{}: {e}", self.cfg.exe.display())))?;
        let pid = child.id().unwrap_or(0);
        self.lock().job = Some(Job { pid });
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let _ = tx
            .send(Ok(pb::Update {
                kind: Some(update::Kind::Accepted(pb::Accepted {
                    start_ns: start + self.cfg.clock_offset_ns,
                })),
            }))
            .await;
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let state = self.state.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            let err_text = tokio::spawn(async move {
                let mut s = String::new();
                let _ = stderr.read_to_string(&mut s).await;
                s
            });
            let until = Duration::from_nanos(deadline.saturating_sub(now_ns()).max(0) as u64);
            let deadline_at = tokio::time::Instant::now() + until;
            let mut stopped = false;
            loop {
                tokio::select! {
                    line = lines.next_line() => match line {
                        Ok(Some(l)) => {
                            // A controller that went away does not stop the job:
                            // the deadline does.
                            let _ = tx.send(Ok(pb::Update { kind: Some(update::Kind::Stats(l)) })).await;
                        }
                        _ => break,
                    },
                    _ = tokio::time::sleep_until(deadline_at), if !stopped => {
                        log(&format!("'{name}': deadline reached: stopping the job"));
                        signal(pid, libc::SIGTERM);
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
            let err = err_text.await.unwrap_or_default();
            let text = std::fs::read_to_string(&summary).ok();
            let kind = match (text, status) {
                (Some(t), _) => update::Kind::Finished(t),
                // sluice exits 2 on bad input, before it sends anything.
                (None, Some(s)) if s.code() == Some(2) => update::Kind::Refused(
                    // The cause, without clap's pointer to --help (the
                    // controller's user did not type this command line).
                    err.lines()
                        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                (None, s) => update::Kind::Failed(format!(
                    "{} ({})",
                    err.trim(),
                    s.map_or("killed".into(), |s| s.to_string())
                )),
            };
            let _ = tx.send(Ok(pb::Update { kind: Some(kind) })).await;
            // An upload serves one task: a long-lived worker keeps no old
            // inputs, and no later task can read this task's summary.
            let _ = std::fs::remove_file(&summary);
            let _ = std::fs::remove_file(&file);
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            st.files.remove(&file_id);
            st.job = None;
            log(&format!("'{name}': job ended"));
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn stop(&self, _req: Request<pb::StopRequest>) -> Result<Response<pb::Ack>, Status> {
        if let Some(j) = &self.lock().job {
            log("stop asked: stopping the job");
            signal(j.pid, libc::SIGTERM);
        }
        Ok(Response::new(pb::Ack {}))
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    if pid == 0 {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on a child we spawned and have not reaped; a stale
    // pid at worst gets a signal refused (ESRCH), never memory unsafety.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Serves until the process is stopped.
pub async fn serve(cfg: WorkerConfig) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    let tls = match &cfg.tls {
        Some(dir) => Some(crate::tls::server_config(dir)?),
        None => {
            if !cfg.listen.ip().is_loopback() {
                return Err(anyhow!(
                    "--listen {}: without --tls a worker serves loopback only (anyone on the network could make it send)",
                    cfg.listen
                ));
            }
            None
        }
    };
    let cfg = Arc::new(cfg);
    let svc = Service {
        cfg: cfg.clone(),
        state: Arc::new(Mutex::new(State {
            dir: tempfile::Builder::new()
                .prefix("sluice-worker-")
                .tempdir()
                .context("a working directory")?,
            files: HashMap::new(),
            ports: Vec::new(),
            name: String::new(),
            job: None,
            next: 0,
        })),
    };
    let server = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(WorkerServer::new(svc).max_decoding_message_size(16 << 20));
    match tls {
        None => {
            log(&format!(
                "listening on {} WITHOUT authentication (no --tls): loopback only",
                cfg.listen
            ));
            server
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await?;
        }
        Some(tls) => {
            log(&format!(
                "listening on {} (TLS, controllers must present a certificate of this CA)",
                cfg.listen
            ));
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            let (tx, rx) = tokio::sync::mpsc::channel(16);
            tokio::spawn(async move {
                loop {
                    let Ok((sock, peer)) = listener.accept().await else {
                        continue;
                    };
                    // Clock exchanges are single small messages: no Nagle.
                    let _ = sock.set_nodelay(true);
                    let (acceptor, tx) = (acceptor.clone(), tx.clone());
                    tokio::spawn(async move {
                        match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(sock))
                            .await
                        {
                            Ok(Ok(s)) => {
                                let _ = tx.send(Ok::<_, std::io::Error>(s)).await;
                            }
                            Ok(Err(e)) => log(&format!("refused {peer}: {e}")),
                            Err(_) => log(&format!("refused {peer}: no TLS handshake within 10 s")),
                        }
                    });
                }
            });
            server.serve_with_incoming(ReceiverStream::new(rx)).await?;
        }
    }
    Ok(())
}
