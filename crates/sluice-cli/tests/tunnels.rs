//! `--tunnel outer|inner|both` judged by tshark: a trace of VXLAN (over
//! IPv4 and IPv6), GRE (with and without checksum, key, sequence number,
//! carrying IP or Ethernet), GTP-U (with an extension header), IP-in-IP
//! (4in4, 6in4, 4in6), a tunnel in a tunnel and a plain packet is replayed
//! with address, port and TTL rewrites in each mode. tshark must see every
//! layer's addresses, TTL / hop limit and ports changed exactly where the
//! mode says, and every checksum it verifies (IPv4, TCP, UDP, GRE) good,
//! except the inner TCP checksum the trace had wrong, which stays wrong
//! unless `--fixcsum` reaches it. A frame corrupted after the rewrite must be flagged,
//! which proves the check can fail.

mod common;
use common::*;
use sluice_wire::checksum::{fold, sum16};
use sluice_wire::{complete_checksum, ipv4_header_checksum};
use std::path::Path;

/// Each layer's address family, outermost first.
type Families = Vec<u8>;

fn ethernet(ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0x99, 2, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// An IPv4 or IPv6 packet of layer `k` (addresses 10.1.k.1 → 10.2.k.2,
/// 2001:db8:1::k → 2001:db8:2::k) with the L4 checksum computed.
fn ip(v6: bool, k: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = if v6 {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        h.extend_from_slice(&[proto, 64]);
        for (net, host) in [(1u8, k), (2, k)] {
            h.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, net]);
            h.extend_from_slice(&[0; 9]);
            h.push(host + 1);
        }
        h
    } else {
        let len = (20 + payload.len()) as u16;
        let mut h = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0];
        h[2..4].copy_from_slice(&len.to_be_bytes());
        h.extend_from_slice(&[10, 1, k, 1, 10, 2, k, 2]);
        let c = ipv4_header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    };
    p.extend_from_slice(payload);
    let mut f = ethernet(if v6 { 0x86dd } else { 0x0800 }, &p);
    complete_checksum(&mut f);
    f.split_off(14)
}

fn tcp(data: &[u8]) -> (u8, Vec<u8>) {
    let mut b = vec![
        0, 80, 0x9c, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
    ];
    b.extend_from_slice(data);
    (6, b)
}

fn udp(sport: u16, dport: u16, data: &[u8]) -> (u8, Vec<u8>) {
    let mut b = sport.to_be_bytes().to_vec();
    b.extend_from_slice(&dport.to_be_bytes());
    b.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(data);
    (17, b)
}

fn vxlan(inner_eth: &[u8]) -> (u8, Vec<u8>) {
    let mut v = vec![0x08, 0, 0, 0, 0, 0x12, 0x34, 0];
    v.extend_from_slice(inner_eth);
    udp(49152, 4789, &v)
}

/// GRE: flags (C 0x8000, K 0x2000, S 0x1000), protocol, payload; the
/// checksum computed when C is set.
fn gre(flags: u16, proto: u16, inner: &[u8]) -> (u8, Vec<u8>) {
    let mut g = flags.to_be_bytes().to_vec();
    g.extend_from_slice(&proto.to_be_bytes());
    let fields = [0x8000, 0x2000, 0x1000]
        .iter()
        .filter(|&&f| flags & f != 0)
        .count();
    g.extend(std::iter::repeat_n(7u8, 4 * fields));
    if flags & 0x8000 != 0 {
        g[4..8].fill(0);
    }
    g.extend_from_slice(inner);
    if flags & 0x8000 != 0 {
        let c = fold(sum16(&g, 0));
        g[4..6].copy_from_slice(&c.to_be_bytes());
    }
    (47, g)
}

fn gtpu(ext: bool, inner: &[u8]) -> (u8, Vec<u8>) {
    let mut g = if ext {
        // S and E: a sequence number and one 4-byte extension header.
        vec![
            0x36, 0xff, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0x40, 1, 0x08, 0x68, 0,
        ]
    } else {
        vec![0x30, 0xff, 0, 0, 0, 0, 0, 9]
    };
    let len = (g.len() - 8 + inner.len()) as u16;
    g[2..4].copy_from_slice(&len.to_be_bytes());
    g.extend_from_slice(inner);
    udp(2152, 2152, &g)
}

fn wrap(v6: bool, k: u8, (proto, l4): (u8, Vec<u8>)) -> Vec<u8> {
    ip(v6, k, proto, &l4)
}

fn eth_of(v6: bool, packet: &[u8]) -> Vec<u8> {
    ethernet(if v6 { 0x86dd } else { 0x0800 }, packet)
}

/// The trace: (frame, families of its layers).
fn trace() -> Vec<(Vec<u8>, Families)> {
    let data = b"tunnelled payload";
    let inner4t = wrap(false, 1, tcp(data));
    let inner6u = wrap(true, 1, udp(80, 40000, data));
    let inner6t = wrap(true, 1, tcp(data));
    let mut bad = inner4t.clone();
    bad[20 + 17] ^= 0x5a; // the inner TCP checksum, wrong in the trace
    let nested_gre = wrap(false, 1, gre(0x8000, 0x0800, &wrap(false, 2, tcp(data))));
    vec![
        (eth_of(false, &wrap(false, 0, tcp(data))), vec![4]),
        (
            eth_of(false, &wrap(false, 0, vxlan(&eth_of(false, &inner4t)))),
            vec![4, 4],
        ),
        (
            eth_of(true, &wrap(true, 0, vxlan(&eth_of(true, &inner6u)))),
            vec![6, 6],
        ),
        (
            eth_of(
                false,
                &wrap(
                    false,
                    0,
                    gre(0xb000, 0x0800, &wrap(false, 1, udp(80, 40000, data))),
                ),
            ),
            vec![4, 4],
        ),
        (
            eth_of(true, &wrap(true, 0, gre(0, 0x86dd, &inner6t))),
            vec![6, 6],
        ),
        (
            eth_of(
                false,
                &wrap(false, 0, gre(0xa000, 0x6558, &eth_of(false, &inner4t))),
            ),
            vec![4, 4],
        ),
        (
            eth_of(false, &wrap(false, 0, gtpu(true, &inner4t))),
            vec![4, 4],
        ),
        (
            eth_of(true, &wrap(true, 0, gtpu(false, &inner6u))),
            vec![6, 6],
        ),
        (
            eth_of(false, &wrap(false, 0, (4, inner4t.clone()))),
            vec![4, 4],
        ),
        (
            eth_of(false, &wrap(false, 0, (41, inner6t.clone()))),
            vec![4, 6],
        ),
        (
            eth_of(true, &wrap(true, 0, (4, inner4t.clone()))),
            vec![6, 4],
        ),
        (
            eth_of(false, &wrap(false, 0, vxlan(&eth_of(false, &nested_gre)))),
            vec![4, 4, 4],
        ),
        (
            eth_of(false, &wrap(false, 0, vxlan(&eth_of(false, &bad)))),
            vec![4, 4],
        ),
    ]
}

/// Frame index of the inner TCP checksum that is wrong in the trace.
const BAD: usize = 12;

/// tshark's fields per frame, every occurrence.
fn fields(pcap: &Path) -> Vec<Vec<Vec<String>>> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-r").arg(pcap);
    for p in ["ip", "tcp", "udp"] {
        cmd.args(["-o", &format!("{p}.check_checksum:TRUE")]);
    }
    cmd.args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]);
    for f in [
        "ip.src",
        "ipv6.src",
        "ip.ttl",
        "ipv6.hlim",
        "tcp.srcport",
        "udp.srcport",
        "ip.checksum.status",
        "tcp.checksum.status",
        "udp.checksum.status",
        "gre.checksum.status",
        "_ws.malformed",
    ] {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("tshark runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            l.split('\t')
                .map(|c| {
                    c.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .collect()
        })
        .collect()
}

const REWRITE: [&str; 6] = [
    "--srcipmap",
    "10.1.0.0/16:172.16.0.0/16,2001:db8:1::/48:2001:db8:99::/48",
    "--portmap",
    "80:8080",
    "--ttl",
    "9",
];

/// Whether layer `k` of `n` is rewritten in `mode`.
fn reached(mode: &str, k: usize, n: usize) -> bool {
    match mode {
        "outer" => k == 0,
        "inner" => k == n - 1,
        _ => true,
    }
}

fn replay(input: &Path, out: &Path, mode: &str, extra: &[&str]) {
    let mut args = REWRITE.to_vec();
    args.extend_from_slice(&["--tunnel", mode]);
    args.extend_from_slice(extra);
    let o = run_to_pcap(&["replay", input.to_str().unwrap()], out, &args);
    assert!(o.status.success(), "{mode}: {}", stderr(&o));
}

#[test]
fn tunnel_modes_rewrite_the_layers_they_name_as_tshark_sees_them() {
    if !sluice_testkit::require("tshark", "tunnel rewrite checks") {
        return;
    }
    let d = tmpdir("tunnels");
    let input = d.join("in.pcap");
    let t = trace();
    let frames: Vec<(u64, Vec<u8>)> = t
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (1_000_000_000 + i as u64 * 1000, f.clone()))
        .collect();
    write_frames(&input, &frames);
    let before = fields(&input);
    assert_eq!(before.len(), t.len());
    for (i, row) in before.iter().enumerate() {
        let layers = row[0].len() + row[1].len();
        assert_eq!(
            layers,
            t[i].1.len(),
            "tshark decodes frame {i} as built: {row:?}"
        );
        assert!(row[10].is_empty(), "frame {i} malformed: {row:?}");
    }
    let out = d.join("out.pcap");
    for mode in ["outer", "inner", "both"] {
        for fix in [false, true] {
            replay(
                &input,
                &out,
                mode,
                if fix { &["--fixcsum"][..] } else { &[] },
            );
            let after = fields(&out);
            assert_eq!(after.len(), t.len(), "{mode}");
            for (i, (row, (_, fam))) in after.iter().zip(&t).enumerate() {
                let n = fam.len();
                let (mut v4, mut v6) = (0, 0);
                for (k, &f) in fam.iter().enumerate() {
                    let want = reached(mode, k, n);
                    let (src, ttl) = if f == 4 {
                        v4 += 1;
                        (&row[0][v4 - 1], &row[2][v4 - 1])
                    } else {
                        v6 += 1;
                        (&row[1][v6 - 1], &row[3][v6 - 1])
                    };
                    let mapped = src.starts_with("172.16.") || src.starts_with("2001:db8:99:");
                    let kept = src.starts_with("10.1.") || src.starts_with("2001:db8:1:");
                    assert!(mapped || kept, "{src}");
                    assert_eq!(mapped, want, "{mode} frame {i} layer {k}: {row:?}");
                    assert_eq!(ttl == "9", want, "{mode} frame {i} layer {k} ttl: {row:?}");
                }
                // The innermost L4 is the last port tshark lists.
                let ports: Vec<&String> = row[4].iter().chain(&row[5]).collect();
                let inner_port = if row[4].is_empty() {
                    row[5].last()
                } else {
                    row[4].last()
                };
                assert_eq!(
                    inner_port.map(String::as_str),
                    Some(if reached(mode, n - 1, n) {
                        "8080"
                    } else {
                        "80"
                    }),
                    "{mode} frame {i}: {ports:?}"
                );
                assert!(row[10].is_empty(), "{mode} frame {i} malformed: {row:?}");
                for (c, name) in [(6, "ip"), (7, "tcp"), (8, "udp"), (9, "gre")] {
                    for (j, v) in row[c].iter().enumerate() {
                        // (`outer` leaves inner packets alone, as tcprewrite
                        // does, --fixcsum or not.)
                        let wrong_in_trace = i == BAD && name == "tcp" && (!fix || mode == "outer");
                        let want = if wrong_in_trace { "0" } else { "1" };
                        assert_eq!(
                            v, want,
                            "{mode} fix={fix} frame {i} {name} checksum {j}: {row:?}"
                        );
                    }
                }
            }
            let greens = after.iter().map(|r| r[9].len()).sum::<usize>();
            assert_eq!(greens, 3, "{mode}: GRE checksums verified");
        }
    }
    // The judge can fail: a byte of frame 1's inner TCP payload changed
    // after the rewrite breaks the inner TCP and the outer UDP checksum.
    replay(&input, &out, "inner", &[]);
    let mut got = read_all(&out);
    let last = got[1].1.len() - 1;
    got[1].1[last] ^= 1;
    let broken = d.join("broken.pcap");
    write_frames(&broken, &got);
    let row = &fields(&broken)[1];
    assert_eq!(
        (row[7].as_slice(), row[8].as_slice()),
        (&["0".to_owned()][..], &["0".to_owned()][..]),
        "{row:?}"
    );
}

#[test]
fn a_bad_tunnel_mode_is_refused_naming_the_option() {
    let d = tmpdir("tunnel-bad");
    let input = d.join("in.pcap");
    write_trace(&input, 3, 1000, 100);
    let o = run_to_pcap(
        &["replay", input.to_str().unwrap()],
        &d.join("o.pcap"),
        &["--tunnel", "deep"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--tunnel"), "{}", stderr(&o));
}
