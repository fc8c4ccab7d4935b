//! The time-series archive format (Fig. 6 and Table I of "time-series
//! traffic generation", §V-A): a file of records, each
//!
//! | field | bytes | content |
//! |---|---|---|
//! | length | 2 | unsigned **big-endian** total record length *including* this 30-byte header: 30..=65535 |
//! | timestamp | 12 | ISO 8601 time in BCD (below) |
//! | device id | 16 | the device id's bytes (UTF-8 from a CSV), zero-padded on the right |
//! | data | length − 30 | opaque payload (see [`DataEncoding`] for what `convert` puts there) |
//!
//! There is no file header; an empty file is a valid archive of 0 records.
//!
//! Timestamp (two BCD digits per byte, high nibble first):
//!
//! | bytes | field |
//! |---|---|
//! | 0-1 | year YYYY |
//! | 2 / 3 | month MM / day DD |
//! | 4 / 5 / 6 | hour hh / minute mm / second ss (60 allowed: leap second) |
//! | 7-9 | fraction: 6 digits = microseconds, right-padded (`.45` → `45 00 00`) |
//! | 10-11 | time zone: bit 15 sign (1 = minus), bits 14-12 first hour digit (0-7), bits 11-8 second hour digit, bits 7-4 and 3-0 the two minute digits; hour 0-14, minute 0-59 |
//!
//! `Z` and `+00:00` encode as `00 00`. `80 00` (`-00:00`) is accepted and
//! decodes as offset 0, so it dumps as `Z`. Table I:
//!
//! | text | bytes |
//! |---|---|
//! | `2015-07-01T19:20:30.45+01:00` | `20 15 07 01 19 20 30 45 00 00 01 00` |
//! | `2015-07-01T19:20:30.456789-01:00` | `20 15 07 01 19 20 30 45 67 89 81 00` |
//! | `2015-07-01T19:20:30.4567Z` | `20 15 07 01 19 20 30 45 67 00 00 00` |
//!
//! Pieces:
//! - [`Stamp`]: parse/print ISO 8601, encode/decode the 12 bytes (every
//!   field validated, errors name the byte), [`Stamp::unix_micros`];
//!   [`decode_micros`] is the player's hot path straight to microseconds.
//! - [`split_record`]: framing over a byte buffer, borrowing.
//! - [`ArchiveReader`]: streaming over any `Read` in bounded memory, errors
//!   that name the record number and byte offset, truncation reported after
//!   every complete record. [`ArchiveWriter`]: buffered output.
//! - [`convert_csv`] (CSV → archive) and [`dump`] (archive → CSV), used by
//!   `sluice series convert` and `sluice series dump`.
//!
//! Design: the layout is the paper's, with the choices it leaves open made
//! explicit: big-endian length (network order, as the data is meant for the
//! wire), microsecond fraction digits right-padded, zero-padded device ids.
//! Reading never panics and never loops on any input (mutation tests in
//! `tests/archive.rs`, `fuzz/fuzz_targets/archive_reader.rs`).

mod civil;
mod convert;
mod convert_error;
mod csv;
mod dump;
mod encoding;
mod error;
mod iso;
mod reader;
mod record;
mod stamp;
mod stamp_error;
mod writer;

pub use convert::{convert_csv, convert_csv_from, ConvertStats};
pub use convert_error::{Column, ConvertError, ConvertErrorKind};
pub use dump::{dump, dump_reader, DumpError};
pub use encoding::DataEncoding;
pub use error::{ArchiveError, ArchiveErrorKind};
pub use reader::ArchiveReader;
pub use record::{
    pack_device, split_record, trim_device, DeviceIdError, Record, RecordRef, DEVICE_LEN,
    MAX_DATA_LEN, MAX_RECORD_LEN,
};

/// Bytes before a record's data: length (2) + timestamp (12) + device id
/// (16).
pub const HEADER_LEN: usize = 30;
pub use stamp::{decode_micros, Stamp, MAX_TZ_MINUTES};
pub use stamp_error::{StampError, StampErrorKind, StampField};
pub use writer::ArchiveWriter;
