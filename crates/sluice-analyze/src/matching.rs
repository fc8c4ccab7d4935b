//! Matching capture frames to reference frames by content.
//!
//! Design decision: every reference frame gets a content key
//! ([`frame_key`]); the frames sharing a key form a queue in reference
//! order, and each capture frame takes the next unmatched index of its key.
//! Identical frames in a trace are therefore matched in order of arrival; a
//! frame whose key exists but whose queue is used up is a **duplicate**; a
//! frame whose key is unknown is **foreign** (e.g. IPv6 neighbour discovery
//! the kernel sent on the link). The *reference index* (position in the
//! reference file) plays the role of `gaperr.py`'s sequence number.
//!
//! Why this layout: judging captures of millions of packets must neither
//! hold frames in memory nor spend a cache miss or two per frame in a hash
//! table that outgrew the caches (see docs/BENCHMARKS.md). So:
//! - The index is a **sorted array** of `(key, reference index)`: one sort
//!   instead of millions of random inserts, and each key's queue is a
//!   contiguous run, in reference order. The run start holds a cursor to
//!   its next unmatched entry. Keys are uniformly distributed hashes, so a
//!   lookup is an interpolation search (2 or 3 probes, then a short binary
//!   search; it falls back to plain binary search on skewed data).
//! - **Fast path**: a capture mostly arrives in reference order, so each
//!   frame is first compared with the key of the reference packet after the
//!   previously matched one. If that packet is unmatched and the first with
//!   its key, it is necessarily the head of its queue and is taken without a
//!   lookup. Cursors are therefore advanced lazily, skipping entries that
//!   already arrived; either way a frame gets exactly the index the plain
//!   queue rule gives it (a unit test checks this against a naive model).
//!
//! Memory per reference packet: timestamp, key, sorted key and first
//! arrival (8 bytes each), sorted index and cursor (4 bytes each), a
//! first-with-its-key flag (1 byte): 41 bytes, no frame bytes. Capture
//! frames are streamed and forgotten; reordering is counted on the fly.

use crate::key::frame_key;

/// Sentinel for "not arrived" in the arrival times.
pub(crate) const NOT_ARRIVED: u64 = u64::MAX;

/// Largest number of reference packets that can be indexed.
pub const MAX_REFERENCE_PACKETS: u64 = u32::MAX as u64;

/// The reference trace, reduced to what matching needs: timestamps and
/// content keys in file order.
#[derive(Debug, Default)]
pub struct Reference {
    /// Timestamp of each reference packet, in file order.
    pub(crate) ts: Vec<u64>,
    /// Content key of each reference packet.
    keys: Vec<u64>,
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
        if self.ts.len() as u64 >= MAX_REFERENCE_PACKETS {
            return Err(ReferenceFull);
        }
        self.ts.push(ts_ns);
        self.keys.push(frame_key(data));
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
    /// Timestamp of each reference packet (by reference index).
    ts: Vec<u64>,
    /// Key of each reference packet (by reference index).
    keys: Vec<u64>,
    /// Whether each reference packet is the first with its key.
    first: Vec<bool>,
    /// All keys, sorted.
    sorted_keys: Vec<u64>,
    /// Reference index of each `sorted_keys` entry (ascending within a key).
    sorted_idx: Vec<u32>,
    /// At the start of each run of equal keys: position in the sorted
    /// arrays from which to look for the run's next unmatched entry.
    cursor: Vec<u32>,
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
    /// Indexes `reference` and starts matching against it.
    pub fn new(reference: Reference) -> Matcher {
        let Reference { ts, keys } = reference;
        let n = keys.len();
        // `push` caps the count at u32::MAX, so indices fit in u32.
        let mut pairs: Vec<(u64, u32)> = keys.iter().zip(0u32..).map(|(&k, i)| (k, i)).collect();
        pairs.sort_unstable();
        let (sorted_keys, sorted_idx): (Vec<u64>, Vec<u32>) = pairs.into_iter().unzip();
        let mut first = vec![false; n];
        for (pos, &idx) in sorted_idx.iter().enumerate() {
            first[idx as usize] = pos == 0 || sorted_keys[pos - 1] != sorted_keys[pos];
        }
        Matcher {
            ts,
            keys,
            first,
            sorted_keys,
            sorted_idx,
            cursor: (0..n as u32).collect(),
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
        let key = frame_key(data);
        // Fast path: the packet after the previous match, if it is
        // certainly the head of its queue (see the module docs).
        let guess = self.prev.map_or(0, |p| p + 1);
        let idx = if guess < self.keys.len()
            && self.keys[guess] == key
            && self.first[guess]
            && self.arrival[guess] == NOT_ARRIVED
        {
            guess
        } else {
            match self.take_from_queue(key) {
                Ok(idx) => idx,
                Err(m) => return m,
            }
        };
        // u64::MAX means "not arrived"; a packet stamped in 2554 moves 1 ns.
        self.arrival[idx] = ts_ns.min(NOT_ARRIVED - 1);
        self.received += 1;
        // gaperr.py: adjacent pairs (in arrival order, duplicates left out)
        // where the later one has the smaller sequence number.
        if self.prev.is_some_and(|p| idx < p) {
            self.reordered += 1;
        }
        self.prev = Some(idx);
        Match::Received(idx)
    }

    /// The next unmatched reference index with `key`, or what the frame is
    /// when there is none.
    fn take_from_queue(&mut self, key: u64) -> Result<usize, Match> {
        let start = lower_bound(&self.sorted_keys, key);
        if self.sorted_keys.get(start) != Some(&key) {
            self.foreign += 1;
            return Err(Match::Foreign);
        }
        let mut pos = self.cursor[start] as usize;
        while pos < self.sorted_keys.len()
            && self.sorted_keys[pos] == key
            && self.arrival[self.sorted_idx[pos] as usize] != NOT_ARRIVED
        {
            pos += 1;
        }
        if pos == self.sorted_keys.len() || self.sorted_keys[pos] != key {
            // Remember that the run is used up (pos <= n <= u32::MAX).
            self.cursor[start] = pos as u32;
            self.duplicates += 1;
            return Err(Match::Duplicate);
        }
        self.cursor[start] = pos as u32 + 1;
        Ok(self.sorted_idx[pos] as usize)
    }

    /// The reference timestamps (by reference index).
    pub(crate) fn reference_ts(&self) -> &[u64] {
        &self.ts
    }
}

/// First position in the sorted `keys` whose key is `>= k`.
///
/// Interpolation search: while the range is large, guess the position from
/// where `k` lies between the range's bounding keys (uniform hashes land
/// within about the square root of the range), then binary search. At most
/// a few interpolation rounds, so skewed data cannot make it linear.
pub(crate) fn lower_bound(keys: &[u64], k: u64) -> usize {
    // Invariant: keys[..lo] < k <= keys[hi..], and keys[lo..hi] lie
    // within [klo, khi] with klo <= k <= khi.
    let (mut lo, mut hi) = (0usize, keys.len());
    let (mut klo, mut khi) = (0u64, u64::MAX);
    for _ in 0..8 {
        if hi - lo <= 16 {
            break;
        }
        let span = (hi - lo) as u128;
        let off = u128::from(k - klo) * span / (u128::from(khi - klo) + 1);
        // off < span because k - klo <= khi - klo.
        let g = lo + off as usize;
        if keys[g] < k {
            lo = g + 1;
            klo = keys[g];
        } else {
            hi = g;
            khi = keys[g];
        }
    }
    lo + keys[lo..hi].partition_point(|&x| x < k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
    fn fast_path_agrees_with_queue_rule() {
        // Reference A B A C: the second A (index 2) is not first with its
        // key, so after B it must go through the index, which hands out 0.
        let (a, b, c) = (frame(0xa), frame(0xb), frame(0xc));
        let mut m = Matcher::new(reference(&[a, b, a, c]));
        assert_eq!(m.observe(1, &b), Match::Received(1));
        assert_eq!(m.observe(2, &a), Match::Received(0));
        assert_eq!(m.observe(3, &a), Match::Received(2));
        assert_eq!(m.observe(4, &a), Match::Duplicate);
        // In order (fast path for all), then repeats: the lazily advanced
        // cursors find the queues used up.
        let fr: Vec<[u8; 8]> = (0..4).map(frame).collect();
        let mut m = Matcher::new(reference(&fr));
        for (i, f) in fr.iter().enumerate() {
            assert_eq!(m.observe(i as u64, f), Match::Received(i));
        }
        for f in &fr {
            assert_eq!(m.observe(9, f), Match::Duplicate);
        }
        assert_eq!((m.received, m.duplicates, m.reordered), (4, 4, 0));
    }

    #[test]
    fn agrees_with_plain_queues_on_random_streams() {
        // A naive model: per key, a queue of indices consumed from the front.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let refs: Vec<[u8; 8]> = (0..40).map(|_| frame(rnd(12) as u8)).collect();
            let mut naive: HashMap<[u8; 8], std::collections::VecDeque<usize>> = HashMap::new();
            for (i, f) in refs.iter().enumerate() {
                naive.entry(*f).or_default().push_back(i);
            }
            let mut m = Matcher::new(reference(&refs));
            for t in 0..60 {
                // Mostly in order, sometimes random, sometimes foreign.
                let f = match rnd(4) {
                    0 => frame(rnd(14) as u8),
                    _ => refs[(t as usize + rnd(2) as usize) % refs.len()],
                };
                let want = match naive.get_mut(&f) {
                    None => Match::Foreign,
                    Some(q) => q.pop_front().map_or(Match::Duplicate, Match::Received),
                };
                assert_eq!(m.observe(t, &f), want);
            }
        }
    }

    #[test]
    fn lower_bound_agrees_with_binary_search() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let uniform: Vec<u64> = (0..5000).map(|_| next()).collect();
        // Skewed: clustered near 0 and near u64::MAX, with repeats.
        let skewed: Vec<u64> = (0..5000u64)
            .map(|i| match i % 3 {
                0 => i / 7,
                1 => u64::MAX - i % 11,
                _ => 1 << (i % 64),
            })
            .collect();
        for mut keys in [uniform, skewed, vec![], vec![5], vec![7; 100]] {
            keys.sort_unstable();
            let mut probes: Vec<u64> = keys.clone();
            probes.extend(keys.iter().map(|k| k.wrapping_add(1)));
            probes.extend(keys.iter().map(|k| k.wrapping_sub(1)));
            probes.extend([0, 1, u64::MAX, u64::MAX - 1, 1 << 63]);
            probes.extend((0..1000).map(|_| next()));
            for k in probes {
                assert_eq!(
                    lower_bound(&keys, k),
                    keys.partition_point(|&x| x < k),
                    "key {k:#x}"
                );
            }
        }
    }

    #[test]
    fn empty_reference_makes_everything_foreign() {
        let mut m = Matcher::new(Reference::new());
        assert_eq!(m.observe(0, b"x"), Match::Foreign);
        assert_eq!(m.foreign, 1);
        assert!(m.arrival.is_empty());
    }
}
