//! The worker's local jobs, run in its process: a job a client submitted
//! (`Jobs.Submit`) is prepared and run as its command would be
//! (`sluice_run::prepare`, `SendPlan::start`) with a live rate the client
//! changes, its intervals and receive counts streamed as they happen.

use crate::local::{Event, Events, Started};
use sluice_engine::{IntervalStats, Observer};
use sluice_job::WorkerJob;
use sluice_run::json::{self, Kind};
use sluice_run::Watcher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs local jobs on threads of this process and stops them all when
/// the worker stops.
#[derive(Default)]
pub struct InProcess {
    running: Mutex<Vec<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>>,
}

impl InProcess {
    /// Stops every job still running and waits up to `wait` for them to
    /// end (their outputs settled, their summaries sent); the number
    /// stopped.
    pub fn stop_all(&self, wait: Duration) -> usize {
        let jobs = std::mem::take(&mut *self.running.lock().unwrap_or_else(|e| e.into_inner()));
        let mut n = 0;
        for (stop, _) in &jobs {
            n += usize::from(!stop.swap(true, Ordering::Relaxed));
        }
        let until = Instant::now() + wait;
        for (_, t) in jobs {
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        n
    }
}

/// Streams a job's lines to its events.
struct Stream(Events);

impl Observer for Stream {
    fn interval(&mut self, s: &IntervalStats) {
        if let Ok(line) = json::line(Kind::Interval, s) {
            (self.0)(Event::Stats {
                line,
                packets: s.packets,
                pps: s.pps,
                eps: s.eps.map(|d| (d.percentiles.p50_ns, d.percentiles.p99_ns)),
            });
        }
    }
}

impl Watcher for Stream {
    fn rx(&mut self, doc: &sluice_receive::RxDoc) {
        if let Ok(line) = json::line(Kind::Rx, doc) {
            let received = doc.streams.iter().map(|s| s.received).sum();
            let lost = doc.streams.iter().map(|s| s.lost).sum();
            // The slowest stream's median: what a user watches for.
            let latency_p50_ns = doc
                .streams
                .iter()
                .filter(|s| s.interval_latency.count > 0)
                .map(|s| s.interval_latency.percentiles.p50_ns)
                .max();
            (self.0)(Event::Rx {
                line,
                received,
                lost,
                latency_p50_ns,
            });
        }
    }
}

impl InProcess {
    /// Checks `w` and opens its inputs; refused (the command line's
    /// message) before anything is sent, else started on a thread of its
    /// own, stopped when `stop` is set, reporting to `events` until it
    /// finishes or fails. `paused`: nothing is sent until the job's rate
    /// is resumed.
    pub fn start(
        &self,
        w: WorkerJob,
        paused: bool,
        stop: Arc<AtomicBool>,
        events: Events,
    ) -> Result<Started, String> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("sluice-job".into())
            .spawn(move || {
                let mut job = sluice_run::worker::job_of(w);
                let mut prepared = match sluice_run::prepare(&mut job) {
                    Ok(p) => p,
                    Err(f) => {
                        let _ = tx.send(Err(format!("{:#}", f.error)));
                        return;
                    }
                };
                let live = prepared.plan.live();
                // Before the run begins: paused from its start.
                if paused {
                    let _ = live.change(sluice_pace::Change::Pause, None);
                }
                let started = Started {
                    live,
                    nominal: prepared.plan.nominal,
                };
                if tx.send(Ok(started)).is_err() {
                    return;
                }
                let watch = Box::new(Stream(events.clone()));
                let end = match prepared.plan.start(stop, prepared.go, Some(watch)) {
                    Err(f) => Event::Failed(format!("{:#}", f.error)),
                    Ok(ran) => match ran.report() {
                        Err(f) => Event::Failed(format!("{:#}", f.error)),
                        Ok(r) => match json::pretty(Kind::Summary, &r.document()) {
                            Ok(summary) => Event::Finished {
                                summary,
                                stopped: r.summary.interrupted,
                            },
                            Err(e) => Event::Failed(e.to_string()),
                        },
                    },
                };
                events(end);
            });
        let thread = spawned.map_err(|e| format!("cannot start the job's thread: {e}"))?;
        {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            running.retain(|(_, t)| !t.is_finished());
            running.push((flag, thread));
        }
        rx.recv()
            .unwrap_or_else(|_| Err("the job's thread ended before it started".into()))
    }
}
