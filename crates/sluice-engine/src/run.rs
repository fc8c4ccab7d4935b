//! Orchestration: start the threads, release them together, aggregate
//! statistics once per interval, collect the summary.

use crate::config::{ClockChoice, EngineConfig};
use crate::io::{self, IoContext, PRIME_BATCHES};
use crate::stats::{CounterSnapshot, IntervalStats, Observer, SharedCounters, Summary};
use crate::tx::{self, TxContext};
use sluice_core::{Clock, ErrorHistogram, MonoTime, MonotonicClock, Nanos, VirtualClock};
use sluice_pace::{Pacer, SpinSleep, Waiter};
use sluice_sink::{Sink, SinkError};
use sluice_source::{Source, SourceError};
use sluice_sys::sched as os;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

/// Batches queued per TX thread: with 512-packet batches, 64 batches are
/// 32k packets (≥ 30 ms at 1 Mpps) of lead over the disk.
const QUEUE_BATCHES: usize = 64;
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
}

/// Replays `source` into `sinks` (one TX thread per sink).
pub fn run_replay(
    source: impl Source + 'static,
    sinks: Vec<Box<dyn Sink>>,
    cfg: &EngineConfig,
    observer: &mut dyn Observer,
) -> Result<Summary, EngineError> {
    let n = sinks.len().max(1);
    let mut warnings = Vec::new();
    let (free_tx, free_rx) = crossbeam_channel::unbounded();
    let (primed_tx, primed_rx) = crossbeam_channel::bounded(1);
    let mut to_tx = Vec::with_capacity(n);
    let mut from_io = Vec::with_capacity(n);
    for _ in 0..n {
        let (s, r) = crossbeam_channel::bounded(QUEUE_BATCHES);
        to_tx.push(s);
        from_io.push(r);
    }
    let io_cx = IoContext {
        source: Box::new(source),
        to_tx,
        free: free_rx,
        pool_limit: n * (QUEUE_BATCHES + 2) + PRIME_BATCHES,
        primed: primed_tx,
        stop: cfg.stop.clone(),
        preload_budget: cfg.preload_budget,
    };
    if !cfg.cpus.is_empty() {
        // The aggregator (this thread) and the IO thread, which inherits the
        // mask when spawned below, keep off the TX CPUs; TX threads pin
        // themselves explicitly.
        let _ = os::avoid_cpus(&cfg.cpus);
    }
    let io = thread::Builder::new()
        .name("sluice-io".into())
        .spawn(move || io::run(io_cx))
        .map_err(EngineError::Spawn)?;

    // Wait for the prefetch lead, then fix the common start time.
    let stamp_base = primed_rx.recv().ok().flatten().unwrap_or(0);
    let virtual_clock = VirtualClock::new(MonoTime(0));
    let mono = MonotonicClock::new();
    let now = || match cfg.clock {
        ClockChoice::Monotonic => mono.now(),
        ClockChoice::Virtual => Clock::now(&virtual_clock),
    };
    let start = match cfg.clock {
        ClockChoice::Monotonic => mono.now() + START_LEAD,
        ClockChoice::Virtual => Clock::now(&virtual_clock),
    };
    let starter = TxStarter::new(n, cfg);
    let counters: Vec<Arc<SharedCounters>> = (0..n).map(|_| Arc::default()).collect();
    let mut txs = Vec::with_capacity(n);
    for (i, (sink, batches)) in sinks.into_iter().zip(from_io).enumerate() {
        let cx = TxContext {
            batches,
            free: free_tx.clone(),
            sink,
            waiter: make_waiter(cfg, mono, &virtual_clock),
            pacer: Pacer::new(start, cfg.drift, cfg.topspeed),
            topspeed: cfg.topspeed,
            late_threshold: cfg.late_threshold,
            duration: cfg.duration,
            stamp_base,
            counters: counters[i].clone(),
            stop: cfg.stop.clone(),
        };
        txs.push(starter.spawn(i, move || tx::run(cx))?);
    }
    drop(free_tx);
    starter.release();

    let finished = || txs.iter().all(|h| h.is_finished());
    let total_hist = aggregate(
        &finished,
        &counters,
        cfg,
        start,
        &now,
        observer,
        &mut |_| {},
    );

    let mut totals = CounterSnapshot::default();
    let mut last_send = start;
    let mut sink_names = Vec::new();
    let mut first_error = None;
    for h in txs {
        let out = h.join().map_err(|_| EngineError::Panic("TX"))?;
        totals += out.totals;
        last_send = last_send.max(out.last_send);
        sink_names.push(out.sink);
        if let Some(e) = out.error {
            first_error.get_or_insert(e);
        }
    }
    let interrupted = cfg.stop.load(Ordering::Relaxed);
    // TX threads are gone: an IO thread blocked on a full queue sees the
    // disconnect and returns.
    let src = io.join().map_err(|_| EngineError::Panic("IO"))?;
    if let Some(e) = first_error {
        return Err(e.into());
    }
    // The last aggregation ran after every TX thread finished, so it holds
    // their final histogram hand-offs.
    let read = src?;
    if let Some(t) = &read.truncation {
        warnings.push(format!("{t} (the packets before it were sent)"));
    }
    warnings.extend(read.notes.iter().cloned());
    warnings.extend(starter.warnings());
    if totals.oversize > 0 {
        warnings.push(format!(
            "{} frames were larger than the interface accepts and were skipped",
            totals.oversize
        ));
    }
    let duration = last_send.since(start).as_secs_f64();
    Ok(Summary {
        skipped_unsupported: read.skipped_unsupported,
        rewritten: read.rewritten,
        passes: read.passes,
        interrupted,
        warnings,
        ..Summary::base(sink_names, n, &totals, duration, &total_hist, cfg.topspeed)
    })
}

/// The wait strategy of a TX thread for the configured clock.
pub(crate) fn make_waiter(
    cfg: &EngineConfig,
    mono: MonotonicClock,
    virtual_clock: &VirtualClock,
) -> Box<dyn Waiter + Send> {
    match cfg.clock {
        ClockChoice::Monotonic => Box::new(SpinSleep::new(mono, cfg.spin)),
        ClockChoice::Virtual => Box::new(virtual_clock.clone()),
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
    observer: &mut dyn Observer,
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
        if done {
            return total_hist;
        }
        if cfg.clock == ClockChoice::Monotonic {
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
