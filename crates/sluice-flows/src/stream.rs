//! Large YAML sessions, read one entry at a time.
//!
//! A YAML parser builds the whole document before it is deserialized:
//! about fifteen times the text, for a session of a million standalone
//! entries. A session larger than [`STREAM_ABOVE`] whose `flows:` is a
//! block sequence (`- ` items, the form `flows import` writes) is read
//! line by line instead: each item is parsed on its own and kept as its
//! [`FlowEntry`], so memory is the entries, not the text or its tree. The
//! entries are admitted against the memory budget as they are read.
//!
//! What this reader does not take, the whole-document parser does (a
//! session no larger than [`STREAM_ABOVE`]): `flows:` as a flow sequence
//! (`[...]`), and anchors or aliases shared between entries.

use super::session::{FlowEntry, Session, SessionError};
use std::io::BufRead;
use std::path::Path;

/// Sessions up to this size are parsed whole (same results, simpler
/// errors); larger ones are streamed.
pub const STREAM_ABOVE: u64 = 4 << 20;

/// Longest line read.
const MAX_LINE: u64 = 1 << 20;

/// Reads a YAML session entry by entry. `budget` bounds the memory the
/// entries take. Errors name the file and line.
pub fn read_yaml(
    name: &str,
    mut input: impl BufRead,
    budget: u64,
) -> Result<Session, SessionError> {
    let syntax = |what: String| SessionError::Syntax {
        file: name.to_owned(),
        what,
    };
    let mut head = String::new();
    let mut flows: Vec<FlowEntry> = Vec::new();
    let mut seen_flows = false;
    // The item being read: its first line number, its indent and its text.
    let mut item: Option<(usize, usize, String)> = None;
    let mut in_flows = false;
    let mut buf = String::new();
    let mut line = 0usize;
    let per_entry = std::mem::size_of::<FlowEntry>() as u64;
    let finish = |item: &mut Option<(usize, usize, String)>,
                  flows: &mut Vec<FlowEntry>|
     -> Result<(), SessionError> {
        let Some((first, _, text)) = item.take() else {
            return Ok(());
        };
        let entry: FlowEntry =
            serde_yaml_ng::from_str(&text).map_err(|e| syntax(rebase(&e, first, flows.len())))?;
        if (flows.len() as u64 + 1) * per_entry > budget {
            return Err(syntax(format!(
                "line {first}: flows[{}]: more entries than the memory budget of {} MiB holds \
                 (half of the available memory)",
                flows.len(),
                budget >> 20
            )));
        }
        flows.push(entry);
        Ok(())
    };
    loop {
        buf.clear();
        line += 1;
        let n = std::io::Read::take(&mut input, MAX_LINE + 1)
            .read_line(&mut buf)
            .map_err(|e| syntax(format!("line {line}: {e}")))?;
        if n == 0 {
            break;
        }
        if n as u64 > MAX_LINE {
            return Err(syntax(format!("line {line}: longer than {MAX_LINE} bytes")));
        }
        let l = buf.trim_end_matches(['\n', '\r']);
        let body = l.trim_start_matches(' ');
        let indent = l.len() - body.len();
        if body.starts_with('\t') {
            return Err(syntax(format!("line {line}: a tab indents the line")));
        }
        let blank = body.is_empty() || body.starts_with('#');
        if in_flows {
            let is_item = body == "-" || body.starts_with("- ");
            match &mut item {
                _ if blank => continue,
                Some((_, at, text)) if indent > *at => {
                    text.push_str(l);
                    text.push('\n');
                    continue;
                }
                Some((_, at, _)) if indent == *at && is_item => {}
                None if is_item => {}
                _ if indent == 0 => {}
                _ => {
                    return Err(syntax(format!(
                        "line {line}: not an entry of the flows list (indented as no item is)"
                    )))
                }
            }
            finish(&mut item, &mut flows)?;
            if is_item && (indent > 0 || l.starts_with('-')) {
                // The item's text, its dash turned into a space: a mapping
                // indented as it was.
                let mut text = String::with_capacity(l.len() + 1);
                text.push_str(&l[..indent]);
                text.push(' ');
                text.push_str(&l[indent + 1..]);
                text.push('\n');
                item = Some((line, indent, text));
                continue;
            }
            in_flows = false;
        }
        if blank {
            continue;
        }
        if indent == 0 && is_flows_key(body) {
            if seen_flows {
                return Err(syntax(format!("line {line}: a second 'flows' key")));
            }
            seen_flows = true;
            in_flows = true;
            continue;
        }
        head.push_str(l);
        head.push('\n');
    }
    finish(&mut item, &mut flows)?;
    if !seen_flows {
        return Err(syntax("missing field `flows`".into()));
    }
    head.push_str("flows: []\n");
    let mut s: Session = serde_yaml_ng::from_str(&head).map_err(|e| syntax(e.to_string()))?;
    sluice_wire::encap::check(&s.encap).map_err(syntax)?;
    s.flows = flows;
    s.name = name.to_owned();
    let engine = s.field_engine()?;
    let lens = s.layer_lens()?;
    for (i, f) in s.flows.iter().enumerate() {
        s.check_built(engine.as_ref(), lens, f)
            .map_err(|what| s.entry_error(i, what))?;
    }
    Ok(s)
}

/// `flows:` alone on its line (a comment may follow): a block sequence.
/// `flows: [...]` is not, and is left to the whole-document parser.
fn is_flows_key(body: &str) -> bool {
    body.strip_prefix("flows:").is_some_and(|rest| {
        let rest = rest.trim_start();
        rest.is_empty() || rest.starts_with('#')
    })
}

/// An item's parse error, its position moved from the item's text to the
/// file's (item text line 1 is file line `first`).
fn rebase(e: &serde_yaml_ng::Error, first: usize, index: usize) -> String {
    let text = e.to_string();
    match e.location() {
        Some(loc) => {
            let at = format!(" at line {} column {}", loc.line(), loc.column());
            let what = text.replace(&at, "");
            format!(
                "flows[{index}]: {what} at line {} column {}",
                first + loc.line() - 1,
                loc.column()
            )
        }
        None => format!("line {first}: flows[{index}]: {text}"),
    }
}

impl Session {
    /// Reads a session: YAML (`.yaml`/`.yml`) or JSON (anything else).
    pub fn load(path: &Path) -> Result<Session, SessionError> {
        let file = path.display().to_string();
        let read = |error| SessionError::Read {
            file: file.clone(),
            error,
        };
        let meta = std::fs::metadata(path).map_err(read)?;
        if sluice_source::is_yaml(path) && meta.is_file() && meta.len() > STREAM_ABOVE {
            let f = std::fs::File::open(path).map_err(read)?;
            let budget = sluice_sys::mem::default_budget();
            let s = read_yaml(&file, std::io::BufReader::new(f), budget)?;
            return s.checked();
        }
        let text = sluice_source::text::read_bounded(path, sluice_source::text::MAX_TEXT).map_err(
            |what| SessionError::Syntax {
                file: file.clone(),
                what,
            },
        )?;
        Session::parse(&file, &text, sluice_source::is_yaml(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(text: &str) -> (Session, Session) {
        let whole = Session::parse("s.yaml", text, true).expect("parses whole");
        let streamed = read_yaml("s.yaml", text.as_bytes(), u64::MAX).expect("streams");
        (whole, streamed)
    }

    fn same(text: &str) {
        let (a, b) = both(text);
        assert_eq!(a.seed, b.seed);
        assert_eq!(a.encap, b.encap);
        assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows), "{text}");
    }

    #[test]
    fn streamed_sessions_read_as_the_whole_document_does() {
        same("seed: 3\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 3, pps: 5}\n  - {proto: tcp4, src: 10.0.0.1, dst: 10.0.0.3, packets: 1, start: 1ms}\n");
        // Block mappings, comments, blank lines, items at column 0, the seed after.
        same("# a session\nflows: # the list\n- proto: udp4\n  src: 10.0.0.1\n\n  # comment\n  dst: 10.0.0.2\n  packets: 5\n  spp: 2\n  vary:\n    sport: [1, 9]\n- proto: icmp4\n  src: 10.0.0.1\n  dst: 10.0.0.2\n  packets: 2\n  pps: 10\nseed: 9\n");
        same("encap: [{vlan: 7}]\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 3, pps: 5}\n");
        same("flows:\n    -   proto: udp6\n        src: '::1'\n        dst: '::2'\n        packets: 4\n        pps: 1\n        prefix: {hex: 'beef'}\n");
        let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/sessions/mixed.yaml");
        same(&std::fs::read_to_string(example).expect("the example session"));
    }

    #[test]
    fn errors_name_the_file_line_and_entry() {
        let text = "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 3}\n  - proto: udp4\n    src: 10.0.0.1\n    dst: 10.0.0.2\n    packts: 3\n";
        let e = read_yaml("s.yaml", text.as_bytes(), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.yaml: flows[1]: unknown field `packts`"),
            "{e}"
        );
        assert!(e.contains("at line 6 column 5"), "{e}");
        let e = read_yaml(
            "s.yaml",
            "encap: [{vlan: 4095}]\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 3}\n".as_bytes(),
            u64::MAX,
        )
        .unwrap_err();
        assert!(e.to_string().contains("encap[0].vlan.id: 4095"), "{e}");
        // The largest packet and its tunnel fit an IP packet.
        let big = "encap: [{ipip: {src: 10.0.0.1, dst: 10.0.0.2}}]\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 3, pps: 5, payload: [1, 65500]}\n";
        let e = read_yaml("s.yaml", big.as_bytes(), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "flows[0]: a payload of 65500 bytes behind 28 bytes of headers and 20 of encap"
            ),
            "{e}"
        );
        let e = Session::parse("s.yaml", big, true).unwrap_err().to_string();
        assert!(e.contains("a payload of 65500 bytes"), "{e}");
        let e = read_yaml("s.yaml", "seed: 1\n".as_bytes(), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `flows`"), "{e}");
        let e = read_yaml("s.yaml", "flows:\n  - {}\n flows: 1\n".as_bytes(), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") || e.contains("line 3"), "{e}");
        let e = read_yaml("s.yaml", "flows:\nflows:\n".as_bytes(), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2: a second 'flows' key"), "{e}");
    }

    #[test]
    fn entries_beyond_the_memory_budget_are_refused_naming_the_line() {
        let mut text = String::from("flows:\n");
        for _ in 0..100 {
            text.push_str("  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 3}\n");
        }
        let budget = 10 * std::mem::size_of::<FlowEntry>() as u64;
        let e = read_yaml("s.yaml", text.as_bytes(), budget)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 12: flows[10]: more entries than the memory budget"),
            "{e}"
        );
    }
}
