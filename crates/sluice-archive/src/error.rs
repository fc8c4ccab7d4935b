//! Errors of the archive reader: *where* (file, record, byte offset) in
//! [`ArchiveError`], *what* in [`ArchiveErrorKind`].
//!
//! Design: as for captures (see `crate::error`), one located error so a
//! person can go to the bad bytes with `xxd -s OFFSET`, and a kind that
//! tests match on. The I/O error is part of the message, not a `source()`.

use std::fmt;
use std::io;

use super::encoding::DataEncoding;
use super::stamp_error::StampError;
use crate::HEADER_LEN;

/// A failure while reading an archive, with its location.
///
/// `Display` reads `"{file}: record {record} at byte {offset}: {kind}"`,
/// e.g. `x.arc: record 17 at byte 4096: bad length 12 (a record is at
/// least 30 bytes)`; for a failure that concerns no record (opening the
/// file) `record` is 0 and the message is `"{file}: {kind}"`.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{kind}", Where(*record, *offset))]
pub struct ArchiveError {
    /// Name of the archive (the path, or the name given to `from_reader`).
    pub file: String,
    /// Byte offset of the record (its length field) in the archive.
    pub offset: u64,
    /// 1-based number of the record; 0 when no record is involved.
    pub record: u64,
    /// What is wrong.
    pub kind: ArchiveErrorKind,
}

struct Where(u64, u64);

impl fmt::Display for Where {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => Ok(()),
            n => write!(f, "record {n} at byte {}: ", self.1),
        }
    }
}

impl ArchiveError {
    /// True when the archive simply ends inside a record: every record
    /// returned before this error was complete and good.
    pub fn is_truncation(&self) -> bool {
        self.kind.is_truncation()
    }

    /// An equal copy (`io::Error` is not `Clone`), to repeat a sticky error.
    pub(crate) fn duplicate(&self) -> ArchiveError {
        ArchiveError {
            file: self.file.clone(),
            offset: self.offset,
            record: self.record,
            kind: self.kind.duplicate(),
        }
    }
}

/// What is wrong with an archive.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveErrorKind {
    /// Opening or reading the file failed.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// A length field below the 30-byte header.
    #[error("bad length {len} (a record is at least {HEADER_LEN} bytes)")]
    BadLength {
        /// The length field.
        len: u16,
    },
    /// The file ends inside the 2-byte length field.
    #[error("truncated record: the file ends {got} byte into the 2-byte length field")]
    TruncatedLength {
        /// Bytes of the length field present (1).
        got: u64,
    },
    /// The file ends inside a record.
    #[error("truncated record: length says {need} bytes, only {got} left in the file")]
    Truncated {
        /// The record length.
        need: u64,
        /// Bytes of the record present.
        got: u64,
    },
    /// A timestamp that does not decode.
    #[error("bad timestamp (record bytes 2-13): {0}")]
    BadStamp(StampError),
    /// A device id `series convert` would refuse (empty, or with a NUL
    /// byte before its end): the reader and the writer agree.
    #[error("bad device id (record bytes 14-29): {0}")]
    BadDevice(crate::DeviceIdError),
    /// A data field that is not a whole number of binary values (dump).
    #[error("data field of {len} bytes is not a whole number of {width}-byte {encoding} values")]
    DataWidth {
        /// Bytes in the data field.
        len: usize,
        /// Bytes per value.
        width: usize,
        /// The encoding asked for.
        encoding: DataEncoding,
    },
    /// A data field dumped as text that is not text (dump): binary values,
    /// most likely, from an archive converted with `--data i32|f32|f64`.
    #[error(
        "data field is not text (byte 0x{byte:02x} at data byte {at}): binary values? \
         dump with the --data (i32, f32, f64) the archive was converted with"
    )]
    NotText {
        /// The first byte that is not text.
        byte: u8,
        /// Its offset in the data field.
        at: usize,
    },
}

impl ArchiveErrorKind {
    /// See [`ArchiveError::is_truncation`].
    pub fn is_truncation(&self) -> bool {
        match self {
            ArchiveErrorKind::TruncatedLength { .. } | ArchiveErrorKind::Truncated { .. } => true,
            ArchiveErrorKind::Io(e) => e.kind() == io::ErrorKind::UnexpectedEof,
            _ => false,
        }
    }

    fn duplicate(&self) -> ArchiveErrorKind {
        use ArchiveErrorKind::*;
        match self {
            Io(e) => Io(io::Error::new(e.kind(), e.to_string())),
            BadLength { len } => BadLength { len: *len },
            TruncatedLength { got } => TruncatedLength { got: *got },
            Truncated { need, got } => Truncated {
                need: *need,
                got: *got,
            },
            BadStamp(e) => BadStamp(e.clone()),
            BadDevice(e) => BadDevice(*e),
            DataWidth {
                len,
                width,
                encoding,
            } => DataWidth {
                len: *len,
                width: *width,
                encoding: *encoding,
            },
            NotText { byte, at } => NotText {
                byte: *byte,
                at: *at,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_record_offset_and_problem() {
        let e = ArchiveError {
            file: "x.arc".into(),
            offset: 4096,
            record: 17,
            kind: ArchiveErrorKind::BadLength { len: 12 },
        };
        assert_eq!(
            e.to_string(),
            "x.arc: record 17 at byte 4096: bad length 12 (a record is at least 30 bytes)"
        );
        assert!(!e.is_truncation());
        let e = ArchiveError {
            file: "y.arc".into(),
            offset: 0,
            record: 0,
            kind: ArchiveErrorKind::Io(io::Error::new(io::ErrorKind::NotFound, "gone")),
        };
        assert_eq!(e.to_string(), "y.arc: I/O error: gone");
        assert_eq!(e.duplicate().to_string(), e.to_string());
        let e = ArchiveError {
            file: "z.arc".into(),
            offset: 60,
            record: 3,
            kind: ArchiveErrorKind::Truncated { need: 45, got: 20 },
        };
        assert!(e.is_truncation());
        assert_eq!(
            e.to_string(),
            "z.arc: record 3 at byte 60: truncated record: length says 45 bytes, only 20 left \
             in the file"
        );
    }
}
