//! [`DataEncoding`]: how CSV value columns become the opaque data field and
//! back.
//!
//! - `text`: the value columns exactly as written, joined by `,` (the raw
//!   bytes of the line after the device id).
//! - `i32`, `f32`, `f64`: each value column as one big-endian binary number
//!   (4, 4 or 8 bytes); the data field holds them back to back.
//!
//! Design: dumping prints integers in decimal and floats in Rust's shortest
//! round-trip form (`{:?}`: `0.0`, `-0.014433638570430245`, `1e-7`), so
//! parsing the dump gives back the same bits; the text may differ from the
//! original CSV (`1e-07`, `+5`), the number does not.

use std::fmt;
use std::io::Write;
use std::num::{IntErrorKind, ParseIntError};
use std::str::FromStr;

/// How the value columns of a CSV row are stored in a record's data field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DataEncoding {
    /// The columns' text, joined by `,`.
    #[default]
    Text,
    /// Big-endian `i32` per column.
    I32,
    /// Big-endian IEEE 754 `f32` per column.
    F32,
    /// Big-endian IEEE 754 `f64` per column.
    F64,
}

impl DataEncoding {
    /// All encodings.
    pub const ALL: [DataEncoding; 4] = [
        DataEncoding::Text,
        DataEncoding::I32,
        DataEncoding::F32,
        DataEncoding::F64,
    ];

    /// Bytes per value for the binary encodings; `None` for text.
    pub fn width(self) -> Option<usize> {
        match self {
            DataEncoding::Text => None,
            DataEncoding::I32 | DataEncoding::F32 => Some(4),
            DataEncoding::F64 => Some(8),
        }
    }

    /// The name `FromStr` accepts: `text`, `i32`, `f32`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            DataEncoding::Text => "text",
            DataEncoding::I32 => "i32",
            DataEncoding::F32 => "f32",
            DataEncoding::F64 => "f64",
        }
    }

    /// Appends the binary form of one value column to `out`. Text is
    /// appended as is. The error says what the text is not.
    pub(crate) fn push_value(self, text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
        if self == DataEncoding::Text {
            out.extend_from_slice(text);
            return Ok(());
        }
        let s = std::str::from_utf8(text).map_err(|_| "is not UTF-8 text")?;
        match self {
            DataEncoding::Text => {}
            DataEncoding::I32 => {
                let v: i32 = s.parse().map_err(|e: ParseIntError| match e.kind() {
                    IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => {
                        "is outside the i32 range"
                    }
                    _ => "is not an integer (i32)",
                })?;
                out.extend_from_slice(&v.to_be_bytes());
            }
            DataEncoding::F32 => {
                let v: f32 = s.parse().map_err(|_| "is not a number (f32)")?;
                if v.is_infinite() && !says_infinity(s) {
                    return Err("is outside the f32 range");
                }
                out.extend_from_slice(&v.to_be_bytes());
            }
            DataEncoding::F64 => {
                let v: f64 = s.parse().map_err(|_| "is not a number (f64)")?;
                if v.is_infinite() && !says_infinity(s) {
                    return Err("is outside the f64 range");
                }
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
        Ok(())
    }

    /// Writes the value columns of a data field (comma-separated) to `out`.
    /// Returns the number of columns, or `Err(width)` when a binary field is
    /// not a whole number of values.
    pub(crate) fn write_values(self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, usize> {
        let Some(width) = self.width() else {
            out.extend_from_slice(data);
            return Ok(1 + data.iter().filter(|&&b| b == b',').count());
        };
        if !data.len().is_multiple_of(width) {
            return Err(width);
        }
        for (i, v) in data.chunks_exact(width).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing to a Vec cannot fail; chunks have exactly `width` bytes.
            let _ = match (self, v) {
                (DataEncoding::I32, &[a, b, c, d]) => {
                    write!(out, "{}", i32::from_be_bytes([a, b, c, d]))
                }
                (DataEncoding::F32, &[a, b, c, d]) => {
                    write!(out, "{:?}", f32::from_be_bytes([a, b, c, d]))
                }
                (DataEncoding::F64, &[a, b, c, d, e, f, g, h]) => {
                    write!(out, "{:?}", f64::from_be_bytes([a, b, c, d, e, f, g, h]))
                }
                _ => Ok(()),
            };
        }
        Ok((data.len() / width).max(1))
    }
}

impl fmt::Display for DataEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a float's text asks for infinity (`inf`, `-Infinity`): a finite
/// number that overflows to infinity is an error, not a value.
fn says_infinity(s: &str) -> bool {
    let t = s.trim().trim_start_matches(['+', '-']);
    t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity")
}

/// Parses `text`, `i32`, `f32` or `f64` (as clap values).
impl FromStr for DataEncoding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DataEncoding::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| format!("unknown data encoding '{s}': use text, i32, f32 or f64"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(enc: DataEncoding, text: &str) -> String {
        let mut bin = Vec::new();
        enc.push_value(text.as_bytes(), &mut bin).unwrap();
        let mut out = Vec::new();
        assert_eq!(enc.write_values(&bin, &mut out), Ok(1));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn names_parse_back() {
        for e in DataEncoding::ALL {
            assert_eq!(e.to_string().parse::<DataEncoding>(), Ok(e));
        }
        assert!("I32"
            .parse::<DataEncoding>()
            .unwrap_err()
            .contains("text, i32"));
    }

    #[test]
    fn values_round_trip() {
        assert_eq!(round(DataEncoding::I32, "-363"), "-363");
        assert_eq!(round(DataEncoding::I32, "+5"), "5");
        assert_eq!(round(DataEncoding::I32, "-2147483648"), "-2147483648");
        assert_eq!(round(DataEncoding::F64, "0.0"), "0.0");
        assert_eq!(
            round(DataEncoding::F64, "-0.014433638570430245"),
            "-0.014433638570430245"
        );
        assert_eq!(round(DataEncoding::F64, "1e-07"), "1e-7");
        assert_eq!(round(DataEncoding::F32, "0.1"), "0.1");
        assert_eq!(round(DataEncoding::F32, "-0"), "-0.0");
        assert_eq!(round(DataEncoding::Text, " a b"), " a b");
        let mut bin = vec![];
        DataEncoding::F64.push_value(b"1.5", &mut bin).unwrap();
        assert_eq!(bin, 1.5f64.to_be_bytes());
    }

    #[test]
    fn bad_values_say_why() {
        let err =
            |e: DataEncoding, t: &str| e.push_value(t.as_bytes(), &mut Vec::new()).unwrap_err();
        assert_eq!(err(DataEncoding::I32, "1.5"), "is not an integer (i32)");
        assert_eq!(err(DataEncoding::I32, "abc"), "is not an integer (i32)");
        assert_eq!(err(DataEncoding::I32, ""), "is not an integer (i32)");
        assert_eq!(
            err(DataEncoding::I32, "2147483648"),
            "is outside the i32 range"
        );
        assert_eq!(
            err(DataEncoding::I32, "-2147483649"),
            "is outside the i32 range"
        );
        assert_eq!(err(DataEncoding::F64, "1,5"), "is not a number (f64)");
        assert_eq!(err(DataEncoding::F32, "x"), "is not a number (f32)");
        assert_eq!(err(DataEncoding::F32, "\u{fffd}"), "is not a number (f32)");
        assert_eq!(err(DataEncoding::F32, "1e400"), "is outside the f32 range");
        assert_eq!(
            err(DataEncoding::F32, "-3.5e38"),
            "is outside the f32 range"
        );
        assert_eq!(err(DataEncoding::F64, "1e400"), "is outside the f64 range");
        assert!(DataEncoding::F32
            .push_value(b"-inf", &mut Vec::new())
            .is_ok());
        assert_eq!(
            DataEncoding::F64.push_value(&[0xff], &mut Vec::new()),
            Err("is not UTF-8 text")
        );
    }

    #[test]
    fn several_columns_and_bad_widths() {
        let mut out = Vec::new();
        let data = [1i32.to_be_bytes(), (-2i32).to_be_bytes()].concat();
        assert_eq!(DataEncoding::I32.write_values(&data, &mut out), Ok(2));
        assert_eq!(out, b"1,-2");
        assert_eq!(DataEncoding::I32.write_values(&data[..7], &mut out), Err(4));
        assert_eq!(DataEncoding::F64.write_values(&data[..4], &mut out), Err(8));
        let mut out = Vec::new();
        assert_eq!(DataEncoding::Text.write_values(b"a,b,c", &mut out), Ok(3));
        assert_eq!(DataEncoding::F32.write_values(b"", &mut out), Ok(1));
    }
}
