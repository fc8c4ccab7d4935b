//! What a careless user (or an attacker with a file) can do to sluice
//! and its outputs: every file a command reads is protected from its
//! outputs, an incomplete run replaces nothing, a killed one leaves no
//! empty target, key generation is all or nothing, profiles whose laws
//! cannot produce are refused naming the key, and the memory budget
//! follows the process's limits.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn every_file_a_command_reads_is_protected_from_its_outputs() {
    let d = tmpdir("hardening-alias");
    let cap = d.join("cap.pcap");
    write_trace(&cap, 50, 1_000_000, 100);
    let before = std::fs::read(&cap).unwrap();
    std::fs::write(
        d.join("p.yaml"),
        "duration: 1s\nrate: 100\nipd: {dist: empirical, from: cap.pcap}\n",
    )
    .unwrap();
    let p = d.join("p.yaml");
    let c = format!("pcap:{}", cap.display());
    // A profile's from: capture, as synth's and run's output.
    for args in [
        vec![
            "profile",
            "synth",
            p.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
        ],
        vec!["profile", "run", p.to_str().unwrap(), "--to", &c],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("is also the input"), "{}", stderr(&o));
    }
    // A split cache, as a replay's output.
    let cache = d.join("split.cache");
    let o = run(&[
        "prep",
        cap.to_str().unwrap(),
        "--split",
        "auto",
        "-o",
        cache.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cached = std::fs::read(&cache).unwrap();
    let split = format!("cache:{}", cache.display());
    let o = run(&[
        "replay",
        cap.to_str().unwrap(),
        "--split",
        &split,
        "--to",
        "null",
        "--to2",
        "null",
        "--summary-json",
        cache.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&cache).unwrap(), cached);
    // A plan's job file, as the controller's summary.
    let plan = d.join("plan.yaml");
    std::fs::write(
        &plan,
        "workers:\n  - {name: w0, address: \"unix:/nonexistent\", to: \"null\"}\n\
         job: {command: replay, file: cap.pcap, duration: 1s}\n",
    )
    .unwrap();
    let o = run(&[
        "control",
        "run",
        plan.to_str().unwrap(),
        "--summary-json",
        cap.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is also the input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&cap).unwrap(), before);
    // Keys and certificates (issue 42, item 2): the controller reads them.
    let keys = d.join("keys");
    let o = run(&["keygen", keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (opt, name) in [
        ("--stats-json", "controller.key"),
        ("--summary-json", "ca.pem"),
    ] {
        let key = keys.join(name);
        let kept = std::fs::read(&key).unwrap();
        let o = run(&[
            "control",
            "run",
            plan.to_str().unwrap(),
            "--tls",
            keys.to_str().unwrap(),
            opt,
            key.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{opt}: {}", stderr(&o));
        assert!(stderr(&o).contains("is also the input"), "{}", stderr(&o));
        assert_eq!(std::fs::read(&key).unwrap(), kept);
    }
    // inject's token.
    let tok = d.join("tok");
    std::fs::write(&tok, format!("{}\n", "0123456789abcdef".repeat(4))).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let kept = std::fs::read(&tok).unwrap();
    for opt in ["--summary-json", "--log-requested", "--stats-json"] {
        let o = run(&[
            "inject",
            "--listen",
            "tcp:127.0.0.1:0",
            "--token-file",
            tok.to_str().unwrap(),
            "--to",
            "null",
            opt,
            tok.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{opt}: {}", stderr(&o));
        assert!(stderr(&o).contains("is also the input"), "{}", stderr(&o));
        assert_eq!(std::fs::read(&tok).unwrap(), kept);
    }
}

/// A tmpfs of `size` mounted at `dir/small` (the caller unmounts it), or
/// None with `test` skipped where it cannot be mounted (not root).
fn small_tmpfs(dir: &std::path::Path, size: &str, test: &str) -> Option<std::path::PathBuf> {
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        sluice_testkit::skip(test, "cannot mount a tmpfs (not root?)");
        return None;
    }
    Some(small)
}

/// A replay of `trace` at 2 kpps to `to`, its stderr to `err`.
fn replay(trace: &std::path::Path, to: &str, extra: &[&str], err: Stdio) -> std::process::Child {
    sluice()
        .args([
            "replay",
            trace.to_str().unwrap(),
            "--pps",
            "2000",
            "-q",
            "--to",
            to,
        ])
        .args(extra)
        .stderr(err)
        .spawn()
        .unwrap()
}

/// SIGINT to a run spawned with its stderr piped: its exit status and
/// what it said.
fn interrupt(mut c: std::process::Child) -> (std::process::ExitStatus, String) {
    signal(c.id(), "-INT");
    let status = wait_within(&mut c, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

#[test]
fn an_incomplete_run_replaces_nothing_and_a_killed_one_leaves_no_empty_target() {
    let d = tmpdir("hardening-partial");
    let trace = d.join("t.pcap");
    write_trace(&trace, 100_000, 1_000_000, 100);
    let out = d.join("out.pcap");
    std::fs::write(&out, b"a good earlier result").unwrap();
    let to = format!("pcap:{}", out.display());
    // Interrupted: the earlier file stays, this run's frames go beside.
    let c = replay(&trace, &to, &[], Stdio::piped());
    let partial = d.join("out.pcap.partial");
    std::thread::sleep(Duration::from_millis(1500));
    let (status, err) = interrupt(c);
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"a good earlier result");
    assert!(!read_all(&partial).is_empty(), "{err}");
    assert!(
        err.contains("out.pcap.partial"),
        "the error names it: {err}"
    );
    // Killed outright, with no file there before: no empty target.
    let fresh = d.join("fresh.pcap");
    let to = format!("pcap:{}", fresh.display());
    let mut c = replay(&trace, &to, &[], Stdio::null());
    std::thread::sleep(Duration::from_millis(1000));
    c.kill().unwrap();
    c.wait().unwrap();
    assert!(!fresh.exists(), "a killed run left {}", fresh.display());
}

#[test]
fn keygen_is_all_or_nothing() {
    let d = tmpdir("hardening-keygen");
    // A filesystem too small for the keys (as root: a 4 KiB tmpfs).
    let Some(small) = small_tmpfs(&d, "4k", "keygen on a full disk") else {
        return;
    };
    // Filled to the brim first.
    let _ = std::fs::write(small.join("fill"), vec![0u8; 4096]);
    let keys = small.join("keys");
    let o = run(&["keygen", keys.to_str().unwrap()]);
    let left: Vec<_> = std::fs::read_dir(&small)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let _ = Command::new("umount").arg(&small).status();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(left, ["fill"], "a half-made key directory: {left:?}");
    // The re-run elsewhere works, and the directory is private.
    let keys = d.join("keys");
    let o = run(&["keygen", keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&keys).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(std::fs::read_dir(&keys).unwrap().count(), 6);
}

#[test]
fn profiles_whose_laws_cannot_produce_are_refused_naming_the_key() {
    let d = tmpdir("hardening-profiles");
    for (name, body, key) in [
        (
            "flows",
            "duration: 1s\nrate: 100\nipd: {dist: poisson}\npacket: {flows: 4294967295}\n",
            "packet.flows",
        ),
        (
            "size",
            "duration: 1s\nrate: 100\nipd: {dist: poisson}\nsize: {dist: normal, mean: 500, std: 1e308}\n",
            "size",
        ),
        (
            "gamma",
            "duration: 1s\nrate: 1000\nipd: {dist: gamma, shape: 1e-300}\n",
            "ipd",
        ),
        (
            "pareto",
            "duration: 1s\nrate: 1000\nipd: {dist: pareto, shape: 1.0000001}\n",
            "ipd",
        ),
    ] {
        let p = d.join(format!("{name}.yaml"));
        std::fs::write(&p, body).unwrap();
        for args in [
            vec!["profile", "spectrum", p.to_str().unwrap()],
            vec!["profile", "run", p.to_str().unwrap(), "--mode", "fourier", "-q"],
            vec!["profile", "run", p.to_str().unwrap(), "-q"],
        ] {
            let mut c = sluice().args(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
            let status = wait_within(&mut c, Duration::from_secs(60));
            let mut err = String::new();
            std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut err).unwrap();
            assert_eq!(status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(err.contains(&format!("{name}.yaml: {key}")), "{name}: {err}");
        }
    }
    // A huge synth is refused before it fills the disk; --limit writes
    // part of it.
    let p = d.join("huge.yaml");
    std::fs::write(
        &p,
        "duration: 100000000s\nrate: 10000000\nipd: {dist: poisson}\n",
    )
    .unwrap();
    let out = d.join("huge.pcap");
    let o = run(&[
        "profile",
        "synth",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("free") && stderr(&o).contains("--limit"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    let o = run(&[
        "profile",
        "synth",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--limit",
        "1000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&out).len(), 1000);
}

#[test]
fn the_memory_budget_follows_the_address_space_limit() {
    if !sluice_testkit::require("prlimit", "memory budget under prlimit") {
        return;
    }
    let d = tmpdir("hardening-prlimit");
    let trace = d.join("big.pcap");
    // 400 000 frames of 1 000 bytes: about 400 MB to preload.
    write_trace(&trace, 400_000, 1_000, 1_000);
    let o = Command::new("prlimit")
        .arg("--as=800000000")
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "replay",
            trace.to_str().unwrap(),
            "--preload",
            "--topspeed",
            "--to",
            "null",
            "-q",
        ])
        .output()
        .unwrap();
    // The budget is half of what the limit leaves: the preload does not
    // fit, so the trace is streamed instead (never an abort on a failed
    // allocation).
    let streamed = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", stderr(o));
        let err = stderr(o);
        assert!(err.contains("streamed from the file instead"), "{err}");
        assert!(err.contains("400000 packets"), "{err}");
        err
    };
    let err = streamed(&o);
    let budget: u64 = err
        .split("budget of ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the budget is named: {err}"));
    assert!(
        budget < 400_000_000,
        "the budget follows the 800 MB limit: {err}"
    );
    // --max-memory gives the budget explicitly.
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--preload",
        "--topspeed",
        "--to",
        "null",
        "-q",
        "--max-memory",
        "1M",
    ]);
    let err = streamed(&o);
    assert!(err.contains("budget of 1000000 bytes"), "{err}");
    std::fs::remove_file(&trace).unwrap();
}

/// Issue 42, item 4: a limit below what a command needs is refused at
/// its start, naming it; never an abort on a failed allocation.
#[test]
fn a_memory_limit_below_the_need_is_refused_at_start() {
    if !sluice_testkit::require("prlimit", "memory limits refused at start") {
        return;
    }
    let profile = sluice_testkit::repo_root().join("examples/profiles/poisson.yaml");
    let limited = |mb: u64, args: &[&str]| {
        Command::new("prlimit")
            .arg(format!("--as={}", mb * 1_000_000))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_sluice"))
            .args(args)
            .output()
            .unwrap()
    };
    let p = profile.to_str().unwrap();
    let fourier = [
        "profile", "run", p, "--mode", "fourier", "--to", "null", "-q",
    ];
    let trial = [
        "rfc2544",
        "--to",
        "afpacket:lo",
        "--rx",
        "lo",
        "--sizes",
        "64",
        "--trial",
        "100ms",
    ];
    for args in [&fourier[..], &trial[..]] {
        let o = limited(100, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("address-space limit"), "{err}");
    }
    // Room for the run, not for a plan at 1 µs (two million bins).
    let o = limited(300, &[&fourier[..], &["--sample", "1us"]].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("more than the memory budget"), "{err}");
}

/// Issue 42, item 6: a FIFO input is waited on in a way SIGTERM ends,
/// and one that replay would read twice is refused.
#[test]
fn a_fifo_input_honours_sigterm_and_is_never_read_twice() {
    let d = tmpdir("hardening-fifo");
    let fifo = d.join("in.pcap");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        sluice_testkit::skip("FIFO inputs", "mkfifo");
        return;
    }
    let f = fifo.to_str().unwrap();
    let o = run(&["replay", f, "--loop", "2", "--to", "null", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("can be read once"), "{}", stderr(&o));
    let o = run(&["replay", f, f, "--to", "null", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Both laws of a profile from one FIFO: refused before either reads.
    let both = d.join("both.yaml");
    std::fs::write(
        &both,
        "seed: 1\npackets: 10\nipd: {dist: empirical, from: in.pcap}\n\
         size: {dist: empirical, from: in.pcap}\n",
    )
    .unwrap();
    let o = run(&[
        "profile",
        "run",
        both.to_str().unwrap(),
        "--to",
        "null",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("can be read once"), "{}", stderr(&o));
    // A profile whose law reads the FIFO: no writer comes; SIGTERM ends
    // the wait (a blocking open restarted after every signal).
    let profile = d.join("p.yaml");
    std::fs::write(
        &profile,
        "seed: 1\npackets: 10\nipd: {dist: empirical, from: in.pcap}\n\
         size: {dist: constant, bytes: 64}\n",
    )
    .unwrap();
    let mut c = sluice()
        .args([
            "profile",
            "run",
            profile.to_str().unwrap(),
            "--to",
            "null",
            "-q",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    signal(c.id(), "-TERM");
    let status = wait_within(&mut c, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut err).unwrap();
    assert!(matches!(status.code(), Some(2 | 130)), "{status:?}: {err}");
    assert!(err.contains("waiting for its writer"), "{err}");
}

/// Issue 42, item 11: a missing trace says it cannot be opened, with no
/// byte offset.
#[test]
fn a_missing_trace_is_named_plainly() {
    let o = run(&["replay", "/nonexistent/t.pcap", "--to", "null", "-q"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/nonexistent/t.pcap: cannot open it: No such file"),
        "{err}"
    );
    assert!(!err.contains("byte 0"), "{err}");
}

/// Issue 42, item 1: a full disk keeps the old output, and the count
/// stderr names is the count of whole records in the `.partial` (it
/// counted records still buffered when the write failed).
#[test]
fn a_full_disk_names_the_true_count_of_the_partial_output() {
    let d = tmpdir("hardening-full");
    let trace = d.join("t.pcap");
    // About 2.4 MB of records, for a 1 MiB filesystem.
    write_trace(&trace, 20_000, 1_000, 100);
    let Some(small) = small_tmpfs(&d, "1m", "a full disk") else {
        return;
    };
    let out = small.join("out.pcap");
    write_trace(&out, 3, 1_000, 64);
    let before = std::fs::read(&out).unwrap();
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
        "--to",
        &format!("pcap:{}", out.display()),
    ]);
    let err = stderr(&o);
    let kept = std::fs::read(&out).unwrap();
    let partial = read_all(&small.join("out.pcap.partial"));
    let _ = Command::new("umount").arg(&small).status();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(kept, before, "{err}");
    assert!(!partial.is_empty(), "{err}");
    assert!(
        err.contains(&format!("this run's {} packets are in", partial.len())),
        "the partial holds {}: {err}",
        partial.len()
    );
}

/// Issue 42, item 1: an interrupted run's summary and log replace no
/// earlier ones either; they go beside them.
#[test]
fn an_interrupted_runs_summary_and_log_replace_nothing() {
    let d = tmpdir("hardening-int-json");
    let trace = d.join("t.pcap");
    write_trace(&trace, 100_000, 1_000_000, 100);
    let (summary, stats) = (d.join("s.json"), d.join("st.jsonl"));
    std::fs::write(&summary, b"earlier summary\n").unwrap();
    std::fs::write(&stats, b"earlier log\n").unwrap();
    let c = replay(
        &trace,
        "null",
        &[
            "--summary-json",
            summary.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        Stdio::piped(),
    );
    // The log is followed as it grows: its first line is in the partial.
    let log = d.join("st.jsonl.partial");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&log).map_or(true, |t| t.is_empty()) {
        assert!(t0.elapsed().as_secs() < 60, "no line in {}", log.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, err) = interrupt(c);
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(std::fs::read(&summary).unwrap(), b"earlier summary\n");
    assert_eq!(std::fs::read(&stats).unwrap(), b"earlier log\n");
    let kept = std::fs::read_to_string(d.join("s.json.partial")).unwrap();
    assert!(kept.contains("\"interrupted\": true"), "{kept}");
    assert!(err.contains("st.jsonl.partial"), "{err}");
}
