//! Caliper §4.5 with a real simulator: an ns-3 node's TCP sender
//! (python/examples/ns3_pace.py: realtime scheduler, FdNetDevice on the
//! kernel side of pace's TAP) completes a transfer to a real kernel TCP
//! receiver in another namespace through `sluice pace`, whose return path
//! carries the receiver's ACKs back into the simulation. Run by
//! bench/ns3_pace.sh (which also runs the simulated-only side of Fig. 10);
//! judged from the receiver's byte count and a tcpdump capture.

mod common;

use sluice_testkit::{bench_script, require, require_root};
use std::collections::HashMap;
use std::process::Command;
use std::sync::Mutex;

/// Both runs use bench/ns3_pace.sh's namespaces: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

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

/// Runs bench/ns3_pace.sh with `env` (one run at a time); its result row
/// by column name, and its output for messages. None when SKIPPED.
fn ns3_bench(t: &str, env: &[(&str, &str)]) -> Option<(HashMap<String, String>, String)> {
    if !require_root(t) || !require("tcpdump", t) || !require("python3", t) || !require_ns3(t) {
        return None;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let work = std::env::temp_dir().join(format!("sluice-test-{t}-{}", std::process::id()));
    let out = Command::new("bash")
        .arg(bench_script("ns3_pace.sh"))
        .env("SLUICE", env!("CARGO_BIN_EXE_sluice"))
        .env("WORK", &work)
        .envs(env.iter().copied())
        .output()
        .expect("bench/ns3_pace.sh runs");
    let _ = std::fs::remove_dir_all(&work);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "ns3_pace.sh {env:?} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((common::bench_row(&text), text))
}

#[test]
fn an_ns3_tcp_sender_completes_a_transfer_through_pace() {
    let t = "an_ns3_tcp_sender_completes_a_transfer_through_pace";
    let Some((row, text)) = ns3_bench(t, &[("SIM", "0"), ("BYTES", "500000"), ("GAP_US", "200")])
    else {
        return;
    };
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

/// The same sender through `sluice inject` (python/examples/ns3_inject.py):
/// each frame the node sends becomes a description at its simulated time,
/// mapped by a node table to real addresses; the kernel receiver's answers
/// come back through inject's return path into the simulation, mapped back.
/// The transfer completes only if both directions work.
#[test]
fn an_ns3_tcp_sender_completes_a_transfer_through_inject() {
    let t = "an_ns3_tcp_sender_completes_a_transfer_through_inject";
    let env = [("VIA", "inject"), ("BYTES", "300000"), ("GAP_US", "200")];
    let Some((row, text)) = ns3_bench(t, &env) else {
        return;
    };
    let col = |k: &str| row.get(k).map(String::as_str).expect(k);
    // Every byte reached the kernel receiver: segments went out through
    // inject and its ACKs came back into the simulation.
    assert_eq!(col("bytes_ok"), "yes", "{text}");
    let described: usize = col("described").parse().unwrap();
    let returned: usize = col("returned").parse().unwrap();
    assert!(described >= 200 && returned >= 50, "{text}");
    // Every description was sent (on time or late), none lost.
    for bad in ["dropped", "refused", "not_sent"] {
        assert!(!col("acks").contains(bad), "{text}");
    }
    let pairs: usize = col("pairs").parse().unwrap();
    assert!(pairs >= described / 2, "{text}");
}
