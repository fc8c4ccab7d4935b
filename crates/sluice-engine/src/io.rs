//! The IO thread: keeps every TX thread supplied with filled batches.
//!
//! Streaming (the default) reads the trace pass after pass into a bounded
//! pool of reusable batches. With `--preload` the first pass is read into
//! memory before the run starts and every pass, the first included, is sent
//! from there as shared batches with shifted due times: no file reading and
//! no copying while the clock runs (tcpreplay's `--preload-pcap`).

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use sluice_core::{Batch, Nanos, Work};
use sluice_source::{Fill, RepeatPlan, ReplayCounters, Source, SourceError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Batches handed over before the run may start (the prefetch lead).
pub(crate) const PRIME_BATCHES: usize = 8;
/// Preload budget when /proc/meminfo cannot be read.
const FALLBACK_PRELOAD_BUDGET: u64 = 1 << 30;

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
    /// Bytes a preloaded trace may occupy; None = half of MemAvailable.
    pub preload_budget: Option<u64>,
}

pub(crate) fn run(cx: IoContext) -> Result<ReplayCounters, SourceError> {
    let IoContext {
        mut source,
        to_tx,
        free,
        pool_limit,
        primed,
        stop,
        preload_budget,
    } = cx;
    let n = to_tx.len();
    let mut feed = Feeder {
        to_tx,
        free,
        allocated: 0,
        pool_limit,
        primed: Some(primed),
        handed: 0,
        stop,
        gone: false,
        nap_when_full: source.generated(),
    };
    let mut current: Vec<Batch> = (0..n).map(|_| feed.fresh()).collect();
    let mut notes = Vec::new();
    let mut repeated = 0;
    let mut cache = Vec::new();
    let result = if source.preloading() {
        let budget = preload_budget.unwrap_or_else(default_preload_budget);
        preload(
            source.as_mut(),
            &mut feed,
            &mut current,
            &mut cache,
            budget,
            &mut notes,
        )
        .map(|r| repeated = r)
    } else {
        stream(source.as_mut(), &mut feed, &mut current)
    };
    feed.prime(source.as_ref());
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
    drop(cache);
    drop(feed);
    let mut counters = source.counters().clone();
    counters.notes.extend(notes);
    counters.passes += repeated;
    result.map(|()| counters)
}

/// Where the IO thread waits for batches to come back (the pool is used
/// up, or the run is over) it naps between tries instead of blocking: a
/// blocked IO thread is woken by the TX thread's next return, and that
/// wake-up is a system call (10–25 µs on this kind of VM) made on the TX
/// thread between two packets. Naps grow from 20 µs to 1 ms.
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
    handed: usize,
    stop: Arc<AtomicBool>,
    /// A TX thread stopped (its channel is closed).
    gone: bool,
    /// Nap rather than block while a TX queue is full (see `hand`).
    nap_when_full: bool,
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

    /// Sends work to TX thread `i`; false once that thread has stopped.
    ///
    /// While the queue is full, a generated source's IO thread naps (20 µs
    /// doubling to 1 ms) instead of blocking: blocked, it would be woken by
    /// the TX thread's next receive, a system call on the TX thread, and
    /// FLOR's 1 000-flow timing test through veth measured flow start error
    /// p99 63 and 114 µs napping against 233 and 264 µs blocking
    /// (alternated runs). A source that reads a file blocks: there the naps
    /// measured worse (a cold-cache 4 GiB replay at 100 kpps: ε p99 15–20
    /// ms napping against 27 µs–2.1 ms blocking; 20 µs naps were seen to
    /// wake 3–25 ms late while the disk was read).
    fn hand(&mut self, i: usize, work: Work) -> bool {
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
        self.handed += 1;
        true
    }

    /// Releases the start once (the first packet's timestamp goes along).
    fn prime(&mut self, source: &dyn Source) {
        if let Some(p) = self.primed.take() {
            let _ = p.send(source.first_ts());
        }
    }

    fn prime_after_lead(&mut self, source: &dyn Source) {
        if self.handed >= PRIME_BATCHES {
            self.prime(source);
        }
    }
}

/// Reads the trace pass after pass into pooled batches.
fn stream(
    source: &mut dyn Source,
    feed: &mut Feeder,
    current: &mut [Batch],
) -> Result<(), SourceError> {
    let mut ready = vec![false; current.len()];
    loop {
        if feed.stopped() {
            return Ok(());
        }
        let done = source.fill(current, &mut ready)? == Fill::Done;
        for i in 0..current.len() {
            if !(ready[i] || done && !current[i].is_empty()) {
                continue;
            }
            ready[i] = false;
            let Some(fresh) = feed.take() else {
                return Ok(());
            };
            let full = std::mem::replace(&mut current[i], fresh);
            if !feed.hand(i, Work::Owned(full)) {
                return Ok(());
            }
        }
        feed.prime_after_lead(source);
        if done {
            return Ok(());
        }
    }
}

/// Loads the first pass, then sends every pass from memory. Falls back to
/// streaming (with a note) when the trace outgrows `budget` bytes. Returns
/// the passes completed after the first.
fn preload(
    source: &mut dyn Source,
    feed: &mut Feeder,
    current: &mut [Batch],
    cache: &mut Vec<(usize, Arc<Batch>)>,
    budget: u64,
    notes: &mut Vec<String>,
) -> Result<u64, SourceError> {
    let mut ready = vec![false; current.len()];
    let mut cached: u64 = 0;
    loop {
        if feed.stopped() {
            return Ok(0);
        }
        let done = source.fill(current, &mut ready)? == Fill::Done;
        for i in 0..current.len() {
            if !(ready[i] || done && !current[i].is_empty()) {
                continue;
            }
            ready[i] = false;
            let fresh = feed.fresh();
            let mut full = std::mem::replace(&mut current[i], fresh);
            feed.allocated -= 1; // kept in the cache, never returned to the pool
            full.data.shrink_to_fit();
            full.entries.shrink_to_fit();
            cached += (full.data.capacity() + std::mem::size_of_val(&full.entries[..])) as u64;
            cache.push((i, Arc::new(full)));
        }
        if done {
            break;
        }
        if cached > budget {
            notes.push(format!(
                "--preload: the trace needs more than {} MiB of memory; it is streamed from the file instead",
                budget >> 20
            ));
            let whole = |b: &Arc<Batch>| b.len();
            for (i, b) in cache.drain(..) {
                let take = whole(&b);
                let w = Work::Repeat {
                    batch: b,
                    offset: Nanos(0),
                    take,
                };
                if !feed.hand(i, w) {
                    return Ok(0);
                }
                feed.prime_after_lead(source);
            }
            source.stream_rest();
            return stream(source, feed, current).map(|()| 0);
        }
    }
    // The first pass, from memory like the rest.
    for (i, b) in cache.iter() {
        let w = Work::Repeat {
            batch: b.clone(),
            offset: Nanos(0),
            take: b.len(),
        };
        if !feed.hand(*i, w) {
            return Ok(0);
        }
        feed.prime_after_lead(source);
    }
    feed.prime(source);
    Ok(match source.repeat_plan() {
        Some(plan) => repeat(&plan, cache, feed, source.counters().produced),
        None => 0,
    })
}

/// Passes 1.. of a preloaded trace, up to the plan's passes, limit or end.
/// Returns the passes sent completely.
fn repeat(
    plan: &RepeatPlan,
    cache: &[(usize, Arc<Batch>)],
    feed: &mut Feeder,
    first_pass: u64,
) -> u64 {
    let mut left = plan.limit.map(|l| l.saturating_sub(first_pass));
    let mut pass = 1u64;
    while plan.passes == 0 || pass < plan.passes {
        let offset = plan.offset(pass);
        for (i, b) in cache {
            if feed.stopped() {
                return pass - 1;
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
                && !feed.hand(
                    *i,
                    Work::Repeat {
                        batch: b.clone(),
                        offset,
                        take,
                    },
                )
            {
                return pass - 1;
            }
            if take < b.len() {
                return pass - 1; // a limit or the duration ends the run here
            }
        }
        pass += 1;
    }
    pass - 1
}

/// Half of the memory the kernel says is available.
pub(crate) fn default_preload_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| kib * 1024 / 2)
        .unwrap_or(FALLBACK_PRELOAD_BUDGET)
}
