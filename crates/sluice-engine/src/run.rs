//! Orchestration: start the threads, release them together, aggregate
//! statistics once per interval, collect the summary.

use crate::config::{ClockChoice, EngineConfig};
use crate::stats::{
    CounterSnapshot, FrameCopies, IntervalStats, Observer, SharedCounters, Summary,
};
use crate::tsc::TscClock;
use crate::tx::{Board, Feed, TxCore, TxLoop, TxReport, TxSetup};
use sluice_core::{Clock, ErrorHistogram, Fates, MonoTime, MonotonicClock, Nanos, VirtualClock};
use sluice_pace::{Pacer, SpinSleep, Waiter};
use sluice_sink::{Sink, SinkError};
use sluice_source::{Fault, SourceError};
use sluice_sys::sched as os;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

/// Lead between releasing the threads and the first due time.
const START_LEAD: Nanos = Nanos::from_millis(2);

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Sink(#[from] SinkError),
    #[error(transparent)]
    Series(sluice_source::series::SeriesError),
    #[error("a {0} thread panicked")]
    Panic(&'static str),
    #[error("cannot start a thread: {0}")]
    Spawn(std::io::Error),
    #[error(
        "this source matches departures to its frames by order: it runs on one TX thread, not {0}"
    )]
    FatesOnOneThread(usize),
    /// Planner threads: more parts than TX threads, or a source that
    /// cannot be planned in parts (a live one, or one that learns fates).
    #[error("{parts} planner threads need as many TX threads or more (there are {lanes}) and a generated source")]
    Parts { parts: usize, lanes: usize },
    #[error("a packet limit or bursts need one planner thread, not {0}: no planner knows which packets are the first N in time")]
    PartsWithLimit(usize),
    /// A run that failed after sending: the error, and what was sent.
    #[error("{error}")]
    AfterSending {
        error: Box<EngineError>,
        summary: Box<Summary>,
    },
}

impl EngineError {
    /// Whose fault the failure is: the input's (what a source read, a
    /// series archive) or the environment's (a device, a sink, the OS).
    pub fn fault(&self) -> Fault {
        match self {
            EngineError::Source(s) => s.fault(),
            EngineError::Series(_) => Fault::Input,
            EngineError::AfterSending { error, .. } => error.fault(),
            EngineError::FatesOnOneThread(_)
            | EngineError::Parts { .. }
            | EngineError::PartsWithLimit(_) => Fault::Input,
            EngineError::Sink(_) | EngineError::Panic(_) | EngineError::Spawn(_) => {
                Fault::Environment
            }
        }
    }

    /// `error`, with the summary of what was sent before it when anything
    /// was (the user must learn how far the run got).
    pub(crate) fn after(error: EngineError, summary: Summary) -> EngineError {
        if summary.packets == 0 {
            return error;
        }
        EngineError::AfterSending {
            error: Box::new(error),
            summary: Box::new(summary),
        }
    }
}

/// One way of feeding the TX threads: the batch pipeline of every
/// [`Source`](sluice_source::Source) (`batch.rs`) or time-series play
/// (`series/`). [`Run::execute`] runs either: threads, priming, the common
/// start, joins, errors and the summary exist once, there.
pub(crate) trait Pipeline {
    type Feed: Feed + Send + 'static;
    /// What a TX thread hands back of its feed once it is done. What is
    /// not handed back is dropped in the thread: the batch pipeline's
    /// channels close as its threads end; time-series play hands the
    /// whole feed back, so no TX thread frees a buffer while others send.
    type Tally: Send + 'static;
    /// Named in the warning for packets larger than the sink accepts.
    const OVERSIZE: &'static str;

    /// A live pipeline's packets arrive while the clock runs: its start is
    /// fixed before [`prime`](Self::prime), the others' after.
    fn live(&self) -> bool {
        false
    }

    /// Starts the helper threads for `lanes` TX threads and waits for the
    /// prefetch lead; returns the capture timestamp (ns) of the first due
    /// time, the base of `pcap:` output stamps.
    fn prime(
        &mut self,
        lanes: usize,
        start: Option<MonoTime>,
        clock: MonotonicClock,
    ) -> Result<u64, EngineError>;

    /// Departure fates the TX thread records (a source that asked).
    fn fates(&self) -> Option<Arc<Fates>> {
        None
    }

    /// The rescue board the `lanes` TX threads share (None: flows stay on
    /// their thread).
    fn board(&self, _lanes: usize) -> Option<Arc<Board<FeedUnit<Self>>>> {
        None
    }

    /// The feed of TX thread `i`, which sends into `sink`.
    fn feed(&mut self, i: usize, sink: &dyn Sink) -> Self::Feed;

    /// What TX thread `i` keeps of its feed.
    fn tally(feed: Self::Feed) -> Self::Tally;

    /// Adds the pipeline's per-flow statistics to an interval.
    fn interval(&self, _stats: &mut IntervalStats) {}

    /// Where per-pass statistics meet, if this run keeps them.
    fn passes(&self) -> Option<Arc<crate::passes::PassBoard>> {
        None
    }

    /// Joins the helper threads once the TX threads are done, fills the
    /// pipeline's part of `summary` and returns its warnings; the first
    /// helper error otherwise. `rescued`: packets sent by another TX
    /// thread than their own, None when there was no board.
    fn finish(
        self,
        tallies: Vec<Self::Tally>,
        rescued: Option<u64>,
        summary: &mut Summary,
    ) -> Result<Vec<String>, EngineError>;
}

/// The unit a pipeline's feed hands its TX thread.
pub(crate) type FeedUnit<P> = <<P as Pipeline>::Feed as Feed>::Unit;

/// The aggregator (the caller's thread) and helper threads spawned after
/// this call (IO, workers) keep off the TX threads' CPUs; TX threads pin
/// themselves explicitly.
pub(crate) fn keep_helpers_off_tx_cpus(cfg: &EngineConfig) {
    if !cfg.helper_cpus().is_empty() {
        let _ = os::allow_cpus(cfg.helper_cpus());
    } else if !cfg.cpus.is_empty() {
        let _ = os::avoid_cpus(&cfg.cpus);
    }
}

/// Pins the calling planner thread `k` where the placement put it.
pub(crate) fn pin_planner(cfg_cpus: &[usize], k: usize) {
    if let Some(&cpu) = cfg_cpus.get(k % cfg_cpus.len().max(1)) {
        let _ = os::pin_to_cpu(cpu);
    }
}

/// Settles every sink of a run (see [`Sink::settle`]); the first error.
fn settle(outputs: Vec<Box<dyn Sink>>, complete: bool) -> Result<(), SinkError> {
    let mut first = Ok(());
    for mut s in outputs {
        if let Err(e) = s.settle(complete) {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// Joins threads of one kind.
pub(crate) fn join<T>(
    handles: Vec<thread::JoinHandle<T>>,
    kind: &'static str,
) -> Result<Vec<T>, EngineError> {
    handles
        .into_iter()
        .map(|h| h.join().map_err(|_| EngineError::Panic(kind)))
        .collect()
}

/// What every run shares once its source is primed: the clock, the common
/// start, the TX threads' barrier, their counters, the aggregator and the
/// summary.
pub(crate) struct Run<'a> {
    cfg: &'a EngineConfig,
    mono: MonotonicClock,
    /// `--clock tsc`: the counter, calibrated against `mono`.
    tsc: Option<TscClock>,
    /// Each TX thread's virtual clock: the run's virtual clock for thread
    /// 0 (and for every thread with `shared_virtual_clock`), else one each
    /// from the common start. Never empty.
    lane_clocks: Vec<VirtualClock>,
    /// The common start: every due time is an offset from it.
    pub start: MonoTime,
    starter: TxStarter,
    pub counters: Vec<Arc<SharedCounters>>,
    /// Departure fates, for a source that asked for them (one TX thread).
    pub fates: Option<Arc<Fates>>,
}

/// Time from now to a CLOCK_REALTIME instant (0 when none or past).
fn until(at: Option<u64>) -> Nanos {
    at.map_or(Nanos(0), |at| {
        Nanos(at.saturating_sub(sluice_sys::clock::realtime_ns()))
    })
}

impl<'a> Run<'a> {
    /// Runs `pipeline` into `sinks` (one TX thread per sink) on the given
    /// clocks: CLOCK_MONOTONIC, and the virtual clock `ClockChoice::Virtual`
    /// runs on (the harness moves it from a sink).
    pub fn execute<P: Pipeline>(
        mut pipeline: P,
        sinks: Vec<Box<dyn Sink>>,
        cfg: &EngineConfig,
        observer: &mut dyn Observer,
        clocks: (MonotonicClock, VirtualClock),
    ) -> Result<Summary, EngineError> {
        let n = sinks.len().max(1);
        let mono = clocks.0;
        let live = pipeline
            .live()
            .then(|| Run::with_clocks(cfg, n, clocks.clone()));
        keep_helpers_off_tx_cpus(cfg);
        let stamp_base = pipeline.prime(n, live.as_ref().map(|r| r.start), mono)?;
        let mut run = live.unwrap_or_else(|| Run::with_clocks(cfg, n, clocks));
        run.fates = pipeline.fates();
        let board = pipeline.board(n);
        let mut txs = Vec::with_capacity(n);
        for (i, sink) in sinks.into_iter().enumerate() {
            let feed = pipeline.feed(i, &*sink);
            let setup = run.setup(i, sink, stamp_base);
            let board = board.clone();
            txs.push(run.spawn(i, move || {
                let (report, feed, rescued) = TxLoop::new(TxCore::new(setup), feed, board, i).run();
                (report, P::tally(feed), rescued)
            })?);
        }
        run.begin_live();
        run.release();
        let passes = pipeline.passes();
        let hist = run.aggregate(&txs, observer, passes.as_deref(), &mut |s| {
            pipeline.interval(s)
        });
        let outs = join(txs, "TX")?;
        let interrupted = cfg.stop.load(Ordering::Relaxed);
        let mut reports = Vec::with_capacity(n);
        let mut tallies = Vec::with_capacity(n);
        let mut outputs = Vec::with_capacity(n);
        let mut rescued = 0;
        for (mut report, tally, r) in outs {
            outputs.extend(report.output.take());
            reports.push(report);
            tallies.push(tally);
            rescued += r;
        }
        let (mut summary, sink_error) = run.summary(reports, &hist);
        // Helpers are joined whatever failed: a sink error comes first.
        let finished = pipeline.finish(tallies, board.is_some().then_some(rescued), &mut summary);
        // One rule for every file output: only a run that ended well in
        // every part replaces what was there.
        let complete = !interrupted && sink_error.is_none() && finished.is_ok();
        let settled = settle(outputs, complete);
        let warnings = match (sink_error, finished, settled) {
            (Some(e), _, _) => return Err(EngineError::after(e.into(), summary)),
            (None, Err(e), _) => return Err(EngineError::after(e, summary)),
            (None, Ok(_), Err(e)) => return Err(EngineError::after(e.into(), summary)),
            (None, Ok(w), Ok(())) => w,
        };
        Ok(Summary {
            interrupted,
            ..summary.with_warnings(warnings, run.warnings(), P::OVERSIZE)
        })
    }

    /// Fixes the start `START_LEAD` from now (at once on a virtual clock)
    /// on the given clocks: CLOCK_MONOTONIC (the one a source was told in
    /// its `RunContext`) and the virtual clock.
    pub fn with_clocks(
        cfg: &'a EngineConfig,
        threads: usize,
        (mono, virtual_clock): (MonotonicClock, VirtualClock),
    ) -> Self {
        let tsc = (cfg.clock == ClockChoice::Tsc).then(|| TscClock::calibrate(mono));
        let start = match cfg.clock {
            ClockChoice::Monotonic | ClockChoice::Tsc => {
                mono.now() + START_LEAD.max(until(cfg.start_at))
            }
            ClockChoice::Virtual => Clock::now(&virtual_clock),
        };
        let lane_clocks = (0..threads.max(1))
            .map(|i| {
                if i == 0 || cfg.shared_virtual_clock {
                    virtual_clock.clone()
                } else {
                    VirtualClock::new(Clock::now(&virtual_clock))
                }
            })
            .collect();
        Run {
            cfg,
            mono,
            tsc,
            lane_clocks,
            start,
            starter: TxStarter::new(threads, cfg),
            counters: (0..threads).map(|_| Arc::default()).collect(),
            fates: None,
        }
    }

    /// Tells the live timeline (if any) the run's start and clock.
    pub fn begin_live(&self) {
        let Some(live) = &self.cfg.live else {
            return;
        };
        let now: Box<dyn Fn() -> MonoTime + Send + Sync> = match (self.cfg.clock, self.tsc) {
            (ClockChoice::Virtual, _) => {
                let clocks = self.lane_clocks.clone();
                Box::new(move || clocks.iter().map(Clock::now).max().unwrap_or_default())
            }
            (_, Some(t)) => Box::new(move || t.now()),
            _ => {
                let m = self.mono;
                Box::new(move || m.now())
            }
        };
        live.begin(self.start, now);
    }

    fn now(&self) -> MonoTime {
        match (self.cfg.clock, self.tsc) {
            // The run is as far as its furthest thread.
            (ClockChoice::Virtual, _) => self
                .lane_clocks
                .iter()
                .map(Clock::now)
                .max()
                .unwrap_or_default(),
            (_, Some(t)) => t.now(),
            _ => self.mono.now(),
        }
    }

    /// Pacing, sink and counters of TX thread `i`.
    pub fn setup(&self, i: usize, sink: Box<dyn Sink>, stamp_base: u64) -> TxSetup {
        let cfg = self.cfg;
        let waiter: Box<dyn Waiter + Send> = match (cfg.clock, self.tsc) {
            (ClockChoice::Virtual, _) => {
                Box::new(self.lane_clocks[i % self.lane_clocks.len()].clone())
            }
            (_, Some(t)) => Box::new(SpinSleep::new(t, cfg.spin)),
            _ => Box::new(SpinSleep::new(self.mono, cfg.spin)),
        };
        TxSetup {
            sink,
            waiter,
            pacer: Pacer::new(self.start, cfg.drift, cfg.topspeed),
            topspeed: cfg.topspeed,
            late_threshold: cfg.late_threshold,
            duration: cfg.duration,
            stamp_base,
            counters: self.counters[i].clone(),
            stop: cfg.stop.clone(),
            fates: self.fates.clone(),
            loss: cfg.loss.map(|l| l.draws(i)),
            timeline: cfg.live.as_ref().map(|l| l.reader(cfg.clock.is_real())),
            spin: cfg.spin,
            eps_log: cfg
                .eps_log
                .clone()
                .map(|l| crate::epslog::EpsRecorder::new(l, i)),
        }
    }

    pub fn spawn<T: Send + 'static>(
        &self,
        i: usize,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> Result<thread::JoinHandle<T>, EngineError> {
        self.starter.spawn(i, body)
    }

    /// Lets every spawned TX thread go.
    pub fn release(&self) {
        self.starter.release();
    }

    pub fn warnings(&self) -> Vec<String> {
        self.starter.warnings()
    }

    /// Reports interval statistics to `observer` until every TX thread in
    /// `txs` has finished; returns the ε histogram of the whole run.
    /// `extra` adds per-flow statistics, when the observer wants them.
    pub fn aggregate<T>(
        &self,
        txs: &[thread::JoinHandle<T>],
        observer: &mut dyn Observer,
        passes: Option<&crate::passes::PassBoard>,
        extra: &mut dyn FnMut(&mut IntervalStats),
    ) -> ErrorHistogram {
        let finished = || txs.iter().all(|h| h.is_finished());
        aggregate(
            &finished,
            &self.counters,
            self.cfg,
            self.start,
            &|| self.now(),
            (observer, passes),
            extra,
        )
    }

    /// The summary every run reports (totals, rates from the common start
    /// to the last send, ε, the sinks), and the first fatal sink error.
    pub fn summary(
        &self,
        reports: impl IntoIterator<Item = TxReport>,
        hist: &ErrorHistogram,
    ) -> (Summary, Option<SinkError>) {
        let mut totals = CounterSnapshot::default();
        let mut last_send = self.start;
        let mut sinks = Vec::new();
        let mut threads = 0;
        let mut first_error = None;
        let mut tx_path = None;
        let mut copies: Option<sluice_sink::Copies> = None;
        for r in reports {
            tx_path = tx_path.or(r.tx_path);
            if let Some(c) = r.copies {
                *copies.get_or_insert_default() += c;
            }
            threads += 1;
            totals += r.totals;
            last_send = last_send.max(r.last_send);
            sinks.push(r.sink);
            if let Some(e) = r.error {
                first_error.get_or_insert(e);
            }
        }
        let duration = last_send.since(self.start).as_secs_f64();
        let mut summary = Summary::base(sinks, threads, &totals, duration, hist, self.cfg.topspeed);
        summary.tx_path = tx_path.map(str::to_string);
        summary.frame_copies = copies.map(FrameCopies::from);
        summary.placement = self.cfg.placement.clone();
        summary.clock = self.tsc.map(|t| t.report());
        (summary, first_error)
    }
}

/// Starts TX threads: each one pins itself and sets its priority (refusals
/// become warnings), then waits on a barrier that [`TxStarter::release`]
/// opens for all of them at once.
pub(crate) struct TxStarter {
    barrier: Arc<Barrier>,
    warnings: Arc<Mutex<Vec<String>>>,
    cpus: Vec<usize>,
    rt: bool,
}

impl TxStarter {
    pub fn new(threads: usize, cfg: &EngineConfig) -> Self {
        TxStarter {
            barrier: Arc::new(Barrier::new(threads + 1)),
            warnings: Arc::default(),
            cpus: cfg.cpus.clone(),
            rt: cfg.realtime,
        }
    }

    pub fn spawn<T: Send + 'static>(
        &self,
        i: usize,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> Result<thread::JoinHandle<T>, EngineError> {
        let cpu = (!self.cpus.is_empty()).then(|| self.cpus[i % self.cpus.len()]);
        let (rt, barrier, warn) = (self.rt, self.barrier.clone(), self.warnings.clone());
        thread::Builder::new()
            .name(format!("sluice-tx{i}"))
            .spawn(move || {
                let mut w = Vec::new();
                prepare_tx_thread(i, cpu, rt, &mut w);
                if let Ok(mut all) = warn.lock() {
                    all.extend(w);
                }
                barrier.wait();
                body()
            })
            .map_err(EngineError::Spawn)
    }

    /// Lets every spawned TX thread go.
    pub fn release(&self) {
        self.barrier.wait();
    }

    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().map(|w| w.clone()).unwrap_or_default()
    }
}

/// Reports interval statistics to `observer` until `finished()`; returns
/// the ε histogram of the whole run. `extra` adds per-flow statistics,
/// when the observer wants them.
pub(crate) fn aggregate(
    finished: &dyn Fn() -> bool,
    counters: &[Arc<SharedCounters>],
    cfg: &EngineConfig,
    start: MonoTime,
    now: &dyn Fn() -> MonoTime,
    (observer, passes): (&mut dyn Observer, Option<&crate::passes::PassBoard>),
    extra: &mut dyn FnMut(&mut IntervalStats),
) -> ErrorHistogram {
    let mut total_hist = ErrorHistogram::new();
    let mut last = CounterSnapshot::default();
    let mut last_t = start;
    let tick = Duration::from_millis(20);
    let mut next = start + cfg.stats_interval;
    let mut interval = ErrorHistogram::new();
    loop {
        let done = finished();
        let t = now();
        // Taken on every tick, so that TX threads always find a spare.
        for c in counters {
            c.eps.collect(&mut interval);
        }
        if t >= next || done {
            let mut cur = CounterSnapshot::default();
            for c in counters {
                cur += c.snapshot();
            }
            total_hist.merge(&interval);
            let dt = t.since(last_t).as_secs_f64().max(1e-9);
            if t > start && (cur.packets > last.packets || !done) {
                let mut stats = IntervalStats {
                    t: t.since(start).as_secs_f64(),
                    packets: cur.packets,
                    bytes: cur.bytes,
                    late: cur.late,
                    dropped: cur.dropped,
                    pps: (cur.packets - last.packets) as f64 / dt,
                    bps: (cur.bytes - last.bytes) as f64 * 8.0 / dt,
                    eps: (!cfg.topspeed && !interval.is_empty()).then(|| interval.percentiles()),
                    flows: Vec::new(),
                    active_flows: None,
                };
                if observer.wants_flows() {
                    extra(&mut stats);
                }
                observer.interval(&stats);
            }
            interval.reset();
            last = cur;
            last_t = t;
            next = t + cfg.stats_interval;
        }
        // Each pass as soon as every TX thread is done with it; at the end,
        // what a limit, the duration or a stop cut short.
        for p in passes.map(|b| b.take(done)).unwrap_or_default() {
            observer.pass(&p);
        }
        if done {
            return total_hist;
        }
        if cfg.clock.is_real() {
            thread::sleep(tick);
        } else {
            thread::yield_now();
        }
    }
}

/// Pinning, real-time priority and timer slack for one TX thread; refusals
/// become warnings in the summary, never failures.
fn prepare_tx_thread(i: usize, cpu: Option<usize>, rt: bool, warnings: &mut Vec<String>) {
    let _ = os::set_timer_slack(1);
    if let Some(cpu) = cpu {
        if let Err(e) = os::pin_to_cpu(cpu) {
            warnings.push(format!("TX thread {i}: --cpu {cpu} refused: {e}"));
        }
    }
    if rt {
        if let Err(e) = os::set_realtime(50) {
            warnings.push(format!("TX thread {i}: --rt SCHED_FIFO refused: {e}"));
        } else if i == 0 && os::rt_throttled() {
            warnings.push(
                "--rt: the kernel throttles real-time threads (kernel.sched_rt_runtime_us != -1): \
                 a spinning TX thread is frozen for 50 ms of every second; \
                 `sysctl kernel.sched_rt_runtime_us=-1` lifts it"
                    .into(),
            );
        }
        if i == 0 {
            if let Err(e) = os::lock_memory() {
                warnings.push(format!("--rt mlockall refused: {e}"));
            }
        }
    }
}
