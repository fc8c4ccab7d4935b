//! The pacing scheduler of `sluice pace`: pure (every call is given `now`),
//! so tests drive it with made-up arrival times.
//!
//! A frame arriving at `now` is given a departure slot: the previous
//! departure (of the whole link, or of its flow with per-flow pacing) plus
//! the gap drawn for it, and never earlier than `now` (a frame that arrives
//! after its slot leaves at once and counts as a late arrival). Frames wait
//! in an absolute-deadline heap until they are released, in departure
//! order, shortly before their time. The backlog is every frame whose
//! departure is still to come, released or not; a frame arriving to a full
//! backlog (`queue_limit`) is dropped and counted, never queued.

use rand::rngs::SmallRng;
use sluice_profile::GapLaw;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// How departure gaps are drawn.
#[derive(Clone, Debug)]
pub enum PaceLaw {
    /// The same gap for every frame, ns.
    Gap(f64),
    /// A bit rate: each frame's gap is its own length (frame bytes without
    /// FCS, as tbf counts them) at this many bits per ns.
    BitRate(f64),
    /// Gaps drawn from a law (a profile's `ipd`).
    Random(GapLaw, SmallRng),
}

impl PaceLaw {
    /// Gaps drawn from `law`, seeded.
    pub fn drawn(law: GapLaw, seed: u64) -> PaceLaw {
        use rand::SeedableRng;
        PaceLaw::Random(law, SmallRng::seed_from_u64(seed))
    }

    /// The gap before a frame of `len` bytes, ns.
    fn gap(&mut self, len: usize) -> f64 {
        match self {
            PaceLaw::Gap(g) => *g,
            PaceLaw::BitRate(bits_per_ns) => len as f64 * 8.0 / *bits_per_ns,
            PaceLaw::Random(law, rng) => law.sample(rng),
        }
    }
}

/// What the scheduler counts, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaceStats {
    /// Frames read from the TAP.
    pub arrived: u64,
    /// Frames dropped because the backlog was full.
    pub dropped: u64,
    /// Frames that arrived after their slot and left at once.
    pub late_arrivals: u64,
    /// Frames sent within a burst allowance (`--burst`).
    pub burst: u64,
    /// Largest backlog seen by an arriving frame.
    pub backlog_max: u64,
    /// Sum of the backlog seen by arriving frames (mean = sum / arrived).
    pub backlog_sum: u64,
}

/// One flow's (or the link's) departure state.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Earliest departure of the next frame, ns (fractional: gaps of a
    /// fraction of a ns add up exactly).
    next: f64,
    /// Frames that may still leave at once, earned while idle.
    credit: u32,
    /// Last arrival, ns: idle flows are forgotten.
    seen: u64,
}

/// A frame waiting in the heap.
struct Held {
    due: u64,
    seq: u64,
    /// The gap to keep after the frame before it (0: it left at its
    /// arrival, or its flow is paced on its own).
    gap: u32,
    frame: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// Flows forgotten once this many are tracked (the idle ones first).
const MAX_FLOWS: usize = 1 << 16;
/// A flow idle this long is forgotten at the next sweep, ns.
const FLOW_IDLE_NS: u64 = 1_000_000_000;

pub struct Departures {
    law: PaceLaw,
    per_flow: bool,
    burst: u32,
    queue_limit: usize,
    link: Slot,
    flows: HashMap<u64, Slot>,
    held: BinaryHeap<Reverse<Held>>,
    /// Departures of released frames still to come, in order.
    released: VecDeque<u64>,
    seq: u64,
    /// Buffers of sent frames, reused.
    spare: Vec<Vec<u8>>,
    pub stats: PaceStats,
}

impl Departures {
    /// `burst` ≥ 1 frames may leave back to back after an idle spell;
    /// `queue_limit` ≥ 1 bounds the backlog.
    pub fn new(law: PaceLaw, per_flow: bool, burst: u32, queue_limit: usize) -> Self {
        Departures {
            law,
            per_flow,
            burst: burst.max(1),
            queue_limit: queue_limit.max(1),
            link: Slot::default(),
            flows: HashMap::new(),
            held: BinaryHeap::new(),
            released: VecDeque::new(),
            seq: 0,
            spare: Vec::new(),
            stats: PaceStats::default(),
        }
    }

    /// Frames whose departure is after `now`.
    pub fn backlog(&mut self, now: u64) -> usize {
        while self.released.front().is_some_and(|&d| d <= now) {
            self.released.pop_front();
        }
        self.held.len() + self.released.len()
    }

    /// A frame arrives at `now` (ns); `flow` is its flow key (used with
    /// per-flow pacing). Returns its departure time, or None when the
    /// backlog is full and the frame was dropped.
    pub fn arrive(&mut self, now: u64, frame: &[u8], flow: u64) -> Option<u64> {
        self.stats.arrived += 1;
        let backlog = self.backlog(now);
        self.stats.backlog_max = self.stats.backlog_max.max(backlog as u64);
        self.stats.backlog_sum += backlog as u64;
        if backlog >= self.queue_limit {
            self.stats.dropped += 1;
            return None;
        }
        if self.per_flow && self.flows.len() >= MAX_FLOWS && !self.flows.contains_key(&flow) {
            self.flows
                .retain(|_, s| now.saturating_sub(s.seen) < FLOW_IDLE_NS);
            if self.flows.len() >= MAX_FLOWS {
                self.flows.clear();
            }
        }
        let gap = self.law.gap(frame.len());
        let slot = if self.per_flow {
            self.flows.entry(flow).or_insert(Slot {
                next: now as f64,
                ..Slot::default()
            })
        } else {
            &mut self.link
        };
        let t = now as f64;
        let mut chained = 0u32;
        let due = if t >= slot.next {
            // Idle: the slot has passed. Credit for frames that could have
            // gone meanwhile, up to the burst allowance.
            if slot.seen > 0 || slot.next > 0.0 {
                self.stats.late_arrivals += u64::from(t > slot.next);
            }
            let missed = if gap > 0.0 {
                ((t - slot.next) / gap) as u64
            } else {
                0
            };
            slot.credit = (u64::from(slot.credit) + missed).min(u64::from(self.burst - 1)) as u32;
            slot.next = t + gap;
            now
        } else if slot.credit > 0 {
            slot.credit -= 1;
            self.stats.burst += 1;
            now
        } else {
            let due = slot.next;
            slot.next += gap;
            if !self.per_flow {
                chained = gap.round().clamp(0.0, f64::from(u32::MAX)) as u32;
            }
            due.round() as u64
        };
        slot.seen = now;
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        self.seq += 1;
        self.held.push(Reverse(Held {
            due,
            seq: self.seq,
            gap: chained,
            frame: buf,
        }));
        Some(due)
    }

    /// The earliest departure waiting in the heap.
    pub fn next_due(&self) -> Option<u64> {
        self.held.peek().map(|Reverse(h)| h.due)
    }

    /// Releases, in departure order, every held frame due at or before
    /// `horizon`: `send(due, gap, frame)` takes each (`gap`: what it must
    /// keep after the frame before it, 0 for none); it returns false to
    /// stop (the frame is kept and released next time).
    ///
    /// A frame queued behind another (global pacing) is chained to it: it
    /// leaves one gap after the one before actually left, not at its own
    /// slot, so a late departure does not squeeze the gaps behind it into
    /// a burst (the TX thread shortens a chained gap a little only after
    /// a real stall, to catch up: `TxCore::keep_spacing`).
    pub fn release(&mut self, horizon: u64, mut send: impl FnMut(u64, u32, &[u8]) -> bool) -> bool {
        while let Some(Reverse(h)) = self.held.peek() {
            if h.due > horizon {
                return true;
            }
            if !send(h.due, h.gap, &h.frame) {
                return false;
            }
            let Reverse(h) = self.held.pop().expect("peeked");
            if self.released.back().is_none_or(|&b| b <= h.due) {
                self.released.push_back(h.due);
            }
            self.spare.push(h.frame);
        }
        true
    }

    /// Frames still held.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn dues(s: &mut Departures, horizon: u64) -> Vec<u64> {
        let mut v = Vec::new();
        s.release(horizon, |d, _, _| {
            v.push(d);
            true
        });
        v
    }

    #[test]
    fn a_backlog_leaves_one_gap_apart_and_never_before_arrival() {
        let mut s = Departures::new(PaceLaw::Gap(20_000.0), false, 1, 100);
        // Five frames arrive together at 1 ms: the first leaves at once.
        for _ in 0..5 {
            s.arrive(1_000_000, &[0; 60], 0);
        }
        assert_eq!(
            dues(&mut s, u64::MAX),
            [1_000_000, 1_020_000, 1_040_000, 1_060_000, 1_080_000]
        );
        // One arriving after its slot (1.1 ms) leaves at its arrival.
        assert_eq!(s.arrive(1_500_000, &[0; 60], 0), Some(1_500_000));
        assert_eq!(s.stats.late_arrivals, 1);
        // One arriving early waits for its slot.
        assert_eq!(s.arrive(1_505_000, &[0; 60], 0), Some(1_520_000));
    }

    #[test]
    fn frames_queued_behind_another_are_chained_by_their_gap() {
        let mut s = Departures::new(PaceLaw::Gap(20_000.0), false, 1, 100);
        for _ in 0..3 {
            s.arrive(0, &[0; 60], 0);
        }
        let mut got = Vec::new();
        s.release(u64::MAX, |d, g, _| {
            got.push((d, g));
            true
        });
        assert_eq!(got, [(0, 0), (20_000, 20_000), (40_000, 20_000)]);
    }

    #[test]
    fn a_bit_rate_spaces_frames_by_their_own_length() {
        // 100 Mbit/s = 0.1 bit/ns: 1500 bytes take 120 µs, 60 bytes 4.8 µs.
        let mut s = Departures::new(PaceLaw::BitRate(0.1), false, 1, 100);
        s.arrive(0, &[0; 1500], 0);
        s.arrive(0, &[0; 60], 0);
        s.arrive(0, &[0; 60], 0);
        assert_eq!(dues(&mut s, u64::MAX), [0, 120_000, 124_800]);
    }

    #[test]
    fn a_full_backlog_drops_and_counts() {
        let mut s = Departures::new(PaceLaw::Gap(1_000.0), false, 1, 3);
        let got: Vec<_> = (0..5).map(|_| s.arrive(0, &[0; 60], 0)).collect();
        assert_eq!(got, [Some(0), Some(1_000), Some(2_000), None, None]);
        assert_eq!(s.stats.dropped, 2);
        assert_eq!(s.stats.backlog_max, 3);
        // Released frames still count until they leave.
        dues(&mut s, u64::MAX);
        assert_eq!(s.backlog(1_500), 1);
        assert_eq!(s.arrive(1_500, &[0; 60], 0), Some(3_000));
    }

    #[test]
    fn per_flow_pacing_keeps_one_gap_per_flow_and_releases_in_time_order() {
        let mut s = Departures::new(PaceLaw::Gap(10_000.0), true, 1, 100);
        for flow in [1, 1, 2, 1, 2] {
            s.arrive(0, &[flow as u8; 60], flow);
        }
        let mut got = Vec::new();
        s.release(u64::MAX, |d, _, f| {
            got.push((d, f[0]));
            true
        });
        assert_eq!(got, [(0, 1), (0, 2), (10_000, 1), (10_000, 2), (20_000, 1)]);
    }

    #[test]
    fn a_burst_allowance_is_earned_while_idle() {
        let mut s = Departures::new(PaceLaw::Gap(10_000.0), false, 3, 100);
        s.arrive(0, &[0; 60], 0);
        // Idle for 100 µs: up to 2 more frames may follow at once.
        let d: Vec<_> = (0..4).map(|_| s.arrive(100_000, &[0; 60], 0)).collect();
        assert_eq!(
            d,
            [Some(100_000), Some(100_000), Some(100_000), Some(110_000)]
        );
        assert_eq!(s.stats.burst, 2);
    }

    #[test]
    fn the_horizon_holds_later_frames_back() {
        let mut s = Departures::new(PaceLaw::Gap(50_000.0), false, 1, 100);
        for _ in 0..4 {
            s.arrive(0, &[0; 60], 0);
        }
        assert_eq!(dues(&mut s, 60_000), [0, 50_000]);
        assert_eq!(s.next_due(), Some(100_000));
        assert_eq!(s.held(), 2);
    }

    #[test]
    fn random_gaps_have_the_law_s_mean() {
        let law = GapLaw::new("poisson", 5_000.0, sluice_profile::Spread::None).unwrap();
        let mut s = Departures::new(
            PaceLaw::Random(law, SmallRng::seed_from_u64(1)),
            false,
            1,
            200_000,
        );
        for _ in 0..100_000 {
            s.arrive(0, &[0; 60], 0);
        }
        let d = dues(&mut s, u64::MAX);
        let mean = *d.last().unwrap() as f64 / (d.len() - 1) as f64;
        assert!((mean - 5_000.0).abs() < 100.0, "{mean}");
    }
}
