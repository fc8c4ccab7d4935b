//! Admission: a task checked against the lease (its uploads, its port
//! map, a start still ahead) and its job written for the child to run.

use super::state::{Service, State};
use super::task::{shown_long, Admitted};
use crate::error::Result;
use crate::now_ns;
use crate::pb::{self};
use crate::ports::ports;
use crate::shown::shown;
use crate::worker_checks::check_task;
use sluice_job::profile::ShareBy;
use sluice_job::remote::Receive;
use sluice_job::WorkerJob;
use tonic::{Request, Status};

impl Service {
    /// The job's receiver: an interface this worker announced, and the
    /// other senders' clocks against this one.
    pub(crate) fn receive(&self, task: &pb::Task) -> Result<Option<Receive>, Status> {
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
    pub(crate) fn admit(&self, req: Request<pb::Task>) -> Result<Admitted, Status> {
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
            let me = st.name();
            let sinks = task_sinks(&st, task, &me)?;
            let dir = st.dir.clone().expect("a lease has a directory");
            (input, map, sinks, dir.join(".summary.json"), me, dir)
        };
        let task = req.into_inner();
        let (to, specs) = sink_specs(&sinks, &job.work)?;
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
        let fourier = fourier_of(&task)?;
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
        // The lease's private directory: a task refused after its job was
        // written leaves one behind, replaced here.
        let _ = std::fs::remove_file(&file);
        let bytes = serde_json::to_vec(&run).expect("a job serialises");
        sluice_sys::secret::write_new(&file, &bytes, true)
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

/// The sinks of a task's ports as the job's outputs (the first its
/// `--to`): only sinks this worker announced, several only for the jobs
/// that send by several ports.
fn sink_specs(
    sinks: &[String],
    work: &sluice_job::Work,
) -> Result<(sluice_job::SinkSpec, Vec<sluice_job::SinkSpec>), Status> {
    // Only sinks this worker announced.
    let own = ports();
    if !sinks.iter().all(|s| own.iter().any(|p| &p.sink == s)) {
        return Err(Status::invalid_argument(
            "the task's port is not a sink this worker announced",
        ));
    }
    if sinks.len() > 1
        && !matches!(
            work,
            sluice_job::Work::Series { .. } | sluice_job::Work::Profile(_)
        )
    {
        return Err(Status::invalid_argument(format!(
            "also_ports: a {} job sends by one port (series and profile jobs by several)",
            work.command()
        )));
    }
    let mut specs = Vec::with_capacity(sinks.len());
    for sink in sinks {
        specs.push(
            sink.parse::<sluice_job::SinkSpec>()
                .map_err(|e| Status::internal(format!("announced sink '{sink}': {e}")))?,
        );
    }
    let to = specs.remove(0);
    Ok((to, specs))
}

/// A split by components: the controller's decomposition, checked (this
/// worker never decomposes the profile itself).
fn fourier_of(task: &pb::Task) -> Result<Option<sluice_profile::Components>, Status> {
    // Split by components: the controller's decomposition, checked;
    // this worker never decomposes the profile itself.
    Ok(match (task.split(), &task.fourier) {
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
    })
}

/// The sinks of the task's ports, from the lease's port map: its port,
/// then further ports of this worker (`also_ports`), each once.
fn task_sinks(st: &State, task: &pb::Task, me: &str) -> Result<Vec<String>, Status> {
    if task.also_ports.len() > usize::from(u8::MAX) {
        return Err(Status::invalid_argument(format!(
            "also_ports: {}: at most {} ports more",
            task.also_ports.len(),
            u8::MAX
        )));
    }
    let mut sinks = Vec::with_capacity(1 + task.also_ports.len());
    for (k, &id) in std::iter::once(&task.port)
        .chain(&task.also_ports)
        .enumerate()
    {
        let p =
            st.ports.iter().find(|p| p.id == id).ok_or_else(|| {
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
    Ok(sinks)
}
