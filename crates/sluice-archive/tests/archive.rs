//! The time-series archive on the real seismic CSVs of the repository's testdata
//! (`testdata/timeseries`): convert → dump round trips, exact sample
//! spacing, the real gaps and the year boundary; malformed archives; and a
//! seeded mutation loop over archives and CSVs (no panic, no hang).

use sluice_testkit::{Rng, Trickle};
use std::fs;
use std::io::{self, Cursor, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use sluice_archive::{
    convert_csv, convert_csv_from, decode_micros, dump, dump_reader, split_record, ArchiveError,
    ArchiveErrorKind, ArchiveReader, ArchiveWriter, DataEncoding, Stamp, StampErrorKind,
};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/timeseries");
const RJOB: &str = "obspy_example_BW.RJOB_3ch_100Hz.csv";
const BGLD: &str = "obspy_BW.BGLD.EHE_200Hz_gaps.csv";

fn input(name: &str) -> PathBuf {
    let p = PathBuf::from(DIR).join(name);
    assert!(
        p.is_file(),
        "testdata {} is missing: it is part of the repository",
        p.display()
    );
    p
}

/// A fresh scratch directory for one test, removed when it goes.
fn scratch(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("sluice-archive-{tag}-"))
        .tempdir()
        .unwrap()
}

/// Converts a CSV file in memory.
fn convert_bytes(csv: &[u8], enc: DataEncoding) -> Vec<u8> {
    let mut w = ArchiveWriter::new(Vec::new());
    convert_csv_from(csv, "in.csv", &mut w, "out.arc", enc).unwrap_or_else(|e| panic!("{e}"));
    w.finish().unwrap()
}

fn dump_bytes(archive: Vec<u8>, enc: DataEncoding) -> Vec<u8> {
    let mut r = ArchiveReader::from_reader("a.arc", Cursor::new(archive));
    let mut out = Vec::new();
    dump_reader(&mut r, &mut out, enc).unwrap_or_else(|e| panic!("{e}"));
    out
}

/// (unix µs, device id, data) of every record.
fn records(archive: &Path) -> Vec<(i64, String, Vec<u8>)> {
    let mut r = ArchiveReader::open(archive).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap_or_else(|e| panic!("{e}")) {
        let dev = String::from_utf8(rec.device_id().to_vec()).unwrap();
        v.push((rec.unix_micros(), dev, rec.data.to_vec()));
    }
    v
}

#[test]
fn text_round_trip_is_byte_identical() {
    let d = scratch("text");
    for name in [RJOB, BGLD] {
        let csv = fs::read(input(name)).unwrap();
        let arc = d.path().join(format!("{name}.arc"));
        let stats = convert_csv(&input(name), &arc, DataEncoding::Text).unwrap();
        assert_eq!(stats.bytes, fs::metadata(&arc).unwrap().len());
        assert_eq!(stats.out_of_order, 0, "{name}");
        let mut out = Vec::new();
        let n = dump(&arc, &mut out, DataEncoding::Text).unwrap();
        assert_eq!(n, stats.records);
        assert!(out == csv, "{name}: text dump differs from the input CSV");
    }
}

/// Splits CSV text into (timestamp, device, value) rows, header skipped.
fn rows(csv: &[u8]) -> Vec<(String, String, String)> {
    let text = std::str::from_utf8(csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("timestamp,device_id,value"));
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut c = l.splitn(3, ',');
            let mut next = || c.next().unwrap().to_owned();
            (next(), next(), next())
        })
        .collect()
}

#[test]
fn binary_round_trips_keep_every_number() {
    for (name, enc) in [(BGLD, DataEncoding::I32), (RJOB, DataEncoding::F64)] {
        let csv = fs::read(input(name)).unwrap();
        let arc = convert_bytes(&csv, enc);
        // Header + 4 or 8 data bytes per record, nothing else.
        let want = rows(&csv);
        let width = enc.width().unwrap();
        assert_eq!(arc.len(), want.len() * (30 + width));
        let got = rows(&dump_bytes(arc, enc));
        assert_eq!(got.len(), want.len());
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!((&w.0, &w.1), (&g.0, &g.1), "{name} row {i}");
            if enc == DataEncoding::I32 {
                assert_eq!(w.2.parse::<i32>(), g.2.parse::<i32>(), "{name} row {i}");
            } else {
                let (a, b) = (w.2.parse::<f64>().unwrap(), g.2.parse::<f64>().unwrap());
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{name} row {i}: {} vs {}",
                    w.2,
                    g.2
                );
            }
        }
    }
}

#[test]
fn rjob_is_three_channels_at_exactly_100_hz() {
    let d = scratch("rjob");
    let arc = d.path().join("rjob.arc");
    let stats = convert_csv(&input(RJOB), &arc, DataEncoding::F64).unwrap();
    assert_eq!((stats.records, stats.devices), (9_000, 3));
    assert_eq!(stats.span_micros(), 29_990_000);
    let recs = records(&arc);
    assert_eq!(recs.len(), 9_000);
    for dev in ["BW.RJOB..EHE", "BW.RJOB..EHN", "BW.RJOB..EHZ"] {
        let t: Vec<i64> = recs.iter().filter(|r| r.1 == dev).map(|r| r.0).collect();
        assert_eq!(t.len(), 3_000, "{dev}");
        assert!(
            t.windows(2).all(|w| w[1] - w[0] == 10_000),
            "{dev}: 10 ms spacing"
        );
    }
    // The three channels share each timestamp.
    for group in recs.chunks(3) {
        assert!(group.iter().all(|r| r.0 == group[0].0));
    }
    // 2009-08-24T00:20:03Z.
    assert_eq!(recs[0].0, 1_251_073_203_000_000);
    assert_eq!(recs[0].2, 0.0f64.to_be_bytes());
}

#[test]
fn bgld_has_its_real_gaps_and_the_year_boundary() {
    let csv = fs::read(input(BGLD)).unwrap();
    let arc = convert_bytes(&csv, DataEncoding::I32);
    // Frame with split_record and decode with the hot-path decoder.
    let mut times = Vec::new();
    let mut rest = &arc[..];
    while let Some((rec, len)) = split_record(rest).unwrap() {
        assert_eq!(rec.data.len(), 4);
        let t = decode_micros(rec.stamp).unwrap();
        assert_eq!(t, Stamp::decode(rec.stamp).unwrap().unix_micros());
        times.push(t);
        rest = &rest[len..];
    }
    assert!(rest.is_empty());
    assert_eq!(times.len(), 52_728);
    let mut jumps = Vec::new();
    for w in times.windows(2) {
        let gap = w[1] - w[0];
        if gap != 5_000 {
            jumps.push(gap);
        }
    }
    assert_eq!(jumps.len(), 3, "{jumps:?}");
    for (got, want) in jumps.iter().zip([2_065_000, 2_065_000, 4_125_000]) {
        assert!((got - want).abs() <= 5, "gap {got} µs, expected {want} ± 5");
    }
    // 2007-12-31T23:59:59.915000Z, and 2008 starts 17 samples later.
    let new_year = Stamp::parse_iso("2008-01-01T00:00:00Z")
        .unwrap()
        .unix_micros();
    assert_eq!(times[0], new_year - 85_000);
    assert_eq!(times[17], new_year);
    let first = Stamp::from_unix_micros(times[0], 0).unwrap();
    assert_eq!(first.to_iso(), "2007-12-31T23:59:59.915000Z");
}

fn archive(n: usize) -> Vec<u8> {
    let mut w = ArchiveWriter::new(Vec::new());
    let t0 = Stamp::parse_iso("2007-12-31T23:59:59.990000Z").unwrap();
    for i in 0..n {
        let s = Stamp::from_unix_micros(t0.unix_micros() + 5_000 * i as i64, 0).unwrap();
        w.write_str(&s, "BW.BGLD..EHE", &(i as i32).to_be_bytes())
            .unwrap();
    }
    w.finish().unwrap()
}

/// Reads to the end: records before the error, and the error.
fn drain(bytes: Vec<u8>) -> (u64, Option<ArchiveError>) {
    let mut r = ArchiveReader::from_reader("bad.arc", Cursor::new(bytes));
    let mut n = 0;
    loop {
        match r.next_record() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return (n, None),
            Err(e) => {
                let again = r.next_record().unwrap_err();
                assert_eq!(again.to_string(), e.to_string(), "error not repeated");
                return (n, Some(e));
            }
        }
    }
}

#[test]
fn empty_archive_has_no_records() {
    assert!(matches!(drain(Vec::new()), (0, None)));
    assert_eq!(
        dump_bytes(Vec::new(), DataEncoding::Text),
        b"timestamp,device_id,value\n"
    );
    let d = scratch("empty");
    fs::write(d.path().join("e.arc"), b"").unwrap();
    assert_eq!(records(&d.path().join("e.arc")).len(), 0);
}

#[test]
fn bad_length_names_record_and_offset() {
    let mut a = archive(5);
    a[2 * 34..2 * 34 + 2].copy_from_slice(&12u16.to_be_bytes());
    let (n, e) = drain(a);
    let e = e.unwrap();
    assert_eq!(n, 2);
    assert!(matches!(e.kind, ArchiveErrorKind::BadLength { len: 12 }));
    assert_eq!((e.record, e.offset), (3, 68));
    assert_eq!(
        e.to_string(),
        "bad.arc: record 3 at byte 68: bad length 12 (a record is at least 30 bytes)"
    );
    assert!(!e.is_truncation());
}

#[test]
fn bad_bcd_digit_names_record_and_offset() {
    let mut a = archive(5);
    a[3 * 34 + 2 + 4] = 0x2a; // hour of record 4
    let (n, e) = drain(a);
    let e = e.unwrap();
    assert_eq!(n, 3);
    assert_eq!((e.record, e.offset), (4, 102));
    match &e.kind {
        ArchiveErrorKind::BadStamp(s) => {
            assert!(matches!(
                s.kind(),
                StampErrorKind::NotBcd {
                    byte: 4,
                    value: 0x2a,
                    ..
                }
            ))
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        e.to_string(),
        "bad.arc: record 4 at byte 102: bad timestamp (record bytes 2-13): timestamp byte 4: \
         hour 0x2a is not BCD"
    );
    // An impossible date: 2007-02-30.
    let mut a = archive(2);
    a[34 + 2 + 2..34 + 2 + 4].copy_from_slice(&[0x02, 0x30]);
    let e = drain(a).1.unwrap();
    assert!(e
        .to_string()
        .ends_with("record 2 at byte 34: bad timestamp (record bytes 2-13): day 30 out of range for 2007-02 (28 days)"));
}

#[test]
fn truncated_last_record_comes_after_the_good_ones() {
    let a = archive(5);
    for cut in [a.len() - 1, a.len() - 33, 4 * 34 + 1, 4 * 34 + 2] {
        let (n, e) = drain(a[..cut].to_vec());
        let e = e.unwrap();
        assert_eq!(n, 4, "cut at {cut}");
        assert!(e.is_truncation(), "{e}");
        assert_eq!((e.record, e.offset), (5, 136));
    }
    let e = drain(a[..4 * 34 + 1].to_vec()).1.unwrap();
    assert_eq!(
        e.to_string(),
        "bad.arc: record 5 at byte 136: truncated record: the file ends 1 byte into the \
         2-byte length field"
    );
    let e = drain(a[..a.len() - 1].to_vec()).1.unwrap();
    assert_eq!(
        e.to_string(),
        "bad.arc: record 5 at byte 136: truncated record: length says 34 bytes, only 33 left \
         in the file"
    );
    // A dump writes the good records, then fails.
    let mut r = ArchiveReader::from_reader("bad.arc", Cursor::new(a[..a.len() - 1].to_vec()));
    let mut out = Vec::new();
    let e = dump_reader(&mut r, &mut out, DataEncoding::I32).unwrap_err();
    assert!(e.to_string().contains("record 5 at byte 136"));
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 5);
}

#[test]
fn convert_refuses_to_overwrite_its_input_and_cleans_up() {
    let d = scratch("same");
    let csv = d.path().join("in.csv");
    fs::write(
        &csv,
        "timestamp,device_id,value\n2009-08-24T00:20:03Z,A,1\n",
    )
    .unwrap();
    let e = convert_csv(&csv, &csv, DataEncoding::Text).unwrap_err();
    assert!(e
        .to_string()
        .ends_with("the output would overwrite the input file"));
    assert_eq!(fs::read(&csv).unwrap().len(), 51);
    fs::write(
        &csv,
        "timestamp,device_id,value\n2009-08-24T00:20:03Z,A,x\n",
    )
    .unwrap();
    let out = d.path().join("out.arc");
    let e = convert_csv(&csv, &out, DataEncoding::I32).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: line 2, column 3 (value): 'x' is not an integer (i32)",
            csv.display()
        )
    );
    assert!(!out.exists(), "a failed conversion leaves no archive");
    let e = convert_csv(&d.path().join("missing.csv"), &out, DataEncoding::I32).unwrap_err();
    assert!(e.to_string().contains("missing.csv: I/O error"), "{e}");
}

// ---- seeded mutations -------------------------------------------------

/// Flips, sets, cuts, deletes and duplicates bytes, mostly at `marks`.
fn mutate(rng: &mut Rng, orig: &[u8], marks: &[usize]) -> Vec<u8> {
    let mut v = orig.to_vec();
    for _ in 0..1 + rng.below(3) {
        if v.is_empty() {
            break;
        }
        let at = if rng.below(4) == 0 || marks.is_empty() {
            rng.below(v.len())
        } else {
            (marks[rng.below(marks.len())] + rng.below(32)).min(v.len() - 1)
        };
        match rng.below(7) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => v[at] = rng.next_u64() as u8,
            2 => v.truncate(rng.below(v.len())),
            3 | 4 => {
                let val = match rng.below(4) {
                    0 => 0u16,
                    1 => u16::MAX,
                    2 => 29,
                    _ => rng.next_u64() as u16,
                };
                for (i, b) in val.to_be_bytes().iter().enumerate() {
                    if let Some(x) = v.get_mut(at + i) {
                        *x = *b;
                    }
                }
            }
            5 => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                v.drain(at..end);
            }
            _ => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                let copy = v[at..end].to_vec();
                v.splice(at..at, copy);
            }
        }
    }
    v
}

/// Reads a mutant archive to its end and dumps it; returns misbehaviour.
fn check_archive(bytes: Vec<u8>, chunk: usize) -> Result<(), String> {
    let len = bytes.len();
    let src: Box<dyn Read + Send> = if chunk == 0 {
        Box::new(Cursor::new(bytes.clone()))
    } else {
        Box::new(Trickle {
            data: Cursor::new(bytes.clone()),
            chunk,
        })
    };
    let mut r = ArchiveReader::from_reader("mutant", src);
    let mut data = 0usize;
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                data += rec.data.len() + 30;
                if data > len {
                    return Err(format!("{data} record bytes from {len} input bytes"));
                }
                if rec.stamp.validate().is_err() {
                    return Err(format!("unchecked stamp {:?}", rec.stamp));
                }
            }
            Ok(None) => {
                if !matches!(r.next_record(), Ok(None)) {
                    return Err("Ok(None) not repeated".into());
                }
                if r.offset() != len as u64 {
                    return Err(format!("ended at {} of {len} bytes", r.offset()));
                }
                break;
            }
            Err(e) => {
                if r.next_record().map_err(|a| a.to_string()) != Err(e.to_string()) {
                    return Err(format!("error `{e}` not repeated"));
                }
                if e.record != r.records_read() + 1 || e.offset > len as u64 {
                    return Err(format!("error `{e}` misplaced"));
                }
                break;
            }
        }
    }
    for enc in DataEncoding::ALL {
        let mut r = ArchiveReader::from_reader("mutant", Cursor::new(bytes.clone()));
        let _ = dump_reader(&mut r, &mut io::sink(), enc);
    }
    Ok(())
}

fn run_mutants(name: &str, orig: &[u8], marks: &[usize], mutants: usize, archive: bool) {
    let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut rng = Rng(seed);
    for i in 0..mutants {
        let m = mutate(&mut rng, orig, marks);
        let chunk = match rng.below(4) {
            0 => 1 + rng.below(40),
            _ => 0,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if archive {
                check_archive(m, chunk)
            } else {
                for enc in DataEncoding::ALL {
                    let mut w = ArchiveWriter::new(Vec::new());
                    if convert_csv_from(&m[..], "m.csv", &mut w, "m.arc", enc).is_ok() {
                        // Whatever converts must read back cleanly.
                        let bytes = w.finish().map_err(|e| e.to_string())?;
                        let (_, err) = drain(bytes);
                        if let Some(e) = err {
                            return Err(format!("converted archive does not read: {e}"));
                        }
                    }
                }
                Ok(())
            }
        }));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(why)) => panic!("{name} mutant {i} (seed {seed:#x}): {why}"),
            Err(_) => panic!("{name} mutant {i} (seed {seed:#x}, chunk {chunk}): panicked"),
        }
    }
}

/// The first `rows` data rows of a testdata CSV, with its header.
fn head(name: &str, rows: usize) -> Vec<u8> {
    let text = fs::read_to_string(input(name)).unwrap();
    let mut out = String::new();
    for l in text.lines().take(rows + 1) {
        out.push_str(l);
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn mutated_archives_never_panic_or_hang() {
    for (name, enc) in [
        (RJOB, DataEncoding::Text),
        (RJOB, DataEncoding::F64),
        (BGLD, DataEncoding::I32),
    ] {
        let orig = convert_bytes(&head(name, 120), enc);
        let mut marks = Vec::new();
        let mut at = 0;
        while let Ok(Some((_, len))) = split_record(&orig[at..]) {
            marks.push(at);
            at += len;
        }
        run_mutants(&format!("{name}.{enc}"), &orig, &marks, 1_500, true);
    }
}

#[test]
fn mutated_csvs_never_panic() {
    for name in [RJOB, BGLD] {
        let orig = head(name, 40);
        let marks: Vec<usize> = orig
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n' || b == b',')
            .map(|(i, _)| i)
            .collect();
        run_mutants(name, &orig, &marks, 800, false);
    }
}

/// The reader used to accept device ids `series convert` refuses.
#[test]
fn readers_refuse_the_device_ids_convert_refuses() {
    let stamp = Stamp::parse_iso("2024-01-01T00:00:00Z").unwrap().encode();
    for (device, says) in [
        ([0u8; 16], "empty"),
        (*b"ab\0cd\0\0\0\0\0\0\0\0\0\0\0", "NUL"),
    ] {
        let mut rec = 30u16.to_be_bytes().to_vec();
        rec.extend_from_slice(&stamp);
        rec.extend_from_slice(&device);
        let mut r = ArchiveReader::from_reader("x.arc", std::io::Cursor::new(rec));
        let e = r.next_record().unwrap_err().to_string();
        assert!(
            e.contains("x.arc") && e.contains("record 1") && e.contains(says),
            "{e}"
        );
    }
}
