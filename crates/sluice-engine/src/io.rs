//! The IO thread: keeps every TX thread supplied with filled batches.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use sluice_core::Batch;
use sluice_source::{Fill, ReplayCounters, ReplaySource, SourceError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Batches handed over before the run may start (the prefetch lead).
pub(crate) const PRIME_BATCHES: usize = 8;

pub(crate) struct IoContext {
    pub source: ReplaySource,
    pub to_tx: Vec<Sender<Batch>>,
    pub free: Receiver<Batch>,
    /// Most batches that may exist at once: bounds memory.
    pub pool_limit: usize,
    /// Told once the TX threads may start: carries the first packet's
    /// capture timestamp.
    pub primed: Sender<Option<u64>>,
    pub stop: Arc<AtomicBool>,
}

pub(crate) fn run(mut cx: IoContext) -> Result<ReplayCounters, SourceError> {
    let n = cx.to_tx.len();
    let mut allocated = 0usize;
    let take = |allocated: &mut usize| -> Option<Batch> {
        loop {
            if let Ok(mut b) = cx.free.try_recv() {
                b.clear();
                return Some(b);
            }
            if *allocated < cx.pool_limit {
                *allocated += 1;
                return Some(Batch::new());
            }
            match cx.free.recv_timeout(Duration::from_millis(20)) {
                Ok(mut b) => {
                    b.clear();
                    return Some(b);
                }
                Err(RecvTimeoutError::Timeout) if !cx.stop.load(Ordering::Relaxed) => continue,
                Err(_) => return None,
            }
        }
    };
    let mut current: Vec<Batch> = Vec::with_capacity(n);
    for _ in 0..n {
        current.push(Batch::new());
        allocated += 1;
    }
    let mut ready = vec![false; n];
    let mut handed = 0usize;
    let mut primed = false;
    let result = loop {
        if cx.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        let fill = match cx.source.fill(&mut current, &mut ready) {
            Ok(f) => f,
            Err(e) => break Err(e),
        };
        let done = fill == Fill::Done;
        let mut gone = false;
        for i in 0..n {
            if !(ready[i] || done && !current[i].is_empty()) {
                continue;
            }
            ready[i] = false;
            let Some(fresh) = take(&mut allocated) else {
                gone = true;
                break;
            };
            let full = std::mem::replace(&mut current[i], fresh);
            if cx.to_tx[i].send(full).is_err() {
                gone = true; // the TX thread stopped
                break;
            }
            handed += 1;
        }
        if !primed && (handed >= PRIME_BATCHES || done || gone) {
            primed = true;
            let _ = cx.primed.send(cx.source.first_ts());
        }
        if done || gone {
            break Ok(());
        }
    };
    if !primed {
        let _ = cx.primed.send(cx.source.first_ts());
    }
    // Dropping the senders ends the TX threads once they drained their queues.
    drop(cx.to_tx);
    result.map(|()| cx.source.counters().clone())
}
