//! docs/CLI.md documents every option of every command, under that command,
//! and only options the command has: each `## \`sluice CMD\`` section's
//! option table is read and compared with `sluice CMD --help`, both ways.

mod common;
use common::*;
use std::collections::BTreeSet;

/// (command words, options named in its README table), in README order.
fn readme_sections() -> Vec<(Vec<String>, BTreeSet<String>)> {
    let text = std::fs::read_to_string(sluice_testkit::repo_root().join("docs/CLI.md"))
        .expect("docs/CLI.md");
    let mut out: Vec<(Vec<String>, BTreeSet<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("## `sluice ") {
            let cmd = rest.trim_end_matches('`');
            out.push((
                cmd.split_whitespace().map(str::to_owned).collect(),
                BTreeSet::new(),
            ));
            continue;
        }
        if line.starts_with("## ") {
            // A section that is not a command ends the table rows.
            out.push((Vec::new(), BTreeSet::new()));
            continue;
        }
        let Some((_, opts)) = out.last_mut() else {
            continue;
        };
        let Some(cell) = line.strip_prefix("| `") else {
            continue;
        };
        let first = cell.split('`').next().unwrap_or("");
        for word in first.split([',', ' ']) {
            if word.starts_with("--") || (word.starts_with('-') && word.len() == 2) {
                opts.insert(word.to_owned());
            }
        }
    }
    out.retain(|(cmd, _)| !cmd.is_empty());
    out
}

/// Option names (`--long` and `-s`) listed by `sluice CMD --help`.
fn help_options(cmd: &[String]) -> BTreeSet<String> {
    let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    args.push("--help");
    let o = run(&args);
    assert!(o.status.success(), "sluice {args:?}: {}", stderr(&o));
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut opts = BTreeSet::new();
    for line in help.lines() {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        for word in line.split([',', ' ']) {
            let word = word.split(['=', '<', '[']).next().unwrap_or("");
            if (word.starts_with("--") && word.len() > 2)
                || (word.starts_with('-') && word.len() == 2)
            {
                opts.insert(word.to_owned());
            }
        }
    }
    for builtin in ["-h", "--help", "-V", "--version"].iter().chain(GLOBALS) {
        opts.remove(*builtin);
    }
    opts
}

/// Options every command takes: documented once, in the global table.
const GLOBALS: &[&str] = &["--max-memory"];

#[test]
fn every_readme_option_table_matches_its_commands_help() {
    let sections = readme_sections();
    let commands: Vec<String> = sections.iter().map(|(c, _)| c.join(" ")).collect();
    for expected in [
        "replay",
        "analyze",
        "series convert",
        "series dump",
        "series play",
        "flows run",
        "flows import",
        "profile synth",
        "profile spectrum",
        "profile run",
        "profile fit",
        "pace",
        "inject",
        "converse",
        "report",
        "doctor",
        "completions",
        "man",
        "demo",
    ] {
        assert!(
            commands.iter().any(|c| c == expected),
            "docs/CLI.md has no `sluice {expected}` section (it has {commands:?})"
        );
    }
    let reference =
        std::fs::read_to_string(sluice_testkit::repo_root().join("docs/CLI.md")).unwrap();
    for g in GLOBALS {
        assert!(
            reference.contains(&format!("| `{g}")),
            "docs/CLI.md's global table lacks {g}"
        );
        let help = run(&["replay", "--help"]);
        assert!(
            String::from_utf8_lossy(&help.stdout).contains(g),
            "{g} is global: every command's help lists it"
        );
    }
    for (cmd, documented) in &sections {
        let actual = help_options(cmd);
        let missing: Vec<_> = documented.difference(&actual).collect();
        let undocumented: Vec<_> = actual.difference(documented).collect();
        assert!(
            missing.is_empty(),
            "docs/CLI.md lists under `sluice {}` options it does not have: {missing:?}",
            cmd.join(" ")
        );
        assert!(
            undocumented.is_empty(),
            "`sluice {}` has options docs/CLI.md does not list: {undocumented:?}",
            cmd.join(" ")
        );
    }
}

/// Completions and man pages come from the parser's own definitions: every
/// shell's script names the commands, every command gets a page.
#[test]
fn completions_and_man_pages_are_generated_for_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        for cmd in ["replay", "inject", "pace", "analyze"] {
            assert!(text.contains(cmd), "{shell} completion lacks {cmd}");
        }
    }
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));

    let o = run(&["man"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH sluice 1"));
    let d = tmpdir("man-pages");
    let o = run(&["man", "--dir", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for name in [
        "sluice",
        "sluice-replay",
        "sluice-inject",
        "sluice-series-play",
    ] {
        let page = std::fs::read_to_string(d.join(format!("{name}.1"))).unwrap();
        assert!(page.contains(&format!(".TH {name} 1")), "{name}");
        assert!(page.contains(".SH OPTIONS") || name == "sluice", "{name}");
    }
    // Every page has examples, and the tcpreplay tools' are their own
    // command lines.
    for e in std::fs::read_dir(&*d).unwrap() {
        let page = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let ex = page
            .split(".SH EXAMPLES")
            .nth(1)
            .unwrap_or_else(|| panic!("{page}"));
        assert!(ex.contains("sluice"), "{ex}");
    }
    let tr = std::fs::read_to_string(d.join("sluice-tcprewrite.1")).unwrap();
    assert!(tr.contains("sluice tcprewrite \\-i in.pcap"), "{tr}");
    // --version names the commit (or says it is unknown).
    let v = String::from_utf8_lossy(&run(&["--version"]).stdout).to_string();
    assert!(
        v.starts_with("sluice ") && v.contains(" (") && v.contains(')'),
        "{v}"
    );
}

/// `doctor` measures the floor and reads the machine; an interface that
/// does not exist is a failure of the environment (exit 1).
#[test]
fn doctor_reports_the_floor_and_fails_on_a_missing_interface() {
    let o = run(&["doctor", "--json", "--floor", "100ms", "--iface", "lo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = sluice_testkit::checked_json(&o.stdout);
    let f = v["findings"].as_array().unwrap();
    let get = |check: &str| {
        f.iter()
            .find(|x| x["check"] == check)
            .unwrap_or_else(|| panic!("no {check} in {v}"))
    };
    assert!(get("platform floor")["detail"]
        .as_str()
        .unwrap()
        .contains("stalls > 5 µs per second"));
    assert_eq!(get("interface state")["level"], "ok");
    assert!(get("clock source")["detail"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    let o = run(&["doctor", "--floor", "50ms", "--iface", "sl-no-such-if"]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("FAIL") && text.contains("sl-no-such-if: not found"),
        "{text}"
    );
}
