//! Spreading flows over TX threads.
//!
//! `hash % threads` keeps each flow on one thread, but with few flows the
//! split is lumpy: 64 flows over 2 threads land 40/24 as often as not, and
//! the run lasts as long as the busier thread. Instead each new flow goes to
//! the thread with the fewest packets so far and stays there, so per-flow
//! order holds and the load evens out. The assignment is deterministic (the
//! same trace splits the same way every run). Past `MAX_TRACKED` flows new
//! flows fall back to the hash, which bounds memory on huge traces.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Flows remembered before new ones are placed by hash alone (~24 MiB).
const MAX_TRACKED: usize = 1 << 20;

/// Keys are already well-mixed flow hashes: hash them as they are.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub struct Spreader {
    threads: usize,
    load: Vec<u64>,
    assigned: HashMap<u64, u32, BuildHasherDefault<Identity>>,
}

impl Spreader {
    pub fn new(threads: usize) -> Self {
        Spreader {
            threads: threads.max(1),
            load: vec![0; threads.max(1)],
            assigned: HashMap::default(),
        }
    }

    /// The thread for a packet of the flow with this hash.
    #[inline]
    pub fn thread(&mut self, flow: u64) -> usize {
        let t = match self.assigned.get(&flow) {
            Some(&t) => t as usize,
            None if self.assigned.len() >= MAX_TRACKED => (flow % self.threads as u64) as usize,
            None => {
                let t = least_loaded(&self.load);
                self.assigned.insert(flow, t as u32);
                t
            }
        };
        self.load[t] += 1;
        t
    }
}

/// Index of the smallest value (the first one on ties).
fn least_loaded(load: &[u64]) -> usize {
    let mut best = 0;
    for (i, &l) in load.iter().enumerate() {
        if l < load[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_stay_put_and_load_evens_out() {
        let mut s = Spreader::new(2);
        let mut per = [0u64; 2];
        let mut home = HashMap::new();
        // 64 equal flows, interleaved as in a CBR trace.
        for i in 0..64_000u64 {
            let flow = (i % 64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let t = s.thread(flow);
            assert_eq!(*home.entry(flow).or_insert(t), t, "flow moved");
            per[t] += 1;
        }
        assert_eq!(per, [32_000, 32_000]);
    }

    #[test]
    fn a_heavy_flow_pushes_new_flows_elsewhere() {
        let mut s = Spreader::new(3);
        for _ in 0..100 {
            assert_eq!(s.thread(7), 0);
        }
        assert_eq!(s.thread(8), 1);
        assert_eq!(s.thread(9), 2);
        assert_eq!(s.thread(10), 1);
    }
}
