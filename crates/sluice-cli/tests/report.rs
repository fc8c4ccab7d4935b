//! `sluice report`: the HTML page from a capture judged against its
//! reference and from a run's --stats-json lines, opened in a real headless
//! Chromium (screenshots kept under target/tmp as CI artifacts).

mod common;
use common::*;
use sluice_testkit::require;
use std::path::Path;
use std::process::Command;

/// Renders `html` in headless Chromium: the DOM it built and a screenshot.
fn render(html: &Path, shot: &Path) -> String {
    let url = format!("file://{}", html.display());
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1000,2600",
    ];
    let o = Command::new("chromium")
        .args(base)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let size = std::fs::metadata(shot).map(|m| m.len()).unwrap_or(0);
    // A blank 1000×2600 page compresses to a few KB; charts do not.
    assert!(
        size > 30_000,
        "screenshot {} is {size} bytes",
        shot.display()
    );
    let o = Command::new("chromium")
        .args(base)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn reports_render_in_a_real_browser_with_their_charts() {
    let d = tmpdir("report");
    let trace = d.join("t.pcap");
    write_trace(&trace, 3000, 50_000, 200);
    let (cap, stats) = (d.join("out.pcap"), d.join("st.jsonl"));
    let o = sluice()
        .arg("replay")
        .arg(&trace)
        .arg("--to")
        .arg(format!("pcap:{}", cap.display()))
        .args(["--pps", "20k", "-q", "--stats-json"])
        .arg(&stats)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!sluice_testkit::checked_json_lines(&std::fs::read(&stats).unwrap()).is_empty());
    let (r1, r2) = (d.join("capture.html"), d.join("stats.html"));
    let (t, c) = (trace.to_str().unwrap(), cap.to_str().unwrap());
    let o = run(&[
        "report",
        c,
        "-r",
        t,
        "--pps",
        "20k",
        "-o",
        r1.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "report",
        stats.to_str().unwrap(),
        "-o",
        r2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let page = std::fs::read_to_string(&r1).unwrap();
    assert!(page.matches("<svg").count() >= 4, "charts missing");
    assert!(page.contains("Against the reference") && page.contains("<td>lost</td><td>0</td>"));
    // Self-contained: no script, nothing loaded from elsewhere.
    assert!(!page.contains("<script") && !page.contains("src=\"http"));
    assert!(page.contains("<h2>Flows</h2>"));
    let stats_page = std::fs::read_to_string(&r2).unwrap();
    assert!(stats_page.matches("<svg").count() >= 3);
    assert!(
        !stats_page.contains("<h2>Passes</h2>"),
        "one pass, no table"
    );

    // A looped run's pass lines make a table, one row per pass.
    let looped = d.join("loop.jsonl");
    let o = run(&[
        "replay",
        t,
        "--to",
        "null",
        "--loop",
        "3",
        "--topspeed",
        "-q",
        "--stats-json",
        looped.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["report", looped.to_str().unwrap(), "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = String::from_utf8_lossy(&o.stdout);
    let passes = page
        .split("<h2>Passes</h2>")
        .nth(1)
        .expect("a Passes table");
    assert_eq!(passes.matches("<td>yes</td>").count(), 3, "{passes}");
    assert!(passes.contains("<td>3000</td>"), "{passes}");

    // Bad input is named; the page never replaces an input.
    let o = run(&["report", t, "-o", t]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let junk = d.join("junk.bin");
    std::fs::write(&junk, b"not a capture at all").unwrap();
    let o = run(&["report", junk.to_str().unwrap(), "-o", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("junk.bin"), "{}", stderr(&o));

    if !require("chromium", "report rendering") {
        return;
    }
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (html, name) in [(&r1, "capture.png"), (&r2, "stats.png")] {
        let dom = render(html, &shots.join(name));
        assert!(
            dom.matches("<svg").count() >= 3,
            "{name}: charts not in the DOM"
        );
        assert!(dom.contains("<figcaption>"), "{name}");
    }
}

/// `analyze --gaps --plot`: the requested and measured gaps' CDFs overlaid
/// (Caliper's Figures 5, 6, 8, 10) with their KS distance. A capture
/// against its own gaps is KS 0; against gaps all twice as long, the two
/// CDFs part (KS of an exponential law against itself doubled: 0.25). The
/// SVG opens in a real browser with both curves.
#[test]
fn requested_and_measured_gap_cdfs_are_overlaid_with_their_ks_distance() {
    let d = tmpdir("gap-cdf");
    let profile = d.join("p.yaml");
    std::fs::write(
        &profile,
        "seed: 4\npackets: 5000\nrate: 20k\nipd: {dist: poisson}\nsize: {dist: constant, bytes: 64}\n",
    )
    .unwrap();
    let trace = d.join("t.pcap");
    let o = run(&[
        "profile",
        "synth",
        profile.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let times: Vec<u64> = read_all(&trace).iter().map(|(t, _)| *t).collect();
    let list = |k: u64| {
        let mut s = String::from("0\n");
        for w in times.windows(2) {
            s += &format!("{}\n", (w[1] - w[0]) * k);
        }
        s
    };
    let (same, double) = (d.join("same.txt"), d.join("double.txt"));
    std::fs::write(&same, list(1)).unwrap();
    std::fs::write(&double, list(2)).unwrap();
    let judge = |gaps: &Path, svg: &Path| {
        let o = run(&[
            "analyze",
            trace.to_str().unwrap(),
            "--gaps",
            gaps.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        sluice_testkit::checked_json(&o.stdout)
    };
    let (svg1, svg2) = (d.join("same.svg"), d.join("double.svg"));
    let e = judge(&same, &svg1);
    assert_eq!(
        (e["ks"].as_f64().unwrap(), e["p95_ns"].as_u64().unwrap()),
        (0.0, 0)
    );
    let e = judge(&double, &svg2);
    let ks = e["ks"].as_f64().unwrap();
    assert!((ks - 0.25).abs() < 0.03, "KS {ks}");
    let text = std::fs::read_to_string(&svg2).unwrap();
    assert!(text.contains("requested") && text.contains("measured") && text.contains("KS 0.2"));
    // --plot alone draws nothing: it is refused, and never over an input.
    let o = run(&[
        "analyze",
        trace.to_str().unwrap(),
        "--plot",
        svg1.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&[
        "analyze",
        trace.to_str().unwrap(),
        "--gaps",
        same.to_str().unwrap(),
        "--plot",
    ])
    .status
    .code();
    assert_eq!(o, Some(2));

    if !require("chromium", "gap CDF rendering") {
        return;
    }
    let html = d.join("cdf.html");
    std::fs::write(&html, format!("<html><body>{text}</body></html>")).unwrap();
    let url = format!("file://{}", html.display());
    let o = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout);
    // Both curves are polylines in the DOM the browser built.
    assert!(dom.matches("<polyline").count() >= 2, "{dom}");
}

/// Every table has a row under its header, and every section heading
/// has something under it before the next one (or the page's foot).
fn assert_no_empty_sections(page: &str) {
    for t in page.split("<table>").skip(1) {
        let t = t.split("</table>").next().unwrap();
        assert!(
            t.matches("<tr>").count() >= 2,
            "an empty table: {t}\n{page}"
        );
    }
    for s in page.split("<h2>").skip(1) {
        let body = s.split_once("</h2>").unwrap().1;
        let body = body.split("<p style=\"color:#888\">").next().unwrap();
        assert!(!body.trim().is_empty(), "an empty section: <h2>{s}\n{page}");
    }
}

/// Runs `sluice report FILE -o -`; the page.
fn report_of(file: &Path) -> String {
    let o = run(&["report", file.to_str().unwrap(), "-o", "-"]);
    assert!(o.status.success(), "{}: {}", file.display(), stderr(&o));
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// An `rfc2544 --json` document of one 64-byte size, following its
/// schema: `throughput`, `loss` and `back_to_back` as given.
fn rfc2544_doc(
    throughput: serde_json::Value,
    loss: serde_json::Value,
    b2b: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "schema": "sluice.rfc2544/1",
        "run": {
            "started": "2026-11-28T00:00:00.000000000Z", "started_ns": 0,
            "version": "0", "commit": "x", "command": ["rfc2544"], "inputs": [],
        },
        "to": "afpacket:a", "rx": "b", "both": false, "trial_s": 1.0,
        "loss_tolerance_percent": 0.0, "resolution_percent": 0.5,
        "sizes": [{
            "size": 64, "imix": false, "mean_size": 64.0,
            "max_pps": 48446.0, "max_from": "top_speed",
            "throughput": throughput, "latency": null,
            "loss": loss, "back_to_back": b2b,
        }],
    })
}

/// A trial of 1000 frames asked at `pps`, the sender reaching `sent_pps`.
fn trial(pps: f64, sent_pps: f64, lost: u64) -> serde_json::Value {
    let short = sent_pps < 0.99 * pps;
    serde_json::json!({
        "pps": pps, "sent_pps": sent_pps, "sent": 1000, "received": 1000 - lost,
        "lost": lost, "lost_in_sequence": lost, "reordered": 0, "duplicates": 0,
        "loss_ratio": lost as f64 / 1000.0, "pass": lost == 0 && !short,
        "sender_short": short, "burst": null, "latency": null, "reverse": null,
    })
}

/// The audit's case: a loss trial at 100 % of 48 446 frames/s whose sender
/// reached 17 117 lost nothing, and the throughput search was bounded by
/// the sender. The page must say both, mark every short trial with the
/// rate asked and the rate reached, and show no section of a test that
/// did not run (back-to-back here, throughput in the second document).
#[test]
fn an_rfc2544_report_marks_the_senders_shortfall_and_only_what_ran() {
    let d = tmpdir("report-rfc2544");
    let max = 48_446.0;
    let doc = rfc2544_doc(
        serde_json::json!({
            "pps": 12111.5, "bps": 1e6, "l1_bps": 1.5e6, "converged": true,
            "limit": "sender",
            "trials": [trial(max, 17_117.0, 0), trial(max / 2.0, 17_050.0, 0), trial(max / 4.0, max / 4.0, 0)],
        }),
        serde_json::json!([
            {"percent": 100, "achieved_percent": 35.33, "sender_short": true, "trial": trial(max, 17_117.0, 0)},
            {"percent": 90, "achieved_percent": 35.2, "sender_short": true, "trial": trial(0.9 * max, 17_050.0, 0)},
        ]),
        serde_json::Value::Null,
    );
    assert_eq!(sluice_testkit::schema_errors(&doc), Vec::<String>::new());
    let f = d.join("r.json");
    std::fs::write(&f, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let page = report_of(&f);
    assert_no_empty_sections(&page);
    assert!(!page.contains("Back-to-back"), "b2b did not run: {page}");
    assert!(
        page.contains("64 bytes: limited by the sender, not the device under test")
            && page.contains("at 24223 frames/s asked the sender reached only 17050 frames/s"),
        "{page}"
    );
    assert!(page.contains("<td>THE SENDER</td>"), "{page}");
    let loss = page
        .split("Frame loss rate (§26.3)")
        .nth(1)
        .unwrap()
        .split("<h2>")
        .next()
        .unwrap();
    // Each row: % asked, frames/s asked, % reached, frames/s reached, and
    // the mark.
    let row = loss.split("<tr>").nth(2).unwrap();
    assert!(
        row.contains("<td>100</td><td>48446</td><td>35.3</td><td>17117</td>")
            && row.contains("SENDER SHORT"),
        "{row}"
    );
    assert!(
        loss.contains("In 2 of 2 loss trials the sender, not the device under test, fell short"),
        "{loss}"
    );
    // Every trial names its verdict with the shortfall.
    let every = page.split("<h2>Every trial</h2>").nth(1).unwrap();
    assert_eq!(every.matches("fail: SENDER SHORT").count(), 4, "{every}");
    assert_eq!(every.matches("<td>pass</td>").count(), 1, "{every}");

    // Loss alone: no throughput, latency or back-to-back section.
    let doc = rfc2544_doc(
        serde_json::Value::Null,
        serde_json::json!([
            {"percent": 100, "achieved_percent": 100.0, "sender_short": false, "trial": trial(max, max, 0)},
        ]),
        serde_json::Value::Null,
    );
    assert_eq!(sluice_testkit::schema_errors(&doc), Vec::<String>::new());
    std::fs::write(&f, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let page = report_of(&f);
    assert_no_empty_sections(&page);
    for absent in ["Throughput (§26.1)", "Latency at", "Back-to-back", "SENDER"] {
        assert!(!page.contains(absent), "{absent}: {page}");
    }
    assert!(page.contains("Frame loss rate (§26.3)"), "{page}");

    // A document that does not hold what its schema says: bad input,
    // naming the key.
    let mut bad = doc.clone();
    bad["sizes"][0]["max_pps"] = "fast".into();
    std::fs::write(&f, bad.to_string()).unwrap();
    let o = run(&["report", f.to_str().unwrap(), "-o", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("sizes[0].max_pps"), "{}", stderr(&o));
}

/// An rx line (`sluice.rx/1`) of one stream: `frames` received so far.
fn rx_line(t: f64, frames: u64, last: bool) -> String {
    let dist = |count: u64| {
        serde_json::json!({
            "count": count, "min_ns": 1000, "mean_ns": 4500.0, "stddev_ns": 900.0,
            "percentiles": {"p50_ns": 4000, "p90_ns": 6000, "p99_ns": 9000, "p999_ns": 15000,
                            "max_ns": 20000},
            "exact": false,
        })
    };
    let v = serde_json::json!({
        "schema": "sluice.rx/1",
        "run": {
            "started": "2026-11-28T00:00:00.000000000Z", "started_ns": 0,
            "version": "0", "commit": "x", "command": ["rx"], "inputs": [],
        },
        "iface": "veth1", "t": t, "final": last,
        "stamps": "kernel", "frames": frames, "unstamped": 0, "other_streams": 0,
        "kernel_drops": 0, "clock_step_ns": 0,
        "streams": [{
            "stream": 0, "received": frames, "lost": 2, "duplicates": 0, "reordered": 0,
            "first_seq": 0, "last_seq": frames + 1,
            "latency": dist(frames), "interval_latency": dist(500), "early": 0,
            "jitter_ns": 1000.0, "clock_correction_ns": 0,
            "first_rx_ns": 1_000_000_000, "last_rx_ns": 2_000_000_000,
        }],
    });
    assert_eq!(sluice_testkit::schema_errors(&v), Vec::<String>::new());
    v.to_string()
}

/// `report` takes every file a run writes: a sender's lines with its
/// receiver's mixed in (both rendered), a receiver's lines ending with its
/// final count (the table gives the summary's count, not the last
/// second's), its summary, a sending command's summary, and `control
/// run`'s lines and summary, whose lost worker counts as "at least".
#[test]
fn every_file_a_run_writes_makes_a_report_that_agrees_with_its_summary() {
    let d = tmpdir("report-every");
    let trace = d.join("t.pcap");
    write_trace(&trace, 2000, 100_000, 120);
    let (stats, sum) = (d.join("st.jsonl"), d.join("s.json"));
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--to",
        "null",
        "--pps",
        "1500",
        "-q",
        "--stats-json",
        stats.to_str().unwrap(),
        "--summary-json",
        sum.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The sender's summary: its figures agree with its lines' last.
    let page = report_of(&sum);
    assert_no_empty_sections(&page);
    assert!(page.contains("<td>packets</td><td>2000</td>"), "{page}");
    let page = report_of(&stats);
    assert!(page.contains("<td>packets</td><td>2000</td>"), "{page}");
    // A summary whose value is not what its schema says: bad input,
    // naming the key (read with the type that wrote it).
    let mut bad: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sum).unwrap()).unwrap();
    bad["packets"] = "many".into();
    let bad_sum = d.join("bad-s.json");
    std::fs::write(&bad_sum, bad.to_string()).unwrap();
    let o = run(&["report", bad_sum.to_str().unwrap(), "-o", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bad-s.json: packets:"),
        "{}",
        stderr(&o)
    );

    // Its lines with a receiver's after each interval and the receiver's
    // final count last, as `replay --rx --stats-json` writes them: 1394
    // had arrived by the last second's line, 1398 by the end.
    let lines = std::fs::read_to_string(&stats).unwrap();
    let mut mixed = String::new();
    for (i, l) in lines.lines().enumerate() {
        mixed += &format!(
            "{l}\n{}\n",
            rx_line(i as f64 + 1.0, 1000 + 394 * i as u64, false)
        );
    }
    let mut whole = mixed.clone() + &rx_line(2.5, 1398, true) + "\n";
    let f = d.join("mixed.jsonl");
    std::fs::write(&f, &whole).unwrap();
    let page = report_of(&f);
    assert_no_empty_sections(&page);
    let received = page.split("<h2>Received</h2>").nth(1).expect("Received");
    assert!(page.contains("<h2>Run</h2>"), "{page}");
    assert!(
        received.contains("<td>0</td><td>1398</td>") && !received.contains("1394"),
        "{received}"
    );
    assert!(!received.contains("Not the final count"), "{received}");
    // Without the final line (an older file): said so.
    std::fs::write(&f, &mixed).unwrap();
    let page = report_of(&f);
    assert!(page.contains("Not the final count"), "{page}");

    // `sluice rx`'s own lines, and its summary.
    whole = (0..3)
        .map(|i| rx_line(i as f64, 500 * i, false) + "\n")
        .collect();
    whole += &(rx_line(2.2, 1398, true) + "\n");
    std::fs::write(&f, &whole).unwrap();
    let page = report_of(&f);
    assert_no_empty_sections(&page);
    assert!(page.contains("<td>0</td><td>1398</td>"), "{page}");
    let rx_sum = d.join("rx.json");
    let doc: serde_json::Value = serde_json::from_str(&rx_line(2.2, 1398, true)).unwrap();
    std::fs::write(&rx_sum, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let page = report_of(&rx_sum);
    assert!(page.contains("<td>0</td><td>1398</td>"), "{page}");

    // `control run --stats-json`: each worker's lines under its name.
    let interval = lines.lines().next().unwrap();
    let ctl = format!(
        "{{\"schema\":\"sluice.control-interval/1\",\"worker\":\"w0\",\"port\":0,\"stats\":{interval}}}\n\
         {{\"schema\":\"sluice.control-interval/1\",\"worker\":\"w1\",\"port\":1,\"stats\":{interval}}}\n\
         {{\"schema\":\"sluice.control-clock/1\",\"worker\":\"w1\",\"port\":1,\"check\":{{\"t\":1.0,\"offset_ns\":5,\"uncertainty_ns\":2,\"drift_ns\":1}}}}\n"
    );
    std::fs::write(&f, ctl).unwrap();
    let page = report_of(&f);
    assert_no_empty_sections(&page);
    for h in [
        "w0 (port 0): run",
        "w1 (port 1): run",
        "w1 (port 1): clock checks",
    ] {
        assert!(page.contains(&format!("<h2>{h}</h2>")), "{h}: {page}");
    }

    // `control run --summary-json` with a lost worker: what it last
    // reported, as a lower bound.
    let cs = d.join("control.json");
    let worker = |name: &str, port: u32, summary: serde_json::Value, lost: bool| {
        serde_json::json!({
            "name": name, "address": "unix:/w", "port": port, "sink": "null", "also_to": [],
            "offset_ns": 0, "offset_uncertainty_ns": 10, "clock_service": null,
            "clock_service_offset_ns": null, "clock_service_bound_ns": null,
            "start_ns": 0, "clock_checks": 0, "drift_ns": null, "drift_max_abs_ns": null,
            "drift_corrections": 0, "drift_residual_bound_ns": null,
            "streams_from": null, "rx": null, "rx_clocks": [],
            "summary": summary, "error": if lost { serde_json::json!("worker: lost") } else { serde_json::Value::Null },
            "refused": false, "lost": lost, "last_packets": if lost { 21 } else { 100 },
        })
    };
    // w0's summary is a real one (the replay's above).
    let w0: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sum).unwrap()).unwrap();
    let doc = serde_json::json!({
        "schema": "sluice.control-summary/1",
        "command": "replay", "split": "byflow",
        "start_ns": 0, "clock_corrected": true, "interrupted": false, "aborted": null,
        "workers": [worker("w0", 0, w0, false), worker("w1", 1, serde_json::Value::Null, true)],
        "total": {"workers": 2, "finished": 1, "lost": 1, "at_least": true, "packets": 2021,
                  "frame_bytes": 7744, "late": 0, "dropped": 0, "pps": null, "bps": null,
                  "eps_p99_max_ns": null},
    });
    assert_eq!(sluice_testkit::schema_errors(&doc), Vec::<String>::new());
    std::fs::write(&cs, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let page = report_of(&cs);
    assert_no_empty_sections(&page);
    assert!(
        page.contains("<td>w1</td><td>1</td><td>null</td><td>LOST</td><td>at least 21</td>"),
        "{page}"
    );
    assert!(
        page.contains("<td>w0</td><td>0</td><td>null</td><td>finished</td><td>2000</td>"),
        "{page}"
    );
    assert!(
        page.contains("<td>packets</td><td>at least 2021</td>"),
        "{page}"
    );
}
