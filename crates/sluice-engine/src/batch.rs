//! The batch pipeline, which every [`Source`] runs on: the IO thread runs
//! the source into batches (`io.rs`), each TX thread sends its lane's
//! batches as they come ([`BatchFeed`]) and hands them back for reuse.

use crate::config::{EngineConfig, RxStampMode};
use crate::io::{self, IoContext, IoOutcome, PRIME_BATCHES};
use crate::passes::PassBoard;
use crate::run::{EngineError, Pipeline, Run};
use crate::stats::{Observer, Summary};
use crate::tx::{BatchFeed, Stamper};
use crossbeam_channel::{Receiver, Sender};
use sluice_core::{Batch, Fates, MonoTime, MonotonicClock, Nanos, OutboxRules, VirtualClock, Work};
use sluice_sink::Sink;
use sluice_source::{Origin, RunContext, Source};
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
    let clocks = (MonotonicClock::new(), VirtualClock::new(MonoTime(0)));
    run_source_on(source, sinks, cfg, observer, clocks)
}

/// [`run_source`] on the given clocks (see [`Run::execute`]).
pub(crate) fn run_source_on(
    source: impl Source + 'static,
    sinks: Vec<Box<dyn Sink>>,
    cfg: &EngineConfig,
    observer: &mut dyn Observer,
    clocks: (MonotonicClock, VirtualClock),
) -> Result<Summary, EngineError> {
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
        source: Some(Box::new(source)),
        cfg,
        source_duration,
        lanes: Vec::new(),
        free: None,
        io: None,
        pass_board: None,
        clock: None,
    };
    Run::execute(pipeline, sinks, cfg, observer, clocks)
}

struct BatchPipeline<'a> {
    /// Until the IO thread takes it.
    source: Option<Box<dyn Source>>,
    fates: Option<Arc<Fates>>,
    cfg: &'a EngineConfig,
    /// The duration a live source ends itself at (`RunContext::duration`).
    source_duration: Option<sluice_core::Nanos>,
    /// Each TX thread's batches, until its feed takes them.
    lanes: Vec<Option<Receiver<Work>>>,
    /// Where sent batches go back; the last feed takes it, so that the IO
    /// thread sees the channel close once every TX thread is gone.
    free: Option<Sender<Batch>>,
    io: Option<thread::JoinHandle<Result<IoOutcome, sluice_source::SourceError>>>,
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
        self.source
            .as_ref()
            .is_some_and(|s| s.origin() == Origin::Live)
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
        let mut source = self.source.take().expect("primed once");
        let cfg = self.cfg;
        let (free_tx, free_rx) = crossbeam_channel::unbounded();
        let (primed_tx, primed_rx) = crossbeam_channel::bounded(1);
        let mut to_tx = Vec::with_capacity(lanes);
        for _ in 0..lanes {
            let (s, r) = crossbeam_channel::bounded(QUEUE_BATCHES);
            to_tx.push(s);
            self.lanes.push(Some(r));
        }
        self.free = Some(free_tx);
        self.clock = Some(clock);
        let repeats = cfg.passes != 1 && source.pass_period().is_some();
        self.pass_board = (cfg.pass_stats && repeats).then(|| Arc::new(PassBoard::new(lanes)));
        // A live source stamps arrivals on the run's clock from its start.
        source.begin(&RunContext {
            clock,
            start,
            lanes,
            fates: self.fates.clone(),
            duration: self.source_duration,
        });
        let io_cx = IoContext {
            source,
            to_tx,
            free: free_rx,
            pool_limit: lanes * (QUEUE_BATCHES + 2) + PRIME_BATCHES,
            primed: primed_tx,
            stop: cfg.stop.clone(),
            rules: OutboxRules {
                span: (!cfg.topspeed).then_some(BATCH_SPAN),
                limit: cfg.limit,
                max_due: cfg.duration,
                grow: (cfg.rx_stamp == Some(RxStampMode::Append))
                    .then_some(sluice_wire::rxstamp::append_room as fn(&mut Vec<u8>, usize)),
            },
            passes: cfg.passes,
            pass_board: self.pass_board.clone(),
            preload_budget: cfg.preload.then(|| {
                cfg.preload_budget
                    .unwrap_or_else(io::default_preload_budget)
            }),
        };
        let io = thread::Builder::new()
            .name("sluice-io".into())
            .spawn(move || io::run(io_cx))
            .map_err(EngineError::Spawn)?;
        self.io = Some(io);
        // The prefetch lead is queued (or the IO thread is done).
        Ok(primed_rx.recv().ok().flatten().unwrap_or(0))
    }

    fn fates(&self) -> Option<Arc<Fates>> {
        self.fates.clone()
    }

    fn feed(&mut self, i: usize, _sink: &dyn Sink) -> BatchFeed {
        let last = i + 1 == self.lanes.len();
        let free = if last {
            self.free.take()
        } else {
            self.free.clone()
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
        let io = self.io.expect("primed");
        let read = io.join().map_err(|_| EngineError::Panic("IO"))??;
        let report = read.report;
        summary.skipped_unsupported = report.skipped_unsupported;
        summary.rewritten = report.rewritten;
        summary.passes = read.passes;
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
