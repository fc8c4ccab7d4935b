//! Per-pass statistics of a source read several times (`--loop`): one
//! `--stats-json` line per pass, once every TX thread is done with it.
//!
//! Three parties meet on a [`PassBoard`]. The IO thread ends each batch at
//! a pass end (`Outbox::end_pass`), so a batch (or a preloaded repeat) is
//! one pass's, and records how many frames it had handed to each lane when
//! a pass ended. Each TX thread tallies a unit's frames (sent, dropped,
//! refused) and, when done with the unit, merges the tally into its pass's
//! entry and then counts the frames as handled. The aggregator reports a
//! pass once every lane has handled all its frames of that pass (the
//! tally is merged before the count moves, so it is whole); at the end of
//! the run what remains is reported as not complete (a limit, the
//! duration or a stop cut it).

use crate::stats::PassStats;
use sluice_core::Nanos;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Shortest pass span rates are computed over (as the summary's).
const MIN_RATE_SPAN_NS: u64 = 1_000_000;

/// What some frames of one pass did, on one TX thread or merged.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PassTally {
    pub packets: u64,
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
    pub refused: u64,
    /// First and last send, ns after the run's start.
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    /// ε of the packets sent (not at top speed).
    pub eps_count: u64,
    pub eps_sum: i128,
    pub eps_max: i64,
}

impl PassTally {
    #[inline(always)]
    pub fn sent(&mut self, at: Nanos, bytes: usize, eps: Option<(i64, bool)>) {
        self.packets += 1;
        self.bytes += bytes as u64;
        self.first_ns.get_or_insert(at.0);
        self.last_ns = at.0;
        if let Some((e, late)) = eps {
            self.eps_count += 1;
            self.eps_sum += i128::from(e);
            self.eps_max = if self.eps_count == 1 {
                e
            } else {
                self.eps_max.max(e)
            };
            self.late += u64::from(late);
        }
    }

    /// Frames sent, dropped or refused.
    fn handled(&self) -> u64 {
        self.packets + self.dropped + self.refused
    }

    fn merge(&mut self, o: &PassTally) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.late += o.late;
        self.dropped += o.dropped;
        self.refused += o.refused;
        self.first_ns = match (self.first_ns, o.first_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_ns = self.last_ns.max(o.last_ns);
        if o.eps_count > 0 {
            self.eps_max = if self.eps_count == 0 {
                o.eps_max
            } else {
                self.eps_max.max(o.eps_max)
            };
        }
        self.eps_count += o.eps_count;
        self.eps_sum += o.eps_sum;
    }

    fn stats(&self, pass: u64, complete: bool) -> PassStats {
        let first = self.first_ns.unwrap_or(0);
        let span = self.last_ns.saturating_sub(first);
        let rated = span >= MIN_RATE_SPAN_NS && self.packets > 1;
        let s = span as f64 / 1e9;
        PassStats {
            pass,
            complete,
            packets: self.packets,
            bytes: self.bytes,
            late: self.late,
            dropped: self.dropped,
            refused: self.refused,
            start_s: first as f64 / 1e9,
            end_s: self.last_ns.max(first) as f64 / 1e9,
            pps: rated.then(|| pps(self, s)),
            // The mean frame at that rate.
            bps: rated.then(|| pps(self, s) * 8.0 * self.bytes as f64 / self.packets as f64),
            eps_mean_ns: (self.eps_count > 0).then(|| self.eps_sum as f64 / self.eps_count as f64),
            eps_max_ns: (self.eps_count > 0).then_some(self.eps_max),
        }
    }
}

/// Packets after the first over the span: the rate they left at.
fn pps(t: &PassTally, span_s: f64) -> f64 {
    (t.packets - 1) as f64 / span_s
}

/// Where the IO thread, the TX threads and the aggregator meet (see the
/// module docs).
pub(crate) struct PassBoard {
    /// Per pass that ended: how many frames each lane had been handed in
    /// all by its end.
    ended: Mutex<VecDeque<(u64, Vec<u64>)>>,
    /// Tallies by pass, merged over TX threads.
    tallies: Mutex<BTreeMap<u64, PassTally>>,
    /// Frames each lane has handled (sent, dropped or refused).
    handled: Vec<AtomicU64>,
}

impl PassBoard {
    pub fn new(lanes: usize) -> Self {
        PassBoard {
            ended: Mutex::default(),
            tallies: Mutex::default(),
            handled: (0..lanes).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// IO thread: pass `pass` ended with `handed[lane]` frames handed to
    /// each lane in all.
    pub fn ended(&self, pass: u64, handed: &[u64]) {
        if let Ok(mut e) = self.ended.lock() {
            e.push_back((pass, handed.to_vec()));
        }
    }

    /// TX thread `lane`: a unit of pass `pass` is done, its frames handled
    /// (sent, dropped or refused) as `tally` says.
    pub fn done(&self, lane: usize, pass: u64, tally: &PassTally) {
        let frames = tally.handled();
        if frames > 0 {
            if let Ok(mut t) = self.tallies.lock() {
                t.entry(pass).or_default().merge(tally);
            }
        }
        // After the merge: a pass counted complete has its whole tally.
        self.handled[lane].fetch_add(frames, Ordering::Release);
    }

    /// Aggregator: the passes every lane is done with, in order, taken off
    /// the board; with `last` (every TX thread has ended) also the rest,
    /// as not complete.
    pub fn take(&self, last: bool) -> Vec<PassStats> {
        let handled: Vec<u64> = self
            .handled
            .iter()
            .map(|h| h.load(Ordering::Acquire))
            .collect();
        let mut out = Vec::new();
        let (Ok(mut ended), Ok(mut tallies)) = (self.ended.lock(), self.tallies.lock()) else {
            return out;
        };
        while let Some((pass, need)) = ended.front() {
            if need.iter().zip(&handled).any(|(n, h)| h < n) {
                break;
            }
            let t = tallies.remove(pass).unwrap_or_default();
            out.push(t.stats(*pass, true));
            ended.pop_front();
        }
        if last {
            ended.clear();
            out.extend(
                std::mem::take(&mut *tallies)
                    .into_iter()
                    .map(|(pass, t)| t.stats(pass, false)),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(n: u64, from: u64) -> PassTally {
        let mut t = PassTally::default();
        for i in 0..n {
            t.sent(Nanos(from + i * 1_000_000), 100, Some((i as i64, i > 2)));
        }
        t
    }

    #[test]
    fn a_pass_is_reported_once_every_lane_handled_its_frames() {
        let b = PassBoard::new(2);
        b.ended(0, &[3, 2]);
        b.done(0, 0, &sent(3, 0));
        assert!(b.take(false).is_empty(), "lane 1 not done");
        b.done(1, 0, &sent(2, 500_000));
        b.done(1, 1, &sent(1, 9_000_000));
        let p = b.take(false);
        assert_eq!(p.len(), 1);
        let p = &p[0];
        assert_eq!((p.pass, p.complete, p.packets, p.bytes), (0, true, 5, 500));
        assert_eq!((p.start_s, p.end_s), (0.0, 0.002));
        assert_eq!(p.pps, Some(2000.0));
        assert_eq!((p.eps_max_ns, p.late), (Some(2), 0));
        assert_eq!(p.eps_mean_ns, Some(0.8));
        // Pass 1 never ended: at the end it is reported, not complete.
        let rest = b.take(true);
        assert_eq!(rest.len(), 1);
        assert_eq!(
            (rest[0].pass, rest[0].complete, rest[0].packets),
            (1, false, 1)
        );
        assert_eq!(rest[0].pps, None, "one packet has no rate");
    }

    #[test]
    fn an_idle_lane_does_not_hold_a_pass_back() {
        let b = PassBoard::new(2);
        b.ended(0, &[4, 0]);
        b.ended(1, &[8, 0]);
        b.done(0, 0, &sent(4, 0));
        b.done(0, 1, &sent(4, 10_000_000));
        let p = b.take(false);
        assert_eq!(
            p.iter().map(|p| (p.pass, p.packets)).collect::<Vec<_>>(),
            [(0, 4), (1, 4)]
        );
        assert_eq!(p[1].late, 1);
        assert!(b.take(true).is_empty());
    }
}
