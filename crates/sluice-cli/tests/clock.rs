//! `--clock tsc`: the pacer on the CPU's time-stamp counter, calibrated
//! against CLOCK_MONOTONIC, its rate and drift in the summary (checked
//! against the schema), and doctor's cost of one reading of each clock.

mod common;
use common::*;

#[test]
fn a_run_on_the_tsc_clock_reports_its_rate_and_drift() {
    if sluice_sys::tsc::invariant().is_err() {
        // Refused with the reason where the counter is not invariant.
        let d = tmpdir("clock-tsc-refused");
        let trace = d.join("t.pcap");
        write_trace(&trace, 10, 1000, 64);
        let o = run(&["replay", trace.to_str().unwrap(), "--clock", "tsc", "-q"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("not invariant"), "{}", stderr(&o));
        return;
    }
    let d = tmpdir("clock-tsc");
    let trace = d.join("t.pcap");
    // 5000 packets 100 µs apart: half a second of real pacing.
    write_trace(&trace, 5000, 100_000, 64);
    let sum = d.join("s.json");
    let replay = |clock: &str| {
        let (t, s) = (trace.to_str().unwrap(), sum.to_str().unwrap());
        let o = run(&["replay", t, "--clock", clock, "-q", "--summary-json", s]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = sluice_testkit::checked_json(&std::fs::read(&sum).unwrap());
        (stderr(&o), v)
    };
    let (err, v) = replay("tsc");
    assert!(err.contains("clock: tsc at"), "{err}");
    assert_eq!(v["packets"], 5000);
    assert_eq!(v["clock"]["source"], "tsc");
    let hz = v["clock"]["tsc_hz"].as_f64().unwrap();
    assert!(hz > 1e8 && hz < 1e11, "{v}");
    // Paced on the counter, timed by the monotonic clock: 0.5 s.
    let d_s = v["duration_s"].as_f64().unwrap();
    assert!(d_s >= 0.499, "{v}");
    // A wrong rate or origin would show as milliseconds of drift over
    // half a second; a loaded machine's calibration error is microseconds.
    let drift = v["clock"]["drift_ns"].as_i64().unwrap();
    assert!(drift.abs() < 5_000_000, "drift {drift} ns: {v}");
    // Without --clock tsc there is no clock section.
    let (_, v) = replay("virtual");
    assert!(v["clock"].is_null(), "{v}");
}

#[test]
fn doctor_measures_what_one_clock_reading_costs() {
    let o = run(&["doctor", "--floor", "50ms", "--json"]);
    let v = sluice_testkit::checked_json(&o.stdout);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "clock read cost")
        .unwrap_or_else(|| panic!("no clock read cost: {v}"));
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains("monotonic") && detail.contains("ns per reading"),
        "{detail}"
    );
    assert!(detail.contains("tsc"), "{detail}");
}
