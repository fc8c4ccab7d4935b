//! Checks sluice's JSON outputs against `docs/schema/`: every document
//! names its kind and version (`"schema": "sluice.<kind>/<version>"`) and
//! must validate against `docs/schema/<kind>.json` (whose `schema` const
//! holds the version it describes), which refers to `common.json` for
//! the shapes every kind shares.

use serde_json::Value;
use std::fs;

/// The schema documents of `docs/schema/`, keyed by `$id`.
fn schemas() -> Vec<(String, Value)> {
    let dir = crate::repo_root().join("docs/schema");
    let mut out = Vec::new();
    for e in fs::read_dir(&dir).expect("docs/schema exists") {
        let path = e.expect("a readable directory entry").path();
        if path.extension().is_some_and(|x| x == "json") {
            let text = fs::read_to_string(&path).expect("a readable schema file");
            let v: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
            let id = v["$id"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: no $id", path.display()))
                .to_string();
            out.push((id, v));
        }
    }
    out
}

/// The `schema` tag (kind and version) each file of `docs/schema/`
/// describes, by file name; `common.json`, shared by the others, has none.
pub fn schema_tags() -> Vec<(String, String)> {
    schemas()
        .into_iter()
        .filter_map(|(id, v)| {
            let file = id.rsplit('/').next()?.to_string();
            let tag = v["properties"]["schema"]["const"].as_str()?.to_string();
            Some((file, tag))
        })
        .collect()
}

/// What is wrong with `doc` (empty when it is valid): an unknown or
/// missing `schema` tag, or each violation with its JSON pointer.
pub fn schema_errors(doc: &Value) -> Vec<String> {
    let Some(tag) = doc.get("schema").and_then(Value::as_str) else {
        return vec!["no \"schema\" key".into()];
    };
    let Some(kind) = tag
        .strip_prefix("sluice.")
        .and_then(|k| k.rsplit_once('/'))
        .map(|(kind, _version)| kind)
    else {
        return vec![format!("schema: unknown tag {tag:?}")];
    };
    let all = schemas();
    let id = format!("https://sluice.invalid/schema/{kind}.json");
    if !all.iter().any(|(i, _)| *i == id) {
        return vec![format!("schema: no docs/schema/{kind}.json for {tag:?}")];
    }
    // Every schema in the registry (they refer to each other), the
    // document checked against its own by reference.
    let schema = serde_json::json!({ "$ref": id });
    let registry = all
        .iter()
        .fold(jsonschema::Registry::new(), |r, (i, v)| {
            r.add(i, v.clone())
                .unwrap_or_else(|e| panic!("docs/schema: {i}: {e}"))
        })
        .prepare()
        .unwrap_or_else(|e| panic!("docs/schema: the schemas do not form a registry: {e}"));
    let validator = jsonschema::options()
        .with_registry(&registry)
        .build(&schema)
        .unwrap_or_else(|e| panic!("docs/schema/{kind}.json: {e}"));
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Parses one of sluice's JSON documents and panics, naming every
/// violation, unless it validates against its schema.
pub fn checked_json(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    let errors = schema_errors(&doc);
    assert!(
        errors.is_empty(),
        "the document does not follow its schema:\n  {}\n{text}",
        errors.join("\n  ")
    );
    doc
}

/// As [`checked_json`] for JSON Lines: every line is checked.
pub fn checked_json_lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(checked_json)
        .collect()
}
