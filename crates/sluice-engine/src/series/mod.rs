//! Time-series play (paper §V-B): one IO thread, worker threads and TX
//! threads around lock-free MPMC queues.
//!
//! ```text
//!  IO thread ──buffers of whole records──► worker w ──chunks──► queue w % Q ──► TX t (t % Q)
//!      ▲  (two per worker, 64 MiB each)        │ out-of-order ──► ooo queue ──► TX 0..N_ooo
//!      └────────── emptied buffers ◄───────────┘
//! ```
//!
//! Timestamp synchronisation (§V-B.4): T_g, the first record's timestamp, is
//! read before any thread starts; every due time is relative to it. All TX
//! threads wait on one barrier and then take the same start reference C_h
//! (an instant fixed before the barrier opens, so the threads agree to the
//! nanosecond instead of by how quickly each one woke up).

mod config;
mod feed;
mod io;
mod lanes;
mod perflow;
#[cfg(test)]
mod tests;
mod worker;

pub use config::{SeriesConfig, SeriesPayload};

use crate::config::EngineConfig;
use crate::run::{join, EngineError, Pipeline, Run};
use crate::stats::{FlowStats, IntervalStats, Observer, SeriesSummary, Summary};
use crate::tx::Board;
use feed::{FeedPlace, PayloadStamper, SeriesFeed, Templates};
use lanes::{Chunk, Lanes};
use perflow::{FlowCount, FlowCounters};
use sluice_core::{MonoTime, MonotonicClock, VirtualClock};
use sluice_sink::Sink;
use sluice_source::series::{
    device_name, first_timestamp, ArchiveChunker, DeviceCount, DeviceTable, DueRecord, GapCuts,
    Indexer, SeriesError, SeriesTiming, HEADER_LEN, MIN_BUFFER,
};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// In-order chunks queued before the start (or every worker done): half a
/// queue, 16k records of lead, so the workers start ahead of the clock.
const PRIME_CHUNKS: usize = lanes::QUEUE_CHUNKS / 2;

/// Plays the archive of `cfg` into `sinks` (one TX thread per sink).
pub fn run_series(
    cfg: SeriesConfig,
    sinks: Vec<Box<dyn Sink>>,
    ecfg: &EngineConfig,
    observer: &mut dyn Observer,
) -> Result<Summary, EngineError> {
    let clocks = (MonotonicClock::new(), VirtualClock::new(MonoTime(0)));
    let pipeline = SeriesPipeline::open(cfg, ecfg)?;
    Run::execute(pipeline, sinks, ecfg, observer, clocks)
}

/// Time-series play as a [`Pipeline`]: the IO thread and the workers run
/// from [`prime`](Pipeline::prime) until [`finish`](Pipeline::finish).
struct SeriesPipeline<'a> {
    cfg: Arc<SeriesConfig>,
    ecfg: &'a EngineConfig,
    /// The archive's file name, for notes.
    file: String,
    /// T_g, the first record's timestamp.
    t_g: i64,
    cuts: Arc<GapCuts>,
    table: Arc<Mutex<DeviceTable>>,
    /// Until the IO thread takes it.
    chunker: Option<ArchiveChunker>,
    lanes: Option<Arc<Lanes>>,
    preload: bool,
    /// Set by the IO thread while it waits for a buffer back.
    starved: Arc<AtomicBool>,
    /// The run's clock, for the receive stamps' departure times.
    clock: Option<MonotonicClock>,
    warnings: Vec<String>,
    workers: Vec<thread::JoinHandle<worker::WorkerOut>>,
    io: Option<thread::JoinHandle<Result<io::IoOut, SeriesError>>>,
    /// Each TX thread's per-flow counters and frame templates.
    flow_counts: Vec<Arc<FlowCounters>>,
    templates: Vec<Option<Templates>>,
    /// Each flow's records at the last interval, to count live flows.
    last_counts: Mutex<Vec<u64>>,
}

impl<'a> SeriesPipeline<'a> {
    /// Reads T_g and, under a gap cap, every long gap (workers index in
    /// parallel and need them all before the run).
    fn open(cfg: SeriesConfig, ecfg: &'a EngineConfig) -> Result<Self, EngineError> {
        let t_g = first_timestamp(&cfg.path)?;
        let cuts = Arc::new(match cfg.max_gap {
            Some(cap) if !matches!(cfg.timing, SeriesTiming::TightLoop(_)) => {
                GapCuts::scan(&cfg.path, t_g, cap)?
            }
            _ => GapCuts::default(),
        });
        let chunker = ArchiveChunker::open(&cfg.path)?;
        Ok(SeriesPipeline {
            file: chunker.name().to_string(),
            table: Arc::new(Mutex::new(DeviceTable::new(cfg.devices))),
            cfg: Arc::new(cfg),
            ecfg,
            t_g,
            cuts,
            chunker: Some(chunker),
            lanes: None,
            preload: false,
            starved: Arc::default(),
            clock: None,
            warnings: Vec::new(),
            workers: Vec::new(),
            io: None,
            flow_counts: Vec::new(),
            templates: Vec::new(),
            last_counts: Mutex::default(),
        })
    }

    fn lanes(&self) -> &Arc<Lanes> {
        self.lanes.as_ref().expect("primed")
    }

    /// Starts the workers and the IO thread that deals them buffers.
    fn start_helpers(&mut self, lanes: Arc<Lanes>) -> Result<(), EngineError> {
        let cfg = self.cfg.clone();
        let (back_tx, back_rx) = crossbeam_channel::unbounded();
        let mut to_workers = Vec::new();
        let select = Arc::new(cfg.select.clone());
        for w in 0..cfg.workers {
            let (s, r) = crossbeam_channel::bounded(1);
            to_workers.push(s);
            let mut indexer = Indexer::new(
                &self.file,
                cfg.timing,
                self.t_g,
                cfg.ooo,
                cfg.seed.wrapping_add(w as u64),
                self.table.clone(),
                self.cuts.clone(),
            );
            indexer.share = cfg.share;
            indexer.select = select.clone();
            let (lanes, back) = (lanes.clone(), back_tx.clone());
            let queue = w % cfg.queues;
            let pins = self.ecfg.planner_cpus().to_vec();
            let h = thread::Builder::new()
                .name(format!("sluice-work{w}"))
                .spawn(move || {
                    crate::run::pin_planner(&pins, w);
                    worker::run(r, back, indexer, lanes, queue)
                })
                .map_err(EngineError::Spawn)?;
            self.workers.push(h);
        }
        drop(back_tx);
        // A buffer larger than the archive would only be zero-filled.
        let archive_len = std::fs::metadata(&cfg.path).map_or(u64::MAX, |m| m.len());
        let buffer_size = usize::try_from(archive_len)
            .unwrap_or(usize::MAX)
            .clamp(MIN_BUFFER, cfg.buffer_size.max(MIN_BUFFER));
        let chunker = self.chunker.take().expect("primed once");
        let (preload, stop, starved) = (self.preload, self.ecfg.stop.clone(), self.starved.clone());
        let io = thread::Builder::new()
            .name("sluice-io".into())
            .spawn(move || {
                io::run(
                    chunker,
                    to_workers,
                    back_rx,
                    buffer_size,
                    preload,
                    stop,
                    starved,
                )
            })
            .map_err(EngineError::Spawn)?;
        self.io = Some(io);
        Ok(())
    }

    /// Waits for the prefetch lead: the first chunks are queued (or there
    /// is nothing more); with preload, every entry is (or a queue is full).
    /// Buffers too small to hold the lead end it too: the IO thread waits
    /// for a buffer back, and the queues stop growing (only the TX threads
    /// free them).
    fn wait_for_lead(&self) {
        let lanes = self.lanes();
        let queues = lanes.queues.len();
        let mut before = usize::MAX;
        loop {
            let queued: usize = lanes.queues.iter().map(|q| q.len()).sum();
            let stalled = self.starved.load(Ordering::Relaxed) && queued == before;
            before = queued;
            let all_done = self.workers.iter().all(|h| h.is_finished());
            let primed = if self.preload {
                lanes.queues.iter().any(|q| q.is_full()) || lanes.ooo.is_full()
            } else {
                queued >= PRIME_CHUNKS.min(queues * lanes::QUEUE_CHUNKS)
            };
            if primed || stalled || all_done || lanes.stopped() {
                return;
            }
            thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Pipeline for SeriesPipeline<'_> {
    type Feed = SeriesFeed;
    /// The feed itself: dropped by the caller after every TX thread, so no
    /// TX thread frees a buffer while others send.
    type Tally = SeriesFeed;
    const OVERSIZE: &'static str = "records were larger than a datagram can carry";

    fn prime(
        &mut self,
        n: usize,
        _start: Option<MonoTime>,
        clock: MonotonicClock,
    ) -> Result<u64, EngineError> {
        self.clock = Some(clock);
        let ecfg = self.ecfg;
        let workers = self.cfg.workers.max(1);
        let queues = self.cfg.queues.clamp(1, n.min(workers));
        self.cfg = Arc::new(SeriesConfig {
            queues,
            workers,
            ..(*self.cfg).clone()
        });
        let capacity = if ecfg.preload {
            preload_capacity(&self.cfg, ecfg, workers, &mut self.warnings)
        } else {
            None
        };
        self.preload = capacity.is_some();
        let (chunks, ooo_entries) = capacity.unwrap_or((lanes::QUEUE_CHUNKS, lanes::OOO_ENTRIES));
        let lanes = Arc::new(Lanes::new(
            queues,
            workers,
            chunks,
            ooo_entries,
            ecfg.limit,
            ecfg.stop.clone(),
        ));
        self.lanes = Some(lanes.clone());
        self.start_helpers(lanes)?;
        self.wait_for_lead();
        // Per-flow state (a few MB of page tables per TX thread) is set up
        // before the clock starts: a TX thread doing it after the start lost
        // the first milliseconds.
        self.flow_counts = (0..n).map(|_| Arc::default()).collect();
        self.templates = (0..n).map(|_| Some(Templates::new())).collect();
        Ok((self.t_g.max(0) as u64).saturating_mul(1000))
    }

    /// Rescue needs a second TX thread and real time (on a virtual clock
    /// nobody is ever interrupted, and a thread's wait moves everyone's
    /// time).
    fn board(&self, n: usize) -> Option<Arc<Board<Chunk>>> {
        let ecfg = self.ecfg;
        let after = self.cfg.rescue_after?;
        (n > 1 && !ecfg.topspeed && ecfg.clock.is_real()).then(|| Arc::new(Board::new(n, after)))
    }

    fn feed(&mut self, i: usize, sink: &dyn Sink) -> SeriesFeed {
        let cfg = &self.cfg;
        let place = FeedPlace {
            index: i,
            threads: self.templates.len(),
            queue: i % cfg.queues,
            ooo: cfg.ooo.is_some() && i < cfg.ooo_threads.max(1),
        };
        let mut feed = SeriesFeed::new(
            place,
            self.lanes().clone(),
            self.flow_counts[i].clone(),
            self.templates[i].take().expect("one feed per thread"),
            self.table.clone(),
            cfg.clone(),
            sink.takes(),
            sink.ports(),
        );
        if let (Some(mode), Some(clock)) = (self.ecfg.rx_stamp, &self.clock) {
            let append = mode == crate::config::RxStampMode::Append;
            let stream = self.ecfg.stamp_streams_from.wrapping_add(i as u32);
            let shift = self.ecfg.stamp_clock_shift_ns;
            feed.stamper = Some(PayloadStamper::new(stream, append, clock, shift));
        }
        feed
    }

    fn tally(feed: SeriesFeed) -> SeriesFeed {
        feed
    }

    fn interval(&self, stats: &mut IntervalStats) {
        stats.flows = merge_flows(&self.flow_counts, &self.table, &self.cfg);
        // A flow is live in an interval if its count of records sent (or
        // dropped as late) grew in it.
        if let Ok(mut last) = self.last_counts.lock() {
            let mut active = 0;
            for f in &stats.flows {
                let i = f.flow as usize;
                if last.len() <= i {
                    last.resize(i + 1, 0);
                }
                let n = f.sent + f.dropped;
                active += u64::from(n > last[i]);
                last[i] = n;
            }
            stats.active_flows = Some(active);
        }
    }

    fn finish(
        mut self,
        feeds: Vec<SeriesFeed>,
        rescued: Option<u64>,
        summary: &mut Summary,
    ) -> Result<Vec<String>, EngineError> {
        let lanes = self.lanes().clone();
        // TX threads are gone; a worker blocked on a full queue sees `stop`.
        lanes.stop.store(true, Ordering::Relaxed);
        let (mut filtered, mut inactive) = (0, 0);
        // The earliest long gap and step back any worker saw, by record.
        let mut gaps = sluice_pace::GapWatch::new(self.cfg.max_gap);
        gaps.capped = self.cuts.len() as u64;
        // The cuts saw every gap; a worker only those inside its chunks.
        let first_cut = self.cuts.first();
        let mut keep = Vec::new();
        for out in join(std::mem::take(&mut self.workers), "worker")? {
            filtered += out.filtered;
            inactive += out.inactive;
            let earliest = |a: Option<(u64, u64)>, b: Option<(u64, u64)>| match (a, b) {
                (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
                (x, y) => x.or(y),
            };
            gaps.long_gap = first_cut.or(earliest(gaps.long_gap, out.gaps.long_gap));
            gaps.backward = earliest(gaps.backward, out.gaps.backward);
            keep.extend(out.keep);
        }
        let io = self.io.take().expect("primed");
        let read = io.join().map_err(|_| EngineError::Panic("IO"))?;
        drop(keep);
        summary.passes = 1;
        summary.series = Some(SeriesSummary {
            frames: feeds.iter().map(|f| f.frames).sum(),
            out_of_order: feeds.iter().map(|f| f.out_of_order).sum(),
            rescued,
            filtered,
            inactive,
            flows: merge_flows(&self.flow_counts, &self.table, &self.cfg),
        });
        if let Some(e) = lanes.error.lock().ok().and_then(|mut e| e.take()) {
            return Err(e.into());
        }
        let mut warnings = self.warnings;
        warnings.extend(read?.truncation);
        warnings.extend(gaps.notes(&self.file, "record", true));
        let unstamped: u64 = feeds
            .iter()
            .filter_map(|f| f.stamper.as_ref())
            .map(|s| s.departures.unstamped)
            .sum();
        if unstamped > 0 {
            warnings.push(format!(
                "--rx-stamp: {unstamped} datagrams left without a stamp (under 16 payload bytes with \
                 `replace`): a receiver does not count them"
            ));
        }
        Ok(warnings)
    }
}

/// Queue capacities (in-order chunks, out-of-order entries) that hold every
/// entry of a preloaded archive, or None, with a warning, when the archive
/// and its entries do not fit in the preload budget (the run streams).
fn preload_capacity(
    cfg: &SeriesConfig,
    ecfg: &EngineConfig,
    workers: usize,
    warnings: &mut Vec<String>,
) -> Option<(usize, usize)> {
    let size = std::fs::metadata(&cfg.path).map_or(0, |m| m.len());
    let copies = match cfg.devices {
        DeviceCount::Multiply(k) => u64::from(k.max(1)),
        _ => 1,
    };
    // At most: every record as short as can be (a header with no data),
    // times the device copies.
    let records = (size / HEADER_LEN as u64).saturating_mul(copies);
    let entries = ecfg.limit.map_or(records, |l| records.min(l));
    // Out-of-order room: twice the expected share (if it fills up, the
    // rest streams).
    let ooo_share = cfg.ooo.map_or(0.0, |o| (2.0 * o.prob).min(1.0));
    let per_entry = std::mem::size_of::<DueRecord>() as u64
        + (std::mem::size_of::<lanes::OooItem>() as f64 * ooo_share) as u64;
    // Buffers are whole: the last one is allocated in full.
    let need = size
        .saturating_add(cfg.buffer_size as u64)
        .saturating_add(entries.saturating_mul(per_entry));
    let budget = ecfg
        .preload_budget
        .unwrap_or_else(crate::io::default_preload_budget);
    if need > budget {
        warnings.push(format!(
            "--preload: {} needs up to {} MiB in memory, over the budget of {} MiB; streaming instead",
            cfg.path.display(),
            need >> 20,
            budget >> 20
        ));
        return None;
    }
    Some((
        usize::try_from(entries / lanes::CHUNK as u64).unwrap_or(usize::MAX) + workers + 1,
        cfg.ooo
            .map_or(1, |_| (entries as f64 * ooo_share) as usize + 1024),
    ))
}

/// Per-flow totals over all TX threads, with the flow's device and tuple.
fn merge_flows(
    per_thread: &[Arc<FlowCounters>],
    table: &Mutex<DeviceTable>,
    cfg: &SeriesConfig,
) -> Vec<FlowStats> {
    let mut sum: Vec<FlowCount> = Vec::new();
    for t in per_thread {
        for (i, cell) in t.iter() {
            let f = cell.read();
            if f == FlowCount::default() {
                continue;
            }
            if sum.len() <= i {
                sum.resize(i + 1, FlowCount::default());
            }
            sum[i] += f;
        }
    }
    let active: Vec<(u32, FlowCount)> = sum
        .iter()
        .enumerate()
        .filter(|(_, f)| **f != FlowCount::default())
        .map(|(i, f)| (i as u32, *f))
        .collect();
    // Devices are looked up a few thousand flows at a time: a TX thread
    // meeting a new flow needs the table too, and must not wait for all.
    let mut out = Vec::with_capacity(active.len());
    for part in active.chunks(4096) {
        let devices: Vec<([u8; 16], u32)> = {
            let Ok(table) = table.lock() else {
                return out;
            };
            part.iter()
                .map(|(i, _)| {
                    table
                        .flow_device(*i)
                        .map(|(d, c)| (*d, c))
                        .unwrap_or(([0; 16], 0))
                })
                .collect()
        };
        for ((i, f), (dev, copy)) in part.iter().zip(devices) {
            let flow = cfg.flows.flow(&dev, copy);
            out.push(FlowStats {
                flow: *i,
                device: device_name(&dev),
                copy,
                src: format!("{}:{}", Ipv4Addr::from(flow.src_ip), flow.src_port),
                dst: format!("{}:{}", Ipv4Addr::from(flow.dst_ip), flow.dst_port),
                sent: f.sent,
                bytes: f.bytes,
                late: f.late,
                dropped: f.dropped,
            });
        }
    }
    out
}

impl From<SeriesError> for EngineError {
    fn from(e: SeriesError) -> Self {
        EngineError::Series(e)
    }
}
