//! Due offsets for every timing mode.
//!
//! A due offset is the time from the start of the run at which a packet
//! should leave. Computing it from an index or a cumulative byte count (not by
//! adding per-packet gaps) keeps fixed-rate modes free of accumulated rounding
//! drift: packet 1 000 000 at 100 kpps is due at exactly 10 s.

use crate::gaps::GapWatch;
use sluice_core::Nanos;

/// How packet timestamps map to send times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimingMode {
    /// The recorded gaps, divided by `multiplier` (1.0 = as recorded).
    Recorded { multiplier: f64 },
    /// A fixed packet rate, ignoring timestamps.
    Pps(f64),
    /// A fixed bit rate over frame bytes (Ethernet header to end of payload,
    /// without preamble, FCS or inter-frame gap — the bytes we hand the sink).
    Mbps(f64),
    /// As fast as the sink accepts packets.
    TopSpeed,
}

/// Pure mapping from (trace timestamp, frame length) to due offsets.
///
/// Feed packets in trace order with [`Schedule::due`]; call
/// [`Schedule::next_loop`] at the end of each pass over the trace.
#[derive(Clone, Debug)]
pub struct Schedule {
    mode: TimingMode,
    /// Timestamp of the first packet of the trace (ns).
    first_ts: Option<u64>,
    /// Largest recorded offset seen in this pass (from its first packet,
    /// over every trace of the pass).
    pass_span: u64,
    /// Where the current trace of a pass starts, in the pass's recorded
    /// time: each trace's timing restarts at its first packet, right after
    /// the last packet of the trace before it (tcpreplay's rule).
    file_offset: u64,
    /// Packets seen in this pass.
    pass_packets: u64,
    /// Recorded-time offset added for completed passes.
    loop_offset: u64,
    /// Packets and bytes scheduled so far, over all passes.
    index: u64,
    bytes: u128,
    /// Due offset of the last packet handed out: due times never go backwards.
    last_due: u64,
    /// A pause between passes (tcpreplay's `--loopdelay-ns`), real time.
    loop_delay: u64,
    /// The pauses of the passes completed.
    delay_offset: u64,
    /// Long gaps and steps back in the recorded time.
    pub gaps: GapWatch,
}

impl Schedule {
    pub fn new(mode: TimingMode) -> Self {
        Self::with_max_gap(mode, None)
    }

    /// A schedule whose recorded gaps longer than `max_gap` are shortened
    /// to it (None: kept, and the first over an hour reported).
    pub fn with_max_gap(mode: TimingMode, max_gap: Option<Nanos>) -> Self {
        Schedule {
            gaps: GapWatch::new(max_gap),
            mode,
            first_ts: None,
            pass_span: 0,
            file_offset: 0,
            pass_packets: 0,
            loop_offset: 0,
            index: 0,
            bytes: 0,
            last_due: 0,
            loop_delay: 0,
            delay_offset: 0,
        }
    }

    /// The same, pausing `delay` between passes (in real time, whatever
    /// the multiplier or rate).
    pub fn with_loop_delay(mut self, delay: Nanos) -> Self {
        self.loop_delay = delay.0;
        self
    }

    pub fn mode(&self) -> TimingMode {
        self.mode
    }

    /// Due offset of the next packet, given its capture timestamp and length.
    ///
    /// Timestamps that go backwards in a trace (common in merged captures) are
    /// sent immediately after their predecessor: due times are monotonic.
    #[inline]
    pub fn due(&mut self, ts_ns: u64, frame_len: usize) -> Nanos {
        let due = match self.mode {
            TimingMode::Recorded { multiplier } => {
                let ts_ns = self.gaps.adjust(ts_ns);
                let first = *self.first_ts.get_or_insert(ts_ns);
                let rel = self.file_offset.saturating_add(ts_ns.saturating_sub(first));
                self.pass_span = self.pass_span.max(rel);
                let recorded = self.loop_offset.saturating_add(rel);
                if multiplier == 1.0 {
                    recorded
                } else {
                    (recorded as f64 / multiplier) as u64
                }
            }
            TimingMode::Pps(pps) => (self.index as f64 * 1e9 / pps) as u64,
            TimingMode::Mbps(mbps) => (self.bytes as f64 * 8.0 * 1e3 / mbps) as u64,
            TimingMode::TopSpeed => 0,
        }
        .saturating_add(self.delay_offset);
        self.index += 1;
        self.pass_packets += 1;
        self.bytes += frame_len as u128;
        self.last_due = self.last_due.max(due);
        Nanos(self.last_due)
    }

    /// After the first pass (before [`Schedule::next_loop`]): how much later
    /// every packet of the next pass is due than its counterpart in this one,
    /// in ns, unrounded so that `k × period` does not accumulate rounding.
    pub fn first_pass_period(&self) -> f64 {
        let own = match self.mode {
            TimingMode::Recorded { multiplier } => {
                let mean_gap = if self.pass_packets > 1 {
                    self.pass_span / (self.pass_packets - 1)
                } else {
                    0
                };
                (self.pass_span + mean_gap.max(1)) as f64 / multiplier
            }
            TimingMode::Pps(pps) => self.index as f64 * 1e9 / pps,
            TimingMode::Mbps(mbps) => self.bytes as f64 * 8.0 * 1e3 / mbps,
            TimingMode::TopSpeed => 0.0,
        };
        own + self.loop_delay as f64
    }

    /// Starts the next trace of a pass (several traces play one after the
    /// other): its first packet is due right after the last one of the
    /// trace before, its timing its own from there.
    pub fn next_file(&mut self) {
        self.first_ts = None;
        self.file_offset = self.pass_span;
        self.gaps.next_pass();
    }

    /// Starts the next pass over the trace. In recorded-timing mode the next
    /// pass begins one mean inter-packet gap after the last packet of this
    /// one, so the seam looks like any other gap (no burst, no pause).
    pub fn next_loop(&mut self) {
        if let TimingMode::Recorded { .. } = self.mode {
            let mean_gap = if self.pass_packets > 1 {
                self.pass_span / (self.pass_packets - 1)
            } else {
                0
            };
            self.loop_offset = self
                .loop_offset
                .saturating_add(self.pass_span)
                .saturating_add(mean_gap.max(1));
        }
        self.delay_offset = self.delay_offset.saturating_add(self.loop_delay);
        self.first_ts = None;
        self.file_offset = 0;
        self.pass_span = 0;
        self.pass_packets = 0;
        self.gaps.next_pass();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_pass_period_matches_the_second_pass() {
        let modes = [
            TimingMode::Recorded { multiplier: 1.0 },
            TimingMode::Recorded { multiplier: 3.0 },
            TimingMode::Pps(7_000.0),
            TimingMode::Mbps(3.3),
        ];
        let pass = [(1_000u64, 60usize), (1_300, 1500), (2_000, 64), (2_900, 90)];
        for mode in modes {
            let mut s = Schedule::new(mode);
            let one: Vec<u64> = pass.iter().map(|&(t, l)| s.due(t, l).0).collect();
            let period = s.first_pass_period();
            s.next_loop();
            for (i, &(t, l)) in pass.iter().enumerate() {
                let streamed = s.due(t, l).0 as f64;
                let repeated = one[i] as f64 + period;
                assert!(
                    (streamed - repeated).abs() <= 1.0,
                    "{mode:?} packet {i}: {streamed} vs {repeated}"
                );
            }
        }
    }

    #[test]
    fn recorded_gaps_are_kept_and_scaled() {
        let mut s = Schedule::new(TimingMode::Recorded { multiplier: 1.0 });
        assert_eq!(s.due(1_000_000, 60), Nanos(0));
        assert_eq!(s.due(1_000_250, 60), Nanos(250));
        assert_eq!(s.due(1_010_000, 60), Nanos(10_000));
        let mut s = Schedule::new(TimingMode::Recorded { multiplier: 2.0 });
        s.due(0, 60);
        assert_eq!(s.due(10_000, 60), Nanos(5_000));
    }

    #[test]
    fn backwards_timestamps_never_move_due_back() {
        let mut s = Schedule::new(TimingMode::Recorded { multiplier: 1.0 });
        s.due(5_000, 60);
        assert_eq!(s.due(9_000, 60), Nanos(4_000));
        assert_eq!(s.due(7_000, 60), Nanos(4_000));
    }

    #[test]
    fn fixed_rate_has_no_accumulated_drift() {
        let mut s = Schedule::new(TimingMode::Pps(100_000.0));
        let mut last = Nanos(0);
        for _ in 0..1_000_001 {
            last = s.due(0, 64);
        }
        assert_eq!(last, Nanos::from_secs(10));
        let mut s = Schedule::new(TimingMode::Pps(3.0));
        s.due(0, 64);
        assert_eq!(s.due(0, 64), Nanos(333_333_333));
    }

    #[test]
    fn mbps_counts_frame_bits() {
        // 1250 bytes = 10 000 bits; at 10 Mbit/s that is 1 ms.
        let mut s = Schedule::new(TimingMode::Mbps(10.0));
        assert_eq!(s.due(0, 1250), Nanos(0));
        assert_eq!(s.due(0, 1250), Nanos(1_000_000));
        assert_eq!(s.due(0, 1250), Nanos(2_000_000));
    }

    #[test]
    fn loops_continue_time_with_a_mean_gap_at_the_seam() {
        // Trace: 3 packets 100 ns apart, span 200 ns, mean gap 100 ns.
        let mut s = Schedule::new(TimingMode::Recorded { multiplier: 1.0 });
        let pass = |s: &mut Schedule| [s.due(1000, 60), s.due(1100, 60), s.due(1200, 60)];
        assert_eq!(pass(&mut s), [Nanos(0), Nanos(100), Nanos(200)]);
        s.next_loop();
        assert_eq!(pass(&mut s), [Nanos(300), Nanos(400), Nanos(500)]);
        s.next_loop();
        assert_eq!(pass(&mut s)[0], Nanos(600));
    }

    #[test]
    fn topspeed_is_always_due() {
        let mut s = Schedule::new(TimingMode::TopSpeed);
        s.next_loop();
        assert_eq!(s.due(12345, 60), Nanos::ZERO);
    }

    #[test]
    fn a_loop_delay_pauses_between_passes_in_real_time() {
        for mode in [
            TimingMode::Recorded { multiplier: 2.0 },
            TimingMode::Pps(1e6),
            TimingMode::TopSpeed,
        ] {
            let mut s = Schedule::new(mode).with_loop_delay(Nanos(5_000_000));
            let one: Vec<u64> = (0..3).map(|i| s.due(1_000 + i * 1_000, 64).0).collect();
            let period = s.first_pass_period();
            s.next_loop();
            let two: Vec<u64> = (0..3).map(|i| s.due(1_000 + i * 1_000, 64).0).collect();
            for (a, b) in one.iter().zip(&two) {
                assert_eq!(*b as f64, (*a as f64 + period).round(), "{mode:?}");
            }
            // The pause is on top of the pass's own length.
            assert!(two[0] >= one[2] + 5_000_000, "{mode:?}: {one:?} {two:?}");
        }
    }

    #[test]
    fn a_second_trace_starts_right_after_the_first_on_its_own_timing() {
        let mut s = Schedule::new(TimingMode::Recorded { multiplier: 1.0 });
        let a: Vec<u64> = [5_000, 6_000, 9_000]
            .iter()
            .map(|&t| s.due(t, 64).0)
            .collect();
        s.next_file();
        // The second trace was captured long before the first.
        let b: Vec<u64> = [100, 600].iter().map(|&t| s.due(t, 64).0).collect();
        assert_eq!(a, [0, 1_000, 4_000]);
        assert_eq!(b, [4_000, 4_500]);
        // A pass over both is 4 500 ns long, plus one mean gap (4 500 / 4) at the seam.
        assert_eq!(s.first_pass_period(), 5_625.0);
        s.next_loop();
        assert_eq!(s.due(5_000, 64).0, 5_625);
    }
}
