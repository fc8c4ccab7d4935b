//! The surfaces an attacker or a tcpreplay user reaches first: inputs
//! read whole stay bounded whatever the path names, writers stop cleanly
//! on SIGINT/SIGTERM (the old file kept, `NAME.partial` named), an output
//! FIFO without a reader does not hold a signal off, a FIFO is never read
//! twice, and `--start-at` holds at top speed.

mod common;

use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(ok.success());
}

/// Runs a command that must refuse at once (exit 2) naming `needle`.
fn refused(args: &[&str], needle: &str) {
    let mut child = sluice()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // An unbounded read of /dev/zero takes every byte of memory long
    // before this; a bounded one ends in a fraction of it.
    let status = wait_within(&mut child, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn endless_inputs_are_refused_not_read_into_memory() {
    let d = tmpdir("surf-zero");
    let t = d.join("t.pcap");
    write_trace(&t, 10, 1000, 64);
    let (t, z) = (t.to_str().unwrap(), d.join("z.pcap"));
    let z = z.to_str().unwrap();
    refused(
        &["tcprewrite", "-i", t, "-o", z, "-c", "/dev/zero"],
        "/dev/zero",
    );
    refused(&["tcpprep", "-P", "/dev/zero"], "/dev/zero");
    refused(
        &[
            "replay",
            t,
            "--to",
            "null",
            "--to2",
            "null",
            "--split",
            "tcpprep:/dev/zero",
        ],
        "/dev/zero",
    );
    refused(
        &["replay", t, "--to", "null", "--split", "cache:/dev/zero"],
        "/dev/zero",
    );
    assert!(!Path::new(z).exists());
}

/// A pcap header and `n` frames written into a FIFO whose writer stays
/// open: the reading side blocks after them, so a signal finds the
/// writer mid-run whatever the machine's speed.
fn feed_fifo(fifo: &Path, n: u64) -> std::fs::File {
    let src = fifo.with_extension("src");
    write_trace(&src, n, 1000, 64);
    let bytes = std::fs::read(&src).unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    w.write_all(&bytes).unwrap();
    w
}

/// Waits until the hidden temporary output beside `target` holds `bytes`.
fn wait_written(dir: &Path, bytes: u64) {
    let t0 = Instant::now();
    while !std::fs::read_dir(dir).unwrap().any(|e| {
        let e = e.unwrap();
        e.file_name().to_string_lossy().ends_with(".sluice-tmp")
            && e.metadata().is_ok_and(|m| m.len() >= bytes)
    }) {
        assert!(t0.elapsed() < Duration::from_secs(120), "nothing written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `tool` reads a FIFO fed 50 frames and held open, writing `out`, which
/// holds an older run's file; `sig` stops it.
fn writer_stops(tool: &[&str], sig: &str) {
    let d = tmpdir(&format!("surf-{}-{sig}", tool[0]));
    let fifo = d.join("in.pcap");
    mkfifo(&fifo);
    let out = d.join("out.pcap");
    std::fs::write(&out, b"an older run's output").unwrap();
    let mut args: Vec<String> = tool.iter().map(|s| s.to_string()).collect();
    for a in &mut args {
        *a = a
            .replace("IN", fifo.to_str().unwrap())
            .replace("OUT", out.to_str().unwrap());
    }
    let child = sluice()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let held = feed_fifo(&fifo, 50);
    // The temporary output exists once the first frame was read (its
    // handlers are in place by then); the rest are read meanwhile, or not:
    // what was written is a prefix of what was fed.
    wait_written(&d, 0);
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), sig);
    let o = child.wait_with_output().unwrap();
    drop(held);
    assert_eq!(o.status.code(), Some(130), "{args:?}: {}", stderr(&o));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        b"an older run's output",
        "the old output is kept"
    );
    let partial = d.join("out.pcap.partial");
    let got = frames_of(&partial);
    let fed = frames_of(&fifo.with_extension("src"));
    assert!(
        !got.is_empty() && fed.starts_with(&got),
        "{} frames written, a prefix of the 50 fed: {}",
        got.len(),
        stderr(&o)
    );
    assert!(stderr(&o).contains("out.pcap.partial"), "{}", stderr(&o));
    // No hidden temporary file and no lock are left.
    let left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn tcpreplay_write_stops_on_sigint_keeping_the_old_file() {
    writer_stops(&["tcpreplay", "-q", "-w", "OUT", "IN"], "-INT");
}

#[test]
fn tcprewrite_stops_on_sigterm_keeping_the_old_file() {
    writer_stops(&["tcprewrite", "-i", "IN", "-o", "OUT"], "-TERM");
}

#[test]
fn a_long_tcpreplay_write_stops_on_sigint() {
    let d = tmpdir("surf-loop");
    let t = d.join("t.pcap");
    write_trace(&t, 1000, 1000, 64);
    let out = d.join("zz.pcap");
    let child = sluice()
        .args(["tcpreplay", "-q", "--loop=100000", "-w"])
        .arg(&out)
        .arg(&t)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // More than one pass (1000 frames of 80 bytes) written.
    wait_written(&d, 24 + 2 * 1000 * 80);
    signal(child.id(), "-INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    // Nothing was there: the output is the target itself, and whole.
    let n = read_all(&out).len();
    assert!((2000..100_000_000).contains(&n), "{n}");
}

#[test]
fn an_output_fifo_without_a_reader_yields_to_sigint() {
    use std::io::BufRead;
    let d = tmpdir("surf-ofifo");
    let t = d.join("t.pcap");
    write_trace(&t, 10, 1000, 64);
    let fifo = d.join("o.fifo");
    mkfifo(&fifo);
    for extra in [
        vec!["--to".to_string(), format!("pcap:{}", fifo.display())],
        vec![
            "--to".into(),
            "null".into(),
            "--stats-json".into(),
            fifo.display().to_string(),
        ],
    ] {
        let mut child = sluice()
            .arg("replay")
            .arg(&t)
            .args(&extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Waiting for its reader, it says so (its handlers are in place).
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("waiting for its reader") {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "{extra:?}: no word of the wait"
            );
        }
        signal(child.id(), "-INT");
        let status = wait_within(&mut child, Duration::from_secs(60));
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        assert!(
            matches!(status.code(), Some(1..=2 | 130)),
            "{extra:?}: {status:?}: {rest}"
        );
    }
}

#[test]
fn a_fifo_is_never_read_twice() {
    let d = tmpdir("surf-twice");
    let fifo = d.join("in.pcap");
    mkfifo(&fifo);
    let out = d.join("o.pcap");
    let o = run(&[
        "tcpreplay",
        "--loop=2",
        "-w",
        out.to_str().unwrap(),
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("read once"), "{}", stderr(&o));
    let o = run(&[
        "tcpreplay",
        "-w",
        out.to_str().unwrap(),
        fifo.to_str().unwrap(),
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("named twice"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn start_at_holds_at_top_speed() {
    let d = tmpdir("surf-startat");
    let t = d.join("t.pcap");
    write_trace(&t, 100, 1000, 64);
    let out = d.join("o.pcap");
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    // A lower bound only: a busy machine makes the run later, never
    // earlier.
    let at = now_ns + 1_500_000_000;
    let t0 = Instant::now();
    let o = run(&[
        "replay",
        t.to_str().unwrap(),
        "--topspeed",
        "-q",
        "--start-at",
        &at.to_string(),
        "--to",
        &format!("pcap:{}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let done = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    assert!(
        done >= at,
        "ended {} ms before --start-at (after {:?})",
        (at - done) / 1_000_000,
        t0.elapsed()
    );
    assert_eq!(read_all(&out).len(), 100);
}

#[test]
fn tcprewrite_writes_standard_output_for_a_dash() {
    let d = tmpdir("surf-dash");
    let t = d.join("t.pcap");
    write_trace(&t, 5, 1000, 64);
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&d)
        .args(["tcprewrite", "-i", t.to_str().unwrap(), "-o", "-"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join("-").exists(), "a file named '-' was written");
    // The pcap on stdout: a header and 5 records of 16 + 64 bytes.
    assert_eq!(o.stdout.len(), 24 + 5 * 80);
    assert_eq!(&o.stdout[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
}

#[test]
fn a_full_disk_is_said_and_the_summary_counts_what_the_file_holds() {
    let what = "a pcap output on a full disk";
    if !sluice_testkit::require_root(what) || !sluice_testkit::require("unshare", what) {
        return;
    }
    let d = tmpdir("surf-full");
    let t = d.join("t.pcap");
    write_trace(&t, 20_000, 1000, 100);
    let disk = d.join("disk");
    std::fs::create_dir(&disk).unwrap();
    // A 1 MiB tmpfs in a mount namespace of its own: the run's file is
    // copied out before the namespace (and the mount) goes.
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs {disk} && \
         {bin} replay {t} --topspeed -q --to pcap:{disk}/o.pcap --summary-json {d}/s.json; \
         echo rc=$?; cp {disk}/o.pcap* {d}/ 2>/dev/null; true",
        disk = disk.display(),
        bin = env!("CARGO_BIN_EXE_sluice"),
        t = t.display(),
        d = d.display(),
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("rc=1"), "{out}: {}", stderr(&o));
    assert!(stderr(&o).contains("No space left"), "{}", stderr(&o));
    // Nothing was there: what the disk took is the target itself.
    let held = read_all(&d.join("o.pcap")).len() as u64;
    assert!(held > 0 && held < 20_000, "{held}");
    assert!(
        stderr(&o).contains(&format!("holds the {held} packets")),
        "{}",
        stderr(&o)
    );
    let s: serde_json::Value =
        sluice_testkit::checked_json(&std::fs::read(d.join("s.json")).unwrap());
    assert_eq!(s["packets"].as_u64(), Some(held), "{s}");
}

#[test]
fn replay_dash_t_with_a_trace_says_what_t_means() {
    let o = run(&["replay", "-t", "x.pcap"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--topspeed"), "{}", stderr(&o));
}

#[test]
fn tcpreplay_refuses_factors_and_limits_it_would_misread() {
    let d = tmpdir("surf-x0");
    let t = d.join("t.pcap");
    write_trace(&t, 5, 1000, 64);
    let t = t.to_str().unwrap();
    for (args, says) in [
        (vec!["-x", "0"], "--multiplier 0"),
        (vec!["-x", "-1"], "--multiplier -1"),
        (vec!["-L", "0"], "--limit 0"),
    ] {
        let mut all = vec!["tcpreplay", "-i", "lo"];
        all.extend(args.iter().copied());
        all.push(t);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}
