//! Integer-nanosecond time newtypes.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn from_micros(us: u64) -> Self {
        Nanos(us.saturating_mul(1_000))
    }
    pub const fn from_millis(ms: u64) -> Self {
        Nanos(ms.saturating_mul(1_000_000))
    }
    pub const fn from_secs(s: u64) -> Self {
        Nanos(s.saturating_mul(1_000_000_000))
    }
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
    pub const fn saturating_sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

impl fmt::Display for Nanos {
    /// Shortest unit that keeps the value readable: `850ns`, `12.5us`, `3.2ms`, `1.5s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n < 1_000 {
            write!(f, "{n}ns")
        } else if n < 1_000_000 {
            write!(f, "{:.1}us", n as f64 / 1e3)
        } else if n < 1_000_000_000 {
            write!(f, "{:.2}ms", n as f64 / 1e6)
        } else {
            write!(f, "{:.3}s", n as f64 / 1e9)
        }
    }
}

/// A point on a monotonic clock, in nanoseconds since the clock's origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MonoTime(pub u64);

impl MonoTime {
    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub const fn since(self, earlier: MonoTime) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
    /// Signed difference `self - other` in nanoseconds.
    pub const fn diff(self, other: MonoTime) -> i64 {
        self.0.wrapping_sub(other.0) as i64
    }
}

impl Add<Nanos> for MonoTime {
    type Output = MonoTime;
    fn add(self, rhs: Nanos) -> MonoTime {
        MonoTime(self.0.saturating_add(rhs.0))
    }
}

impl Sub<Nanos> for MonoTime {
    type Output = MonoTime;
    fn sub(self, rhs: Nanos) -> MonoTime {
        MonoTime(self.0.saturating_sub(rhs.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Nanos::MAX + Nanos(1), Nanos::MAX);
        assert_eq!(MonoTime(5).since(MonoTime(9)), Nanos::ZERO);
        assert_eq!(MonoTime(9).diff(MonoTime(5)), 4);
        assert_eq!(MonoTime(5).diff(MonoTime(9)), -4);
    }

    #[test]
    fn display_picks_unit() {
        assert_eq!(Nanos(850).to_string(), "850ns");
        assert_eq!(Nanos(12_500).to_string(), "12.5us");
        assert_eq!(Nanos(3_200_000).to_string(), "3.20ms");
        assert_eq!(Nanos(1_500_000_000).to_string(), "1.500s");
    }
}
