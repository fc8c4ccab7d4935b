//! Caliper §4.5 with a real simulator: an ns-3 node's TCP sender
//! (python/examples/ns3_pace.py: realtime scheduler, FdNetDevice on the
//! kernel side of pace's TAP) completes a transfer to a real kernel TCP
//! receiver in another namespace through `sluice pace`, whose return path
//! carries the receiver's ACKs back into the simulation. Run by
//! bench/ns3_pace.sh (which also runs the simulated-only side of Fig. 10);
//! judged from the receiver's byte count and a tcpdump capture.

mod common;

use sluice_testkit::{bench_script, require, require_root};
use std::process::Command;

/// True when Python's `ns` module (pip `ns3`) is installed; a failure
/// under CI (.ci/run installs it), else SKIPPED.
fn require_ns3(test: &str) -> bool {
    let found = Command::new("python3")
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('ns') is None)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        sluice_testkit::skip(test, "the ns3 Python package (pip install ns3)");
    }
    found
}

#[test]
fn an_ns3_tcp_sender_completes_a_transfer_through_pace() {
    let t = "an_ns3_tcp_sender_completes_a_transfer_through_pace";
    if !require_root(t) || !require("tcpdump", t) || !require("python3", t) || !require_ns3(t) {
        return;
    }
    let work = std::env::temp_dir().join(format!("sluice-test-ns3-{}", std::process::id()));
    let out = Command::new("bash")
        .arg(bench_script("ns3_pace.sh"))
        .env("SLUICE", env!("CARGO_BIN_EXE_sluice"))
        .env("WORK", &work)
        .env("SIM", "0")
        .env("BYTES", "500000")
        .env("GAP_US", "200")
        .output()
        .expect("bench/ns3_pace.sh runs");
    let _ = std::fs::remove_dir_all(&work);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "ns3_pace.sh failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = common::bench_row(&text);
    let col = |k: &str| row.get(k).map(String::as_str).expect(k);
    // Every byte the simulated sender offered reached the kernel receiver.
    assert_eq!(col("bytes_ok"), "yes", "{text}");
    // Full-size segments arrived through pace, never closer than its gap
    // allows (a busy machine only widens gaps; catching up after a stall
    // takes at most 2 us off one).
    let n: usize = col("meas_n").parse().unwrap();
    assert!(n >= 100, "{text}");
    let p25: f64 = col("meas_p25").parse().unwrap();
    assert!(p25 >= 180.0, "{text}");
}
