//! The feed of the batch pipeline (replay, flows, every source on the
//! `Source` seam): units are batches of frames the IO thread built, sent
//! as they are; owned batches go back to the IO thread for reuse.

use super::core::{TxCore, Verdict};
use super::send::{Feed, Next, Unit};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use sluice_core::{Batch, Nanos, Work};

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
        if let Work::Owned(batch) = work {
            let _ = self.free.send(batch);
        }
    }

    #[inline(always)]
    fn send(&mut self, core: &mut TxCore, work: &Work, i: usize, verdict: Verdict) {
        let Verdict::Send { eps } = verdict else {
            core.dropped();
            return;
        };
        let batch = batch(work);
        let frame = batch.frame(&batch.entries[i]);
        let stamp = core.stamp();
        let port = batch.port(i);
        let sent = if port == 0 {
            core.sink.send(frame, stamp)
        } else {
            core.sink.send_on(port, frame, stamp)
        };
        match sent {
            Ok(()) => {
                core.sent(eps, frame.len());
            }
            Err(err) => {
                // Refused, not sent: ε is not recorded, the clock moves on.
                if !core.failed(err) && !core.topspeed {
                    core.now = core.waiter.now();
                }
            }
        }
    }
}
