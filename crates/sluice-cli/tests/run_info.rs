//! Every summary and statistics line says what made it: the wall-clock
//! start, sluice's version and commit, the command line and its inputs;
//! series play records its timing as replay does.

mod common;
use common::*;

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn summaries_and_stats_lines_name_the_run_that_made_them() {
    let d = tmpdir("run-info");
    let trace = d.join("t.pcap");
    write_trace(&trace, 300, 1_000_000, 64);
    let (sum, stats) = (d.join("s.json"), d.join("st.jsonl"));
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let args = [
        "replay",
        s(&trace),
        "--clock",
        "virtual",
        "--summary-json",
        s(&sum),
        "--stats-json",
        s(&stats),
        "-q",
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = sluice_testkit::checked_json(&std::fs::read(&sum).unwrap());
    let r = &j["run"];
    let command: Vec<&str> = r["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(command, args, "{r}");
    assert_eq!(r["inputs"], serde_json::json!([s(&trace)]), "{r}");
    let started = r["started_ns"].as_u64().unwrap();
    assert!(
        started >= before && started - before < 600_000_000_000,
        "{r}"
    );
    assert!(r["started"].as_str().unwrap().ends_with('Z'), "{r}");
    assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));
    let version = String::from_utf8_lossy(&run(&["--version"]).stdout).to_string();
    assert!(
        version.contains(r["commit"].as_str().unwrap()),
        "{version} {r}"
    );
    let lines = sluice_testkit::checked_json_lines(&std::fs::read(&stats).unwrap());
    assert!(!lines.is_empty());
    for l in &lines {
        assert_eq!(&l["run"], r, "each line names the same run");
    }
}

#[test]
fn series_play_records_its_timing() {
    let d = tmpdir("run-info-series");
    let csv = sluice_testkit::testdata("timeseries").join("obspy_example_BW.RJOB_3ch_100Hz.csv");
    let arc = d.join("s.arc");
    assert!(run(&["series", "convert", s(&csv), s(&arc)])
        .status
        .success());
    for (extra, mode, multiplier, rate) in [
        (
            &["--fast-forward", "1000"][..],
            "fast_forward",
            Some(1000.0),
            None,
        ),
        (
            &["--tight-loop", "10us"][..],
            "tight_loop",
            None,
            Some(100_000.0),
        ),
        (&["--tight-loop", "0ns"][..], "topspeed", None, None),
    ] {
        let sum = d.join("s.json");
        let mut args = vec!["series", "play", s(&arc), "--clock", "virtual", "-q"];
        args.extend(extra);
        args.extend(["--summary-json", s(&sum)]);
        let o = run(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let j = sluice_testkit::checked_json(&std::fs::read(&sum).unwrap());
        let t = &j["timing"];
        assert_eq!(t["mode"], mode, "{t}");
        assert_eq!(t["multiplier"].as_f64(), multiplier, "{t}");
        assert_eq!(t["rate"].as_f64(), rate, "{t}");
    }
}
