//! `sluice tcpreplay|tcprewrite|tcpprep` judged by tcpreplay's own test
//! suite: bench/tcpreplay_suite.py runs every tcpprep, tcprewrite and
//! `tcpreplay -w` case of its test/Makefile.am (4.5.5, vendored in
//! testdata/tcpreplay-suite) verbatim, the programs substituted, and
//! compares each output with the suite's expected file byte for byte.
//! Each case's outcome is held here with the reason where it is not
//! "identical" (docs/CLI.md, "tcpreplay's tools", says the same).

mod common;
mod netns;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Cases whose output differs from the suite's, and why.
const DIFFERENT: &[(&str, &str)] = &[];

/// Cases whose options sluice refuses (each refusal names the sluice way).
const REFUSED: &[(&str, &str)] = &[];

/// tcpprep -P and -I: the suite runs them without an expected output.
const NO_GOLDEN: &[&str] = &["print_info", "print_comment"];

#[test]
fn tcpreplays_test_suite_runs_case_by_case_as_documented() {
    let d = tmpdir("tcpreplay-suite");
    let json = d.join("suite.json");
    let root = sluice_testkit::repo_root();
    let o = Command::new("python3")
        .arg(root.join("bench/tcpreplay_suite.py"))
        .args(["--sluice", env!("CARGO_BIN_EXE_sluice"), "--json"])
        .arg(&json)
        .output()
        .expect("python3 runs");
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{table}\n{}", stderr(&o));
    eprintln!("{table}");
    let rows: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let got: BTreeMap<String, (String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["case"].as_str().unwrap().to_string(),
                (
                    r["result"].as_str().unwrap().to_string(),
                    r["stderr"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    // Every tcpprep and tcprewrite case, and the three tcpreplay -w ones.
    assert_eq!(got.len(), 56, "{table}");
    let mut identical = 0;
    for (case, (result, err)) in &got {
        if let Some((_, why)) = DIFFERENT.iter().find(|(c, _)| c == case) {
            assert_eq!(result, "different", "{case} ({why}): {table}");
        } else if let Some((_, opt)) = REFUSED.iter().find(|(c, _)| c == case) {
            assert_eq!(result, "refused", "{case}: {table}");
            let line = err.lines().last().unwrap_or("");
            assert!(
                line.contains(opt) && line.contains("in sluice:"),
                "{case}: the refusal names {opt} and the sluice way: {line}"
            );
        } else if NO_GOLDEN.contains(&case.as_str()) {
            assert_eq!(result, "no golden", "{case}");
        } else {
            assert_eq!(result, "identical", "{case}: {err}\n{table}");
            identical += 1;
        }
    }
    assert_eq!(identical, 54, "{table}");
}

/// The binary answers to tcprewrite's name through argv[0] (a user's own
/// symlink), reads a --load-opts file's [TCPREWRITE] section, and writes
/// what tcprewrite writes.
#[test]
fn a_symlink_named_tcprewrite_runs_tcprewrite() {
    let d = tmpdir("argv0");
    let link = d.join("tcprewrite");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sluice"), &link).unwrap();
    let input = testdata("tcpreplay__test.pcap");
    let out = d.join("out.pcap");
    let cfg = d.join("opts");
    std::fs::write(
        &cfg,
        format!(
            "# options\n[TCPREPLAY]\ntopspeed\n[TCPREWRITE]\ninfile {}\nportmap=80:8080\n",
            input.display()
        ),
    )
    .unwrap();
    let o = Command::new(&link)
        .arg("--load-opts")
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let want = sluice_testkit::testdata("tcpreplay-suite").join("test2.rewrite_portmap.pcap.gz");
    let z = gunzip(&want);
    assert_eq!(std::fs::read(&out).unwrap(), z, "byte for byte");
    // The same words through `sluice tcprewrite`, and a short option
    // bundled with its value (-r80:8080).
    let out2 = d.join("out2.pcap");
    let o = run(&[
        "tcprewrite",
        "-i",
        input.to_str().unwrap(),
        &format!("--outf={}", out2.display()),
        "-r80:8080",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out2).unwrap(), z);
}

/// `path` decompressed by the system's gzip.
fn gunzip(path: &Path) -> Vec<u8> {
    let o = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip");
    assert!(o.status.success());
    o.stdout
}

/// Options sluice has no way for are refused in one line naming the sluice
/// way; AutoOpts' own checks (most-times, needed and excluded options) and
/// an unknown option are bad usage, exit 2; nothing is written.
#[test]
fn refusals_and_bad_command_lines_name_the_option() {
    let d = tmpdir("compat-refuse");
    let t = testdata("tcpreplay__test.pcap");
    let t = t.to_str().unwrap();
    let out = d.join("o.pcap");
    let o_ = out.to_str().unwrap();
    for (args, want) in [
        (
            vec!["tcprewrite", "-i", t, "-o", o_, "--fragroute", "x"],
            "--fragroute: sluice has no fragroute engine; in sluice:",
        ),
        (
            vec!["tcpreplay", "-i", "lo", "--netmap", t],
            "--netmap: sluice has no netmap path; in sluice: sluice replay --to xdp:IFACE",
        ),
        (
            vec!["tcpreplay", "-i", "lo", "-t", "-x", "2", t],
            "option 'multiplier' cannot be used with option 'topspeed'",
        ),
        (
            vec!["tcprewrite", "-i", t, "-o", o_, "--enet-vlan-tag", "4"],
            "option 'enet-vlan-tag' needs option 'enet-vlan'",
        ),
        (
            vec!["tcprewrite", "-i", t, "-o", o_, "-i", t],
            "the 'infile' option can only be specified 1 time",
        ),
        (
            vec!["tcprewrite", "-i", t, "-o", o_, "--no-such"],
            "illegal option -- no-such",
        ),
        (
            vec!["tcprewrite", "-i", t, "-o", o_, "--enet"],
            "ambiguous option -- enet",
        ),
        (vec!["tcpprep", "-i", t, "-o", o_], "a mode is needed"),
        (vec!["tcprewrite", "-i", t, "-o", t], "input"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!out.exists(), "{args:?} wrote");
    }
}

/// `tcpreplay -w` ends with tcpreplay's summary lines, which scripts grep.
#[test]
fn tcpreplay_w_prints_tcpreplays_summary_lines() {
    let d = tmpdir("compat-summary");
    let t = testdata("tcpreplay__test.pcap");
    let out = d.join("w.pcap");
    let o = run(&[
        "tcpreplay",
        "-w",
        out.to_str().unwrap(),
        "-t",
        "-l",
        "2",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let bytes: usize = frames_of(&t).iter().map(Vec::len).sum::<usize>() * 2;
    assert!(
        s.starts_with(&format!("Actual: 358 packets ({bytes} bytes) sent in ")),
        "{s}"
    );
    let lines: Vec<&str> = s.lines().collect();
    assert!(
        lines[1].starts_with("Rated: ")
            && lines[1].contains(" Bps, ")
            && lines[1].ends_with(" pps"),
        "{s}"
    );
    assert_eq!(
        lines[2],
        format!("Statistics for network device: {}", out.display())
    );
    assert_eq!(lines[3], "\tSuccessful packets:        358");
    assert_eq!(frames_of(&out).len(), 358);
}

/// The suite's tcpreplay cases that send (`-i`, `-I`) run with veth pairs
/// into namespaces of this test's own as `nic1` and `nic2`: each succeeds
/// but `--pps-multi`'s, which is refused, and the frames reach both far
/// ends.
#[test]
fn tcpreplays_sending_cases_send_through_veth_pairs() {
    if !netns::can_run() {
        return;
    }
    let (n1, n2) = (netns::Net::up("tsa"), netns::Net::up("tsb"));
    let rx = netns::far_rx;
    let before = (rx(&n1), rx(&n2));
    let d = tmpdir("tcpreplay-suite-send");
    let json = d.join("suite.json");
    let o = Command::new("python3")
        .arg(sluice_testkit::repo_root().join("bench/tcpreplay_suite.py"))
        .args(["--sluice", env!("CARGO_BIN_EXE_sluice"), "--json"])
        .arg(&json)
        .args(["--nic1", &n1.tx(), "--nic2", &n2.tx()])
        .output()
        .expect("python3 runs");
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{table}\n{}", stderr(&o));
    let rows: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let sends: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["tool"] == "tcpreplay" && !r["command"].as_str().unwrap().contains(" -w "))
        .collect();
    assert_eq!(sends.len(), 13, "{table}");
    for r in sends {
        let want = if r["case"] == "replay_pps_multi" {
            "refused"
        } else {
            "sent"
        };
        assert_eq!(r["result"], want, "{}: {table}", r["case"]);
    }
    // Both ports carried frames (-c, --dualfile, the config's cache).
    assert!(rx(&n1) > before.0 + 179 && rx(&n2) > before.1, "{table}");
}
