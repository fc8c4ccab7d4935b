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
    ];
    let mut json = Vec::new();
    for (k, (text, scapy)) in cases.iter().enumerate() {
        let s = d.join(format!("s{k}.yaml"));
        std::fs::write(&s, text).unwrap();
        let out = d.join(format!("s{k}.pcap"));
        let o = run_to_pcap(&["flows", "run", s.to_str().unwrap()], &out, &[]);
        assert!(o.status.success(), "case {k}: {}", stderr(&o));
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
    assert_eq!(text.matches("4 frames equal scapy's").count(), 6, "{text}");
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
    let o = run_to_pcap(&["flows", "run", s.to_str().unwrap()], &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Command::new("tshark")
        .args([
            "-r",
            out.to_str().unwrap(),
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args(["-T", "fields", "-E", "occurrence=a"])
        .args([
            "-e",
            "udp.srcport",
            "-e",
            "vxlan.vni",
            "-e",
            "vlan.id",
            "-e",
            "ip.src",
        ])
        .args([
            "-e",
            "ip.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "_ws.malformed",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut by_flow: std::collections::BTreeMap<
        String,
        std::collections::BTreeSet<(String, String, String)>,
    > = Default::default();
    let mut frames = 0;
    for line in text.lines() {
        let r: Vec<&str> = line.split('\t').collect();
        frames += 1;
        // The inner UDP source port names the flow (the outer one is VXLAN's).
        let inner_sport = r[0].split(',').nth(1).unwrap().to_string();
        let inner_src = r[3].split(',').nth(1).unwrap().to_string();
        by_flow.entry(inner_sport).or_default().insert((
            r[1].to_string(),
            r[2].to_string(),
            inner_src,
        ));
        assert_eq!(r[4], "1,1", "{line}");
        assert_eq!(r[5], "3,1", "outer UDP none over IPv4, inner good: {line}");
        assert!(r[6].is_empty(), "malformed: {line}");
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
        stderr(&o).contains("a session with fields or ipv6_ext is not compared yet"),
        "{}",
        stderr(&o)
    );
    // A bad field is refused naming the key.
    std::fs::write(&s, "encap: [{vlan: 1}]\nfields: [{field: vxlan.vni}]\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}\n").unwrap();
    let o = run_to_pcap(
        &["flows", "run", s.to_str().unwrap()],
        &d.join("x.pcap"),
        &[],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("fields[0].field: 'vxlan.vni': the encap has no vxlan layer"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&s, "fields: [{field: sport}]\nflows:\n  - {proto: icmp4, src: 10.0.0.1, dst: 10.0.0.2, packets: 1}\n").unwrap();
    let o = run_to_pcap(
        &["flows", "run", s.to_str().unwrap()],
        &d.join("x.pcap"),
        &[],
    );
    assert!(
        stderr(&o).contains("flows[0]") && stderr(&o).contains("icmp4 flows have no ports"),
        "{}",
        stderr(&o)
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
    let o = run_to_pcap(&["flows", "run", s.to_str().unwrap()], &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Command::new("tshark")
        .args([
            "-r",
            out.to_str().unwrap(),
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
        ])
        .args(["-T", "fields", "-E", "occurrence=a"])
        .args([
            "-e",
            "ipv6.dst",
            "-e",
            "ipv6.nxt",
            "-e",
            "ipv6.routing.segleft",
            "-e",
            "ipv6.fraghdr.ident",
        ])
        .args([
            "-e",
            "ipv6.opt.router_alert",
            "-e",
            "udp.checksum.status",
            "-e",
            "tcp.checksum.status",
        ])
        .args([
            "-e",
            "icmpv6.checksum.status",
            "-e",
            "ip.checksum.status",
            "-e",
            "_ws.malformed",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let (mut v6, mut v4) = (0, 0);
    for line in text.lines() {
        let r: Vec<&str> = line.split('\t').collect();
        assert!(r[9].is_empty(), "malformed: {line}");
        if r[0].is_empty() {
            v4 += 1;
            assert_eq!(r[8], "1", "an IPv4 flow keeps its header: {line}");
            continue;
        }
        v6 += 1;
        assert_eq!(
            &r[..5],
            ["2001:db8:a::1", "0", "2", "0x00000007", "0"],
            "{line}"
        );
        let sums: Vec<&str> = r[5..8].iter().copied().filter(|v| !v.is_empty()).collect();
        assert_eq!(sums, ["1"], "one L4 checksum, good: {line}");
    }
    assert_eq!((v6, v4), (23, 1055));
    // Bad headers are refused naming the key.
    std::fs::write(
        &s,
        format!("ipv6_ext: [{{routing: {{segments: []}}}}]\n{mixed}"),
    )
    .unwrap();
    let o = run_to_pcap(
        &["flows", "run", s.to_str().unwrap()],
        &d.join("x.pcap"),
        &[],
    );
    assert!(
        stderr(&o).contains("ipv6_ext[0].routing.segments: 0 segments"),
        "{}",
        stderr(&o)
    );
}
