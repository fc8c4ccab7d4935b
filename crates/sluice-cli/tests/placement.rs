//! FLOR §5.4-5.4.1: TX threads and planners go where the placement puts
//! them, as the kernel reports each thread's allowed CPUs, and the
//! summary says where and why (here: one NUMA node, said so).

mod common;
use common::*;
use std::time::{Duration, Instant};

/// Each thread of `pid` by name, with its allowed CPUs as the kernel
/// lists them (`Cpus_allowed_list`).
fn threads(pid: u32) -> Vec<(String, String)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                .trim()
                .to_string();
            Some((comm.trim().to_string(), cpus))
        })
        .collect()
}

#[test]
fn tx_threads_and_planners_run_where_the_placement_says() {
    if sluice_sys::cpus::online_cpus() < 2 {
        eprintln!("SKIPPED: placement needs 2 CPUs");
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs on 2 CPUs or more"
        );
        return;
    }
    let d = tmpdir("placement");
    let session = d.join("s.yaml");
    // Two flows of 150 packets at 100 pps: 1.5 s of sending.
    std::fs::write(
        &session,
        "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 150, pps: 100, count: 2}\n",
    )
    .unwrap();
    let summary = d.join("s.json");
    let child = sluice()
        .args([
            "flows",
            "run",
            session.to_str().unwrap(),
            "--to",
            "null",
            "-q",
        ])
        .args(["--cpu", "1", "--planner-cpu", "0", "--numa-node", "0"])
        .arg("--summary-json")
        .arg(&summary)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read the threads while the run lasts.
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        seen = threads(child.id());
        let named = |n: &str| seen.iter().any(|(c, _)| c == n);
        if named("sluice-tx0") && named("sluice-io") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let cpus_of = |n: &str| seen.iter().find(|(c, _)| c == n).map(|(_, l)| l.clone());
    assert_eq!(cpus_of("sluice-tx0").as_deref(), Some("1"), "{seen:?}");
    assert_eq!(cpus_of("sluice-io").as_deref(), Some("0"), "{seen:?}");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    let s = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    let p = &s["placement"];
    assert_eq!(p["node"], 0, "{p}");
    assert_eq!(p["why"], "--numa-node", "{p}");
    assert_eq!(p["tx_cpus"], serde_json::json!([1]), "{p}");
    assert_eq!(p["planner_cpus"], serde_json::json!([0]), "{p}");
    assert!(
        p["memory"]
            .as_str()
            .unwrap()
            .starts_with("preferred on node 0"),
        "{p}"
    );
    assert!(text.contains("placement: "), "{text}");

    // Without options, on one node: said so.
    let nodes = sluice_sys::numa::nodes().len();
    let o = run_to_pcap(
        &["flows", "run", session.to_str().unwrap()],
        &d.join("o.pcap"),
        &["--no-pin"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    if nodes == 1 {
        assert!(
            stderr(&o).contains("placement: 1 NUMA node, no node chosen (one node: nothing to choose); TX threads on any CPU; planners on any CPU"),
            "{}",
            stderr(&o)
        );
    }
    // A node this host lacks, and a CPU off the chosen node, are refused.
    let o = run(&[
        "flows",
        "run",
        session.to_str().unwrap(),
        "--to",
        "null",
        "--numa-node",
        "4095",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--numa-node 4095: this host's NUMA nodes are"),
        "{}",
        stderr(&o)
    );
}
