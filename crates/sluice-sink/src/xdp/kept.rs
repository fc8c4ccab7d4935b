//! Where kept frames live in the UMEM: a region after the scratch frames,
//! filled once as the frames of kept batches (a preloaded trace) are first
//! sent, then sent again by descriptor alone, with no copy. A frame goes
//! inside one chunk (the kernel's rule for aligned UMEMs), so small frames
//! share chunks. The region is never written twice: a frame placed stays
//! for the socket's life, and a frame with no room left is copied per send
//! instead (counted).

use crate::{Copies, KeptFrame};
use std::collections::HashMap;

/// Not placed (yet, or ever: no room).
const NONE: u64 = u64::MAX;

pub(super) struct Kept {
    /// The region's first byte, the next free byte and its end (UMEM
    /// offsets).
    start: u64,
    next: u64,
    end: u64,
    chunk: u64,
    /// Placed frames' addresses, by kept batch; the batch being sent is
    /// out of the map, in `addrs`.
    batches: HashMap<u64, Vec<u64>>,
    current: u64,
    addrs: Vec<u64>,
    /// Descriptors of placed frames the kernel has not completed.
    pub in_flight: u64,
    pub copies: Copies,
}

/// Where a kept frame is sent from.
pub(super) enum Spot {
    /// Placed before: send it from here.
    Placed(u64),
    /// Place it here (once), then send it from here.
    Place(u64),
    /// No room: copy it per send.
    Copy,
}

impl Kept {
    /// A region of `[start, end)` cut into chunks of `chunk` bytes.
    pub(super) fn new(start: u64, end: u64, chunk: u64) -> Kept {
        Kept {
            start,
            next: start,
            end,
            chunk,
            batches: HashMap::new(),
            current: 0,
            addrs: Vec::new(),
            in_flight: 0,
            copies: Copies::default(),
        }
    }

    /// Whether UMEM offset `addr` is in the region (a completion of a
    /// placed frame, not a scratch frame to reuse).
    #[inline]
    pub(super) fn holds(&self, addr: u64) -> bool {
        addr >= self.start
    }

    /// Where frame `at` of `len` bytes is sent from.
    #[inline]
    pub(super) fn spot(&mut self, at: KeptFrame, len: usize) -> Spot {
        if at.batch != self.current {
            self.switch(at);
        }
        let Some(slot) = self.addrs.get_mut(at.index as usize) else {
            return Spot::Copy;
        };
        if *slot != NONE {
            return Spot::Placed(*slot);
        }
        let len = len as u64;
        // The next frame starts in the current chunk if it fits there.
        let mut addr = self.next;
        if addr % self.chunk + len > self.chunk {
            addr = addr.next_multiple_of(self.chunk);
        }
        if len > self.chunk || addr + len > self.end {
            return Spot::Copy;
        }
        self.next = addr + len;
        *slot = addr;
        Spot::Place(addr)
    }

    /// Makes `at`'s batch the current one.
    fn switch(&mut self, at: KeptFrame) {
        let done = std::mem::take(&mut self.addrs);
        if self.current != 0 {
            self.batches.insert(self.current, done);
        }
        self.current = at.batch;
        self.addrs = self
            .batches
            .remove(&at.batch)
            .unwrap_or_else(|| vec![NONE; at.count as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(batch: u64, index: u32) -> KeptFrame {
        KeptFrame {
            batch,
            index,
            count: 4,
        }
    }

    #[test]
    fn frames_are_placed_once_inside_one_chunk_and_found_again() {
        let mut k = Kept::new(4096, 4096 + 2 * 2048, 2048);
        let Spot::Place(a) = k.spot(at(1, 0), 1500) else {
            panic!("first sight places")
        };
        assert_eq!(a, 4096);
        // 1500 + 1500 crosses the chunk: the next chunk.
        let Spot::Place(b) = k.spot(at(1, 1), 1500) else {
            panic!("room for a second")
        };
        assert_eq!(b, 4096 + 2048);
        // Small frames share the rest of that chunk.
        let Spot::Place(c) = k.spot(at(2, 0), 60) else {
            panic!("a small one fits")
        };
        assert_eq!(c, 4096 + 2048 + 1500);
        // The region is full: copied.
        assert!(matches!(k.spot(at(2, 1), 1500), Spot::Copy));
        // Earlier batches are found again, in any order.
        assert!(matches!(k.spot(at(1, 1), 1500), Spot::Placed(x) if x == b));
        assert!(matches!(k.spot(at(2, 0), 60), Spot::Placed(x) if x == c));
        assert!(matches!(k.spot(at(1, 0), 1500), Spot::Placed(x) if x == a));
        // An index past the batch's count is copied, never out of bounds.
        assert!(matches!(k.spot(at(1, 9), 60), Spot::Copy));
        assert!(k.holds(4096) && !k.holds(2048));
    }

    #[test]
    fn a_frame_larger_than_a_chunk_is_copied() {
        let mut k = Kept::new(0, 1 << 20, 2048);
        assert!(matches!(k.spot(at(1, 0), 2049), Spot::Copy));
        assert!(matches!(k.spot(at(1, 1), 2048), Spot::Place(0)));
    }
}
