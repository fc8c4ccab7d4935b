//! `sluice control run PLAN`: connect, register, build and publish the
//! port map, measure every worker's clock offset, upload the job, start
//! every task at one instant t_tos, gather statistics, write one summary.

mod config;
mod gather;
mod results;
mod session;

pub use config::{ClockCheck, ClockSink, ControlConfig, OnLoss, SessionKey, StatsSink};
pub use results::{
    ControlSummary, Counts, Eps, PortOut, SenderClock, Status, Totals, WorkerResult,
};
pub use session::{connect, measure_offset};
pub(crate) use session::{file_chunks, read_whole};

use crate::error::{ControlError, Result};
use crate::now_ns;
use crate::pb;
use config::{Client, Conn, GRACE, RX_WAIT};
use gather::{follow, Event, Gather};
use results::totals;
use session::{prepare, release_all, stopped};
use std::time::Duration;

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
pub(crate) fn plan_receivers(cfg: &ControlConfig, conns: &mut [Conn]) {
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
pub(crate) fn start_all(
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

#[cfg(test)]
mod tests;
