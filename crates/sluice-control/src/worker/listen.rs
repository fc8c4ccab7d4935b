//! Serving: the unix socket (peers' uids checked) or TCP with TLS
//! (handshakes capped in all and per address), idle leases swept.

use super::config::{
    WorkerConfig, WorkerListen, HANDSHAKES, HANDSHAKES_PER_PEER, HANDSHAKE_TIMEOUT,
};
use super::state::{lock, log, Service, State};
use crate::error::{input, Context, Result};
use crate::now_ns;
use crate::pb::worker_server::WorkerServer;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_stream::wrappers::ReceiverStream;

/// Log lines about refused connections: at most a few per period, then
/// a count, so a flood cannot fill the log.
pub(crate) struct Refusals {
    pub(crate) window: Instant,
    pub(crate) lines: u32,
    pub(crate) hidden: u64,
}

impl Refusals {
    pub(crate) const LINES: u32 = 10;
    pub(crate) const PERIOD: Duration = Duration::from_secs(10);

    /// A new period, nothing logged in it yet.
    pub(crate) fn new() -> Refusals {
        Refusals {
            window: Instant::now(),
            lines: 0,
            hidden: 0,
        }
    }

    pub(crate) fn log(state: &Mutex<Refusals>, line: impl FnOnce() -> String) {
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
pub(crate) async fn accept_failed(e: &std::io::Error, refusals: &Mutex<Refusals>) {
    Refusals::log(refusals, || {
        format!("accepting a connection: {e} (retrying in 100 ms)")
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Removes the worker's unix socket when serving ends.
pub(crate) struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One connection's share of the handshake caps, given back on drop.
pub(crate) struct Slot {
    pub(crate) _all: tokio::sync::OwnedSemaphorePermit,
    pub(crate) peers: Arc<Mutex<HashMap<std::net::IpAddr, usize>>>,
    pub(crate) ip: std::net::IpAddr,
}

impl Slot {
    /// A slot for a handshake from `ip`, if both caps allow one.
    pub(crate) fn take(
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

/// Ends leases nobody used for `idle`, with their uploads.
pub(crate) fn sweep_idle_leases(sweep: Arc<Mutex<State>>, idle: Duration) {
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
pub(crate) fn accept_unix(
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
pub(crate) fn accept_tls(
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
