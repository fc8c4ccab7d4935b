//! The TX side shared by every source: [`TxCore`] paces, sends, counts and
//! hands ε over, once for every loop; [`run_batches`] is the TX thread of
//! the batch pipeline (replay, flows).
//!
//! One decision per place: how a packet is paced (pure [`Pacer`] plus the
//! wait strategy, flushing what is queued before any wait), how a send is
//! counted (packets, bytes, late past the threshold, ε into the histogram,
//! the last send time), how a drop and a per-packet sink refusal count,
//! and how counters and ε reach the aggregator without ever blocking the
//! TX thread. The time-series TX loop (`series/tx.rs`) uses the same core
//! and adds only what its pipeline needs: queues of records, the
//! out-of-order heap and rescue between threads.

use crate::stats::{CounterSnapshot, SharedCounters, HISTOGRAM_HANDOFF};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use sluice_core::{Batch, ErrorHistogram, MonoTime, Nanos, Work};
use sluice_pace::{Decision, Pacer, Waiter};
use sluice_sink::{Sink, SinkError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What pacing decided for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send now; ε in ns (0 at top speed).
    Send { eps: i64 },
    /// Later than the drift window: a time violation.
    Drop,
}

impl Verdict {
    /// The verdict of a send or drop decision; None for a wait.
    pub fn of(d: Decision) -> Option<Verdict> {
        match d {
            Decision::Send { eps_ns } => Some(Verdict::Send { eps: eps_ns }),
            Decision::Drop { .. } => Some(Verdict::Drop),
            Decision::WaitUntil(_) => None,
        }
    }
}

/// The settings and shared state one TX thread starts with.
pub(crate) struct TxSetup {
    pub sink: Box<dyn Sink>,
    pub waiter: Box<dyn Waiter + Send>,
    pub pacer: Pacer,
    pub topspeed: bool,
    pub late_threshold: Nanos,
    pub duration: Option<Nanos>,
    /// Capture time of the stream's start: pcap output is stamped
    /// `stamp_base + (send time − start)`.
    pub stamp_base: u64,
    pub counters: Arc<SharedCounters>,
    pub stop: Arc<AtomicBool>,
}

/// What a TX thread reports when it ends.
pub(crate) struct TxReport {
    pub totals: CounterSnapshot,
    pub last_send: MonoTime,
    pub sink: String,
    pub error: Option<SinkError>,
}

/// Pacing, sending and counting of one TX thread.
pub(crate) struct TxCore {
    pub sink: Box<dyn Sink>,
    pub waiter: Box<dyn Waiter + Send>,
    pub pacer: Pacer,
    pub topspeed: bool,
    late_threshold: Nanos,
    duration: Option<Nanos>,
    stamp_base: u64,
    counters: Arc<SharedCounters>,
    stop: Arc<AtomicBool>,
    pub c: CounterSnapshot,
    hist: ErrorHistogram,
    /// The clock as last read.
    pub now: MonoTime,
    last_send: MonoTime,
    last_handoff: MonoTime,
    /// The first fatal sink error; the thread stops on it.
    pub error: Option<SinkError>,
}

impl TxCore {
    pub fn new(s: TxSetup) -> Self {
        let start = s.pacer.start();
        TxCore {
            now: s.waiter.now(),
            sink: s.sink,
            waiter: s.waiter,
            pacer: s.pacer,
            topspeed: s.topspeed,
            late_threshold: s.late_threshold,
            duration: s.duration,
            stamp_base: s.stamp_base,
            counters: s.counters,
            stop: s.stop,
            c: CounterSnapshot::default(),
            hist: ErrorHistogram::new(),
            last_send: start,
            last_handoff: start,
            error: None,
        }
    }

    /// The run's stop flag (a signal, or another thread's fatal error).
    #[inline]
    pub fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// True once the run's duration is over.
    #[inline]
    pub fn past_duration(&self) -> bool {
        self.duration
            .is_some_and(|d| self.now.since(self.pacer.start()) >= d)
    }

    /// [`pace`] with a plain wait.
    #[inline]
    pub fn pace(&mut self, due: Nanos) -> Option<Verdict> {
        pace(self, due)
    }

    /// Waits until `t` (or a stop) and reads the clock.
    pub fn wait_until(&mut self, t: MonoTime) {
        let stop = &self.stop;
        self.now = self.waiter.wait_until(t, &|| stop.load(Ordering::Relaxed));
    }

    /// The capture stamp of a packet sent now.
    #[inline]
    pub fn stamp(&self) -> u64 {
        self.stamp_base
            .wrapping_add(self.now.since(self.pacer.start()).0)
    }

    /// Counts a packet of `bytes` sent with send-time error `eps`; returns
    /// whether it was late.
    #[inline]
    pub fn sent(&mut self, eps: i64, bytes: usize) -> bool {
        self.c.packets += 1;
        self.c.bytes += bytes as u64;
        if self.topspeed {
            return false;
        }
        self.hist.record(eps);
        let late = eps > self.late_threshold.0 as i64;
        if late {
            self.c.late += 1;
        }
        self.last_send = self.now;
        self.now = self.waiter.now();
        late
    }

    /// Counts a packet dropped as a time violation.
    #[inline]
    pub fn dropped(&mut self) {
        self.c.dropped += 1;
        self.now = self.waiter.now();
    }

    /// Counts a per-packet sink refusal (too large for the link), or keeps
    /// a fatal error (the thread stops). Returns true when fatal.
    pub fn failed(&mut self, err: SinkError) -> bool {
        if err.is_per_packet() {
            self.c.oversize += 1;
            return false;
        }
        self.error.get_or_insert(err);
        true
    }

    /// Hands everything queued to the OS; a failure is kept as fatal.
    pub fn flush(&mut self) {
        if let Err(e) = self.sink.flush() {
            self.error.get_or_insert(e);
        }
    }

    /// Publishes the counters and, every [`HISTOGRAM_HANDOFF`], hands ε
    /// over (never waiting for the aggregator: if it is reading, next
    /// time).
    #[inline]
    pub fn publish(&mut self) {
        self.counters.publish(&self.c);
        if self.now.since(self.last_handoff) >= HISTOGRAM_HANDOFF
            && self.counters.eps.offer(&mut self.hist)
        {
            self.last_handoff = self.now;
        }
    }

    /// Finishes the sink and hands the last counters and ε over.
    pub fn finish(mut self) -> TxReport {
        if let Err(e) = self.sink.finish() {
            self.error.get_or_insert(e);
        }
        if self.topspeed {
            // At top speed the last frame has left once the sink is finished.
            self.last_send = self.waiter.now();
        }
        self.counters.publish(&self.c);
        self.counters.eps.finish(self.hist);
        TxReport {
            totals: self.c,
            last_send: self.last_send,
            sink: self.sink.describe(),
            error: self.error,
        }
    }
}

/// A TX loop that paces with a [`TxCore`]: how it reaches its core, and
/// how it waits (a plain wait, or one that rescues other threads' packets
/// meanwhile).
pub(crate) trait Paced {
    fn core(&mut self) -> &mut TxCore;
    /// Waits until `t` (or a stop) and updates the core's `now`.
    fn wait(&mut self, t: MonoTime);
}

impl Paced for TxCore {
    #[inline]
    fn core(&mut self) -> &mut TxCore {
        self
    }

    fn wait(&mut self, t: MonoTime) {
        self.wait_until(t);
    }
}

/// Waits until a packet due at `due` may leave, then says whether it is
/// sent or dropped; None when the run stopped (or the sink failed)
/// meanwhile. Before any wait, what the sink has queued leaves.
#[inline]
pub(crate) fn pace<P: Paced>(p: &mut P, due: Nanos) -> Option<Verdict> {
    if p.core().topspeed {
        return Some(Verdict::Send { eps: 0 });
    }
    let mut waited = false;
    loop {
        let core = p.core();
        let d = if waited {
            core.pacer.poll_waited(due, core.now)
        } else {
            core.pacer.poll(due, core.now)
        };
        match d {
            Decision::WaitUntil(t) => {
                waited = true;
                core.flush();
                if core.error.is_some() {
                    return None;
                }
                p.wait(t);
                if p.core().interrupted() {
                    return None;
                }
            }
            d => return Verdict::of(d),
        }
    }
}

/// The TX thread of the batch pipeline: paces every frame of every batch
/// it is handed into its sink, and returns owned batches for reuse.
pub(crate) fn run_batches(
    setup: TxSetup,
    batches: Receiver<Work>,
    free: Sender<Batch>,
) -> TxReport {
    let mut tx = TxCore::new(setup);
    'batches: loop {
        let work = match batches.try_recv() {
            Ok(b) => b,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                // The IO thread is behind: push out what is queued, then block.
                tx.flush();
                if tx.error.is_some() {
                    break;
                }
                match batches.recv() {
                    Ok(b) => b,
                    Err(_) => break,
                }
            }
        };
        let (batch, offset, entries) = work.parts();
        tx.now = tx.waiter.now();
        for e in entries {
            if tx.interrupted() {
                break;
            }
            let Some(verdict) = tx.pace(e.due + offset) else {
                break 'batches;
            };
            let Verdict::Send { eps } = verdict else {
                tx.dropped();
                continue;
            };
            let frame = batch.frame(e);
            let stamp = tx.stamp();
            match tx.sink.send(frame, stamp) {
                Ok(()) => {
                    tx.sent(eps, frame.len());
                }
                Err(err) => {
                    if tx.failed(err) {
                        break 'batches;
                    }
                    // Refused, not sent: ε is not recorded, the clock moves on.
                    if !tx.topspeed {
                        tx.now = tx.waiter.now();
                    }
                }
            }
        }
        if tx.topspeed {
            tx.now = tx.waiter.now();
        }
        tx.publish();
        if tx.past_duration() || tx.interrupted() {
            break;
        }
        if let Work::Owned(batch) = work {
            let _ = free.send(batch);
        }
    }
    tx.finish()
}
