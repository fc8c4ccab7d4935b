//! SIGINT/SIGTERM stop a run cleanly: the pcap output is complete and
//! valid, the summary is printed and written, the exit code says so.

mod common;
use common::*;
use std::time::Duration;

fn interrupt_after(sig: &str, wait: Duration) {
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
    std::thread::sleep(wait);
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
        "10 kpps for ~1.5 s sends more than one pass: {sent}"
    );
    assert_eq!(s["interrupted"], true);
    // Every packet the summary counts is in the file, and the file reads cleanly.
    assert_eq!(read_all(&out).len() as u64, sent);
}

#[test]
fn sigint_stops_cleanly() {
    interrupt_after("INT", Duration::from_millis(1500));
}

#[test]
fn sigterm_stops_cleanly() {
    interrupt_after("TERM", Duration::from_millis(1500));
}
