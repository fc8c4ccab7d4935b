//! Archive → CSV: [`dump`] and [`dump_reader`].
//!
//! Output: the header `timestamp,device_id,value` (`value,value2,...` when
//! the first record holds several values), then one line per record: the
//! timestamp as [`Stamp::to_iso`](super::Stamp::to_iso) writes it, the
//! device id without its zero padding, and the values (see
//! [`DataEncoding`]). A `text` dump of an archive made from a CSV with a
//! `timestamp,device_id,value` header, 6-digit fractions and `Z` offsets
//! is byte-identical to that CSV.
//!
//! Design: one reused line buffer per record and a buffered writer; records
//! are written as they are read, so a damaged archive still yields every
//! record before the damage, then the error.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::encoding::DataEncoding;
use super::error::{ArchiveError, ArchiveErrorKind};
use super::reader::ArchiveReader;

/// A failed dump: the archive is bad, or the output cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// Reading the archive failed (names the record and its offset).
    #[error("{0}")]
    Archive(ArchiveError),
    /// Writing the CSV failed.
    #[error("writing the dump: {0}")]
    Write(io::Error),
}

impl From<ArchiveError> for DumpError {
    fn from(e: ArchiveError) -> Self {
        DumpError::Archive(e)
    }
}

/// Writes the archive at `archive` as CSV to `out`; returns the number of
/// records.
pub fn dump(archive: &Path, out: &mut dyn Write, enc: DataEncoding) -> Result<u64, DumpError> {
    let mut r = ArchiveReader::open(archive)?;
    dump_reader(&mut r, out, enc)
}

fn header(columns: usize) -> String {
    let mut h = String::from("timestamp,device_id,value");
    for i in 2..=columns {
        h.push_str(&format!(",value{i}"));
    }
    h.push('\n');
    h
}

/// Writes the rest of `r` as CSV to `out` (buffered here; flushed at the
/// end); returns the number of records written.
pub fn dump_reader(
    r: &mut ArchiveReader,
    out: &mut dyn Write,
    enc: DataEncoding,
) -> Result<u64, DumpError> {
    let mut out = BufWriter::with_capacity(64 * 1024, out);
    let mut line = Vec::with_capacity(256);
    let mut n = 0u64;
    while let Some(rec) = r.next_record()? {
        line.clear();
        // Writing to a Vec cannot fail.
        let _ = write!(line, "{},", rec.stamp);
        line.extend_from_slice(rec.device_id());
        line.push(b',');
        let (offset, len) = (rec.offset, rec.data.len());
        if enc == DataEncoding::Text {
            if let Some((at, byte)) = not_text(rec.data) {
                return Err(DumpError::Archive(ArchiveError {
                    file: r.name().to_owned(),
                    offset,
                    record: r.records_read(),
                    kind: ArchiveErrorKind::NotText { byte, at },
                }));
            }
        }
        let columns = match enc.write_values(rec.data, &mut line) {
            Ok(c) => c,
            Err(width) => {
                return Err(DumpError::Archive(ArchiveError {
                    file: r.name().to_owned(),
                    offset,
                    record: r.records_read(),
                    kind: ArchiveErrorKind::DataWidth {
                        len,
                        width,
                        encoding: enc,
                    },
                }))
            }
        };
        line.push(b'\n');
        if n == 0 {
            out.write_all(header(columns).as_bytes())
                .map_err(DumpError::Write)?;
        }
        out.write_all(&line).map_err(DumpError::Write)?;
        n += 1;
    }
    if n == 0 {
        out.write_all(header(1).as_bytes())
            .map_err(DumpError::Write)?;
    }
    out.flush().map_err(DumpError::Write)?;
    Ok(n)
}

/// The first byte of `data` that CSV text (what `series convert` stores
/// with `--data text`) cannot hold: a control character or invalid UTF-8.
fn not_text(data: &[u8]) -> Option<(usize, u8)> {
    let valid = match std::str::from_utf8(data) {
        Ok(_) => data.len(),
        Err(e) => e.valid_up_to(),
    };
    data[..valid]
        .iter()
        .position(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        .or((valid < data.len()).then_some(valid))
        .map(|at| (at, data[at]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArchiveWriter, Stamp};
    use std::io::Cursor;

    fn archive(records: &[(&str, &str, &[u8])]) -> Vec<u8> {
        let mut w = ArchiveWriter::new(Vec::new());
        for (t, d, data) in records {
            w.write_str(&Stamp::parse_iso(t).unwrap(), d, data).unwrap();
        }
        w.finish().unwrap()
    }

    fn run(bytes: Vec<u8>, enc: DataEncoding) -> (Result<u64, String>, String) {
        let mut r = ArchiveReader::from_reader("a.arc", Cursor::new(bytes));
        let mut out = Vec::new();
        let res = dump_reader(&mut r, &mut out, enc).map_err(|e| e.to_string());
        (res, String::from_utf8(out).unwrap())
    }

    #[test]
    fn text_and_binary() {
        let a = archive(&[
            ("2015-07-01T19:20:30.45+01:00", "dev1", b"a,b"),
            ("2015-07-01T19:20:30.5Z", "dev2", b"c"),
        ]);
        let (res, text) = run(a, DataEncoding::Text);
        assert_eq!(res, Ok(2));
        assert_eq!(
            text,
            "timestamp,device_id,value,value2\n\
             2015-07-01T19:20:30.450000+01:00,dev1,a,b\n\
             2015-07-01T19:20:30.500000Z,dev2,c\n"
        );
        let a = archive(&[(
            "2015-07-01T19:20:30Z",
            "d",
            &[1.5f64.to_be_bytes(), (-0.25f64).to_be_bytes()].concat(),
        )]);
        let (res, text) = run(a, DataEncoding::F64);
        assert_eq!(res, Ok(1));
        assert_eq!(
            text,
            "timestamp,device_id,value,value2\n2015-07-01T19:20:30.000000Z,d,1.5,-0.25\n"
        );
        assert_eq!(run(Vec::new(), DataEncoding::I32), (Ok(0), header(1)));
    }

    #[test]
    fn bad_width_names_the_record() {
        let a = archive(&[
            ("2015-07-01T19:20:30Z", "d", &[0, 0, 0, 1]),
            ("2015-07-01T19:20:31Z", "d", &[0, 0, 0, 1, 2]),
        ]);
        let (res, text) = run(a, DataEncoding::I32);
        assert_eq!(
            res,
            Err(
                "a.arc: record 2 at byte 34: data field of 5 bytes is not a whole number of \
                 4-byte i32 values"
                    .into()
            )
        );
        assert_eq!(
            text,
            "timestamp,device_id,value\n2015-07-01T19:20:30.000000Z,d,1\n"
        );
    }

    #[test]
    fn binary_values_dumped_as_text_are_refused_naming_the_record() {
        let a = archive(&[
            ("2015-07-01T19:20:30Z", "d", b"1.5,x\ty"),
            ("2015-07-01T19:20:31Z", "d", &1.5f64.to_be_bytes()),
        ]);
        let (res, text) = run(a, DataEncoding::Text);
        let e = res.unwrap_err();
        // 1.5 is 3f f8 00 ..: '?' then a byte UTF-8 cannot start with.
        assert!(
            e.starts_with("a.arc: record 2 at byte ")
                && e.contains(": data field is not text (byte 0xf8 at data byte 1)")
                && e.contains("--data"),
            "{e}"
        );
        assert_eq!(
            text,
            "timestamp,device_id,value,value2\n2015-07-01T19:20:30.000000Z,d,1.5,x\ty\n"
        );
        assert_eq!(not_text(&[0xff, b'a']), Some((0, 0xff)));
        assert_eq!(not_text("é,ü".as_bytes()), None);
        assert_eq!(not_text(b"a\x01"), Some((1, 1)));
    }
}
