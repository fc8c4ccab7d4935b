//! Upload bytes reserved as they arrive: uploads that run at once share
//! one `--max-upload`, so each chunk is counted against what is kept and
//! what every upload in flight has received before it is written, not
//! only when an upload ends.

use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes of the uploads in flight of one service.
#[derive(Debug, Default)]
pub struct InFlight(AtomicU64);

/// One upload's bytes in flight; given back when it ends, whatever way.
pub struct Reservation<'a> {
    of: &'a InFlight,
    bytes: u64,
}

impl InFlight {
    pub fn reserve(&self) -> Reservation<'_> {
        Reservation { of: self, bytes: 0 }
    }
}

impl Reservation<'_> {
    /// Reserves `n` more bytes when `kept` (the uploads already stored)
    /// and every upload in flight leave room for them under `max`; false
    /// (nothing reserved) when not.
    pub fn grow(&mut self, n: u64, kept: u64, max: u64) -> bool {
        let before = self.of.0.fetch_add(n, Ordering::SeqCst);
        if kept.saturating_add(before).saturating_add(n) > max {
            self.of.0.fetch_sub(n, Ordering::SeqCst);
            return false;
        }
        self.bytes += n;
        true
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.of.0.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_in_flight_share_one_budget() {
        let f = InFlight::default();
        let (mut a, mut b) = (f.reserve(), f.reserve());
        assert!(a.grow(6, 0, 20));
        assert!(b.grow(6, 0, 20));
        assert!(a.grow(6, 0, 20));
        // 18 in flight: 3 more would pass 20, for either upload.
        assert!(!b.grow(3, 0, 20));
        assert!(!b.grow(1, 2, 20));
        assert!(b.grow(2, 0, 20));
        drop(a);
        // a's 12 bytes are given back when it ends.
        assert!(b.grow(12, 0, 20));
        assert_eq!(b.bytes, 20);
        drop(b);
        assert_eq!(f.0.load(Ordering::SeqCst), 0);
    }
}
