//! `sluice series play` end to end on a virtual clock: deterministic
//! timing assertions on the pcap output, without root.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// A CSV of `count` records round-robin over `devices`, `gap_us` apart
/// (wrapping past the hour and the year), with values of growing length.
fn csv_text(devices: usize, count: usize, gap_us: u64) -> String {
    let mut s = String::from("timestamp,device_id,value\n");
    // 2023-12-31T23:59:59.5Z as µs within the day.
    let mut t = (23 * 3600 + 59 * 60 + 59) * 1_000_000 + 500_000u64;
    let mut day = (2023, 12, 31);
    for i in 0..count {
        if t >= 86_400_000_000 {
            t -= 86_400_000_000;
            day = (2024, 1, 1);
        }
        let (h, m, sec, us) = (
            t / 3_600_000_000,
            t / 60_000_000 % 60,
            t / 1_000_000 % 60,
            t % 1_000_000,
        );
        s.push_str(&format!(
            "{:04}-{:02}-{:02}T{h:02}:{m:02}:{sec:02}.{us:06}Z,DEV{},{}\n",
            day.0,
            day.1,
            day.2,
            i % devices,
            "7".repeat(1 + i % 40)
        ));
        t += gap_us;
    }
    s
}

fn archive(d: &Path, devices: usize, count: usize, gap_us: u64) -> PathBuf {
    convert_csv(d, "in", &csv_text(devices, count, gap_us))
}

fn play(arc: &Path, out: &Path, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let to = format!("pcap:{}", out.display());
    let summary = out.with_extension("json");
    let mut args = vec![
        "series",
        "play",
        arc.to_str().unwrap(),
        "--to",
        &to,
        "--clock",
        "virtual",
        "-q",
        "--summary-json",
        summary.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    let v = std::fs::read_to_string(&summary)
        .ok()
        .map(|s| sluice_testkit::checked_json(s.as_bytes()))
        .unwrap_or(serde_json::Value::Null);
    (o, v)
}

/// The UDP payload of an unfragmented IPv4 frame.
fn udp_payload(frame: &[u8]) -> &[u8] {
    &frame[42..]
}

#[test]
fn conforming_play_stamps_every_datagram_with_its_record_time() {
    let d = tmpdir("series-conform");
    let arc = archive(&d, 3, 3000, 250);
    let out = d.join("out.pcap");
    let (o, s) = play(&arc, &out, &["--payload", "record"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = archive_records(&arc);
    let got = read_all(&out);
    assert_eq!(got.len(), 3000);
    // 2023-12-31T23:59:59.5Z = 1704067199.5 s since the epoch.
    let t0 = 1_704_067_199_500_000_000u64;
    for (i, (ts, frame)) in got.iter().enumerate() {
        assert_eq!(udp_payload(frame), &recs[i][..], "record {i} bytes");
        assert_eq!(*ts, t0 + i as u64 * 250_000, "record {i} time");
    }
    assert_eq!(s["packets"], 3000);
    // Frame bytes on the wire; payload bytes per flow.
    let wire: usize = got.iter().map(|(_, f)| f.len()).sum();
    assert_eq!(s["frame_bytes"], wire as u64);
    assert_eq!(s["series"]["flows"].as_array().unwrap().len(), 3);
    for f in s["series"]["flows"].as_array().unwrap() {
        assert_eq!(f["sent"], 1000, "{f}");
    }
    let payload: u64 = s["series"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["payload_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(payload, recs.iter().map(|r| r.len() as u64).sum::<u64>());
}

#[test]
fn fast_forward_and_tight_loop_space_records() {
    let d = tmpdir("series-modes");
    let arc = archive(&d, 2, 500, 1000);
    let out = d.join("out.pcap");
    let (o, _) = play(&arc, &out, &["--fast-forward", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(gaps(&read_all(&out)).iter().all(|&g| g == 250_000));
    let (o, _) = play(&arc, &out, &["--tight-loop", "7us"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(gaps(&read_all(&out)).iter().all(|&g| g == 7_000));
    let (o, s) = play(&arc, &out, &["--tight-loop", "0", "--limit", "123"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&out).len(), 123);
    assert_eq!(s["packets"], 123);
}

#[test]
fn out_of_order_records_leave_within_their_window() {
    let d = tmpdir("series-ooo");
    let arc = archive(&d, 1, 4000, 100);
    let out = d.join("out.pcap");
    let ooo_args = [
        "--payload",
        "record",
        "--ooo-prob",
        "0.2",
        "--ooo-window",
        "2ms",
        "--seed",
        "7",
    ];
    let (o, s) = play(&arc, &out, &ooo_args);
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = archive_records(&arc);
    let got = read_all(&out);
    assert_eq!(got.len(), 4000, "every record is sent once");
    let t0 = 1_704_067_199_500_000_000u64;
    let mut late_sent = 0;
    let mut position = Vec::new();
    for (ts, frame) in &got {
        let i = recs
            .iter()
            .position(|r| r == udp_payload(frame))
            .expect("a known record");
        position.push(i);
        let recorded = t0 + i as u64 * 100_000;
        assert!(
            *ts >= recorded && *ts <= recorded + 2_000_000,
            "record {i} sent {} ns after its time",
            ts - recorded
        );
        if *ts > recorded {
            late_sent += 1;
        }
    }
    let mut sorted = position.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..4000).collect::<Vec<_>>());
    assert_ne!(position, sorted, "some records must leave out of order");
    let ooo = s["series"]["out_of_order"].as_u64().unwrap();
    assert!((600..1000).contains(&ooo), "P = 0.2 of 4000: {ooo}");
    assert!(late_sent <= ooo);
    // The same seed gives the same run.
    let out2 = d.join("out2.pcap");
    play(&arc, &out2, &ooo_args);
    assert_eq!(read_all(&out2), got);
}

#[test]
fn devices_limit_and_multiply_and_mapping_applies() {
    let d = tmpdir("series-devices");
    let arc = archive(&d, 4, 400, 1000);
    let out = d.join("out.pcap");
    let (o, s) = play(&arc, &out, &["--devices", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&out).len(), 200);
    assert_eq!(s["series"]["filtered"], 200);
    let (o, s) = play(&arc, &out, &["--devices", "x3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&out).len(), 1200);
    let flows = s["series"]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 12);
    assert!(flows.iter().all(|f| f["sent"] == 100));

    let map = d.join("map.yaml");
    std::fs::write(
        &map,
        "defaults: {dst_ip: 192.0.2.9, dst_port: 7777}\ndevices:\n  DEV1: {src_ip: 198.51.100.1, src_port: 1111}\n",
    )
    .unwrap();
    let (o, _) = play(&arc, &out, &["--map", map.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (i, (_, f)) in read_all(&out).iter().enumerate() {
        assert_eq!(&f[30..34], &[192, 0, 2, 9], "dst ip");
        assert_eq!(&f[36..38], &7777u16.to_be_bytes(), "dst port");
        if i % 4 == 1 {
            assert_eq!(&f[26..30], &[198, 51, 100, 1]);
            assert_eq!(&f[34..36], &1111u16.to_be_bytes());
        }
    }
    let bad = d.join("bad.yaml");
    std::fs::write(&bad, "devices:\n  DEV1: {src_ip: 300.1.1.1}\n").unwrap();
    let (o, _) = play(&arc, &out, &["--map", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.yaml"), "{}", stderr(&o));
}

/// Per-device records sent, from a summary's flows.
fn sent_by_device(s: &serde_json::Value) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = s["series"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = match f["copy"].as_u64().unwrap() {
                0 => f["device"].as_str().unwrap().to_string(),
                c => format!("{}#{c}", f["device"].as_str().unwrap()),
            };
            (name, f["sent"].as_u64().unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn device_filters_choose_devices_before_the_count() {
    let d = tmpdir("series-filter");
    // DEV0..DEV7 round-robin, 100 records each.
    let arc = archive(&d, 8, 800, 1000);
    let out = d.join("out.pcap");
    let (o, s) = play(
        &arc,
        &out,
        &["--device-filter", "DEV?,!DEV3", "--device-filter", "!DEV5"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_all(&out).len(), 600);
    assert_eq!(s["series"]["filtered"], 200);
    let names: Vec<String> = sent_by_device(&s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["DEV0", "DEV1", "DEV2", "DEV4", "DEV6", "DEV7"]);
    // --devices N counts the devices the filter admits.
    let (o, s) = play(&arc, &out, &["--device-filter", "!DEV0", "--devices", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        sent_by_device(&s),
        [("DEV1".to_string(), 100), ("DEV2".to_string(), 100)]
    );
    assert_eq!(s["series"]["filtered"], 600);
    let (o, _) = play(&arc, &out, &["--device-filter", "!"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--device-filter: device pattern '!'"),
        "{}",
        stderr(&o)
    );
    // Classes and ranges, as users type them.
    let (o, s) = play(&arc, &out, &["--device-filter", "*V[1-3],D*[!0-9]7"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = sent_by_device(&s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["DEV1", "DEV2", "DEV3", "DEV7"]);
    // A filter no device passes sends nothing and says so, leaving the
    // output as it was.
    let before = std::fs::read(&out).unwrap();
    for filter in ["dev*", "!DEV*", "DEV[89]"] {
        let (o, _) = play(&arc, &out, &["--device-filter", filter]);
        assert_eq!(o.status.code(), Some(2), "{filter}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("--device-filter '{filter}': no device of"))
                && e.contains("its devices include DEV0, DEV1"),
            "{filter}: {e}"
        );
    }
    assert_eq!(std::fs::read(&out).unwrap(), before);
}

#[test]
fn device_steps_change_the_live_devices_over_play_time() {
    let d = tmpdir("series-steps");
    // Record i at i ms from DEV(i % 8): 1.6 s of play.
    let arc = archive(&d, 8, 1600, 1000);
    let out = d.join("out.pcap");
    let (o, s) = play(&arc, &out, &["--device-steps", "0s=2,400ms=8,1200ms=1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Before 400 ms DEV0 and DEV1 (50 records each), then all eight (100
    // each), from 1.2 s DEV0 alone (50).
    let want: Vec<(String, u64)> = (0..8)
        .map(|k| {
            let n = match k {
                0 => 200,
                1 => 150,
                _ => 100,
            };
            (format!("DEV{k}"), n)
        })
        .collect();
    assert_eq!(sent_by_device(&s), want);
    assert_eq!(s["series"]["inactive"], 650);
    // Every record leaves at its own time, inside its device's steps.
    let t0 = 1_704_067_199_500_000_000u64;
    let got = read_all(&out);
    assert_eq!(got.len(), 950);
    // Each device's default source address, from the summary's flows.
    let by_src: std::collections::HashMap<String, u8> = s["series"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let src = f["src"].as_str().unwrap();
            let ip = src.split(':').next().unwrap().to_string();
            let dev = f["device"].as_str().unwrap()[3..].parse().unwrap();
            (ip, dev)
        })
        .collect();
    assert_eq!(by_src.len(), 8, "distinct sources: {by_src:?}");
    for (ts, frame) in &got {
        let at_ms = (ts - t0) / 1_000_000;
        let live = match at_ms {
            0..400 => 2,
            400..1200 => 8,
            _ => 1,
        };
        let src = std::net::Ipv4Addr::new(frame[26], frame[27], frame[28], frame[29]);
        let dev = by_src[&src.to_string()];
        assert!(dev < live, "DEV{dev} sent at {at_ms} ms with {live} live");
    }
    // With copies, a simulated device is a flow: device x copies + copy.
    let (o, s) = play(&arc, &out, &["--devices", "x2", "--device-steps", "0s=3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = sent_by_device(&s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["DEV0", "DEV0#1", "DEV1"]);
    for (bad, want) in [
        ("0s=2,0s=3", "times must rise"),
        ("2s", "expected TIME=COUNT"),
    ] {
        let (o, _) = play(&arc, &out, &["--device-steps", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains(want), "{bad}: {}", stderr(&o));
    }
}

#[test]
fn stats_lines_count_the_live_devices() {
    let d = tmpdir("series-live");
    // Record i at i ms from DEV(i % 8): 2.4 s of play on the real clock.
    let arc = archive(&d, 8, 2400, 1000);
    let stats = d.join("stats.jsonl");
    let o = run(&[
        "series",
        "play",
        arc.to_str().unwrap(),
        "--to",
        "null",
        "-q",
        "--device-steps",
        "0s=2,1200ms=6",
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&stats).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| sluice_testkit::checked_json(l.as_bytes()))
        .collect();
    assert!(!lines.is_empty());
    for l in &lines {
        let t = l["t"].as_f64().unwrap();
        let active = l["active_flows"].as_u64().expect("a count");
        // A record never leaves before its time, so before 1.2 s only the
        // first two devices can have sent; a busy machine only delays.
        let most = if t < 1.2 { 2 } else { 6 };
        assert!(active <= most, "{active} flows live at {t} s: {l}");
    }
    let seen: u64 = lines
        .iter()
        .map(|l| l["active_flows"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(seen >= 1, "{text}");
    // The records of the whole play are all accounted for.
    let last = lines.last().unwrap();
    let flows = last["flows"].as_array().unwrap();
    let sent: u64 = flows.iter().map(|f| f["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, 2 * 150 + 6 * 150, "{last}");
}

#[test]
fn long_records_are_fragmented_and_tshark_reassembles_them() {
    if !sluice_testkit::require("tshark", "fragment reassembly") {
        return;
    }
    let d = tmpdir("series-frag");
    let arc = convert_csv(&d, "big", &long_records_csv(20, 1000, "+02:00"));
    let out = d.join("out.pcap");
    let (o, s) = play(&arc, &out, &["--mtu", "1500"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let frames = s["series"]["frames"].as_u64().unwrap();
    assert!(frames > 20, "fragmented: {frames} frames for 20 records");
    assert_eq!(read_all(&out).len() as u64, frames);
    // tshark reassembles every datagram, and checks IP and UDP checksums.
    let t = std::process::Command::new("tshark")
        .args([
            "-r",
            out.to_str().unwrap(),
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args([
            "-Y",
            "udp",
            "-T",
            "fields",
            "-e",
            "udp.length",
            "-e",
            "ip.checksum.status",
            "-e",
            "udp.checksum.status",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&t.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 20, "{text}");
    for (i, l) in lines.iter().enumerate() {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f[0], (8 + 1000 + i * 400).to_string(), "datagram {i}: {l}");
        // Wireshark's checksum status: 0 bad, 1 good, 2 unverified.
        assert_eq!(f[1], "1", "IP checksum of the last fragment: {l}");
        assert_eq!(f[2], "1", "UDP checksum over the reassembled datagram: {l}");
    }
    // Timestamps honour the +02:00 offset: 08:00:00Z on 2024-05-01.
    assert_eq!(read_all(&out)[0].0, 1_714_550_400_000_000_000);
}

#[test]
fn malformed_archive_is_refused_with_record_and_offset() {
    let d = tmpdir("series-bad");
    let arc = archive(&d, 1, 10, 1000);
    let mut b = std::fs::read(&arc).unwrap();
    let second = u16::from_be_bytes([b[0], b[1]]) as usize;
    b[second + 2] = 0x2a; // year digit not BCD in record 2
    let bad = d.join("bad.arc");
    std::fs::write(&bad, &b).unwrap();
    let out = d.join("out.pcap");
    let (o, _) = play(&bad, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("record 2") && e.contains(&format!("byte {second}")),
        "{e}"
    );
    let cut = d.join("cut.arc");
    std::fs::write(&cut, &std::fs::read(&arc).unwrap()[..second + 10]).unwrap();
    let (o, s) = play(&cut, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(s["packets"], 1);
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
}

#[test]
fn preload_sends_exactly_what_streaming_sends() {
    let d = tmpdir("series-preload");
    // More records than the streaming queues hold (32k), over several
    // small buffers, so preloading must keep every buffer and entry.
    let arc = archive(&d, 5, 40_000, 10);
    let (a, b) = (d.join("stream.pcap"), d.join("preload.pcap"));
    for extra in [
        &[][..],
        &["--devices", "x3"][..],
        &["--ooo-prob", "0.1", "--ooo-window", "50us"][..],
        &["--limit", "33333"][..],
        &["--workers", "2"][..],
    ] {
        let small = ["--buffer-size", "256K"];
        let args: Vec<&str> = small.iter().chain(extra).copied().collect();
        let (o, s1) = play(&arc, &a, &args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let with: Vec<&str> = args.iter().copied().chain(["--preload"]).collect();
        let (o, s2) = play(&arc, &b, &with);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("streaming instead"), "{}", stderr(&o));
        let (x, y) = (read_all(&a), read_all(&b));
        assert!(x.len() >= 33_333, "{extra:?}: {} frames", x.len());
        if extra.contains(&"--workers") {
            // Two workers' chunks interleave on the queue as they race, in
            // either mode: the same datagrams (addresses, ports, payload)
            // in some order (IP IDs follow the order).
            let key = |(_, f): (u64, Vec<u8>)| [&f[26..38], udp_payload(&f)].concat();
            let mut x: Vec<_> = x.into_iter().map(key).collect();
            let mut y: Vec<_> = y.into_iter().map(key).collect();
            x.sort();
            y.sort();
            assert!(x == y, "{extra:?}: preload differs from streaming");
        } else {
            assert!(x == y, "{extra:?}: preload differs from streaming");
        }
        assert_eq!(s1["packets"], s2["packets"]);
        if !extra.contains(&"--workers") {
            assert_eq!(s1["series"]["flows"], s2["series"]["flows"]);
        }
    }
    // Over the memory budget: a warning, then the same run streamed.
    let (o, _) = play(&arc, &b, &["--preload", "--preload-max", "100000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("streaming instead"), "{}", stderr(&o));
    assert_eq!(read_all(&b).len(), 40_000);
}

#[test]
fn two_tx_threads_rescue_by_default_and_count_every_record_once() {
    let d = tmpdir("series-rescue");
    let arc = archive(&d, 2, 1000, 20);
    let summary = d.join("s.json");
    let base = [
        "series",
        "play",
        arc.to_str().unwrap(),
        "--to",
        "null",
        "--threads",
        "2",
        "-q",
        "--summary-json",
        summary.to_str().unwrap(),
    ];
    for (extra, rescue) in [(&[][..], true), (&["--no-rescue"][..], false)] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let o = run(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let s: serde_json::Value = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
        assert_eq!(s["packets"], 1000, "{extra:?}");
        let flows = s["series"]["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2);
        let sent: u64 = flows.iter().map(|f| f["sent"].as_u64().unwrap()).sum();
        assert_eq!(sent, 1000, "{extra:?}: per-flow counts over both threads");
        assert_eq!(s["series"]["rescued"].is_u64(), rescue, "{extra:?}: {s}");
    }
    let o = run(&[&base[..], &["--rescue-after", "soon"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--rescue-after"), "{}", stderr(&o));
}

/// Sizes the user controls are bounded before anything is allocated: a
/// huge buffer used to zero-fill 16 GiB, abort or panic; a huge device
/// multiplier grew without bound.
#[test]
fn huge_buffers_and_device_multipliers_are_refused_naming_the_option() {
    let d = tmpdir("series-bounds");
    let arc = convert_csv(
        &d,
        "a",
        "timestamp,device_id,value\n2024-01-01T00:00:00Z,d1,1\n",
    );
    let arc = arc.to_str().unwrap();
    for size in [
        "8G",
        "137438953472",
        "18446744073709551615",
        "18446744073709551615G",
    ] {
        let o = run(&["series", "play", arc, "--buffer-size", size, "-q"]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "--buffer-size {size}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("--buffer-size"), "{}", stderr(&o));
    }
    let o = run(&["series", "play", arc, "--devices", "x100000000", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("40000"), "{}", stderr(&o));
    // A buffer far larger than the archive is not allocated in full.
    let o = run(&[
        "series",
        "play",
        arc,
        "--buffer-size",
        "1G",
        "--clock",
        "virtual",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// OS errors used to be printed twice ("No such file or directory (os
/// error 2): No such file or directory (os error 2)").
#[test]
fn an_os_error_is_printed_once() {
    let o = run(&["series", "play", "/nonexistent/a.arc", "-q"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
    let o = run(&[
        "replay",
        testdata("tcpreplay__test.pcap").to_str().unwrap(),
        "--to",
        "afpacket:nosuch0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("nosuch0"), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

/// A record in year 8000 used to be waited for in silence: the first long
/// gap and the first step back are reported with their record number.
#[test]
fn implausible_record_time_is_reported_with_its_record() {
    let d = tmpdir("series-gaps");
    let arc = convert_csv(
        &d,
        "gaps",
        "timestamp,device_id,value\n2024-01-01T00:00:00Z,d1,1\n2024-01-01T00:00:01Z,d1,2\n2024-01-01T05:00:00Z,d1,3\n2024-01-01T04:00:00Z,d1,4\n",
    );
    let o = run(&[
        "series",
        "play",
        arc.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("record 3: a gap of 17999s"), "{err}");
    assert!(
        err.contains("record 4: the recorded time steps back by 3600s"),
        "{err}"
    );
}

/// `--max-gap` caps every long gap, whichever worker reads the record
/// after it: the archive's time is cut before the run.
#[test]
fn max_gap_caps_every_long_gap_of_an_archive() {
    let d = tmpdir("series-max-gap");
    let mut csv = String::from("timestamp,device_id,value\n");
    // Two hours between records 2 and 3, three between 4 and 5.
    for t in ["00:00:00", "00:00:01", "02:00:01", "02:00:02", "05:00:02"] {
        csv.push_str(&format!("2024-01-01T{t}Z,d1,1\n"));
    }
    let arc = convert_csv(&d, "gaps", &csv);
    let out = d.join("out.pcap");
    let o = run(&[
        "series",
        "play",
        arc.to_str().unwrap(),
        "--clock",
        "virtual",
        "--max-gap",
        "2s",
        "--workers",
        "2",
        "--to",
        &format!("pcap:{}", out.display()),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("record 3: a gap of 7200s (and 1 more over --max-gap 2s) shortened to 2s"),
        "{err}"
    );
    let ts: Vec<u64> = read_all(&out)
        .iter()
        .map(|(t, _)| t - read_all(&out)[0].0)
        .collect();
    let s = 1_000_000_000;
    assert_eq!(ts, vec![0, s, 3 * s, 4 * s, 6 * s]);
    let o = run(&[
        "series",
        "play",
        arc.to_str().unwrap(),
        "--max-gap",
        "1s",
        "--tight-loop",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A damaged archive under `--max-gap` (read once more before the run) is
/// refused as the play itself refuses it: the file named once, the record
/// and its offset.
#[test]
fn max_gap_names_a_bad_record_as_the_play_does() {
    let d = tmpdir("series-max-gap-bad");
    let arc = convert_csv(
        &d,
        "bad",
        "timestamp,device_id,value\n2024-01-01T00:00:00Z,d1,1\n2024-01-01T00:00:01Z,d1,2\n",
    );
    let mut bytes = std::fs::read(&arc).unwrap();
    let second = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
    bytes[second + 14] = 0; // the second record's device id starts with NUL
    std::fs::write(&arc, &bytes).unwrap();
    let a = arc.to_str().unwrap();
    let capped = run(&[
        "series",
        "play",
        a,
        "--max-gap",
        "1s",
        "--clock",
        "virtual",
        "-q",
    ]);
    let plain = run(&["series", "play", a, "--clock", "virtual", "-q"]);
    assert_eq!(capped.status.code(), Some(2), "{}", stderr(&capped));
    let err = stderr(&capped);
    assert_eq!(err.matches("bad.arc").count(), 1, "{err}");
    assert!(err.contains(&format!("record 2 at byte {second}")), "{err}");
    assert!(
        stderr(&plain).contains(&format!("record 2 at byte {second}")),
        "{}",
        stderr(&plain)
    );
}

/// `--rx-stamp append`: every datagram leaves with the record's payload
/// and a receive stamp after it, numbered in one stream, its UDP checksum
/// right; `replace` writes over the payload's end and keeps its length.
#[test]
fn rx_stamps_ride_on_the_datagrams() {
    use sluice_wire::rxstamp::{read, RX_STAMP_LEN};
    let d = tmpdir("series-rx-stamp");
    let arc = archive(&d, 3, 10, 1000);
    // Whole records (30 bytes and more) have room for `replace`.
    for (mode, grow, payload) in [("append", RX_STAMP_LEN, "data"), ("replace", 0, "record")] {
        let plain = d.join(format!("plain-{payload}.pcap"));
        let (o, _) = play(&arc, &plain, &["--payload", payload]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = d.join(format!("{mode}.pcap"));
        let (o, s) = play(&arc, &out, &["--rx-stamp", mode, "--payload", payload]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let (want, got) = (frames_of(&plain), frames_of(&out));
        assert_eq!(s["packets"], want.len(), "{mode}");
        assert_eq!(got.len(), want.len());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.len(), w.len() + grow, "{mode} {k}");
            sluice_wire::verify_checksums(g).unwrap_or_else(|e| panic!("{mode} {k}: {e:?}"));
            let st = read(g).unwrap_or_else(|| panic!("{mode}: datagram {k} unstamped"));
            assert_eq!((st.stream, st.seq), (0, k as u64), "{mode}");
            if grow > 0 {
                // The record's payload comes first, as it was.
                let n = udp_payload(w).len();
                assert_eq!(&udp_payload(g)[..n], udp_payload(w), "{mode} {k}");
            }
        }
    }
}

/// Several NICs in one run (the time-series paper's §VI-E): `--also-to`
/// adds outputs, each device's datagrams leave by one of them (flow k by
/// output k mod outputs), and together they are the one-output play,
/// frame for frame and time for time.
#[test]
fn devices_leave_by_their_own_output_of_several() {
    let d = tmpdir("series-outputs");
    let arc = archive(&d, 12, 600, 1000);
    let (o, one) = play(&arc, &d.join("one.pcap"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let outs: Vec<PathBuf> = (0..3).map(|i| d.join(format!("out{i}.pcap"))).collect();
    let also: Vec<String> = outs[1..]
        .iter()
        .map(|p| format!("pcap:{}", p.display()))
        .collect();
    let (o, s) = play(
        &arc,
        &outs[0],
        &["--also-to", &also[0], "--also-to", &also[1]],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(s["packets"], one["packets"], "{s}");
    let parts: Vec<Vec<(u64, Vec<u8>)>> = outs.iter().map(|p| read_all(p)).collect();
    // Each output has its devices (source addresses), none shared.
    let mut seen = std::collections::HashMap::new();
    for (k, part) in parts.iter().enumerate() {
        assert!(part.len() >= 150, "output {k}: {} frames", part.len());
        for (_, f) in part {
            let src = f[26..30].to_vec();
            assert_eq!(*seen.entry(src).or_insert(k), k, "a device on two outputs");
        }
    }
    assert_eq!(seen.len(), 12);
    let mut joined: Vec<(u64, Vec<u8>)> = parts.into_iter().flatten().collect();
    let mut whole = read_all(&d.join("one.pcap"));
    joined.sort();
    whole.sort();
    assert!(
        joined == whole,
        "{} frames vs {}",
        joined.len(),
        whole.len()
    );
    // The kernel's UDP sockets choose no output: refused by name.
    let o = run(&[
        "series",
        "play",
        arc.to_str().unwrap(),
        "--to",
        "udp:127.0.0.1:9",
        "--also-to",
        &also[0],
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--also-to"), "{}", stderr(&o));
}
