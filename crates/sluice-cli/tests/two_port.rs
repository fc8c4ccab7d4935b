//! Two-port replay (`--to2`, `--split`) and `sluice prep`: every frame of a
//! real trace leaves exactly once, by the port of its side, in the trace's
//! order; the sides are judged independently of sluice by tshark (a TCP
//! flow's client is the sender of its SYN).

mod common;
mod netns;
use common::*;
use netns::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// For each frame of the trace: Some(true) when it is a TCP segment sent by
/// its flow's client (the SYN's sender), Some(false) when by the server,
/// None when tshark sees no handshake for it.
fn tshark_sides(trace: &Path) -> Vec<Option<bool>> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(trace)
        .args(["-T", "fields", "-E", "occurrence=f"])
        .args(["-e", "tcp.stream", "-e", "ip.src", "-e", "ipv6.src"])
        .args([
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.flags.syn",
            "-e",
            "tcp.flags.ack",
        ])
        .output()
        .expect("tshark runs");
    assert!(o.status.success());
    let rows: Vec<Vec<String>> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    let end = |r: &Vec<String>| format!("{}{}:{}", r[1], r[2], r[3]);
    let mut client = HashMap::new();
    for r in &rows {
        let syn = r[4] == "1" || r[4] == "True";
        let ack = r[5] == "1" || r[5] == "True";
        if !r[0].is_empty() && syn && !ack {
            client.entry(r[0].clone()).or_insert_with(|| end(r));
        }
    }
    rows.iter()
        .map(|r| client.get(&r[0]).map(|c| *c == end(r)))
        .collect()
}

/// Assigns each trace frame to A or B, in order: A and B must each be a
/// subsequence of the trace and together hold every frame once. Frames
/// of the captures that are not the trace's (a kernel's own) are skipped.
fn assign(trace: &[Vec<u8>], a: &[Vec<u8>], b: &[Vec<u8>]) -> Vec<bool> {
    let known: HashSet<&Vec<u8>> = trace.iter().collect();
    let a: Vec<_> = a.iter().filter(|f| known.contains(f)).collect();
    let b: Vec<_> = b.iter().filter(|f| known.contains(f)).collect();
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    for (k, f) in trace.iter().enumerate() {
        if a.get(i) == Some(&f) {
            i += 1;
            out.push(true);
        } else if b.get(j) == Some(&f) {
            j += 1;
            out.push(false);
        } else {
            panic!("frame {} of the trace left by neither port in order", k + 1);
        }
    }
    assert_eq!((i, j), (a.len(), b.len()), "extra frames");
    out
}

fn check_sides(trace: &Path, went_a: &[bool]) {
    let sides = tshark_sides(trace);
    assert_eq!(sides.len(), went_a.len());
    let mut judged = 0;
    for (k, (side, a)) in sides.iter().zip(went_a).enumerate() {
        if let Some(client) = side {
            assert_eq!(client, a, "frame {}: client {client}, left by A {a}", k + 1);
            judged += 1;
        }
    }
    assert!(judged >= 100, "only {judged} frames judged");
    assert!(went_a.iter().any(|a| !a) && went_a.iter().any(|a| *a));
}

#[test]
fn split_auto_and_its_cache_send_each_side_by_its_port() {
    if !sluice_testkit::require("tshark", "two-port judge") {
        return;
    }
    let d = tmpdir("two-port");
    let trace = testdata("tcpreplay__test.pcap");
    let t = trace.to_str().unwrap();
    let (a, b) = (d.join("a.pcap"), d.join("b.pcap"));
    let to2 = format!("pcap:{}", b.display());
    let o = run_to_pcap(&["replay", t], &a, &["--to2", &to2, "--split", "auto"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let went_a = assign(&frames_of(&trace), &frames_of(&a), &frames_of(&b));
    check_sides(&trace, &went_a);

    // The same split through a cache made by `sluice prep`.
    let cache = d.join("test.split");
    let o = run(&["prep", t, "--split", "auto", "-o", cache.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("179 packets"), "{}", stderr(&o));
    let (a2, b2) = (d.join("a2.pcap"), d.join("b2.pcap"));
    let to2 = format!("pcap:{}", b2.display());
    let split = format!("cache:{}", cache.display());
    let o = run_to_pcap(&["replay", t], &a2, &["--to2", &to2, "--split", &split]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames_of(&a2), frames_of(&a));
    assert_eq!(frames_of(&b2), frames_of(&b));

    // A cache made for another trace is refused, naming it.
    let other = testdata("zeek__http_bro.org.pcap");
    let o = run_to_pcap(
        &["replay", other.to_str().unwrap()],
        &a2,
        &["--split", &split],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("test.split: made for a trace"),
        "{}",
        stderr(&o)
    );
    // --to2 without a split says what is missing.
    let o = run_to_pcap(&["replay", t], &a2, &["--to2", &to2]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--split"), "{}", stderr(&o));
}

/// Per-side rewriting: --endpoints and two MACs follow the split.
#[test]
fn endpoints_and_macs_follow_the_sides() {
    let d = tmpdir("two-port-ep");
    let trace = testdata("tcpreplay__test.pcap");
    let t = trace.to_str().unwrap();
    let (a, b) = (d.join("a.pcap"), d.join("b.pcap"));
    let to2 = format!("pcap:{}", b.display());
    let o = run_to_pcap(
        &["replay", t],
        &a,
        &[
            "--to2",
            &to2,
            "--split",
            "auto",
            "--endpoints",
            "10.10.0.1:10.10.0.2",
            "--enet-dmac",
            "02:00:00:00:00:0a,02:00:00:00:00:0b",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for (file, dmac, src, dst) in [
        (&a, 0x0a, [10, 10, 0, 1], [10, 10, 0, 2]),
        (&b, 0x0b, [10, 10, 0, 2], [10, 10, 0, 1]),
    ] {
        let fs = frames_of(file);
        assert!(!fs.is_empty());
        let mut v4 = 0;
        for f in &fs {
            assert_eq!(f[..6], [2, 0, 0, 0, 0, dmac]);
            let l = sluice_wire::parse_layers(f);
            if let Some(sluice_wire::Ip::V4 { .. }) = l.ip {
                let at = l.l3_offset;
                assert_eq!(f[at + 12..at + 16], src);
                assert_eq!(f[at + 16..at + 20], dst);
                v4 += 1;
            }
        }
        assert!(v4 > 10, "{v4}");
    }
}

/// Through two veth pairs: client packets arrive on the first link, server
/// packets on the second, in the trace's order on each.
#[test]
fn two_veth_links_carry_one_side_each() {
    if !can_run() || !sluice_testkit::require("tshark", "two-port judge") {
        return;
    }
    let (n1, n2) = (Net::up("s2a"), Net::up("s2b"));
    let d = tmpdir("two-port-veth");
    let trace = testdata("tcpreplay__test.pcap");
    let (c1, c2) = (d.join("one.pcap"), d.join("two.pcap"));
    let (d1, d2) = (n1.capture(&c1), n2.capture(&c2));
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--pps",
        "2000",
        "-q",
        "--to",
        &format!("afpacket:{}", n1.tx()),
        "--to2",
        &format!("afpacket:{}", n2.tx()),
        "--split",
        "auto",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop(d1);
    stop(d2);
    assert!(o.status.success(), "{}", stderr(&o));
    let went_a = assign(&frames_of(&trace), &frames_of(&c1), &frames_of(&c2));
    check_sides(&trace, &went_a);
}

/// A time series through two NICs in one run (`series play --also-to`):
/// each link carries its own devices, every record arrives once.
#[test]
fn a_series_leaves_through_two_links_each_with_its_devices() {
    if !can_run() {
        return;
    }
    let (n1, n2) = (Net::up("s2c"), Net::up("s2d"));
    let d = tmpdir("series-two-links");
    let mut csv = String::from("timestamp,device_id,value\n");
    for i in 0..400 {
        csv += &format!("2024-01-01T00:00:00.{:06}Z,DEV{},{}\n", i * 2000, i % 10, i);
    }
    let arc = convert_csv(&d, "s", &csv);
    let (c1, c2) = (d.join("one.pcap"), d.join("two.pcap"));
    let (d1, d2) = (n1.capture(&c1), n2.capture(&c2));
    let o = run(&[
        "series",
        "play",
        arc.to_str().unwrap(),
        "-q",
        "--dst-mac",
        "02:00:00:00:00:99",
        "--to",
        &format!("afpacket:{}", n1.tx()),
        "--also-to",
        &format!("afpacket:{}", n2.tx()),
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop(d1);
    stop(d2);
    assert!(o.status.success(), "{}", stderr(&o));
    let udp = |p: &Path| -> Vec<Vec<u8>> {
        frames_of(p)
            .into_iter()
            .filter(|f| f.len() > 42 && f[12..14] == [8, 0] && f[23] == 17)
            .collect()
    };
    let (a, b) = (udp(&c1), udp(&c2));
    assert_eq!(a.len() + b.len(), 400, "{} + {}", a.len(), b.len());
    let srcs =
        |v: &[Vec<u8>]| -> HashSet<Vec<u8>> { v.iter().map(|f| f[26..30].to_vec()).collect() };
    let (sa, sb) = (srcs(&a), srcs(&b));
    assert!(!sa.is_empty() && !sb.is_empty(), "both links used");
    assert!(sa.is_disjoint(&sb), "a device on both links");
    assert_eq!(sa.len() + sb.len(), 10);
}
