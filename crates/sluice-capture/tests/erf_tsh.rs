//! ERF and TSH traces from libtrace's test suite (testdata/traces,
//! PROVENANCE.md), read against what others make of the same bytes: the
//! ERF trace's pcap twin, Wireshark's timestamps, and the counts and wire
//! lengths libtrace's own tests expect.

use std::path::PathBuf;

use sluice_capture::{CaptureReader, ErrorKind, Format, LinkType};

fn trace(name: &str) -> PathBuf {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/traces"
    ))
    .join(name);
    assert!(
        p.is_file(),
        "{} is missing: it is part of the repository",
        p.display()
    );
    p
}

/// (ts_ns, bytes, orig_len, link type) of a packet.
type Read = (u64, Vec<u8>, u32, LinkType);

/// Every packet of `path`, and the reader after the last.
fn read(path: &std::path::Path) -> (Vec<Read>, CaptureReader) {
    let mut r = CaptureReader::open(path).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap_or_else(|e| panic!("{e}")) {
        out.push((p.ts_ns, p.data.to_vec(), p.orig_len, p.linktype));
    }
    (out, r)
}

#[test]
fn an_erf_trace_reads_as_its_pcap_twin_does() {
    let (erf, r) = read(&trace("libtrace__100_packets.erf"));
    assert_eq!(r.format(), Format::Erf);
    let (pcap, _) = read(&trace("libtrace__100_packets.pcap"));
    assert_eq!(erf.len(), 100);
    assert_eq!(pcap.len(), 100);
    for (i, (e, p)) in erf.iter().zip(&pcap).enumerate() {
        // The twin's anonymisation differs in MAC addresses and ports:
        // the IP header is the same.
        assert_eq!(e.1.len(), p.1.len(), "packet {i}: bytes kept");
        assert_eq!(e.1[12..34], p.1[12..34], "packet {i}: IP header");
        assert_eq!(e.3, LinkType::ETHERNET);
        // The same instants to within the twin's own few µs (it was not
        // made from these very bytes: Wireshark's reading, checked to the
        // ns below, is the exact one).
        assert!(e.0.abs_diff(p.0) < 10_000, "packet {i}: {} vs {}", e.0, p.0);
        // Its wire length kept the FCS; the ERF reader's does not: the
        // frame is its IP packet and the Ethernet header, padded to 60.
        assert_eq!(e.2 + 4, p.2, "packet {i}: wire length");
        let ip_len = u32::from(u16::from_be_bytes([e.1[16], e.1[17]]));
        assert_eq!(e.2, (14 + ip_len).max(60), "packet {i}: wire length");
    }
    // libtrace's test-wlen.c: 30 960 wire bytes, FCS counted.
    assert_eq!(erf.iter().map(|e| u64::from(e.2) + 4).sum::<u64>(), 30_960);
}

#[test]
fn erf_timestamps_are_wiresharks_to_the_nanosecond() {
    if !sluice_testkit::require("tshark", "ERF against tshark") {
        return;
    }
    let path = trace("libtrace__100_packets.erf");
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args([
            "-T",
            "fields",
            "-E",
            "separator=,",
            "-e",
            "frame.time_epoch",
        ])
        .args([
            "-e",
            "frame.cap_len",
            "-e",
            "eth.dst",
            "-e",
            "eth.src",
            "-e",
            "ip.id",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (erf, _) = read(&path);
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), erf.len());
    let mac = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    for (row, e) in rows.iter().zip(&erf) {
        let f: Vec<&str> = row.split(',').collect();
        let (s, ns) = f[0].split_once('.').unwrap();
        let want = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
        assert_eq!(e.0, want, "{row}");
        assert_eq!(e.1.len(), f[1].parse::<usize>().unwrap(), "{row}");
        // The frame starts where Wireshark's does.
        assert_eq!(
            (mac(&e.1[0..6]), mac(&e.1[6..12])),
            (f[2].into(), f[3].into()),
            "{row}"
        );
        let id = u16::from_be_bytes([e.1[18], e.1[19]]);
        assert_eq!(format!("0x{id:04x}"), f[4], "{row}");
    }
}

#[test]
fn a_tsh_trace_reads_as_raw_ipv4_headers() {
    let (tsh, r) = read(&trace("libtrace__10_packets.tsh.gz"));
    assert_eq!(r.format(), Format::Tsh);
    assert!(r.compressed());
    assert_eq!(tsh.len(), 100);
    for (i, t) in tsh.iter().enumerate() {
        // The wire length is the IP header's total length; 36 bytes are
        // kept of longer packets.
        let total = u32::from(u16::from_be_bytes([t.1[2], t.1[3]]));
        assert_eq!(
            (t.1.len() as u32, t.2, t.3),
            (total.min(36), total, LinkType::IPV4),
            "packet {i}"
        );
        assert_eq!(t.1[0] >> 4, 4);
    }
    assert!(
        tsh.windows(2).all(|w| w[0].0 <= w[1].0),
        "time runs forward"
    );
    // libtrace's test-wlen.c: 67 341 wire bytes.
    assert_eq!(tsh.iter().map(|t| u64::from(t.2)).sum::<u64>(), 67_341);
}

#[test]
fn erf_provenance_records_are_no_packets() {
    let path = trace("libtrace__provenance.erf");
    let (packets, r) = read(&path);
    assert!(packets.is_empty());
    assert_eq!(r.offset(), std::fs::metadata(&path).unwrap().len());
}

#[test]
fn a_cut_erf_trace_gives_its_packets_then_names_the_cut() {
    let bytes = std::fs::read(trace("libtrace__100_packets.erf")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let cut = d.path().join("cut.erf");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let mut r = CaptureReader::open(&cut).unwrap();
    let mut n = 0;
    let e = loop {
        match r.next_packet() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("the cut went unseen"),
            Err(e) => break e,
        }
    };
    assert_eq!(n, 99);
    assert!(e.is_truncation(), "{e}");
    assert_eq!(e.record, Some(100));
    assert!(e.to_string().contains("cut.erf: byte "), "{e}");
    // Without its name, ERF is no capture we know: the error says how.
    let plain = d.path().join("trace.bin");
    std::fs::write(&plain, &bytes).unwrap();
    let e = CaptureReader::open(&plain).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotACapture { .. }));
    assert!(e.to_string().contains(".erf, .tsh"), "{e}");
}
