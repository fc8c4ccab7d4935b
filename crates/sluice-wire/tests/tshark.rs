//! Cross-checks our checksums with an independent decoder, tshark.
//!
//! About twenty frames of every kind we handle (IPv4/IPv6 × TCP/UDP, ICMP,
//! ICMPv6, VLAN and QinQ tags, IPv4 options, IPv6 extension headers, an
//! opaque GRE payload, Ethernet padding) are built, valid to begin with,
//! then rewritten with `Zero` and `Truncate`. All of them go into a
//! nanosecond pcap written by hand, and tshark is asked for the status of
//! every checksum it verifies plus its expert messages: no frame may have a
//! bad checksum or be malformed. Two deliberately corrupted frames must be
//! flagged, which proves the check can fail.
//!
//! Without tshark the test is skipped with a note, unless `CI` is set.

use std::path::Path;
use std::process::Command;

use sluice_wire::checksum::{
    fold, ipv4_header_checksum, pseudo_header_v4, pseudo_header_v6, sum16,
};
use sluice_wire::{parse_layers, rewrite_payload, verify_checksums, PayloadMode};

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const V4_A: [u8; 4] = [192, 0, 2, 1];
const V4_B: [u8; 4] = [198, 51, 100, 7];
const V6_A: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
];
const V6_B: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xef,
];

/// Deterministic filler bytes.
fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn ethernet(tags: &[u16], ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = MAC_B.to_vec();
    f.extend_from_slice(&MAC_A);
    for (i, tpid) in tags.iter().enumerate() {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&(0x0064 + i as u16).to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// An L4 segment without its checksum; the checksum is filled in by the
/// IP builders. Returns (proto, bytes, offset of the checksum field).
struct Seg {
    proto: u8,
    bytes: Vec<u8>,
    csum_at: usize,
}

fn tcp(options: &[u8], payload: &[u8]) -> Seg {
    assert_eq!(options.len() % 4, 0);
    let mut b = vec![0x9c, 0x41, 0x13, 0x8b]; // 40001 -> 5003
    b.extend_from_slice(&0x1234_5678u32.to_be_bytes());
    b.extend_from_slice(&0x0abc_def0u32.to_be_bytes());
    b.push((((20 + options.len()) / 4) << 4) as u8);
    b.push(0x18); // PSH ACK
    b.extend_from_slice(&[0xfa, 0xf0, 0, 0, 0, 0]);
    b.extend_from_slice(options);
    b.extend_from_slice(payload);
    Seg {
        proto: 6,
        bytes: b,
        csum_at: 16,
    }
}

fn udp(payload: &[u8]) -> Seg {
    let mut b = vec![0x9c, 0x42, 0x13, 0x8c];
    b.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(payload);
    Seg {
        proto: 17,
        bytes: b,
        csum_at: 6,
    }
}

fn icmp_echo(proto: u8, kind: u8, payload: &[u8]) -> Seg {
    let mut b = vec![kind, 0, 0, 0, 0x12, 0x34, 0x00, 0x07];
    b.extend_from_slice(payload);
    Seg {
        proto,
        bytes: b,
        csum_at: 2,
    }
}

fn ipv4(options: &[u8], seg: Seg, udp_no_checksum: bool) -> Vec<u8> {
    ipv4_to(options, seg, udp_no_checksum, &V4_B)
}

/// IPv4 whose L4 pseudo header uses `final_dst` (a source route's last hop).
fn ipv4_to(options: &[u8], mut seg: Seg, udp_no_checksum: bool, final_dst: &[u8; 4]) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let hl = 20 + options.len();
    let mut h = vec![0x40 | (hl / 4) as u8, 0];
    h.extend_from_slice(&((hl + seg.bytes.len()) as u16).to_be_bytes());
    h.extend_from_slice(&[0x4d, 0x2a, 0x40, 0x00, 64, seg.proto, 0, 0]);
    h.extend_from_slice(&V4_A);
    h.extend_from_slice(&V4_B);
    h.extend_from_slice(options);
    let c = ipv4_header_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    let c = match seg.proto {
        1 => fold(sum16(&seg.bytes, 0)),
        47 => 0,
        _ if udp_no_checksum => 0,
        p => fold(sum16(
            &seg.bytes,
            pseudo_header_v4(&V4_A, final_dst, p, seg.bytes.len() as u16),
        )),
    };
    if seg.proto != 47 {
        seg.bytes[seg.csum_at..seg.csum_at + 2].copy_from_slice(&c.to_be_bytes());
    }
    h.extend_from_slice(&seg.bytes);
    h
}

/// IPv6 with extension headers given as (type, bytes without the next
/// header byte); `final_dst` is the pseudo header destination.
fn ipv6(exts: &[(u8, Vec<u8>)], mut seg: Seg, final_dst: &[u8; 16]) -> Vec<u8> {
    let ext_len: usize = exts.iter().map(|(_, b)| b.len() + 1).sum();
    let mut h = vec![0x60, 0x00, 0x00, 0x00];
    h.extend_from_slice(&((ext_len + seg.bytes.len()) as u16).to_be_bytes());
    h.push(exts.first().map_or(seg.proto, |e| e.0));
    h.push(64);
    h.extend_from_slice(&V6_A);
    h.extend_from_slice(&V6_B);
    for (i, (_, body)) in exts.iter().enumerate() {
        h.push(exts.get(i + 1).map_or(seg.proto, |e| e.0));
        h.extend_from_slice(body);
    }
    let p = pseudo_header_v6(&V6_A, final_dst, seg.proto, seg.bytes.len() as u32);
    let c = fold(sum16(&seg.bytes, p));
    seg.bytes[seg.csum_at..seg.csum_at + 2].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(&seg.bytes);
    h
}

/// (description, valid frame) pairs: the frames under test.
fn frames() -> Vec<(&'static str, Vec<u8>)> {
    let ts_opts = hex("0101 080a 0001 e240 0000 3039"); // NOP NOP timestamp
    let rr = hex("0707 0400 0000 0000 0000 0000"); // record route, 2 slots
    let nop_eol = hex("0101 0100"); // NOP NOP NOP EOL
    let lsrr_final = [203, 0, 113, 9];
    let lsrr = hex("0183 0b04 0a00 0001 cb00 7109"); // NOP, LSRR 10.0.0.1 203.0.113.9
    let hbh = hex("00 0502 0000 0100"); // router alert + PadN 0
    let dst_opts = hex("00 0104 0000 0000"); // PadN 4
    let mut rt0 = hex("02 0001 0000 0000"); // type 0, 1 address, 1 left
    let rt_final = [
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99, 0x99,
    ];
    rt0.extend_from_slice(&rt_final);
    let eth4 = |tags: &[u16], l3: Vec<u8>| ethernet(tags, 0x0800, &l3);
    let eth6 = |tags: &[u16], l3: Vec<u8>| ethernet(tags, 0x86dd, &l3);
    vec![
        // Real captures (tcpdump dns_udp.pcap #1, zeek icmp_5-pings.pcap #1,
        // tcpreplay test.pcap #30, tcpdump icmpv6.pcap #2).
        (
            "real DNS/UDP/IPv4",
            hex(
                "0011 2233 4466 0011 2233 4455 0800 4500 0054 59cd 0000 4011 94ae c0a8 010b \
                 d157 f912 abbe 0035 0040 7824 5934 0120 0001 0000 0000 0001 0377 7777 0774 \
                 6370 6475 6d70 036f 7267 0000 0100 0100 0029 1000 0000 0000 000c 000a 0008 \
                 42f5 d009 96f9 0b13",
            ),
        ),
        (
            "real ICMP echo",
            hex(
                "a683 e70c 9064 000c 29cf 3015 0800 4500 0054 946a 4000 4001 bd04 ac10 8502 \
                 acd9 0b4e 0800 ef24 04ca 0001 8bcf cf5f 0000 0000 db0d 0f00 0000 0000 1011 \
                 1213 1415 1617 1819 1a1b 1c1d 1e1f 2021 2223 2425 2627 2829 2a2b 2c2d 2e2f \
                 3031 3233 3435 3637",
            ),
        ),
        (
            "real TCP/IPv6 SYN-ACK",
            hex(
                "ac1f 6bac 27da 943f c2d3 52bd 86dd 600d 0899 0020 0638 2606 4700 0000 0000 \
                 0000 0000 6812 069c 2001 4958 15a0 0024 c1b3 b766 7fff d0b3 0050 a8f2 7d79 \
                 2949 6e21 0cf8 8012 ffff 7fa4 0000 0204 0550 0101 0402 0103 030a",
            ),
        ),
        (
            "real MLDv2 behind hop-by-hop",
            hex(
                "3333 0000 0016 0015 17cc e546 86dd 6000 0000 0024 0001 fe80 0000 0000 0000 \
                 0215 17ff fecc e546 ff02 0000 0000 0000 0000 0000 0000 0016 3a00 0502 0000 \
                 0100 8f00 1fc5 0000 0001 0400 0000 ff02 0000 0000 0000 0000 0db8 1122 3344",
            ),
        ),
        (
            "TCP/IPv4",
            eth4(&[], ipv4(&[], tcp(&ts_opts, &data(100, 1)), false)),
        ),
        (
            "TCP/IPv4 odd payload",
            eth4(&[], ipv4(&[], tcp(&[], &data(37, 2)), false)),
        ),
        (
            "UDP/IPv4 odd payload",
            eth4(&[], ipv4(&[], udp(&data(51, 3)), false)),
        ),
        (
            "UDP/IPv4 no checksum",
            eth4(&[], ipv4(&[], udp(&data(40, 4)), true)),
        ),
        (
            "TCP/IPv4 with record route",
            eth4(&[], ipv4(&rr, tcp(&[], &data(64, 5)), false)),
        ),
        (
            "UDP/IPv4 with NOP options",
            eth4(&[], ipv4(&nop_eol, udp(&data(33, 6)), false)),
        ),
        (
            "UDP/IPv4 with loose source route",
            eth4(&[], ipv4_to(&lsrr, udp(&data(44, 19)), false, &lsrr_final)),
        ),
        (
            "ICMP echo reply",
            eth4(&[], ipv4(&[], icmp_echo(1, 0, &data(48, 7)), false)),
        ),
        (
            "UDP/IPv4 in 802.1Q",
            eth4(&[0x8100], ipv4(&[], udp(&data(90, 8)), false)),
        ),
        (
            "TCP/IPv4 in QinQ",
            eth4(&[0x88a8, 0x8100], ipv4(&[], tcp(&[], &data(77, 9)), false)),
        ),
        ("GRE/IPv4 (opaque)", {
            let mut gre = hex("0000 0800");
            gre.extend_from_slice(&ipv4(&[], udp(&data(20, 18)), false));
            eth4(
                &[],
                ipv4(
                    &[],
                    Seg {
                        proto: 47,
                        bytes: gre,
                        csum_at: 0,
                    },
                    false,
                ),
            )
        }),
        ("UDP/IPv4 short, padded", {
            let mut f = eth4(&[], ipv4(&[], udp(&data(3, 10)), false));
            f.resize(60, 0);
            f
        }),
        (
            "TCP/IPv6",
            eth6(&[], ipv6(&[], tcp(&ts_opts, &data(200, 11)), &V6_B)),
        ),
        ("UDP/IPv6", eth6(&[], ipv6(&[], udp(&data(65, 12)), &V6_B))),
        (
            "ICMPv6 echo",
            eth6(&[], ipv6(&[], icmp_echo(58, 128, &data(56, 13)), &V6_B)),
        ),
        (
            "UDP/IPv6 hop-by-hop",
            eth6(&[], ipv6(&[(0, hbh.clone())], udp(&data(21, 14)), &V6_B)),
        ),
        (
            "TCP/IPv6 hop-by-hop + dest opts",
            eth6(
                &[],
                ipv6(&[(0, hbh), (60, dst_opts)], tcp(&[], &data(99, 15)), &V6_B),
            ),
        ),
        (
            "ICMPv6 routing type 0",
            eth6(
                &[],
                ipv6(&[(43, rt0)], icmp_echo(58, 128, &data(16, 16)), &rt_final),
            ),
        ),
        (
            "UDP/IPv6 in 802.1Q",
            eth6(&[0x8100], ipv6(&[], udp(&data(30, 17)), &V6_B)),
        ),
    ]
}

/// A nanosecond pcap of Ethernet frames, written by hand.
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&262_144u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&(i as u32 * 1000).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// Whether tshark must verify an L4 checksum in `frame` (TCP, UDP with a
/// checksum, ICMP, ICMPv6).
fn expects_l4_checksum(frame: &[u8]) -> bool {
    match parse_layers(frame).l4 {
        Some(l4) if l4.header_len > 0 => {
            !(l4.proto == 17 && frame[l4.offset + 6..l4.offset + 8] == [0, 0])
        }
        _ => false,
    }
}

/// tshark's verdict on one frame.
#[derive(Debug, Default)]
struct Verdict {
    /// Checksum status values (1 good, 0 bad, 2 unverified, 3 not present)
    /// of ip, tcp, udp, icmp, icmpv6, comma-joined per field.
    statuses: Vec<String>,
    experts: String,
    severities: String,
}

impl Verdict {
    fn bad_checksum(&self) -> bool {
        self.statuses.iter().any(|s| s.split(',').any(|v| v == "0"))
            || self.experts.contains("Bad checksum")
    }

    fn malformed(&self) -> bool {
        self.experts.contains("Malformed") || self.experts.contains("length")
    }

    /// An expert item of severity Error (0x00800000).
    fn error(&self) -> bool {
        self.severities.split(',').any(|s| s == "8388608")
    }

    fn l4_verified(&self) -> bool {
        self.statuses
            .iter()
            .skip(1)
            .any(|s| s.split(',').any(|v| v == "1"))
    }
}

const FIELDS: [&str; 9] = [
    "frame.number",
    "ip.checksum.status",
    "tcp.checksum.status",
    "udp.checksum.status",
    "icmp.checksum.status",
    "icmpv6.checksum.status",
    "_ws.expert.message",
    "_ws.expert.severity",
    "frame.protocols",
];

/// True when tshark can run; otherwise one SKIPPED line (a failure under
/// CI, where tshark is installed by .ci/run).
fn tshark_or_skip() -> bool {
    sluice_testkit::require("tshark", "tshark cross-check")
}

fn run_tshark(pcap: &Path, count: usize) -> Vec<Verdict> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(pcap);
    for pref in [
        "ip.check_checksum:TRUE",
        "tcp.check_checksum:TRUE",
        "udp.check_checksum:TRUE",
        "tcp.desegment_tcp_streams:FALSE",
    ] {
        cmd.args(["-o", pref]);
    }
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut verdicts: Vec<Verdict> = (0..count).map(|_| Verdict::default()).collect();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let n: usize = cols[0].parse().expect("frame number");
        let v = &mut verdicts[n - 1];
        v.statuses = cols[1..6].iter().map(|s| s.to_string()).collect();
        v.experts = cols.get(6).unwrap_or(&"").to_string();
        v.severities = cols.get(7).unwrap_or(&"").to_string();
    }
    verdicts
}

/// A capture file removed when the returned path goes.
fn temp_pcap(name: &str) -> tempfile::TempPath {
    tempfile::Builder::new()
        .suffix(name)
        .tempfile()
        .unwrap()
        .into_temp_path()
}

#[test]
fn tshark_agrees_with_our_checksums() {
    if !tshark_or_skip() {
        return;
    }
    let mut all: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, frame) in frames() {
        assert_eq!(
            verify_checksums(&frame),
            Ok(()),
            "{name}: built frame invalid"
        );
        assert!(parse_layers(&frame).l4.is_some(), "{name}: no L4 found");
        all.push((format!("{name} (original)"), frame.clone()));
        for mode in [PayloadMode::Zero, PayloadMode::Truncate] {
            let mut f = frame.clone();
            let r = rewrite_payload(&mut f, mode);
            let has_payload = parse_layers(&frame).l4.is_some_and(|l4| l4.payload_len > 0);
            assert_eq!(r.changed, has_payload, "{name}: {mode}");
            f.truncate(r.new_len);
            assert_eq!(verify_checksums(&f), Ok(()), "{name} ({mode})");
            all.push((format!("{name} ({mode})"), f));
        }
    }
    assert!(all.len() >= 60);

    // Corrupted frames that tshark must flag: a payload byte flipped
    // without fixing the UDP checksum, and a bad IPv4 header checksum.
    let mut bad_l4 = all[0].1.clone();
    *bad_l4.last_mut().unwrap() ^= 0x40;
    assert!(verify_checksums(&bad_l4).is_err());
    let mut bad_ip = all[4 * 3].1.clone();
    bad_ip[14 + 8] -= 1; // TTL
    assert!(verify_checksums(&bad_ip).is_err());
    let good_count = all.len();
    all.push(("corrupted UDP payload".into(), bad_l4));
    all.push(("corrupted IPv4 TTL".into(), bad_ip));

    let pcap = temp_pcap("frames.pcap");
    if let Some(keep) = std::env::var_os("SLUICE_WIRE_KEEP_PCAP") {
        let frames: Vec<Vec<u8>> = all.iter().map(|(_, f)| f.clone()).collect();
        write_pcap(Path::new(&keep), &frames);
    }
    let frames: Vec<Vec<u8>> = all.iter().map(|(_, f)| f.clone()).collect();
    write_pcap(&pcap, &frames);
    let verdicts = run_tshark(&pcap, frames.len());

    let mut failures = Vec::new();
    for (i, ((name, f), v)) in all.iter().zip(&verdicts).enumerate().take(good_count) {
        if v.bad_checksum()
            || v.malformed()
            || v.error()
            || (expects_l4_checksum(f) && !v.l4_verified())
        {
            failures.push(format!("frame {} {name}: {v:?}", i + 1));
        }
    }
    assert!(
        failures.is_empty(),
        "tshark disagrees:\n{}",
        failures.join("\n")
    );
    for (i, v) in verdicts.iter().enumerate().skip(good_count) {
        assert!(
            v.bad_checksum(),
            "tshark did not flag frame {} {}: {v:?}",
            i + 1,
            all[i].0
        );
    }
}

/// Frames of a little-endian microsecond Ethernet pcap (header checks are
/// left to the capture crate; this is test scaffolding).
fn read_le_us_pcap(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1], "{}", path.display());
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let Some(f) = bytes.get(at + 16..at + 16 + incl) else {
            break;
        };
        frames.push(f.to_vec());
        at += 16 + incl;
    }
    frames
}

/// `verify_checksums` and tshark agree on real captures: for every frame
/// that is neither a fragment nor cut short, the IPv4 header checksum and
/// the outermost L4 checksum are good for us exactly when they are good
/// for tshark.
#[test]
fn verify_agrees_with_tshark_on_real_captures() {
    if !tshark_or_skip() {
        return;
    }
    let dir = sluice_testkit::testdata("pcap");
    let mut compared = 0;
    let mut bad_seen = 0;
    for name in [
        "tcpreplay__test.pcap",
        "zeek__http_bro.org.pcap",
        "tcpdump__dnssec.pcap",
        "tcpdump__icmpv6.pcap",
        "tcpdump__ipv6-routing-header.pcap",
        "zeek__dns-edns-ecs.pcap",
        "zeek__ipv6-http-atomic-frag.pcap",
        "zeek__mixed-vlan-mpls.pcap",
        "tcpdump__icmp-rfc8335.pcap",
    ] {
        let path = dir.join(name);
        let frames = read_le_us_pcap(&path);
        let verdicts = run_tshark(&path, frames.len());
        for (i, (f, v)) in frames.iter().zip(&verdicts).enumerate() {
            let layers = parse_layers(f);
            let Some(ip) = layers.ip else { continue };
            if ip.is_fragment() || layers.ip_end().unwrap() > f.len() {
                continue;
            }
            let first = |k: usize| v.statuses[k].split(',').next().unwrap_or("").to_string();
            let mut tshark_bad = matches!(ip, sluice_wire::Ip::V4 { .. }) && first(0) == "0";
            if let Some(l4) = layers.l4.filter(|l4| l4.header_len > 0) {
                let k = match l4.proto {
                    6 => 1,
                    17 => 2,
                    1 => 3,
                    _ => 4,
                };
                tshark_bad |= first(k) == "0";
            }
            let ours_bad = verify_checksums(f).is_err();
            assert_eq!(
                ours_bad,
                tshark_bad,
                "{name} #{}: ours {:?}, tshark {v:?}",
                i + 1,
                verify_checksums(f)
            );
            compared += 1;
            bad_seen += usize::from(ours_bad);
        }
    }
    eprintln!("compared {compared} frames, {bad_seen} with a bad checksum");
    assert!(compared > 900 && bad_seen > 5);
}
