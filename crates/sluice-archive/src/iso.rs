//! ISO 8601 text for [`Stamp`]: `YYYY-MM-DDThh:mm:ss[.s{1,6}](Z|±hh:mm)`.
//!
//! Design: a strict hand-written scanner (exact punctuation, `T` and `Z`
//! upper case, 1-6 fraction digits, `±hh:mm` offsets) because the archive
//! has exactly one timestamp shape and a lenient parser would hide typos in
//! the input. Output always has six fraction digits and `Z` for offset 0, so
//! text written by [`Stamp::to_iso`] parses back to the same stamp.

use std::fmt;

use super::stamp::Stamp;
use super::stamp_error::{shorten, StampError, StampErrorKind, StampField};

/// Walks the bytes of the text; every byte before `i` is ASCII, so `i + 1`
/// is also the 1-based character position.
struct Scan<'a> {
    text: &'a str,
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.i).copied()
    }

    fn fail(&self, expected: &'static str) -> StampError {
        StampError::syntax(self.text, self.i + 1, expected)
    }

    fn digits(&mut self, n: usize) -> Result<u32, StampError> {
        let mut v = 0;
        for _ in 0..n {
            match self.peek() {
                Some(c) if c.is_ascii_digit() => v = v * 10 + u32::from(c - b'0'),
                _ => return Err(self.fail("a digit")),
            }
            self.i += 1;
        }
        Ok(v)
    }

    fn literal(&mut self, c: u8, expected: &'static str) -> Result<(), StampError> {
        if self.peek() != Some(c) {
            return Err(self.fail(expected));
        }
        self.i += 1;
        Ok(())
    }
}

impl Stamp {
    /// Parses `YYYY-MM-DDThh:mm:ss[.s{1,6}](Z|+hh:mm|-hh:mm)`. A fraction
    /// of fewer than six digits is right-padded (`.45` = 450000 µs); more
    /// than six digits is an error (the archive resolution is 1 µs). Ranges
    /// are checked as in [`Stamp::validate`]. `+00:00` and `-00:00` mean
    /// offset 0.
    pub fn parse_iso(text: &str) -> Result<Stamp, StampError> {
        let mut s = Scan { text, i: 0 };
        let year = s.digits(4)?;
        s.literal(b'-', "'-'")?;
        let month = s.digits(2)?;
        s.literal(b'-', "'-'")?;
        let day = s.digits(2)?;
        s.literal(b'T', "'T'")?;
        let hour = s.digits(2)?;
        s.literal(b':', "':'")?;
        let minute = s.digits(2)?;
        s.literal(b':', "':'")?;
        let second = s.digits(2)?;
        let mut micros = 0;
        let fraction = s.peek() == Some(b'.');
        if fraction {
            s.i += 1;
            let start = s.i;
            while s.peek().is_some_and(|c| c.is_ascii_digit()) {
                s.i += 1;
            }
            let digits = &text.as_bytes()[start..s.i];
            if digits.is_empty() {
                return Err(s.fail("a digit"));
            }
            if digits.len() > 6 {
                return Err(StampError::new(StampErrorKind::TooPrecise {
                    text: shorten(text),
                    digits: digits.len(),
                }));
            }
            for k in 0..6 {
                micros = micros * 10 + digits.get(k).map_or(0, |c| u32::from(c - b'0'));
            }
        }
        let tz_minutes = match s.peek() {
            Some(b'Z') => {
                s.i += 1;
                0
            }
            Some(sign @ (b'+' | b'-')) => {
                s.i += 1;
                let h = s.digits(2)?;
                s.literal(b':', "':'")?;
                let m = s.digits(2)?;
                if m > 59 {
                    return Err(StampError::range(StampField::TzMinute, m, 0, 59));
                }
                if h > 14 {
                    return Err(StampError::range(StampField::TzHour, h, 0, 14));
                }
                let tz = (h * 60 + m) as i16; // <= 899
                if sign == b'-' {
                    -tz
                } else {
                    tz
                }
            }
            _ if fraction => return Err(s.fail("'Z', '+' or '-'")),
            _ => return Err(s.fail("'.', 'Z', '+' or '-'")),
        };
        if s.i != text.len() {
            return Err(s.fail("the end of the timestamp"));
        }
        Stamp::from_parts([year, month, day, hour, minute, second], micros, tz_minutes)
    }

    /// `YYYY-MM-DDThh:mm:ss.ssssss` and `Z` for offset 0, else `±hh:mm`
    /// (the same text as `Display`).
    pub fn to_iso(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micros
        )?;
        if self.tz_minutes == 0 {
            return f.write_str("Z");
        }
        let sign = if self.tz_minutes < 0 { '-' } else { '+' };
        let tz = self.tz_minutes.unsigned_abs();
        write!(f, "{sign}{:02}:{:02}", tz / 60, tz % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_one_text() {
        let cases = [
            (
                "2015-07-01T19:20:30.45+01:00",
                [
                    0x20, 0x15, 0x07, 0x01, 0x19, 0x20, 0x30, 0x45, 0, 0, 0x01, 0,
                ],
                "2015-07-01T19:20:30.450000+01:00",
            ),
            (
                "2015-07-01T19:20:30.456789-01:00",
                [
                    0x20, 0x15, 0x07, 0x01, 0x19, 0x20, 0x30, 0x45, 0x67, 0x89, 0x81, 0,
                ],
                "2015-07-01T19:20:30.456789-01:00",
            ),
            (
                "2015-07-01T19:20:30.4567Z",
                [
                    0x20, 0x15, 0x07, 0x01, 0x19, 0x20, 0x30, 0x45, 0x67, 0, 0, 0,
                ],
                "2015-07-01T19:20:30.456700Z",
            ),
        ];
        for (text, bytes, back) in cases {
            let s = Stamp::parse_iso(text).unwrap();
            assert_eq!(s.encode(), bytes, "{text}");
            let d = Stamp::decode(&bytes).unwrap();
            assert_eq!(d, s);
            assert_eq!(d.to_iso(), back);
            assert_eq!(Stamp::parse_iso(back), Ok(s));
        }
    }

    #[test]
    fn offsets_zero_and_no_fraction() {
        let z = Stamp::parse_iso("2009-08-24T00:20:03Z").unwrap();
        assert_eq!(z.micros, 0);
        assert_eq!(z.to_iso(), "2009-08-24T00:20:03.000000Z");
        for t in ["2009-08-24T00:20:03+00:00", "2009-08-24T00:20:03.0-00:00"] {
            let s = Stamp::parse_iso(t).unwrap();
            assert_eq!(s, z);
            assert_eq!(s.encode()[10..], [0, 0]);
        }
        let far = Stamp::parse_iso("2009-08-24T00:20:03.000001-14:59").unwrap();
        assert_eq!(far.tz_minutes, -899);
        assert_eq!(far.to_iso(), "2009-08-24T00:20:03.000001-14:59");
        assert_eq!(
            far.unix_micros() - z.unix_micros(),
            (14 * 60 + 59) * 60_000_000 + 1
        );
    }

    #[test]
    fn syntax_errors_say_where() {
        let err = |t: &str| Stamp::parse_iso(t).unwrap_err().to_string();
        let tail = " (format YYYY-MM-DDThh:mm:ss[.ssssss](Z|+hh:mm|-hh:mm))";
        assert_eq!(
            err("2015-07-01 19:20:30Z"),
            format!("timestamp '2015-07-01 19:20:30Z': expected 'T' at character 11{tail}")
        );
        assert_eq!(
            err("2015-7-01T19:20:30Z"),
            format!("timestamp '2015-7-01T19:20:30Z': expected a digit at character 7{tail}")
        );
        assert_eq!(
            err("2015-07-01T19:20:30."),
            format!("timestamp '2015-07-01T19:20:30.': expected a digit at character 21{tail}")
        );
        assert_eq!(
            err("2015-07-01T19:20:30"),
            format!(
                "timestamp '2015-07-01T19:20:30': expected '.', 'Z', '+' or '-' at character \
                 20{tail}"
            )
        );
        assert_eq!(
            err("2015-07-01T19:20:30.5"),
            format!(
                "timestamp '2015-07-01T19:20:30.5': expected 'Z', '+' or '-' at character 22{tail}"
            )
        );
        assert_eq!(
            err("2015-07-01T19:20:30Zx"),
            format!(
                "timestamp '2015-07-01T19:20:30Zx': expected the end of the timestamp at \
                 character 21{tail}"
            )
        );
        assert_eq!(
            err("2015-07-01T19:20:30+0100"),
            format!("timestamp '2015-07-01T19:20:30+0100': expected ':' at character 23{tail}")
        );
        assert_eq!(
            err("2015-07-01t19:20:30z"),
            format!("timestamp '2015-07-01t19:20:30z': expected 'T' at character 11{tail}")
        );
        assert_eq!(
            err("2015-07-01T19:20:30.1234567Z"),
            "timestamp '2015-07-01T19:20:30.1234567Z': 7 fraction digits, but the archive \
             resolution is 1 µs (at most 6 digits)"
        );
        assert_eq!(
            err("2015-07-01T1é:20:30Z"),
            format!("timestamp '2015-07-01T1é:20:30Z': expected a digit at character 13{tail}")
        );
        assert!(err("").contains("expected a digit at character 1"));
    }

    #[test]
    fn range_errors() {
        let err = |t: &str| Stamp::parse_iso(t).unwrap_err().to_string();
        assert_eq!(
            err("2015-13-01T00:00:00Z"),
            "month 13 out of range (1..=12)"
        );
        assert_eq!(
            err("2015-02-29T00:00:00Z"),
            "day 29 out of range for 2015-02 (28 days)"
        );
        assert!(Stamp::parse_iso("2016-02-29T00:00:00Z").is_ok());
        assert!(Stamp::parse_iso("2000-02-29T00:00:00Z").is_ok());
        assert!(Stamp::parse_iso("1900-02-29T00:00:00Z").is_err());
        assert_eq!(
            err("2015-04-31T00:00:00Z"),
            "day 31 out of range for 2015-04 (30 days)"
        );
        assert_eq!(err("2015-01-01T24:00:00Z"), "hour 24 out of range (0..=23)");
        assert_eq!(
            err("2015-01-01T23:60:00Z"),
            "minute 60 out of range (0..=59)"
        );
        assert_eq!(
            err("2015-01-01T23:59:61Z"),
            "second 61 out of range (0..=60)"
        );
        assert!(Stamp::parse_iso("2015-06-30T23:59:60Z").is_ok());
        assert_eq!(
            err("2015-01-01T00:00:00+15:00"),
            "time-zone hour 15 out of range (0..=14)"
        );
        assert_eq!(
            err("2015-01-01T00:00:00+01:60"),
            "time-zone minute 60 out of range (0..=59)"
        );
    }

    #[test]
    fn long_text_is_shortened_in_messages() {
        let long = format!("2015-07-01T19:20:30Z{}", "x".repeat(100));
        let msg = Stamp::parse_iso(&long).unwrap_err().to_string();
        assert!(msg.contains("xxx...'"), "{msg}");
        assert!(msg.len() < 200, "{msg}");
    }
}
