//! A worker thread: turns each buffer it is dealt into chunks of entries on
//! its in-order queue (and single entries on the out-of-order queue), then
//! hands the buffer back to the IO thread once no chunk refers to it.

use super::lanes::{push_blocking, Chunk, Lanes, OooItem, CHUNK};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use sluice_source::series::{Filled, Indexer, Lane};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct WorkerOut {
    pub filtered: u64,
    /// Records `--device-steps` left out.
    pub inactive: u64,
    /// Implausible time this worker saw in its buffers.
    pub gaps: sluice_pace::GapWatch,
    /// Buffers still referenced by queued chunks at the end: dropped by the
    /// engine after the TX threads, so no TX thread frees a 64 MiB buffer.
    pub keep: Vec<Arc<Filled>>,
}

pub(crate) fn run(
    rx: Receiver<Filled>,
    back: Sender<Filled>,
    mut indexer: Indexer,
    lanes: Arc<Lanes>,
    queue: usize,
) -> WorkerOut {
    let mut retiring: Vec<Arc<Filled>> = Vec::new();
    let reclaim = |retiring: &mut Vec<Arc<Filled>>| {
        let mut i = 0;
        while i < retiring.len() {
            if Arc::strong_count(&retiring[i]) == 1 {
                if let Ok(f) = Arc::try_unwrap(retiring.swap_remove(i)) {
                    let _ = back.send(f);
                }
            } else {
                i += 1;
            }
        }
    };
    let q = &lanes.queues[queue];
    loop {
        let filled = match rx.recv_timeout(Duration::from_millis(1)) {
            Ok(f) => f,
            Err(RecvTimeoutError::Timeout) => {
                reclaim(&mut retiring);
                if lanes.stopped() {
                    break;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let buf = Arc::new(filled);
        let mut chunk = lanes.entries();
        let result = indexer.index(&buf, |e, lane| {
            if !lanes.admit() {
                return false;
            }
            let stop = &lanes.stop;
            match lane {
                Lane::InOrder => {
                    chunk.push(e);
                    if chunk.len() < CHUNK {
                        return true;
                    }
                    let full = std::mem::replace(&mut chunk, lanes.entries());
                    let c = Chunk {
                        buf: buf.clone(),
                        entries: full,
                    };
                    push_blocking(q, c, stop, &mut || reclaim(&mut retiring))
                }
                Lane::OutOfOrder => {
                    let item = OooItem {
                        buf: buf.clone(),
                        entry: e,
                    };
                    push_blocking(&lanes.ooo, item, stop, &mut || reclaim(&mut retiring))
                }
            }
        });
        if !chunk.is_empty() {
            let c = Chunk {
                buf: buf.clone(),
                entries: chunk,
            };
            push_blocking(q, c, &lanes.stop, &mut || reclaim(&mut retiring));
        }
        retiring.push(buf);
        reclaim(&mut retiring);
        match result {
            Ok(true) => {}
            Ok(false) => break, // limit reached or stopping
            Err(e) => {
                lanes.fail(e);
                break;
            }
        }
    }
    lanes.producers[queue].fetch_sub(1, Ordering::Release);
    lanes.workers_left.fetch_sub(1, Ordering::Release);
    WorkerOut {
        filtered: indexer.filtered,
        inactive: indexer.inactive,
        gaps: indexer.gaps,
        keep: retiring,
    }
}
