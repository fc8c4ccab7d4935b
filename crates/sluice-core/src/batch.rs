//! [`Batch`]: the unit of work handed from the IO thread to a TX thread.
//!
//! Frames are packed back to back in one buffer with a small index of
//! (offset, length, due); batches travel over a bounded channel and are sent
//! back empty for reuse, so steady-state replay allocates nothing per packet.

use crate::time::Nanos;
use std::sync::Arc;

/// Packets per batch: large enough to amortise channel hand-offs (~100 ns
/// each), small enough that a TX thread starts soon after the IO thread.
pub const BATCH_PACKETS: usize = 512;
/// Frame bytes per batch before it counts as full.
pub const BATCH_BYTES: usize = 192 * 1024;

/// One frame's place in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef {
    pub offset: u32,
    pub len: u32,
    /// Due offset from the start of the run.
    pub due: Nanos,
}

#[derive(Debug)]
pub struct Batch {
    pub data: Vec<u8>,
    pub entries: Vec<FrameRef>,
    /// Spacings to keep (ns), by entry: a frame with a spacing leaves no
    /// sooner than that long after the frame sent before it on its TX
    /// thread, so a late departure delays the frames chained behind it
    /// instead of squeezing their gaps (`sluice pace`). Empty for sources that keep a schedule; shorter
    /// than `entries` means 0 for the rest.
    pub spacings: Vec<u32>,
    /// Output port by entry for two-port replay (0: the first, `--to`; 1:
    /// the second, `--to2`). Empty when every frame leaves by the first;
    /// shorter than `entries` means 0 for the rest.
    pub ports: Vec<u8>,
    /// The pass (0-based) of the source its frames belong to. A batch holds
    /// one pass's frames only where the outbox ends batches at pass ends
    /// (`Outbox::end_pass`); otherwise it is the pass of its last frame.
    pub pass: u64,
    /// Nonzero while the batch is kept unchanged for the rest of the run
    /// (a preloaded pass, sent again each pass): a name no other batch of
    /// the process has, so a sink may keep its own copy of the frames and
    /// send that on later passes ([`Batch::keep`]).
    pub kept: u64,
}

/// The last name [`Batch::keep`] gave.
static KEPT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Default for Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Batch {
    pub fn new() -> Self {
        Batch {
            data: Vec::with_capacity(BATCH_BYTES + 2048),
            entries: Vec::with_capacity(BATCH_PACKETS),
            spacings: Vec::new(),
            ports: Vec::new(),
            pass: 0,
            kept: 0,
        }
    }

    /// A batch without storage: a placeholder that costs no allocation.
    pub fn unallocated() -> Self {
        Batch {
            data: Vec::new(),
            entries: Vec::new(),
            spacings: Vec::new(),
            ports: Vec::new(),
            pass: 0,
            kept: 0,
        }
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.entries.clear();
        self.spacings.clear();
        self.ports.clear();
        self.pass = 0;
        self.kept = 0;
    }

    /// Marks the batch as kept unchanged from now on (its frames will not
    /// be written again while anyone holds it), under a new name.
    pub fn keep(&mut self) {
        self.kept = KEPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    }

    /// The output port of entry `i` (0: the first).
    #[inline(always)]
    pub fn port(&self, i: usize) -> u8 {
        self.ports.get(i).copied().unwrap_or(0)
    }

    /// Sets the output port of the last entry.
    pub fn set_last_port(&mut self, port: u8) {
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        self.ports.resize(n - 1, 0);
        self.ports.push(port);
    }

    /// The spacing entry `i` keeps after the frame before it (0: none).
    #[inline(always)]
    pub fn spacing(&self, i: usize) -> u32 {
        self.spacings.get(i).copied().unwrap_or(0)
    }

    /// Sets the spacing of the last entry.
    pub fn set_last_spacing(&mut self, spacing: u32) {
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        self.spacings.resize(n - 1, 0);
        self.spacings.push(spacing);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= BATCH_PACKETS || self.data.len() >= BATCH_BYTES
    }

    /// Due offset of the first frame, if any.
    pub fn first_due(&self) -> Option<Nanos> {
        self.entries.first().map(|e| e.due)
    }

    /// Appends a copy of `frame`.
    #[inline]
    pub fn push(&mut self, frame: &[u8], due: Nanos) {
        let offset = self.data.len();
        self.data.extend_from_slice(frame);
        self.entries.push(FrameRef {
            offset: offset as u32,
            len: frame.len() as u32,
            due,
        });
    }

    /// Records the bytes appended to `data` since `offset` as one frame
    /// (for builders that write into `data` directly).
    #[inline]
    pub fn commit(&mut self, offset: usize, due: Nanos) {
        self.entries.push(FrameRef {
            offset: offset as u32,
            len: (self.data.len() - offset) as u32,
            due,
        });
    }

    #[inline]
    pub fn frame(&self, e: &FrameRef) -> &[u8] {
        &self.data[e.offset as usize..(e.offset + e.len) as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Nanos)> {
        self.entries.iter().map(|e| (self.frame(e), e.due))
    }
}

/// What a TX thread is handed: a batch of its own (sent back empty for
/// reuse), or a shared, preloaded batch repeated on a later pass.
#[derive(Debug)]
pub enum Work {
    Owned(Batch),
    Repeat {
        batch: Arc<Batch>,
        /// Added to every entry's due offset.
        offset: Nanos,
        /// Send only the first `take` entries (a limit reached mid-batch).
        take: usize,
        /// The pass this repetition is.
        pass: u64,
    },
}

impl Work {
    /// The source's pass (0-based) the frames belong to.
    #[inline]
    pub fn pass(&self) -> u64 {
        match self {
            Work::Owned(b) => b.pass,
            Work::Repeat { pass, .. } => *pass,
        }
    }

    /// The batch, the offset to add to its due times and the entries to send.
    #[inline]
    pub fn parts(&self) -> (&Batch, Nanos, &[FrameRef]) {
        match self {
            Work::Owned(b) => (b, Nanos(0), &b.entries),
            Work::Repeat {
                batch,
                offset,
                take,
                ..
            } => (
                batch,
                *offset,
                &batch.entries[..(*take).min(batch.entries.len())],
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_commit_and_read_back() {
        let mut b = Batch::new();
        b.push(&[1, 2, 3], Nanos(10));
        let at = b.data.len();
        b.data.extend_from_slice(&[9, 9]);
        b.commit(at, Nanos(20));
        let got: Vec<_> = b.iter().map(|(f, d)| (f.to_vec(), d)).collect();
        assert_eq!(
            got,
            vec![(vec![1, 2, 3], Nanos(10)), (vec![9, 9], Nanos(20))]
        );
        assert_eq!(b.first_due(), Some(Nanos(10)));
        b.clear();
        assert!(b.is_empty() && b.first_due().is_none());
    }

    #[test]
    fn fills_up_by_count() {
        let mut b = Batch::new();
        for _ in 0..BATCH_PACKETS {
            assert!(!b.is_full());
            b.push(&[0; 60], Nanos(0));
        }
        assert!(b.is_full());
    }

    #[test]
    fn repeated_work_shifts_and_cuts() {
        let mut b = Batch::new();
        for d in [5, 6, 7] {
            b.push(&[d as u8], Nanos(d));
        }
        let w = Work::Repeat {
            batch: Arc::new(b),
            offset: Nanos(100),
            take: 2,
            pass: 3,
        };
        assert_eq!(w.pass(), 3);
        let (batch, offset, entries) = w.parts();
        let got: Vec<_> = entries
            .iter()
            .map(|e| (batch.frame(e)[0], e.due + offset))
            .collect();
        assert_eq!(got, vec![(5, Nanos(105)), (6, Nanos(106))]);
    }
}
