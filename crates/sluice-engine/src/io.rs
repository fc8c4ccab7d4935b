//! The IO thread: runs the source into an [`Outbox`] and keeps every TX
//! thread supplied with filled batches.
//!
//! Streaming (the default) runs the source pass after pass into a bounded
//! pool of reusable batches. With `--preload` the first pass is kept in
//! memory before the run starts and every pass, the first included, is sent
//! from there as shared batches with shifted due times: no file reading and
//! no copying while the clock runs (tcpreplay's `--preload-pcap`). Both are
//! the engine's, for any source with passes; the source only produces.

use crate::passes::PassBoard;
use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use sluice_core::{Batch, Handoff, Nanos, Outbox, OutboxRules, Work};
use sluice_source::{End, Origin, Source, SourceError, SourceReport};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Batches handed over before the run may start (the prefetch lead).
pub(crate) const PRIME_BATCHES: usize = 8;

pub(crate) struct IoContext {
    pub source: Box<dyn Source>,
    pub to_tx: Vec<Sender<Work>>,
    pub free: Receiver<Batch>,
    /// Most batches that may exist at once: bounds memory.
    pub pool_limit: usize,
    /// Told once the TX threads may start: carries the first packet's
    /// capture timestamp.
    pub primed: Sender<Option<u64>>,
    pub stop: Arc<AtomicBool>,
    /// Batching, packet limit and last due time of the stream.
    pub rules: OutboxRules,
    /// Passes over the source; 0 = forever.
    pub passes: u64,
    /// Keep the first pass in memory and repeat it from there, within this
    /// many bytes (None: stream).
    pub preload_budget: Option<u64>,
    /// Where pass ends are recorded, for per-pass statistics.
    pub pass_board: Option<Arc<PassBoard>>,
    /// A live source's stamp origin: CLOCK_REALTIME at the run's start, so
    /// its pcap output is stamped with wall-clock departures (as tcpdump
    /// stamps a capture, and as inject acknowledges in the realtime base).
    pub live_origin: Option<u64>,
}

/// What the IO thread reports at the end.
pub(crate) struct IoOutcome {
    pub report: SourceReport,
    /// Passes completed.
    pub passes: u64,
}

pub(crate) fn run(cx: IoContext) -> Result<IoOutcome, SourceError> {
    let IoContext {
        mut source,
        to_tx,
        free,
        pool_limit,
        primed,
        stop,
        rules,
        passes,
        preload_budget,
        pass_board,
        live_origin,
    } = cx;
    let lanes = to_tx.len();
    let split = pass_board.is_some();
    let feed = RefCell::new(Feeder {
        to_tx,
        free,
        allocated: 0,
        pool_limit,
        primed: Some(primed),
        first_ts: None,
        handed: 0,
        stop,
        gone: false,
        nap_when_full: source.origin() == Origin::Memory,
        preload: preload_budget.map(|budget| Preload {
            budget,
            cached: 0,
            batches: Vec::new(),
        }),
        kept: Vec::new(),
        notes: Vec::new(),
        handed_to: vec![0; lanes],
        pass_board,
    });
    if source.origin() == Origin::Live {
        // Nothing to prefetch: the run starts at once (its start is
        // already fixed, see `run_source`).
        let mut f = feed.borrow_mut();
        f.first_ts = live_origin;
        f.prime();
    }
    let mut handoff = Shared(&feed);
    let mut out = Outbox::new(lanes, rules, &mut handoff);
    let mut done = 0u64;
    let result = (|| -> Result<u64, SourceError> {
        loop {
            let end = match source.fill(&mut out) {
                Ok(end) => end,
                Err(e) => {
                    // The packets before the bad one are good: they go out,
                    // and the error is reported with what was sent.
                    out.finish();
                    return Err(e);
                }
            };
            if end == End::Pass {
                done += 1;
            }
            let more = end == End::Pass && (passes == 0 || done < passes) && !out.stopped();
            let preloading = feed.borrow().preload.is_some();
            if end == End::Pass && !preloading {
                // Every frame of the pass is handed over (with `split`).
                out.end_pass(split);
                feed.borrow().pass_ended(done - 1);
            }
            if !more {
                out.finish();
                return Ok(0);
            }
            if preloading {
                // The first pass is in memory: every pass goes from there.
                out.finish();
                let period = source.pass_period().unwrap_or(0.0);
                let plan = RepeatPlan {
                    passes,
                    period_ns: period,
                    limit: rules.limit,
                    max_due: rules.max_due,
                };
                return Ok(feed.borrow_mut().repeat(&plan, out.packets()));
            }
            match source.rewind() {
                Ok(true) => {}
                Ok(false) => {
                    out.finish();
                    return Ok(0);
                }
                Err(e) => {
                    out.finish();
                    return Err(e);
                }
            }
        }
    })();
    drop(out);
    let mut feed = feed.into_inner();
    // A preloaded run that ended within its first pass (at its end, at a
    // limit, or at a bad packet) sends what it holds from memory.
    if let Some(p) = feed.preload.take() {
        feed.send_cached(&p.batches);
        feed.kept = p.batches;
    }
    feed.prime();
    // Dropping the senders ends the TX threads once they drained their queues.
    feed.to_tx.clear();
    // Every batch is freed here, after the TX threads have finished (they
    // close the free channel as they exit), never in a TX thread: the free()
    // that hands a whole preloaded trace back to the kernel takes
    // milliseconds, and would hold up the last packets.
    let mut nap = Nap::new();
    while !matches!(feed.free.try_recv(), Err(TryRecvError::Disconnected)) {
        nap.sleep();
    }
    let mut report = source.report();
    report.notes.append(&mut feed.notes);
    drop(feed);
    let repeated = result?;
    Ok(IoOutcome {
        report,
        passes: done + repeated,
    })
}

/// How to repeat a preloaded first pass: pass `k` (0-based) is the first
/// pass with every due offset moved by [`RepeatPlan::offset`]`(k)`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RepeatPlan {
    /// Passes in all, the loaded one included; 0 = forever.
    passes: u64,
    /// Length of one pass in ns (unrounded).
    period_ns: f64,
    /// Packets over all passes, if limited.
    limit: Option<u64>,
    /// No packet due later than this.
    max_due: Option<Nanos>,
}

impl RepeatPlan {
    fn offset(&self, pass: u64) -> Nanos {
        Nanos((pass as f64 * self.period_ns) as u64)
    }
}

/// Where the IO thread waits for batches to come back (the pool is used
/// up, or the run is over) it naps between tries instead of blocking: a
/// blocked IO thread is woken by the TX thread's next return, and that
/// wake-up is a system call made on the TX thread between two packets,
/// which delays the packets behind it. Naps grow from 20 µs to 1 ms.
struct Nap(Duration);

impl Nap {
    const FIRST: Duration = Duration::from_micros(20);
    const LONGEST: Duration = Duration::from_millis(1);

    fn new() -> Self {
        Nap(Self::FIRST)
    }

    fn sleep(&mut self) {
        std::thread::sleep(self.0);
        self.0 = (self.0 * 2).min(Self::LONGEST);
    }
}

/// Hands batches to the TX threads and recycles the ones they return.
struct Feeder {
    to_tx: Vec<Sender<Work>>,
    free: Receiver<Batch>,
    allocated: usize,
    pool_limit: usize,
    primed: Option<Sender<Option<u64>>>,
    /// Capture time of the stream's first packet, once known.
    first_ts: Option<u64>,
    handed: usize,
    stop: Arc<AtomicBool>,
    /// A TX thread stopped (its channel is closed).
    gone: bool,
    /// Nap rather than block while a TX queue is full (see `send`).
    nap_when_full: bool,
    /// The first pass kept in memory, while preloading.
    preload: Option<Preload>,
    /// A preloaded pass, kept until the TX threads are done with it.
    kept: Vec<(usize, Arc<Batch>)>,
    /// What the summary should mention.
    notes: Vec<String>,
    /// Frames handed to each lane so far.
    handed_to: Vec<u64>,
    pass_board: Option<Arc<PassBoard>>,
}

/// A first pass being kept in memory.
struct Preload {
    budget: u64,
    cached: u64,
    batches: Vec<(usize, Arc<Batch>)>,
}

/// The outbox's way into the feeder (the IO loop looks at the feeder
/// between passes).
struct Shared<'a>(&'a RefCell<Feeder>);

impl Handoff for Shared<'_> {
    fn hand(&mut self, lane: usize, batch: Batch, first_ts: Option<u64>) -> Option<Batch> {
        let mut feed = self.0.borrow_mut();
        if feed.first_ts.is_none() {
            feed.first_ts = first_ts;
        }
        if feed.stopped() {
            return None;
        }
        if feed.preload.is_some() {
            return Some(feed.keep(lane, batch));
        }
        let fresh = feed.take()?;
        if !feed.send(lane, Work::Owned(batch)) {
            return None;
        }
        feed.prime_after_lead();
        Some(fresh)
    }

    fn stopping(&self) -> bool {
        self.0.borrow().stopped()
    }
}

impl Feeder {
    fn stopped(&self) -> bool {
        self.gone || self.stop.load(Ordering::Relaxed)
    }

    fn fresh(&mut self) -> Batch {
        self.allocated += 1;
        Batch::new()
    }

    /// An empty batch from the pool, or None once the run is stopping.
    fn take(&mut self) -> Option<Batch> {
        let mut nap = Nap::new();
        loop {
            match self.free.try_recv() {
                Ok(mut b) => {
                    b.clear();
                    return Some(b);
                }
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            if self.allocated < self.pool_limit {
                return Some(self.fresh());
            }
            if self.stopped() {
                return None;
            }
            nap.sleep();
        }
    }

    /// Keeps a batch of the first pass in memory and returns a fresh one.
    /// Over the budget, it falls back to streaming (with a note): what is
    /// kept is sent, and the source goes on into the pool.
    fn keep(&mut self, lane: usize, mut full: Batch) -> Batch {
        full.data.shrink_to_fit();
        full.entries.shrink_to_fit();
        let size = (full.data.capacity() + std::mem::size_of_val(&full.entries[..])) as u64;
        let fresh = self.fresh();
        self.allocated -= 1; // kept in the cache, never returned to the pool
        let Some(p) = self.preload.as_mut() else {
            return fresh;
        };
        p.cached += size;
        full.keep();
        p.batches.push((lane, Arc::new(full)));
        if p.cached > p.budget {
            let p = self.preload.take().expect("preloading");
            self.notes.push(format!(
                "--preload: the trace needs more than its budget of {} bytes ({} MiB; --preload-max, \
                 --max-memory); it is streamed from the file instead",
                p.budget,
                p.budget >> 20
            ));
            self.send_cached(&p.batches);
            self.kept = p.batches;
        }
        fresh
    }

    /// Records that pass `pass` ended, with every frame of it handed over.
    fn pass_ended(&self, pass: u64) {
        if let Some(b) = &self.pass_board {
            b.ended(pass, &self.handed_to);
        }
    }

    /// Sends kept batches (a first pass) as they are.
    fn send_cached(&mut self, batches: &[(usize, Arc<Batch>)]) {
        for (i, b) in batches {
            let w = Work::Repeat {
                batch: b.clone(),
                offset: Nanos(0),
                take: b.len(),
                pass: 0,
            };
            if !self.send(*i, w) {
                return;
            }
            self.prime_after_lead();
        }
    }

    /// Sends work to TX thread `i`; false once that thread has stopped.
    ///
    /// While the queue is full, a generated source's IO thread naps (20 µs
    /// doubling to 1 ms) instead of blocking: blocked, it would be woken by
    /// the TX thread's next receive, a system call on the TX thread that
    /// delays the packets behind it, and a generated source is far enough
    /// ahead of the clock that a nap ending late costs nothing. A source
    /// that reads a file blocks: while the disk is being read, naps wake
    /// far later than asked, and the packets due meanwhile are late. Each
    /// source was measured both ways (see docs/BENCHMARKS.md).
    fn send(&mut self, i: usize, work: Work) -> bool {
        let frames = work.parts().2.len() as u64;
        let sent = if self.nap_when_full {
            let mut work = work;
            let mut nap = Nap::new();
            loop {
                match self.to_tx[i].try_send(work) {
                    Ok(()) => break true,
                    Err(TrySendError::Full(w)) if !self.stop.load(Ordering::Relaxed) => {
                        work = w;
                        nap.sleep();
                    }
                    Err(_) => break false,
                }
            }
        } else {
            self.to_tx[i].send(work).is_ok()
        };
        if !sent {
            self.gone = true;
            return false;
        }
        self.handed_to[i] += frames;
        self.handed += 1;
        true
    }

    /// Releases the start once (the first packet's timestamp goes along).
    fn prime(&mut self) {
        if let Some(p) = self.primed.take() {
            let _ = p.send(self.first_ts);
        }
    }

    fn prime_after_lead(&mut self) {
        if self.handed >= PRIME_BATCHES {
            self.prime();
        }
    }

    /// The first pass (kept in memory) and passes 1.. from it, up to the
    /// plan's passes, limit or end. Returns the passes sent completely after
    /// the first.
    fn repeat(&mut self, plan: &RepeatPlan, first_pass: u64) -> u64 {
        let Some(p) = self.preload.take() else {
            return 0;
        };
        self.send_cached(&p.batches);
        self.pass_ended(0);
        self.prime();
        let cache = &p.batches;
        let mut left = plan.limit.map(|l| l.saturating_sub(first_pass));
        let mut pass = 1u64;
        let repeated = 'passes: loop {
            if plan.passes != 0 && pass >= plan.passes {
                break pass - 1;
            }
            let offset = plan.offset(pass);
            for (i, b) in cache {
                if self.stopped() {
                    break 'passes pass - 1;
                }
                let mut take = b.len();
                if let Some(max) = plan.max_due {
                    take = b.entries.partition_point(|e| e.due + offset <= max);
                }
                if let Some(l) = left.as_mut() {
                    take = take.min(*l as usize);
                    *l -= take as u64;
                }
                if take > 0
                    && !self.send(
                        *i,
                        Work::Repeat {
                            batch: b.clone(),
                            offset,
                            take,
                            pass,
                        },
                    )
                {
                    break 'passes pass - 1;
                }
                if take < b.len() {
                    break 'passes pass - 1; // a limit or the duration ends the run here
                }
            }
            self.pass_ended(pass);
            pass += 1;
        };
        // Kept until the TX threads are done (freed by the IO thread).
        self.kept = p.batches;
        repeated
    }
}

/// Half of the memory the kernel says is available.
pub(crate) fn default_preload_budget() -> u64 {
    sluice_sys::mem::default_budget()
}
