//! Counters shared between TX threads and the aggregating thread, the
//! per-interval snapshot and the final summary.

use serde::Serialize;
use sluice_core::{Dist, ErrorHistogram, Nanos};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Written by one TX thread (plain stores), read by the aggregator.
#[derive(Default)]
pub(crate) struct SharedCounters {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    pub late: AtomicU64,
    pub dropped: AtomicU64,
    pub oversize: AtomicU64,
    pub too_short: AtomicU64,
    pub rejected: AtomicU64,
    pub loss_dropped: AtomicU64,
    /// ε samples on their way to the aggregator.
    pub eps: HistExchange,
}

/// How often a TX thread hands its ε samples to the aggregator.
pub(crate) const HISTOGRAM_HANDOFF: Nanos = Nanos::from_millis(100);

/// Passes ε histograms from a TX thread to the aggregator by swapping them,
/// never by copying. A histogram is ~200 KiB of counts: merging and zeroing
/// one walks all of them, and on the TX thread that delays the packets due
/// meanwhile (a burst due after a hand-off leaves late). The TX thread only
/// exchanges its filled histogram for a cleared spare, without blocking;
/// the aggregator merges, clears and returns it.
pub(crate) struct HistExchange(Mutex<Slots>);

struct Slots {
    /// Handed over by the TX thread, not yet taken by the aggregator.
    filled: Option<ErrorHistogram>,
    /// Cleared, for the TX thread's next exchange.
    spare: Option<ErrorHistogram>,
}

impl Default for HistExchange {
    fn default() -> Self {
        HistExchange(Mutex::new(Slots {
            filled: None,
            spare: Some(ErrorHistogram::new()),
        }))
    }
}

impl HistExchange {
    /// TX side: hands `hist` over and continues with a cleared one, in O(1).
    /// Returns false, leaving `hist` as it was, when the aggregator has not
    /// taken the last one yet (or holds the lock): keep recording, try later.
    pub fn offer(&self, hist: &mut ErrorHistogram) -> bool {
        if hist.is_empty() {
            return true;
        }
        let Ok(mut slots) = self.0.try_lock() else {
            return false;
        };
        if slots.filled.is_some() {
            return false;
        }
        let Some(fresh) = slots.spare.take() else {
            return false;
        };
        slots.filled = Some(std::mem::replace(hist, fresh));
        true
    }

    /// TX side, at the end: hands the last samples over, waiting if need be.
    pub fn finish(&self, hist: ErrorHistogram) {
        if hist.is_empty() {
            return;
        }
        // A poisoned lock means a TX thread panicked: the run reports that.
        if let Ok(mut slots) = self.0.lock() {
            match slots.filled.as_mut() {
                Some(f) => f.merge(&hist),
                None => slots.filled = Some(hist),
            }
        }
    }

    /// Aggregator side: merges what was handed over into `into` and returns
    /// the cleared histogram as the next spare (merging and clearing happen
    /// outside the lock).
    pub fn collect(&self, into: &mut ErrorHistogram) {
        let taken = self.0.lock().ok().and_then(|mut s| s.filled.take());
        if let Some(mut h) = taken {
            into.merge(&h);
            h.reset();
            if let Ok(mut slots) = self.0.lock() {
                slots.spare.get_or_insert(h);
            }
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CounterSnapshot {
    pub packets: u64,
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
    /// Frames skipped by reason: longer than the interface takes, shorter
    /// than its link header, refused by the kernel once queued.
    pub oversize: u64,
    pub too_short: u64,
    pub rejected: u64,
    /// Dropped on purpose (`--loss`).
    pub loss_dropped: u64,
}

impl SharedCounters {
    pub fn publish(&self, c: &CounterSnapshot) {
        self.packets.store(c.packets, Ordering::Relaxed);
        self.bytes.store(c.bytes, Ordering::Relaxed);
        self.late.store(c.late, Ordering::Relaxed);
        self.dropped.store(c.dropped, Ordering::Relaxed);
        self.oversize.store(c.oversize, Ordering::Relaxed);
        self.too_short.store(c.too_short, Ordering::Relaxed);
        self.rejected.store(c.rejected, Ordering::Relaxed);
        self.loss_dropped.store(c.loss_dropped, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            packets: self.packets.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            oversize: self.oversize.load(Ordering::Relaxed),
            too_short: self.too_short.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            loss_dropped: self.loss_dropped.load(Ordering::Relaxed),
        }
    }
}

impl std::ops::AddAssign for CounterSnapshot {
    fn add_assign(&mut self, o: CounterSnapshot) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.late += o.late;
        self.dropped += o.dropped;
        self.oversize += o.oversize;
        self.too_short += o.too_short;
        self.rejected += o.rejected;
        self.loss_dropped += o.loss_dropped;
    }
}

/// Shortest span a summary computes rates over.
const MIN_RATE_SPAN_S: f64 = 1e-3;

/// One interval of a run (one JSON line of `--stats-json`).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct IntervalStats {
    /// Seconds since the start, at the end of this interval.
    pub t: f64,
    /// Totals so far.
    pub packets: u64,
    #[serde(rename = "frame_bytes")]
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
    /// Rates over this interval.
    pub pps: f64,
    pub bps: f64,
    /// ε over this interval (null at top speed).
    pub eps: Option<Dist>,
    /// Per-flow totals so far (time-series play).
    pub flows: Vec<FlowStats>,
    /// Flows that sent a record in this interval: the live simulated
    /// devices (time-series play; None for other commands).
    pub active_flows: Option<u64>,
}

/// Counters of one flow (time-series play): records sent, payload bytes,
/// late records, records dropped as time violations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FlowStats {
    pub flow: u32,
    pub device: String,
    /// Simulated copy of the device (`--devices xK`), 0 otherwise.
    pub copy: u32,
    pub src: String,
    pub dst: String,
    pub sent: u64,
    #[serde(rename = "payload_bytes")]
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
}

/// One pass of a source read several times (`--loop`): a `--stats-json`
/// line once every TX thread is done with it.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct PassStats {
    /// 0-based, as `--unique-ip` counts passes.
    pub pass: u64,
    /// False for a pass a limit, the duration or a stop cut short.
    pub complete: bool,
    pub packets: u64,
    #[serde(rename = "frame_bytes")]
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
    /// Frames the sink refused (longer or shorter than the link takes).
    pub refused: u64,
    /// First and last send of the pass, seconds after the run's start.
    pub start_s: f64,
    pub end_s: f64,
    /// Rates between its first and last send; null under 1 ms or for one
    /// packet.
    pub pps: Option<f64>,
    pub bps: Option<f64>,
    /// ε of its packets (null at top speed).
    pub eps_mean_ns: Option<f64>,
    pub eps_max_ns: Option<i64>,
}

/// Receives progress while a run goes on.
pub trait Observer {
    fn interval(&mut self, stats: &IntervalStats);
    /// A pass of the source is done (only where per-pass statistics were
    /// asked for: `EngineConfig::pass_stats`).
    fn pass(&mut self, _stats: &PassStats) {}
    /// Whether intervals should carry per-flow statistics (time-series
    /// play). With millions of flows they take the aggregator a while to
    /// gather, so a status line alone goes without them.
    fn wants_flows(&self) -> bool {
        true
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Summary {
    pub sink: String,
    /// How frames reached the device: `tx-ring`, `sendmmsg`, `xdp-copy`,
    /// `xdp-zerocopy`; null for files and `null`.
    pub tx_path: Option<String>,
    /// How frames reached an xdp sink's UMEM: placed once and sent again
    /// without a copy, or copied on each send; null for the other sinks.
    #[serde(default)]
    pub frame_copies: Option<FrameCopies>,
    /// Where TX threads, planners, helpers and memory were placed (NUMA
    /// node, CPUs); null for runs that place nothing.
    #[serde(default)]
    pub placement: Option<Placement>,
    /// `--clock tsc`: the counter's calibrated rate and its drift from
    /// CLOCK_MONOTONIC over the run; null for the other clocks.
    pub clock: Option<crate::tsc::ClockReport>,
    pub threads: usize,
    pub packets: u64,
    #[serde(rename = "frame_bytes")]
    pub bytes: u64,
    /// From the common start to the last packet sent.
    pub duration_s: f64,
    /// Rates from the common start to the last send; null when that span
    /// is too short to mean anything (under 1 ms, or a single packet).
    pub pps: Option<f64>,
    pub bps: Option<f64>,
    /// Send-time error ε = actual − scheduled (null at top speed).
    pub eps: Option<Dist>,
    /// Sent later than the late threshold.
    pub late: u64,
    /// Dropped for exceeding the drift window T_d (time violations).
    pub dropped: u64,
    /// Frames larger than the interface accepts, skipped.
    pub oversize: u64,
    /// Frames shorter than the interface's link header, skipped.
    pub too_short: u64,
    /// Frames the kernel refused once queued, skipped (not in `packets`).
    pub rejected: u64,
    /// Frames dropped on purpose by `--loss` (not in `packets`).
    pub loss_dropped: u64,
    /// Packets of unsupported link types skipped.
    pub skipped_unsupported: u64,
    /// Packets whose payload was rewritten.
    pub rewritten: u64,
    /// Passes over the trace.
    pub passes: u64,
    /// Time-series play's own counters; null for other commands.
    pub series: Option<SeriesSummary>,
    /// A live source's own counters (`sluice pace`: frames arrived,
    /// dropped at a full backlog, the backlog, the return path).
    pub source: std::collections::BTreeMap<String, u64>,
    /// How a replay was timed (`analyze --run` reads it back to schedule
    /// the reference as the run did); null for other commands.
    pub timing: Option<RunTiming>,
    /// Stopped by a signal before the end.
    pub interrupted: bool,
    pub warnings: Vec<String>,
}

/// Where a run's threads and memory went ([`Summary::placement`], FLOR
/// §5.4: core affinity per unit, §5.4.1: the NIC's NUMA node).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Placement {
    /// NUMA nodes this host has.
    pub nodes: usize,
    /// The node threads and memory were kept on; null: none chosen.
    pub node: Option<usize>,
    /// Why that node, or why none.
    pub why: String,
    /// TX thread i's CPU is entry i mod len; empty: not pinned.
    pub tx_cpus: Vec<usize>,
    /// Planner k's CPU is entry k mod len; empty: not pinned.
    pub planner_cpus: Vec<usize>,
    /// CPUs the other threads keep to; empty: any but the TX threads'.
    pub helper_cpus: Vec<usize>,
    /// The memory policy applied, or why none.
    pub memory: String,
}

impl Placement {
    /// One line of text: `placement: ...`.
    pub fn line(&self) -> String {
        let list = |c: &[usize], none: &str| {
            if c.is_empty() {
                none.to_string()
            } else {
                format!(
                    "CPU{} {}",
                    if c.len() > 1 { "s" } else { "" },
                    c.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
        };
        format!(
            "placement: {} NUMA node{}, {}; TX threads on {}; planners on {}; helpers on {}; memory: {}",
            self.nodes,
            if self.nodes == 1 { "" } else { "s" },
            match self.node {
                Some(n) => format!("node {n} ({})", self.why),
                None => format!("no node chosen ({})", self.why),
            },
            list(&self.tx_cpus, "any CPU"),
            list(&self.planner_cpus, "any CPU"),
            list(&self.helper_cpus, "any CPU but the TX threads'"),
            self.memory
        )
    }
}

/// How frames reached a sink's memory ([`Summary::frame_copies`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FrameCopies {
    /// Frames of a preloaded trace copied into the UMEM, once each.
    pub placed: u64,
    /// Sends of a placed frame (no copy).
    pub sent_in_place: u64,
    /// Sends that copied the frame: a trace streamed from its file, a
    /// frame built per send, or no room left to keep it.
    pub copied: u64,
}

impl From<sluice_sink::Copies> for FrameCopies {
    fn from(c: sluice_sink::Copies) -> Self {
        FrameCopies {
            placed: c.placed,
            sent_in_place: c.in_place,
            copied: c.copied,
        }
    }
}

/// What time-series play adds to a summary.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct SeriesSummary {
    /// Frames on the wire (more than packets when datagrams are
    /// fragmented).
    pub frames: u64,
    /// Records sent out of order.
    pub out_of_order: u64,
    /// Records sent (or dropped) by another TX thread than their own,
    /// which was interrupted; present when rescue was on.
    pub rescued: Option<u64>,
    /// Records left out by `--devices N` or `--device-filter`.
    pub filtered: u64,
    /// Records (one per simulated copy) of devices `--device-steps` had
    /// not made live at their due time.
    pub inactive: u64,
    /// Per-flow counters.
    pub flows: Vec<FlowStats>,
}

impl SeriesSummary {
    /// Its lines of the human-readable summary.
    fn render(&self, s: &mut String) {
        s.push_str(&format!(
            "\nframes {}  out of order {}  filtered {}  inactive {}",
            self.frames, self.out_of_order, self.filtered, self.inactive
        ));
        if let Some(r) = self.rescued {
            s.push_str(&format!("  rescued {r}"));
        }
        if !self.flows.is_empty() {
            s.push_str(&format!(
                "\n{} flows (all of them in --summary-json):",
                self.flows.len()
            ));
            for f in self.flows.iter().take(8) {
                s.push_str(&format!(
                    "\n  {:<16} {} -> {}  sent {} bytes {} late {} dropped {}",
                    if f.copy > 0 {
                        format!("{}#{}", f.device, f.copy)
                    } else {
                        f.device.clone()
                    },
                    f.src,
                    f.dst,
                    f.sent,
                    f.bytes,
                    f.late,
                    f.dropped
                ));
            }
            if self.flows.len() > 8 {
                s.push_str(&format!("\n  ... {} more", self.flows.len() - 8));
            }
        }
    }
}

/// How a run was timed, as its summary records it: replay's timing mode
/// (`analyze --run` reads it back with [`RunTiming::replay_mode`]) or time-series
/// play's. Serialised with its `mode` as the tag.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum RunTiming {
    /// Replay: the recorded gaps divided by `multiplier`.
    Recorded { multiplier: f64 },
    /// Replay: `rate` packets per second.
    Pps { rate: f64 },
    /// Replay: `rate` Mbit/s of frame bytes.
    Mbps { rate: f64 },
    /// Replay or series play: as fast as the sink takes packets.
    Topspeed,
    /// Series play: as recorded.
    Conforming,
    /// Series play: recorded gaps divided by `multiplier`.
    FastForward { multiplier: f64 },
    /// Series play: `rate` records per second, timestamps ignored.
    TightLoop { rate: f64 },
}

impl From<sluice_pace::TimingMode> for RunTiming {
    fn from(t: sluice_pace::TimingMode) -> Self {
        use sluice_pace::TimingMode as T;
        match t {
            T::Recorded { multiplier } => RunTiming::Recorded { multiplier },
            T::Pps(rate) => RunTiming::Pps { rate },
            T::Mbps(rate) => RunTiming::Mbps { rate },
            T::TopSpeed => RunTiming::Topspeed,
        }
    }
}

impl From<sluice_source::series::SeriesTiming> for RunTiming {
    fn from(t: sluice_source::series::SeriesTiming) -> Self {
        use sluice_source::series::SeriesTiming as T;
        match t {
            T::Conforming => RunTiming::Conforming,
            T::FastForward(multiplier) => RunTiming::FastForward { multiplier },
            T::TightLoop(iv) if iv.0 == 0 => RunTiming::Topspeed,
            T::TightLoop(iv) => RunTiming::TightLoop {
                rate: 1e9 / iv.0 as f64,
            },
        }
    }
}

impl RunTiming {
    /// The replay timing mode this records; None for series play's modes.
    pub fn replay_mode(self) -> Option<sluice_pace::TimingMode> {
        use sluice_pace::TimingMode as T;
        match self {
            RunTiming::Recorded { multiplier } => Some(T::Recorded { multiplier }),
            RunTiming::Pps { rate } => Some(T::Pps(rate)),
            RunTiming::Mbps { rate } => Some(T::Mbps(rate)),
            RunTiming::Topspeed => Some(T::TopSpeed),
            _ => None,
        }
    }
}

impl Summary {
    /// What every run reports: totals and rates over `duration_s` (common
    /// start to last send), ε unless at top speed, the sinks named once.
    pub(crate) fn base(
        mut sinks: Vec<String>,
        threads: usize,
        totals: &CounterSnapshot,
        duration_s: f64,
        eps: &ErrorHistogram,
        topspeed: bool,
    ) -> Summary {
        // A rate over a few microseconds (or one packet) is noise: none.
        let measurable = duration_s >= MIN_RATE_SPAN_S && totals.packets >= 2;
        let rate = |v: u64| measurable.then(|| v as f64 / duration_s);
        sinks.dedup();
        Summary {
            sink: sinks.join(", "),
            threads,
            packets: totals.packets,
            bytes: totals.bytes,
            duration_s,
            pps: rate(totals.packets),
            bps: rate(totals.bytes).map(|b| b * 8.0),
            eps: (!topspeed && !eps.is_empty()).then(|| eps.percentiles()),
            late: totals.late,
            dropped: totals.dropped,
            oversize: totals.oversize,
            too_short: totals.too_short,
            rejected: totals.rejected,
            loss_dropped: totals.loss_dropped,
            ..Summary::default()
        }
    }

    /// Adds warnings in the order a user reads them: the source's, the TX
    /// threads' (refused pinning or priority), then the count of packets
    /// the sink refused as too large (`oversize_what` says what they are).
    pub(crate) fn with_warnings(
        mut self,
        source: Vec<String>,
        threads: Vec<String>,
        oversize_what: &str,
    ) -> Summary {
        self.warnings.extend(source);
        self.warnings.extend(threads);
        if self.oversize > 0 {
            self.warnings.push(format!(
                "{} {oversize_what} and were skipped",
                self.oversize
            ));
        }
        if self.too_short > 0 {
            self.warnings.push(format!(
                "{} frames were shorter than the link header and were skipped",
                self.too_short
            ));
        }
        if self.rejected > 0 {
            self.warnings.push(format!(
                "{} frames were refused by the kernel and were skipped",
                self.rejected
            ));
        }
        self
    }

    /// The human-readable summary printed on stderr.
    pub fn render(&self) -> String {
        let mut s = format!(
            "sent {} packets, {} bytes in {:.3} s to {} ({} TX thread{})\nrate {}\n",
            self.packets,
            self.bytes,
            self.duration_s,
            self.sink,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            match (self.pps, self.bps) {
                (Some(p), Some(b)) => format!("{} pps, {}", human(p, ""), human(b, "bit/s")),
                _ => "not measured: the run was too short".to_string(),
            },
        );
        match &self.eps {
            Some(p) => s.push_str(&format!(
                "send-time error ε: p50 {} p90 {} p99 {} p99.9 {} max {}\n",
                duration(p.percentiles.p50_ns),
                duration(p.percentiles.p90_ns),
                duration(p.percentiles.p99_ns),
                duration(p.percentiles.p999_ns),
                duration(p.percentiles.max_ns)
            )),
            None => s.push_str("send-time error ε: not measured at top speed\n"),
        }
        if let Some(c) = &self.clock {
            s.push_str(&format!(
                "clock: {} at {:.6} GHz (calibrated over {}), {} from CLOCK_MONOTONIC at the end\n",
                c.source,
                c.tsc_hz / 1e9,
                duration(c.calibration_ns),
                if c.drift_ns < 0 {
                    format!("-{}", duration(c.drift_ns.unsigned_abs()))
                } else {
                    duration(c.drift_ns as u64)
                }
            ));
        }
        s.push_str(&format!(
            "late {}  dropped (time violations) {}  oversize skipped {}  unsupported skipped {}",
            self.late, self.dropped, self.oversize, self.skipped_unsupported
        ));
        if self.too_short > 0 || self.rejected > 0 {
            s.push_str(&format!(
                "  too short skipped {}  refused by the kernel {}",
                self.too_short, self.rejected
            ));
        }
        if self.loss_dropped > 0 {
            s.push_str(&format!("  dropped by --loss {}", self.loss_dropped));
        }
        if self.rewritten > 0 {
            s.push_str(&format!("  payload rewritten {}", self.rewritten));
        }
        if let Some(series) = &self.series {
            series.render(&mut s);
        }
        if let Some(p) = &self.placement {
            s.push('\n');
            s.push_str(&p.line());
        }
        if let Some(c) = &self.frame_copies {
            s.push_str(&format!(
                "\nUMEM: {} frames placed once and sent {} times without a copy; {} sends copied{}",
                c.placed,
                c.sent_in_place,
                c.copied,
                if c.copied == 0 {
                    ""
                } else if c.placed == 0 {
                    " (frames streamed or built per send, or a preloaded trace larger than the \
                     last-level cache, which is faster copied into frames still in cache)"
                } else {
                    " (the UMEM had no room left to keep them)"
                }
            ));
        }
        if !self.source.is_empty() {
            s.push_str("\nsource:");
            for (k, v) in &self.source {
                s.push_str(&format!(" {k} {v}"));
            }
        }
        if self.interrupted {
            s.push_str("\ninterrupted: stopped early by a signal");
        }
        for w in &self.warnings {
            s.push_str(&format!("\nwarning: {w}"));
        }
        s
    }
}

/// Nanoseconds with the unit that keeps them readable: `850 ns`,
/// `12.3 µs`, `4.56 ms`, `1.20 s`.
pub fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// `1234567.0` → `1.23 M` (+ unit).
pub fn human(v: f64, unit: &str) -> String {
    let (div, p) = if v >= 1e9 {
        (1e9, "G")
    } else if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{:.2} {p}{unit}", v / div).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_carry_their_unit() {
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(12_345), "12.3 µs");
        assert_eq!(duration(4_560_000), "4.56 ms");
        assert_eq!(duration(1_200_000_000), "1.20 s");
    }

    #[test]
    fn human_units() {
        assert_eq!(human(1_234_567.0, "bit/s"), "1.23 Mbit/s");
        assert_eq!(human(999.0, ""), "999.00");
        assert_eq!(human(645_300.0, ""), "645.30 k");
    }

    #[test]
    fn a_timing_is_its_mode_and_its_own_field_and_reads_back() {
        use sluice_pace::TimingMode;
        let t = RunTiming::from(TimingMode::Recorded { multiplier: 2.0 });
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(text, r#"{"mode":"recorded","multiplier":2.0}"#);
        let back: RunTiming = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.replay_mode(),
            Some(TimingMode::Recorded { multiplier: 2.0 })
        );
        let pps: RunTiming = serde_json::from_str(r#"{"mode":"pps","rate":5.0}"#).unwrap();
        assert_eq!(pps.replay_mode(), Some(TimingMode::Pps(5.0)));
        use sluice_source::series::SeriesTiming;
        assert_eq!(
            RunTiming::from(SeriesTiming::TightLoop(Nanos(0))),
            RunTiming::Topspeed
        );
        let tight = RunTiming::from(SeriesTiming::TightLoop(Nanos(10_000)));
        assert_eq!(tight, RunTiming::TightLoop { rate: 100_000.0 });
        assert_eq!(tight.replay_mode(), None, "not a replay's mode");
        assert!(serde_json::from_str::<RunTiming>(r#"{"mode":"pps"}"#).is_err());
    }

    #[test]
    fn summary_mentions_everything() {
        let s = Summary {
            sink: "null".into(),
            threads: 2,
            packets: 10,
            interrupted: true,
            warnings: vec!["x".into()],
            ..Default::default()
        };
        let r = s.render();
        assert!(r.contains("sent 10 packets"));
        assert!(r.contains("2 TX threads"));
        assert!(r.contains("interrupted"));
        assert!(r.contains("warning: x"));
        assert!(r.contains("not measured at top speed"));
    }
}
