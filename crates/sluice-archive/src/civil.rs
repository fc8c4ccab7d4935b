//! Proleptic Gregorian calendar arithmetic: days since 1970-01-01 from a
//! date and back, and month lengths.
//!
//! Design: Howard Hinnant's `days_from_civil` / `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>): integer only,
//! no tables, exact for every year the archive can hold (0000-9999), so no
//! date crate is needed.

/// Whether `year` has a 29 February.
pub(crate) fn is_leap(year: u16) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

/// Days in `month` (1-12) of `year`; 0 for a month outside 1-12.
pub(crate) fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days from 1970-01-01 to the given date (negative before it). `month`
/// is 1-12 and `day` 1-31; other values give a meaningless but finite
/// result (no panic, no overflow).
#[inline]
pub(crate) fn days_from_civil(year: u16, month: u8, day: u8) -> i64 {
    let m = i64::from(month);
    let y = i64::from(year) - i64::from(m <= 2);
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400; // 0..=399
    let mp = (m + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01, as (year, month, day); `None` outside
/// the years 0000-9999.
pub(crate) fn civil_from_days(days: i64) -> Option<(u16, u8, u8)> {
    // 0000-03-01 .. 9999-12-31 is well inside i64; reject the rest first so
    // the arithmetic below cannot overflow.
    if !(days_from_civil(0, 1, 1)..=days_from_civil(9999, 12, 31)).contains(&days) {
        return None;
    }
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097; // 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // 0..=365
    let mp = (5 * doy + 2) / 153; // 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    Some((
        u16::try_from(year).ok()?,
        u8::try_from(month).ok()?,
        u8::try_from(day).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2008, 1, 1), 13_879);
        assert_eq!(days_from_civil(2007, 12, 31), 13_878);
        assert_eq!(civil_from_days(13_879), Some((2008, 1, 1)));
        assert_eq!(civil_from_days(-719_528), Some((0, 1, 1)));
        assert_eq!(civil_from_days(-719_529), None);
        assert_eq!(civil_from_days(2_932_896), Some((9999, 12, 31)));
        assert_eq!(civil_from_days(2_932_897), None);
        assert_eq!(civil_from_days(i64::MIN), None);
        assert_eq!(civil_from_days(i64::MAX), None);
    }

    #[test]
    fn every_day_round_trips() {
        let mut days = days_from_civil(0, 1, 1);
        for year in 0..=9999u16 {
            for month in 1..=12u8 {
                for day in 1..=days_in_month(year, month) {
                    assert_eq!(days_from_civil(year, month, day), days);
                    assert_eq!(civil_from_days(days), Some((year, month, day)));
                    days += 1;
                }
            }
        }
    }

    #[test]
    fn leap_years() {
        assert!(is_leap(2016) && is_leap(2000) && is_leap(0) && is_leap(2400));
        assert!(!is_leap(2015) && !is_leap(1900) && !is_leap(2100));
        assert_eq!(days_in_month(2016, 2), 29);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2015, 13), 0);
    }
}
