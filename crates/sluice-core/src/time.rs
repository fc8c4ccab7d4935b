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
    /// The largest unit that keeps a whole part, with only the decimals
    /// the value needs: `850ns`, `12.5us`, `10ms`, `1.5s`. Exact, so
    /// [`parse_duration`](crate::parse_duration) reads it back (command-line
    /// defaults are shown this way).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        let (unit, name) = match n {
            1_000_000_000.. => (1_000_000_000, "s"),
            1_000_000.. => (1_000_000, "ms"),
            1_000.. => (1_000, "us"),
            _ => (1, "ns"),
        };
        let (whole, frac) = (n / unit, n % unit);
        if frac == 0 {
            return write!(f, "{whole}{name}");
        }
        let width = unit.ilog10() as usize;
        let digits = format!("{frac:0width$}");
        write!(f, "{whole}.{}{name}", digits.trim_end_matches('0'))
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
    fn display_picks_the_unit_and_reads_back_exactly() {
        for (n, text) in [
            (0, "0ns"),
            (850, "850ns"),
            (12_500, "12.5us"),
            (12_345, "12.345us"),
            (10_000_000, "10ms"),
            (3_200_000, "3.2ms"),
            (1_500_000_000, "1.5s"),
            (1_800_000_000_000, "1800s"),
            (1_000_000_001, "1.000000001s"),
        ] {
            assert_eq!(Nanos(n).to_string(), text);
            assert_eq!(crate::parse_duration(text), Ok(Nanos(n)), "{text}");
        }
    }
}
