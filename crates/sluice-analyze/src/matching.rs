//! Matching capture frames to reference frames by content.
//!
//! Design decision: the reference is indexed as `key -> queue of reference
//! indices in file order`, and each capture frame takes the next unmatched
//! index of its key. Identical frames in a trace are therefore matched in
//! order of arrival; a frame whose key exists but whose queue is used up is
//! a **duplicate**; a frame whose key is unknown is **foreign** (e.g. IPv6
//! neighbour discovery the kernel sent on the link). The *reference index*
//! (position in the reference file) plays the role of `gaperr.py`'s
//! sequence number.
//!
//! Why this layout: judging captures of millions of packets must not hold
//! frames in memory. Per reference packet we keep its timestamp (8 bytes),
//! the link to the next reference packet with the same key (4 bytes) and
//! its first arrival time in the capture (8 bytes); per distinct key one
//! table entry (key, queue head, queue tail: 16 bytes). The queues are
//! threaded through the `next` array, so identical frames cost no extra
//! allocation. Capture frames are streamed and forgotten; reordering is
//! counted on the fly from the previously matched index.

use std::collections::HashMap;

use crate::key::{frame_key, BuildKeyHasher};

/// Sentinel for "no index" in the `u32` index arrays.
const NONE: u32 = u32::MAX;
/// Sentinel for "not arrived" in the arrival times.
pub(crate) const NOT_ARRIVED: u64 = u64::MAX;

/// Largest number of reference packets that can be indexed.
pub const MAX_REFERENCE_PACKETS: u64 = (u32::MAX - 1) as u64;

/// Head (next unmatched index) and tail of one key's queue.
#[derive(Debug, Clone, Copy)]
struct Queue {
    head: u32,
    tail: u32,
}

/// The reference trace, reduced to what matching needs.
#[derive(Debug, Default)]
pub struct Reference {
    /// Timestamp of each reference packet, in file order.
    pub(crate) ts: Vec<u64>,
    /// Next reference index with the same key, or `NONE`.
    next: Vec<u32>,
    queues: HashMap<u64, Queue, BuildKeyHasher>,
}

/// Returned by [`Reference::push`] when the reference has
/// [`MAX_REFERENCE_PACKETS`] packets already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceFull;

impl Reference {
    /// An empty reference.
    pub fn new() -> Reference {
        Reference::default()
    }

    /// Appends the next reference frame.
    pub fn push(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), ReferenceFull> {
        let idx = u32::try_from(self.ts.len())
            .ok()
            .filter(|&i| u64::from(i) < MAX_REFERENCE_PACKETS)
            .ok_or(ReferenceFull)?;
        self.ts.push(ts_ns);
        self.next.push(NONE);
        let q = self.queues.entry(frame_key(data)).or_insert(Queue {
            head: idx,
            tail: idx,
        });
        if q.tail != idx {
            self.next[q.tail as usize] = idx;
            q.tail = idx;
        }
        Ok(())
    }

    /// Number of reference packets.
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    /// True when the reference has no packets.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }
}

/// What one capture frame turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// First arrival of the reference packet with this index.
    Received(usize),
    /// A copy of a reference frame whose every occurrence already arrived.
    Duplicate,
    /// Matches no reference frame.
    Foreign,
}

/// Streams capture frames against a [`Reference`].
#[derive(Debug)]
pub struct Matcher {
    reference: Reference,
    /// First arrival time per reference index, or `NOT_ARRIVED`.
    pub(crate) arrival: Vec<u64>,
    pub(crate) received: u64,
    pub(crate) duplicates: u64,
    pub(crate) foreign: u64,
    pub(crate) reordered: u64,
    /// Reference index of the previous received (first-arrival) frame.
    prev: Option<usize>,
}

impl Matcher {
    /// Starts matching against `reference` (whose queues it consumes).
    pub fn new(reference: Reference) -> Matcher {
        let n = reference.len();
        Matcher {
            reference,
            arrival: vec![NOT_ARRIVED; n],
            received: 0,
            duplicates: 0,
            foreign: 0,
            reordered: 0,
            prev: None,
        }
    }

    /// Classifies the next capture frame (in capture file order).
    pub fn observe(&mut self, ts_ns: u64, data: &[u8]) -> Match {
        let Some(q) = self.reference.queues.get_mut(&frame_key(data)) else {
            self.foreign += 1;
            return Match::Foreign;
        };
        if q.head == NONE {
            self.duplicates += 1;
            return Match::Duplicate;
        }
        let idx = q.head as usize;
        q.head = self.reference.next[idx];
        self.arrival[idx] = ts_ns;
        self.received += 1;
        // gaperr.py: adjacent pairs (in arrival order, duplicates left out)
        // where the later one has the smaller sequence number.
        if self.prev.is_some_and(|p| idx < p) {
            self.reordered += 1;
        }
        self.prev = Some(idx);
        Match::Received(idx)
    }

    /// The reference timestamps (by reference index).
    pub(crate) fn reference_ts(&self) -> &[u64] {
        &self.reference.ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: u8) -> [u8; 8] {
        [n; 8]
    }

    fn reference(frames: &[[u8; 8]]) -> Reference {
        let mut r = Reference::new();
        for (i, f) in frames.iter().enumerate() {
            r.push(1000 * i as u64, f).unwrap();
        }
        r
    }

    #[test]
    fn loss_duplicates_and_foreign() {
        let r = reference(&[frame(0), frame(1), frame(2), frame(3)]);
        let mut m = Matcher::new(r);
        assert_eq!(m.observe(10, &frame(0)), Match::Received(0));
        assert_eq!(m.observe(11, &frame(0)), Match::Duplicate);
        assert_eq!(m.observe(12, &frame(9)), Match::Foreign);
        assert_eq!(m.observe(13, &frame(2)), Match::Received(2));
        assert_eq!(m.observe(14, &[1, 1, 1]), Match::Foreign); // prefix of frame(1)
        assert_eq!(
            (m.received, m.duplicates, m.foreign, m.reordered),
            (2, 1, 2, 0)
        );
        // The duplicate does not overwrite the first arrival.
        assert_eq!(m.arrival, vec![10, NOT_ARRIVED, 13, NOT_ARRIVED]);
    }

    #[test]
    fn identical_frames_match_in_order_then_duplicate() {
        // Reference: A B A A; capture: A A B A A.
        let (a, b) = (frame(0xa), frame(0xb));
        let mut m = Matcher::new(reference(&[a, b, a, a]));
        assert_eq!(m.observe(1, &a), Match::Received(0));
        assert_eq!(m.observe(2, &a), Match::Received(2));
        assert_eq!(m.observe(3, &b), Match::Received(1));
        assert_eq!(m.observe(4, &a), Match::Received(3));
        assert_eq!(m.observe(5, &a), Match::Duplicate);
        // 2 then 1 is one inversion.
        assert_eq!(m.reordered, 1);
        assert_eq!(m.received, 4);
    }

    #[test]
    fn reordering_counts_adjacent_inversions_only() {
        let fr: Vec<[u8; 8]> = (0..6).map(frame).collect();
        let mut m = Matcher::new(reference(&fr));
        // Arrival order 1 0 2 5 3 4: inversions at (1,0) and (5,3).
        for (t, i) in [1usize, 0, 2, 5, 3, 4].into_iter().enumerate() {
            assert_eq!(m.observe(t as u64, &fr[i]), Match::Received(i));
        }
        assert_eq!(m.reordered, 2);
        // A duplicate or foreign frame in between does not reset the chain.
        let mut m = Matcher::new(reference(&fr));
        m.observe(0, &fr[3]);
        m.observe(1, &fr[3]);
        m.observe(2, &frame(99));
        m.observe(3, &fr[2]);
        assert_eq!(m.reordered, 1);
    }

    #[test]
    fn empty_reference_makes_everything_foreign() {
        let mut m = Matcher::new(Reference::new());
        assert_eq!(m.observe(0, b"x"), Match::Foreign);
        assert_eq!(m.foreign, 1);
        assert!(m.arrival.is_empty());
    }
}
