//! End-to-end replay through the CLI on a virtual clock: deterministic
//! timing assertions without root or wall-clock flakiness.

mod common;
use common::*;

fn replay_to_pcap(
    trace: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    run_to_pcap(&["replay", trace.to_str().unwrap()], out, extra)
}

#[test]
fn pcap_round_trip_is_exact_in_bytes_and_timestamps() {
    let d = tmpdir("roundtrip");
    let trace = testdata("tcpreplay__test.pcap");
    let out = d.join("out.pcap");
    let o = replay_to_pcap(&trace, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = read_all(&trace);
    let got = read_all(&out);
    assert_eq!(want.len(), 179);
    assert_eq!(got, want);
}

#[test]
fn nanosecond_trace_round_trips_exactly() {
    let d = tmpdir("roundtrip-ns");
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 1_234, 64);
    let out = d.join("out.pcap");
    assert!(replay_to_pcap(&trace, &out, &[]).status.success());
    assert_eq!(read_all(&out), read_all(&trace));
}

#[test]
fn multiplier_scales_gaps() {
    let d = tmpdir("mult");
    let trace = d.join("t.pcap");
    write_trace(&trace, 100, 1_000, 64);
    let out = d.join("out.pcap");
    assert!(replay_to_pcap(&trace, &out, &["--multiplier", "2"])
        .status
        .success());
    assert!(gaps(&read_all(&out)).iter().all(|&g| g == 500));
    assert!(replay_to_pcap(&trace, &out, &["-x", "0.5"])
        .status
        .success());
    assert!(gaps(&read_all(&out)).iter().all(|&g| g == 2_000));
}

#[test]
fn fixed_rates_space_packets_exactly() {
    let d = tmpdir("rates");
    let trace = d.join("t.pcap");
    write_trace(&trace, 200, 777, 125);
    let out = d.join("out.pcap");
    assert!(replay_to_pcap(&trace, &out, &["--pps", "100k"])
        .status
        .success());
    assert!(gaps(&read_all(&out)).iter().all(|&g| g == 10_000));
    // 125-byte frames = 1000 bits; at 1 Mbit/s that is 1 ms apart.
    assert!(replay_to_pcap(&trace, &out, &["--mbps", "1"])
        .status
        .success());
    assert!(gaps(&read_all(&out)).iter().all(|&g| g == 1_000_000));
}

#[test]
fn loops_continue_time_without_a_burst_at_the_seam() {
    let d = tmpdir("loop");
    let trace = d.join("t.pcap");
    write_trace(&trace, 10, 1_000, 64);
    let out = d.join("out.pcap");
    assert!(replay_to_pcap(&trace, &out, &["--loop", "3"])
        .status
        .success());
    let got = read_all(&out);
    assert_eq!(got.len(), 30);
    assert!(gaps(&got).iter().all(|&g| g == 1_000), "{:?}", gaps(&got));
    assert_eq!(got[10].1, got[0].1);
}

#[test]
fn limit_and_duration_stop_the_run() {
    let d = tmpdir("limit");
    let trace = d.join("t.pcap");
    write_trace(&trace, 100, 1_000, 64);
    let out = d.join("out.pcap");
    assert!(replay_to_pcap(&trace, &out, &["--limit", "7"])
        .status
        .success());
    assert_eq!(read_all(&out).len(), 7);
    assert!(replay_to_pcap(&trace, &out, &["--duration", "4500ns"])
        .status
        .success());
    assert_eq!(read_all(&out).len(), 5);
    assert!(
        replay_to_pcap(&trace, &out, &["--loop", "0", "--limit", "250"])
            .status
            .success()
    );
    assert_eq!(read_all(&out).len(), 250);
}

#[test]
fn summary_and_stats_json_are_written() {
    let d = tmpdir("json");
    let trace = d.join("t.pcap");
    write_trace(&trace, 50, 1_000, 64);
    let summary = d.join("summary.json");
    let stats = d.join("stats.jsonl");
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "--summary-json",
        summary.to_str().unwrap(),
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    assert_eq!(s["packets"], 50);
    assert_eq!(s["frame_bytes"], 50 * 64);
    assert_eq!(
        s["eps"]["percentiles"]["max_ns"], 0,
        "a virtual clock is never late"
    );
    assert_eq!(s["late"], 0);
    let lines = sluice_testkit::checked_json_lines(&std::fs::read(&stats).unwrap());
    assert_eq!(lines.last().expect("one line at least")["packets"], 50);
    assert!(stderr(&o).contains("sent 50 packets"));
}

#[test]
fn raw_ip_gets_an_ethernet_header() {
    let d = tmpdir("rawip");
    let out = d.join("out.pcap");
    let o = replay_to_pcap(
        &testdata("tcpdump__LINKTYPE_RAW_ipv4.pcap"),
        &out,
        &[
            "--src-mac",
            "02:11:11:11:11:11",
            "--dst-mac",
            "02:22:22:22:22:22",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let got = read_all(&out);
    let src = read_all(&testdata("tcpdump__LINKTYPE_RAW_ipv4.pcap"));
    assert_eq!(got.len(), 1);
    assert_eq!(
        &got[0].1[..14],
        &[2, 0x22, 0x22, 0x22, 0x22, 0x22, 2, 0x11, 0x11, 0x11, 0x11, 0x11, 8, 0]
    );
    assert_eq!(&got[0].1[14..], &src[0].1[..]);
}

#[test]
fn payload_zero_keeps_length_and_clears_payload() {
    let d = tmpdir("zero");
    let trace = d.join("t.pcap");
    write_trace(&trace, 5, 1_000, 100);
    let out = d.join("out.pcap");
    assert!(replay_to_pcap(&trace, &out, &["--payload", "zero"])
        .status
        .success());
    for (_, f) in read_all(&out) {
        assert_eq!(f.len(), 100);
        assert!(f[42..].iter().all(|&b| b == 0));
    }
    assert!(replay_to_pcap(&trace, &out, &["--payload", "truncate"])
        .status
        .success());
    assert!(read_all(&out).iter().all(|(_, f)| f.len() == 42));
}

#[test]
fn unsupported_link_type_is_refused_or_skipped() {
    let trace = testdata("tcpreplay__test.rewrite_dlthdlc.pcap");
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("link type") && e.contains("rewrite_dlthdlc"),
        "{e}"
    );
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
        "--skip-unsupported",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unsupported skipped 179"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn truncated_trace_replays_what_came_before_and_warns() {
    let d = tmpdir("trunc");
    let out = d.join("out.pcap");
    let o = replay_to_pcap(
        &testdata("DERIVED__tcpreplay_test_cut-mid-packet.pcap"),
        &out,
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&out).len(), 99);
    assert!(
        stderr(&o).contains("warning") && stderr(&o).contains("truncated"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_names_the_file_and_exits_2() {
    let o = run(&["replay", "/nonexistent/x.pcap", "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/x.pcap"), "{}", stderr(&o));
    let o = run(&[
        "replay",
        testdata("libpcap__pcap-invalid-version-1.pcap")
            .to_str()
            .unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid-version"), "{}", stderr(&o));
    let o = run(&["replay", "x.pcap", "--pps", "fast"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["replay", "x.pcap", "--to", "tcp:1.2.3.4:9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown sink"));
    let real = testdata("tcpreplay__test.pcap");
    let o = run(&["replay", real.to_str().unwrap(), "--to", "udp:127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("series play"), "{}", stderr(&o));
}

#[test]
fn two_threads_send_every_packet_once() {
    let d = tmpdir("threads");
    let summary = d.join("s.json");
    let o = run(&[
        "replay",
        testdata("zeek__http_bro.org.pcap").to_str().unwrap(),
        "--topspeed",
        "--threads",
        "2",
        "--loop",
        "3",
        "--summary-json",
        summary.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    assert_eq!(s["packets"], 3 * 751);
    assert_eq!(s["threads"], 2);
}

#[test]
fn gzip_trace_is_read() {
    let o = run(&[
        "replay",
        testdata("zeek__echo-connections.pcap.gz").to_str().unwrap(),
        "--topspeed",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("sent 82582 packets"), "{}", stderr(&o));
}

#[test]
fn cpu_list_option_parses_instead_of_panicking() {
    let d = tmpdir("cpu");
    let trace = d.join("t.pcap");
    write_trace(&trace, 10, 1_000, 64);
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
        "--cpu",
        "0",
        "--threads",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
        "--cpu",
        "0,1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["replay", trace.to_str().unwrap(), "-q", "--cpu", "zero"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a CPU number"), "{}", stderr(&o));
}

/// Same frames in the same order, send times within 1 ns (a preloaded pass
/// is shifted by an unrounded period; streaming rounds each due time once).
fn assert_same_run(streamed: &[(u64, Vec<u8>)], preloaded: &[(u64, Vec<u8>)], what: &str) {
    assert_eq!(streamed.len(), preloaded.len(), "{what}: packet count");
    for (i, (s, p)) in streamed.iter().zip(preloaded).enumerate() {
        assert_eq!(s.1, p.1, "{what}: packet {i} bytes");
        assert!(
            s.0.abs_diff(p.0) <= 1,
            "{what}: packet {i} at {} vs {}",
            s.0,
            p.0
        );
    }
}

#[test]
fn preload_sends_exactly_what_streaming_sends() {
    let d = tmpdir("preload");
    let gen = d.join("t.pcap");
    write_trace(&gen, 1000, 1_234, 64);
    let real = testdata("tcpreplay__test.pcap");
    let out = d.join("out.pcap");
    let cases: &[(&std::path::Path, &[&str], usize)] = &[
        (&real, &["--loop", "3"], 3 * 179),
        (&real, &["--loop", "3", "-x", "3"], 3 * 179),
        (&gen, &["--loop", "4", "--pps", "7k"], 4000),
        (&gen, &["--loop", "3", "--mbps", "10"], 3000),
        (&gen, &["--loop", "5", "--limit", "2500"], 2500),
        (&gen, &["--loop", "0", "--duration", "5ms"], 0),
        (
            &gen,
            &["--loop", "2", "--threads", "1", "--payload", "zero"],
            2000,
        ),
    ];
    for (trace, opts, count) in cases {
        let o = replay_to_pcap(trace, &out, opts);
        assert!(o.status.success(), "{opts:?}: {}", stderr(&o));
        let streamed = read_all(&out);
        let mut with = opts.to_vec();
        with.push("--preload");
        let o = replay_to_pcap(trace, &out, &with);
        assert!(o.status.success(), "{with:?}: {}", stderr(&o));
        let preloaded = read_all(&out);
        if *count > 0 {
            assert_eq!(streamed.len(), *count, "{opts:?}");
        } else {
            // 5 ms of 1.234 µs gaps: four whole passes and part of a fifth.
            assert!((4000..5000).contains(&streamed.len()), "{}", streamed.len());
        }
        assert_same_run(&streamed, &preloaded, &format!("{opts:?}"));
    }
}

#[test]
fn preload_over_budget_falls_back_to_streaming_and_says_so() {
    let d = tmpdir("preload-budget");
    let trace = d.join("t.pcap");
    write_trace(&trace, 3000, 1_000, 200);
    let out = d.join("out.pcap");
    let o = replay_to_pcap(&trace, &out, &["--loop", "3"]);
    assert!(o.status.success());
    let streamed = read_all(&out);
    let o = replay_to_pcap(
        &trace,
        &out,
        &["--loop", "3", "--preload", "--preload-max", "100000"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--preload: the trace needs more than"),
        "{}",
        stderr(&o)
    );
    assert_eq!(streamed.len(), 9000);
    assert_same_run(&streamed, &read_all(&out), "fallback");
}

/// A clock jump in a capture used to be waited for in silence (a 2.7-year
/// gap made replay sleep 2.7 years): it is reported with its position, and
/// --max-gap shortens it.
#[test]
fn a_long_gap_is_reported_and_max_gap_shortens_it() {
    let d = tmpdir("max-gap");
    let t = d.join("gap.pcap");
    let file = std::fs::File::create(&t).unwrap();
    let mut w = sluice_capture::PcapWriter::new(
        std::io::BufWriter::new(file),
        sluice_capture::LinkType::ETHERNET,
        65535,
    )
    .unwrap();
    let base = 1_000_000_000_000u64;
    let three_hours = 3 * 3600 * 1_000_000_000u64;
    for (i, ts) in [base, base + 1_000, base + 1_000 + three_hours, base + 500]
        .into_iter()
        .enumerate()
    {
        w.write_packet(ts, &frame(i as u64, 64), 64).unwrap();
    }
    w.into_inner().unwrap();
    let (o, s) = replay_summary(&t, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("packet 3: a gap of 10800s"), "{err}");
    assert!(
        err.contains("packet 4: the recorded time steps back"),
        "{err}"
    );
    assert!(s["duration_s"].as_f64().unwrap() > 10_000.0);
    let (o, s) = replay_summary(&t, &["--max-gap", "1ms"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("shortened to 1ms"), "{}", stderr(&o));
    assert!(s["duration_s"].as_f64().unwrap() < 0.01, "{s}");
}

/// Small inconsistencies: a rate over one packet read "25.00 M pps", a
/// zero duration sent one packet here and none in series play, `--pps 0`
/// said "is not a number".
#[test]
fn rates_of_a_too_short_run_are_null_and_zero_values_are_refused_clearly() {
    let d = tmpdir("short-run");
    let t = d.join("one.pcap");
    write_trace(&t, 1, 1000, 64);
    let (o, s) = replay_summary(&t, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("rate not measured"), "{}", stderr(&o));
    assert!(s["pps"].is_null() && s["bps"].is_null(), "{s}");
    for (opt, value, says) in [
        ("--duration", "0", "must be more than 0"),
        ("--duration", "10", "a bare number needs a unit: 10s, 10ms"),
        ("--pps", "0", "a rate must be more than 0"),
    ] {
        let o = run(&["replay", t.to_str().unwrap(), opt, value]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
}

/// A corrupt record mid-trace used to end the run with exit 2 and no word
/// of what had been sent: the summary comes first, then the error.
#[test]
fn a_run_that_fails_after_sending_still_reports_what_it_sent() {
    let d = tmpdir("fail-after");
    let t = d.join("t.pcap");
    write_trace(&t, 100, 1000, 64);
    let mut bytes = std::fs::read(&t).unwrap();
    // Record 51's captured length: far beyond any snaplen.
    let at = 24 + 50 * (16 + 64) + 8;
    bytes[at..at + 4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    std::fs::write(&t, &bytes).unwrap();
    let cap = d.join("cap.pcap");
    let sum = d.join("s.json");
    let o = run_to_pcap(
        &["replay", t.to_str().unwrap()],
        &cap,
        &["--summary-json", sum.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("sent 50 packets"), "{err}");
    assert!(err.contains("error:") && err.contains("record 51"), "{err}");
    let s: serde_json::Value = sluice_testkit::checked_json(&std::fs::read(&sum).unwrap());
    assert_eq!(s["packets"], 50);
    assert_eq!(read_all(&cap).len(), 50);
}

/// After `replay --pps 10k` of a trace recorded at 1 kpps, `analyze -r`
/// used to report a 900 % rate error and exit 0 even with frames lost:
/// given the run's timing it measures against what was asked, and
/// `--fail-if` gates on the figures with exit 4.
#[test]
fn analyze_measures_against_the_runs_timing_and_gates_on_thresholds() {
    let d = tmpdir("analyze-gate");
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 1_000_000, 100);
    let out = d.join("out.pcap");
    let summary = d.join("run.json");
    let sm = summary.to_str().unwrap();
    assert!(
        replay_to_pcap(&trace, &out, &["--pps", "10k", "--summary-json", sm])
            .status
            .success()
    );
    let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["analyze", o, "-r", t, "--json"];
        args.extend_from_slice(extra);
        let r = run(&args);
        assert!(r.status.success(), "{}", stderr(&r));
        sluice_testkit::checked_json(&r.stdout)
    };
    let recorded = json(&[]);
    assert!(recorded["comparison"]["rate_err_pct"].as_f64().unwrap() > 800.0);
    let asked = json(&["--pps", "10k"]);
    let c = &asked["comparison"];
    assert!(c["rate_err_pct"].as_f64().unwrap().abs() < 0.01, "{c}");
    assert_eq!(
        c["gap_err"]["percentiles"]["max_ns"].as_u64(),
        Some(0),
        "{c}"
    );
    assert_eq!(c["lost"].as_u64(), Some(0), "{c}");
    // The run's own summary says the same.
    assert_eq!(json(&["--run", sm])["comparison"], *c);
    // analyze and report share the timing options and their checks.
    let page = d.join("r.html");
    for cmd in [
        &["analyze", o][..],
        &["report", o, "-o", page.to_str().unwrap()],
    ] {
        let r = run(&[cmd, &["-r", t, "-x", "0"]].concat());
        assert_eq!(r.status.code(), Some(2), "{cmd:?}: {}", stderr(&r));
        assert!(
            stderr(&r).contains("--multiplier: 0 is not a positive"),
            "{}",
            stderr(&r)
        );
    }
    // -x 2 on a run at -x 2 is exact too.
    assert!(replay_to_pcap(&trace, &out, &["-x", "2"]).status.success());
    let scaled = json(&["-x", "2"]);
    assert_eq!(
        scaled["comparison"]["gap_err"]["percentiles"]["max_ns"].as_u64(),
        Some(0)
    );
    assert!(replay_to_pcap(&trace, &out, &["--pps", "10k"])
        .status
        .success());

    let gate = |extra: &[&str]| {
        let mut args = vec!["analyze", o, "-r", t];
        args.extend_from_slice(extra);
        run(&args)
    };
    let pass = gate(&[
        "--pps",
        "10k",
        "--fail-if",
        "lost>0,p99_ns>1000,rate_err_pct>0.1",
    ]);
    assert_eq!(pass.status.code(), Some(0), "{}", stderr(&pass));
    let fail = gate(&["--fail-if", "lost>0,rate_err_pct>0.1"]);
    assert_eq!(fail.status.code(), Some(4), "{}", stderr(&fail));
    let e = stderr(&fail);
    assert!(
        e.contains("rate_err_pct>0.1") && !e.contains("lost>0"),
        "{e}"
    );

    // Half the frames lost: named with the figure.
    let half = d.join("half.pcap");
    write_frames(&half, &read_all(&out)[..500]);
    let lost = run(&[
        "analyze",
        half.to_str().unwrap(),
        "-r",
        t,
        "--pps",
        "10k",
        "--fail-if",
        "lost>0",
    ]);
    assert_eq!(lost.status.code(), Some(4), "{}", stderr(&lost));
    assert!(
        stderr(&lost).contains("comparison.lost = 500"),
        "{}",
        stderr(&lost)
    );

    // Bad conditions are bad input.
    for (spec, says) in [
        ("lost>>1", "'lost>>1'"),
        ("loss>0", "no figure named 'loss'"),
    ] {
        let r = gate(&["--fail-if", spec]);
        assert_eq!(r.status.code(), Some(2), "{spec}: {}", stderr(&r));
        assert!(stderr(&r).contains(says), "{spec}: {}", stderr(&r));
    }
    // The constant-gap mode gates too.
    let g = run(&["analyze", o, "--gap", "100us", "--fail-if", "p99_ns>0"]);
    assert_eq!(g.status.code(), Some(0), "{}", stderr(&g));
    let g = run(&["analyze", o, "--gap", "90us", "--fail-if", "p50_ns>5000"]);
    assert_eq!(g.status.code(), Some(4), "{}", stderr(&g));
}

/// tshark's view of every frame: the fields the rewrite options touch and
/// the checksum verdicts (1 good, 0 bad, empty not checked).
fn tshark_fields(pcap: &std::path::Path) -> Vec<Vec<String>> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .args([
            "-o",
            "udp.check_checksum:TRUE",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
        ])
        .args([
            "-e", "eth.dst", "-e", "eth.src", "-e", "ip.src", "-e", "ip.dst",
        ])
        .args([
            "-e",
            "ip.ttl",
            "-e",
            "ip.dsfield",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.dstport",
        ])
        .args([
            "-e",
            "ip.checksum.status",
            "-e",
            "tcp.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "frame.protocols",
        ])
        .output()
        .expect("tshark runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// Each rewrite option as tshark sees it, checksums updated incrementally
/// (good stay good, bad stay bad) or all fixed with --fixcsum; the old
/// link-type MAC options refuse an Ethernet trace instead of being ignored.
#[test]
fn rewrite_options_change_what_they_name_and_keep_checksum_verdicts() {
    if !sluice_testkit::require("tshark", "rewrite checks") {
        return;
    }
    let d = tmpdir("rewrite");
    let trace = testdata("tcpreplay__test.pcap");
    let out = d.join("out.pcap");
    let o = replay_to_pcap(
        &trace,
        &out,
        &[
            "--enet-dmac",
            "02:00:00:00:00:42",
            "--enet-smac",
            "02:00:00:00:00:43",
            "--srcipmap",
            "172.16.0.0/16:10.1.0.0/16",
            "--dstipmap",
            "172.16.11.12/32:192.0.2.7/32",
            "--portmap",
            "80:8080",
            "--ttl=-1",
            "--tos",
            "184",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (before, after) = (tshark_fields(&trace), tshark_fields(&out));
    assert_eq!(before.len(), after.len());
    let mut mapped = 0;
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            (a[0].as_str(), a[1].as_str()),
            ("02:00:00:00:00:42", "02:00:00:00:00:43")
        );
        if let Some(host) = b[2].strip_prefix("172.16.") {
            assert_eq!(a[2], format!("10.1.{host}"));
            mapped += 1;
        }
        if b[3] == "172.16.11.12" {
            assert_eq!(a[3], "192.0.2.7");
        }
        // (Frames of this trace whose IP sits behind an encapsulation sluice
        // does not parse (PPP) keep their IP header as it is.)
        if b[2].starts_with("172.16.") {
            let ttl: u8 = b[4].parse().unwrap();
            assert_eq!(a[4], ttl.saturating_sub(1).max(1).to_string());
            assert_eq!(a[5], "0xb8");
        }
        for k in [6, 7] {
            if b[k] == "80" {
                assert_eq!(a[k], "8080");
            }
        }
        // Verdicts kept: a checksum bad in the trace is bad after it.
        assert_eq!(
            b[8..11],
            a[8..11],
            "checksum verdicts changed: {b:?} -> {a:?}"
        );
    }
    assert!(mapped >= 80, "{mapped}");
    assert!(
        before.iter().any(|b| b[8] == "0" || b[9] == "0"),
        "no bad checksum in the trace"
    );

    let o = replay_to_pcap(&trace, &out, &["--fixcsum", "--ttl", "9"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for a in tshark_fields(&out) {
        // An IP header behind PPP is not parsed, so not fixed.
        if a[11].contains(":ppp") {
            continue;
        }
        assert!(a[8] != "0" && a[9] != "0" && a[10] != "0", "{a:?}");
    }

    let o = replay_to_pcap(&trace, &out, &["--dst-mac", "02:00:00:00:00:42"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--enet-dmac"), "{}", stderr(&o));
    let o = replay_to_pcap(&trace, &out, &["--srcipmap", "10.0.0.0/8:2001:db8::/32"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// --unique-ip over 3 passes: three disjoint address sets (so a stateful
/// device sees new flows each pass), each pass with as many IP frames, and
/// checksum verdicts as in the trace.
#[test]
fn unique_ip_gives_each_pass_its_own_addresses() {
    if !sluice_testkit::require("tshark", "unique-ip checks") {
        return;
    }
    let d = tmpdir("unique-ip");
    let trace = testdata("tcpreplay__test.pcap");
    let out = d.join("out.pcap");
    let o = replay_to_pcap(&trace, &out, &["--loop", "3", "--unique-ip"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = tshark_fields(&out);
    let before = tshark_fields(&trace);
    assert_eq!(rows.len(), 3 * before.len());
    let mut sets = vec![std::collections::BTreeSet::new(); 3];
    for (i, r) in rows.iter().enumerate() {
        let (pass, b) = (i / before.len(), &before[i % before.len()]);
        for a in [&r[2], &r[3]] {
            if !a.is_empty() {
                sets[pass].insert(a.clone());
            }
        }
        assert_eq!(r[8..11], b[8..11], "checksum verdicts of frame {i}");
        if pass == 0 {
            assert_eq!(r[2..4], b[2..4], "the first pass is the trace's");
        }
    }
    assert!(sets[0].len() >= 10, "{:?}", sets[0]);
    for (a, b) in [(0, 1), (1, 2), (0, 2)] {
        let common: Vec<_> = sets[a].intersection(&sets[b]).collect();
        assert!(common.is_empty(), "passes {a} and {b} share {common:?}");
    }
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--unique-ip",
        "--preload",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `--stats-json` of a looped replay: one schema-checked pass line per
/// pass, each with the trace's frames and bytes, in order, following the
/// one before it; streamed and preloaded, on one TX thread or two; a
/// `--limit` inside a pass leaves it cut short (`complete: false`) with
/// the rest of the frames; a run of one pass has no pass line.
#[test]
fn a_looped_replay_reports_each_pass_in_its_stats_lines() {
    let d = tmpdir("pass-lines");
    let trace = d.join("t.pcap");
    let n = 250u64;
    write_trace(&trace, n, 10_000, 200);
    let stats = d.join("stats.jsonl");
    let passes = |extra: &[&str]| -> (Vec<serde_json::Value>, serde_json::Value) {
        let mut args = vec!["--stats-json", stats.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (o, summary) = replay_summary(&trace, &args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let lines = sluice_testkit::checked_json_lines(&std::fs::read(&stats).unwrap());
        let p = lines
            .into_iter()
            .filter(|l| l["schema"] == "sluice.pass/1")
            .collect();
        (p, summary)
    };
    for extra in [
        &["--to", "null", "--loop", "4"][..],
        &["--to", "null", "--loop", "4", "--preload"],
        &["--to", "null", "--loop", "4", "--threads", "2"],
        &[
            "--to",
            "null",
            "--loop",
            "4",
            "--preload",
            "--threads",
            "2",
            "--topspeed",
        ],
    ] {
        let (p, summary) = passes(extra);
        assert_eq!(p.len(), 4, "{extra:?}: {p:?}");
        for (k, l) in p.iter().enumerate() {
            assert_eq!(l["pass"], k as u64, "{extra:?}");
            assert_eq!(l["complete"], true, "{extra:?}");
            assert_eq!(l["packets"], n, "{extra:?}: {l}");
            assert_eq!(l["frame_bytes"], n * 200, "{extra:?}");
            if k > 0 && !extra.contains(&"--topspeed") {
                // Pass k starts one trace length (n gaps) after pass k-1.
                let (a, b) = (
                    p[k - 1]["start_s"].as_f64().unwrap(),
                    l["start_s"].as_f64().unwrap(),
                );
                assert!(
                    (b - a - n as f64 * 10e-6).abs() < 1e-6,
                    "{extra:?}: {a} -> {b}"
                );
                assert_eq!(l["eps_max_ns"], 0, "virtual clock: ε is 0");
            }
        }
        assert_eq!(summary["packets"], 4 * n, "{extra:?}");
    }
    // Cut inside the third pass: its line says so and holds the rest.
    let (p, _) = passes(&["--to", "null", "--loop", "4", "--limit", "600"]);
    let got: Vec<(u64, bool, u64)> = p
        .iter()
        .map(|l| {
            (
                l["pass"].as_u64().unwrap(),
                l["complete"].as_bool().unwrap(),
                l["packets"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [(0, true, n), (1, true, n), (2, false, 600 - 2 * n)]);
    let (p, _) = passes(&["--to", "null"]);
    assert!(p.is_empty(), "one pass, no pass line: {p:?}");
}

/// `--rx-stamp`: `append` grows every frame by the 24-byte stamp and
/// `replace` writes over the payload's end; either way the stamps number
/// the frames 0, 1, ... in one stream with departures in order, and every
/// checksum stays right (checked here, and by tshark where present).
/// A 64-byte frame takes the short stamp; `replace` leaves frames with
/// too short a payload unstamped, and says so.
#[test]
fn rx_stamps_number_frames_and_keep_checksums() {
    use sluice_wire::rxstamp::{read, RX_STAMP_LEN};
    let d = tmpdir("rx-stamp");
    let (short, long, out) = (d.join("s.pcap"), d.join("l.pcap"), d.join("o.pcap"));
    // Checksums right to begin with (and a UDP checksum to update).
    let valid = |path: &std::path::Path, len: usize| {
        let frames: Vec<(u64, Vec<u8>)> = (0..50u64)
            .map(|i| {
                let mut f = frame(i, len);
                let c = sluice_wire::ipv4_header_checksum(&f[14..34]);
                f[24..26].copy_from_slice(&c.to_be_bytes());
                assert!(sluice_wire::complete_checksum(&mut f));
                (i * 10_000, f)
            })
            .collect();
        write_frames(path, &frames);
    };
    valid(&short, 60); // 18 payload bytes
    valid(&long, 200);
    for (input, mode, grow) in [(&short, "append", RX_STAMP_LEN), (&long, "replace", 0)] {
        let o = replay_to_pcap(input, &out, &["--rx-stamp", mode]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let (sent, got) = (frames_of(input), read_all(&out));
        assert_eq!(got.len(), sent.len());
        let mut last_tx = 0;
        for (k, ((_, f), s)) in got.iter().zip(&sent).enumerate() {
            assert_eq!(f.len(), s.len() + grow, "{mode}");
            sluice_wire::verify_checksums(f).unwrap_or_else(|e| panic!("{mode} {k}: {e:?}"));
            let st = read(f).unwrap_or_else(|| panic!("{mode}: frame {k} unstamped"));
            assert_eq!((st.stream, st.seq), (0, k as u64), "{mode}");
            assert!(st.tx_ns >= last_tx, "{mode}: departures in order");
            last_tx = st.tx_ns;
            // Link header and addresses are the trace's.
            assert_eq!((&f[..14], &f[26..34]), (&s[..14], &s[26..34]), "{mode}");
        }
    }
    // 18 payload bytes take the short stamp; 12 have no room.
    let o = replay_to_pcap(&short, &out, &["--rx-stamp", "replace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (k, (_, f)) in read_all(&out).iter().enumerate() {
        let st = read(f).unwrap_or_else(|| panic!("short: frame {k} unstamped"));
        assert!(st.short && st.seq == k as u64);
        sluice_wire::verify_checksums(f).unwrap();
    }
    let tiny = d.join("tiny.pcap");
    valid(&tiny, 54);
    let o = replay_to_pcap(&tiny, &out, &["--rx-stamp", "replace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("50 frames left without a stamp"),
        "{}",
        stderr(&o)
    );
}
