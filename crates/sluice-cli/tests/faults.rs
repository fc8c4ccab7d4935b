//! A fixed-seed slice of the mutation-and-fault harness (`bench/faults.py`):
//! damaged captures, archives, CSVs, sessions and mappings through every
//! command (captures also to a veth pair, as root), each under a timeout
//! and a memory limit. No run may panic, die of a signal,
//! hang, fail without a word, or leave a temporary or unreadable output.

mod common;

#[test]
fn damaged_inputs_never_crash_hang_or_leave_a_mess() {
    use sluice_testkit::{bench_script, require, require_root};
    if !require("python3", "fault harness") || !require("prlimit", "fault harness") {
        return;
    }
    let mut c = std::process::Command::new("python3");
    c.arg(bench_script("faults.py"))
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args(["--mutants", "6", "--files", "6", "--seed", "7"]);
    if require_root("fault harness on veth") && require("ip", "fault harness on veth") {
        c.arg("--veth");
    }
    let o = c.output().expect("run bench/faults.py");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains(" 0 failures"), "{out}");
    assert!(out.contains("series play --map"), "{out}");
}
