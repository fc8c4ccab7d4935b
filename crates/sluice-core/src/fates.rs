//! [`Fates`]: what became of each frame a TX thread took, in the order it
//! took them, for a source that answers its clients with actual departure
//! times (`sluice inject`). A source asks for them (`Source::wants_fates`);
//! the engine makes the queue and hands it over in the run context. The TX
//! thread never blocks on it; the source drains it.
//!
//! Invariant: with one TX thread, the k-th record is the fate of the k-th
//! frame the source pushed, so the source matches records to its frames
//! by order alone.

use crate::time::Nanos;
use crossbeam_queue::SegQueue;

/// What happened to one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Handed to the sink at this offset from the run's start.
    Sent(Nanos),
    /// Dropped as a time violation (later than the drift window).
    Dropped,
    /// Refused by the sink (too long or too short for the link).
    Refused,
}

/// The fates of frames, in the order the TX thread took them.
#[derive(Debug, Default)]
pub struct Fates {
    q: SegQueue<Fate>,
}

impl Fates {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the fate of the next frame (TX thread).
    #[inline]
    pub fn record(&self, fate: Fate) {
        self.q.push(fate);
    }

    /// The oldest fate not taken yet (source).
    #[inline]
    pub fn take(&self) -> Option<Fate> {
        self.q.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fates_come_back_in_order() {
        let d = Fates::new();
        d.record(Fate::Sent(Nanos(5)));
        d.record(Fate::Dropped);
        d.record(Fate::Refused);
        assert_eq!(d.take(), Some(Fate::Sent(Nanos(5))));
        assert_eq!(d.take(), Some(Fate::Dropped));
        assert_eq!(d.take(), Some(Fate::Refused));
        assert_eq!(d.take(), None);
    }
}
