//! `sluice series convert` / `sluice series dump` through the binary.

mod common;
use common::*;

use std::path::PathBuf;

fn series_data(name: &str) -> PathBuf {
    sluice_testkit::testdata("timeseries").join(name)
}

const BGLD: &str = "obspy_BW.BGLD.EHE_200Hz_gaps.csv";
const RJOB: &str = "obspy_example_BW.RJOB_3ch_100Hz.csv";

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn convert_then_dump_gives_the_csv_back() {
    let d = tmpdir("series-rt");
    for (name, enc) in [(BGLD, "text"), (RJOB, "text"), (BGLD, "i32")] {
        let csv = series_data(name);
        let arc = d.join(format!("{enc}.arc"));
        let o = run(&["series", "convert", s(&csv), s(&arc), "--data", enc]);
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let records = if name == BGLD { 52_728 } else { 9_000 };
        assert!(err.contains(&format!("{records} records")), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");

        let out = d.join(format!("{enc}.csv"));
        let o = run(&["series", "dump", s(&arc), "--data", enc, "-o", s(&out)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
        // Integers print as written, so both encodings give the file back.
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&csv).unwrap(),
            "{name} --data {enc}: dump differs from the input"
        );
    }
    // stdout by default.
    let o = run(&["series", "dump", s(&d.join("text.arc"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, std::fs::read(series_data(RJOB)).unwrap());
}

#[test]
fn summary_line_names_records_devices_span_and_bytes() {
    let d = tmpdir("series-summary");
    let arc = d.join("rjob.arc");
    let o = run(&[
        "series",
        "convert",
        s(&series_data(RJOB)),
        s(&arc),
        "--data",
        "f64",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "9000 records, 3 devices, span 29.990000 s (2009-08-24T00:20:03.000000Z .. \
             2009-08-24T00:20:32.990000Z), 342000 bytes (f64 data)"
        ),
        "{err}"
    );
}

#[test]
fn corrupted_archive_is_bad_input_with_record_and_byte() {
    let d = tmpdir("series-bad");
    let csv = d.join("in.csv");
    std::fs::write(
        &csv,
        "timestamp,device_id,value\n\
         2015-07-01T19:20:30.45+01:00,a,1\n\
         2015-07-01T19:20:30.456789-01:00,b,2\n\
         2015-07-01T19:20:30.4567Z,c,3\n",
    )
    .unwrap();
    let arc = d.join("a.arc");
    let o = run(&["series", "convert", s(&csv), s(&arc), "--data", "i32"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut bytes = std::fs::read(&arc).unwrap();
    assert_eq!(bytes.len(), 3 * 34);
    // Record 3: hour byte not BCD.
    bytes[2 * 34 + 2 + 4] = 0x2a;
    std::fs::write(&arc, &bytes).unwrap();
    let o = run(&["series", "dump", s(&arc), "--data", "i32"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("record 3 at byte 68") && err.contains("hour 0x2a is not BCD"),
        "{err}"
    );
    // The good records were printed first.
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);

    // Bad length.
    bytes[34..36].copy_from_slice(&[0, 7]);
    std::fs::write(&arc, &bytes).unwrap();
    let o = run(&["series", "dump", s(&arc), "--data", "i32"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("record 2 at byte 34: bad length 7"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_csv_is_bad_input_with_line_and_column() {
    let d = tmpdir("series-badcsv");
    let csv = d.join("in.csv");
    std::fs::write(
        &csv,
        "timestamp,device_id,value\n2015-07-01T19:20:30Z,a,1\n2015-07-01T19:20:30Z,b,x\n",
    )
    .unwrap();
    let arc = d.join("a.arc");
    let o = run(&["series", "convert", s(&csv), s(&arc), "--data", "i32"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 3, column 3 (value): 'x' is not an integer (i32)"),
        "{}",
        stderr(&o)
    );
    assert!(!arc.exists());
    let o = run(&["series", "convert", s(&csv), s(&arc), "--data", "i64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("use text, i32, f32 or f64"),
        "{}",
        stderr(&o)
    );
    let o = run(&["series", "dump", s(&d.join("missing.arc"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing.arc: I/O error"),
        "{}",
        stderr(&o)
    );
}

/// The RJOB test data as an archive at `arc`.
fn convert_rjob(arc: &std::path::Path, extra: &[&str]) {
    let csv = series_data(RJOB);
    let mut args = vec!["series", "convert", s(&csv), s(arc)];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// An archive of binary values dumped as text printed raw bytes with exit
/// 0: now the dump stops at the first such record, naming it and --data.
#[test]
fn dumping_binary_values_as_text_is_refused() {
    let d = tmpdir("series-dump-type");
    let arc = d.join("f64.arc");
    convert_rjob(&arc, &["--data", "f64"]);
    let o = run(&["series", "dump", s(&arc)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("record 1 at byte 0") && err.contains("not text") && err.contains("--data"),
        "{err}"
    );
    let o = run(&["series", "dump", s(&arc), "--data", "f64"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A mapping whose source this host cannot send from was found only as
/// datagrams refused (or a failure) mid-run: now before anything is sent,
/// naming the file, the device and the addresses.
#[test]
fn an_unroutable_mapped_source_is_refused_before_sending() {
    let d = tmpdir("series-route");
    let arc = d.join("s.arc");
    convert_rjob(&arc, &[]);
    let (map, summary) = (d.join("m.csv"), d.join("sum.json"));
    // Plays the archive to udp: with EHN mapped from `src`.
    let play = |src: &str| {
        std::fs::write(
            &map,
            format!(
                "device_id,src_ip,dst_ip,src_port,dst_port\nBW.RJOB..EHN,{src},127.0.0.1,5000,9\n"
            ),
        )
        .unwrap();
        run(&[
            "series",
            "play",
            s(&arc),
            "--to",
            "udp:127.0.0.1:9",
            "--map",
            s(&map),
            "--tight-loop",
            "0ns",
            "--summary-json",
            s(&summary),
            "-q",
        ])
    };
    let o = play("192.0.2.77");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("m.csv: device 'BW.RJOB..EHN'")
            && err.contains("from 192.0.2.77 to 127.0.0.1:9"),
        "{err}"
    );
    assert!(!summary.exists(), "nothing was sent, no summary");
    // A local source: every datagram sent, each counted once, per flow too.
    let o = play("127.0.0.5");
    assert!(o.status.success(), "{}", stderr(&o));
    let j = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    assert_eq!(j["packets"], 9000, "{j}");
    let per_flow: u64 = j["series"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["sent"].as_u64().unwrap())
        .sum();
    assert_eq!(per_flow, 9000, "{j}");
}
