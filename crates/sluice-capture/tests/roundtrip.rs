//! pcap -> PcapWriter -> pcap round trips: every packet comes back with the
//! same bytes, original length and nanosecond timestamp.

use std::io::Cursor;
use std::path::PathBuf;

use sluice_capture::{CaptureReader, Format, LinkType, PcapWriter};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/pcap");

struct Rec {
    ts_ns: u64,
    data: Vec<u8>,
    orig_len: u32,
    linktype: LinkType,
}

fn read_all(mut r: CaptureReader) -> Vec<Rec> {
    let mut v = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        v.push(Rec {
            ts_ns: p.ts_ns,
            data: p.data.to_vec(),
            orig_len: p.orig_len,
            linktype: p.linktype,
        });
    }
    v
}

fn round_trip(file: &str) -> (Vec<Rec>, Vec<u8>) {
    let path = PathBuf::from(DIR).join(file);
    let r = CaptureReader::open(&path).unwrap_or_else(|e| panic!("testdata missing? {e}"));
    let linktype = r.linktype().unwrap();
    let snaplen = r.snaplen().unwrap_or(262_144);
    let orig = read_all(r);

    let mut w = PcapWriter::new(Vec::new(), linktype, snaplen).unwrap();
    for p in &orig {
        w.write_packet(p.ts_ns, &p.data, p.orig_len).unwrap();
    }
    assert_eq!(w.packets(), orig.len() as u64);
    let bytes = w.into_inner().unwrap();

    let back = CaptureReader::from_reader(Box::new(Cursor::new(bytes.clone())), "rt").unwrap();
    assert_eq!(
        back.format(),
        Format::Pcap {
            nanos: true,
            big_endian: false
        }
    );
    assert_eq!(back.linktype(), Some(linktype));
    assert_eq!(back.snaplen(), Some(snaplen));
    let again = read_all(back);
    assert_eq!(again.len(), orig.len());
    for (i, (a, b)) in orig.iter().zip(&again).enumerate() {
        assert_eq!(a.ts_ns, b.ts_ns, "{file} packet {i}: timestamp");
        assert_eq!(a.data, b.data, "{file} packet {i}: bytes");
        assert_eq!(a.orig_len, b.orig_len, "{file} packet {i}: orig_len");
        assert_eq!(a.linktype, b.linktype, "{file} packet {i}: link type");
    }
    (orig, bytes)
}

#[test]
fn ethernet_microsecond_pcap_round_trips() {
    let (orig, bytes) = round_trip("tcpreplay__test.pcap");
    assert_eq!(orig.len(), 179);
    // Same records, 24 + 16 per packet + data: nothing added or lost.
    let data: usize = orig.iter().map(|p| 16 + p.data.len()).sum();
    assert_eq!(bytes.len(), 24 + data);
    assert!(orig.iter().all(|p| p.ts_ns % 1_000 == 0));
}

#[test]
fn big_endian_and_nanosecond_pcaps_round_trip() {
    assert_eq!(round_trip("tcpdump__pptp.pcap").0.len(), 23);
    let (orig, _) = round_trip("zeek__vntag.pcap");
    assert_eq!(orig.len(), 3);
    let (orig, _) = round_trip("tcpdump__bigtcp-ipv4.pcap");
    assert!(orig[0].data.len() > 65_535);
}

#[test]
fn writing_a_capture_twice_gives_identical_bytes() {
    let (_, first) = round_trip("zeek__linux_dlt_sll2.pcap");
    let r = CaptureReader::from_reader(Box::new(Cursor::new(first.clone())), "rt").unwrap();
    let recs = read_all(r);
    let mut w = PcapWriter::new(Vec::new(), LinkType::LINUX_SLL2, 262_144).unwrap();
    for p in &recs {
        w.write_packet(p.ts_ns, &p.data, p.orig_len).unwrap();
    }
    w.flush().unwrap();
    let second = w.into_inner().unwrap();
    assert_eq!(first[24..], second[24..]);
}
