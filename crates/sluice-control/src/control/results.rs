//! What a controller reports: each worker's result, the totals and the
//! summary's document.

use crate::error::{chain, describe};
use crate::pb::{self};
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

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
    pub(crate) fn registered(
        w: &crate::plan::WorkerEntry,
        port: u32,
        reg: &pb::RegisterReply,
    ) -> Self {
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
pub(crate) fn network_failure(e: &tonic::transport::Error) -> bool {
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
pub(crate) fn last_word(packets: Option<u64>) -> String {
    packets.map_or("no packets".into(), |p| {
        format!("at least {p} packets sent")
    })
}

/// Sums over the workers, each with its last interval line: a finished
/// worker's summary, or the last line of one that did not finish (its
/// counts a lower bound, and the totals marked `at_least`).
pub(crate) fn totals<'a>(
    workers: impl Iterator<Item = (&'a WorkerResult, &'a Option<Counts>)>,
) -> Totals {
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
