//! The feed of the batch pipeline (replay, flows, every source on the
//! `Source` seam): units are batches of frames the IO thread built, sent
//! as they are; owned batches go back to the IO thread for reuse.

use super::core::{TxCore, Verdict};
use super::send::{Feed, Next};
use super::stamps::StampNumbers;
use super::unit::Unit;
use crate::passes::{PassBoard, PassTally};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use sluice_core::{Batch, Nanos, Work};
use std::sync::Arc;

impl Unit for Work {
    #[inline(always)]
    fn len(&self) -> usize {
        match self {
            Work::Owned(b) => b.entries.len(),
            Work::Repeat { batch, take, .. } => (*take).min(batch.entries.len()),
        }
    }

    #[inline(always)]
    fn due(&self, i: usize) -> Nanos {
        match self {
            Work::Owned(b) => b.entries[i].due,
            Work::Repeat { batch, offset, .. } => batch.entries[i].due + *offset,
        }
    }

    #[inline(always)]
    fn spacing(&self, i: usize) -> u32 {
        batch(self).spacing(i)
    }

    #[inline(always)]
    fn dues(&self) -> impl Iterator<Item = Nanos> + '_ {
        let (_, offset, entries) = self.parts();
        entries.iter().map(move |e| e.due + offset)
    }
}

/// The batch of a unit of work, shared or owned.
#[inline(always)]
fn batch(work: &Work) -> &Batch {
    match work {
        Work::Owned(b) => b,
        Work::Repeat { batch, .. } => batch,
    }
}

pub(crate) struct BatchFeed {
    pub batches: Receiver<Work>,
    pub free: Sender<Batch>,
    /// Per-pass statistics: the board and this feed's lane.
    pub passes: Option<(Arc<PassBoard>, usize)>,
    /// What the current unit's frames did.
    pub tally: PassTally,
    /// `--rx-stamp`: stamps each frame as it leaves.
    pub stamper: Option<Stamper>,
}

impl BatchFeed {
    pub fn new(
        batches: Receiver<Work>,
        free: Sender<Batch>,
        passes: Option<(Arc<PassBoard>, usize)>,
    ) -> Self {
        BatchFeed {
            batches,
            free,
            passes,
            tally: PassTally::default(),
            stamper: None,
        }
    }
}

/// Writes receive stamps (`sluice_wire::rxstamp`) into frames as they
/// leave: one stream per TX thread and port (+256 for the second).
pub(crate) struct Stamper {
    lane: u32,
    pub departures: StampNumbers,
    scratch: Vec<u8>,
}

impl Stamper {
    /// Stamps of stream `lane` (+256 on the second port).
    pub fn new(lane: u32, clock: &sluice_core::MonotonicClock, shift_ns: i64) -> Self {
        Stamper {
            lane,
            departures: StampNumbers::new(clock, shift_ns),
            scratch: Vec::with_capacity(2048),
        }
    }

    /// `frame` with its stamp, sent at `now` by `port`.
    #[inline]
    fn stamp(&mut self, frame: &[u8], now: sluice_core::MonoTime, port: u8) -> &[u8] {
        self.scratch.clear();
        self.scratch.extend_from_slice(frame);
        let Some(spot) = sluice_wire::rxstamp::spot(&self.scratch) else {
            self.departures.unstamped += 1;
            return &self.scratch;
        };
        let slot = usize::from(port.min(1));
        let s = self
            .departures
            .take(self.lane + 256 * slot as u32, slot, now);
        sluice_wire::rxstamp::write(&mut self.scratch, &spot, &s);
        &self.scratch
    }
}

impl Feed for BatchFeed {
    type Unit = Work;

    fn next(&mut self, core: &mut TxCore) -> Next<Work> {
        let work = match self.batches.try_recv() {
            Ok(w) => w,
            Err(TryRecvError::Disconnected) => return Next::Done,
            Err(TryRecvError::Empty) => {
                // The IO thread is behind: push out what is queued, then block.
                core.flush();
                if core.error.is_some() {
                    return Next::Done;
                }
                match self.batches.recv() {
                    Ok(w) => w,
                    Err(_) => return Next::Done,
                }
            }
        };
        core.now = core.waiter.now();
        Next::Unit(work)
    }

    fn recycle(&mut self, work: Work) {
        if let Some((board, lane)) = &self.passes {
            board.done(*lane, work.pass(), &self.tally);
            self.tally = PassTally::default();
        }
        if let Work::Owned(batch) = work {
            let _ = self.free.send(batch);
        }
    }

    #[inline(always)]
    fn send(&mut self, core: &mut TxCore, work: &Work, i: usize, verdict: Verdict) {
        let tracked = self.passes.is_some();
        let Verdict::Send { eps } = verdict else {
            core.dropped();
            self.tally.dropped += u64::from(tracked);
            return;
        };
        let batch = batch(work);
        let port = batch.port(i);
        let mut frame = batch.frame(&batch.entries[i]);
        // A stamped frame differs on every send: it is never kept.
        let kept = if self.stamper.is_none() {
            batch.kept
        } else {
            0
        };
        if let Some(st) = &mut self.stamper {
            frame = st.stamp(frame, core.now, port);
        }
        if core.lose() {
            return;
        }
        let stamp = core.stamp();
        let sent = if port == 0 && kept != 0 {
            // The same bytes every pass: the sink may send its own copy.
            let at = sluice_sink::KeptFrame {
                batch: kept,
                index: i as u32,
                count: batch.entries.len() as u32,
            };
            core.sink.send_kept(at, frame, stamp)
        } else if port == 0 {
            core.sink.send(frame, stamp)
        } else {
            core.sink.send_on(port, frame, stamp)
        };
        match sent {
            Ok(()) => {
                // Read before `sent` moves the clock on.
                let at = tracked.then(|| core.due_now());
                let late = core.sent(eps, frame.len());
                if let Some(at) = at {
                    let eps = (!core.topspeed).then_some((eps, late));
                    self.tally.sent(at, frame.len(), eps);
                }
            }
            Err(err) => {
                // Refused, not sent: ε is not recorded, the clock moves on.
                let fatal = core.failed(err);
                self.tally.refused += u64::from(tracked && !fatal);
                if !fatal && !core.topspeed {
                    core.now = core.waiter.now();
                }
            }
        }
    }
}
