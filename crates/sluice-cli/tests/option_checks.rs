//! Issue 42, items 3 and 11: no option value can abort a command, every
//! value out of range is refused with its limit named, and the small
//! things a user meets say what they mean.

mod common;
use common::*;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A 5-frame trace in `d`.
fn trace(d: &Path) -> std::path::PathBuf {
    let t = d.join("t.pcap");
    write_trace(&t, 5, 1000, 64);
    t
}

/// Exit 2 (bad input, never a signal), with `what` in the message.
fn refused(o: &std::process::Output, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(what), "expected '{what}' in: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
}

#[test]
fn huge_cpu_and_queue_lists_are_refused_not_aborted() {
    let d = tmpdir("opts-cpus");
    let t = trace(&d);
    let o = run(&[
        "replay",
        s(&t),
        "--to",
        "null",
        "-q",
        "--cpu",
        "0-4294967295",
    ]);
    refused(&o, "is not a CPU of this host");
    let o = run(&[
        "replay",
        s(&t),
        "--to",
        "null",
        "-q",
        "--tx-queues",
        "0-4294967295",
    ]);
    refused(&o, "is not an interface queue (0-4095)");
    // In a plan: refused by the controller before any worker is asked.
    std::fs::copy(&t, d.join("cap.pcap")).unwrap();
    let plan = d.join("plan.yaml");
    for (args, what) in [
        ("[--cpu, 0-4294967295]", "is not a CPU of this host"),
        // Bundled short flags are parsed as the command line parses them
        // (-q -t pcap:/tmp/x): --to is not a job's to carry.
        ("[-qtpcap:/tmp/x]", "--to is each worker's own"),
    ] {
        std::fs::write(
            &plan,
            format!(
                "workers:\n  - {{name: w0, address: \"unix:/nonexistent\", to: \"null\"}}\n\
                 job: {{command: replay, file: cap.pcap, duration: 1s, args: {args}}}\n"
            ),
        )
        .unwrap();
        let o = run(&["control", "run", s(&plan)]);
        refused(&o, what);
    }
}

#[test]
fn values_out_of_range_are_refused_with_the_limit_named() {
    let d = tmpdir("opts-range");
    let t = trace(&d);
    let o = run(&["replay", s(&t), "--to", "null", "-q", "-x", "1e-300"]);
    refused(&o, "between 1e-9 and 1e9");
    let o = run(&["replay", s(&t), "--to", "null", "-q", "--limit", "0"]);
    refused(&o, "must be at least 1");
    let o = run(&["replay", s(&t), "--to", "null", "-q", "--ttl", "++1"]);
    refused(&o, "expected N, +N or -N");
    let o = run(&["pace", "--tap", "sl0", "--to", "null", "--queue-limit", "0"]);
    refused(&o, "must be at least 1");
    let o = run(&["rx", "lo", "--count", "0"]);
    refused(&o, "must be at least 1");
    let o = run(&[
        "replay",
        s(&t),
        "--to",
        "null",
        "-q",
        "--start-at",
        "9200000000000000000",
    ]);
    refused(&o, "at most 7 days ahead");
    let p = d.join("p.yaml");
    std::fs::write(
        &p,
        "seed: 1\npackets: 10\nrate: 1e-300\nipd: {dist: poisson}\nsize: {dist: constant, bytes: 64}\n",
    )
    .unwrap();
    let o = run(&["profile", "run", s(&p), "--to", "null", "-q"]);
    refused(&o, "a gap must be between 1 ns");
    assert!(!stderr(&o).contains("inf ns"), "{}", stderr(&o));
}

#[test]
fn a_summary_goes_to_dev_stdout_and_a_missing_interface_lists_the_others() {
    let d = tmpdir("opts-stdout");
    let t = trace(&d);
    // stdout is a pipe here: /dev/stdout names it.
    let o = run(&[
        "replay",
        s(&t),
        "--to",
        "null",
        "-q",
        "--clock",
        "virtual",
        "--summary-json",
        "/dev/stdout",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\"packets\": 5"), "{out}");
    let o = run(&["replay", s(&t), "--to", "afpacket:sl-no-such0", "-q"]);
    refused(&o, "interfaces here:");
    assert!(stderr(&o).contains("lo"), "{}", stderr(&o));
}

#[test]
fn a_listener_on_port_0_says_its_port() {
    let d = tmpdir("opts-port0");
    let tok = d.join("tok");
    let mut c = sluice()
        .args([
            "inject",
            "--listen",
            "tcp:127.0.0.1:0",
            "--token-file",
            s(&tok),
            "--to",
            "null",
            "-q",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(c.stderr.take().unwrap());
    let mut said = String::new();
    let t0 = std::time::Instant::now();
    while !said.contains("listening on") && t0.elapsed().as_secs() < 30 {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut err, &mut line).unwrap_or(0) == 0 {
            break;
        }
        said.push_str(&line);
    }
    let _ = c.kill();
    let _ = c.wait();
    let port: u16 = said
        .split("listening on tcp:127.0.0.1:")
        .nth(1)
        .and_then(|r| r.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port said: {said}"));
    assert_ne!(port, 0, "{said}");
}
