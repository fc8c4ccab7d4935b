//! `sluice profile` end to end on a virtual clock, judged by the neutral
//! `bench/ratejudge.py` against `profile synth` of the same profile.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn have_judge() -> bool {
    sluice_testkit::require("python3", "profiles judged by ratejudge.py")
}

fn judge(target: &Path, capture: &Path) -> BTreeMap<String, f64> {
    ratejudge(target, capture)
}

fn profile(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn synth(p: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec!["profile", "synth", s(p), "-o", s(out)];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}

const POISSON: &str = "seed: 4\nduration: 1s\nrate: 50k\nipd: {dist: poisson}\nsize: {dist: imix}\npacket: {flows: 4}\n";

#[test]
fn exact_mode_sends_the_synthesized_trace_itself() {
    if !have_judge() {
        return;
    }
    let d = tmpdir("profile-exact");
    let p = profile(&d, "p.yaml", POISSON);
    let target = d.join("target.pcap");
    synth(&p, &target, &[]);
    let out = d.join("out.pcap");
    let o = run_to_pcap(&["profile", "run", s(&p)], &out, &["--threads", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = judge(&target, &out);
    assert_eq!(j["nmse"], 0.0, "{j:?}");
    assert_eq!(j["ks_ipd"], 0.0, "{j:?}");
    assert_eq!(j["ks_size"], 0.0, "{j:?}");
    assert_eq!(j["target_packets"], j["generated_packets"]);
    // About 50 k packets (Poisson), IMIX sizes, four source ports.
    let n = j["target_packets"];
    assert!((n - 50_000.0).abs() < 1_000.0, "{n}");
    let frames = read_all(&out);
    let sizes: std::collections::BTreeSet<usize> = frames.iter().map(|(_, f)| f.len()).collect();
    assert_eq!(sizes, [60, 590, 1514].into_iter().collect());
    let ports: std::collections::BTreeSet<u16> = frames
        .iter()
        .map(|(_, f)| u16::from_be_bytes([f[34], f[35]]))
        .collect();
    assert_eq!(ports, [1024, 1025, 1026, 1027].into_iter().collect());
    // Same seed, same trace; another seed, another.
    let again = d.join("again.pcap");
    synth(&p, &again, &[]);
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let other = d.join("other.pcap");
    synth(&p, &other, &["--seed", "5"]);
    assert_ne!(
        std::fs::read(&target).unwrap(),
        std::fs::read(&other).unwrap()
    );
}

#[test]
fn fourier_mode_rebuilds_the_rate_series_from_its_components() {
    if !have_judge() {
        return;
    }
    let d = tmpdir("profile-fourier");
    let p = profile(&d, "p.yaml", POISSON);
    let target = d.join("target.pcap");
    synth(&p, &target, &[]);
    let mut last_nmse = -1.0;
    for (extra, exact) in [
        (vec!["--queues", "1"], true),
        (vec!["--queues", "2"], true),
        // The short-time transform, every window's components: exact too.
        (vec!["--queues", "2", "--window", "100ms"], true),
        (vec!["--queues", "3"], false),
        (vec!["--queues", "2", "--keep", "400"], false),
        (vec!["--queues", "2", "--keep", "20"], false),
    ] {
        let out = d.join("out.pcap");
        let _ = std::fs::remove_file(&out);
        let mut args = vec!["--mode", "fourier"];
        args.extend_from_slice(&extra);
        let o = run_to_pcap(&["profile", "run", s(&p)], &out, &args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("sluice: fourier: 1000 bins of 1ms"),
            "{}",
            stderr(&o)
        );
        let j = judge(&target, &out);
        if exact {
            // All components, a queue count the rounding cannot split:
            // every bin holds the target's count.
            assert_eq!(j["nmse"], 0.0, "{extra:?}: {j:?}");
        } else {
            assert!(j["hist_pearson"] > 0.5, "{extra:?}: {j:?}");
        }
        assert!(j["ks_ipd"] < 0.1 && j["ks_size"] < 0.01, "{extra:?}: {j:?}");
        assert!((j["rate_err_pct"]).abs() < 0.1, "{extra:?}: {j:?}");
        if extra.contains(&"--keep") {
            // Fewer components, a worse series.
            assert!(j["nmse"] > last_nmse, "{extra:?}: {j:?}");
            last_nmse = j["nmse"];
        }
    }
}

#[test]
fn spectrum_lists_components_and_the_error_of_a_selection() {
    let d = tmpdir("profile-spectrum");
    // A constant 100 kpps: all in DC, every other component 0.
    let p = profile(
        &d,
        "cbr.json",
        r#"{"duration": "200ms", "rate": "100k", "ipd": {"dist": "constant"}}"#,
    );
    let o = run(&["profile", "spectrum", s(&p), "--json", "--keep", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = sluice_testkit::checked_json(&o.stdout);
    assert_eq!(v["bins"], 200);
    assert_eq!(v["available"], 100);
    assert_eq!(v["kept"], 3);
    assert_eq!(v["packets"], 20_000);
    assert!((v["dc"].as_f64().unwrap() - 100.0).abs() < 1e-9);
    assert!(v["reconstruction"]["nmse"].as_f64().unwrap() < 1e-20);
    for c in v["components"].as_array().unwrap() {
        assert!(c["amplitude"].as_f64().unwrap() < 1e-9, "{c}");
    }
    // A capture's spectrum: the synthesized trace of the same profile.
    let t = d.join("t.pcap");
    synth(&p, &t, &[]);
    let o = run(&[
        "profile",
        "spectrum",
        s(&t),
        "--cutoff",
        "20",
        "--sample",
        "2ms",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("20000 packets in 100 bins of 2ms"), "{text}");
    assert!(
        text.contains("components: 50 up to 250.0 Hz; kept 4 (cutoff 20 Hz)"),
        "{text}"
    );
}

/// The short-time transform (the distributed-generator paper's §2.3,
/// Fig. 1) of a capture whose rate oscillates ever faster (a chirp from
/// 5 to 45 Hz): each window's strongest component follows the frequency
/// up, and as many components kept window by window rebuild the series
/// better than from the whole series' spectrum.
#[test]
fn windows_follow_a_spectrum_that_changes_over_time() {
    let d = tmpdir("profile-stft");
    let mut frames = Vec::new();
    let mut seq = 0;
    for m in 0..2000u64 {
        let t = m as f64 * 1e-3;
        let phase = 2.0 * std::f64::consts::PI * (5.0 * t + 10.0 * t * t);
        let count = (50.0 + 40.0 * phase.sin()).round() as u64;
        for i in 0..count {
            frames.push((
                1_000_000_000 + m * 1_000_000 + i * 1_000_000 / count,
                frame(seq, 64),
            ));
            seq += 1;
        }
    }
    let cap = d.join("chirp.pcap");
    write_frames(&cap, &frames);
    let spectrum = |extra: &[&str]| {
        let mut args = vec!["profile", "spectrum", s(&cap), "--json"];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        sluice_testkit::checked_json(&o.stdout)
    };
    let whole = spectrum(&["--keep", "20"]);
    let win = spectrum(&["--keep", "2", "--window", "200ms"]);
    assert_eq!(
        (win["kept"].as_u64(), win["window_ns"].as_u64()),
        (Some(20), Some(200_000_000))
    );
    let windows = win["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 10);
    assert_eq!(win["components"].as_array().map(Vec::len), Some(0));
    let tops: Vec<f64> = windows
        .iter()
        .map(|w| w["components"][0]["freq_hz"].as_f64().unwrap())
        .collect();
    for (i, w) in windows.iter().enumerate() {
        assert_eq!(w["bins"], 200, "{w}");
        assert!(
            (w["start_s"].as_f64().unwrap() - 0.2 * i as f64).abs() < 1e-9,
            "{w}"
        );
    }
    // The local frequency 5 + 20 t Hz at each window's middle, to the
    // windows' 5 Hz resolution.
    for (i, f) in tops.iter().enumerate() {
        let want = 5.0 + 20.0 * (0.1 + 0.2 * i as f64);
        assert!(
            (f - want).abs() <= 5.0,
            "window {i}: {f} Hz, {want} expected: {tops:?}"
        );
    }
    let (w, g) = (
        win["reconstruction"]["nmse"].as_f64().unwrap(),
        whole["reconstruction"]["nmse"].as_f64().unwrap(),
    );
    assert!(w < g, "windowed NMSE {w} vs whole {g}");
    // Text, and a window not a multiple of the sample refused.
    let o = run(&[
        "profile",
        "spectrum",
        s(&cap),
        "--keep",
        "2",
        "--window",
        "200ms",
    ]);
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("windows: 10 of 200ms; kept 20 of 1000 components"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = run(&["profile", "spectrum", s(&cap), "--window", "2500us"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("window 2.5ms is not a multiple"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn scale_multiplies_the_rate_and_empirical_laws_read_a_capture() {
    if !have_judge() {
        return;
    }
    let d = tmpdir("profile-scale");
    let p = profile(
        &d,
        "p.yaml",
        "duration: 1s\nrate: 2k\nipd: {dist: gamma, shape: 2}\n",
    );
    let t = d.join("t.pcap");
    synth(&p, &t, &["--scale", "10"]);
    let j = judge(&t, &t);
    let n = j["target_packets"];
    assert!((n - 20_000.0).abs() < 600.0, "10 × 2 kpps for 1 s: {n}");
    // The capture's gaps and sizes, drawn again: close to the capture.
    let e = profile(
        &d,
        "e.yaml",
        "seed: 9\nduration: 1s\nipd: {dist: empirical, from: t.pcap}\nsize: {dist: empirical, from: t.pcap}\n",
    );
    let out = d.join("e.pcap");
    synth(&e, &out, &[]);
    let j = judge(&t, &out);
    assert!(j["ks_ipd"] < 0.03 && j["rate_err_pct"].abs() < 3.0, "{j:?}");
}

#[test]
fn bad_profiles_are_refused_naming_the_key_and_nothing_is_sent() {
    let d = tmpdir("profile-bad");
    let cases = [
        (
            "ipd: {dist: zipf}\nrate: 1k\nduration: 1s\n",
            "ipd.dist: unknown distribution 'zipf'",
        ),
        (
            "ipd: {dist: normal, variance: -1}\nrate: 1k\nduration: 1s\n",
            "ipd.variance: must be positive",
        ),
        ("ipd: {dist: poisson}\nrate: 0\nduration: 1s\n", "rate"),
        (
            "ipd: {dist: gamma, shape: 0}\nrate: 1k\nduration: 1s\n",
            "ipd.shape: must be positive",
        ),
        (
            "ipd: {dist: weibull, shape: -2}\nrate: 1k\nduration: 1s\n",
            "ipd.shape: must be positive",
        ),
        (
            "ipd: {dist: empirical, from: nope.pcap}\nduration: 1s\n",
            "ipd.from",
        ),
        (
            "ipd: {dist: empirical, from: empty.pcap}\nduration: 1s\n",
            "ipd.from",
        ),
        ("ipd: {dist: poisson}\nrate: 1k\n", "duration: missing"),
        (
            "ipd: {dist: poisson}\nrate: 1k\nbitrate: 1M\nduration: 1s\n",
            "bitrate: give one of rate and bitrate",
        ),
        (
            "ipd: {dist: poisson, shape: 2}\nrate: 1k\nduration: 1s\n",
            "poisson takes no std",
        ),
        (
            "ipd: {dist: poisson}\nrate: 1k\nduration: 1s\nsize: {dist: constant, bytes: 20}\n",
            "size: a frame of 20 bytes cannot hold",
        ),
        (
            "ipd: {dist: poisson}\nrate: 1k\nduration: 1s\nsize: {dist: mix, values: [[64, -1]]}\n",
            "size.values",
        ),
        (
            "ipd: {dist: poisson}\nrate: 1k\nduration: 1s\nsize: {dist: uniform, bytes: 64}\n",
            "size.bytes: does not apply",
        ),
        (
            "ipd: {dist: poisson}\nrate: 1k\nduration: 1s\nbogus: 1\n",
            "unknown field `bogus`",
        ),
    ];
    std::fs::write(d.join("empty.pcap"), b"").unwrap();
    // A capture of no packets: a valid pcap header alone.
    let mut hdr = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    hdr.extend_from_slice(&[0; 8]);
    hdr.extend_from_slice(&65535u32.to_le_bytes());
    hdr.extend_from_slice(&1u32.to_le_bytes());
    std::fs::write(d.join("empty.pcap"), hdr).unwrap();
    for (text, want) in cases {
        let p = profile(&d, "bad.yaml", text);
        let out = d.join("out.pcap");
        let o = run_to_pcap(&["profile", "run", s(&p)], &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("bad.yaml") && err.contains(want),
            "{text}: {err}"
        );
        assert!(!out.exists(), "{text}: nothing may be written");
    }
}

/// `analyze --target` prints what ratejudge.py prints, character for
/// character: a profile or trace target, a counts CSV, shifted and
/// unrelated captures.
#[test]
fn analyze_target_agrees_with_ratejudge() {
    if !have_judge() {
        return;
    }
    let d = tmpdir("profile-judge");
    let p = profile(&d, "p.yaml", POISSON);
    let target = d.join("target.pcap");
    synth(&p, &target, &[]);
    let four = d.join("four.pcap");
    let o = run_to_pcap(
        &["profile", "run", s(&p)],
        &four,
        &["--mode", "fourier", "--queues", "3", "--keep", "50"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A capture missing its first 20 ms: the judge finds the lag.
    let late = d.join("late.pcap");
    let all = read_all(&target);
    let cut = all[0].0 + 20_000_000;
    let frames: Vec<(u64, Vec<u8>)> = all.into_iter().filter(|(t, _)| *t >= cut).collect();
    write_frames(&late, &frames);
    let counts = d.join("counts.csv");
    let mut csv = String::from("bin,count\n");
    for b in 0..900 {
        csv.push_str(&format!("{b},{}\n", 40 + b % 25));
    }
    std::fs::write(&counts, csv).unwrap();
    let other = testdata("tcpreplay__test.pcap");
    for (t, c, extra) in [
        (&target, &four, vec![]),
        (&target, &late, vec![]),
        (&target, &late, vec!["--sample", "5ms", "--max-lag", "3"]),
        (&counts, &four, vec![]),
        (&target, &other, vec![]),
    ] {
        let mut ours = vec!["analyze", s(c), "--target", s(t)];
        ours.extend_from_slice(&extra);
        let o = run(&ours);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut theirs = Command::new("python3");
        theirs
            .arg(sluice_testkit::bench_script("ratejudge.py"))
            .args([s(t), s(c), "--oneline"]);
        if let [_, sample, _, lag] = extra.as_slice() {
            let us = (sample.trim_end_matches("ms").parse::<f64>().unwrap() * 1000.0).to_string();
            theirs.args(["--sample-us", &us, "--max-lag", lag]);
        }
        let j = theirs.output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            String::from_utf8_lossy(&j.stdout).trim(),
            "{t:?} vs {c:?} {extra:?}"
        );
    }
    // The profile itself as the target: its synthesized trace.
    let o = run(&["analyze", s(&four), "--target", s(&p), "--json"]);
    let v: serde_json::Value = sluice_testkit::checked_json(&o.stdout);
    let o2 = run(&["analyze", s(&four), "--target", s(&target), "--json"]);
    assert_eq!(v, sluice_testkit::checked_json(&o2.stdout));
}

/// `profile fit` recovers the family and shape a trace was drawn from,
/// writes a profile that runs, and `--scale` makes it louder.
#[test]
fn fit_recovers_the_laws_of_a_capture_and_scale_makes_it_louder() {
    if !have_judge() {
        return;
    }
    let d = tmpdir("profile-fit");
    let p = profile(
        &d,
        "w.yaml",
        "seed: 3\nduration: 2s\nrate: 20k\nipd: {dist: weibull, shape: 0.7}\nsize: {dist: imix}\n",
    );
    let t = d.join("w.pcap");
    synth(&p, &t, &[]);
    let fitted = d.join("fitted.yaml");
    let o = run(&["profile", "fit", s(&t), "-o", s(&fitted)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&fitted).unwrap();
    assert!(text.contains("ipd: {dist: weibull, shape: 0.7"), "{text}");
    assert!(text.contains("size: {dist: mix, values: [[60, "), "{text}");
    // Regenerated ten times louder: ten times the packets, the same law.
    let loud = d.join("loud.pcap");
    synth(&fitted, &loud, &["--scale", "10"]);
    let j = judge(&t, &loud);
    let ratio = j["generated_packets"] / j["target_packets"];
    assert!((ratio - 10.0).abs() < 0.3, "{j:?}");
    assert!(j["ks_size"] < 0.01, "{j:?}");
    // Over-writing the capture is refused.
    let o = run(&["profile", "fit", s(&t), "-o", s(&t)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `analyze --target --plot` draws an SVG that a real browser opens: the
/// DOM headless Chromium builds from it holds both charts and a curve
/// each for target and generated, and its screenshot is a picture.
#[test]
fn the_plot_opens_in_a_headless_browser() {
    if !sluice_testkit::require("chromium", "SVG reports opened in a browser") {
        return;
    }
    let d = tmpdir("profile-plot");
    let p = profile(&d, "p.yaml", POISSON);
    let target = d.join("target.pcap");
    synth(&p, &target, &[]);
    let four = d.join("four.pcap");
    let o = run_to_pcap(
        &["profile", "run", s(&p)],
        &four,
        &["--mode", "fourier", "--keep", "100"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = d.join("report.svg");
    let o = run(&[
        "analyze",
        s(&four),
        "--target",
        s(&target),
        "--plot",
        s(&svg),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let browser = |extra: &[&str]| {
        let profile_dir = d.join("chromium-profile");
        Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1200,480",
            ])
            .arg(format!("--user-data-dir={}", profile_dir.display()))
            .args(extra)
            .arg(format!("file://{}", svg.display()))
            .output()
            .unwrap()
    };
    let o = browser(&["--dump-dom"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(dom.contains("<svg"), "{dom}");
    for text in [
        "packet-rate histogram",
        "CDF of per-bin counts",
        "target",
        "generated",
        "hist Pearson",
    ] {
        assert!(dom.contains(text), "no '{text}' in the DOM");
    }
    assert!(
        dom.matches("<polyline").count() >= 4,
        "two curves per chart"
    );
    let png = d.join("report.png");
    let o = browser(&[&format!("--screenshot={}", png.display())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    assert!(
        bytes.len() > 10_000,
        "a drawn chart, not a blank page: {} bytes",
        bytes.len()
    );
    // Writing the plot over an input is refused.
    let o = run(&[
        "analyze",
        s(&four),
        "--target",
        s(&target),
        "--plot",
        s(&target),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Issue 42, item 8: a run started at --start-at is stamped from that
/// instant, not from when the process began (it was seconds early).
#[test]
fn a_start_at_run_is_stamped_from_its_start() {
    let d = tmpdir("profile-start-at");
    let p = d.join("p.yaml");
    std::fs::write(
        &p,
        "seed: 1\npackets: 20\nrate: 1k\nipd: {dist: constant}\nsize: {dist: constant, bytes: 64}\n",
    )
    .unwrap();
    let out = d.join("out.pcap");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let at = now + 1_500_000_000;
    let o = run(&[
        "profile",
        "run",
        p.to_str().unwrap(),
        "--start-at",
        &at.to_string(),
        "--to",
        &format!("pcap:{}", out.display()),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = read_all(&out);
    assert_eq!(got.len(), 20);
    // Paced on the real clock from `at`: the first stamp is at it (within
    // a generous bound for a loaded machine), never before it.
    let first = got[0].0;
    assert!(first >= at, "stamped {} ns before the start", at - first);
    assert!(
        first - at < 1_000_000_000,
        "stamped {} ns after",
        first - at
    );
}
