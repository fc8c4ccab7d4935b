//! `sluice flows run` / `flows import` end to end on a virtual clock:
//! packets validated by tshark (an independent decoder), exact calendar
//! timing, meta-flow expansion, and flow records regenerated exactly.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    sluice_testkit::repo_root().join(rel)
}

fn flows_to_pcap(session: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    run_to_pcap(&["flows", "run", session.to_str().unwrap()], out, extra)
}

fn have_tshark() -> bool {
    sluice_testkit::require("tshark", "flows checked by tshark")
}

/// tshark fields of every frame, checksums validated.
fn tshark(pcap: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    tshark_occurrence(pcap, fields, "f")
}

/// The same, with tshark's `occurrence` (`a`: every one, comma-separated).
fn tshark_occurrence(pcap: &Path, fields: &[&str], occurrence: &str) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.args(["-r", pcap.to_str().unwrap()]);
    for p in ["ip", "tcp", "udp"] {
        c.args(["-o", &format!("{p}.check_checksum:TRUE")]);
    }
    c.args(["-T", "fields", "-E", &format!("occurrence={occurrence}")]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// L2 layers in front of every generated frame (issue 48): a QinQ pair
/// and a two-label MPLS stack on every protocol of the mixed session, and
/// a single tag on a profile's frames. tshark decodes each tag and label
/// as the session wrote it, no frame is malformed, every checksum is good.
#[test]
fn vlan_qinq_and_mpls_layers_decode_as_written_with_good_checksums() {
    if !have_tshark() {
        return;
    }
    let d = tmpdir("flows-encap");
    let session = d.join("encap.yaml");
    let mixed = std::fs::read_to_string(repo("examples/sessions/mixed.yaml")).unwrap();
    std::fs::write(
        &session,
        format!(
            "encap: [{{svlan: {{id: 10, pcp: 5}}}}, {{vlan: 20}}, {{mpls: 100}}, {{mpls: {{label: 200, tc: 2, ttl: 9}}}}]\n{mixed}"
        ),
    )
    .unwrap();
    let out = d.join("out.pcap");
    let o = flows_to_pcap(&session, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fields = [
        "ieee8021ad.id",
        "ieee8021ad.priority",
        "vlan.id",
        "mpls.label",
        "mpls.exp",
        "mpls.ttl",
        "mpls.bottom",
        "ip.checksum.status",
        "tcp.checksum.status",
        "udp.checksum.status",
        "icmp.checksum.status",
        "icmpv6.checksum.status",
        "_ws.malformed",
    ];
    let rows = tshark_occurrence(&out, &fields, "a");
    assert_eq!(rows.len(), 1078);
    for (i, r) in rows.iter().enumerate() {
        // The S-tag (802.1ad) and the C-tag inside it, then the labels.
        let want = ["10", "5", "20", "100,200", "0,2", "64,9", "0,1"];
        assert_eq!(&r[..7], &want[..], "frame {}: {r:?}", i + 1);
        assert!(
            r[7..12].iter().all(|v| v.is_empty() || v == "1"),
            "frame {}: {r:?}",
            i + 1
        );
        assert!(r[7..12].iter().any(|v| v == "1"), "frame {}: {r:?}", i + 1);
        assert!(r[12].is_empty(), "frame {} malformed: {r:?}", i + 1);
    }
    // The frames are the plain session's behind 16 bytes of layers.
    let plain = d.join("plain.pcap");
    assert!(
        flows_to_pcap(&repo("examples/sessions/mixed.yaml"), &plain, &[])
            .status
            .success()
    );
    let (a, b) = (read_all(&plain), read_all(&out));
    for ((_, p), (_, e)) in a.iter().zip(&b) {
        assert_eq!((&e[..12], &e[30..]), (&p[..12], &p[14..]));
    }

    // A profile: one C-tag, counted in each frame's size.
    let prof = d.join("p.yaml");
    std::fs::write(
        &prof,
        "seed: 3\nduration: 100ms\nrate: 2k\nipd: {dist: constant}\nsize: {dist: constant, bytes: 100}\npacket: {proto: udp6, src: \"2001:db8::1\", dst: \"2001:db8::2\", encap: [{vlan: {id: 4094, pcp: 7}}]}\n",
    )
    .unwrap();
    let out = d.join("profile.pcap");
    let o = run_to_pcap(&["profile", "run", prof.to_str().unwrap()], &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = tshark_occurrence(
        &out,
        &[
            "vlan.id",
            "vlan.priority",
            "udp.checksum.status",
            "frame.len",
            "_ws.malformed",
        ],
        "a",
    );
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(&r[..], ["4094", "7", "1", "100", ""], "{r:?}");
    }
    // A bad stack is refused, naming the key.
    std::fs::write(&session, format!("encap: [{{mpls: 1048576}}]\n{mixed}")).unwrap();
    let o = flows_to_pcap(&session, &d.join("x.pcap"), &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("encap[0].mpls.label: 1048576"),
        "{}",
        stderr(&o)
    );
}

/// Tunnels in front of every generated frame (issue 48): VXLAN, GRE with
/// key and sequence, GTP-U with a PDU session container, IP-in-IP, and
/// tunnels nested behind tags and labels, over IPv4 and IPv6, each on every
/// protocol of the mixed session. tshark decodes each layer as the session
/// wrote it, no frame is malformed, every checksum present is good (outer
/// and inner; a UDP tunnel over IPv4 sends none), and the packet inside is
/// the plain session's, byte for byte.
#[test]
fn tunnels_decode_as_written_with_good_checksums_inside_and_out() {
    if !have_tshark() {
        return;
    }
    let d = tmpdir("flows-tunnels");
    let mixed = std::fs::read_to_string(repo("examples/sessions/mixed.yaml")).unwrap();
    let plain = d.join("plain.pcap");
    assert!(
        flows_to_pcap(&repo("examples/sessions/mixed.yaml"), &plain, &[])
            .status
            .success()
    );
    let plain = read_all(&plain);
    let cases: [(&str, &[&str], &[&str]); 5] = [
        (
            "[{vlan: 3}, {vxlan: {vni: 4097, src: 192.0.2.1, dst: 192.0.2.2, ttl: 9}}]",
            &["vlan.id", "vxlan.vni", "udp.dstport", "ip.ttl"],
            &["3", "4097", "4789", "9"],
        ),
        (
            "[{gre: {src: \"2001:db8:9::1\", dst: \"2001:db8:9::2\", key: 77, seq: true}}]",
            &["ipv6.src", "gre.key", "gre.proto"],
            &["2001:db8:9::1", "0x0000004d", ""],
        ),
        (
            "[{gtpu: {teid: 305419896, src: 192.0.2.1, dst: 192.0.2.2, qfi: 5, uplink: true}}]",
            &["gtp.teid", "gtp.ext_hdr.pdu_ses_con.qos_flow_id", "gtp.ext_hdr.pdu_ses_con.pdu_type", "udp.srcport"],
            &["0x12345678", "5", "1", "2152"],
        ),
        (
            "[{ipip: {src: 192.0.2.1, dst: 192.0.2.2}}]",
            &["ip.src"],
            &["192.0.2.1"],
        ),
        (
            "[{svlan: 10}, {mpls: 16}, {gre: {src: 192.0.2.1, dst: 192.0.2.2, ethernet: true}}, {vlan: 20}, {vxlan: {vni: 5, src: \"2001:db8:9::1\", dst: \"2001:db8:9::2\", sport: 7000}}]",
            &["ieee8021ad.id", "mpls.label", "gre.proto", "vlan.id", "vxlan.vni", "ipv6.src"],
            &["10", "16", "0x6558", "20", "5", "2001:db8:9::1"],
        ),
    ];
    let checks = [
        "ip.checksum.status",
        "udp.checksum.status",
        "tcp.checksum.status",
        "icmp.checksum.status",
        "icmpv6.checksum.status",
        "_ws.malformed",
    ];
    for (encap, fields, want) in cases {
        let session = d.join("t.yaml");
        std::fs::write(&session, format!("encap: {encap}\n{mixed}")).unwrap();
        let out = d.join("t.pcap");
        let o = flows_to_pcap(&session, &out, &[]);
        assert!(o.status.success(), "{encap}: {}", stderr(&o));
        let all: Vec<&str> = fields.iter().chain(&checks).copied().collect();
        let rows = tshark_occurrence(&out, &all, "a");
        assert_eq!(rows.len(), 1078, "{encap}");
        for (i, r) in rows.iter().enumerate() {
            let n = fields.len();
            for (k, w) in want.iter().enumerate() {
                // The outermost occurrence is the layer's (ip.src, ipv6.src
                // and udp ports also name the inner packet's).
                let got = r[k].split(',').next().unwrap_or_default();
                if !w.is_empty() {
                    assert_eq!(got, *w, "{encap}: frame {}: {}: {r:?}", i + 1, fields[k]);
                }
            }
            let statuses: Vec<&str> = r[n..n + 5]
                .iter()
                .flat_map(|v| v.split(',').filter(|s| !s.is_empty()))
                .collect();
            // 1: good; 3: not present (UDP over IPv4 may send none).
            assert!(
                statuses.iter().all(|s| *s == "1" || *s == "3"),
                "{encap}: frame {}: {r:?}",
                i + 1
            );
            assert!(statuses.contains(&"1"), "{encap}: frame {}: {r:?}", i + 1);
            assert!(
                r[n + 5].is_empty(),
                "{encap}: frame {} malformed: {r:?}",
                i + 1
            );
        }
        // GRE's protocol is the inner IP version's, or Ethernet bridging.
        if encap.starts_with("[{gre") {
            let protos: std::collections::BTreeSet<String> = tshark(&out, &["gre.proto"])
                .into_iter()
                .map(|r| r[0].clone())
                .collect();
            assert_eq!(protos.into_iter().collect::<Vec<_>>(), ["0x0800", "0x86dd"]);
        }
        let frames = read_all(&out);
        for (k, ((_, p), (_, e))) in plain.iter().zip(&frames).enumerate() {
            let inner = &p[14..];
            assert_eq!(
                &e[e.len() - inner.len()..],
                inner,
                "{encap}: frame {}",
                k + 1
            );
        }
    }

    // A profile's frames keep their size: the tunnel is counted in it.
    let prof = d.join("p.yaml");
    std::fs::write(
        &prof,
        "seed: 3\nduration: 20ms\nrate: 2k\nipd: {dist: constant}\nsize: {dist: constant, bytes: 1500}\npacket: {proto: udp4, encap: [{vxlan: {vni: 16777215, src: \"2001:db8:9::1\", dst: \"2001:db8:9::2\"}}]}\n",
    )
    .unwrap();
    let out = d.join("profile.pcap");
    let o = run_to_pcap(&["profile", "run", prof.to_str().unwrap()], &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = tshark_occurrence(
        &out,
        &[
            "vxlan.vni",
            "frame.len",
            "udp.checksum.status",
            "_ws.malformed",
        ],
        "a",
    );
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(&r[..], ["16777215", "1500", "1,1", ""], "{r:?}");
    }
    // Bad tunnels are refused, naming the key.
    for (encap, says) in [
        (
            "[{vxlan: {vni: 16777216, src: 192.0.2.1, dst: 192.0.2.2}}]",
            "encap[0].vxlan.vni: 16777216",
        ),
        (
            "[{ipip: {src: 192.0.2.1, dst: \"::1\"}}]",
            "encap[0].ipip.dst",
        ),
        (
            "[{gtpu: {teid: 1, src: 192.0.2.1, dst: 192.0.2.2}}, {vlan: 3}]",
            "encap[1].vlan: a tag needs an Ethernet header",
        ),
    ] {
        let session = d.join("bad.yaml");
        std::fs::write(&session, format!("encap: {encap}\n{mixed}")).unwrap();
        let o = flows_to_pcap(&session, &d.join("x.pcap"), &[]);
        assert!(!o.status.success(), "{encap}");
        assert!(stderr(&o).contains(says), "{encap}: {}", stderr(&o));
    }
}

#[test]
fn every_protocol_is_valid_to_tshark_with_tcp_and_icmp_sequences() {
    if !have_tshark() {
        return;
    }
    let d = tmpdir("flows-tshark");
    let out = d.join("out.pcap");
    let o = flows_to_pcap(&repo("examples/sessions/mixed.yaml"), &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = tshark(
        &out,
        &[
            "ip.checksum.status",
            "tcp.checksum.status",
            "udp.checksum.status",
            "icmp.checksum.status",
            "icmpv6.checksum.status",
            "ip.proto",
            "ipv6.nxt",
        ],
    );
    assert_eq!(rows.len(), 1078);
    for (i, r) in rows.iter().enumerate() {
        // Wireshark: 1 = good; every present checksum must be good.
        for (k, v) in r.iter().take(5).enumerate() {
            assert!(
                v.is_empty() || v == "1",
                "frame {}: checksum field {k} = {v}: {r:?}",
                i + 1
            );
        }
        assert!(
            r[..5].iter().any(|v| v == "1"),
            "frame {} has a validated checksum: {r:?}",
            i + 1
        );
    }
    // TCP: SYN first, FIN|ACK last, sequence numbers advance by payload.
    let tcp = tshark(
        &out,
        &[
            "tcp.srcport",
            "tcp.flags",
            "tcp.seq_raw",
            "tcp.len",
            "ipv6.src",
        ],
    );
    let mut by_port: BTreeMap<String, Vec<&Vec<String>>> = BTreeMap::new();
    for r in tcp.iter().filter(|r| !r[0].is_empty()) {
        by_port.entry(r[0].clone()).or_default().push(r);
    }
    assert_eq!(
        by_port.len(),
        3,
        "tcp4 40000→80, its reverse 80→40000, tcp6 6002"
    );
    for (port, pkts) in &by_port {
        let reverse = port == "80";
        assert_eq!(
            pkts[0][1],
            if reverse { "0x0012" } else { "0x0002" },
            "{port}: first flags"
        );
        assert_eq!(pkts.last().unwrap()[1], "0x0011", "{port}: last flags");
        for w in pkts.windows(2) {
            let seq = |r: &Vec<String>| r[2].parse::<u64>().unwrap();
            let len: u64 = w[0][3].parse().unwrap();
            let syn = u64::from(w[0][1] == "0x0002" || w[0][1] == "0x0012");
            assert_eq!(
                (seq(w[0]) + len + syn) % (1 << 32),
                seq(w[1]),
                "{port}: sequence"
            );
        }
    }
    // ICMP echo: identifier = sport, sequence = packet index.
    let icmp = tshark(
        &out,
        &[
            "icmp.ident",
            "icmp.seq",
            "icmpv6.echo.identifier",
            "icmpv6.echo.sequence_number",
        ],
    );
    let v4: Vec<(String, String)> = icmp
        .iter()
        .filter(|r| !r[0].is_empty())
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(
        v4,
        (0..5)
            .map(|i| ("7".to_string(), i.to_string()))
            .collect::<Vec<_>>()
    );
    let v6: Vec<(String, String)> = icmp
        .iter()
        .filter(|r| r.len() > 2 && !r[2].is_empty())
        .map(|r| (r[2].clone(), r[3].clone()))
        .collect();
    assert_eq!(
        v6,
        (0..3)
            .map(|i| ("0x0009".to_string(), i.to_string()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn calendar_times_every_packet_exactly_and_meta_flows_expand() {
    let d = tmpdir("flows-calendar");
    let out = d.join("out.pcap");
    let o = flows_to_pcap(&repo("examples/sessions/mixed.yaml"), &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pkts = read_all(&out);
    let t0 = pkts[0].0;
    // Group by (IPv4 src, UDP/TCP source port) for the IPv4 UDP flows.
    let mut flows: BTreeMap<([u8; 4], u16), Vec<u64>> = BTreeMap::new();
    for (ts, f) in &pkts {
        if f[12..14] == [8, 0] && f[23] == 17 {
            let src: [u8; 4] = f[26..30].try_into().unwrap();
            let sport = u16::from_be_bytes([f[34], f[35]]);
            flows.entry((src, sport)).or_default().push(ts - t0);
        }
    }
    // udp4 10.0.0.1:5000 — 10 packets at 50 pps from 1 ms.
    let dns = &flows[&([10, 0, 0, 1], 5000)];
    assert_eq!(
        dns,
        &(0..10)
            .map(|k| 1_000_000 + k * 20_000_000)
            .collect::<Vec<_>>()
    );
    // The meta-flow: 100 flows, 10 ms apart from 5 ms, source address and
    // port stepping by one, 10 packets 1 ms apart each.
    for k in 0..100u64 {
        let src = [192, 168, 0, 1 + k as u8];
        let times = &flows[&(src, 10_000 + k as u16)];
        let want: Vec<u64> = (0..10)
            .map(|j| 5_000_000 + k * 10_000_000 + j * 1_000_000)
            .collect();
        assert_eq!(times, &want, "meta-flow {k}");
    }
    // Destinations drawn from 192.168.1.0/24, reproducibly.
    let again = d.join("again.pcap");
    assert!(
        flows_to_pcap(&repo("examples/sessions/mixed.yaml"), &again, &[])
            .status
            .success()
    );
    let frames = |p: &Path| read_all(p).into_iter().map(|x| x.1).collect::<Vec<_>>();
    assert_eq!(frames(&out), frames(&again), "same seed, same packets");
    let other = d.join("other.pcap");
    assert!(flows_to_pcap(
        &repo("examples/sessions/mixed.yaml"),
        &other,
        &["--seed", "9"]
    )
    .status
    .success());
    assert_ne!(frames(&out), frames(&other));
}

#[test]
fn json_sessions_stamps_and_bad_sessions() {
    let d = tmpdir("flows-json");
    let out = d.join("out.pcap");
    let o = flows_to_pcap(&repo("examples/sessions/mixed.json"), &out, &["--stamp"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pkts = read_all(&out);
    assert_eq!(pkts.len(), 120);
    // UDP flow 0: prefix deadbeef, then "SLF1", flow 0, packet index.
    let udp: Vec<&Vec<u8>> = pkts.iter().map(|p| &p.1).filter(|f| f[23] == 17).collect();
    for (i, f) in udp.iter().enumerate() {
        assert_eq!(&f[42..46], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&f[46..50], b"SLF1");
        assert_eq!(&f[50..54], &0u32.to_be_bytes());
        assert_eq!(&f[54..58], &(i as u32).to_be_bytes());
    }
    for (bad, what) in [
        (
            "flows:\n  - {proto: udp4, src: '::1', dst: 10.0.0.1, packets: 1}\n",
            "IPv4",
        ),
        (
            "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 5}\n",
            "intensity",
        ),
        (
            "flows:\n  - {proto: sctp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}\n",
            "sctp4",
        ),
        (
            "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1, colour: red}\n",
            "colour",
        ),
        (
            "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1, start: 7}\n",
            "7: a bare number needs a unit: 7ns",
        ),
    ] {
        let p = d.join("bad.yaml");
        std::fs::write(&p, bad).unwrap();
        let o = flows_to_pcap(&p, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&o).contains("bad.yaml") && stderr(&o).contains(what),
            "{}",
            stderr(&o)
        );
    }
}

/// (total packets, total IP bytes, first start µs) per flow key.
type Totals = BTreeMap<String, (u64, u64, i64)>;

fn key(proto: &str, sa: &str, da: &str, sp: &str, dp: &str) -> String {
    if proto.starts_with("ICMP") {
        format!("{proto} {sa} {da}")
    } else {
        format!("{proto} {sa} {da} {sp} {dp}")
    }
}

#[test]
fn imported_flow_records_regenerate_with_exact_counts_and_start_times() {
    for name in [
        "DERIVED_pmacct_100_ipfix_cisco_flows.csv",
        "DERIVED_pmacct_101_nfv9_cisco_flows.csv",
        "DERIVED_pmacct_402_ipfix_ipv6_cisco_flows.csv",
    ] {
        let csv = repo("testdata/flows").join(name);
        let d = tmpdir("flows-import");
        let session = d.join("s.yaml");
        let o = run(&[
            "flows",
            "import",
            csv.to_str().unwrap(),
            "-o",
            session.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let out = d.join("out.pcap");
        let o = flows_to_pcap(&session, &out, &[]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        // What the records say.
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut want = Totals::new();
        let mut t0 = i64::MAX;
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect();
        let micros = |ts: &str| {
            // 2023-02-28T09:46:01.000000Z: seconds within the day suffice here.
            let t = &ts[11..26];
            let h: i64 = t[0..2].parse().unwrap();
            let m: i64 = t[3..5].parse().unwrap();
            let s: f64 = t[6..].parse().unwrap();
            (h * 3600 + m * 60) * 1_000_000 + (s * 1e6).round() as i64
        };
        for r in &rows {
            t0 = t0.min(micros(r[0]));
        }
        for r in &rows {
            let e = want
                .entry(key(r[7], r[3], r[4], r[5], r[6]))
                .or_insert((0, 0, i64::MAX));
            e.0 += r[10].parse::<u64>().unwrap();
            e.1 += r[11].parse::<u64>().unwrap();
            e.2 = e.2.min(micros(r[0]) - t0);
        }
        // What arrived.
        let pkts = read_all(&out);
        let first = pkts[0].0;
        let mut got = Totals::new();
        for (ts, f) in &pkts {
            let (proto, sa, da, sp, dp, ip_len) = if f[12..14] == [8, 0] {
                let p = match f[23] {
                    6 => "TCP",
                    17 => "UDP",
                    _ => "ICMP",
                };
                let ip = |o: usize| {
                    std::net::Ipv4Addr::new(f[o], f[o + 1], f[o + 2], f[o + 3]).to_string()
                };
                (
                    p,
                    ip(26),
                    ip(30),
                    u16::from_be_bytes([f[34], f[35]]),
                    u16::from_be_bytes([f[36], f[37]]),
                    f.len() - 14,
                )
            } else {
                let p = match f[20] {
                    6 => "TCP",
                    17 => "UDP",
                    _ => "ICMP6",
                };
                let ip = |o: usize| {
                    std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&f[o..o + 16]).unwrap())
                        .to_string()
                };
                (
                    p,
                    ip(22),
                    ip(38),
                    u16::from_be_bytes([f[54], f[55]]),
                    u16::from_be_bytes([f[56], f[57]]),
                    f.len() - 14,
                )
            };
            let e = got
                .entry(key(proto, &sa, &da, &sp.to_string(), &dp.to_string()))
                .or_insert((0, 0, i64::MAX));
            e.0 += 1;
            e.1 += ip_len as u64;
            e.2 = e.2.min(((ts - first) / 1000) as i64);
        }
        assert_eq!(got.len(), want.len(), "{name}: flows");
        for (k, w) in &want {
            let g = got
                .get(k)
                .unwrap_or_else(|| panic!("{name}: flow {k} missing"));
            assert_eq!((g.0, g.1), (w.0, w.1), "{name}: {k} packets and bytes");
            assert!(
                (g.2 - w.2).abs() <= 1000,
                "{name}: {k} starts {} µs, record {} µs",
                g.2,
                w.2
            );
        }
    }
}

#[test]
fn stochastic_planner_sends_every_packet_of_every_flow() {
    let d = tmpdir("flows-stochastic");
    let session = repo("examples/sessions/mixed.yaml");
    let count = |p: &Path| {
        let mut m: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for (_, f) in read_all(p) {
            // Flow key: everything up to the L4 ports (addresses, protocol).
            let key = if f[12..14] == [8, 0] {
                [&f[23..24], &f[26..38]].concat()
            } else {
                [&f[20..21], &f[22..58]].concat()
            };
            *m.entry(key).or_default() += 1;
        }
        m
    };
    let cal = d.join("cal.pcap");
    assert!(flows_to_pcap(&session, &cal, &[]).status.success());
    let sto = d.join("sto.pcap");
    let o = flows_to_pcap(&session, &sto, &["--planner", "stochastic"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(count(&sto), count(&cal), "same packets per flow");
    // Picks are random but reproducible, and differ from the calendar's order.
    let again = d.join("again.pcap");
    assert!(
        flows_to_pcap(&session, &again, &["--planner", "stochastic"])
            .status
            .success()
    );
    // (Frames only: captures are stamped from the wall clock at the start.)
    let frames = |p: &Path| read_all(p).into_iter().map(|x| x.1).collect::<Vec<_>>();
    assert_eq!(frames(&sto), frames(&again));
    assert_ne!(frames(&sto), frames(&cal));
}

#[test]
fn analyze_flows_collects_and_checks_against_the_session() {
    let d = tmpdir("flows-analyze");
    let session = repo("examples/sessions/mixed.yaml");
    let out = d.join("out.pcap");
    assert!(flows_to_pcap(&session, &out, &[]).status.success());
    let analyze = |extra: &[&str]| {
        let mut args = vec!["analyze", out.to_str().unwrap(), "--flows", "--json"];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        sluice_testkit::checked_json(&o.stdout)
    };
    let v = analyze(&["--session", session.to_str().unwrap()]);
    // 106 flows + the reverse of the bi-flow; the 100 meta-flows land on
    // random /24 destinations, so the collector sees 107 distinct 7-tuples.
    assert_eq!(v["flows"].as_array().unwrap().len(), 107);
    let c = &v["session"];
    assert_eq!(
        (c["expected"].as_u64(), c["matched"].as_u64()),
        (Some(107), Some(107))
    );
    assert_eq!(
        (c["missing"].as_u64(), c["unexpected"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        (
            c["packet_mismatches"].as_u64(),
            c["byte_mismatches"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(
        c["start_error"]["percentiles"]["max_ns"], 0,
        "virtual clock: exact starts"
    );
    assert_eq!(c["duration_error"]["percentiles"]["max_ns"], 0);
    // The TCP flow: 20 packets of 40 + 100 bytes, 190 ms long.
    let tcp = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["sport"] == 40000)
        .unwrap();
    assert_eq!(
        (tcp["packets"].as_u64(), tcp["ip_bytes"].as_u64()),
        (Some(20), Some(20 * 140))
    );
    assert_eq!(
        tcp["last_ns"].as_u64().unwrap() - tcp["first_ns"].as_u64().unwrap(),
        190_000_000
    );
    // A capture cut short: flows come out short of packets.
    let cut = d.join("cut.pcap");
    assert!(flows_to_pcap(&session, &cut, &["--limit", "500"])
        .status
        .success());
    let o = run(&[
        "analyze",
        cut.to_str().unwrap(),
        "--flows",
        "--json",
        "--session",
        session.to_str().unwrap(),
    ]);
    let v: serde_json::Value = sluice_testkit::checked_json(&o.stdout);
    assert!(v["session"]["missing"].as_u64().unwrap() > 0);
    assert!(v["session"]["packet_mismatches"].as_u64().unwrap() > 0);
    // An idle timeout shorter than the TCP flow's 10 ms gaps splits it.
    let v = analyze(&["--idle-timeout", "5ms"]);
    let split = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["sport"] == 40000)
        .count();
    assert_eq!(split, 20);
}

/// A meta-flow of a billion flows starting together used to allocate
/// until memory ran out (7 GB in 12 s); `analyze --flows --session`
/// expanded 2^40 planned flows in full.
#[test]
fn sessions_too_large_for_memory_are_refused_before_allocating() {
    let d = tmpdir("flows-budget");
    let session = d.join("huge.yaml");
    std::fs::write(
        &session,
        "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 2, pps: 1, count: 1000000000}\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let o = run(&[
        "flows",
        "run",
        session.to_str().unwrap(),
        "--limit",
        "1",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("flows[0]: count: 1000000000"),
        "{}",
        stderr(&o)
    );
    // Refused before planning: seconds at most even on a loaded machine
    // (it used to take half a minute or more).
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    let cap = d.join("cap.pcap");
    write_trace(&cap, 3, 1000, 64);
    std::fs::write(
        &session,
        "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1, count: 1099511627776, period: 1us}\n",
    )
    .unwrap();
    let o = run(&[
        "analyze",
        cap.to_str().unwrap(),
        "--flows",
        "--session",
        session.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("memory budget"), "{}", stderr(&o));
}

/// `flows run /dev/zero` read until memory ran out; a session nested
/// 100 000 deep took half a minute to refuse.
#[test]
fn endless_and_deeply_nested_sessions_are_refused_at_once() {
    let started = std::time::Instant::now();
    let o = run(&["flows", "run", "/dev/zero", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/zero: more than"),
        "{}",
        stderr(&o)
    );
    let d = tmpdir("flows-deep");
    let deep = d.join("deep.yaml");
    std::fs::write(&deep, format!("flows: {}", "[".repeat(100_000))).unwrap();
    let o = run(&["flows", "run", deep.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nested deeper than 64"),
        "{}",
        stderr(&o)
    );
    // Refused before planning: seconds at most even on a loaded machine
    // (it used to take half a minute or more).
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// `flows import` of 150 000 records and `flows run` of the session it
/// writes, each under an address-space limit the whole-text readers
/// needed several times over (a record as text, as a row and as a YAML
/// tree): records and entries are streamed.
#[test]
fn large_imports_and_sessions_stream_in_bounded_memory() {
    if !sluice_testkit::require("prlimit", "memory-bounded imports") {
        return;
    }
    let d = tmpdir("flows-stream");
    let csv = d.join("big.csv");
    let mut text = String::from("ts,te,td,sa,da,sp,dp,pr,flg,ipkt,ibyt\n");
    for i in 0..150_000u32 {
        text.push_str(&format!(
            "2023-02-28T09:{:02}:{:02}Z,x,1.5,10.0.{}.1,10.1.0.2,{},53,UDP,.,3,330\n",
            i / 60_000 % 60,
            i / 1000 % 60,
            i % 250,
            1024 + i % 60_000
        ));
    }
    std::fs::write(&csv, text).unwrap();
    let session = d.join("big.yaml");
    let limited = |mib: u32, args: &[&str]| {
        Command::new("prlimit")
            .arg(format!("--as={}", mib << 20))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_sluice"))
            .args(args)
            .output()
            .unwrap()
    };
    let (c, s) = (csv.to_str().unwrap(), session.to_str().unwrap());
    let o = limited(128, &["flows", "import", c, "-o", s]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("150000 records, 150000 flows"),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::metadata(&session).unwrap().len() > 16 << 20);
    let out = d.join("out.pcap");
    let o = limited(
        384,
        &[
            "flows",
            "run",
            s,
            "--to",
            &format!("pcap:{}", out.display()),
            "--limit",
            "100",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // The session was read in full: its last entry, a flow of its own.
    let bad = d.join("bad.yaml");
    let mut t = std::fs::read_to_string(&session).unwrap();
    t.push_str("  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1, pps: 0}\n");
    let last_line = t.lines().count();
    std::fs::write(&bad, t).unwrap();
    let o = run(&["flows", "run", bad.to_str().unwrap(), "--to", "null", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("flows[150000]"),
        "{} (line {last_line})",
        stderr(&o)
    );
}

/// Per flow (addresses and ports), tshark's view of each frame in file
/// order: (raw sequence number, payload length, SYN, flagged by tshark's
/// stream analysis as out of order or a retransmission).
type TcpRows = BTreeMap<String, Vec<(u64, u64, bool, bool)>>;

fn tcp_flows(pcap: &Path) -> TcpRows {
    let mut m = TcpRows::new();
    let fields = [
        "ip.src",
        "tcp.srcport",
        "ip.dst",
        "tcp.dstport",
        "tcp.seq_raw",
        "tcp.len",
        "tcp.flags.syn",
        "tcp.analysis.out_of_order",
        "tcp.analysis.retransmission",
        "tcp.checksum.status",
    ];
    for r in tshark(pcap, &fields) {
        assert_eq!(r[9], "1", "{}: TCP checksum good: {r:?}", pcap.display());
        let flagged = !r[7].is_empty() || !r[8].is_empty();
        m.entry(r[..4].join(" ")).or_default().push((
            r[4].parse().unwrap(),
            r[5].parse().unwrap(),
            r[6] == "1" || r[6] == "True",
            flagged,
        ));
    }
    m
}

#[test]
fn planner_threads_keep_every_flow_whole_and_in_order_judged_by_tshark() {
    if !have_tshark() {
        return;
    }
    let d = tmpdir("flows-planners");
    let session = d.join("s.yaml");
    std::fs::write(
        &session,
        "flows:\n  - {proto: tcp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1000, dport: 80, start: 0, \
         packets: 8, pps: 100000, payload: [20, 200], count: 10000, step: {src: 1, sport: 1}}\n",
    )
    .unwrap();
    let (one, two) = (d.join("one"), d.join("two"));
    std::fs::create_dir(&one).unwrap();
    std::fs::create_dir(&two).unwrap();
    let s = session.to_str().unwrap();
    let dir = |p: &Path| format!("pcap:{}/", p.display());
    let o = run(&["flows", "run", s, "--to", &dir(&one), "--topspeed", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "flows",
        "run",
        s,
        "--to",
        &dir(&two),
        "--topspeed",
        "-q",
        "--planners",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Two planners ran two TX threads, one file each.
    let files = [two.join("tx-0.pcap"), two.join("tx-1.pcap")];
    let mut union = TcpRows::new();
    for f in &files {
        let flows = tcp_flows(f);
        // Each planner had about half of the flows (5-tuple hash).
        assert!(
            (3000..=7000).contains(&flows.len()),
            "{}: {} flows",
            f.display(),
            flows.len()
        );
        for (k, rows) in flows {
            assert!(union.insert(k.clone(), rows).is_none(), "{k} in both files");
        }
    }
    assert_eq!(union.len(), 10_000, "every flow went out");
    for (k, rows) in &union {
        assert_eq!(rows.len(), 8, "{k}: every packet");
        assert!(rows[0].2, "{k}: starts with its SYN");
        for w in rows.windows(2) {
            let next = w[0].0 + w[0].1 + u64::from(w[0].2);
            assert_eq!(w[1].0, next % (1 << 32), "{k}: in sequence order");
        }
        assert!(rows.iter().all(|r| !r.3), "{k}: tshark flags none");
    }
    // The same frames as one planner makes, byte for byte.
    let mut a = frames_of(&one.join("tx-0.pcap"));
    let mut b: Vec<Vec<u8>> = files.iter().flat_map(|f| frames_of(f)).collect();
    a.sort();
    b.sort();
    assert!(a == b, "two planners send one planner's frames");
    // A limit counts packets in time order, which no planner knows.
    let o = run(&[
        "flows",
        "run",
        s,
        "--to",
        "null",
        "--planners",
        "2",
        "--limit",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--limit needs --planners 1"),
        "{}",
        stderr(&o)
    );
    let o = run(&["flows", "run", s, "--to", &dir(&d.join("nodir")), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
}

#[test]
fn ip_only_flows_carry_their_protocol_number_and_no_ports() {
    if !have_tshark() {
        return;
    }
    let d = tmpdir("flows-ip-only");
    let session = d.join("ip.yaml");
    std::fs::write(
        &session,
        "flows:\n  - {proto: ip4, src: 10.0.0.1, dst: 10.99.0.2, ipproto: 50, start: 0, packets: 3, biflow: true, \
         pps: 1000, payload: 30, count: 2, step: {src: 1}}\n  - {proto: ip6, src: '2001:db8::1', \
         dst: '2001:db8::2', start: 0, packets: 2, pps: 1000, payload: 12}\n",
    )
    .unwrap();
    let out = d.join("ip.pcap");
    let o = flows_to_pcap(&session, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = tshark(
        &out,
        &[
            "ip.src",
            "ip.proto",
            "ip.checksum.status",
            "ip.len",
            "ipv6.nxt",
            "ipv6.plen",
            "frame.len",
        ],
    );
    let v4: Vec<_> = rows.iter().filter(|r| !r[0].is_empty()).collect();
    let v6: Vec<_> = rows.iter().filter(|r| r[0].is_empty()).collect();
    assert_eq!(
        (v4.len(), v6.len()),
        (12, 2),
        "{rows:?} (2 biflows of 3 packets each way)"
    );
    for r in v4 {
        // Protocol 50, a good header checksum, the payload right after
        // the 20-byte header (30 bytes: IP length 50, frame 64).
        assert_eq!(&r[1..4], ["50", "1", "50"], "{r:?}");
        assert_eq!(r[6], "64", "{r:?}");
    }
    for r in v6 {
        // The default protocol number, 253 (RFC 3692), 12 payload bytes.
        assert_eq!(&r[4..7], ["253", "12", "66"], "{r:?}");
    }
    // Ports and ipproto are refused where they mean nothing.
    for (entry, says) in [
        (
            "{proto: ip4, src: 10.0.0.1, dst: 10.0.0.2, dport: 5, packets: 1}",
            "have no ports",
        ),
        (
            "{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, ipproto: 5, packets: 1}",
            "ipproto is for ip4 and ip6",
        ),
    ] {
        std::fs::write(&session, format!("flows:\n  - {entry}\n")).unwrap();
        let o = flows_to_pcap(&session, &d.join("no.pcap"), &[]);
        assert_eq!(o.status.code(), Some(2), "{entry}");
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
}

/// First-packet time (from the run's first packet) of each IPv4 UDP flow,
/// by source address.
fn flow_starts(pcap: &Path) -> BTreeMap<[u8; 4], (u64, usize)> {
    let pkts = read_all(pcap);
    let t0 = pkts[0].0;
    let mut starts = BTreeMap::new();
    for (ts, f) in &pkts {
        let src: [u8; 4] = f[26..30].try_into().unwrap();
        starts.entry(src).or_insert((ts - t0, 0)).1 += 1;
    }
    starts
}

#[test]
fn onoff_meta_flows_start_only_in_on_periods() {
    let d = tmpdir("flows-onoff");
    let session = d.join("s.yaml");
    std::fs::write(
        &session,
        "flows:\n  - {proto: udp4, src: 10.1.0.0, dst: 10.2.0.1, packets: 3, pps: 10000, count: 40, period: 1ms, step: {src: 1}, onoff: {on: 10ms, off: 5ms}}\n",
    )
    .unwrap();
    let out = d.join("out.pcap");
    let o = flows_to_pcap(&session, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let starts = flow_starts(&out);
    assert_eq!(starts.len(), 40);
    for (k, (src, (t, packets))) in starts.iter().enumerate() {
        assert_eq!(src[3] as usize, k);
        assert_eq!(*packets, 3, "flow {k}");
        // ON [0, 10) ms, OFF 5 ms, ON [15, 25), ...: flow k after k ms of
        // ON time.
        let k = k as u64;
        assert_eq!(*t, (k + 5 * (k / 10)) * 1_000_000, "flow {k}");
    }
    // Drawn periods: exponential ON (mean 5 ms) and OFF (mean 20 ms).
    std::fs::write(
        &session,
        "seed: 3\nflows:\n  - {proto: udp4, src: 10.1.0.0, dst: 10.2.0.1, packets: 1, count: 400, period: 1ms, step: {src: 1}, onoff: {on: {dist: exponential, mean: 5ms}, off: {dist: exponential, mean: 20ms}}}\n",
    )
    .unwrap();
    let o = flows_to_pcap(&session, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let times: Vec<u64> = flow_starts(&out).values().map(|v| v.0).collect();
    assert_eq!(times.len(), 400);
    let off: u64 = times.windows(2).map(|w| w[1] - w[0] - 1_000_000).sum();
    let pauses = times.windows(2).filter(|w| w[1] - w[0] > 1_000_000).count();
    // 399 ms of ON time hold ~80 ON periods, each followed by ~20 ms OFF.
    let ratio = off as f64 / 399e6;
    assert!((2.5..6.0).contains(&ratio), "OFF/ON {ratio}");
    assert!((40..130).contains(&pauses), "{pauses} OFF periods");
    // analyze plans the session the same way: every start exact.
    let a = run(&[
        "analyze",
        out.to_str().unwrap(),
        "--flows",
        "--json",
        "--session",
        session.to_str().unwrap(),
    ]);
    assert!(a.status.success(), "{}", stderr(&a));
    let v = sluice_testkit::checked_json(&a.stdout);
    assert_eq!(v["session"]["matched"], 400);
    assert_eq!(v["session"]["start_error"]["percentiles"]["max_ns"], 0);
    // A single flow, or no period, cannot be ON/OFF.
    std::fs::write(
        &session,
        "flows:\n  - {proto: udp4, src: 10.1.0.0, dst: 10.2.0.1, packets: 1, onoff: {on: 1s, off: 1s}}\n",
    )
    .unwrap();
    let o = flows_to_pcap(&session, &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("flows[0]: onoff is for meta-flows"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn checksum_offload_without_a_device_is_refused_with_the_reason() {
    let d = tmpdir("flows-csum");
    let session = d.join("s.yaml");
    std::fs::write(
        &session,
        "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, sport: 1, dport: 2, packets: 1}\n",
    )
    .unwrap();
    let s = session.to_str().unwrap();
    let out = format!("pcap:{}", d.join("o.pcap").display());
    for to in ["null", out.as_str()] {
        let o = run(&["flows", "run", s, "--to", to, "--csum-offload", "-q"]);
        assert_eq!(o.status.code(), Some(2), "{to}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--csum-offload needs an afpacket"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!d.join("o.pcap").exists());
}

/// Issue 42, item 8: on the virtual clock, each TX thread's pcap carries
/// its packets' planned departures; one thread's schedule never moves
/// another's (it made tx-1.pcap one instant, late by milliseconds).
#[test]
fn per_thread_pcaps_on_the_virtual_clock_carry_the_planned_departures() {
    let session = repo("examples/sessions/mixed.yaml");
    let d = tmpdir("flows-virtual-threads");
    let offsets = |files: &[PathBuf]| -> Vec<u64> {
        let mut all: Vec<u64> = files
            .iter()
            .flat_map(|f| {
                let t: Vec<u64> = read_all(f).into_iter().map(|(ts, _)| ts).collect();
                assert!(
                    t.windows(2).all(|w| w[0] <= w[1]),
                    "{}: in order",
                    f.display()
                );
                t
            })
            .collect();
        all.sort_unstable();
        let first = all[0];
        all.iter().map(|t| t - first).collect()
    };
    let one = d.join("one.pcap");
    let o = flows_to_pcap(&session, &one, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = d.join("two");
    std::fs::create_dir(&dir).unwrap();
    let to = format!("pcap:{}/", dir.display());
    let s = session.to_str().unwrap();
    let o = run(&[
        "flows",
        "run",
        s,
        "--planners",
        "2",
        "--threads",
        "2",
        "--clock",
        "virtual",
        "--to",
        &to,
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (t0, t1) = (dir.join("tx-0.pcap"), dir.join("tx-1.pcap"));
    for f in [&t0, &t1] {
        let times: std::collections::BTreeSet<u64> =
            read_all(f).into_iter().map(|(ts, _)| ts).collect();
        assert!(
            times.len() > 10,
            "{}: {} distinct stamps",
            f.display(),
            times.len()
        );
    }
    let (a, b) = (offsets(&[one]), offsets(&[t0, t1]));
    assert_eq!(a.len(), b.len());
    assert_eq!(a, b, "the same planned departures, however many threads");
}

/// FLOR §5.1's sessions saved and edited: a session saved with no edit,
/// as JSON and back as YAML, sends the very packets the original sends
/// (times and bytes); an edit changes the flow it names and no other; a
/// save over the input, or an edit that makes a session `flows run`
/// refuses, is an error naming the key, and leaves the output as it was.
#[test]
fn sessions_saved_and_edited_send_what_was_saved() {
    let d = tmpdir("flows-edit");
    let mixed = repo("examples/sessions/mixed.yaml");
    let (json, yaml) = (d.join("s.json"), d.join("s.yaml"));
    let edit = |input: &Path, out: &Path, extra: &[&str]| {
        let mut args = vec![
            "flows",
            "edit",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    for (from, to) in [(&mixed, &json), (&json, &yaml)] {
        let o = edit(from, to, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("7 entries, 107 flows"),
            "{}",
            stderr(&o)
        );
    }
    let sent = |session: &Path, name: &str| {
        let out = d.join(name);
        let o = flows_to_pcap(session, &out, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        // Times from the first packet: the run's start is the clock's.
        let pkts = read_all(&out);
        let t0 = pkts[0].0;
        pkts.into_iter()
            .map(|(t, f)| (t - t0, f))
            .collect::<Vec<_>>()
    };
    let original = sent(&mixed, "orig.pcap");
    assert_eq!(original.len(), 1078);
    assert!(sent(&json, "json.pcap") == original, "saved as JSON");
    assert!(sent(&yaml, "yaml.pcap") == original, "and back as YAML");

    // The UDP flow from 10.0.0.1:5000 at 50 pps, set to 100 pps; the
    // meta-flow's 100 flows are left as they were.
    let edited = d.join("edited.yaml");
    let o = edit(
        &yaml,
        &edited,
        &["--set", "flows[1].pps=100", "--set", "seed=42"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let times = |pkts: &[(u64, Vec<u8>)], src: [u8; 4], sport: u16| -> Vec<u64> {
        pkts.iter()
            .filter(|(_, f)| f[12..14] == [8, 0] && f[23] == 17 && f[26..30] == src)
            .filter(|(_, f)| u16::from_be_bytes([f[34], f[35]]) == sport)
            .map(|(t, _)| *t)
            .collect()
    };
    let after = sent(&edited, "edited.pcap");
    let want: Vec<u64> = (0..10).map(|k| 1_000_000 + k * 10_000_000).collect();
    assert_eq!(times(&after, [10, 0, 0, 1], 5000), want);
    assert_eq!(times(&original, [10, 0, 0, 1], 5000)[1], 21_000_000);
    for k in 0..100u8 {
        let src = [192, 168, 0, 1 + k];
        assert_eq!(
            times(&after, src, 10_000 + u16::from(k)),
            times(&original, src, 10_000 + u16::from(k)),
            "meta-flow {k}"
        );
    }

    // Refusals name the key; the output stays as it was.
    let good = std::fs::read(&edited).unwrap();
    for (extra, want) in [
        (
            &["--set", "flows[1].pps=0"][..],
            "flows[1]: pps 0 must be positive",
        ),
        (
            &["--set", "flows[9].pps=1"][..],
            "--set flows[9].pps=1: no entry 9: the session has 7",
        ),
        (&["--delete", "flows[2].colour"][..], "no such field"),
        (&["--append", "{proto: udp4}"][..], "flows[7]"),
    ] {
        let o = edit(&yaml, &edited, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(want), "{extra:?}: {}", stderr(&o));
    }
    let o = edit(&yaml, &yaml, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is also the input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&edited).unwrap(), good);
}
