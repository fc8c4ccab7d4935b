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
//!   consecutive arrivals: J += (|D| − J) / 16, in integers of 1/16 ns
//!   (RFC 3550 A.8).
//!
//! Stamps from a clock other than the receiver's (another host) are moved
//! onto the receiver's clock by a [`ClockCorrection`] for their streams
//! before anything is counted: latency is then one-way, to within the
//! correction's own error.
//!
//! Memory is bounded: at most [`MAX_STREAMS`] streams are told apart
//! (frames of further streams are counted together), each with a fixed
//! window of sequence bits, two histograms (the run's and the interval's)
//! and a tally of the latencies not yet in them.

use serde::Serialize;
use sluice_core::{Dist, ErrorHistogram, ErrorTally};
use sluice_wire::rxstamp::RxStamp;
use std::collections::BTreeMap;

/// Streams told apart; frames of further streams count in `other_streams`.
pub const MAX_STREAMS: usize = 512;
/// Sequence numbers below the highest kept to recognise duplicates.
pub const DUP_WINDOW: u64 = 1 << 16;

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
    /// `interval` and `tally`).
    latency: ErrorHistogram,
    /// Latency since the last report.
    interval: ErrorHistogram,
    /// Latencies not yet in `interval`: counted per frame, added to it
    /// when it is read.
    tally: ErrorTally,
    /// (receive, departure) of the last arrival, for jitter.
    last: Option<(u64, u64)>,
    /// Jitter in 1/16 ns.
    jitter16: u64,
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
            tally: ErrorTally::new(),
            last: None,
            jitter16: 0,
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
        // The distance from the highest's low 32 bits, either way.
        let d = (seq as u32).wrapping_sub(self.highest as u32) as i32;
        if let Some(near) = self.highest.checked_add_signed(i64::from(d)) {
            return near;
        }
        // Across 0 or 2^64: the nearest on this side (highest is then
        // within 2^31 of the end it would cross).
        if d < 0 {
            self.highest + u64::from(d as u32)
        } else {
            self.highest - ((1 << 32) - d as u64)
        }
    }

    // Inlined into its callers, as `StreamCounter::count` is.
    #[inline(always)]
    fn frame(&mut self, s: &RxStamp, rx_ns: u64) {
        let s = &RxStamp {
            seq: if s.short { self.extend(s.seq) } else { s.seq },
            tx_ns: if self.clock_ns >= 0 {
                s.tx_ns.saturating_sub(self.clock_ns as u64)
            } else {
                s.tx_ns.saturating_add(self.clock_ns.unsigned_abs())
            },
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
        // In i128: a departure stamp is the sender's word, any u64.
        let (rx, tx) = (i128::from(rx_ns), i128::from(s.tx_ns));
        self.tally
            .record((rx - tx).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64);
        if let Some((r, t)) = self.last {
            let d = ((rx - i128::from(r)) - (tx - i128::from(t))).unsigned_abs();
            let j = self.jitter16;
            // (J + 8) / 16 without overflow; at most J, so no underflow.
            let decay = (j >> 4) + (((j & 15) + 8) >> 4);
            self.jitter16 = (j - decay).saturating_add(d.min(u128::from(u64::MAX)) as u64);
        }
        self.last = Some((rx_ns, s.tx_ns));
    }

    /// Adds the tallied latencies to the interval's histogram.
    fn settle(&mut self) {
        self.interval.absorb(&mut self.tally);
    }

    fn lost(&self) -> u64 {
        // highest − lowest + 1 − received, without passing 2^64 (a stream
        // has received at least its first frame).
        (self.highest - self.lowest).saturating_sub(self.received.saturating_sub(1))
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
    streams: Vec<Stream>,
    /// Where each stream id's state is in `streams`.
    ids: BTreeMap<u32, usize>,
    /// The last stamp's stream id and place: frames come in runs of one
    /// stream.
    last: Option<(u32, usize)>,
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
        // Two calls, not one after a match: the stamp read stays in
        // registers (see `count`).
        if let Some(s) = sluice_wire::rxstamp::read(frame) {
            self.count(&s, rx_ns);
            return true;
        }
        match self.reassembled(frame, rx_ns) {
            Some(s) => {
                self.stamped(&s, rx_ns);
                true
            }
            None => false,
        }
    }

    /// The stamp of the datagram `frame` completes, if it is a fragment
    /// that does; unstamped frames and datagrams are counted.
    #[inline(never)]
    fn reassembled(&mut self, frame: &[u8], rx_ns: u64) -> Option<RxStamp> {
        let mut whole = None;
        let piece = self.frags.push(frame, rx_ns, |w| {
            whole = Some(sluice_wire::rxstamp::read(w));
        });
        match whole {
            Some(Some(s)) => Some(s),
            Some(None) => {
                self.unstamped += 1;
                None
            }
            None => {
                self.unstamped += u64::from(!piece);
                None
            }
        }
    }

    /// Ends the count: datagrams still missing pieces timed out.
    pub fn finish(&mut self) {
        self.frags.finish();
    }

    /// Counts one stamp received at `rx_ns`.
    #[inline(never)]
    pub fn stamped(&mut self, s: &RxStamp, rx_ns: u64) {
        self.count(s, rx_ns)
    }

    /// `stamped`, inlined into the receive loop: a stamp passed through
    /// memory, built field by field and read back whole, stalls on store
    /// forwarding.
    #[inline(always)]
    fn count(&mut self, s: &RxStamp, rx_ns: u64) {
        self.stamped += 1;
        let at = match self.last {
            Some((id, at)) if id == s.stream => at,
            _ => match self.find(s, rx_ns) {
                Some(at) => at,
                None => {
                    self.other_streams += 1;
                    return;
                }
            },
        };
        self.streams[at].frame(s, rx_ns);
    }

    /// Where the state of `s`'s stream is, made if there is room (the
    /// stream's first frame arrives at `rx_ns`); it becomes the last.
    #[inline(never)]
    fn find(&mut self, s: &RxStamp, rx_ns: u64) -> Option<usize> {
        let at = match self.ids.get(&s.stream) {
            Some(&at) => at,
            None if self.streams.len() >= MAX_STREAMS => return None,
            None => {
                let clock = self
                    .clocks
                    .iter()
                    .find(|c| (c.first..=c.last).contains(&s.stream))
                    .map_or(0, |c| c.ahead_ns);
                self.streams.push(Stream::new(s.seq, rx_ns, clock));
                self.ids.insert(s.stream, self.streams.len() - 1);
                self.streams.len() - 1
            }
        };
        self.last = Some((s.stream, at));
        Some(at)
    }

    /// Stamped frames received (duplicates included).
    pub fn frames(&self) -> u64 {
        self.stamped
    }

    /// Every stream, by id; the interval latency starts again.
    pub fn report(&mut self) -> Vec<StreamReport> {
        self.ids
            .iter()
            .map(|(&id, &at)| {
                let s = &mut self.streams[at];
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
                    jitter_ns: s.jitter16 as f64 / 16.0,
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
    fn a_short_number_is_taken_as_the_nearest_to_the_highest() {
        // (highest so far, the short number, what it extends to)
        let cases = [
            (5, 3, 3),                                             // just behind
            (5, 0xffff_fff0, 0xffff_fff0),                         // behind 0: not below it
            ((7 << 32) + 5, 0xffff_fff0, (6 << 32) + 0xffff_fff0), // behind a wrap
            ((7 << 32) + 0xffff_fff0, 9, (8 << 32) + 9),           // past a wrap
            (1 << 31, 0, 0),                                       // 2^31 either way: the lower
            (u64::MAX - 2, 4, u64::MAX - 0xffff_ffff + 4),         // past 2^64: not above it
        ];
        for (highest, short, want) in cases {
            let mut c = StreamCounter::new();
            let stamp = |seq, short| RxStamp {
                stream: 1,
                seq,
                tx_ns: 1,
                short,
            };
            c.stamped(&stamp(highest, false), 2);
            c.stamped(&stamp(short, true), 2);
            let r = &c.report()[0];
            assert_eq!(
                (r.first_seq.min(r.last_seq), r.last_seq.max(r.first_seq)),
                (highest.min(want), highest.max(want)),
                "highest {highest:#x}, short {short:#x}"
            );
        }
    }

    #[test]
    fn jitter_is_rfc_3550s_to_within_a_nanosecond() {
        let mut c = StreamCounter::new();
        let mut j = 0.0f64;
        let mut last: Option<(i64, i64)> = None;
        for k in 0..2_000i64 {
            let tx = 1_000_000 + k * 10_000;
            let rx = tx + 50_000 + (k * 7_919 % 13_001) - (k % 3) * 2_000;
            c.stamped(
                &RxStamp {
                    stream: 1,
                    seq: k as u64,
                    tx_ns: tx as u64,
                    short: false,
                },
                rx as u64,
            );
            if let Some((r, t)) = last {
                j += (((rx - r) - (tx - t)).abs() as f64 - j) / 16.0;
            }
            last = Some((rx, tx));
            let got = c.report()[0].jitter_ns;
            assert!((got - j).abs() < 1.0, "frame {k}: {got} against {j}");
        }
        assert!(j > 1_000.0, "{j}");
    }

    #[test]
    fn stamps_from_the_far_ends_of_time_neither_panic_nor_stick() {
        let mut c = StreamCounter::new();
        let stamp = |seq, tx_ns| RxStamp {
            stream: 2,
            seq,
            tx_ns,
            short: false,
        };
        // Departures at 0 and u64::MAX, alternately: every |D| ~ 2^64.
        for seq in 0..40u64 {
            let tx = if seq % 2 == 0 { u64::MAX } else { 0 };
            c.stamped(&stamp(seq, tx), 1_000 + seq);
        }
        let r = &c.report()[0];
        assert!(r.jitter_ns > 1e17, "{}", r.jitter_ns);
        assert_eq!(r.early, 20);
        // Ordinary frames after: the jitter decays back down.
        for seq in 40..2_000u64 {
            c.stamped(&stamp(seq, 1_000 * seq), 1_000 * seq + 500 + seq % 7);
        }
        let r = &c.report()[0];
        assert!(r.jitter_ns < 10.0, "{}", r.jitter_ns);
        // Numbers from 0 to u64::MAX: nothing overflows.
        c.stamped(&stamp(u64::MAX, 1), 2);
        let r = &c.report()[0];
        assert_eq!(r.lost, u64::MAX - 2_000);
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
