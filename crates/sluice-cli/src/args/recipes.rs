//! deploy/kubernetes: the sluice command lines its manifests embed parse
//! with the CLI's own parser, and the Indexed Job's shares cover its
//! completions.

use super::{Cli, Command};
use clap::Parser;
use serde_yaml_ng::Value;

/// Every container's shell line in a manifest, from its `exec sluice`.
fn sluice_lines(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if let Some(at) = s.find("exec sluice ") {
                out.push(s[at + 5..].to_string());
            }
        }
        Value::Sequence(items) => items.iter().for_each(|i| sluice_lines(i, out)),
        Value::Mapping(m) => m.values().for_each(|i| sluice_lines(i, out)),
        _ => {}
    }
}

/// The words a pod's shell runs for index `k`.
fn words(line: &str, k: u64, start_at: u64) -> Vec<String> {
    line.replace("$((JOB_COMPLETION_INDEX + 1))", &(k + 1).to_string())
        .replace("${JOB_COMPLETION_INDEX}", &k.to_string())
        .replace("${START_AT}", &start_at.to_string())
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_kubernetes_recipes_command_lines_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes");
    let start_at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600)
        * 1_000_000_000;
    let mut seen = 0;
    for name in ["senders-job.yaml", "worker-daemonset.yaml"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
        let mut lines = Vec::new();
        sluice_lines(&doc, &mut lines);
        assert_eq!(lines.len(), 1, "{name}");
        let indexed = doc["spec"]["completionMode"].as_str() == Some("Indexed");
        let n = doc["spec"]["completions"].as_u64().unwrap_or(1);
        let mut shares = Vec::new();
        for k in 0..n {
            let argv = words(&lines[0], k, start_at);
            let cli = Cli::try_parse_from(&argv)
                .unwrap_or_else(|e| panic!("{name}: {}\n{e}", argv.join(" ")));
            match cli.command {
                Command::Replay(a) => {
                    assert!(indexed, "{name}: a share needs an Indexed Job");
                    assert_eq!(a.part.start_at, Some(start_at), "{name}");
                    shares.push(a.part.share.expect("--share").to_string());
                }
                Command::Worker(w) => assert!(w.tls.is_some(), "{name}: TCP needs --tls"),
                other => panic!("{name}: {other:?}"),
            }
            seen += 1;
        }
        if indexed {
            let want: Vec<String> = (1..=n).map(|k| format!("{k}/{n}")).collect();
            assert_eq!(shares, want, "{name}: one share per index, all of them");
        }
    }
    assert_eq!(seen, 5);
}
