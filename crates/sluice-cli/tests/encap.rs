//! Layers, tunnels and varied fields in generated frames (issue 48),
//! checked against independent builders and decoders: scapy builds the
//! same packets byte for byte, tshark decodes the varied fields as asked.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    sluice_testkit::repo_root().join(rel)
}

/// True when Python's scapy is installed; a failure under CI (.ci/run
/// installs it), else SKIPPED.
fn require_scapy(test: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", "import scapy.all"])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        sluice_testkit::skip(test, "the scapy Python package (pip install scapy)");
    }
    found
}

/// The `fields` tshark decodes in each frame of `pcap` (every occurrence,
/// comma-separated), with the IPv4, UDP and TCP checksums checked.
fn tshark_fields(pcap: &std::path::Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.arg("-r").arg(pcap);
    for proto in ["ip", "udp", "tcp"] {
        c.args(["-o", &format!("{proto}.check_checksum:TRUE")]);
    }
    c.args(["-T", "fields", "-E", "occurrence=a"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "tshark: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

/// `sluice CMD FILE` into `out` (a pcap), which must succeed.
fn sent(cmd: &[&str], file: &std::path::Path, out: &std::path::Path) {
    let mut args = cmd.to_vec();
    args.push(file.to_str().unwrap());
    let o = run_to_pcap(&args, out, &[]);
    assert!(o.status.success(), "{}: {}", file.display(), stderr(&o));
}

/// `sluice CMD FILE` of `text` written into `file`, which must be
/// refused with `want` in its error.
fn refused(cmd: &[&str], file: &std::path::Path, text: &str, want: &str) {
    std::fs::write(file, text).unwrap();
    let mut args = cmd.to_vec();
    args.push(file.to_str().unwrap());
    let o = run_to_pcap(&args, &file.with_extension("pcap"), &[]);
    assert!(!o.status.success(), "{text}");
    assert!(stderr(&o).contains(want), "{text}: {}", stderr(&o));
}

const FLOWS: &[&str] = &["flows", "run"];
const PROFILE: &[&str] = &["profile", "run", "--threads", "1"];

/// One flow of four packets behind `encap`, with `fields`.
fn session(encap: &str, fields: &str, flow: &str) -> String {
    format!("seed: 5\nencap: {encap}\nfields: {fields}\nflows:\n  - {{{flow}, packets: 4, pps: 100, payload: 40}}\n")
}

/// scapy's VXLAN sends VXLAN-GPE's flags (0x0c, next protocol 3) by
/// default; sluice sends RFC 7348's (0x08), so the cases say so.
#[test]
fn tunnels_and_varied_fields_equal_the_packets_scapy_builds() {
    if !require_scapy("tunnels_and_varied_fields_equal_the_packets_scapy_builds") {
        return;
    }
    let d = tmpdir("encap-scapy");
    let udp4 = "proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, sport: 5000, dport: 53";
    let udp6 = "proto: udp6, src: \"2001:db8::1\", dst: \"2001:db8::2\", sport: 6000, dport: 6001";
    let icmp4 = "proto: icmp4, src: 10.0.0.1, dst: 10.0.0.4, sport: 7";
    let cases = [
        (
            session(
                "[{vlan: 3}, {vxlan: {vni: 4097, src: 192.0.2.1, dst: 192.0.2.2, sport: 7000}}]",
                "[{field: vlan.id, from: 100, to: 103, per: packet}]",
                udp4,
            ),
            "Ether(dst=D,src=S)/Dot1Q(vlan=100+I%4)/IP(src='192.0.2.1',dst='192.0.2.2',id=I)/UDP(sport=7000,dport=4789,chksum=0)/VXLAN(flags=0x08,NextProtocol=0,vni=4097)/Ether(dst=D,src=S)/IP(src='10.0.0.1',dst='10.0.0.2',id=I)/UDP(sport=5000,dport=53)/P",
        ),
        (
            session(
                "[{gre: {src: \"2001:db8:9::1\", dst: \"2001:db8:9::2\", key: 77, seq: true}}]",
                "[]",
                udp6,
            ),
            "Ether(dst=D,src=S)/IPv6(src='2001:db8:9::1',dst='2001:db8:9::2')/GRE(key_present=1,seqnum_present=1,key=77,sequence_number=I)/IPv6(src='2001:db8::1',dst='2001:db8::2')/UDP(sport=6000,dport=6001)/P",
        ),
        (
            session(
                "[{gtpu: {teid: 305419896, src: 192.0.2.1, dst: 192.0.2.2, qfi: 5, uplink: true}}]",
                "[]",
                icmp4,
            ),
            "Ether(dst=D,src=S)/IP(src='192.0.2.1',dst='192.0.2.2',id=I)/UDP(sport=2152,dport=2152,chksum=0)/GTP_U_Header(teid=0x12345678,E=1,next_ex=0x85)/GTPPDUSessionContainer(type=1,QFI=5)/IP(src='10.0.0.1',dst='10.0.0.4',id=I)/ICMP(type=8,id=7,seq=I)/P",
        ),
        (
            session(
                "[{svlan: 10}, {mpls: 16}, {ipip: {src: 192.0.2.1, dst: 192.0.2.2}}]",
                "[]",
                udp6,
            ),
            "Ether(dst=D,src=S)/Dot1AD(vlan=10,type=0x8847)/MPLS(label=16,s=1,ttl=64)/IP(src='192.0.2.1',dst='192.0.2.2',id=I)/IPv6(src='2001:db8::1',dst='2001:db8::2')/UDP(sport=6000,dport=6001)/P",
        ),
        (
            session(
                "[{vxlan: {vni: 1, src: \"2001:db8:9::1\", dst: \"2001:db8:9::2\", sport: 7000}}]",
                "[{field: vxlan.vni, op: list, values: [9]}, {field: ip.dst, op: list, values: [10.1.2.3]}, {field: sport, op: inc, from: 1234, to: 1235, per: packet}, {field: ip.ttl, op: list, values: [7]}]",
                udp4,
            ),
            "Ether(dst=D,src=S)/IPv6(src='2001:db8:9::1',dst='2001:db8:9::2')/UDP(sport=7000,dport=4789)/VXLAN(flags=0x08,NextProtocol=0,vni=9)/Ether(dst=D,src=S)/IP(src='10.0.0.1',dst='10.1.2.3',id=I,ttl=7)/UDP(sport=1234+I%2,dport=53)/P",
        ),
        (
            format!(
                "ipv6_ext: [{{hop_by_hop: {{router_alert: true}}}}, {{routing: {{segments: [\"2001:db8:a::1\", \"2001:db8:b::1\"]}}}}, {{fragment: {{id: 7}}}}, {{destination: {{}}}}]\n{}",
                session("[]", "[]", udp6)
            ),
            "Ether(dst=D,src=S)/IPv6(src='2001:db8::1',dst='2001:db8:a::1')/IPv6ExtHdrHopByHop(options=[RouterAlert()])/IPv6ExtHdrSegmentRouting(addresses=['2001:db8::2','2001:db8:b::1','2001:db8:a::1'])/IPv6ExtHdrFragment(id=7)/IPv6ExtHdrDestOpt()/UDP(sport=6000,dport=6001)/P",
        ),
        (
            // A template from a description, its fields varied per packet.
            "template: {describe: \"udp4 src=10.0.0.1 dst=10.0.0.2 sport=5000 dport=53 payload=40 encap=vlan:3\"}\n\
             fields: [{field: vlan.id, from: 100, to: 103, per: packet}, {field: ip.id, per: packet}]\n\
             flows:\n  - {packets: 4, pps: 100}\n"
                .to_string(),
            "Ether(dst=D,src=S)/Dot1Q(vlan=100+I%4)/IP(src='10.0.0.1',dst='10.0.0.2',id=I)/UDP(sport=5000,dport=53)/P",
        ),
    ];
    let mut json = Vec::new();
    for (k, (text, scapy)) in cases.iter().enumerate() {
        let s = d.join(format!("s{k}.yaml"));
        std::fs::write(&s, text).unwrap();
        let out = d.join(format!("s{k}.pcap"));
        sent(FLOWS, &s, &out);
        assert_eq!(read_all(&out).len(), 4, "case {k}");
        json.push(serde_json::json!({"pcap": out, "scapy": scapy, "payload": 40}));
    }
    let cases_file = d.join("cases.json");
    std::fs::write(&cases_file, serde_json::to_string(&json).unwrap()).unwrap();
    let o = Command::new("python3")
        .arg(repo("crates/sluice-cli/tests/data/scapy_frames.py"))
        .arg(&cases_file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(text.matches("4 frames equal scapy's").count(), 7, "{text}");
}

/// Geneve (RFC 8926), the header added by ARCHITECTURE.md's new-protocol
/// checklist, read back by tshark: version 0, no options, transparent
/// Ethernet bridging, UDP port 6081, each flow's VNI as its field asks,
/// the inner Ethernet, IP and UDP headers the flow's own, over IPv4 and
/// IPv6 outers, every checksum good and no frame malformed.
#[test]
fn geneve_tunnels_decode_as_geneve_with_each_flows_vni() {
    if !sluice_testkit::require("tshark", "Geneve read back by tshark") {
        return;
    }
    let d = tmpdir("encap-geneve");
    for (outer, src, dst) in [
        ("ip", "192.0.2.1", "192.0.2.2"),
        ("ipv6", "2001:db8::1", "2001:db8::2"),
    ] {
        let s = d.join(format!("{outer}.yaml"));
        std::fs::write(
            &s,
            format!(
                "seed: 3\nencap: [{{geneve: {{vni: 1, src: '{src}', dst: '{dst}', inner_dst_mac: '02:00:00:00:00:99'}}}}]\n\
                 fields:\n  - {{field: geneve.vni, from: 700, to: 799}}\n\
                 flows:\n  - {{proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, sport: 30000, dport: 9, packets: 2, pps: 1000, payload: 24, count: 5, period: 1ms, step: {{sport: 1}}}}\n"
            ),
        )
        .unwrap();
        let out = d.join(format!("{outer}.pcap"));
        sent(FLOWS, &s, &out);
        let rows = tshark_fields(
            &out,
            &[
                "geneve.version",
                "geneve.flags",
                "geneve.proto_type",
                "geneve.vni",
                "udp.dstport",
                "udp.srcport",
                "eth.dst",
                "ip.src",
                &format!("{outer}.dst"),
                "udp.checksum.status",
                "_ws.malformed",
            ],
        );
        assert_eq!(rows.len(), 10, "{outer}: {rows:?}");
        let mut vni_of = std::collections::BTreeMap::new();
        for r in &rows {
            // Version 0; no OAM, critical or reserved flag.
            assert_eq!(r[0], "0", "{outer}: {r:?}");
            assert!(
                matches!(r[1].as_str(), "0x00" | "0x0000" | "0"),
                "{outer}: {r:?}"
            );
            assert_eq!(
                r[2], "0x6558",
                "{outer}: transparent Ethernet bridging: {r:?}"
            );
            let ports: Vec<&str> = r[4].split(',').collect();
            assert_eq!(ports, ["6081", "9"], "{outer}: {r:?}");
            let inner_sport = r[5].split(',').nth(1).unwrap().to_string();
            assert!(
                r[6].ends_with("02:00:00:00:00:99"),
                "{outer}: inner MAC: {r:?}"
            );
            assert!(r[7].ends_with("10.0.0.1"), "{outer}: inner source: {r:?}");
            assert!(r[8].contains(dst), "{outer}: outer destination: {r:?}");
            assert!(
                r[9].ends_with('1'),
                "{outer}: inner UDP checksum good: {r:?}"
            );
            assert!(r[10].is_empty(), "{outer}: malformed: {r:?}");
            let vni: u32 = r[3].parse().unwrap_or_else(|_| {
                u32::from_str_radix(r[3].trim_start_matches("0x"), 16).unwrap()
            });
            assert!(
                vni_of
                    .insert(inner_sport.clone(), vni)
                    .is_none_or(|v| v == vni),
                "{r:?}"
            );
        }
        let mut vnis: Vec<u32> = vni_of.values().copied().collect();
        vnis.sort_unstable();
        assert_eq!(
            vnis,
            [700, 701, 702, 703, 704],
            "{outer}: one VNI per flow, in order"
        );
    }
}

/// Per-flow fields over a meta-flow of 50 flows, read back by tshark:
/// each flow keeps one VNI, one VLAN id and one inner source address, the
/// VNIs are 5000..5049 (one per flow, in the flows' order), the VLAN ids
/// random in 100..199, every checksum good and no frame malformed.
#[test]
fn per_flow_fields_decode_as_asked_with_good_checksums() {
    if !sluice_testkit::require("tshark", "per-flow fields read back by tshark") {
        return;
    }
    let d = tmpdir("encap-fields");
    let s = d.join("s.yaml");
    std::fs::write(
        &s,
        "seed: 9\nencap: [{vlan: 1}, {vxlan: {vni: 1, src: 192.0.2.1, dst: 192.0.2.2}}]\n\
         fields:\n  - {field: vxlan.vni, from: 5000, to: 5999}\n  - {field: vlan.id, op: random, from: 100, to: 199}\n  - {field: ip.src, from: 10.8.0.0, to: 10.8.255.255}\n\
         flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, sport: 20000, dport: 9, packets: 3, pps: 1000, payload: 20, count: 50, period: 1ms, step: {sport: 1}}\n",
    )
    .unwrap();
    let out = d.join("out.pcap");
    sent(FLOWS, &s, &out);
    let rows = tshark_fields(
        &out,
        &[
            "udp.srcport",
            "vxlan.vni",
            "vlan.id",
            "ip.src",
            "ip.checksum.status",
            "udp.checksum.status",
            "_ws.malformed",
        ],
    );
    let mut by_flow: std::collections::BTreeMap<
        String,
        std::collections::BTreeSet<(String, String, String)>,
    > = Default::default();
    let frames = rows.len();
    for r in &rows {
        // The inner UDP source port names the flow (the outer one is VXLAN's).
        let inner_sport = r[0].split(',').nth(1).unwrap().to_string();
        let inner_src = r[3].split(',').nth(1).unwrap().to_string();
        by_flow.entry(inner_sport).or_default().insert((
            r[1].to_string(),
            r[2].to_string(),
            inner_src,
        ));
        assert_eq!(r[4], "1,1", "{r:?}");
        assert_eq!(r[5], "3,1", "outer UDP none over IPv4, inner good: {r:?}");
        assert!(r[6].is_empty(), "malformed: {r:?}");
    }
    assert_eq!(frames, 150);
    assert_eq!(by_flow.len(), 50);
    let mut vnis = Vec::new();
    for (port, values) in &by_flow {
        assert_eq!(values.len(), 1, "flow {port}: {values:?}");
        let (vni, vlan, src) = values.iter().next().unwrap();
        let vlan: u16 = vlan.parse().unwrap();
        assert!((100..=199).contains(&vlan), "flow {port}: {vlan}");
        let port: u32 = port.parse().unwrap();
        let vni: u32 = vni.parse().unwrap();
        assert_eq!(vni - 5000, port - 20000, "the flows' order");
        assert_eq!(src, &format!("10.8.0.{}", vni - 5000));
        vnis.push(vni);
    }
    vnis.sort_unstable();
    assert_eq!(vnis, (5000..5050).collect::<Vec<_>>());
    let vlans: std::collections::BTreeSet<_> = by_flow
        .values()
        .map(|v| v.iter().next().unwrap().1.clone())
        .collect();
    assert!(vlans.len() > 30, "random VLAN ids: {vlans:?}");
    // analyze --flows --session expands the flows as planned: a session
    // whose fields change them as built is refused, not misjudged.
    let o = run(&[
        "analyze",
        out.to_str().unwrap(),
        "--flows",
        "--session",
        s.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("a session with fields, ipv6_ext or a template is not compared yet"),
        "{}",
        stderr(&o)
    );
    // A bad field is refused naming the key.
    refused(
        FLOWS,
        &s,
        "encap: [{vlan: 1}]\nfields: [{field: vxlan.vni}]\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}\n",
        "fields[0].field: 'vxlan.vni': the encap has no vxlan layer",
    );
    refused(
        FLOWS,
        &s,
        "fields: [{field: sport}]\nflows:\n  - {proto: icmp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}\n",
        "flows[0]: fields vary sport or dport, and icmp4 flows have no ports",
    );
}

/// IPv6 extension headers on every IPv6 flow of the mixed session (hop by
/// hop with a router alert, a segment routing header through two
/// segments, an atomic fragment, destination options): tshark decodes the
/// chain, the IPv6 destination is the first segment, every L4 checksum
/// (whose pseudo header takes the final destination) is good, no frame is
/// malformed, and the IPv4 flows are left as they are.
#[test]
fn ipv6_extension_headers_decode_with_good_checksums() {
    if !sluice_testkit::require("tshark", "IPv6 extension headers read back by tshark") {
        return;
    }
    let d = tmpdir("encap-ip6ext");
    let mixed = std::fs::read_to_string(repo("examples/sessions/mixed.yaml")).unwrap();
    let s = d.join("s.yaml");
    std::fs::write(
        &s,
        format!("ipv6_ext: [{{hop_by_hop: {{router_alert: true}}}}, {{routing: {{segments: [\"2001:db8:a::1\", \"2001:db8:b::1\"]}}}}, {{fragment: {{id: 7}}}}, {{destination: {{}}}}]\n{mixed}"),
    )
    .unwrap();
    let out = d.join("out.pcap");
    sent(FLOWS, &s, &out);
    let rows = tshark_fields(
        &out,
        &[
            "ipv6.dst",
            "ipv6.nxt",
            "ipv6.routing.segleft",
            "ipv6.fraghdr.ident",
            "ipv6.opt.router_alert",
            "udp.checksum.status",
            "tcp.checksum.status",
            "icmpv6.checksum.status",
            "ip.checksum.status",
            "_ws.malformed",
        ],
    );
    let (mut v6, mut v4) = (0, 0);
    for r in &rows {
        assert!(r[9].is_empty(), "malformed: {r:?}");
        if r[0].is_empty() {
            v4 += 1;
            assert_eq!(r[8], "1", "an IPv4 flow keeps its header: {r:?}");
            continue;
        }
        v6 += 1;
        assert_eq!(
            &r[..5],
            ["2001:db8:a::1", "0", "2", "0x00000007", "0"],
            "{r:?}"
        );
        let sums: Vec<&str> = r[5..8]
            .iter()
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .collect();
        assert_eq!(sums, ["1"], "one L4 checksum, good: {r:?}");
    }
    assert_eq!((v6, v4), (23, 1055));
    // Bad headers are refused naming the key.
    refused(
        FLOWS,
        &s,
        &format!("ipv6_ext: [{{routing: {{segments: []}}}}]\n{mixed}"),
        "ipv6_ext[0].routing.segments: 0 segments",
    );
}

/// A template from a capture (scapy writes it: a TCP SYN with IP and TCP
/// options behind a VLAN tag, which the session builder cannot make) sent
/// by a meta-flow of 10 flows: tshark finds the template's options in
/// every frame, each flow's own address and port, the fields as asked and
/// every checksum good. Bad templates are refused naming the key.
#[test]
fn a_capture_template_is_sent_with_its_flows_and_fields() {
    if !require_scapy("a_capture_template_is_sent_with_its_flows_and_fields")
        || !sluice_testkit::require("tshark", "a template read back by tshark")
    {
        return;
    }
    let d = tmpdir("encap-template");
    let pcap = d.join("t.pcap");
    let script = format!(
        "from scapy.all import *\n\
         syn = Ether(dst='02:00:00:00:00:99', src='02:00:00:00:00:01')/Dot1Q(vlan=7)/\
         IP(src='10.5.0.1', dst='10.5.0.2', options=[IPOption_Router_Alert()])/\
         TCP(sport=40000, dport=443, flags='S', options=[('MSS', 1460), ('WScale', 7), ('SAckOK', b''), ('Timestamp', (1, 0))])\n\
         wrpcap('{}', [Ether()/IP()/UDP(), syn])\n",
        pcap.display()
    );
    let o = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s = d.join("s.yaml");
    std::fs::write(
        &s,
        "seed: 3\ntemplate: {pcap: t.pcap, frame: 2}\n\
         fields:\n  - {field: vlan.id, from: 200, to: 209}\n  - {field: ip.id, per: packet}\n  - {field: ip.ttl, op: list, values: [9, 99]}\n\
         flows:\n  - {packets: 3, pps: 1000, count: 10, period: 1ms, step: {src: 1, sport: 1}}\n",
    )
    .unwrap();
    let out = d.join("out.pcap");
    sent(FLOWS, &s, &out);
    let rows = tshark_fields(
        &out,
        &[
            "ip.src",
            "tcp.srcport",
            "vlan.id",
            "ip.ttl",
            "ip.id",
            "tcp.options.mss_val",
            "tcp.options.wscale.shift",
            "ip.hdr_len",
            "tcp.dstport",
            "ip.checksum.status",
            "tcp.checksum.status",
            "_ws.malformed",
        ],
    );
    assert_eq!(rows.len(), 30);
    let mut ids = std::collections::BTreeSet::new();
    for r in &rows {
        let k: u32 = r[1].parse::<u32>().unwrap() - 40000;
        assert!(k < 10, "{r:?}");
        assert_eq!(r[0], format!("10.5.0.{}", 1 + k), "{r:?}");
        assert_eq!(r[2], (200 + k).to_string(), "{r:?}");
        assert_eq!(r[3], if k.is_multiple_of(2) { "9" } else { "99" }, "{r:?}");
        assert_eq!(&r[5..11], ["1460", "7", "24", "443", "1", "1"], "{r:?}");
        assert!(r[11].is_empty(), "malformed: {r:?}");
        ids.insert(r[4].clone());
    }
    assert_eq!(ids.len(), 30, "one IP ID per packet: {ids:?}");
    // The example session's template (a description) sends as documented.
    sent(FLOWS, &repo("examples/sessions/template.yaml"), &out);
    let rows = tshark_fields(&out, &["vlan.id", "udp.checksum.status", "_ws.malformed"]);
    assert_eq!(rows.len(), 1000);
    assert!(
        rows.iter().all(|r| r[1] == "1" && r[2].is_empty()),
        "{:?}",
        rows[0]
    );
    // A hex template without an IP packet: the flows give timing only, a
    // field by offset counts the packets.
    std::fs::write(
        &s,
        format!(
            "template: {{hex: \"02:00:00:00:00:99 02:00:00:00:00:01 88b5 {}\"}}\n\
             fields: [{{offset: 16, bits: 16, per: packet}}]\nflows:\n  - {{packets: 5, pps: 1000}}\n",
            "00".repeat(46)
        ),
    )
    .unwrap();
    sent(FLOWS, &s, &out);
    let frames = frames_of(&out);
    assert_eq!(frames.len(), 5);
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(f.len(), 60);
        assert_eq!(&f[12..14], [0x88, 0xb5]);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]) as usize, k);
    }
    for (text, want) in [
        ("template: {pcap: t.pcap, frame: 3}\nflows:\n  - {packets: 1}\n", "template.frame: 3: "),
        ("template: {hex: \"00zz\"}\nflows:\n  - {packets: 1}\n", "template.hex: hex digit 2: 'z' is not a hex digit"),
        ("template: {pcap: t.pcap, frame: 2}\nflows:\n  - {proto: udp4, packets: 1}\n", "flows[0].proto: udp4: the template's packet is tcp4"),
        ("template: {pcap: t.pcap, frame: 2}\nflows:\n  - {packets: 1, payload: 9}\n", "flows[0]: payload, prefix, bytes and vary.payload"),
        ("template: {pcap: t.pcap, frame: 2}\nfields: [{field: vxlan.vni}]\nflows:\n  - {packets: 1}\n", "fields[0].field: 'vxlan.vni': the template has no such field"),
        ("template: {pcap: t.pcap, frame: 2}\nencap: [{vlan: 3}]\nflows:\n  - {packets: 1}\n", "encap: a template carries its own headers"),
        ("template: {hex: \"00\", describe: \"udp4\"}\nflows:\n  - {packets: 1}\n", "template: give one of hex, pcap (with frame) or describe"),
        ("template: {describe: \"ip4 ipproto=47 payload=10\"}\nflows:\n  - {ipproto: 50, packets: 1}\n", "flows[0].ipproto: the template's packet is protocol 47"),
        ("template: {hex: \"ffffffffffff020000000001 88b5 0000\"}\nflows:\n  - {packets: 2, pps: 9, step: {src: 1}}\n", "flows[0].step.src: the template carries no IP packet"),
        ("template: {describe: \"udp4 payload=99999\"}\nflows:\n  - {packets: 1}\n", "template.describe: payload: 99999: over 9216 bytes"),
    ] {
        refused(FLOWS, &s, text, want);
    }
}

/// A profile's packets with layers, IPv6 extension headers and fields:
/// tshark finds each flow's VLAN id (per flow), a new source address per
/// packet, the router alert, and every checksum good. A field the
/// packet's layers lack is refused naming the key.
#[test]
fn a_profile_sends_its_layers_extension_headers_and_fields() {
    if !sluice_testkit::require("tshark", "a profile's fields read back by tshark") {
        return;
    }
    let d = tmpdir("encap-profile");
    let p = d.join("p.yaml");
    let text = "seed: 2\npackets: 40\nrate: 10k\nipd: {dist: constant}\nsize: {dist: constant, bytes: 200}\n\
                packet:\n  proto: udp6\n  src: \"2001:db8::1\"\n  dst: \"2001:db8::2\"\n  flows: 4\n  encap: [{vlan: 1}]\n\
                \x20 ipv6_ext: [{hop_by_hop: {router_alert: true}}]\n\
                \x20 fields: [{field: vlan.id, from: 100, to: 103}, {field: ip.src, op: random, per: packet}]\n";
    std::fs::write(&p, text).unwrap();
    let out = d.join("out.pcap");
    sent(PROFILE, &p, &out);
    tagged_random_sources(&out, &[], &[]);
    refused(
        PROFILE,
        &p,
        &text.replace("vlan.id", "vxlan.vni"),
        "packet.fields[0].field: 'vxlan.vni': the encap has no vxlan layer",
    );
}

/// The 40 frames of 4 IPv6 flows in `out`, as tshark reads them: flow k
/// (source port 1024 + k) in VLAN 100 + k, a router alert, `more` fields
/// equal to `want`, good checksums, 200 bytes, a random source address
/// per packet.
fn tagged_random_sources(out: &std::path::Path, more: &[&str], want: &[&str]) {
    let mut fields = vec![
        "udp.srcport",
        "vlan.id",
        "ipv6.src",
        "ipv6.opt.router_alert",
    ];
    fields.extend_from_slice(more);
    fields.extend_from_slice(&["udp.checksum.status", "frame.len", "_ws.malformed"]);
    let rows = tshark_fields(out, &fields);
    assert_eq!(rows.len(), 40);
    let mut expected = vec!["0"];
    expected.extend_from_slice(want);
    expected.extend_from_slice(&["1", "200", ""]);
    let mut srcs = std::collections::BTreeSet::new();
    for r in &rows {
        let k: u16 = r[0].parse::<u16>().unwrap() - 1024;
        assert_eq!(r[1], (100 + k).to_string(), "{r:?}");
        assert_eq!(&r[3..], expected, "{r:?} (the last: malformed)");
        srcs.insert(r[2].clone());
    }
    assert_eq!(srcs.len(), 40, "a random source per packet");
}

/// `profile onoff` takes layers, extension headers and fields from its
/// command line, and tshark reads them back as asked.
#[test]
fn onoff_sends_its_layers_extension_headers_and_fields() {
    if !sluice_testkit::require("tshark", "onoff's fields read back by tshark") {
        return;
    }
    let d = tmpdir("encap-onoff");
    let out = d.join("out.pcap");
    let to = format!("pcap:{}", out.display());
    let onoff = |extra: &[&str]| {
        let mut args = onoff_1ms(&["--to", &to]);
        args.extend_from_slice(extra);
        run(&args)
    };
    let o = onoff(&[
        "--flows",
        "4",
        "--src",
        "2001:db8::1",
        "--dst",
        "2001:db8::2",
        "--size",
        "200",
        "--encap",
        "vlan:1",
        "--ipv6-ext",
        "hbh:router_alert",
        "--ipv6-ext",
        "routing:2001:db8::9+2001:db8::2",
        "--field",
        "vlan.id,from=100,to=103",
        "--field",
        "ip.src,op=random,per=packet",
        "--limit",
        "40",
        "--clock",
        "virtual",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    tagged_random_sources(&out, &["ipv6.routing.segleft"], &["2"]);
    let o = onoff(&["--field", "vxlan.vni", "--limit", "1"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--field: fields[0].field: 'vxlan.vni'"),
        "{}",
        stderr(&o)
    );
}
