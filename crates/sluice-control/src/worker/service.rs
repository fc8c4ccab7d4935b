//! The `Worker` service: register, clock, port map, uploads, the task's
//! run and its stop, each call checked against the lease.

use super::state::{lock, log, session_secret, Child, Lease, Service};
use super::task::{job_command, outcome, pass_corrections, watch};
use crate::error::Result;
use crate::pb::worker_server::Worker;
use crate::pb::{self, update};
use crate::ports::ports;
use crate::shown::shown;
use sluice_sys::secret::NewFile;
use std::os::unix::fs::DirBuilderExt;
use std::pin::Pin;
use std::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

pub(crate) type UpdateStream = Pin<Box<dyn Stream<Item = Result<pb::Update, Status>> + Send>>;

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
        let open = |name: &str| {
            if self.lock().files.contains_key(name) {
                return Err(Status::already_exists(format!(
                    "upload '{}': this lease has a file of that name",
                    shown(name)
                )));
            }
            NewFile::create(&dir.join(name), true)
                .map_err(|e| Status::internal(format!("upload '{}': {e}", shown(name))))
        };
        let admit = |name: &str, bytes: u64| {
            let kept = self.lock().upload_bytes;
            match reserved.grow(bytes, kept, self.cfg.max_upload) {
                true => Ok(()),
                false => Err(over_cap(name)),
            }
        };
        // Synced before it is counted; removed if the lease ended or the
        // cap was passed meanwhile.
        let (name, path, total) = crate::upload::receive(&mut chunks, open, admit).await?;
        let mut st = self.lock();
        // The lease may have ended (expired) meanwhile: its directory went.
        if st.lease.as_ref().map(|l| &l.session) != session.as_ref() {
            let _ = std::fs::remove_file(&path);
            return Err(Status::aborted("the lease ended during the upload"));
        }
        if st.upload_bytes + total > self.cfg.max_upload {
            let _ = std::fs::remove_file(&path);
            return Err(over_cap(&name));
        }
        st.upload_bytes += total;
        st.files.insert(name.clone(), path);
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
            st.job = Some(Child {
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
