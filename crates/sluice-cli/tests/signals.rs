//! SIGINT/SIGTERM stop a run cleanly: the pcap output is complete and
//! valid, the summary is printed and written, the exit code says so.

mod common;
use common::*;
use std::time::Duration;

/// Sends `sig` once the run has written more than one pass (1000 frames)
/// to its temporary output: by what it did, not after a fixed time that a
/// loaded machine's slow start could eat.
fn interrupt_after_a_pass(sig: &str) {
    let d = tmpdir(&format!("sig-{sig}"));
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 100_000, 64);
    let out = d.join("out.pcap");
    let summary = d.join("s.json");
    let child = sluice()
        .args(["replay", trace.to_str().unwrap(), "--loop", "0", "-q"])
        .arg("--to")
        .arg(format!("pcap:{}", out.display()))
        .arg("--summary-json")
        .arg(&summary)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pass = 24 + 1001 * (16 + 64);
    let t0 = std::time::Instant::now();
    while !std::fs::read_dir(&d).unwrap().any(|e| {
        let e = e.unwrap();
        e.file_name().to_string_lossy().ends_with(".sluice-tmp")
            && e.metadata().is_ok_and(|m| m.len() >= pass)
    }) {
        assert!(t0.elapsed() < Duration::from_secs(120), "no pass written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    let s: serde_json::Value = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    let sent = s["packets"].as_u64().unwrap();
    assert!(
        sent > 1000,
        "more than one pass was written before the signal: {sent}"
    );
    assert_eq!(s["interrupted"], true);
    // Every packet the summary counts is in the file, and the file reads cleanly.
    assert_eq!(read_all(&out).len() as u64, sent);
}

#[test]
fn sigint_stops_cleanly() {
    interrupt_after_a_pass("INT");
}

#[test]
fn sigterm_stops_cleanly() {
    interrupt_after_a_pass("TERM");
}
