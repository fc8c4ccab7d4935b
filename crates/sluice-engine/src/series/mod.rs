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
use crate::run::{join, keep_helpers_off_tx_cpus, EngineError, Run};
use crate::stats::{FlowStats, Observer, Summary};
use crate::tx::{Board, TxCore, TxLoop};
use feed::{FeedPlace, SeriesFeed, Templates};
use lanes::Lanes;
use perflow::{FlowCount, FlowCounters};
use sluice_sink::Sink;
use sluice_source::series::{
    device_name, first_timestamp, ArchiveChunker, DeviceCount, DeviceTable, DueRecord, GapCuts,
    Indexer, SeriesError, SeriesTiming, HEADER_LEN, MIN_BUFFER,
};
use std::net::Ipv4Addr;
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
    let n = sinks.len().max(1);
    let workers = cfg.workers.max(1);
    let queues = cfg.queues.clamp(1, n.min(workers));
    let t_g = first_timestamp(&cfg.path)?;
    // A cap needs every long gap before the run: workers index in parallel.
    let cuts = Arc::new(match cfg.max_gap {
        Some(cap) if !matches!(cfg.timing, SeriesTiming::TightLoop(_)) => {
            GapCuts::scan(&cfg.path, t_g, cap)?
        }
        _ => GapCuts::default(),
    });
    let chunker = ArchiveChunker::open(&cfg.path)?;
    let file = chunker.name().to_string();
    let cfg = Arc::new(SeriesConfig {
        queues,
        workers,
        ..cfg
    });
    let table = Arc::new(Mutex::new(DeviceTable::new(cfg.devices)));
    let mut warnings = Vec::new();
    let capacity = if ecfg.preload {
        preload_capacity(&cfg, ecfg, workers, &mut warnings)
    } else {
        None
    };
    let preload = capacity.is_some();
    let (chunks, ooo_entries) = capacity.unwrap_or((lanes::QUEUE_CHUNKS, lanes::OOO_ENTRIES));
    let lanes = Arc::new(Lanes::new(
        queues,
        workers,
        chunks,
        ooo_entries,
        ecfg.limit,
        ecfg.stop.clone(),
    ));
    keep_helpers_off_tx_cpus(ecfg);

    // IO thread and workers.
    let (back_tx, back_rx) = crossbeam_channel::unbounded();
    let mut to_workers = Vec::new();
    let mut worker_handles = Vec::new();
    for w in 0..workers {
        let (s, r) = crossbeam_channel::bounded(1);
        to_workers.push(s);
        let mut indexer = Indexer::new(
            &file,
            cfg.timing,
            t_g,
            cfg.ooo,
            cfg.seed.wrapping_add(w as u64),
            table.clone(),
            cuts.clone(),
        );
        indexer.share = cfg.share;
        let (lanes, back) = (lanes.clone(), back_tx.clone());
        let h = thread::Builder::new()
            .name(format!("sluice-work{w}"))
            .spawn(move || worker::run(r, back, indexer, lanes, w % queues))
            .map_err(EngineError::Spawn)?;
        worker_handles.push(h);
    }
    drop(back_tx);
    let stop = ecfg.stop.clone();
    let starved = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let io_starved = starved.clone();
    // A buffer larger than the archive would only be zero-filled.
    let archive_len = std::fs::metadata(&cfg.path).map_or(u64::MAX, |m| m.len());
    let buffer_size = usize::try_from(archive_len)
        .unwrap_or(usize::MAX)
        .clamp(MIN_BUFFER, cfg.buffer_size.max(MIN_BUFFER));
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
                io_starved,
            )
        })
        .map_err(EngineError::Spawn)?;

    // Prefetch lead: the first chunks are queued (or there is nothing
    // more); with preload, every entry is (or a queue is full). Buffers too
    // small to hold the lead end it too: the IO thread waits for a buffer
    // back, and the queues stop growing (only the TX threads free them).
    let mut before = usize::MAX;
    loop {
        let queued: usize = lanes.queues.iter().map(|q| q.len()).sum();
        let stalled = starved.load(std::sync::atomic::Ordering::Relaxed) && queued == before;
        before = queued;
        let all_done = worker_handles.iter().all(|h| h.is_finished());
        let primed = if preload {
            lanes.queues.iter().any(|q| q.is_full()) || lanes.ooo.is_full()
        } else {
            queued >= PRIME_CHUNKS.min(queues * lanes::QUEUE_CHUNKS)
        };
        if primed || stalled || all_done || lanes.stopped() {
            break;
        }
        thread::sleep(Duration::from_micros(200));
    }

    // Per-flow state (a few MB of page tables per TX thread) is set up
    // before the clock starts: a TX thread doing it after the start lost
    // the first milliseconds.
    let flow_counts: Vec<Arc<FlowCounters>> = (0..n).map(|_| Arc::default()).collect();
    let templates: Vec<Templates> = (0..n).map(|_| Templates::new()).collect();

    let run = Run::new(ecfg, n);
    // Rescue needs a second TX thread and real time (on a virtual clock
    // nobody is ever interrupted, and a thread's wait moves everyone's time).
    let board = match cfg.rescue_after {
        Some(after) if n > 1 && !ecfg.topspeed && ecfg.clock.is_real() => {
            Some(Arc::new(Board::new(n, after)))
        }
        _ => None,
    };
    let stamp_base = (t_g.max(0) as u64).saturating_mul(1000);
    let mut txs = Vec::with_capacity(n);
    for (i, (sink, templates)) in sinks.into_iter().zip(templates).enumerate() {
        let place = FeedPlace {
            index: i,
            threads: n,
            queue: i % queues,
            ooo: cfg.ooo.is_some() && i < cfg.ooo_threads.max(1),
        };
        let feed = SeriesFeed::new(
            place,
            lanes.clone(),
            flow_counts[i].clone(),
            templates,
            table.clone(),
            cfg.clone(),
            sink.takes(),
        );
        let setup = run.setup(i, sink, stamp_base);
        let board = board.clone();
        txs.push(run.spawn(i, move || {
            TxLoop::new(TxCore::new(setup), feed, board, i).run()
        })?);
    }
    run.release();

    let hist = run.aggregate(&txs, observer, &mut |s| {
        s.flows = merge_flows(&flow_counts, &table, &cfg);
    });
    let reports = join(txs, "TX")?;
    let (mut frames, mut out_of_order, mut rescued) = (0, 0, 0);
    for (_, feed, r) in &reports {
        frames += feed.frames;
        out_of_order += feed.out_of_order;
        rescued += r;
    }
    let interrupted = ecfg.stop.load(std::sync::atomic::Ordering::Relaxed)
        && lanes.error.lock().map(|e| e.is_none()).unwrap_or(true);
    // TX threads are gone; a worker blocked on a full queue sees `stop`.
    lanes.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut filtered = 0;
    // The earliest long gap and step back any worker saw, by record.
    let mut gaps = sluice_pace::GapWatch::new(cfg.max_gap);
    gaps.capped = cuts.len() as u64;
    // The cuts saw every gap; a worker only those inside its chunks.
    let first_cut = cuts.first();
    let mut keep = Vec::new();
    for out in join(worker_handles, "worker")? {
        filtered += out.filtered;
        let earliest = |a: Option<(u64, u64)>, b: Option<(u64, u64)>| match (a, b) {
            (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
            (x, y) => x.or(y),
        };
        gaps.long_gap = first_cut.or(earliest(gaps.long_gap, out.gaps.long_gap));
        gaps.backward = earliest(gaps.backward, out.gaps.backward);
        keep.extend(out.keep);
    }
    let read = io.join().map_err(|_| EngineError::Panic("IO"))?;
    drop(keep);
    let (base, sink_error) = run.summary(reports.into_iter().map(|(tx, _, _)| tx), &hist);
    let lane_error = lanes.error.lock().ok().and_then(|mut e| e.take());
    let read = match (sink_error, lane_error, read) {
        (Some(e), _, _) => return Err(EngineError::after(e.into(), base)),
        (None, Some(e), _) => return Err(EngineError::after(e.into(), base)),
        (None, None, Err(e)) => return Err(EngineError::after(e.into(), base)),
        (None, None, Ok(r)) => r,
    };
    warnings.extend(read.truncation);
    warnings.extend(gaps.notes(&file, "record", true));
    Ok(Summary {
        passes: 1,
        frames: Some(frames),
        out_of_order: Some(out_of_order),
        rescued: board.is_some().then_some(rescued),
        filtered: Some(filtered),
        flows: merge_flows(&flow_counts, &table, &cfg),
        interrupted,
        ..base.with_warnings(
            warnings,
            run.warnings(),
            "records were larger than a datagram can carry",
        )
    })
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
