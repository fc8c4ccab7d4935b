//! docs/ARCHITECTURE.md stays true: its crate table names every crate of
//! the workspace and, for each, exactly the workspace crates it depends
//! on, as `cargo metadata` reads them from the manifests; and the
//! dependency directions it states hold.

use std::collections::{BTreeMap, BTreeSet};

/// Workspace crate → the workspace crates it depends on (normal
/// dependencies), from `cargo metadata`.
fn manifests() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let o = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(sluice_testkit::repo_root())
        .output()
        .expect("cargo metadata runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let packages = v["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|n| names.contains(n))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// The text of docs/ARCHITECTURE.md under `heading` (`## Crates`), up
/// to the next heading of its level or above.
fn section(heading: &str) -> String {
    let text = std::fs::read_to_string(sluice_testkit::repo_root().join("docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md");
    let level = heading.chars().take_while(|c| *c == '#').count();
    let (_, after) = text
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no section {heading}"));
    after
        .lines()
        .take_while(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            !(hashes > 0 && hashes <= level && l[hashes..].starts_with(' '))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The table's rows: crate → the crates its "depends on" cell names
/// (`all`: every other crate but the test kit).
fn table(all: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let section = section("## Crates");
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `sluice-")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0]
            .trim_start_matches("| ")
            .trim_matches('`')
            .to_string();
        let cell = cells.last().unwrap().trim_end_matches(" |").trim();
        let deps: BTreeSet<String> = if cell == "all" {
            all.iter()
                .filter(|c| **c != name && *c != "sluice-testkit")
                .cloned()
                .collect()
        } else {
            cell.split(',')
                // "capture (`StreamBuf`)": the crate, then what of it.
                .filter_map(|w| w.split_whitespace().next())
                .map(|w| format!("sluice-{w}"))
                .filter(|c| all.contains(c))
                .collect()
        };
        assert!(rows.insert(name.clone(), deps).is_none(), "{name} twice");
    }
    rows
}

#[test]
fn the_crate_table_is_the_workspace_and_its_dependencies() {
    let real = manifests();
    let all: BTreeSet<String> = real.keys().cloned().collect();
    let doc = table(&all);
    assert_eq!(
        doc.keys().collect::<Vec<_>>(),
        real.keys().collect::<Vec<_>>(),
        "docs/ARCHITECTURE.md's crate table names every crate of the workspace, once"
    );
    let wrong: Vec<String> = real
        .iter()
        .filter(|(name, deps)| doc[*name] != **deps)
        .map(|(name, deps)| {
            format!(
                "{name}: the table says {:?}, Cargo.toml {deps:?}",
                doc[name]
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_stated_dependency_directions_hold() {
    let real = manifests();
    // The leaves: what everything else builds on.
    for leaf in ["sluice-core", "sluice-wire", "sluice-capture", "sluice-sys"] {
        assert!(real[leaf].is_empty(), "{leaf}: {:?}", real[leaf]);
    }
    let analyze = &real["sluice-analyze"];
    assert!(
        !analyze.contains("sluice-engine") && !analyze.contains("sluice-sink"),
        "{analyze:?}"
    );
    // Nothing depends on the binary; the libraries never on the control plane.
    for (name, deps) in &real {
        assert!(!deps.contains("sluice-cli"), "{name} depends on the CLI");
        if name != "sluice-cli" {
            assert!(
                !deps.contains("sluice-control"),
                "{name} depends on the control plane"
            );
        }
    }
}

/// Every type defined in the workspace's product code (`crates/*/src`):
/// structs, enums, traits and type aliases, by name.
fn defined_types() -> BTreeSet<String> {
    fn walk(dir: &std::path::Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                for line in std::fs::read_to_string(&p).unwrap().lines() {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    if let Some(i) = words
                        .iter()
                        .position(|w| matches!(*w, "struct" | "enum" | "trait" | "type"))
                    {
                        let lead = &words[..i];
                        if lead.iter().all(|w| w.starts_with("pub")) {
                            if let Some(name) = words.get(i + 1) {
                                let name: String = name
                                    .chars()
                                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                                    .collect();
                                out.insert(name);
                            }
                        }
                    }
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    let crates = sluice_testkit::repo_root().join("crates");
    for c in std::fs::read_dir(&crates).unwrap().map(Result::unwrap) {
        let src = c.path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    out
}

/// The words table's rows: the word, and the type names (CamelCase, in
/// backticks, the last segment of a path) its cells name.
fn words_table() -> Vec<(String, BTreeSet<String>)> {
    let section = section("## Words with one meaning");
    let mut rows = Vec::new();
    for line in section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| word"))
    {
        let word = line[2..].split(" | ").next().unwrap().to_string();
        let mut names = BTreeSet::new();
        for quoted in line.split('`').skip(1).step_by(2) {
            // `sluice_pace::Schedule`, `Due::with_spacing`, `pb::Task`: the type.
            let ty = quoted
                .split("::")
                .filter(|s| s.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
                .last();
            if let Some(t) = ty.filter(|t| t.chars().all(|c| c.is_alphanumeric())) {
                names.insert(t.to_string());
            }
        }
        rows.push((word, names));
    }
    rows
}

/// docs/ARCHITECTURE.md's words keep one meaning each: every type the
/// table names is a type of the code (generated proto types aside), and
/// every type named after "job", "lease", "plan" or "encap" is in that word's
/// row, with its meaning, so a new one cannot take a meaning unnoticed.
#[test]
fn the_words_table_names_the_codes_types_and_every_job_lease_and_plan_type() {
    let types = defined_types();
    let rows = words_table();
    assert!(rows.len() >= 8, "{rows:?}");
    // Generated from proto/ (not in crates/*/src): named as `pb::…`.
    let generated = ["Task"];
    let missing: Vec<String> = rows
        .iter()
        .flat_map(|(w, names)| names.iter().map(move |n| (w, n)))
        .filter(|(_, n)| !types.contains(*n) && !generated.contains(&n.as_str()))
        .map(|(w, n)| format!("{w}: `{n}` is no type of the code"))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    for (word, stem) in [
        ("job", "Job"),
        ("lease", "Lease"),
        ("plan", "Plan"),
        ("encap", "Encap"),
    ] {
        let row = &rows
            .iter()
            .find(|(w, _)| w == word)
            .unwrap_or_else(|| panic!("no row for {word}"))
            .1;
        let unnamed: Vec<&String> = types
            .iter()
            .filter(|t| t.contains(stem) && !row.contains(*t))
            .collect();
        assert!(
            unnamed.is_empty(),
            "types named after '{word}' missing from its row (say what each means): {unnamed:?}"
        );
    }
}

/// The checklists of docs/ARCHITECTURE.md ("Files to touch for a new
/// source", "... for a new header") name files that exist, so a move of
/// the code cannot leave them pointing nowhere.
#[test]
fn the_checklists_name_files_that_exist() {
    let root = sluice_testkit::repo_root();
    for title in [
        "### Files to touch for a new source",
        "### Files to touch for a new header",
    ] {
        let section = section(title);
        let paths: Vec<&str> = section
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|q| q.starts_with("crates/") && !q.contains('<'))
            .collect();
        assert!(paths.len() >= 2, "{title}: {paths:?}");
        for p in paths {
            let p = p.split(':').next().unwrap();
            assert!(root.join(p).exists(), "{title}: {p} does not exist");
        }
    }
}
