//! Text inputs we did not write (sessions, mappings, flow records) are
//! read with bounds: a size checked before and while reading (`/dev/zero`
//! is refused, not read until memory runs out), and a nesting depth
//! checked before YAML or JSON is parsed (a document nested 100 000 deep
//! took the parser half a minute to refuse).

use serde::Deserialize;
use sluice_core::{parse_duration, Nanos};
use std::io::Read;
use std::path::Path;

/// A time: a duration with its unit (`1.5ms`). A bare number is refused
/// (as on the command line), 0 excepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "TimeRepr")]
pub struct Time(pub Nanos);

#[derive(Deserialize)]
#[serde(untagged)]
enum TimeRepr {
    Ns(u64),
    Text(String),
}

impl TryFrom<TimeRepr> for Time {
    type Error = String;
    fn try_from(r: TimeRepr) -> Result<Self, String> {
        match r {
            TimeRepr::Ns(0) => Ok(Time(Nanos(0))),
            TimeRepr::Ns(n) => Err(format!(
                "{n}: a bare number needs a unit: {n}ns, {n}us, {n}ms or {n}s"
            )),
            TimeRepr::Text(s) => parse_duration(&s).map(Time).map_err(|e| e.to_string()),
        }
    }
}

/// Largest session or mapping file.
pub const MAX_TEXT: u64 = 256 << 20;
/// Deepest nesting of `[` and `{` a session or mapping may use.
pub const MAX_DEPTH: usize = 64;

/// Reads at most `limit` bytes of UTF-8 text from `path`. Errors say what
/// is wrong (the limit, or the byte where the text stops being UTF-8); the
/// caller names the file.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    if let Ok(m) = file.metadata() {
        if m.is_file() && m.len() > limit {
            return Err(format!(
                "{} bytes, more than the {} MiB a text input may have",
                m.len(),
                limit >> 20
            ));
        }
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "more than the {} MiB a text input may have",
            limit >> 20
        ));
    }
    String::from_utf8(bytes)
        .map_err(|e| format!("byte {}: not UTF-8 text", e.utf8_error().valid_up_to()))
}

/// Refuses YAML or JSON nested deeper than [`MAX_DEPTH`] flow collections
/// (`[`, `{` outside quoted strings), naming the line.
pub fn check_depth(text: &str) -> Result<(), String> {
    let (mut depth, mut line) = (0usize, 1usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!(
                        "line {line}: nested deeper than {MAX_DEPTH} levels"
                    ));
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_not_read_forever() {
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.starts_with("more than the 1 MiB"), "{e}");
    }

    #[test]
    fn a_large_file_is_refused_before_it_is_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.yaml");
        std::fs::write(&p, vec![b'#'; 2 << 20]).unwrap();
        let e = read_bounded(&p, 1 << 20).unwrap_err();
        assert!(e.contains("2097152 bytes"), "{e}");
    }

    #[test]
    fn deep_nesting_is_refused_naming_the_line_and_quotes_are_skipped() {
        let deep = format!("a: 1\nb: {}", "[".repeat(100_000));
        let e = check_depth(&deep).unwrap_err();
        assert_eq!(e, "line 2: nested deeper than 64 levels");
        let quoted = format!("prefix: \"{}\"", "[".repeat(1000));
        assert!(check_depth(&quoted).is_ok());
        assert!(check_depth("flows: [{a: [1, 2]}, {b: 'x[y'}]").is_ok());
    }
}
