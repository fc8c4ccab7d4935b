//! What workers and TX threads share: the in-order MPMC queues (one or
//! more), the out-of-order queue, recycled entry vectors, and the counts
//! that tell a TX thread its producers are done.
//!
//! The queues are crossbeam `ArrayQueue`s (bounded, lock-free MPMC). They
//! carry chunks of entries rather than single entries: one queue operation
//! and one reference count per 128 records instead of per record, which is
//! what lets one worker keep up with millions of records per second. A
//! chunk holds its buffer alive; entries point into it (no record copies).

use crossbeam_queue::ArrayQueue;
use sluice_source::series::{DueRecord, Filled, SeriesError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Entries per chunk.
pub(crate) const CHUNK: usize = 128;
/// Chunks per in-order queue (32k records of lead).
pub(crate) const QUEUE_CHUNKS: usize = 256;
/// Out-of-order entries queued at most.
pub(crate) const OOO_ENTRIES: usize = 1 << 16;

pub(crate) struct Chunk {
    pub buf: Arc<Filled>,
    pub entries: Vec<DueRecord>,
}

pub(crate) struct OooItem {
    pub buf: Arc<Filled>,
    pub entry: DueRecord,
}

pub(crate) struct Lanes {
    pub queues: Vec<ArrayQueue<Chunk>>,
    /// Workers still feeding each queue.
    pub producers: Vec<AtomicUsize>,
    pub ooo: ArrayQueue<OooItem>,
    /// Workers still running (they may still produce out-of-order items).
    pub workers_left: AtomicUsize,
    pub spare: ArrayQueue<Vec<DueRecord>>,
    /// Entries handed to queues, for `limit`.
    pub admitted: AtomicU64,
    pub limit: Option<u64>,
    /// Set on a signal or a fatal error: everyone stops.
    pub stop: Arc<AtomicBool>,
    pub error: Mutex<Option<SeriesError>>,
}

impl Lanes {
    /// `chunks`: capacity of each in-order queue; `ooo`: of the
    /// out-of-order queue.
    pub fn new(
        queues: usize,
        workers: usize,
        chunks: usize,
        ooo: usize,
        limit: Option<u64>,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let producers = (0..queues)
            .map(|q| AtomicUsize::new((0..workers).filter(|w| w % queues == q).count()))
            .collect();
        Lanes {
            queues: (0..queues).map(|_| ArrayQueue::new(chunks)).collect(),
            producers,
            ooo: ArrayQueue::new(ooo),
            workers_left: AtomicUsize::new(workers),
            spare: ArrayQueue::new(queues * QUEUE_CHUNKS + 64),
            admitted: AtomicU64::new(0),
            limit,
            stop,
            error: Mutex::new(None),
        }
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Records a fatal error (the first one wins) and stops the run.
    pub fn fail(&self, e: SeriesError) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// An empty entry vector, recycled when possible.
    pub fn entries(&self) -> Vec<DueRecord> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK))
    }

    /// False once `limit` entries have been admitted.
    pub fn admit(&self) -> bool {
        match self.limit {
            Some(l) => self.admitted.fetch_add(1, Ordering::Relaxed) < l,
            None => true,
        }
    }
}

/// Pushes `item`, backing off while `q` is full; runs `idle` while waiting.
/// False if the run stopped first.
pub(crate) fn push_blocking<T>(
    q: &ArrayQueue<T>,
    mut item: T,
    stop: &AtomicBool,
    idle: &mut dyn FnMut(),
) -> bool {
    let mut spins = 0u32;
    loop {
        match q.push(item) {
            Ok(()) => return true,
            Err(back) => item = back,
        }
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            idle();
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}
