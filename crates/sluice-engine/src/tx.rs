//! The TX thread: pace every frame of every batch into its sink.

use crate::stats::{CounterSnapshot, SharedCounters, HISTOGRAM_HANDOFF};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use sluice_core::{Batch, ErrorHistogram, MonoTime, Nanos, Work};
use sluice_pace::{Decision, Pacer, Waiter};
use sluice_sink::{Sink, SinkError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) struct TxContext {
    pub batches: Receiver<Work>,
    pub free: Sender<Batch>,
    pub sink: Box<dyn Sink>,
    pub waiter: Box<dyn Waiter + Send>,
    pub pacer: Pacer,
    pub topspeed: bool,
    pub late_threshold: Nanos,
    pub duration: Option<Nanos>,
    /// Capture time of the first trace packet: pcap output is stamped
    /// `stamp_base + (send time − start)`.
    pub stamp_base: u64,
    pub counters: Arc<SharedCounters>,
    pub stop: Arc<AtomicBool>,
}

pub(crate) struct TxOutcome {
    pub totals: CounterSnapshot,
    pub last_send: MonoTime,
    pub sink: String,
    pub error: Option<SinkError>,
}

pub(crate) fn run(mut cx: TxContext) -> TxOutcome {
    let mut c = CounterSnapshot::default();
    let mut hist = ErrorHistogram::new();
    let start = cx.pacer.start();
    let mut last_send = start;
    let mut last_handoff = start;
    let mut error = None;
    let stop = cx.stop.clone();
    let interrupted = move || stop.load(Ordering::Relaxed);
    'batches: loop {
        let work = match cx.batches.try_recv() {
            Ok(b) => b,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                // The IO thread is behind: push out what is queued, then block.
                if let Err(err) = cx.sink.flush() {
                    error = Some(err);
                    break;
                }
                match cx.batches.recv() {
                    Ok(b) => b,
                    Err(_) => break,
                }
            }
        };
        let (batch, offset, entries) = work.parts();
        let mut now = cx.waiter.now();
        for e in entries {
            if interrupted() {
                break;
            }
            let frame = batch.frame(e);
            let sent = if cx.topspeed {
                Some(0)
            } else {
                let mut waited = false;
                loop {
                    let d = if waited {
                        cx.pacer.poll_waited(e.due + offset, now)
                    } else {
                        cx.pacer.poll(e.due + offset, now)
                    };
                    match d {
                        Decision::WaitUntil(t) => {
                            waited = true;
                            // Everything queued so far leaves before we wait.
                            if let Err(err) = cx.sink.flush() {
                                error = Some(err);
                                break 'batches;
                            }
                            now = cx.waiter.wait_until(t, &interrupted);
                            if interrupted() {
                                break 'batches;
                            }
                        }
                        Decision::Send { eps_ns } => break Some(eps_ns),
                        Decision::Drop { .. } => break None,
                    }
                }
            };
            let Some(eps) = sent else {
                c.dropped += 1;
                now = cx.waiter.now();
                continue;
            };
            let stamp = cx.stamp_base.wrapping_add(now.since(start).0);
            match cx.sink.send(frame, stamp) {
                Ok(()) => {
                    c.packets += 1;
                    c.bytes += frame.len() as u64;
                }
                Err(err) if err.is_per_packet() => c.oversize += 1,
                Err(err) => {
                    error = Some(err);
                    break 'batches;
                }
            }
            if !cx.topspeed {
                hist.record(eps);
                if eps > cx.late_threshold.0 as i64 {
                    c.late += 1;
                }
                last_send = now;
                now = cx.waiter.now();
            }
        }
        if cx.topspeed {
            now = cx.waiter.now();
        }
        cx.counters.publish(&c);
        if now.since(last_handoff) >= HISTOGRAM_HANDOFF && cx.counters.eps.offer(&mut hist) {
            last_handoff = now;
        }
        if cx.duration.is_some_and(|d| now.since(start) >= d) || interrupted() {
            break;
        }
        if let Work::Owned(batch) = work {
            let _ = cx.free.send(batch);
        }
    }
    if let Err(err) = cx.sink.finish() {
        error.get_or_insert(err);
    }
    if cx.topspeed {
        // At top speed the last frame has left once the sink is finished.
        last_send = cx.waiter.now();
    }
    cx.counters.publish(&c);
    cx.counters.eps.finish(hist);
    TxOutcome {
        totals: c,
        last_send,
        sink: cx.sink.describe(),
        error,
    }
}
