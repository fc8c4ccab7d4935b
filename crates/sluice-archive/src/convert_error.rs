//! [`ConvertError`]: a CSV that cannot become an archive, located by file,
//! line and column.

use std::fmt;
use std::io;

use super::record::{DeviceIdError, HEADER_LEN, MAX_RECORD_LEN};
use super::stamp_error::StampError;

/// A column of the CSV, for messages: its 1-based number and header name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// 1-based column number.
    pub number: usize,
    /// The column's name in the header line.
    pub name: String,
}

/// A failed conversion.
///
/// `Display` reads `"{file}: line {line}, column {n} ({name}): {kind}"`,
/// e.g. `in.csv: line 17, column 3 (value): '1.5' is not an integer (i32)`;
/// the line and column parts are left out when they do not apply.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{kind}", At(line, column))]
pub struct ConvertError {
    /// The file concerned: the CSV, or the archive for
    /// [`ConvertErrorKind::Write`].
    pub file: String,
    /// 1-based line of the CSV, if the problem is on one.
    pub line: Option<u64>,
    /// The column, if the problem is in one.
    pub column: Option<Column>,
    /// What is wrong.
    pub kind: ConvertErrorKind,
}

struct At<'a>(&'a Option<u64>, &'a Option<Column>);

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {} ({}): ", c.number, c.name),
            (Some(l), None) => write!(f, "line {l}: "),
            (None, Some(c)) => write!(f, "column {} ({}): ", c.number, c.name),
            (None, None) => Ok(()),
        }
    }
}

impl ConvertError {
    /// True when the archive could not be written (disk full, permissions):
    /// a failure of the machine, not of the input.
    pub fn is_output_error(&self) -> bool {
        matches!(self.kind, ConvertErrorKind::Write(_))
    }
}

/// What is wrong with a CSV (or with writing the archive).
#[derive(Debug, thiserror::Error)]
pub enum ConvertErrorKind {
    /// Opening or reading the CSV failed.
    #[error("I/O error: {0}")]
    Read(io::Error),
    /// Creating or writing the archive failed.
    #[error("I/O error writing the archive: {0}")]
    Write(io::Error),
    /// The output path names the input file.
    #[error("the output would overwrite the input file")]
    SameFile,
    /// No header line.
    #[error("file is empty: a CSV needs the header line `timestamp,device_id,value`")]
    Empty,
    /// A header line other than `timestamp,device_id,...`.
    #[error(
        "header line is `{found}`, expected `timestamp,device_id,` and at least one value \
         column name (e.g. `timestamp,device_id,value`)"
    )]
    Header {
        /// The header line found (cut to 64 characters).
        found: String,
    },
    /// A row with another number of columns than the header.
    #[error("{got} columns, but the header has {expected}")]
    Columns {
        /// Columns in the header.
        expected: usize,
        /// Columns in the row.
        got: usize,
    },
    /// A `"` anywhere.
    #[error("quoted fields are not supported (found '\"' at character {at})")]
    Quote {
        /// 1-based byte position in the line.
        at: usize,
    },
    /// An empty line followed by more data.
    #[error("blank line inside the data (only trailing blank lines are allowed)")]
    BlankLine,
    /// A line longer than the converter buffers.
    #[error("line is longer than {limit} bytes")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// A timestamp that does not parse.
    #[error("{0}")]
    Stamp(StampError),
    /// A device id that does not fit the 16-byte field.
    #[error("{0}")]
    Device(DeviceIdError),
    /// A value the encoding cannot hold.
    #[error("'{text}' {why}")]
    Value {
        /// The column's text (cut to 64 characters).
        text: String,
        /// What it is not.
        why: &'static str,
    },
    /// Data too long for one record.
    #[error(
        "the record would be {len} bytes, more than the {MAX_RECORD_LEN} a record can hold \
         (at most {} bytes of data)",
        MAX_RECORD_LEN - HEADER_LEN
    )]
    RecordTooLong {
        /// Header plus data bytes.
        len: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_forms() {
        let e = ConvertError {
            file: "in.csv".into(),
            line: Some(17),
            column: Some(Column {
                number: 3,
                name: "value".into(),
            }),
            kind: ConvertErrorKind::Value {
                text: "1.5".into(),
                why: "is not an integer (i32)",
            },
        };
        assert_eq!(
            e.to_string(),
            "in.csv: line 17, column 3 (value): '1.5' is not an integer (i32)"
        );
        let e = ConvertError {
            file: "in.csv".into(),
            line: Some(4),
            column: None,
            kind: ConvertErrorKind::Columns {
                expected: 3,
                got: 4,
            },
        };
        assert_eq!(
            e.to_string(),
            "in.csv: line 4: 4 columns, but the header has 3"
        );
        assert!(!e.is_output_error());
        let e = ConvertError {
            file: "out.arc".into(),
            line: None,
            column: None,
            kind: ConvertErrorKind::Write(io::Error::other("disk full")),
        };
        assert_eq!(
            e.to_string(),
            "out.arc: I/O error writing the archive: disk full"
        );
        assert!(e.is_output_error());
    }
}
