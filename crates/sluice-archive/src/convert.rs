//! CSV → archive: [`convert_csv`] (files) and [`convert_csv_from`] (any
//! `BufRead` into an [`ArchiveWriter`]).
//!
//! The CSV has a header line starting `timestamp,device_id,` and at least
//! one value column; each row becomes one record (see
//! [`DataEncoding`] for the data field). CRLF line ends, a UTF-8 byte-order
//! mark and blank lines at the end are accepted; quotes, a blank line
//! followed by more rows and rows whose column count differs from the
//! header are refused, with the line and column named.
//!
//! Design: one pass, one reused line buffer and one reused data buffer, so
//! memory is bounded by the longest line plus the set of distinct device
//! ids. [`convert_csv`] writes atomically: a failed conversion leaves the
//! output as it was.

use sluice_sys::output::{check_paths, Output};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use super::convert_error::{Column, ConvertError, ConvertErrorKind};
use super::csv::{column_of, columns, quote, split3, Lines, MAX_LINE};
use super::encoding::DataEncoding;
use super::record::{pack_device, DEVICE_LEN, HEADER_LEN, MAX_RECORD_LEN};
use super::stamp::Stamp;
use super::stamp_error::shorten;
use super::writer::ArchiveWriter;

/// What a conversion wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertStats {
    /// Records written (= data rows).
    pub records: u64,
    /// Distinct device ids.
    pub devices: u64,
    /// Timestamp of the first record, in file order.
    pub first: Option<Stamp>,
    /// Timestamp of the last record, in file order.
    pub last: Option<Stamp>,
    /// Records whose time is earlier than the record before them (a player
    /// expects non-decreasing times).
    pub out_of_order: u64,
    /// Bytes written to the archive.
    pub bytes: u64,
}

impl ConvertStats {
    /// Microseconds from the first to the last record (0 without records).
    pub fn span_micros(&self) -> i64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.unix_micros() - a.unix_micros(),
            _ => 0,
        }
    }
}

/// Converts the CSV at `input` into an archive at `output`, written
/// atomically: into a temporary file renamed over `output` once the whole
/// conversion succeeded, so a failure leaves an existing `output` as it
/// was, and a symlink or a second writer is refused.
pub fn convert_csv(
    input: &Path,
    output: &Path,
    enc: DataEncoding,
) -> Result<ConvertStats, ConvertError> {
    let in_name = input.display().to_string();
    let out_name = output.display().to_string();
    let fail = |file: &str, kind| ConvertError {
        file: file.to_owned(),
        line: None,
        column: None,
        kind,
    };
    let file = File::open(input).map_err(|e| fail(&in_name, ConvertErrorKind::Read(e)))?;
    if check_paths(&[input], &[output]).is_err() {
        return Err(fail(&out_name, ConvertErrorKind::SameFile));
    }
    let out = Output::create(output)
        .map_err(|e| fail(&out_name, ConvertErrorKind::Write(io::Error::other(e))))?;
    let mut w = ArchiveWriter::new(BufWriter::new(out));
    let stats = convert_csv_from(BufReader::new(file), &in_name, &mut w, &out_name, enc)?;
    let write = |e| fail(&out_name, ConvertErrorKind::Write(e));
    let out = w
        .finish()
        .and_then(|b| b.into_inner().map_err(|e| e.into_error()))
        .map_err(write)?;
    out.commit().map_err(|e| write(io::Error::other(e)))?;
    Ok(stats)
}

/// Converts CSV text from `input` (named `input_name` in errors) into
/// records appended to `out` (named `output_name` in errors). The caller
/// [`finish`](ArchiveWriter::finish)es the writer.
pub fn convert_csv_from<R: BufRead, W: Write>(
    input: R,
    input_name: &str,
    out: &mut ArchiveWriter<W>,
    output_name: &str,
    enc: DataEncoding,
) -> Result<ConvertStats, ConvertError> {
    let mut c = Converter {
        lines: Lines::new(input),
        name: input_name,
        names: Vec::new(),
    };
    let mut line = Vec::new();
    c.header(&mut line)?;
    let mut stats = ConvertStats::default();
    let mut devices: HashSet<[u8; DEVICE_LEN]> = HashSet::new();
    let mut data = Vec::new();
    let mut blank: Option<u64> = None;
    let mut prev = i64::MIN;
    let start_bytes = out.bytes();
    while c.read(&mut line)? {
        if line.is_empty() {
            blank = blank.or(Some(c.lines.number));
            continue;
        }
        if let Some(at) = blank {
            return Err(c.error(Some(at), None, ConvertErrorKind::BlankLine));
        }
        let (stamp, device) = c.row(&line, enc, &mut data)?;
        out.write(&stamp, &device, &data)
            .map_err(|e| ConvertError {
                file: output_name.to_owned(),
                line: Some(c.lines.number),
                column: None,
                kind: ConvertErrorKind::Write(e),
            })?;
        let t = stamp.unix_micros();
        if t < prev {
            stats.out_of_order += 1;
        }
        prev = t;
        stats.first = stats.first.or(Some(stamp));
        stats.last = Some(stamp);
        stats.records += 1;
        devices.insert(device);
    }
    stats.devices = devices.len() as u64;
    stats.bytes = out.bytes() - start_bytes;
    Ok(stats)
}

struct Converter<'a, R> {
    lines: Lines<R>,
    name: &'a str,
    /// Column names from the header.
    names: Vec<String>,
}

impl<R: BufRead> Converter<'_, R> {
    fn error(&self, line: Option<u64>, col: Option<usize>, kind: ConvertErrorKind) -> ConvertError {
        ConvertError {
            file: self.name.to_owned(),
            line,
            column: col.map(|n| Column {
                number: n,
                name: self
                    .names
                    .get(n.wrapping_sub(1))
                    .cloned()
                    .unwrap_or_default(),
            }),
            kind,
        }
    }

    /// Errors on the current line.
    fn here(&self, col: Option<usize>, kind: ConvertErrorKind) -> ConvertError {
        self.error(Some(self.lines.number), col, kind)
    }

    /// The next line into `buf`; false at end of input.
    fn read(&mut self, buf: &mut Vec<u8>) -> Result<bool, ConvertError> {
        match self.lines.next(buf) {
            Ok(Ok(more)) => Ok(more),
            Ok(Err(_)) => Err(self.here(None, ConvertErrorKind::LineTooLong { limit: MAX_LINE })),
            Err(e) => Err(self.here(None, ConvertErrorKind::Read(e))),
        }
    }

    /// Reads and checks the header line.
    fn header(&mut self, line: &mut Vec<u8>) -> Result<(), ConvertError> {
        if !self.read(line)? {
            return Err(self.error(None, None, ConvertErrorKind::Empty));
        }
        let text = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        if let Some(at) = quote(text) {
            return Err(self.here(None, ConvertErrorKind::Quote { at: at + 1 }));
        }
        let text = String::from_utf8_lossy(text);
        self.names = text.split(',').map(str::to_owned).collect();
        if self.names.len() < 3 || self.names[0] != "timestamp" || self.names[1] != "device_id" {
            self.names.clear();
            let found = shorten(&text);
            return Err(self.here(None, ConvertErrorKind::Header { found }));
        }
        Ok(())
    }

    /// Checks one data row and encodes its values into `data`.
    fn row(
        &self,
        line: &[u8],
        enc: DataEncoding,
        data: &mut Vec<u8>,
    ) -> Result<(Stamp, [u8; DEVICE_LEN]), ConvertError> {
        if let Some(at) = quote(line) {
            let col = Some(column_of(line, at));
            return Err(self.here(col, ConvertErrorKind::Quote { at: at + 1 }));
        }
        let got = columns(line);
        let expected = self.names.len();
        let (ts, device, values) = match split3(line) {
            Some(parts) if got == expected => parts,
            _ => return Err(self.here(None, ConvertErrorKind::Columns { expected, got })),
        };
        let stamp = Stamp::parse_iso(&String::from_utf8_lossy(ts))
            .map_err(|e| self.here(Some(1), ConvertErrorKind::Stamp(e)))?;
        let device =
            pack_device(device).map_err(|e| self.here(Some(2), ConvertErrorKind::Device(e)))?;
        data.clear();
        if enc == DataEncoding::Text {
            data.extend_from_slice(values);
        } else {
            for (i, v) in values.split(|&b| b == b',').enumerate() {
                enc.push_value(v, data).map_err(|why| {
                    let text = shorten(&String::from_utf8_lossy(v));
                    self.here(Some(3 + i), ConvertErrorKind::Value { text, why })
                })?;
            }
        }
        let len = HEADER_LEN + data.len();
        if len > MAX_RECORD_LEN {
            return Err(self.here(None, ConvertErrorKind::RecordTooLong { len }));
        }
        Ok((stamp, device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// A `Write` that counts and drops bytes.
    struct Count(u64);

    impl Write for Count {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0 += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn convert(csv: &str, enc: DataEncoding) -> Result<ConvertStats, String> {
        let mut w = ArchiveWriter::new(Count(0));
        let r = convert_csv_from(csv.as_bytes(), "in.csv", &mut w, "out.arc", enc);
        let written = w.finish().map(|c| c.0).unwrap_or(0);
        match r {
            Ok(s) => {
                assert_eq!(s.bytes, written);
                Ok(s)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn stats() {
        let csv = "timestamp,device_id,value\r\n\
                   2009-08-24T00:20:03.000000Z,A,1\r\n\
                   2009-08-24T00:20:03.000000Z,B,2\r\n\
                   2009-08-24T00:20:02.500000+00:00,A,3\r\n\
                   2009-08-24T01:20:03.010000+01:00,B,4\r\n\r\n\n";
        let s = convert(csv, DataEncoding::I32).unwrap();
        assert_eq!(s.records, 4);
        assert_eq!(s.devices, 2);
        assert_eq!(s.out_of_order, 1);
        assert_eq!(s.bytes, 4 * 34);
        assert_eq!(s.span_micros(), 10_000);
        assert_eq!(s.first.unwrap().to_iso(), "2009-08-24T00:20:03.000000Z");
        assert_eq!(s.last.unwrap().to_iso(), "2009-08-24T01:20:03.010000+01:00");
        let s = convert("\u{feff}timestamp,device_id,a,b\n", DataEncoding::Text).unwrap();
        assert_eq!((s.records, s.first, s.span_micros()), (0, None, 0));
    }

    #[test]
    fn errors_name_line_and_column() {
        let head = "timestamp,device_id,value\n";
        let row = |r: &str| format!("{head}2009-08-24T00:20:03Z,A,1\n{r}\n");
        let cases = [
            ("", "in.csv: file is empty"),
            (
                "time,device_id,value\n",
                "in.csv: line 1: header line is `time,device_id,value`",
            ),
            (
                "timestamp,device_id\n",
                "in.csv: line 1: header line is `timestamp,device_id`",
            ),
            (
                "\"timestamp\",device_id,v\n",
                "in.csv: line 1: quoted fields are not supported",
            ),
        ];
        for (csv, want) in cases {
            let e = convert(csv, DataEncoding::Text).unwrap_err();
            assert!(e.starts_with(want), "{e}");
        }
        let cases = [
            (
                "2009-08-24T00:20:03Z,A",
                "line 3: 2 columns, but the header has 3",
            ),
            (
                "2009-08-24T00:20:03Z,A,1,2",
                "line 3: 4 columns, but the header has 3",
            ),
            (
                "2009-08-24T00:20:03Z,A,\"1\"",
                "line 3, column 3 (value): quoted fields are not supported (found '\"' at \
                 character 24)",
            ),
            (
                "2009-08-24 00:20:03Z,A,1",
                "line 3, column 1 (timestamp): timestamp '2009-08-24 00:20:03Z': expected 'T'",
            ),
            (
                "2009-02-29T00:20:03Z,A,1",
                "line 3, column 1 (timestamp): day 29 out of range for 2009-02 (28 days)",
            ),
            (
                "2009-08-24T00:20:03.1234567Z,A,1",
                "line 3, column 1 (timestamp): timestamp '2009-08-24T00:20:03.1234567Z': 7 \
                 fraction digits",
            ),
            (
                "2009-08-24T00:20:03Z,,1",
                "line 3, column 2 (device_id): device id is empty",
            ),
            (
                "2009-08-24T00:20:03Z,ABCDEFGHIJKLMNOPQ,1",
                "line 3, column 2 (device_id): device id is 17 bytes long, at most 16 fit",
            ),
            (
                "2009-08-24T00:20:03Z,A\0B,1",
                "line 3, column 2 (device_id): device id contains a NUL byte (at byte 1)",
            ),
            (
                "2009-08-24T00:20:03Z,A,1.5",
                "line 3, column 3 (value): '1.5' is not an integer (i32)",
            ),
            (
                "\n2009-08-24T00:20:03Z,A,1",
                "line 3: blank line inside the data",
            ),
        ];
        for (r, want) in cases {
            let e = convert(&row(r), DataEncoding::I32).unwrap_err();
            assert!(
                e.starts_with(&format!("in.csv: {want}")),
                "{e}\nwant {want}"
            );
        }
        let e = convert(
            "timestamp,device_id,x,y\n2009-08-24T00:20:03Z,A,1,zz\n",
            DataEncoding::F64,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "in.csv: line 2, column 4 (y): 'zz' is not a number (f64)"
        );
    }

    #[test]
    fn record_size_limit() {
        let fits = "x".repeat(65_505);
        let csv = format!("timestamp,device_id,v\n2009-08-24T00:20:03Z,A,{fits}\n");
        assert_eq!(convert(&csv, DataEncoding::Text).unwrap().bytes, 65_535);
        let csv = format!("timestamp,device_id,v\n2009-08-24T00:20:03Z,A,{fits}x\n");
        let e = convert(&csv, DataEncoding::Text).unwrap_err();
        assert_eq!(
            e,
            "in.csv: line 2: the record would be 65536 bytes, more than the 65535 a record can \
             hold (at most 65505 bytes of data)"
        );
        let csv = format!("timestamp,device_id,v\n{}\n", "y".repeat(MAX_LINE + 1));
        let e = convert(&csv, DataEncoding::Text).unwrap_err();
        assert_eq!(
            e,
            format!("in.csv: line 2: line is longer than {MAX_LINE} bytes")
        );
    }
}
