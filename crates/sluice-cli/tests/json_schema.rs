//! Every kind of JSON document sluice writes, produced by a real run and
//! validated against `docs/schema/` (the other tests validate what they
//! read the same way); and the validation itself can fail.

mod common;
use common::*;
use serde_json::{json, Value};
use sluice_testkit::{checked_json, checked_json_lines, schema_errors};

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

fn stdout_json(args: &[&str]) -> Value {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    checked_json(&o.stdout)
}

fn tag(v: &Value) -> String {
    v["schema"].as_str().unwrap_or_default().to_string()
}

#[test]
fn every_kind_of_output_follows_its_schema() {
    let d = tmpdir("json-schema");
    let (trace, out) = (d.join("t.pcap"), d.join("o.pcap"));
    write_trace(&trace, 200, 100_000, 120);
    let (sum, stats) = (d.join("s.json"), d.join("st.jsonl"));
    let o = run(&[
        "replay",
        s(&trace),
        "--to",
        &format!("pcap:{}", s(&out)),
        "--pps",
        "2k",
        "-q",
        "--summary-json",
        s(&sum),
        "--stats-json",
        s(&stats),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut seen = vec![tag(&checked_json(&std::fs::read(&sum).unwrap()))];
    let lines = checked_json_lines(&std::fs::read(&stats).unwrap());
    assert!(!lines.is_empty());
    seen.push(tag(&lines[0]));
    // A looped run adds a line per pass.
    let looped = d.join("loop.jsonl");
    let o = run(&[
        "replay",
        s(&trace),
        "--to",
        "null",
        "--loop",
        "2",
        "--topspeed",
        "-q",
        "--stats-json",
        s(&looped),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = checked_json_lines(&std::fs::read(&looped).unwrap());
    let passes: Vec<&Value> = lines.iter().filter(|l| l["pass"].is_u64()).collect();
    assert_eq!(passes.len(), 2, "{lines:?}");
    seen.push(tag(passes[0]));

    let a = stdout_json(&["analyze", s(&out), "--json"]);
    assert!(a["comparison"].is_null(), "null, not absent: {a}");
    let a = stdout_json(&[
        "analyze",
        s(&out),
        "-r",
        s(&trace),
        "--run",
        s(&sum),
        "--json",
    ]);
    assert_eq!(a["comparison"]["lost"], 0);
    seen.push(tag(&a));
    let g = stdout_json(&["analyze", s(&out), "--gap", "500us", "--json"]);
    assert_eq!(g["gaps"], 199);
    seen.push(tag(&g));
    let f = stdout_json(&["analyze", s(&out), "--flows", "--json"]);
    assert!(f["session"].is_null());
    seen.push(tag(&f));

    let profile = d.join("p.yaml");
    std::fs::write(
        &profile,
        "duration: 200ms\nrate: 20k\nipd: {dist: poisson}\nsize: {dist: constant, bytes: 100}\n",
    )
    .unwrap();
    let pcap = d.join("p.pcap");
    let o = run(&[
        "profile",
        "run",
        s(&profile),
        "--to",
        &format!("pcap:{}", s(&pcap)),
        "--clock",
        "virtual",
        "-q",
        "--summary-json",
        s(&sum),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = checked_json(&std::fs::read(&sum).unwrap());
    assert!(p["timing"].is_null() && p["series"].is_null(), "{p}");
    let j = stdout_json(&["analyze", s(&pcap), "--target", s(&profile), "--json"]);
    seen.push(tag(&j));
    let sp = stdout_json(&["profile", "spectrum", s(&profile), "--keep", "2", "--json"]);
    seen.push(tag(&sp));
    let doc = stdout_json(&["doctor", "--json", "--floor", "20ms"]);
    seen.push(tag(&doc));
    // A failure, told as one line on stdout when a worker asks for it:
    // the command line refused (usage), an input refused, the
    // environment failing; each exit code as the line says.
    let missing = d.join("missing.pcap");
    let cases: [(&[&str], i32, &str); 3] = [
        (&["replay", s(&trace), "--no-such-option"], 2, "usage"),
        (&["replay", s(&missing), "--to", "null"], 2, "input"),
        (
            &[
                "replay",
                s(&trace),
                "--to",
                &format!("pcap:{}", s(&d.join("no/dir/x.pcap"))),
            ],
            1,
            "environment",
        ),
    ];
    for (args, code, fault) in cases {
        let o = sluice()
            .args(args)
            .env("SLUICE_FAILURE_JSON", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        let f = checked_json(&o.stdout);
        assert_eq!(f["exit"], code, "{args:?}: {f}");
        assert_eq!(f["fault"], fault, "{args:?}: {f}");
        let first = stderr(&o)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .to_string();
        let said = f["error"].as_str().unwrap();
        assert!(
            !said.is_empty() && first.contains(said.lines().next().unwrap()),
            "{args:?}: {said:?} vs {first:?}"
        );
        seen.push(tag(&f));
    }
    // Without the variable, stdout stays empty.
    let o = run(&["replay", s(&missing), "--to", "null"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // The receiver's summary (it fails for want of stamped frames on lo,
    // but writes what it counted).
    let rx_sum = d.join("rx.json");
    let root = sluice_testkit::require_root("sluice rx");
    if root {
        let o = run(&[
            "rx",
            "lo",
            "--duration",
            "200ms",
            "-q",
            "--summary-json",
            s(&rx_sum),
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let r = checked_json(&std::fs::read(&rx_sum).unwrap());
        assert_eq!(r["final"], true);
        seen.push(tag(&r));
    }
    // Every schema file was produced above but the shared one and the
    // controller's (tests/distributed.rs validates those).
    seen.sort();
    seen.dedup();
    let mut files: Vec<String> = sluice_testkit::schema_tags()
        .into_iter()
        .filter(|(file, _)| !file.starts_with("control-"))
        // tests/converse.rs checks sluice converse's (it needs veths).
        .filter(|(file, _)| !file.starts_with("converse"))
        .filter(|(file, _)| root || file != "rx.json")
        // tests/rx.rs checks rfc2544's (it needs a forwarding path).
        .filter(|(file, _)| file != "rfc2544.json")
        .map(|(_, tag)| tag)
        .collect();
    files.sort();
    assert_eq!(seen, files);
}

#[test]
fn a_document_that_breaks_its_schema_is_refused() {
    let d = tmpdir("json-schema-bad");
    let trace = d.join("t.pcap");
    write_trace(&trace, 20, 10_000, 64);
    let sum = d.join("s.json");
    let o = run(&[
        "replay",
        s(&trace),
        "--clock",
        "virtual",
        "-q",
        "--summary-json",
        s(&sum),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let good = checked_json(&std::fs::read(&sum).unwrap());
    let broken = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut v = good.clone();
        f(v.as_object_mut().unwrap());
        schema_errors(&v)
    };
    let absent = broken(&|m| {
        m.remove("series");
    });
    assert!(absent.iter().any(|e| e.contains("series")), "{absent:?}");
    let renamed = broken(&|m| {
        let b = m.remove("frame_bytes").unwrap();
        m.insert("bytes".into(), b);
    });
    assert!(
        renamed.len() >= 2,
        "missing frame_bytes and unknown bytes: {renamed:?}"
    );
    let shape = broken(&|m| {
        m["eps"]["percentiles"] = json!({"p50_ns": 1, "p95_ns": 2});
    });
    assert!(shape.iter().any(|e| e.starts_with("/eps")), "{shape:?}");
    let version = broken(&|m| {
        m.insert("schema".into(), json!("sluice.summary/1"));
    });
    assert!(!version.is_empty());
    assert!(!schema_errors(&json!({"packets": 1})).is_empty());
}
