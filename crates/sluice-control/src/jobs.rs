//! The worker's `Jobs` service: local jobs run in the worker's process
//! ([`InProcess`](crate::inprocess::InProcess)), several at once on different ports, watched as they
//! run and changed live (rate, ramp, pause, resume, stop).
//!
//! Bounds: at most [`MAX_RUNNING`] jobs run and [`KEEP_ENDED`] ended ones
//! are remembered; each job has at most [`MAX_WATCHERS`] watchers, each
//! behind by at most [`WATCH_LAG`] lines (a slower one skips lines, never
//! the end); uploads waiting for a job share the worker's `--max-upload`
//! and go when unused for its lease idle time.

use crate::inprocess::InProcess;
use crate::local::{change_of, Event, Events};
use crate::pb::jobs_server::Jobs;
use crate::pb::{self, update};
use crate::shown::shown;
use sluice_engine::LiveRate;
use sluice_job::rate::Nominal;
use sluice_job::remote::Receive;
use sluice_job::{Work, WorkerJob};
use sluice_sys::secret::remove_in_own_dir;
use sluice_sys::secret::NewFile;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// Jobs running at once.
pub const MAX_RUNNING: usize = 16;
/// Ended jobs remembered (for List and a late Watch).
pub const KEEP_ENDED: usize = 32;
/// Watchers of one job at once.
pub const MAX_WATCHERS: usize = 16;
/// Lines a watcher may fall behind before it skips.
pub const WATCH_LAG: usize = 64;
/// Longest job name.
const MAX_NAME: usize = 64;

type UpdateStream = Pin<Box<dyn Stream<Item = Result<pb::Update, Status>> + Send>>;

/// One job, running or ended.
struct LocalJob {
    name: String,
    command: &'static str,
    to: String,
    live: Arc<LiveRate>,
    nominal: Nominal,
    stop: Arc<AtomicBool>,
    packets: u64,
    pps: f64,
    eps: Option<(u64, u64)>,
    /// Received, lost, the latest latency p50.
    rx: (u64, u64, Option<u64>),
    changed_at: Option<u64>,
    /// "running" until the end.
    state: &'static str,
    error: String,
    /// Each interval's line, and the end.
    lines: tokio::sync::broadcast::Sender<pb::Update>,
    /// The end, once there.
    end: Option<pb::Update>,
    /// Its input (an upload), deleted at the end.
    input: PathBuf,
}

/// An upload waiting for a job.
struct Waiting {
    path: PathBuf,
    bytes: u64,
    since: Instant,
}

#[derive(Default)]
struct State {
    jobs: BTreeMap<u64, LocalJob>,
    next: u64,
    uploads: HashMap<String, Waiting>,
    next_upload: u64,
}

impl State {
    fn running(&self) -> impl Iterator<Item = &LocalJob> {
        self.jobs.values().filter(|j| j.state == "running")
    }

    /// Forgets the oldest ended jobs beyond [`KEEP_ENDED`].
    fn forget_ended(&mut self) {
        let ended: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.state != "running")
            .map(|(id, _)| *id)
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(KEEP_ENDED)) {
            self.jobs.remove(id);
        }
    }

    fn upload_bytes(&self) -> u64 {
        self.uploads.values().map(|u| u.bytes).sum()
    }
}

pub struct JobsService {
    runner: Arc<InProcess>,
    state: Arc<Mutex<State>>,
    /// Where uploads go (the worker's private directory).
    dir: PathBuf,
    max_upload: u64,
    /// The uploads being received, reserved chunk by chunk.
    in_flight: crate::reserve::InFlight,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl JobsService {
    /// The service, its uploads in `dir` (private to this user).
    pub fn new(
        runner: Arc<InProcess>,
        dir: PathBuf,
        max_upload: u64,
        idle: Duration,
    ) -> std::io::Result<JobsService> {
        std::fs::create_dir_all(&dir)?;
        let state = Arc::new(Mutex::new(State::default()));
        sweep_unused_uploads(state.clone(), idle);
        Ok(JobsService {
            runner,
            state,
            dir,
            max_upload,
            in_flight: Default::default(),
        })
    }

    fn info(id: u64, j: &LocalJob) -> pb::JobInfo {
        let scale = j.live.scale();
        pb::JobInfo {
            id,
            name: j.name.clone(),
            state: j.state.into(),
            command: j.command.into(),
            to: j.to.clone(),
            scale,
            rate: j.nominal.own(scale),
            unit: j.nominal.unit().into(),
            paused: j.live.paused(),
            elapsed_s: j.live.elapsed().map_or(0.0, |e| e.as_secs_f64()),
            packets: j.packets,
            pps: j.pps,
            changed_at_ns: j.changed_at,
            error: j.error.clone(),
            eps_p50_ns: j.eps.map(|e| e.0),
            eps_p99_ns: j.eps.map(|e| e.1),
            rx_received: j.rx.0,
            rx_lost: j.rx.1,
            rx_latency_p50_ns: j.rx.2,
        }
    }

    fn job_info(&self, id: u64) -> Result<pb::JobInfo, Status> {
        let st = lock(&self.state);
        let j = st
            .jobs
            .get(&id)
            .ok_or_else(|| Status::not_found(format!("no job {id}")))?;
        Ok(Self::info(id, j))
    }

    /// Where a job's events go: its record, and its watchers.
    fn events(&self, id: u64) -> Events {
        let state = self.state.clone();
        Arc::new(move |e: Event| {
            let mut st = lock(&state);
            let Some(j) = st.jobs.get_mut(&id) else {
                return;
            };
            let kind = match e {
                Event::Stats {
                    line,
                    packets,
                    pps,
                    eps,
                } => {
                    j.packets = packets;
                    j.pps = pps;
                    j.eps = eps;
                    update::Kind::Stats(line)
                }
                Event::Rx {
                    line,
                    received,
                    lost,
                    latency_p50_ns,
                } => {
                    j.rx = (received, lost, latency_p50_ns);
                    update::Kind::Stats(line)
                }
                Event::Finished { summary, stopped } => {
                    j.state = if stopped { "stopped" } else { "finished" };
                    update::Kind::Finished(summary)
                }
                Event::Failed(e) => {
                    j.state = "failed";
                    j.error = e.clone();
                    update::Kind::Failed(e)
                }
            };
            let u = pb::Update { kind: Some(kind) };
            let ended = j.state != "running";
            if ended {
                j.end = Some(u.clone());
                remove_in_own_dir(&j.input);
                log(&format!("job {id} '{}': {}", j.name, j.state));
            }
            // No watcher: nothing to do.
            let _ = j.lines.send(u);
            // Only an end can put the ended jobs over their bound.
            if ended {
                st.forget_ended();
            }
        })
    }
}

/// A broken stderr loses the line, never the worker.
fn log(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "sluice worker: {msg}");
}

fn command_of(work: &Work) -> &'static str {
    match work {
        Work::Replay(_) => "replay",
        Work::Flows(_) => "flows",
        Work::Series { .. } => "series",
        Work::Profile(_) => "profile",
    }
}

#[tonic::async_trait]
impl Jobs for JobsService {
    async fn upload(
        &self,
        req: Request<Streaming<pb::FileChunk>>,
    ) -> Result<Response<pb::UploadReply>, Status> {
        let mut reserved = self.in_flight.reserve();
        let mut chunks = req.into_inner();
        let open = |name: &str| {
            let id = {
                let mut st = lock(&self.state);
                st.next_upload += 1;
                st.next_upload
            };
            // Each upload in a directory of its own, under its name (the
            // job reads its extension).
            NewFile::in_own_dir(&self.dir.join(format!("u{id}")), name)
                .map_err(|e| Status::internal(format!("upload '{}': {e}", shown(name))))
        };
        let admit = |name: &str, bytes: u64| {
            let kept = lock(&self.state).upload_bytes();
            if reserved.grow(bytes, kept, self.max_upload) {
                return Ok(());
            }
            Err(Status::resource_exhausted(format!(
                "upload '{}': the uploads waiting for jobs are over --max-upload {} bytes",
                shown(name),
                self.max_upload
            )))
        };
        let (_, path, total) = crate::upload::receive(&mut chunks, open, admit).await?;
        let id = path
            .parent()
            .and_then(|d| d.file_name())
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        lock(&self.state).uploads.insert(
            id.clone(),
            Waiting {
                path,
                bytes: total,
                since: Instant::now(),
            },
        );
        Ok(Response::new(pb::UploadReply { id, bytes: total }))
    }

    async fn submit(&self, req: Request<pb::Submission>) -> Result<Response<pb::JobInfo>, Status> {
        let sub = req.into_inner();
        if sub.name.chars().count() > MAX_NAME || sub.name.chars().any(crate::shown::hides) {
            return Err(Status::invalid_argument(format!(
                "name: at most {MAX_NAME} characters, none a control or format character \
                 (bidi overrides, zero-width characters)"
            )));
        }
        let job = sub
            .job
            .ok_or_else(|| Status::invalid_argument("the submission has no job"))?;
        let job = crate::jobwire::from_proto(&job)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        if let Work::Series { map: Some(_), .. } = &job.work {
            return Err(Status::invalid_argument(
                "a series map: not taken by local jobs yet (one upload per job)",
            ));
        }
        let announced = crate::ports::ports();
        if !announced.iter().any(|p| p.sink == sub.to) {
            return Err(Status::invalid_argument(format!(
                "to '{}': not a port this worker announced",
                shown(&sub.to)
            )));
        }
        let to: sluice_job::SinkSpec = sub
            .to
            .parse()
            .map_err(|e| Status::invalid_argument(format!("to '{}': {e}", shown(&sub.to))))?;
        let receive = if sub.rx.is_empty() {
            None
        } else {
            let iface = sub.rx.strip_prefix("afpacket:").unwrap_or("");
            if iface.is_empty() || !announced.iter().any(|p| p.sink == sub.rx) {
                return Err(Status::invalid_argument(format!(
                    "rx '{}': not an afpacket port this worker announced",
                    shown(&sub.rx)
                )));
            }
            Some(Receive {
                iface: iface.to_string(),
                wait: sluice_core::Nanos::from_millis(200),
                clocks: Vec::new(),
            })
        };
        let (id, input) = {
            let mut st = lock(&self.state);
            if st.running().count() >= MAX_RUNNING {
                return Err(Status::resource_exhausted(format!(
                    "{MAX_RUNNING} jobs run already"
                )));
            }
            if sub.to != "null" {
                if let Some(j) = st.running().find(|j| j.to == sub.to) {
                    return Err(Status::failed_precondition(format!(
                        "{} is taken by the running job '{}'",
                        sub.to, j.name
                    )));
                }
            }
            let up = st.uploads.remove(&sub.file_id).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "file_id '{}': no upload waiting by that id",
                    shown(&sub.file_id)
                ))
            })?;
            st.next += 1;
            (st.next, up.path)
        };
        let command = command_of(&job.work);
        let name = if sub.name.is_empty() {
            format!("{command}-{id}")
        } else {
            sub.name.clone()
        };
        let work = WorkerJob {
            job,
            input: input.clone(),
            map: None,
            to,
            also_to: Vec::new(),
            start_at: sluice_sys::clock::realtime_ns(),
            share: None,
            share_by: Default::default(),
            fourier: None,
            receive,
            streams_from: 0,
            clock_shift: 0,
            clock_corrections: false,
            clock_drift_ppm: 0.0,
            summary_json: PathBuf::new(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (lines, _) = tokio::sync::broadcast::channel(WATCH_LAG);
        // The job is known before it starts: its first events find it.
        let placeholder = LiveRate::new(sluice_pace::Timeline::constant(1.0));
        lock(&self.state).jobs.insert(
            id,
            LocalJob {
                name: name.clone(),
                command,
                to: sub.to.clone(),
                live: placeholder,
                nominal: Nominal::None("a job not started"),
                stop: stop.clone(),
                packets: 0,
                pps: 0.0,
                eps: None,
                rx: (0, 0, None),
                changed_at: None,
                state: "running",
                error: String::new(),
                lines,
                end: None,
                input: input.clone(),
            },
        );
        let runner = self.runner.clone();
        let events = self.events(id);
        let paused = sub.paused;
        let started = tokio::task::spawn_blocking(move || runner.start(work, paused, stop, events))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let mut st = lock(&self.state);
        match started {
            Ok(s) => {
                let j = st.jobs.get_mut(&id).expect("inserted above");
                j.live = s.live;
                j.nominal = s.nominal;
                log(&format!(
                    "job {id} '{name}': {command} to {} started",
                    sub.to
                ));
                Ok(Response::new(Self::info(id, j)))
            }
            Err(refusal) => {
                st.jobs.remove(&id);
                remove_in_own_dir(&input);
                Err(Status::invalid_argument(refusal))
            }
        }
    }

    async fn list(&self, _: Request<pb::ListRequest>) -> Result<Response<pb::JobList>, Status> {
        let st = lock(&self.state);
        Ok(Response::new(pb::JobList {
            jobs: st.jobs.iter().map(|(id, j)| Self::info(*id, j)).collect(),
        }))
    }

    type WatchStream = UpdateStream;

    async fn watch(&self, req: Request<pb::JobRef>) -> Result<Response<UpdateStream>, Status> {
        let id = req.into_inner().id;
        let (mut rx, end) = {
            let st = lock(&self.state);
            let j = st
                .jobs
                .get(&id)
                .ok_or_else(|| Status::not_found(format!("no job {id}")))?;
            if j.end.is_none() && j.lines.receiver_count() >= MAX_WATCHERS {
                return Err(Status::resource_exhausted(format!(
                    "job {id} has {MAX_WATCHERS} watchers already"
                )));
            }
            (j.lines.subscribe(), j.end.clone())
        };
        let (tx, out) = tokio::sync::mpsc::channel(8);
        tokio::spawn(async move {
            if let Some(end) = end {
                let _ = tx.send(Ok(end)).await;
                return;
            }
            loop {
                match rx.recv().await {
                    Ok(u) => {
                        let last = !matches!(u.kind, Some(update::Kind::Stats(_)));
                        if tx.send(Ok(u)).await.is_err() || last {
                            return;
                        }
                    }
                    // Behind: the lines skipped are gone; the end is not.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(out))))
    }

    async fn change(
        &self,
        req: Request<pb::ChangeRequest>,
    ) -> Result<Response<pb::JobInfo>, Status> {
        let req = req.into_inner();
        let c = req
            .change
            .ok_or_else(|| Status::invalid_argument("no change given"))?;
        let mut st = lock(&self.state);
        let j = st
            .jobs
            .get_mut(&req.id)
            .ok_or_else(|| Status::not_found(format!("no job {}", req.id)))?;
        if j.state != "running" {
            return Err(Status::failed_precondition(format!(
                "job {} has ended ({})",
                req.id, j.state
            )));
        }
        let change = change_of(&j.nominal, &c).map_err(Status::invalid_argument)?;
        let at = crate::local::change_at(req.at_ns).map_err(Status::invalid_argument)?;
        let applied = j
            .live
            .change(change, at)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        j.changed_at = Some(applied.at.0);
        log(&format!(
            "job {} '{}': {} at {}",
            req.id,
            shown(&j.name),
            crate::local::change_line(&c),
            applied.at
        ));
        Ok(Response::new(Self::info(req.id, j)))
    }

    async fn stop(&self, req: Request<pb::JobRef>) -> Result<Response<pb::JobInfo>, Status> {
        let id = req.into_inner().id;
        {
            let st = lock(&self.state);
            let j = st
                .jobs
                .get(&id)
                .ok_or_else(|| Status::not_found(format!("no job {id}")))?;
            j.stop.store(true, Ordering::Relaxed);
        }
        self.job_info(id).map(Response::new)
    }
}

/// Uploads no job took within `idle` go.
fn sweep_unused_uploads(state: Arc<Mutex<State>>, idle: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(idle.min(Duration::from_secs(5)) / 2);
        loop {
            tick.tick().await;
            let mut st = lock(&state);
            let old: Vec<String> = st
                .uploads
                .iter()
                .filter(|(_, u)| u.since.elapsed() >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            for k in old {
                if let Some(u) = st.uploads.remove(&k) {
                    remove_in_own_dir(&u.path);
                    log(&format!("upload {k} expired unused"));
                }
            }
        }
    });
}
