//! The receive side: per-stream counts of frames carrying a receive stamp
//! (`sluice_wire::rxstamp`): received, lost, duplicated and reordered
//! (RFC 4737), one-way latency (receive time − departure stamp) in a
//! histogram, and interarrival jitter (RFC 3550 §6.4.1).
//!
//! Definitions, per stream, on sequence numbers:
//! - a frame whose number was seen before (within the last
//!   [`DUP_WINDOW`] numbers below the highest) is a **duplicate** and
//!   counts nowhere else;
//! - a frame numbered below the next expected one (the highest so far
//!   plus one) is **reordered** (RFC 4737 §3.3, Type-P-Reordered);
//! - **lost** = numbers from the lowest to the highest seen, less the
//!   distinct numbers received: a frame still in flight at the end counts
//!   as lost only if a later one arrived;
//! - **jitter** J is smoothed |D| with D = (R_j − R_i) − (S_j − S_i) for
//!   consecutive arrivals: J += (|D| − J) / 16.
//!
//! Stamps from a clock other than the receiver's (another host) are moved
//! onto the receiver's clock by a [`ClockCorrection`] for their streams
//! before anything is counted: latency is then one-way, to within the
//! correction's own error.
//!
//! Memory is bounded: at most [`MAX_STREAMS`] streams are told apart
//! (frames of further streams are counted together), each with a fixed
//! window of sequence bits, two histograms (the run's and the interval's)
//! and at most 256 latencies waiting to be recorded.

use serde::Serialize;
use sluice_core::{Dist, ErrorHistogram};
use sluice_wire::rxstamp::RxStamp;
use std::collections::BTreeMap;

/// Streams told apart; frames of further streams count in `other_streams`.
pub const MAX_STREAMS: usize = 512;
/// Sequence numbers below the highest kept to recognise duplicates.
pub const DUP_WINDOW: u64 = 1 << 16;
/// Latencies a stream holds before they go into its histogram.
const PENDING: usize = 256;

/// Stamps of streams `first..=last` come from a clock `ahead_ns` ahead
/// of the receiver's (negative: behind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockCorrection {
    pub first: u32,
    pub last: u32,
    pub ahead_ns: i64,
}

impl std::fmt::Display for ClockCorrection {
    /// `FIRST-LAST=NSns`, as its `FromStr` reads it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}={}ns", self.first, self.last, self.ahead_ns)
    }
}

impl std::str::FromStr for ClockCorrection {
    type Err = String;

    /// `FIRST[-LAST]=NS`, NS in ns with an optional unit (ns, us, ms, s)
    /// and sign.
    fn from_str(s: &str) -> Result<Self, String> {
        let (streams, ahead) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}': FIRST[-LAST]=OFFSET expected, e.g. 1024-1279=-2.5ms"))?;
        let id = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{s}': '{t}' is not a stream id (0 to 4294967295)"))
        };
        let (first, last) = match streams.split_once('-') {
            Some((a, b)) => (id(a)?, id(b)?),
            None => (id(streams)?, id(streams)?),
        };
        if last < first {
            return Err(format!("'{s}': the last stream is below the first"));
        }
        let (neg, mag) = match ahead.trim().strip_prefix('-') {
            Some(m) => (true, m),
            None => (
                false,
                ahead.trim().strip_prefix('+').unwrap_or(ahead.trim()),
            ),
        };
        let n = sluice_core::parse_duration(mag)
            .map_err(|e| format!("'{s}': offset: {e}"))?
            .0;
        let n = i64::try_from(n).map_err(|_| format!("'{s}': offset too large"))?;
        Ok(ClockCorrection {
            first,
            last,
            ahead_ns: if neg { -n } else { n },
        })
    }
}

/// One stream's state.
#[derive(Clone, Debug)]
struct Stream {
    /// Its senders' clock ahead of the receiver's, ns: taken off every
    /// departure stamp.
    clock_ns: i64,
    received: u64,
    duplicates: u64,
    reordered: u64,
    lowest: u64,
    highest: u64,
    /// Bit `seq % DUP_WINDOW`: number seq was received (for numbers
    /// within DUP_WINDOW below the highest).
    seen: Vec<u64>,
    /// Latency up to the last report (the whole run's is this plus
    /// `interval` and `pending`).
    latency: ErrorHistogram,
    /// Latency since the last report.
    interval: ErrorHistogram,
    /// Latencies not yet in `interval`: recorded [`PENDING`] at a time,
    /// the histogram's lines stay in cache for the whole batch (the
    /// receive ring streams through the cache between two frames).
    pending: Vec<i64>,
    /// (receive, departure) of the last arrival, for jitter.
    last: Option<(u64, u64)>,
    jitter_ns: f64,
    first_rx_ns: u64,
    last_rx_ns: u64,
}

impl Stream {
    fn new(seq: u64, rx_ns: u64, clock_ns: i64) -> Self {
        Stream {
            clock_ns,
            received: 0,
            duplicates: 0,
            reordered: 0,
            lowest: seq,
            highest: seq,
            seen: vec![0; (DUP_WINDOW / 64) as usize],
            latency: ErrorHistogram::new(),
            interval: ErrorHistogram::new(),
            pending: Vec::with_capacity(PENDING),
            last: None,
            jitter_ns: 0.0,
            first_rx_ns: rx_ns,
            last_rx_ns: rx_ns,
        }
    }

    /// The bit of number `seq` (numbers map onto the window modulo its
    /// size: moving the highest up clears only the numbers passed over).
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let k = seq % DUP_WINDOW;
        (&mut self.seen[(k / 64) as usize], 1 << (k % 64))
    }

    /// The highest number moves from `self.highest` up to `to`: the
    /// numbers it passes over leave the window's far end.
    fn advance(&mut self, to: u64) {
        if to - self.highest >= DUP_WINDOW {
            self.seen.iter_mut().for_each(|w| *w = 0);
            return;
        }
        for seq in self.highest + 1..=to {
            let (w, m) = self.bit(seq);
            *w &= !m;
        }
    }

    /// A short stamp's 32-bit number as the 64-bit one nearest the highest
    /// so far (RTP's extension of sequence numbers).
    fn extend(&self, seq: u64) -> u64 {
        if self.received == 0 {
            return seq;
        }
        let base = self.highest & !0xffff_ffff;
        [base.wrapping_sub(1 << 32), base, base + (1 << 32)]
            .into_iter()
            .map(|b| b.wrapping_add(seq))
            .min_by_key(|&c| c.abs_diff(self.highest))
            .unwrap_or(seq)
    }

    fn frame(&mut self, s: &RxStamp, rx_ns: u64) {
        let s = &RxStamp {
            seq: if s.short { self.extend(s.seq) } else { s.seq },
            tx_ns: (i128::from(s.tx_ns) - i128::from(self.clock_ns)).clamp(0, u64::MAX as i128)
                as u64,
            ..*s
        };
        self.last_rx_ns = self.last_rx_ns.max(rx_ns);
        self.first_rx_ns = self.first_rx_ns.min(rx_ns);
        if self.received == 0 {
            self.highest = s.seq;
            self.lowest = s.seq;
        } else if s.seq > self.highest {
            self.advance(s.seq);
            self.highest = s.seq;
        } else {
            if self.highest - s.seq < DUP_WINDOW {
                let (w, m) = self.bit(s.seq);
                if *w & m != 0 {
                    self.duplicates += 1;
                    return;
                }
            }
            self.reordered += 1;
            self.lowest = self.lowest.min(s.seq);
        }
        if self.highest - s.seq < DUP_WINDOW {
            let (w, m) = self.bit(s.seq);
            *w |= m;
        }
        self.received += 1;
        self.pending.push(rx_ns as i64 - s.tx_ns as i64);
        if self.pending.len() == PENDING {
            self.settle();
        }
        if let Some((r, t)) = self.last {
            let d = (rx_ns as i64 - r as i64) - (s.tx_ns as i64 - t as i64);
            self.jitter_ns += (d.unsigned_abs() as f64 - self.jitter_ns) / 16.0;
        }
        self.last = Some((rx_ns, s.tx_ns));
    }

    /// Records the pending latencies.
    fn settle(&mut self) {
        for &v in &self.pending {
            self.interval.record(v);
        }
        self.pending.clear();
    }

    fn lost(&self) -> u64 {
        (self.highest - self.lowest + 1).saturating_sub(self.received)
    }
}

/// What one stream did, as reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct StreamReport {
    pub stream: u32,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub reordered: u64,
    /// Lowest and highest sequence numbers received.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Receive time − departure stamp; `early` counts frames that arrived
    /// before they left by the two clocks (an offset between hosts), whose
    /// latency is recorded as 0.
    pub latency: Dist,
    /// Latency of the frames received since the report before.
    pub interval_latency: Dist,
    pub early: u64,
    /// RFC 3550 interarrival jitter, ns.
    pub jitter_ns: f64,
    /// The correction its departure stamps took: their clock's offset
    /// ahead of the receiver's, ns (0: none given).
    pub clock_correction_ns: i64,
    /// First and last arrival, ns since the epoch.
    pub first_rx_ns: u64,
    pub last_rx_ns: u64,
}

/// Counts stamped frames by stream.
#[derive(Debug, Default)]
pub struct StreamCounter {
    streams: BTreeMap<u32, Stream>,
    /// Frames without a stamp.
    pub unstamped: u64,
    /// Stamped frames of streams past [`MAX_STREAMS`].
    pub other_streams: u64,
    /// Stamped frames, duplicates included.
    stamped: u64,
    clocks: Vec<ClockCorrection>,
    /// IP fragments, put back together before their stamp is read.
    pub frags: crate::reasm::Reassembler,
}

impl StreamCounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A counter that moves the stamps of the streams `clocks` name onto
    /// the receiver's clock (the first that names a stream applies).
    pub fn with_clocks(clocks: Vec<ClockCorrection>) -> Self {
        StreamCounter {
            clocks,
            ..Self::default()
        }
    }

    /// Counts `frame` (Ethernet), received at `rx_ns` (ns since the
    /// epoch); true when it carried a stamp.
    /// An IP fragment counts when the datagram it completes does (at the
    /// last piece's arrival), and not before.
    pub fn frame(&mut self, frame: &[u8], rx_ns: u64) -> bool {
        if let Some(s) = sluice_wire::rxstamp::read(frame) {
            self.stamped(&s, rx_ns);
            return true;
        }
        let mut whole = None;
        let piece = self.frags.push(frame, rx_ns, |w| {
            whole = Some(sluice_wire::rxstamp::read(w));
        });
        match whole {
            Some(Some(s)) => {
                self.stamped(&s, rx_ns);
                true
            }
            Some(None) => {
                self.unstamped += 1;
                false
            }
            None => {
                self.unstamped += u64::from(!piece);
                false
            }
        }
    }

    /// Ends the count: datagrams still missing pieces timed out.
    pub fn finish(&mut self) {
        self.frags.finish();
    }

    /// Counts one stamp received at `rx_ns`.
    pub fn stamped(&mut self, s: &RxStamp, rx_ns: u64) {
        self.stamped += 1;
        let full = self.streams.len() >= MAX_STREAMS;
        match self.streams.get_mut(&s.stream) {
            Some(st) => st.frame(s, rx_ns),
            None if full => self.other_streams += 1,
            None => {
                let clock = self
                    .clocks
                    .iter()
                    .find(|c| (c.first..=c.last).contains(&s.stream))
                    .map_or(0, |c| c.ahead_ns);
                self.streams
                    .entry(s.stream)
                    .or_insert_with(|| Stream::new(s.seq, rx_ns, clock))
                    .frame(s, rx_ns)
            }
        }
    }

    /// Stamped frames received (duplicates included).
    pub fn frames(&self) -> u64 {
        self.stamped
    }

    /// Every stream, by id; the interval latency starts again.
    pub fn report(&mut self) -> Vec<StreamReport> {
        self.streams
            .iter_mut()
            .map(|(&id, s)| {
                s.settle();
                let interval_latency = s.interval.percentiles();
                s.latency.merge(&s.interval);
                s.interval.reset();
                StreamReport {
                    stream: id,
                    received: s.received,
                    lost: s.lost(),
                    duplicates: s.duplicates,
                    reordered: s.reordered,
                    first_seq: s.lowest,
                    last_seq: s.highest,
                    latency: s.latency.percentiles(),
                    interval_latency,
                    early: s.latency.early(),
                    jitter_ns: s.jitter_ns,
                    clock_correction_ns: s.clock_ns,
                    first_rx_ns: s.first_rx_ns,
                    last_rx_ns: s.last_rx_ns,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(c: &mut StreamCounter, stream: u32, seqs: &[u64]) {
        for (i, &seq) in seqs.iter().enumerate() {
            let tx = 1_000_000 + seq * 1000;
            c.stamped(
                &RxStamp {
                    stream,
                    seq,
                    tx_ns: tx,
                    short: false,
                },
                tx + 500 + i as u64 * 10,
            );
        }
    }

    #[test]
    fn loss_duplicates_and_reordering_per_stream() {
        let mut c = StreamCounter::new();
        // Stream 1: 0..10 with 4 lost, 7 duplicated, 3 and 2 swapped.
        feed(&mut c, 1, &[0, 1, 3, 2, 5, 6, 7, 7, 8, 9]);
        // Stream 2: in order, nothing lost.
        feed(&mut c, 2, &[0, 1, 2, 3]);
        let r = c.report();
        assert_eq!(r.len(), 2);
        let a = &r[0];
        assert_eq!(
            (a.stream, a.received, a.lost, a.duplicates, a.reordered),
            (1, 9, 1, 1, 1)
        );
        assert_eq!((a.first_seq, a.last_seq), (0, 9));
        assert_eq!(a.latency.count, 9);
        assert_eq!(a.early, 0);
        let b = &r[1];
        assert_eq!(
            (b.received, b.lost, b.duplicates, b.reordered),
            (4, 0, 0, 0)
        );
        // Every arrival 10 ns later than the one before relative to its
        // departure: |D| = 10 each time, J climbs towards 10.
        assert!(b.jitter_ns > 0.0 && b.jitter_ns < 10.0, "{}", b.jitter_ns);
        assert_eq!(c.frames(), 14);
    }

    #[test]
    fn the_duplicate_window_moves_with_the_highest_number() {
        let mut c = StreamCounter::new();
        feed(&mut c, 0, &[0, 1]);
        // Far ahead: the window moves by more than its size.
        feed(
            &mut c,
            0,
            &[DUP_WINDOW * 3, DUP_WINDOW * 3 - 70, DUP_WINDOW * 3 - 70],
        );
        feed(&mut c, 0, &[DUP_WINDOW * 3 + 65, DUP_WINDOW * 3 - 70]);
        let r = &c.report()[0];
        assert_eq!(r.duplicates, 2, "seen again after shifts of 64+ bits");
        assert_eq!(r.reordered, 1);
        assert_eq!(r.received, 5);
        assert_eq!(r.lost, DUP_WINDOW * 3 + 66 - 5);
    }

    #[test]
    fn short_stamps_extend_their_numbers_past_32_bits() {
        let mut c = StreamCounter::new();
        for seq in (1u64 << 32) - 3..(1 << 32) + 3 {
            let short = RxStamp {
                stream: 4,
                seq: seq & 0xffff_ffff,
                tx_ns: 1,
                short: true,
            };
            c.stamped(&short, 2);
        }
        // 2^32 − 3 starts the stream as 4294967293; the rest follow it.
        let r = &c.report()[0];
        assert_eq!((r.received, r.lost, r.reordered), (6, 0, 0));
        assert_eq!(r.last_seq, (1 << 32) + 2);
    }

    #[test]
    fn a_clock_correction_moves_its_streams_stamps_onto_the_receivers_clock() {
        // Stream 7's sender reads 3 ms ahead: uncorrected, its frames
        // arrive before they left. Stream 8's reads 2 ms behind.
        let c = |s: &str| s.parse::<ClockCorrection>().unwrap();
        let mut k = StreamCounter::with_clocks(vec![c("7=3ms"), c("8-9=-2ms")]);
        let frame = |k: &mut StreamCounter, stream, seq: u64, tx: u64, rx| {
            let s = RxStamp {
                stream,
                seq,
                tx_ns: tx,
                short: false,
            };
            k.stamped(&s, rx)
        };
        for seq in 0..4 {
            let t = 10_000_000 + seq * 1_000_000;
            // One-way 40 µs on the receiver's clock.
            frame(&mut k, 7, seq, t + 3_000_000, t + 40_000);
            frame(&mut k, 8, seq, t - 2_000_000, t + 40_000);
            frame(&mut k, 10, seq, t, t + 40_000);
        }
        for r in k.report() {
            let p = &r.latency.percentiles;
            assert_eq!((r.early, p.max_ns / 1000), (0, 40), "{r:?}");
            let want = [(7, 3_000_000), (8, -2_000_000), (10, 0)];
            assert!(want.contains(&(r.stream, r.clock_correction_ns)), "{r:?}");
        }
        // Its text names what is wrong.
        for (bad, says) in [
            ("7", "FIRST[-LAST]=OFFSET"),
            ("x=1ms", "'x' is not a stream id"),
            ("9-8=1ms", "below the first"),
            ("1=soon", "offset"),
        ] {
            let e = bad.parse::<ClockCorrection>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert_eq!(c("1-2=+5us").ahead_ns, 5_000);
    }

    #[test]
    fn streams_past_the_cap_are_counted_together() {
        let mut c = StreamCounter::new();
        for s in 0..MAX_STREAMS as u32 + 3 {
            feed(&mut c, s, &[0]);
        }
        assert_eq!(c.report().len(), MAX_STREAMS);
        assert_eq!(c.other_streams, 3);
        assert!(!c.frame(&[0u8; 60], 5));
        assert_eq!(c.unstamped, 1);
    }
}
