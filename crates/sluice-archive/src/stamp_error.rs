//! [`StampError`]: why a timestamp (ISO 8601 text or the 12 encoded bytes)
//! was refused.
//!
//! Design: one error type for both directions, because both end in the same
//! range checks. Every message names the field and the bad value, and for
//! encoded bytes the byte index within the 12-byte field and its hex value,
//! so `xxd` output can be compared with the message directly.

use std::fmt;

/// A timestamp field, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StampField {
    /// YYYY (bytes 0-1).
    Year,
    /// MM (byte 2).
    Month,
    /// DD (byte 3).
    Day,
    /// hh (byte 4).
    Hour,
    /// mm (byte 5).
    Minute,
    /// ss (byte 6).
    Second,
    /// The microsecond fraction (bytes 7-9).
    Fraction,
    /// Time-zone hours (byte 10, low 7 bits).
    TzHour,
    /// Time-zone minutes (byte 11).
    TzMinute,
}

impl fmt::Display for StampField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StampField::Year => "year",
            StampField::Month => "month",
            StampField::Day => "day",
            StampField::Hour => "hour",
            StampField::Minute => "minute",
            StampField::Second => "second",
            StampField::Fraction => "fraction",
            StampField::TzHour => "time-zone hour",
            StampField::TzMinute => "time-zone minute",
        })
    }
}

/// What is wrong with a timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StampErrorKind {
    /// An encoded byte with a nibble above 9.
    NotBcd {
        /// Index of the byte within the 12-byte timestamp field.
        byte: usize,
        /// The field the byte belongs to.
        field: StampField,
        /// The whole byte.
        value: u8,
    },
    /// A field value outside its range (day: see [`StampErrorKind::BadDay`]).
    OutOfRange {
        /// The field.
        field: StampField,
        /// Its value.
        value: u32,
        /// Smallest allowed value.
        min: u32,
        /// Largest allowed value.
        max: u32,
    },
    /// A day that the month does not have (leap years counted).
    BadDay {
        /// Year of the date.
        year: u16,
        /// Month of the date (1-12).
        month: u8,
        /// The day.
        day: u8,
        /// Days in that month.
        days: u8,
    },
    /// ISO 8601 text that does not have the expected shape.
    Syntax {
        /// The text (cut to 64 characters).
        text: String,
        /// 1-based character position of the problem.
        at: usize,
        /// What was expected there.
        expected: &'static str,
    },
    /// More than six fraction digits in ISO 8601 text.
    TooPrecise {
        /// The text (cut to 64 characters).
        text: String,
        /// Fraction digits in the text.
        digits: usize,
    },
    /// A Unix time outside the years 0000-9999.
    YearOutOfRange {
        /// Microseconds since 1970 (UTC).
        micros: i64,
    },
}

/// A timestamp that cannot be parsed, decoded or encoded.
///
/// `Display` names the field and the bad value, e.g. `timestamp byte 4:
/// hour 0x2a is not BCD`, `month 13 out of range (1..=12)`, `day 29 out of
/// range for 2015-02 (28 days)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StampError {
    kind: StampErrorKind,
}

impl StampError {
    pub(crate) fn new(kind: StampErrorKind) -> StampError {
        StampError { kind }
    }

    pub(crate) fn range(field: StampField, value: u32, min: u32, max: u32) -> StampError {
        StampError::new(StampErrorKind::OutOfRange {
            field,
            value,
            min,
            max,
        })
    }

    pub(crate) fn not_bcd(byte: usize, field: StampField, value: u8) -> StampError {
        StampError::new(StampErrorKind::NotBcd { byte, field, value })
    }

    pub(crate) fn syntax(text: &str, at: usize, expected: &'static str) -> StampError {
        StampError::new(StampErrorKind::Syntax {
            text: shorten(text),
            at,
            expected,
        })
    }

    /// What is wrong.
    pub fn kind(&self) -> &StampErrorKind {
        &self.kind
    }
}

/// At most 64 characters of `text`, for messages.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_owned(),
    }
}

impl fmt::Display for StampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            StampErrorKind::NotBcd { byte, field, value } => {
                write!(f, "timestamp byte {byte}: {field} 0x{value:02x} is not BCD")
            }
            StampErrorKind::OutOfRange {
                field,
                value,
                min,
                max,
            } => write!(f, "{field} {value} out of range ({min}..={max})"),
            StampErrorKind::BadDay {
                year,
                month,
                day,
                days,
            } => write!(
                f,
                "day {day} out of range for {year:04}-{month:02} ({days} days)"
            ),
            StampErrorKind::Syntax { text, at, expected } => write!(
                f,
                "timestamp '{text}': expected {expected} at character {at} \
                 (format YYYY-MM-DDThh:mm:ss[.ssssss](Z|+hh:mm|-hh:mm))"
            ),
            StampErrorKind::TooPrecise { text, digits } => write!(
                f,
                "timestamp '{text}': {digits} fraction digits, but the archive resolution is \
                 1 µs (at most 6 digits)"
            ),
            StampErrorKind::YearOutOfRange { micros } => write!(
                f,
                "Unix time {micros} µs is outside the years 0000-9999 a timestamp can hold"
            ),
        }
    }
}

impl std::error::Error for StampError {}
