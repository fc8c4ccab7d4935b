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
