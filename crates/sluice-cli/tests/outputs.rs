//! Outputs never destroy inputs, never lose what was there, never follow a
//! planted symlink, and are checked before any packet is sent (issue:
//! "Nothing lost, nothing overwritten"). Each test is a reproduction that
//! destroyed or lost data before outputs were written atomically.

mod common;
use common::*;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn assert_refused(o: &std::process::Output, what: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(o));
}

#[test]
fn replay_into_its_own_trace_is_refused_and_the_trace_kept() {
    let d = tmpdir("out-self-replay");
    let t = d.join("t.pcap");
    write_trace(&t, 50, 1000, 64);
    let before = std::fs::read(&t).unwrap();
    let to = format!("pcap:{}", s(&t));
    let o = run(&["replay", s(&t), "--to", &to, "-q"]);
    assert_refused(&o, "--to pcap: the trace");
    assert!(
        stderr(&o).contains("would destroy the input"),
        "{}",
        stderr(&o)
    );
    for opt in ["--summary-json", "--stats-json"] {
        let o = run(&["replay", s(&t), opt, s(&t), "-q", "--clock", "virtual"]);
        assert_refused(&o, opt);
    }
    assert_eq!(std::fs::read(&t).unwrap(), before);
}

#[test]
fn two_outputs_naming_one_file_are_refused() {
    let d = tmpdir("out-twice");
    let t = d.join("t.pcap");
    write_trace(&t, 5, 1000, 64);
    let j = d.join("s.json");
    let o = run(&[
        "replay",
        s(&t),
        "--summary-json",
        s(&j),
        "--stats-json",
        s(&j),
        "-q",
    ]);
    assert_refused(&o, "same output twice");
    assert!(
        stderr(&o).contains("name the same output"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn series_dump_and_play_and_flows_import_never_write_over_their_input() {
    let d = tmpdir("out-self-series");
    let arc = convert_csv(
        &d,
        "a",
        "timestamp,device_id,value\n2024-01-01T00:00:00Z,d1,1\n2024-01-01T00:00:00.001Z,d1,2\n",
    );
    let before = std::fs::read(&arc).unwrap();
    let o = run(&["series", "dump", s(&arc), "-o", s(&arc)]);
    assert_refused(&o, "series dump -o the archive");
    let to = format!("pcap:{}", s(&arc));
    let o = run(&["series", "play", s(&arc), "--to", &to, "-q"]);
    assert_refused(&o, "series play --to pcap: the archive");
    assert_eq!(std::fs::read(&arc).unwrap(), before);

    let csv = d.join("f.csv");
    std::fs::write(&csv, "ts,te,td,sa,da,sp,dp,pr\n").unwrap();
    let o = run(&["flows", "import", s(&csv), "-o", s(&csv)]);
    assert_refused(&o, "flows import -o the records");
    assert_eq!(std::fs::read(&csv).unwrap(), b"ts,te,td,sa,da,sp,dp,pr\n");
}

#[test]
fn a_bad_summary_path_fails_before_anything_is_sent() {
    let d = tmpdir("out-bad-summary");
    let t = d.join("t.pcap");
    write_trace(&t, 5, 1000, 64);
    let cap = d.join("cap.pcap");
    let to = format!("pcap:{}", s(&cap));
    let o = run(&[
        "replay",
        s(&t),
        "--to",
        &to,
        "--summary-json",
        "/nonexistent-dir/s.json",
        "-q",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("/nonexistent-dir/s.json"),
        "{}",
        stderr(&o)
    );
    assert!(
        !stderr(&o).contains("sent "),
        "the run must not start: {}",
        stderr(&o)
    );
    assert!(!cap.exists(), "no output may be left behind");
}

#[test]
fn a_trace_that_fails_before_its_first_frame_leaves_the_old_pcap() {
    let d = tmpdir("out-keep-old");
    let good = d.join("good.pcap");
    write_trace(&good, 20, 1000, 64);
    let before = std::fs::read(&good).unwrap();
    // tcpreplay's Cisco HDLC trace: refused at its first packet.
    let hdlc = testdata("tcpreplay__test.rewrite_dlthdlc.pcap");
    let to = format!("pcap:{}", s(&good));
    let o = run(&["replay", s(&hdlc), "--to", &to, "-q", "--clock", "virtual"]);
    assert_refused(&o, "unsupported link type");
    assert_eq!(std::fs::read(&good).unwrap(), before);
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no temporary file left behind"
    );
}

#[test]
fn outputs_never_follow_a_planted_symlink() {
    let d = tmpdir("out-symlink");
    let victim = d.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let t = d.join("t.pcap");
    write_trace(&t, 5, 1000, 64);
    let link = d.join("cap.pcap");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let to = format!("pcap:{}", s(&link));
    let o = run(&["replay", s(&t), "--to", &to, "-q", "--clock", "virtual"]);
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    let o = run(&["replay", s(&t), "--summary-json", s(&link), "-q"]);
    assert!(!o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn a_failed_convert_keeps_the_previous_archive() {
    let d = tmpdir("out-convert-fail");
    let arc = convert_csv(
        &d,
        "a",
        "timestamp,device_id,value\n2024-01-01T00:00:00Z,d1,1\n",
    );
    let before = std::fs::read(&arc).unwrap();
    let bad = d.join("bad.csv");
    std::fs::write(&bad, "timestamp,device_id,value\nnot-a-time,d1,1\n").unwrap();
    let o = run(&["series", "convert", s(&bad), s(&arc)]);
    assert_refused(&o, "bad CSV");
    assert_eq!(std::fs::read(&arc).unwrap(), before);
}

#[test]
fn the_demo_refuses_a_planted_symlink_in_its_directory() {
    let d = tmpdir("out-demo");
    let victim = d.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, d.join("demo-trace.pcap")).unwrap();
    let o = run(&["demo", "--dir", s(&d), "--no-veth", "--packets", "10"]);
    assert!(!o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn a_pcap_output_is_complete_and_in_place_after_the_run() {
    let d = tmpdir("out-pcap-ok");
    let t = d.join("t.pcap");
    write_trace(&t, 300, 1000, 64);
    let cap = d.join("cap.pcap");
    let o = run_to_pcap(&["replay", s(&t)], &cap, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&cap).len(), 300);
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn a_pcap_being_written_holds_whole_records_within_a_second_and_a_kill_loses_only_the_last() {
    let d = tmpdir("out-durable");
    let t = d.join("t.pcap");
    // 40 frames 100 ms apart: a 4-second run.
    write_trace(&t, 40, 100_000_000, 64);
    let cap = d.join("cap.pcap");
    let to = format!("pcap:{}", s(&cap));
    let mut child = sluice()
        .args(["replay", s(&t), "--to", &to, "-q"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the temporary file holds records (the first flush comes
    // within a second of the first frame), however slowly the run started.
    let t0 = std::time::Instant::now();
    let tmp_len = || {
        std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap())
            .find(|e| e.file_name().to_string_lossy().ends_with(".sluice-tmp"))
            .and_then(|e| e.metadata().ok())
            .map_or(0, |m| m.len())
    };
    while tmp_len() < 24 + 2 * (16 + 64) {
        assert!(t0.elapsed().as_secs() < 60, "nothing written within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The run never finished: the target was not replaced, and the
    // temporary file beside it holds what was sent so far, record by
    // whole record.
    let tmp = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".sluice-tmp"))
        .expect("the temporary pcap is there");
    let mut r = sluice_capture::CaptureReader::open(&tmp).unwrap();
    let mut n = 0;
    while r.next_packet().expect("only whole records").is_some() {
        n += 1;
    }
    assert!(n >= 2, "the flushed frames are whole records: {n}");
}

/// One exit-code table for every command: an output that cannot be
/// created is the environment's failure (1), whatever the command and
/// whichever option names it; an output that aliases an input is bad
/// usage (2).
#[test]
fn an_output_that_cannot_be_created_exits_1_in_every_command() {
    let d = tmpdir("out-exit-codes");
    let t = d.join("t.pcap");
    write_trace(&t, 3, 1000, 64);
    let csv = sluice_testkit::testdata("timeseries").join("obspy_example_BW.RJOB_3ch_100Hz.csv");
    let arc = d.join("a.arc");
    assert!(run(&["series", "convert", s(&csv), s(&arc)])
        .status
        .success());
    let records =
        sluice_testkit::testdata("flows").join("DERIVED_pmacct_100_ipfix_cisco_flows.csv");
    let session = sluice_testkit::repo_root().join("examples/sessions/mixed.yaml");
    let bad = "/nonexistent-dir/out";
    let pcap = format!("pcap:{bad}.pcap");
    let cases: Vec<Vec<&str>> = vec![
        vec!["replay", s(&t), "--to", &pcap, "-q"],
        vec!["replay", s(&t), "--summary-json", bad, "-q"],
        vec!["replay", s(&t), "--stats-json", bad, "-q"],
        vec![
            "series",
            "play",
            s(&arc),
            "--to",
            &pcap,
            "-q",
            "--tight-loop",
            "0",
        ],
        vec!["series", "play", s(&arc), "--summary-json", bad, "-q"],
        vec!["flows", "run", s(&session), "--to", &pcap, "-q"],
        vec!["series", "convert", s(&csv), bad],
        vec!["series", "dump", s(&arc), "-o", bad],
        vec!["flows", "import", s(&records), "-o", bad],
    ];
    for args in cases {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("/nonexistent-dir/out"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let to = format!("pcap:{}", s(&t));
    assert_refused(
        &run(&["replay", s(&t), "--to", &to, "-q"]),
        "pcap over its trace",
    );
}

/// The demo keeps what it wrote and explains each figure it prints.
#[test]
fn the_demo_keeps_its_files_and_explains_its_figures() {
    let d = tmpdir("demo-keeps");
    let o = run(&["demo", "--dir", s(&d), "--no-veth", "--packets", "200"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["demo-trace.pcap", "demo-capture.pcap"] {
        assert!(d.join(f).metadata().unwrap().len() > 1000, "{f}");
    }
    let out = String::from_utf8_lossy(&o.stdout);
    let (_, explained) = out
        .split_once("== what the figures mean ==")
        .expect("explanations");
    for figure in [
        "lost",
        "reordered",
        "foreign",
        "achieved rate",
        "|D_M - D_R|",
        "ε",
        "late",
    ] {
        assert!(
            out.contains(figure) || stderr(&o).contains(figure),
            "{figure} not printed"
        );
        assert!(explained.contains(figure), "{figure} not explained");
    }
}

/// An output that is a device node, FIFO or socket was replaced by a
/// regular file (temp file + rename): `--summary-json /dev/null` as root
/// would have replaced the host's /dev/null. A character device or FIFO is
/// now written in place and stays what it was; a socket is refused.
#[test]
fn outputs_that_are_not_regular_files_are_never_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let d = tmpdir("out-nodes");
    let t = d.join("t.pcap");
    write_trace(&t, 20, 1000, 64);
    let replay = |summary: &Path| {
        run(&[
            "replay",
            s(&t),
            "--clock",
            "virtual",
            "-q",
            "--summary-json",
            s(summary),
        ])
    };
    // A FIFO: the reader gets the summary, the FIFO stays a FIFO.
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let f = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(&f).unwrap());
    let o = replay(&fifo);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = sluice_testkit::checked_json(&reader.join().unwrap());
    assert_eq!(j["packets"], 20);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A socket: refused, and left alone.
    let sock = d.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let o = replay(&sock);
    assert_refused(&o, "a socket");
    assert!(stderr(&o).contains("is a socket"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
    // A character device (a /dev/null of our own; needs root): written in
    // place, still a device, even as the pcap output.
    if sluice_testkit::require_root("device node outputs") {
        let null = d.join("null");
        assert!(std::process::Command::new("mknod")
            .arg(&null)
            .args(["c", "1", "3"])
            .status()
            .unwrap()
            .success());
        let o = replay(&null);
        assert!(o.status.success(), "{}", stderr(&o));
        let to = format!("pcap:{}", s(&null));
        let o = run(&["replay", s(&t), "--clock", "virtual", "-q", "--to", &to]);
        assert!(o.status.success(), "{}", stderr(&o));
        let m = std::fs::symlink_metadata(&null).unwrap();
        assert!(m.file_type().is_char_device(), "{m:?}");
        assert!(
            !std::fs::read_dir(&d).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("sluice-tmp")),
            "no temporary file left"
        );
    }
}

/// Issue 42, item 1: a run that fails part-way (a record length of
/// 0xffffffff in its input) replaces no existing output; what it wrote
/// goes beside it, named with the true count of records.
#[test]
fn a_run_that_fails_part_way_replaces_no_output() {
    let d = tmpdir("out-fail-midway");
    let bad = d.join("bad.pcap");
    write_trace(&bad, 50, 1000, 64);
    let mut bytes = std::fs::read(&bad).unwrap();
    // Record 10's caplen: after the 24-byte header and ten 80-byte records.
    let at = 24 + 10 * 80 + 8;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&bad, &bytes).unwrap();
    let keep = d.join("keep.pcap");
    write_trace(&keep, 20, 1000, 64);
    let summary = d.join("s.json");
    let stats = d.join("st.jsonl");
    std::fs::write(&summary, b"{\"good\": 1}\n").unwrap();
    std::fs::write(&stats, b"{\"good\": 2}\n").unwrap();
    let before = std::fs::read(&keep).unwrap();
    let to = format!("pcap:{}", s(&keep));
    let o = run(&[
        "replay",
        s(&bad),
        "--clock",
        "virtual",
        "-q",
        "--to",
        &to,
        "--summary-json",
        s(&summary),
        "--stats-json",
        s(&stats),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(std::fs::read(&keep).unwrap(), before, "{err}");
    assert_eq!(std::fs::read(&summary).unwrap(), b"{\"good\": 1}\n");
    assert_eq!(std::fs::read(&stats).unwrap(), b"{\"good\": 2}\n");
    let partial = d.join("keep.pcap.partial");
    let got = read_all(&partial);
    assert_eq!(got.len(), 10, "{err}");
    assert!(
        err.contains("this run's 10 packets are in") && err.contains("keep.pcap.partial"),
        "{err}"
    );
    assert!(d.join("s.json.partial").exists(), "{err}");
    // Nothing hidden is left behind.
    for e in std::fs::read_dir(&d).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "left behind: {name}");
    }
}

/// Issue 42, item 1: `--stats-json` is a log, readable while the run
/// goes; a run killed outright leaves its pcap in a hidden temporary
/// file that the next run to the same target names and keeps.
#[test]
fn stats_json_is_readable_while_the_run_goes_and_a_killed_runs_pcap_is_rescued() {
    let d = tmpdir("out-stats-live");
    let t = d.join("t.pcap");
    // 60 frames 100 ms apart: a 6-second run.
    write_trace(&t, 60, 100_000_000, 64);
    let stats = d.join("st.jsonl");
    let cap = d.join("cap.pcap");
    write_trace(&cap, 3, 1000, 64);
    let to = format!("pcap:{}", s(&cap));
    let mut child = sluice()
        .args([
            "replay",
            s(&t),
            "-q",
            "--to",
            &to,
            "--stats-json",
            s(&stats),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    // An interval line reaches the file while the run goes.
    while std::fs::read_to_string(&stats).map_or(true, |t| !t.contains("sluice.interval/1")) {
        assert!(t0.elapsed().as_secs() < 60, "no interval line within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(read_all(&cap).len(), 3, "the old pcap is kept");
    // The next run to that target keeps the killed run's frames.
    let o = run(&["replay", s(&t), "--clock", "virtual", "-q", "--to", &to]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("was killed before it ended"), "{err}");
    assert!(!read_all(&d.join("cap.pcap.partial")).is_empty(), "{err}");
    assert_eq!(read_all(&cap).len(), 60);
}
