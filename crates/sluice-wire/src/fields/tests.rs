//! The field engine's tests (`check_all`: the frame's checksums, for the other modules' tests too).

use super::*;
use crate::flowpkt::{FlowEnds, FlowProto, PacketFields};
use crate::payload::verify_checksums;
use crate::MacAddr;
use std::sync::Arc;

fn spec(text: &str) -> FieldSpec {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn layers(text: &[&str]) -> Vec<EncapLayer> {
    text.iter().map(|t| t.parse().unwrap()).collect()
}

fn headers(layers: &[EncapLayer], inner: (&str, &str), proto: FlowProto) -> FlowHeaders {
    varied_headers(layers, inner, proto, None)
}

/// A flow's headers as a source builds them, its fields varied for
/// (flow, packet) by `e`.
fn varied_headers(
    layers: &[EncapLayer],
    inner: (&str, &str),
    proto: FlowProto,
    e: Option<(&FieldEngine, u64, u64)>,
) -> FlowHeaders {
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let mut ends = FlowEnds {
        src: inner.0.parse().unwrap(),
        dst: inner.1.parse().unwrap(),
        sport: 4000,
        dport: 80,
    };
    if let Some((e, flow, packet)) = e {
        let ports = matches!(proto, FlowProto::Udp | FlowProto::Tcp);
        e.vary_ends(&mut ends, ports, flow, packet);
    }
    let mut h = FlowHeaders::new(mac, mac, ends, proto, false).unwrap();
    if let Some((e, flow, packet)) = e {
        e.vary(&mut h, flow, packet);
    }
    if layers.is_empty() {
        h
    } else {
        h.with_encap(&Arc::new(EncapStack::new(layers, mac, mac).unwrap()))
    }
}

fn fields(index: u64) -> PacketFields<'static> {
    PacketFields {
        index,
        last: false,
        payload_len: 37,
        tcp_seq: 5,
        prefix: b"abc",
        stamp: Some(2),
    }
}

fn build(h: &FlowHeaders, index: u64) -> Vec<u8> {
    let mut out = Vec::new();
    h.write(&mut out, &fields(index));
    out
}

/// A frame as a source builds it: the template varied, then written
/// with the other fields.
fn build_varied(
    flow_of: (&[EncapLayer], (&str, &str), FlowProto),
    e: &FieldEngine,
    index: u64,
    flow: u64,
    packet: u64,
) -> Vec<u8> {
    let (layers, inner, proto) = flow_of;
    let h = varied_headers(layers, inner, proto, Some((e, flow, packet)));
    let mut out = Vec::new();
    h.write_varied(&mut out, &fields(index), e, flow, packet);
    out
}

/// Every checksum of a frame and of each packet its tunnels carry.
pub(crate) fn check_all(frame: &[u8]) -> Result<usize, String> {
    let mut f = frame.to_vec();
    let mut depth = 0;
    loop {
        verify_checksums(&f).map_err(|e| format!("depth {depth}: {e:?}"))?;
        let Some(t) = crate::tunnel::find(&f) else {
            return Ok(depth);
        };
        depth += 1;
        f = match t.inner {
            crate::tunnel::InnerStart::Ethernet => f[t.offset..].to_vec(),
            start => {
                let ty: u16 = if start == crate::tunnel::InnerStart::Ipv4 {
                    0x0800
                } else {
                    0x86dd
                };
                let mut e = vec![0u8; 12];
                e.extend_from_slice(&ty.to_be_bytes());
                e.extend_from_slice(&f[t.offset..]);
                e
            }
        };
    }
}

#[test]
fn every_named_field_changes_with_its_checksums_kept_right() {
    let stacks = [
        layers(&["svlan:10", "vlan:20", "mpls:100", "mpls:200"]),
        layers(&["vlan:3", "vxlan:vni=7,src=2001:db8:9::1,dst=2001:db8:9::2"]),
        layers(&["vxlan:vni=7,src=192.0.2.1,dst=192.0.2.2"]),
        layers(&["gre:src=192.0.2.1,dst=192.0.2.2,key=4,seq"]),
        layers(&["gtpu:teid=1,qfi=3,src=2001:db8:9::1,dst=2001:db8:9::2"]),
        layers(&[
            "ipip:src=192.0.2.1,dst=192.0.2.2",
            "gtpu:teid=1,src=192.0.2.3,dst=192.0.2.4",
        ]),
    ];
    let names = [
        "eth.src",
        "ip.src",
        "ip.dst",
        "ip.ttl",
        "ip.tos",
        "ip.id",
        "sport",
        "dport",
        "vlan.id",
        "vlan.pcp",
        "svlan.id",
        "mpls.label",
        "mpls[1].tc",
        "mpls.ttl",
        "vxlan.vni",
        "vxlan.sport",
        "vxlan.src",
        "vxlan.dst",
        "vxlan.ttl",
        "gre.key",
        "gre.dst",
        "gtpu.teid",
        "gtpu.qfi",
        "gtpu.src",
        "ipip.dst",
        "gtpu[0].ttl",
    ];
    let mut applied = 0;
    for stack in &stacks {
        for name in names {
            let Ok(engine) = FieldEngine::new(
                &[spec(&format!(
                    r#"{{"field": "{name}", "op": "random", "from": 1, "to": 50}}"#
                ))],
                stack,
                9,
            ) else {
                continue;
            };
            for inner in [("10.0.0.1", "10.0.0.2"), ("2001:db8::1", "2001:db8::2")] {
                for proto in [
                    FlowProto::Udp,
                    FlowProto::Tcp,
                    FlowProto::Icmp,
                    FlowProto::Ip(253),
                ] {
                    let h = headers(stack, inner, proto);
                    for flow in 0..8 {
                        let plain = build(&h, flow);
                        let f = build_varied((stack, inner, proto), &engine, flow, flow, flow);
                        let what = format!("{stack:?} {name} {inner:?} {proto:?} flow {flow}");
                        check_all(&f).unwrap_or_else(|e| panic!("{what}: {e}"));
                        let lay = h.layout();
                        if let Some((at, n, shift)) = window(engine.fields[0].target, &lay) {
                            let mut w = [0u8; 8];
                            w[8 - n..].copy_from_slice(&f[at..at + n]);
                            let got =
                                (u64::from_be_bytes(w) >> shift) & mask(engine.fields[0].bits);
                            assert_eq!(got, engine.fields[0].value(flow, 0), "{what}");
                            assert!((1..=50).contains(&got), "{what}: {got}");
                            applied += 1;
                        } else {
                            assert_eq!(f, plain, "{what}: a field the flow lacks is left alone");
                        }
                    }
                }
            }
        }
    }
    assert!(applied > 3000, "{applied}");
}

#[test]
fn fields_by_offset_across_headers_keep_every_checksum() {
    use crate::ip6ext::{Fragment, Ipv6Ext, Ipv6ExtStack, Routing};
    // IPv4 UDP: bytes 32..36 are the destination's low half (IPv4
    // header, pseudo header) and the source port (UDP header).
    let e = FieldEngine::new(
        &[spec(
            r#"{"offset": 32, "bits": 32, "op": "list", "values": ["0x12345678"]}"#,
        )],
        &[],
        1,
    )
    .unwrap();
    let udp: (&[EncapLayer], _, _) = (&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
    let f = build_varied(udp, &e, 0, 0, 0);
    assert_eq!(&f[32..36], &[0x12, 0x34, 0x56, 0x78]);
    verify_checksums(&f).unwrap();
    // IPv6 behind a routing header and a fragment header: the IPv6
    // destination (the segment, not in the pseudo header) at 38..54,
    // the final destination (segment list[0]) at 62..78, the fragment
    // header at 94..102, UDP from 102.
    let ext = Arc::new(
        Ipv6ExtStack::new(&[
            Ipv6Ext::Routing(Routing {
                segments: vec!["2001:db8:a::1".parse().unwrap()],
            }),
            Ipv6Ext::Fragment(Fragment { id: 1 }),
        ])
        .unwrap(),
    );
    let e = FieldEngine::new(
        &[
            spec(r#"{"offset": 46, "bits": 16, "op": "list", "values": [48879]}"#),
            spec(r#"{"offset": 70, "bits": 64, "op": "list", "values": ["0xdeadbeef01020304"]}"#),
            spec(r#"{"offset": 98, "bits": 48, "op": "list", "values": ["0xa1a2a3a4a5a6"]}"#),
        ],
        &[],
        1,
    )
    .unwrap();
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let ends = FlowEnds {
        src: "2001:db8::1".parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
        sport: 4000,
        dport: 80,
    };
    for proto in [FlowProto::Udp, FlowProto::Tcp, FlowProto::Icmp] {
        let h = FlowHeaders::new(mac, mac, ends, proto, false)
            .unwrap()
            .with_ipv6_ext(&ext);
        let mut f = Vec::new();
        h.write_varied(&mut f, &fields(0), &e, 0, 0);
        assert_eq!(
            &f[70..78],
            &0xdead_beef_0102_0304u64.to_be_bytes(),
            "{proto:?}"
        );
        assert_eq!(
            &f[98..104],
            &[0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6],
            "{proto:?}"
        );
        verify_checksums(&f).unwrap_or_else(|err| panic!("{proto:?}: {err:?}"));
        // The L4 checksum is checked there (an atomic fragment is whole).
        let n = f.len();
        f[n - 1] ^= 1;
        assert!(verify_checksums(&f).is_err(), "{proto:?}");
    }
}

#[test]
fn values_follow_the_op() {
    let seq = |text: &str, per_packet: bool| -> Vec<u64> {
        let e = FieldEngine::new(&[spec(text)], &[], 1).unwrap();
        (0..7)
            .map(|k| {
                let (flow, packet) = if per_packet { (0, k) } else { (k, 0) };
                let udp: (&[EncapLayer], _, _) = (&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
                let f = build_varied(udp, &e, 0, flow, packet);
                verify_checksums(&f).unwrap();
                u64::from(u16::from_be_bytes([f[34], f[35]]))
            })
            .collect()
    };
    assert_eq!(
        seq(r#"{"field": "sport", "from": 10, "to": 13}"#, false),
        [10, 11, 12, 13, 10, 11, 12]
    );
    assert_eq!(
        seq(
            r#"{"field": "sport", "from": 10, "to": 14, "step": 2, "per": "packet"}"#,
            true
        ),
        [10, 12, 14, 11, 13, 10, 12]
    );
    assert_eq!(
        seq(
            r#"{"field": "sport", "op": "dec", "from": 10, "to": 12}"#,
            false
        ),
        [12, 11, 10, 12, 11, 10, 12]
    );
    assert_eq!(
        seq(
            r#"{"field": "sport", "op": "list", "values": [5, 80, 443]}"#,
            false
        ),
        [5, 80, 443, 5, 80, 443, 5]
    );
    // Per packet, a per-flow field stays.
    assert_eq!(
        seq(r#"{"field": "sport", "from": 10, "to": 13}"#, true),
        [10; 7]
    );
    let r = seq(
        r#"{"field": "sport", "op": "random", "from": 1000, "to": 1999, "seed": 5}"#,
        false,
    );
    assert!(r.iter().all(|v| (1000..=1999).contains(v)), "{r:?}");
    assert_eq!(
        r,
        seq(
            r#"{"field": "sport", "op": "random", "from": 1000, "to": 1999, "seed": 5}"#,
            false
        )
    );
    assert_ne!(
        r,
        seq(
            r#"{"field": "sport", "op": "random", "from": 1000, "to": 1999, "seed": 6}"#,
            false
        )
    );
    // Addresses as text; an offset field.
    let e = FieldEngine::new(
        &[
            spec(r#"{"field": "ip.dst", "from": "10.1.0.0", "to": "10.1.255.255"}"#),
            spec(r#"{"offset": 42, "bits": 8, "op": "list", "values": ["0x7f"]}"#),
        ],
        &[],
        1,
    )
    .unwrap();
    let udp: (&[EncapLayer], _, _) = (&[], ("10.0.0.1", "10.0.0.2"), FlowProto::Udp);
    let f = build_varied(udp, &e, 0, 258, 0);
    assert_eq!(&f[30..34], &[10, 1, 1, 2]);
    assert_eq!(f[42], 0x7f);
    verify_checksums(&f).unwrap();
}

#[test]
fn bad_fields_are_refused_naming_the_key() {
    let vx = layers(&[
        "vlan:3",
        "vxlan:vni=7,src=192.0.2.1,dst=192.0.2.2",
        "gre:src=192.0.2.1,dst=192.0.2.2",
    ]);
    for (text, says) in [
        (
            r#"{"field": "vxlan.vni", "from": 1, "to": 16777216}"#,
            "fields[0].to: 16777216: over the field's 24 bits (at most 16777215)",
        ),
        (
            r#"{"field": "vlan.id", "from": 100, "to": 10}"#,
            "fields[0].from: 100 is above to 10 (a range does not wrap",
        ),
        (
            r#"{"field": "mpls.label"}"#,
            "fields[0].field: 'mpls.label': the encap has no mpls layer",
        ),
        (
            r#"{"field": "vlan[1].id"}"#,
            "'vlan[1].id': the encap has 1 vlan layer(s), [1] is past them",
        ),
        (r#"{"field": "gre.key"}"#, "this gre has no key"),
        (r#"{"field": "vxlan.teid"}"#, "vxlan has no field 'teid'"),
        (
            r#"{"field": "tcp.window"}"#,
            "'tcp.window': not a field (eth.src",
        ),
        (r#"{"offset": 10}"#, "fields[0].bits: missing"),
        (r#"{"offset": 10, "bits": 65}"#, "fields[0].bits: 65: 1..64"),
        (
            r#"{"field": "sport", "bits": 8}"#,
            "fields[0].bits: a named field has its own width",
        ),
        (
            r#"{"field": "sport", "op": "list", "values": []}"#,
            "fields[0].values: empty",
        ),
        (
            r#"{"field": "sport", "op": "list", "values": [70000]}"#,
            "fields[0].values[0]: 70000: over the field's 16 bits",
        ),
        (r#"{"field": "sport", "step": 0}"#, "fields[0].step: 0"),
        (
            r#"{"field": "sport", "values": [1]}"#,
            "fields[0].values: for op: list",
        ),
        (
            r#"{"field": "ip.src", "from": "nope"}"#,
            "fields[0].from: 'nope' is not a number",
        ),
        (r#"{}"#, "fields[0].field: give a field name or an offset"),
        (
            r#"{"field": "vlan.id", "to": 4095}"#,
            "fields[0].to: 4095: a VLAN id is 1..4094",
        ),
        (
            r#"{"field": "vlan[0].id", "op": "list", "values": [0]}"#,
            "fields[0].values[0]: 0: a VLAN id is 1..4094",
        ),
        (
            r#"{"offset": 18446744073709551615, "bits": 8}"#,
            "fields[0].offset: 18446744073709551615: past any frame",
        ),
    ] {
        let e = FieldEngine::new(&[spec(text)], &vx, 1).unwrap_err();
        assert!(e.contains(says), "{text}: {e}");
    }
    let many = vec![spec(r#"{"field": "sport"}"#); 17];
    assert!(FieldEngine::new(&many, &vx, 1)
        .unwrap_err()
        .contains("17 fields, at most 16"));
    assert!(serde_json::from_str::<FieldSpec>(r#"{"field": "sport", "opp": 1}"#).is_err());
}
