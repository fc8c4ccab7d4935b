//! `sluice tcprewrite` on the link types tcpedit's other decoders read:
//! Linux cooked captures (SLL, SLL2: `tcpdump -i any`), raw IP, BSD null
//! and loopback. As they are (no `--dlt`), every packet is written
//! unchanged with the input's link type, as tcprewrite does (its plugins
//! do not encode); with `--dlt enet` each becomes the Ethernet frame that
//! the same options make of the same IP packet under an Ethernet header.

mod common;

use common::*;
use sluice_capture::{CaptureReader, LinkType, PcapWriter};
use std::path::Path;

/// The IP packets of the test frames (UDP/IPv4 to port 9, with sequence).
fn ip_packets() -> Vec<Vec<u8>> {
    (0..6)
        .map(|i| frame(i, 80 + i as usize)[14..].to_vec())
        .collect()
}

fn write(path: &Path, lt: LinkType, pkts: &[Vec<u8>]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(f), lt, 65535).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write_packet(1_000_000_000 * (i as u64 + 1), p, p.len() as u32)
            .unwrap();
    }
    w.into_inner().unwrap();
}

fn read(path: &Path) -> (LinkType, Vec<(Vec<u8>, u32)>) {
    let mut r = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    let mut lt = LinkType::ETHERNET;
    while let Some(p) = r.next_packet().unwrap() {
        lt = p.linktype;
        out.push((p.data.to_vec(), p.orig_len));
    }
    (lt, out)
}

const SMAC: [u8; 6] = [2, 0, 0, 0, 0, 7];

/// Each link layer of `ip`, as its capture would hold it.
fn layered(ip: &[u8]) -> Vec<(LinkType, Vec<u8>)> {
    let mut sll = vec![0, 0, 0, 1, 0, 6];
    sll.extend_from_slice(&SMAC);
    sll.extend_from_slice(&[0, 0, 0x08, 0x00]);
    let mut sll2 = vec![0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6];
    sll2.extend_from_slice(&SMAC);
    sll2.extend_from_slice(&[0, 0]);
    [
        (LinkType::LINUX_SLL, sll),
        (LinkType::LINUX_SLL2, sll2),
        (LinkType::RAW, vec![]),
        (LinkType::NULL, 2u32.to_le_bytes().to_vec()),
        (LinkType::LOOP, 2u32.to_be_bytes().to_vec()),
    ]
    .into_iter()
    .map(|(lt, mut l2)| {
        l2.extend_from_slice(ip);
        (lt, l2)
    })
    .collect()
}

#[test]
fn other_link_types_are_kept_or_made_ethernet_as_tcprewrite_does() {
    let d = tmpdir("linktypes");
    let ips = ip_packets();
    let edits = [
        "--portmap=9:99",
        "--srcipmap=10.99.0.0/16:10.7.0.0/16",
        "--fixcsum",
    ];
    let macs = [
        "--enet-dmac=02:00:00:00:00:99",
        "--enet-smac=02:00:00:00:00:01",
    ];
    // The reference: the same IP packets under Ethernet, edited.
    let eth: Vec<Vec<u8>> = ips
        .iter()
        .map(|ip| {
            let mut f = vec![0, 0, 0, 0, 0, 0];
            f.extend_from_slice(&SMAC);
            f.extend_from_slice(&[0x08, 0x00]);
            f.extend_from_slice(ip);
            f
        })
        .collect();
    let eth_in = d.join("eth.pcap");
    write(&eth_in, LinkType::ETHERNET, &eth);
    let rewrite = |input: &Path, out: &Path, extra: &[&str]| {
        let mut args = vec![
            "tcprewrite",
            "-i",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let want_with_macs = d.join("want-macs.pcap");
    let all: Vec<&str> = edits.iter().chain(&macs).copied().collect();
    assert!(rewrite(&eth_in, &want_with_macs, &all).status.success());
    let want_sll = d.join("want-sll.pcap");
    assert!(rewrite(&eth_in, &want_sll, &edits).status.success());
    let (_, want_with_macs) = read(&want_with_macs);
    let (_, want_sll) = read(&want_sll);
    assert_ne!(want_with_macs[0].0, eth[0], "the edits changed the frame");

    for k in 0..5 {
        let per: Vec<(LinkType, Vec<u8>)> = ips.iter().map(|ip| layered(ip).remove(k)).collect();
        let lt = per[0].0;
        let input = d.join(format!("in-{}.pcap", lt.0));
        let frames: Vec<Vec<u8>> = per.into_iter().map(|(_, f)| f).collect();
        write(&input, lt, &frames);

        // As they are: unchanged, the input's link type.
        let out = d.join(format!("kept-{}.pcap", lt.0));
        let o = rewrite(&input, &out, &edits);
        assert!(o.status.success(), "{}: {}", lt.0, stderr(&o));
        let (got_lt, got) = read(&out);
        assert_eq!(got_lt, lt);
        let got: Vec<Vec<u8>> = got.into_iter().map(|(f, _)| f).collect();
        assert_eq!(got, frames, "link type {}: written as they were", lt.0);

        // Made Ethernet: the reference's frames and lengths.
        let out = d.join(format!("enet-{}.pcap", lt.0));
        let has_mac = k < 2;
        let mut args = vec!["--dlt=enet"];
        args.extend_from_slice(&edits);
        if !has_mac {
            // Raw IP and null carry no MAC: both are needed, and said so.
            let o = rewrite(&input, &out, &args);
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("--enet-smac"), "{}", stderr(&o));
            assert!(!out.exists());
        }
        args.extend_from_slice(&macs);
        let o = rewrite(&input, &out, &args);
        assert!(o.status.success(), "{}: {}", lt.0, stderr(&o));
        let (got_lt, got) = read(&out);
        assert_eq!(got_lt, LinkType::ETHERNET);
        assert_eq!(got, want_with_macs, "link type {}", lt.0);

        // SLL without MACs: the source from its address, the destination 0.
        if has_mac {
            let mut args = vec!["--dlt=enet"];
            args.extend_from_slice(&edits);
            let o = rewrite(&input, &out, &args);
            assert!(o.status.success(), "{}", stderr(&o));
            assert_eq!(read(&out).1, want_sll, "link type {}", lt.0);
        }
    }
}

#[test]
fn a_packet_the_decoder_gives_up_on_is_kept_or_skipped() {
    let d = tmpdir("linktypes-soft");
    let ip = ip_packets().remove(0);
    let mut good = layered(&ip).remove(0).1;
    let mut bad = good.clone();
    // ARPHRD 0x320: not Ethernet or loopback; tcpedit's soft error.
    bad[2..4].copy_from_slice(&0x320u16.to_be_bytes());
    let input = d.join("in.pcap");
    write(&input, LinkType::LINUX_SLL, &[good.clone(), bad.clone()]);
    let out = d.join("out.pcap");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "tcprewrite".to_string(),
            "-i".into(),
            input.display().to_string(),
            "-o".into(),
            out.display().to_string(),
            "--dlt=enet".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let o = sluice().args(args(&[])).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, got) = read(&out);
    assert_eq!(got.len(), 2);
    good.drain(..2);
    assert_eq!(got[0].0.len(), good.len(), "made Ethernet: 2 bytes shorter");
    assert_eq!(got[1].0, bad, "left as it was");
    let o = sluice()
        .args(args(&["--skip-soft-errors"]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read(&out).1.len(), 1, "left out");
}
