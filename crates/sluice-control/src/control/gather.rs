//! Following the tasks: each worker's updates gathered into one status
//! and its result, a lost worker told apart from a failed one.

use super::config::{
    Client, ClockCheck, Conn, ControlConfig, OnLoss, CALL_TIMEOUT, CHECK_ROUNDS, LOST_AFTER,
    STOP_WAIT,
};
use super::results::{last_word, Counts, Status, WorkerResult};
use super::session::measure_offset;
use crate::now_ns;
use crate::pb::{self, update};
use serde_json::Value;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_stream::StreamExt;

/// Runs `task` on one worker and forwards its updates until it finished
/// or failed (a broken stream is a failure).
pub(crate) async fn follow(
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
pub(crate) struct Gather {
    pub(crate) open: usize,
    pub(crate) done: Vec<bool>,
    pub(crate) last: Vec<Option<Counts>>,
    pub(crate) aborted: Option<String>,
    pub(crate) interrupted: bool,
    /// When every worker still silent is given up.
    pub(crate) give_up_ns: i64,
    pub(crate) stoppers: Vec<Client>,
}

impl Gather {
    pub(crate) fn new(workers: usize, deadline_ns: i64, stoppers: Vec<Client>) -> Self {
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
    pub(crate) async fn gather(
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
    pub(crate) fn on_event(
        &mut self,
        cfg: &mut ControlConfig,
        r: &mut WorkerResult,
        i: usize,
        ev: Event,
    ) {
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
    pub(crate) fn give_up(&mut self, on_loss: OnLoss, conns: &mut [Conn]) {
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
    pub(crate) fn failed(&mut self, r: &mut WorkerResult, e: String, on_loss: OnLoss) {
        // A broken stderr must not end the controller.
        let _ = writeln!(std::io::stderr(), "sluice control: {e}");
        r.error = Some(e.clone());
        if on_loss == OnLoss::Abort && self.aborted.is_none() && self.open > 0 {
            self.aborted = Some(e);
            self.stop_all();
        }
    }

    /// Asks every worker to stop (each within a second, in the background).
    pub(crate) fn stop_all(&self) {
        for s in &self.stoppers {
            let mut s = s.clone();
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), s.stop(pb::StopRequest {})).await;
            });
        }
    }

    /// The live totals, to `on_status`.
    pub(crate) fn status(&self, cfg: &mut ControlConfig, start_ns: i64) {
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

pub(crate) enum Event {
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
    pub(crate) fn failed(error: &str) -> Event {
        Event::Failed {
            error: error.to_string(),
            refused: false,
            lost: false,
        }
    }

    pub(crate) fn lost(error: &str) -> Event {
        Event::Failed {
            error: error.to_string(),
            refused: false,
            lost: true,
        }
    }
}
