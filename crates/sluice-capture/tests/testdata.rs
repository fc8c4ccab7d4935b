//! Every capture in the repository's testdata directory is read completely or
//! refused with the precise expected error, checked against MANIFEST.tsv
//! (packet counts from capinfos, verdicts of tcpdump and tshark).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use sluice_capture::{CaptureError, CaptureReader, ErrorKind, Format, LinkType};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/pcap");

fn dir() -> PathBuf {
    let d = PathBuf::from(DIR);
    assert!(
        d.join("MANIFEST.tsv").is_file(),
        "testdata directory {} (with MANIFEST.tsv) is missing: it is part of the repository",
        d.display()
    );
    d
}

/// MANIFEST.tsv rows keyed by file name, each a column-name -> value map.
fn manifest() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = fs::read_to_string(dir().join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let cols: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let row: BTreeMap<String, String> = cols
                .iter()
                .zip(l.split('\t'))
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect();
            (row["file"].clone(), row)
        })
        .collect()
}

/// Reads a capture to its end: packets returned, and the error if any
/// (an `open` error counts as zero packets).
fn drain(path: &Path) -> (u64, Option<CaptureError>, Option<CaptureReader>) {
    let mut r = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => return (0, Some(e), None),
    };
    let mut n = 0;
    loop {
        match r.next_packet() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return (n, None, Some(r)),
            Err(e) => return (n, Some(e), Some(r)),
        }
    }
}

/// A malformed file: how many packets come before the error, and what the
/// error must be.
struct Bad {
    packets: u64,
    check: fn(&CaptureError) -> bool,
}

/// The malformed files and the exact error each must produce.
fn expected_errors() -> BTreeMap<&'static str, Bad> {
    let mut m: BTreeMap<&'static str, Bad> = BTreeMap::new();
    let mut bad = |name, packets, check| {
        m.insert(name, Bad { packets, check });
    };
    bad("libpcap__pcap-empty-file.pcap", 0, |e| {
        matches!(e.kind, ErrorKind::Empty) && e.offset == 0
    });
    bad("libpcap__pcap-truncated-hdr-23.pcap", 0, |e| {
        matches!(e.kind, ErrorKind::TruncatedHeader { need: 24, got: 23 }) && e.is_truncation()
    });
    bad("libpcap__pcap-invalid-version-1.pcap", 0, |e| {
        matches!(e.kind, ErrorKind::UnsupportedVersion { major: 1, minor: 4 })
    });
    bad("libpcap__linktype-reserved-field-not-zero.pcap", 0, |e| {
        matches!(e.kind, ErrorKind::BadLinkType(0x0030_0000))
    });
    bad("libpcap__pcapng-truncated-shb.pcapng", 0, |e| {
        matches!(e.kind, ErrorKind::TruncatedHeader { need: 28, got: 16 }) && e.is_truncation()
    });
    bad("libpcap__pcapng-block-len-not-mult4.pcapng", 0, |e| {
        matches!(
            e.kind,
            ErrorKind::BadBlockLength {
                block_type: 1,
                length: 21,
                reason: "not a multiple of 4"
            }
        ) && e.offset == 28
            && e.record.is_none()
    });
    bad("libpcap__pcapng-packet-before-idb.pcapng", 0, |e| {
        matches!(e.kind, ErrorKind::PacketBeforeInterface { block_type: 6 })
            && e.offset == 28
            && e.record == Some(1)
    });
    bad("libpcap__shb-option-too-long.pcapng", 0, |e| {
        matches!(
            e.kind,
            ErrorKind::BlockTrailerMismatch {
                block_type: 0x0a0d_0d0a,
                header: 52,
                trailer: 0x3030_3030
            }
        ) && e.offset == 0
    });
    bad("libpcap__pcapng-idb-tsresol-dec-high.pcapng", 0, |e| {
        matches!(e.kind, ErrorKind::BadTsResol(100)) && e.offset == 28
    });
    bad("DERIVED__tcpreplay_test_cut-mid-packet.pcap", 99, |e| {
        matches!(e.kind, ErrorKind::TruncatedRecord { need: 66, got: 30 })
            && e.is_truncation()
            && e.offset == 54_497 - 30 - 16
            && e.record == Some(100)
    });
    bad("DERIVED__zeek_pcapng-multi-interface_cut.pcapng", 3, |e| {
        matches!(e.kind, ErrorKind::TruncatedBlock { need: 200, got: 50 })
            && e.is_truncation()
            && e.offset == 878 - 50
            && e.record == Some(4)
    });
    m
}

#[test]
fn every_testdata_file_reads_or_fails_precisely() {
    let manifest = manifest();
    let bad = expected_errors();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();

    for entry in fs::read_dir(dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == "MANIFEST.tsv" || name == "PROVENANCE.md" {
            continue;
        }
        seen.insert(name.clone());
        let Some(row) = manifest.get(&name) else {
            failures.push(format!("{name}: not listed in MANIFEST.tsv"));
            continue;
        };
        let (n, err, reader) = drain(&path);

        if let Some(b) = bad.get(name.as_str()) {
            match err {
                None => failures.push(format!(
                    "{name}: read {n} packets without the expected error"
                )),
                Some(e) => {
                    if !(b.check)(&e) || n != b.packets {
                        failures.push(format!(
                            "{name}: got {n} packets then `{e}` ({:?} offset {} record {:?}); \
                             expected {} packets then the tabled error",
                            e.kind, e.offset, e.record, b.packets
                        ));
                    }
                    let text = e.to_string();
                    if !text.starts_with(&path.display().to_string()) || !text.contains("byte ") {
                        failures.push(format!(
                            "{name}: message does not name file and byte: {text}"
                        ));
                    }
                    if let Some(mut r) = reader {
                        // Sticky: the same error again, no more packets.
                        match r.next_packet() {
                            Err(again) if again.to_string() == text => {}
                            other => failures.push(format!(
                                "{name}: after the error next_packet gave {:?}",
                                other.map(|p| p.map(|p| p.data.len()))
                            )),
                        }
                    }
                }
            }
            continue;
        }

        let readable = row["tcpdump_rc"] == "0" || row["tshark_rc"] == "0";
        if !readable {
            failures.push(format!(
                "{name}: refused by tcpdump and tshark but not in the error table"
            ));
            continue;
        }
        let want: u64 = row["packets"].parse().unwrap();
        if let Some(e) = err {
            failures.push(format!("{name}: error after {n} of {want} packets: {e}"));
            continue;
        }
        if n != want {
            failures.push(format!("{name}: read {n} packets, manifest says {want}"));
        }
        let r = reader.unwrap();
        let size: u64 = row["uncompressed_bytes"].parse().unwrap();
        if r.offset() != size {
            failures.push(format!("{name}: stopped at byte {} of {size}", r.offset()));
        }
        let container = row["container"].as_str();
        let want_format = match container {
            "pcapng" => Format::Pcapng,
            _ => Format::Pcap {
                nanos: row["ts_res"] == "ns",
                big_endian: row["endian"] == "BE",
            },
        };
        if r.format() != want_format || r.compressed() != container.starts_with("gzip+") {
            failures.push(format!(
                "{name}: format {:?} compressed {}, manifest says {container} {} {}",
                r.format(),
                r.compressed(),
                row["endian"],
                row["ts_res"]
            ));
        }
        if want_format != Format::Pcapng {
            let lt = r.linktype().unwrap();
            if lt.to_string() != row["linktype"] || lt.0.to_string() != row["linktype_hdr"] {
                failures.push(format!(
                    "{name}: link type {lt} ({}), manifest says {} ({})",
                    lt.0, row["linktype"], row["linktype_hdr"]
                ));
            }
        }
    }

    for name in bad.keys() {
        if !seen.contains(*name) {
            failures.push(format!(
                "{name}: in the error table but not in the directory"
            ));
        }
    }
    for name in manifest.keys() {
        if !seen.contains(name) {
            failures.push(format!("{name}: in MANIFEST.tsv but not in the directory"));
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

#[test]
fn gzip_capture_decodes_fully() {
    let (n, err, r) = drain(&dir().join("zeek__echo-connections.pcap.gz"));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(n, 82_582);
    let r = r.unwrap();
    assert!(r.compressed());
    assert_eq!(r.offset(), 6_833_698);
}

#[test]
fn pcapng_per_interface_link_types_and_timestamps() {
    // Two interfaces with different link types (tcpdump refuses this file).
    let mut r = CaptureReader::open(dir().join("hadrielk__le_test006.pcapng")).unwrap();
    let mut seen = BTreeSet::new();
    while let Some(p) = r.next_packet().unwrap() {
        seen.insert((p.interface, p.linktype));
    }
    assert_eq!(
        seen,
        BTreeSet::from([(0, LinkType::ETHERNET), (1, LinkType::NULL)])
    );

    // Binary if_tsresol 2^-63 with ts 2^63-1: just under one second.
    let mut r =
        CaptureReader::open(dir().join("libpcap__pcapng-tsresol-bin-overflow.pcapng")).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.ts_ns, 999_999_999);
    assert_eq!(p.data.len(), 1);
    assert!(r.next_packet().unwrap().is_none());

    // Mixed-endian sections: 8 packets, and interfaces restart per section.
    let mut r = CaptureReader::open(dir().join("hadrielk__le_test202.pcapng")).unwrap();
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        assert!(p.interface < 5);
        n += 1;
    }
    assert_eq!(n, 8);
}

#[test]
fn microsecond_fields_past_one_second_are_converted() {
    let path = dir().join("tcpdump__timestamp_invalid_micro.pcap");
    let raw = fs::read(&path).unwrap();
    let mut r = CaptureReader::open(&path).unwrap();
    let mut at = 24;
    while let Some(p) = r.next_packet().unwrap() {
        let u = |o: usize| {
            u64::from(u32::from_le_bytes(
                raw[at + o..at + o + 4].try_into().unwrap(),
            ))
        };
        assert_eq!(p.ts_ns, u(0) * 1_000_000_000 + u(4) * 1_000);
        at += 16 + p.data.len();
    }
    assert_eq!(at, raw.len());
}
