//! The batch pipeline, which every [`Source`] runs on: the IO thread runs
//! the source into batches (`io.rs`), each TX thread sends its lane's
//! batches as they come ([`BatchFeed`]) and hands them back for reuse.
//!
//! Planner threads ([`run_sources`]): a stream given as several sources,
//! each a disjoint part of it (every flow in exactly one), runs one IO
//! thread per part. Part k owns the lanes l with l mod parts = k, so each
//! lane is fed by one producer in due order and per-flow order holds as
//! with one IO thread. The run starts once every part has queued its lead.

use crate::config::{EngineConfig, RxStampMode};
use crate::io::{self, IoContext, IoOutcome, PRIME_BATCHES};
use crate::passes::PassBoard;
use crate::run::{EngineError, Pipeline, Run};
use crate::stats::{Observer, Summary};
use crate::tx::{BatchFeed, Stamper};
use crossbeam_channel::{Receiver, Sender};
use sluice_core::{Batch, Fates, MonoTime, MonotonicClock, Nanos, OutboxRules, VirtualClock, Work};
use sluice_sink::Sink;
use sluice_source::{Origin, RunContext, Source, SourceReport};
use std::sync::Arc;
use std::thread;

/// Batches queued per TX thread: with 512-packet batches, 64 batches are
/// 32k packets of lead over the disk.
const QUEUE_BATCHES: usize = 64;
/// A batch is handed to its TX thread before a packet due this long after
/// its first (batches end at gaps; see `Outbox`).
const BATCH_SPAN: Nanos = Nanos::from_millis(2);

/// Runs `source` into `sinks` (one TX thread per sink): the IO thread runs
/// the source into batches, the TX threads pace them out.
pub fn run_source(
    source: impl Source + 'static,
    sinks: Vec<Box<dyn Sink>>,
    cfg: &EngineConfig,
    observer: &mut dyn Observer,
) -> Result<Summary, EngineError> {
    run_sources(vec![Box::new(source)], sinks, cfg, observer)
}

/// Runs a stream given as disjoint parts (`sources`, one planner thread
/// each; every flow in exactly one part) into `sinks`, of which there are
/// at least as many as parts: part k feeds the TX threads l with
/// l mod parts = k. A limit on packets needs one part (the first N
/// packets in time order are no one part's to count).
pub fn run_sources(
    sources: Vec<Box<dyn Source>>,
    sinks: Vec<Box<dyn Sink>>,
    cfg: &EngineConfig,
    observer: &mut dyn Observer,
) -> Result<Summary, EngineError> {
    let clocks = (MonotonicClock::new(), VirtualClock::new(MonoTime(0)));
    run_parts_on(sources, sinks, cfg, observer, clocks)
}

/// [`run_sources`] on the given clocks (see [`Run::execute`]).
pub(crate) fn run_parts_on(
    sources: Vec<Box<dyn Source>>,
    sinks: Vec<Box<dyn Sink>>,
    cfg: &EngineConfig,
    observer: &mut dyn Observer,
    clocks: (MonotonicClock, VirtualClock),
) -> Result<Summary, EngineError> {
    let parts = sources.len();
    if parts == 0 || parts > sinks.len() {
        return Err(EngineError::Parts {
            parts,
            lanes: sinks.len(),
        });
    }
    if parts > 1 {
        if cfg.limit.is_some() || cfg.burst.is_some() {
            return Err(EngineError::PartsWithLimit(parts));
        }
        if sources
            .iter()
            .any(|s| s.origin() == Origin::Live || s.wants_fates())
        {
            return Err(EngineError::Parts {
                parts,
                lanes: sinks.len(),
            });
        }
    }
    let source = &sources[0];
    // A live source ends itself at the duration (it is told in
    // `RunContext`); the engine cuts neither its frames nor its TX threads.
    let live = source.origin() == Origin::Live;
    let own;
    let (cfg, source_duration) = if live {
        own = EngineConfig {
            duration: None,
            ..cfg.clone()
        };
        (&own, cfg.duration)
    } else {
        (cfg, None)
    };
    let pipeline = BatchPipeline {
        fates: source.wants_fates().then(|| Arc::new(Fates::new())),
        sources,
        cfg,
        source_duration,
        lanes: Vec::new(),
        free: Vec::new(),
        io: Vec::new(),
        pass_board: None,
        clock: None,
    };
    Run::execute(pipeline, sinks, cfg, observer, clocks)
}

struct BatchPipeline<'a> {
    /// The stream's parts, until their IO threads take them.
    sources: Vec<Box<dyn Source>>,
    fates: Option<Arc<Fates>>,
    cfg: &'a EngineConfig,
    /// The duration a live source ends itself at (`RunContext::duration`).
    source_duration: Option<sluice_core::Nanos>,
    /// Each TX thread's batches, until its feed takes them.
    lanes: Vec<Option<Receiver<Work>>>,
    /// Where sent batches go back, one channel per part: its own TX
    /// threads return to it alone (a planner draining a shared pool at its
    /// end would starve the others). Each part's last feed takes its
    /// sender, so that the IO thread sees the channel close once its TX
    /// threads are gone.
    free: Vec<Option<Sender<Batch>>>,
    /// One IO (planner) thread per part.
    io: Vec<thread::JoinHandle<Result<IoOutcome, sluice_source::SourceError>>>,
    /// Per-pass statistics, when asked for and the source has passes.
    pass_board: Option<Arc<PassBoard>>,
    /// The run's clock, for the receive stamps' departure times.
    clock: Option<MonotonicClock>,
}

/// No rescue board (the trait's default): each flow stays on its TX
/// thread, in order (see `tx/board.rs`).
impl Pipeline for BatchPipeline<'_> {
    type Feed = BatchFeed;
    /// Frames that left without a receive stamp.
    type Tally = u64;
    const OVERSIZE: &'static str = "frames were larger than the interface accepts";

    fn live(&self) -> bool {
        self.sources.iter().any(|s| s.origin() == Origin::Live)
    }

    fn prime(
        &mut self,
        lanes: usize,
        start: Option<MonoTime>,
        clock: MonotonicClock,
    ) -> Result<u64, EngineError> {
        if self.fates.is_some() && lanes > 1 {
            // Fates are matched to frames by order, which holds on one thread.
            return Err(EngineError::FatesOnOneThread(lanes));
        }
        let sources = std::mem::take(&mut self.sources);
        assert!(!sources.is_empty(), "primed once");
        let parts = sources.len();
        let cfg = self.cfg;
        let (primed_tx, primed_rx) = crossbeam_channel::bounded(parts);
        let mut to_tx: Vec<Vec<Sender<Work>>> = (0..parts).map(|_| Vec::new()).collect();
        for l in 0..lanes {
            let (s, r) = crossbeam_channel::bounded(QUEUE_BATCHES);
            to_tx[l % parts].push(s);
            self.lanes.push(Some(r));
        }
        self.clock = Some(clock);
        let repeats = cfg.passes != 1 && sources[0].pass_period().is_some();
        // Pass ends are marked by one producer (per-pass statistics need
        // every lane's count at the end of a pass).
        self.pass_board =
            (cfg.pass_stats && repeats && parts == 1).then(|| Arc::new(PassBoard::new(lanes)));
        let rules = OutboxRules {
            span: (!cfg.topspeed).then_some(BATCH_SPAN),
            limit: cfg.limit,
            // On a live timeline the duration is real time: the TX
            // threads end it, whatever was planned.
            max_due: cfg.duration.filter(|_| cfg.live.is_none()),
            burst: cfg.burst,
            grow: (cfg.rx_stamp == Some(RxStampMode::Append))
                .then_some(sluice_wire::rxstamp::append_room as fn(&mut Vec<u8>, usize)),
        };
        let realtime_start =
            start.map(|s| sluice_source::seam::at_start(&clock, s, sluice_sys::clock::realtime_ns));
        for (k, (mut source, to_tx)) in sources.into_iter().zip(to_tx).enumerate() {
            let own = to_tx.len();
            let (free_tx, free_rx) = crossbeam_channel::unbounded();
            self.free.push(Some(free_tx));
            // A live source stamps arrivals on the run's clock from its start.
            source.begin(&RunContext {
                clock,
                start,
                realtime_start,
                lanes: own,
                fates: self.fates.clone(),
                duration: self.source_duration,
            });
            let io_cx = IoContext {
                source,
                to_tx,
                free: free_rx,
                pool_limit: own * (QUEUE_BATCHES + 2) + PRIME_BATCHES,
                primed: primed_tx.clone(),
                stop: cfg.stop.clone(),
                rules,
                passes: cfg.passes,
                pass_board: self.pass_board.clone(),
                live_origin: realtime_start,
                // A preloaded pass repeats its due times: bursts count
                // every packet, so they stream.
                preload_budget: (cfg.preload && cfg.burst.is_none()).then(|| {
                    cfg.preload_budget
                        .unwrap_or_else(io::default_preload_budget)
                        / parts as u64
                }),
            };
            let name = if parts == 1 {
                "sluice-io".to_string()
            } else {
                format!("sluice-plan{k}")
            };
            let pins = cfg.planner_cpus().to_vec();
            let io = thread::Builder::new()
                .name(name)
                .spawn(move || {
                    crate::run::pin_planner(&pins, k);
                    io::run(io_cx)
                })
                .map_err(EngineError::Spawn)?;
            self.io.push(io);
        }
        drop(primed_tx);
        // Every part has queued its prefetch lead (or is done); the run is
        // stamped from the earliest first packet.
        let mut first = None::<u64>;
        for _ in 0..parts {
            if let Ok(Some(ts)) = primed_rx.recv() {
                first = Some(first.map_or(ts, |f| f.min(ts)));
            }
        }
        Ok(first.unwrap_or(0))
    }

    fn fates(&self) -> Option<Arc<Fates>> {
        self.fates.clone()
    }

    fn feed(&mut self, i: usize, _sink: &dyn Sink) -> BatchFeed {
        // Lane i belongs to part i mod parts; its last lane takes the
        // sender, so the part's IO thread sees the channel close once
        // every one of its TX threads is gone.
        let parts = self.free.len();
        let last = i + parts >= self.lanes.len();
        let free = if last {
            self.free[i % parts].take()
        } else {
            self.free[i % parts].clone()
        };
        let mut feed = BatchFeed::new(
            self.lanes[i].take().expect("one feed per lane"),
            free.expect("one feed per lane"),
            self.pass_board.clone().map(|b| (b, i)),
        );
        if self.cfg.rx_stamp.is_some() {
            let clock = self.clock.expect("primed first");
            let (from, shift) = (self.cfg.stamp_streams_from, self.cfg.stamp_clock_shift_ns);
            feed.stamper = Some(Stamper::new(from.wrapping_add(i as u32), &clock, shift));
        }
        feed
    }

    fn passes(&self) -> Option<Arc<PassBoard>> {
        self.pass_board.clone()
    }

    fn tally(feed: BatchFeed) -> u64 {
        feed.stamper.map_or(0, |s| s.departures.unstamped)
    }

    fn finish(
        self,
        tallies: Vec<u64>,
        _rescued: Option<u64>,
        summary: &mut Summary,
    ) -> Result<Vec<String>, EngineError> {
        // TX threads are gone: an IO thread blocked on a full queue sees the
        // disconnect and returns.
        let mut report = SourceReport::default();
        let mut passes = u64::MAX;
        let mut failed = None;
        for io in self.io {
            match io.join().map_err(|_| EngineError::Panic("IO"))? {
                Ok(read) => {
                    let r = read.report;
                    report.skipped_unsupported += r.skipped_unsupported;
                    report.rewritten += r.rewritten;
                    report.truncation = report.truncation.or(r.truncation);
                    report.notes.extend(r.notes);
                    for (k, v) in r.counters {
                        match report.counters.iter_mut().find(|(n, _)| *n == k) {
                            Some((_, sum)) => *sum += v,
                            None => report.counters.push((k, v)),
                        }
                    }
                    passes = passes.min(read.passes);
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e.into());
        }
        summary.skipped_unsupported = report.skipped_unsupported;
        summary.rewritten = report.rewritten;
        summary.passes = passes;
        summary.source = report
            .counters
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let mut warnings = Vec::new();
        let unstamped: u64 = tallies.iter().sum();
        if unstamped > 0 {
            warnings.push(format!(
                "--rx-stamp: {unstamped} frames left without a stamp (not TCP, UDP or ICMP, \
                 a fragment, or under 16 payload bytes with `replace`): a receiver does not count them"
            ));
        }
        if let Some(t) = &report.truncation {
            warnings.push(format!("{t} (the packets before it were sent)"));
        }
        warnings.extend(report.notes);
        Ok(warnings)
    }
}
