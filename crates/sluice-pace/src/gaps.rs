//! Implausible recorded time: a gap far longer than a capture plausibly
//! holds (a clock jump, a merged capture from another day) would make a
//! replay wait for it; a step backwards compresses what follows. A
//! [`GapWatch`] notes the first of each with its position, and with a cap
//! removes the excess of every longer gap from the schedule.

use sluice_core::Nanos;

/// Gaps longer than this are reported when no cap is given.
pub const DEFAULT_MAX_GAP: Nanos = Nanos::from_secs(3600);

#[derive(Clone, Debug)]
pub struct GapWatch {
    max_gap: u64,
    cap: bool,
    prev: Option<u64>,
    /// Time removed from long gaps in this pass.
    removed: u64,
    /// Timestamps seen in this pass.
    index: u64,
    /// The first long gap: (1-based packet of the pass, gap in ns).
    pub long_gap: Option<(u64, u64)>,
    /// The first step back: (1-based packet of the pass, step in ns).
    pub backward: Option<(u64, u64)>,
    /// Gaps shortened to the cap, over all passes.
    pub capped: u64,
}

impl GapWatch {
    /// Reports gaps longer than `max_gap` (None: [`DEFAULT_MAX_GAP`]) and,
    /// when `max_gap` is given, shortens them to it.
    pub fn new(max_gap: Option<Nanos>) -> Self {
        GapWatch {
            max_gap: max_gap.unwrap_or(DEFAULT_MAX_GAP).0,
            cap: max_gap.is_some(),
            prev: None,
            removed: 0,
            index: 0,
            long_gap: None,
            backward: None,
            capped: 0,
        }
    }

    /// The timestamp to schedule for `ts`: `ts` less the time removed from
    /// long gaps so far in this pass.
    #[inline]
    pub fn adjust(&mut self, ts: u64) -> u64 {
        self.index += 1;
        self.observe(ts, self.index)
    }

    /// [`adjust`](Self::adjust) for a timestamp at a position the caller
    /// counts (a record of an archive read by several workers).
    #[inline]
    pub fn observe(&mut self, ts: u64, position: u64) -> u64 {
        if let Some(prev) = self.prev {
            if ts > prev {
                let gap = ts - prev;
                if gap > self.max_gap {
                    self.long_gap.get_or_insert((position, gap));
                    if self.cap {
                        self.removed += gap - self.max_gap;
                        self.capped += 1;
                    }
                }
            } else if ts < prev {
                self.backward.get_or_insert((position, prev - ts));
            }
        }
        self.prev = Some(ts);
        ts.saturating_sub(self.removed)
    }

    /// A new pass starts from the first timestamp again.
    pub fn next_pass(&mut self) {
        self.prev = None;
        self.removed = 0;
        self.index = 0;
    }

    /// What a user should be told, once each: where the first long gap and
    /// the first step back are (`--max-gap` named where the command has it).
    pub fn notes(&self, file: &str, unit: &str, max_gap_option: bool) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((i, gap)) = self.long_gap {
            out.push(if self.cap {
                format!(
                    "{file}: {unit} {i}: a gap of {} (and {} more over --max-gap {}) shortened to {}",
                    Nanos(gap),
                    self.capped.saturating_sub(1),
                    Nanos(self.max_gap),
                    Nanos(self.max_gap)
                )
            } else {
                let hint = if max_gap_option {
                    " (--max-gap caps such gaps)"
                } else {
                    ""
                };
                format!(
                    "{file}: {unit} {i}: a gap of {} in the recorded time, kept{hint}",
                    Nanos(gap)
                )
            });
        }
        if let Some((i, step)) = self.backward {
            out.push(format!(
                "{file}: {unit} {i}: the recorded time steps back by {}; what follows is sent at once until the time catches up",
                Nanos(step)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_gap_is_reported_and_capped_when_asked() {
        let hour = DEFAULT_MAX_GAP.0;
        let mut w = GapWatch::new(None);
        assert_eq!(w.adjust(0), 0);
        assert_eq!(w.adjust(3 * hour), 3 * hour);
        assert_eq!(w.long_gap, Some((2, 3 * hour)));
        let mut w = GapWatch::new(Some(Nanos(100)));
        for (ts, want) in [(0, 0), (50, 50), (1_050, 150), (1_060, 160), (5_060, 260)] {
            assert_eq!(w.adjust(ts), want);
        }
        assert_eq!((w.long_gap, w.capped), (Some((3, 1_000)), 2));
        assert!(w.notes("t.pcap", "packet", true)[0].starts_with("t.pcap: packet 3: a gap of 1us"));
    }

    #[test]
    fn a_step_back_is_reported_once_with_its_position() {
        let mut w = GapWatch::new(None);
        for ts in [10, 20, 15, 5] {
            w.adjust(ts);
        }
        assert_eq!(w.backward, Some((3, 5)));
        w.next_pass();
        assert_eq!(w.adjust(10), 10, "a new pass is not a step back");
        assert_eq!(w.backward, Some((3, 5)));
    }
}
