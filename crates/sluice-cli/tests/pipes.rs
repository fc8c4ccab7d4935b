//! A reader that goes away ends a command quietly, and a broken stderr
//! never costs a run its outputs: every printing command, its stdout a
//! pipe whose reading end is already closed (`| head -1` at its harshest:
//! the very first write fails with EPIPE), exits 0 without a panic.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `cmd` with stdout (or stderr) into a pipe nobody reads.
fn with_closed(mut cmd: Command, stream: &str) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    match stream {
        "stdout" => cmd.stdout(writer).stderr(Stdio::piped()),
        _ => cmd.stderr(writer).stdout(Stdio::piped()),
    };
    cmd.stdin(Stdio::null())
        .spawn()
        .expect("run sluice")
        .wait_with_output()
        .expect("wait for sluice")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_printing_command_exits_quietly_when_its_reader_is_gone() {
    let d = tmpdir("pipes-stdout");
    let trace = d.join("t.pcap");
    write_trace(&trace, 2000, 100_000, 200);
    let csv = sluice_testkit::testdata("timeseries").join("obspy_example_BW.RJOB_3ch_100Hz.csv");
    let arc = d.join("s.arc");
    let o = run(&["series", "convert", s(&csv), s(&arc)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let keys = d.join("keys");
    let commands: Vec<Vec<&str>> = vec![
        vec!["profile", "spectrum", s(&trace)],
        vec!["profile", "spectrum", s(&trace), "--json"],
        vec!["analyze", s(&trace)],
        vec!["analyze", s(&trace), "--json"],
        vec!["analyze", s(&trace), "--flows"],
        vec!["doctor"],
        vec!["doctor", "--json"],
        vec!["series", "dump", s(&arc)],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["keygen", s(&keys)],
        vec!["--help"],
    ];
    for args in commands {
        let mut cmd = sluice();
        cmd.args(&args);
        let o = with_closed(cmd, "stdout");
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    }
}

#[test]
fn a_broken_stderr_costs_a_run_neither_its_summary_nor_its_exit_code() {
    let d = tmpdir("pipes-stderr");
    let trace = d.join("t.pcap");
    write_trace(&trace, 500, 10_000, 100);
    let (out, summary) = (d.join("out.pcap"), d.join("summary.json"));
    let to = format!("pcap:{}", s(&out));
    let mut cmd = sluice();
    cmd.args(["replay", s(&trace), "--to", &to, "--clock", "virtual"])
        .args(["--summary-json", s(&summary)]);
    let o = with_closed(cmd, "stderr");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let j = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    assert_eq!(j["packets"], 500, "{j}");
    assert_eq!(frames_of(&out).len(), 500);
}
