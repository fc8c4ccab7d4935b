//! FLOR's distribution tree (Appendix A): picks events with probability
//! proportional to integer weights, with O(log n) insert, remove and
//! sample and O(n) space.
//!
//! A complete binary tree in breadth-first order in one array: with L
//! leaves, nodes 0..L−1 are inner nodes, L−1..2L−1 leaves, and node i has
//! children 2i+1 and 2i+2. A leaf holds an event's weight; an inner node
//! the sum of the weights in its *left* subtree only (so an update touches
//! one path and nothing else). Sampling walks down comparing against those
//! sums (a binary search on the CDF, §A.1); inserting splits the first leaf
//! into a copy of itself and the new leaf (§A.2); removing moves the last
//! leaf into the removed one's place and collapses the last pair (§A.3).

/// Events are small integers (flow slots); `NONE` marks unused positions.
const NONE: u32 = u32::MAX;

#[derive(Debug, Default, Clone)]
pub struct DistributionTree {
    /// Inner nodes: left-subtree sum; leaves: weight.
    sum: Vec<u64>,
    /// Event of each leaf.
    event: Vec<u32>,
    /// Node of each event (NONE if not in the tree).
    pos: Vec<u32>,
    leaves: usize,
    total: u64,
}

impl DistributionTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Leaves held (the tests check it against a reference).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.leaves
    }

    pub fn is_empty(&self) -> bool {
        self.leaves == 0
    }

    /// Sum of all weights.
    pub fn total(&self) -> u64 {
        self.total
    }

    fn set_pos(&mut self, event: u32, node: usize) {
        let e = event as usize;
        if self.pos.len() <= e {
            self.pos.resize(e + 1, NONE);
        }
        self.pos[e] = node as u32;
    }

    /// Adds `delta` along the path from node `c` to the root, to every
    /// ancestor whose left subtree holds `c`.
    fn propagate(&mut self, mut c: usize, delta: i128) {
        while c != 0 {
            let p = (c - 1) / 2;
            if c == 2 * p + 1 {
                self.sum[p] = (i128::from(self.sum[p]) + delta) as u64;
            }
            c = p;
        }
    }

    /// Adds `event` (not yet in the tree) with `weight` ≥ 1.
    pub fn insert(&mut self, event: u32, weight: u64) {
        debug_assert!(weight > 0 && event != NONE);
        if self.leaves == 0 {
            self.sum.push(weight);
            self.event.push(event);
            self.set_pos(event, 0);
        } else {
            // The first leaf in breadth-first order becomes an inner node
            // with a copy of itself on the left and the new leaf on the right.
            let j = self.leaves - 1;
            let (w, e) = (self.sum[j], self.event[j]);
            self.sum.push(w);
            self.event.push(e);
            self.sum.push(weight);
            self.event.push(event);
            self.event[j] = NONE;
            // sum[j] is now its left subtree's sum: the copy's weight, w.
            self.set_pos(e, 2 * j + 1);
            self.set_pos(event, 2 * j + 2);
            self.propagate(2 * j + 2, i128::from(weight));
        }
        self.leaves += 1;
        self.total += weight;
    }

    /// Removes `event`; false if it is not in the tree.
    pub fn remove(&mut self, event: u32) -> bool {
        let Some(&node) = self.pos.get(event as usize) else {
            return false;
        };
        if node == NONE {
            return false;
        }
        let j = node as usize;
        let w = self.sum[j];
        self.pos[event as usize] = NONE;
        self.total -= w;
        if self.leaves == 1 {
            self.sum.clear();
            self.event.clear();
            self.leaves = 0;
            return true;
        }
        let last = 2 * self.leaves - 2;
        if j != last {
            // The last leaf takes the removed leaf's place.
            let (lw, le) = (self.sum[last], self.event[last]);
            self.sum[j] = lw;
            self.event[j] = le;
            self.set_pos(le, j);
            self.propagate(j, i128::from(lw) - i128::from(w));
        }
        // Drop the last pair: their parent becomes a leaf holding the left
        // one, and the right one's weight leaves the parent's ancestors.
        let p = self.leaves - 2;
        let (left, right) = (last - 1, last);
        let rw = self.sum[right];
        let (lw, le) = (self.sum[left], self.event[left]);
        self.sum[p] = lw;
        self.event[p] = le;
        self.set_pos(le, p);
        self.propagate(p, -i128::from(rw));
        self.sum.truncate(left);
        self.event.truncate(left);
        self.leaves -= 1;
        true
    }

    /// The event for `r` in [0, total): events own consecutive ranges as
    /// wide as their weights.
    pub fn sample(&self, mut r: u64) -> Option<u32> {
        if self.leaves == 0 {
            return None;
        }
        let mut i = 0;
        while i + 1 < self.leaves {
            if r < self.sum[i] {
                i = 2 * i + 1;
            } else {
                r -= self.sum[i];
                i = 2 * i + 2;
            }
        }
        Some(self.event[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Each event's share of [0, total), by sampling every value.
    fn shares(t: &DistributionTree) -> BTreeMap<u32, u64> {
        let mut m = BTreeMap::new();
        for r in 0..t.total() {
            *m.entry(t.sample(r).unwrap()).or_insert(0) += 1;
        }
        m
    }

    #[test]
    fn every_event_owns_exactly_its_weight_through_inserts_and_removals() {
        let mut t = DistributionTree::new();
        let mut want = BTreeMap::new();
        let mut x = 0x1234_5678u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for step in 0..3000u32 {
            if want.is_empty() || rnd(3) > 0 {
                let e = step;
                let w = 1 + rnd(9);
                t.insert(e, w);
                want.insert(e, w);
            } else {
                let keys: Vec<u32> = want.keys().copied().collect();
                let e = keys[rnd(keys.len() as u64) as usize];
                assert!(t.remove(e));
                want.remove(&e);
            }
            assert_eq!(t.len(), want.len());
            assert_eq!(t.total(), want.values().sum::<u64>());
            if step % 97 == 0 {
                assert_eq!(shares(&t), want, "step {step}");
            }
        }
        assert_eq!(shares(&t), want);
        for e in want.keys().copied().collect::<Vec<_>>() {
            assert!(t.remove(e));
        }
        assert!(t.is_empty() && t.total() == 0 && t.sample(0).is_none());
        assert!(!t.remove(1));
    }
}
