//! The CSV side of conversion: bounded line reading and column splitting.
//!
//! Design: the input is simple by contract (header `timestamp,device_id,
//! value...`, comma-separated, no quoting), so a hand-written splitter on
//! bytes is enough and keeps the crate free of a CSV dependency. Quotes are
//! refused rather than misread. Lines are read with a length cap, so a file
//! without newlines cannot make the converter buffer all of it.

use std::io::{self, BufRead, Read};

/// Longest line accepted (a record's data is at most 65505 bytes, and even
/// 16383 `i32` columns of 11 characters fit far below this).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Reads `\n`-terminated lines (a `\r` before the `\n` is dropped) and
/// counts them from 1.
pub(crate) struct Lines<R> {
    r: R,
    /// Number of the line last read.
    pub(crate) number: u64,
}

/// A line too long to be a record.
pub(crate) struct TooLong;

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(r: R) -> Self {
        Lines { r, number: 0 }
    }

    /// Reads the next line into `buf` (without its line end). `Ok(false)`
    /// at end of input.
    pub(crate) fn next(&mut self, buf: &mut Vec<u8>) -> io::Result<Result<bool, TooLong>> {
        buf.clear();
        let n = (&mut self.r)
            .take(MAX_LINE as u64 + 2)
            .read_until(b'\n', buf)?;
        if n == 0 {
            return Ok(Ok(false));
        }
        self.number += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        if buf.len() > MAX_LINE {
            return Ok(Err(TooLong));
        }
        Ok(Ok(true))
    }
}

/// The 1-based column of byte `at` in `line`.
pub(crate) fn column_of(line: &[u8], at: usize) -> usize {
    1 + line[..at.min(line.len())]
        .iter()
        .filter(|&&b| b == b',')
        .count()
}

/// Number of columns in `line`.
pub(crate) fn columns(line: &[u8]) -> usize {
    1 + line.iter().filter(|&&b| b == b',').count()
}

/// Byte offset of the first `"` in `line`, if any.
pub(crate) fn quote(line: &[u8]) -> Option<usize> {
    line.iter().position(|&b| b == b'"')
}

/// Splits a data line into timestamp, device id and the rest (the value
/// columns as written). `None` with fewer than three columns.
pub(crate) fn split3(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let a = line.iter().position(|&b| b == b',')?;
    let (ts, rest) = (&line[..a], &line[a + 1..]);
    let b = rest.iter().position(|&b| b == b',')?;
    Some((ts, &rest[..b], &rest[b + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_crlf_and_last_line_without_newline() {
        let mut l = Lines::new(&b"a,b\r\nc\n\nd"[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Ok(true) = l.next(&mut buf).unwrap() {
            got.push((l.number, String::from_utf8(buf.clone()).unwrap()));
        }
        assert_eq!(
            got,
            [
                (1, "a,b".into()),
                (2, "c".into()),
                (3, "".into()),
                (4, "d".into())
            ]
        );
    }

    #[test]
    fn long_lines_are_cut_off() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut l = Lines::new(&long[..]);
        let mut buf = Vec::new();
        assert!(l.next(&mut buf).unwrap().is_err());
        assert!(buf.len() <= MAX_LINE + 2);
        let mut ok = vec![b'x'; MAX_LINE];
        ok.extend_from_slice(b"\r\n");
        assert!(matches!(
            Lines::new(&ok[..]).next(&mut buf).unwrap(),
            Ok(true)
        ));
        assert_eq!(buf.len(), MAX_LINE);
    }

    #[test]
    fn splitting() {
        assert_eq!(
            split3(b"t,d,1,2"),
            Some((&b"t"[..], &b"d"[..], &b"1,2"[..]))
        );
        assert_eq!(split3(b"t,d,"), Some((&b"t"[..], &b"d"[..], &b""[..])));
        assert_eq!(split3(b"t,d"), None);
        assert_eq!(columns(b"a,,b"), 3);
        assert_eq!(column_of(b"a,\"b", 2), 2);
        assert_eq!(quote(b"a,\"b"), Some(2));
    }
}
