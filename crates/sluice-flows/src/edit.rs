//! Sessions edited and saved (FLOR §5.1: "session loading and saving").
//!
//! A session is read as a tree (key order kept), changed by [`Edit`]s and
//! written as YAML or JSON. Every index in the edits refers to the
//! session as read: sets apply first, then deletions (together), then
//! appended entries. The result is checked as `flows run` checks a
//! session before it is written, so a saved session always runs; errors
//! name the edit, or the entry and field the result got wrong.
//!
//! Round trip: what is not edited is written back as read (values,
//! types and key order), so a session saved with no edit expands to the
//! same flows and packets. YAML comments and anchors are not kept.

use serde_yaml_ng::{Mapping, Value};

use crate::{Session, SessionError};

/// Largest session `flows edit` reads: it holds the whole tree.
pub const MAX_EDIT: u64 = 64 << 20;

/// One change, as the command line gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum Edit {
    /// `PATH=VALUE`: the field at PATH (created with any mapping above
    /// it) takes VALUE, read as YAML.
    Set(String, String),
    /// `PATH`: a field, or entries (`flows[3]`, `flows[2:5]`).
    Delete(String),
    /// A flow entry, as YAML, added at the end.
    Append(String),
}

/// A session error, or an edit's.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{0}")]
    Session(#[from] SessionError),
    #[error("{edit}: {what}")]
    Edit { edit: String, what: String },
}

/// Which entries a path's `flows[...]` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entries {
    One(i64),
    /// `[a:b]`, half-open; either end may be left out.
    Range(Option<i64>, Option<i64>),
}

/// A parsed path: `seed`, or `flows[SEL]` and field names below it.
#[derive(Debug, PartialEq)]
struct Path {
    entries: Option<Entries>,
    fields: Vec<String>,
}

fn parse_path(text: &str) -> Result<Path, String> {
    let bad = |why: &str| Err(format!("path '{text}': {why}"));
    let (head, rest) = match text.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (text, None),
    };
    let mut fields: Vec<String> = match rest {
        Some(r) => r.split('.').map(str::to_string).collect(),
        None => Vec::new(),
    };
    if fields
        .iter()
        .any(|f| f.is_empty() || f.contains(['[', ']']))
    {
        return bad("expected field names between dots");
    }
    let entries = if let Some(sel) = head
        .strip_prefix("flows[")
        .and_then(|s| s.strip_suffix(']'))
    {
        let num = |s: &str| -> Result<Option<i64>, String> {
            match s.trim() {
                "" => Ok(None),
                n => n
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("path '{text}': '{n}' is not an entry index")),
            }
        };
        Some(match sel {
            "*" => Entries::Range(None, None),
            s => match s.split_once(':') {
                Some((a, b)) => Entries::Range(num(a)?, num(b)?),
                None => Entries::One(num(s)?.ok_or(format!("path '{text}': empty index"))?),
            },
        })
    } else if head == "flows" {
        return bad("name entries, as flows[3], flows[2:5] or flows[*]");
    } else {
        fields.insert(0, head.to_string());
        None
    };
    if entries.is_none() && fields.is_empty() {
        return bad("empty");
    }
    Ok(Path { entries, fields })
}

/// The indices `sel` names among `len` entries; negative ones count from
/// the end. A single index must exist; a range is clamped.
fn indices(sel: Entries, len: usize) -> Result<std::ops::Range<usize>, String> {
    let at = |i: i64| if i < 0 { len as i64 + i } else { i };
    match sel {
        Entries::One(i) => {
            let k = at(i);
            if k < 0 || k >= len as i64 {
                Err(format!("no entry {i}: the session has {len}"))
            } else {
                Ok(k as usize..k as usize + 1)
            }
        }
        Entries::Range(a, b) => {
            let clamp = |i: i64| at(i).clamp(0, len as i64) as usize;
            let (a, b) = (a.map_or(0, clamp), b.map_or(len, clamp));
            Ok(a..b.max(a))
        }
    }
}

/// Reads session text (YAML or JSON) as a tree, key order kept.
pub fn read_tree(name: &str, text: &str, yaml: bool) -> Result<Value, SessionError> {
    let syntax = |what: String| SessionError::Syntax {
        file: name.to_owned(),
        what,
    };
    sluice_source::text::check_depth(text).map_err(syntax)?;
    let tree: Value = if yaml {
        serde_yaml_ng::from_str(text).map_err(|e| syntax(e.to_string()))?
    } else {
        serde_json::from_str(text).map_err(|e| syntax(e.to_string()))?
    };
    if !tree.is_mapping() {
        return Err(syntax("expected a mapping with `flows:`".into()));
    }
    Ok(tree)
}

/// Applies `edits` to `tree` (sets, then deletions, then appends).
pub fn apply(tree: &mut Value, edits: &[Edit]) -> Result<(), EditError> {
    let err = |e: &Edit, what: String| EditError::Edit {
        edit: match e {
            Edit::Set(p, v) => format!("--set {p}={v}"),
            Edit::Delete(p) => format!("--delete {p}"),
            Edit::Append(v) => format!("--append {v}"),
        },
        what,
    };
    for e in edits {
        if let Edit::Set(p, v) = e {
            set(tree, p, v).map_err(|w| err(e, w))?;
        }
    }
    // Deletions name entries of the session as read: marked, then removed.
    let mut gone: Vec<usize> = Vec::new();
    for e in edits {
        if let Edit::Delete(p) = e {
            delete(tree, p, &mut gone).map_err(|w| err(e, w))?;
        }
    }
    if !gone.is_empty() {
        gone.sort_unstable();
        gone.dedup();
        let list = flows_mut(tree)?;
        let mut i = 0;
        list.retain(|_| {
            i += 1;
            gone.binary_search(&(i - 1)).is_err()
        });
    }
    for e in edits {
        if let Edit::Append(v) = e {
            let entry: Value = serde_yaml_ng::from_str(v).map_err(|x| err(e, x.to_string()))?;
            if !entry.is_mapping() {
                return Err(err(
                    e,
                    "expected a flow entry: {proto: ..., src: ...}".into(),
                ));
            }
            flows_mut(tree)
                .map_err(|x| err(e, x.to_string()))?
                .push(entry);
        }
    }
    Ok(())
}

fn flows_mut(tree: &mut Value) -> Result<&mut Vec<Value>, EditError> {
    let map = tree.as_mapping_mut().expect("read_tree checked the top");
    let flows = map
        .entry(Value::from("flows"))
        .or_insert_with(|| Value::Sequence(Vec::new()));
    flows.as_sequence_mut().ok_or_else(|| EditError::Edit {
        edit: "flows".into(),
        what: "expected a list of entries".into(),
    })
}

/// What a path's fields are looked up in: the top mapping, or the
/// entries `entries` selects.
fn targets(tree: &mut Value, entries: Option<Entries>) -> Result<Vec<&mut Value>, String> {
    Ok(match entries {
        None => vec![tree],
        Some(sel) => {
            let list = flows_mut(tree).map_err(|e| e.to_string())?;
            let r = indices(sel, list.len())?;
            list[r].iter_mut().collect()
        }
    })
}

fn set(tree: &mut Value, path: &str, value: &str) -> Result<(), String> {
    let p = parse_path(path)?;
    let value: Value = serde_yaml_ng::from_str(value).map_err(|e| format!("value: {e}"))?;
    if p.fields.is_empty() {
        return Err(format!(
            "path '{path}': name a field of the entries, or give --append"
        ));
    }
    let targets = targets(tree, p.entries)?;
    for t in targets {
        let mut at = t;
        for (k, f) in p.fields.iter().enumerate() {
            let map = at.as_mapping_mut().ok_or_else(|| {
                format!(
                    "path '{path}': '{}' is not a mapping",
                    p.fields[..k].join(".")
                )
            })?;
            at = map
                .entry(Value::from(f.as_str()))
                .or_insert(Value::Mapping(Mapping::new()));
        }
        *at = value.clone();
    }
    Ok(())
}

fn delete(tree: &mut Value, path: &str, gone: &mut Vec<usize>) -> Result<(), String> {
    let p = parse_path(path)?;
    let Some((last, above)) = p.fields.split_last() else {
        let list = flows_mut(tree).map_err(|e| e.to_string())?;
        let sel = p.entries.expect("a path names entries or fields");
        gone.extend(indices(sel, list.len())?);
        return Ok(());
    };
    let targets = targets(tree, p.entries)?;
    let mut found = false;
    for t in targets {
        let mut at = Some(t);
        for f in above {
            at = at
                .and_then(|v| v.as_mapping_mut())
                .and_then(|m| m.get_mut(f.as_str()));
        }
        if let Some(m) = at.and_then(|v| v.as_mapping_mut()) {
            found |= m.remove(last.as_str()).is_some();
        }
    }
    if found {
        Ok(())
    } else {
        Err(format!("path '{path}': no such field"))
    }
}

/// The tree as session text: YAML, or pretty JSON.
pub fn write_tree(tree: &Value, yaml: bool) -> Result<String, String> {
    if yaml {
        serde_yaml_ng::to_string(tree).map_err(|e| e.to_string())
    } else {
        serde_json::to_string_pretty(tree)
            .map(|s| s + "\n")
            .map_err(|e| e.to_string())
    }
}

/// Reads, edits, checks and renders a session: the text to save as
/// `out_name` (YAML when `out_yaml`), and the session it holds.
pub fn edit(
    name: &str,
    text: &str,
    yaml: bool,
    edits: &[Edit],
    out_name: &str,
    out_yaml: bool,
) -> Result<(String, Session), EditError> {
    let mut tree = read_tree(name, text, yaml)?;
    apply(&mut tree, edits)?;
    let out = write_tree(&tree, out_yaml).map_err(|what| SessionError::Syntax {
        file: out_name.to_owned(),
        what,
    })?;
    // Checked as `flows run` will read it.
    let session = Session::parse(out_name, &out, out_yaml)?;
    Ok((out, session))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "seed: 7\nflows:\n  - proto: udp4\n    src: 10.0.0.1\n    dst: 10.0.0.2\n    packets: 10\n    pps: 100\n    payload: [64, 128]\n  - proto: tcp4\n    src: 10.0.0.3\n    dst: 10.0.0.4\n    packets: 1\n    prefix: {hex: \"de ad\"}\n    count: 3\n    period: 1ms\n    vary: {sport: [1024, 2048]}\n";

    fn run(edits: &[Edit], yaml: bool) -> Result<(String, Session), EditError> {
        edit(
            "in.yaml",
            S,
            true,
            edits,
            if yaml { "o.yaml" } else { "o.json" },
            yaml,
        )
    }

    #[test]
    fn saved_unedited_the_session_reads_back_the_same() {
        let direct = Session::parse("in.yaml", S, true).unwrap();
        let (y, from_yaml) = run(&[], true).unwrap();
        let (j, from_json) = run(&[], false).unwrap();
        for s in [&from_yaml, &from_json] {
            assert_eq!(format!("{:?}", s.flows), format!("{:?}", direct.flows));
            assert_eq!(s.seed, direct.seed);
        }
        // YAML -> JSON -> YAML gives the same text as YAML -> YAML.
        let (back, _) = edit("o.json", &j, false, &[], "b.yaml", true).unwrap();
        assert_eq!(back, y);
        let (again, _) = edit("o.yaml", &y, true, &[], "c.yaml", true).unwrap();
        assert_eq!(again, y);
    }

    #[test]
    fn edits_change_what_they_name_and_no_more() {
        let (_, s) = run(
            &[
                Edit::Set("flows[0].pps".into(), "250".into()),
                Edit::Set("flows[*].dport".into(), "53".into()),
                Edit::Set("flows[-1].vary.src".into(), "10.9.0.0/16".into()),
                Edit::Set("seed".into(), "9".into()),
                Edit::Delete("flows[1].prefix".into()),
                Edit::Append(
                    "{proto: icmp4, src: 10.0.0.5, dst: 10.0.0.6, packets: 2, spp: 1}".into(),
                ),
            ],
            true,
        )
        .unwrap();
        let want = Session::parse(
            "w.yaml",
            "seed: 9\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 10, pps: 250, payload: [64, 128], dport: 53}\n  - {proto: tcp4, src: 10.0.0.3, dst: 10.0.0.4, packets: 1, count: 3, period: 1ms, vary: {sport: [1024, 2048], src: 10.9.0.0/16}, dport: 53}\n  - {proto: icmp4, src: 10.0.0.5, dst: 10.0.0.6, packets: 2, spp: 1}\n",
            true,
        )
        .unwrap();
        assert_eq!(format!("{:?}", s.flows), format!("{:?}", want.flows));
        assert_eq!(s.seed, Some(9));
        // Deletions name entries as read, whatever their order.
        let (_, s) = run(
            &[
                Edit::Delete("flows[1]".into()),
                Edit::Delete("flows[0:1]".into()),
                Edit::Append("{proto: udp4, src: 1.1.1.1, dst: 2.2.2.2, packets: 1}".into()),
            ],
            true,
        )
        .unwrap();
        assert_eq!(s.flows.len(), 1);
        let (_, s) = run(
            &[
                Edit::Delete("flows[1]".into()),
                Edit::Append("{proto: udp4, src: 1.1.1.1, dst: 2.2.2.2, packets: 1}".into()),
            ],
            true,
        )
        .unwrap();
        assert_eq!(s.flows.len(), 2);
        assert_eq!(s.flows[1].src.to_string(), "1.1.1.1");
    }

    #[test]
    fn bad_edits_and_bad_results_name_the_key() {
        for (e, want) in [
            (
                Edit::Set("flows[5].pps".into(), "1".into()),
                "--set flows[5].pps=1: no entry 5: the session has 2",
            ),
            (
                Edit::Set("flows.pps".into(), "1".into()),
                "--set flows.pps=1: path 'flows.pps': name entries",
            ),
            (
                Edit::Set("flows[x].pps".into(), "1".into()),
                "'x' is not an entry index",
            ),
            (
                Edit::Set("flows[0].payload.min".into(), "1".into()),
                "'payload' is not a mapping",
            ),
            (
                Edit::Delete("flows[0].nope".into()),
                "--delete flows[0].nope: path 'flows[0].nope': no such field",
            ),
            (
                Edit::Append("[1, 2]".into()),
                "--append [1, 2]: expected a flow entry",
            ),
            (
                Edit::Set("flows[0].pps".into(), "0".into()),
                "o.yaml: flows[0]: pps",
            ),
            (Edit::Set("flows[1].colour".into(), "red".into()), "o.yaml"),
        ] {
            let got = run(std::slice::from_ref(&e), true).unwrap_err().to_string();
            assert!(got.contains(want), "{e:?}: {got}");
        }
    }
}
