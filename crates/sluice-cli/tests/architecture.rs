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

/// The table's rows: crate → the crates its "depends on" cell names
/// (`all`: every other crate but the test kit).
fn table(all: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(sluice_testkit::repo_root().join("docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md");
    let section = text
        .split("\n## Crates\n")
        .nth(1)
        .expect("a Crates section")
        .split("\n## ")
        .next()
        .unwrap();
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
