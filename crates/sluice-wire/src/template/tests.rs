//! The template's tests: frames from outside, their fields varied.

use super::*;
use crate::fields::tests::check_all;

fn spec(text: &str) -> FieldSpec {
    // `{key: value}` with bare words, as a session writes them.
    let json = regex_lite(text);
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// Quotes the bare words of a one-line YAML mapping (JSON numbers
/// stay numbers).
fn regex_lite(text: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |w: &mut String, out: &mut String| {
        if !w.is_empty() {
            if w.parse::<u64>().is_ok() {
                out.push_str(w);
            } else {
                out.push_str(&format!("\"{w}\""));
            }
            w.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() || matches!(c, '.' | '[' | ']' | '_') {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

const NESTED: &str = "udp4 src=10.1.0.1 dst=10.1.0.2 sport=1000 dport=53 payload=40 \
    encap=svlan:100/vlan:5/vxlan:vni=7,src=192.0.2.1,dst=192.0.2.2/vlan:9";

#[test]
fn a_description_is_looked_into_as_the_session_names_its_layers() {
    let t = Template::new(describe(NESTED).unwrap(), false).unwrap();
    let names: Vec<String> = t
        .names
        .iter()
        .map(|n| format!("{}[{}].{}", n.kind, n.nth, n.key))
        .collect();
    for want in [
        "svlan[0].id",
        "vlan[0].id",
        "vlan[1].id",
        "vxlan[0].vni",
        "vxlan[0].src",
    ] {
        assert!(names.contains(&want.to_string()), "{want} in {names:?}");
    }
    let e = t.ends().unwrap();
    assert_eq!(
        (e.src, e.dst, e.sport, e.dport),
        (
            "10.1.0.1".parse().unwrap(),
            "10.1.0.2".parse().unwrap(),
            1000,
            53
        )
    );
    assert_eq!(t.inner().unwrap().flow_proto(), FlowProto::Udp);
    // The VNI is where the VXLAN header holds it.
    let ((at, _, _), bits) = t.place("vxlan.vni").unwrap();
    assert_eq!((bits, &t.bytes()[at..at + 3]), (24, &[0, 0, 7][..]));
    let ((at, _, _), _) = t.place("vlan[1].id").unwrap();
    assert_eq!(
        u16::from_be_bytes([t.bytes()[at], t.bytes()[at + 1]]) & 0xfff,
        9
    );
}

#[test]
fn fields_and_ends_written_into_a_template_keep_every_checksum() {
    for (text, fields) in [
        (
            NESTED,
            &[
                "{field: vxlan.vni, per: packet}",
                "{field: ip.src, op: random}",
                "{field: sport, per: packet, from: 1, to: 9}",
                "{offset: 120, bits: 13}",
                "{field: vlan[1].id, from: 10, to: 20}",
                "{field: ip.id, per: packet}",
            ][..],
        ),
        (
            "tcp6 payload=20 encap=gre:key=5,src=2001:db8::1,dst=2001:db8::2",
            &[
                "{field: gre.key}",
                "{field: ip.dst, op: random}",
                "{field: dport}",
                "{field: gre.dst, op: random}",
                "{field: ip.tos, per: packet}",
            ][..],
        ),
        (
            "icmp4 payload=8 encap=gtpu:teid=9,src=192.0.2.1,dst=192.0.2.2",
            &[
                "{field: gtpu.teid, per: packet}",
                "{field: ip.ttl}",
                "{offset: 80, bits: 16}",
            ][..],
        ),
        (
            "ip6 ipproto=99 payload=30",
            &["{field: ip.src, per: packet}"][..],
        ),
    ] {
        let t = Template::new(describe(text).unwrap(), false).unwrap();
        check_all(t.bytes()).unwrap();
        let specs: Vec<FieldSpec> = fields.iter().map(|f| spec(f)).collect();
        let e = t.engine(&specs, 3).unwrap();
        let mut ends = t.ends().unwrap();
        ends.sport ^= 0x5a5a;
        ends.dport ^= 0x0f0f;
        let mut plain = Vec::new();
        t.flow_frame(&mut plain, &ends, None, 0);
        check_all(&plain).unwrap_or_else(|e| panic!("{text}: ends: {e}"));
        let (mut base, mut seen) = (Vec::new(), std::collections::HashSet::new());
        for k in 0..20u64 {
            if k % 4 == 0 {
                // A flow of 4 packets.
                t.flow_frame(&mut base, &ends, Some(&e), k / 4);
                check_all(&base).unwrap_or_else(|e| panic!("{text}: flow {k}: {e}"));
            }
            let mut out = Vec::new();
            t.write(&mut out, &base, Some(&e), k);
            assert_eq!(out.len(), t.bytes().len());
            check_all(&out).unwrap_or_else(|e| panic!("{text}: packet {k}: {e}"));
            seen.insert(out);
        }
        assert!(seen.len() > 4, "{text}: the fields vary the frames");
    }
}

#[test]
fn fields_by_offset_over_addresses_and_payload_keep_every_checksum() {
    // Windows of every width at even and odd offsets over the bytes a
    // pseudo header and an L4 checksum cover, behind a tunnel.
    let mut x = 1u64;
    let mut draw = |n: usize| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize % n
    };
    for text in [
        "udp4 payload=40 encap=vxlan:vni=7,src=192.0.2.1,dst=192.0.2.2",
        "tcp6 payload=40 encap=gre:key=5,src=2001:db8::1,dst=2001:db8::2",
    ] {
        let t = Template::new(describe(text).unwrap(), false).unwrap();
        let i = *t.inner().unwrap();
        let l4 = i.l4.unwrap();
        let addrs = if i.v6 {
            i.ip + 8..i.ip + 40
        } else {
            i.ip + 12..i.ip + 20
        };
        let payload = l4 + if i.proto == PROTO_TCP { 20 } else { 8 };
        let mut changed = 0;
        for d in 0..300u64 {
            let bits = 1 + draw(64);
            let n = bits.div_ceil(8);
            let r = if d % 2 == 0 {
                addrs.clone()
            } else {
                payload..t.bytes().len()
            };
            let at = r.start + draw(r.len() - n + 1);
            let f = format!("{{offset: {at}, bits: {bits}, op: random, per: packet}}");
            let e = t.engine(&[spec(&f)], d).unwrap();
            let mut out = Vec::new();
            t.write(&mut out, t.bytes(), Some(&e), d);
            check_all(&out).unwrap_or_else(|err| panic!("{text}: {f}: {err}"));
            changed += usize::from(out != t.bytes());
        }
        assert!(changed > 250, "{text}: {changed} of 300 frames changed");
    }
}

#[test]
fn a_wrong_checksum_in_a_template_is_computed_or_kept_as_asked() {
    let mut b = describe("udp4 payload=10").unwrap();
    b[14 + 10] ^= 0xff; // the IPv4 header checksum
    b[14 + 20 + 6] ^= 0x01; // the UDP checksum
    assert!(check_all(&b).is_err());
    check_all(Template::new(b.clone(), true).unwrap().bytes()).unwrap();
    let kept = Template::new(b.clone(), false).unwrap();
    assert_eq!(kept.bytes(), &b[..]);
    let e = kept
        .engine(&[spec("{field: ip.src, per: packet}")], 1)
        .unwrap();
    let mut out = Vec::new();
    kept.write(&mut out, kept.bytes(), Some(&e), 5);
    assert!(check_all(&out).is_err(), "a wrong checksum stays wrong");
    // VXLAN's UDP checksum of 0 is none: fixed, it stays none (as
    // tcprewrite's --fixcsum leaves it), the inner ones are computed.
    let mut b = describe("udp4 payload=10 encap=vxlan:vni=3,src=192.0.2.1,dst=192.0.2.2").unwrap();
    assert_eq!(b[40..42], [0, 0]);
    b[90] ^= 0x01; // the inner UDP checksum (bytes 90..92)
    let fixed = Template::new(b, true).unwrap();
    assert_eq!(fixed.bytes()[40..42], [0, 0]);
    check_all(fixed.bytes()).unwrap();
}

#[test]
fn bad_templates_and_fields_are_refused_naming_what() {
    for (hex, want) in [
        ("0x00112233445566778899aabbcc", "13 bytes"),
        ("00112g", "'g' is not a hex digit"),
        ("001", "odd"),
    ] {
        let e = parse_hex(hex).and_then(|b| Template::new(b, true).map(|_| ()));
        assert!(e.unwrap_err().contains(want), "{hex}");
    }
    // A hex dump's separators are taken.
    assert_eq!(
        parse_hex("0x00:11-22 33\n44").unwrap(),
        [0, 0x11, 0x22, 0x33, 0x44]
    );
    let arp = Template::new(vec![0xff; 60], true).unwrap();
    assert!(arp.ends().is_none());
    for (f, want) in [
        ("{field: ip.src}", "carries no IP packet"),
        ("{field: vxlan.vni}", "no such field"),
        ("{offset: 59, bits: 16}", "past the template's 60 bytes"),
    ] {
        let e = arp.engine(&[spec(f)], 1).unwrap_err();
        assert!(e.contains(want), "{f}: {e}");
    }
    let icmp = Template::new(describe("icmp6").unwrap(), true).unwrap();
    let e = icmp.engine(&[spec("{field: dport}")], 1).unwrap_err();
    assert!(
        e.contains("fields[0].field: 'dport': the template's innermost packet has no ports"),
        "{e}"
    );
    for (d, want) in [
        ("sctp4", "not a protocol"),
        ("udp4 src=::1", "not the addresses of udp4"),
        ("udp4 payload=9999", "over 9216"),
        ("udp4 vni=3", "'vni' is not a key"),
        (
            "udp4 encap=vxlan:vni=99999999,src=1.1.1.1,dst=1.1.1.2",
            "encap",
        ),
    ] {
        let e = describe(d).unwrap_err();
        assert!(e.contains(want), "{d}: {e}");
    }
}

#[test]
fn routes_zero_sums_and_trailers_are_kept_as_receivers_read_them() {
    // A segment routing header: the pseudo header takes the final
    // segment, so the header's destination varies without the UDP sum.
    let x: Vec<crate::ip6ext::Ipv6Ext> =
        serde_json::from_str(r#"[{"routing": {"segments": ["2001:db8:a::1"]}}]"#).unwrap();
    let stack = std::sync::Arc::new(crate::ip6ext::Ipv6ExtStack::new(&x).unwrap());
    let ends = FlowEnds {
        src: "2001:db8::1".parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
        sport: 5,
        dport: 6,
    };
    let h = FlowHeaders::new(
        MacAddr::LOCAL_SRC,
        MacAddr::LOCAL_DST,
        ends,
        FlowProto::Udp,
        false,
    )
    .unwrap()
    .with_ipv6_ext(&stack);
    let mut routed = Vec::new();
    h.write(
        &mut routed,
        &PacketFields {
            index: 0,
            last: false,
            payload_len: 20,
            tcp_seq: 0,
            prefix: &[],
            stamp: None,
        },
    );
    // A VXLAN frame over IPv6 with no outer UDP sum, and a trailer
    // behind a VXLAN frame over IPv4 (its IP length ends before it).
    let mut zero =
        describe("udp4 payload=20 encap=vxlan:vni=3,src=2001:db8::7,dst=2001:db8::8").unwrap();
    zero[14 + 40 + 6..14 + 40 + 8].fill(0);
    let mut trailer =
        describe("udp4 payload=20 encap=vxlan:vni=3,src=192.0.2.1,dst=192.0.2.2").unwrap();
    let n = trailer.len();
    trailer.extend_from_slice(&[0xee; 8]);
    // The header's destination is not the pseudo header's: varying it
    // leaves the UDP checksum as it was (a verifier that does not
    // follow the segments cannot tell).
    let t = Template::new(routed.clone(), false).unwrap();
    let at = t.inner().unwrap().l4.unwrap() + 6;
    let e = t
        .engine(&[spec("{field: ip.dst, op: random, per: packet}")], 1)
        .unwrap();
    for k in 1..6u64 {
        let mut out = Vec::new();
        t.write(&mut out, t.bytes(), Some(&e), k);
        assert_ne!(out[46..54], routed[46..54]);
        assert_eq!(out[at..at + 2], routed[at..at + 2], "packet {k}");
    }
    for (frame, fields) in [
        (routed, &["{field: ip.src, per: packet}"][..]),
        (
            zero,
            &[
                "{field: ip.src, per: packet}",
                "{field: vxlan.vni, per: packet}",
            ][..],
        ),
        (
            trailer.clone(),
            &[
                "{field: ip.id, per: packet}",
                "{offset: 100, bits: 8, per: packet}",
            ][..],
        ),
    ] {
        let t = Template::new(frame.clone(), false).unwrap();
        let specs: Vec<FieldSpec> = fields.iter().map(|f| spec(f)).collect();
        let e = t.engine(&specs, 1).unwrap();
        for k in 1..6u64 {
            let mut out = Vec::new();
            t.write(&mut out, t.bytes(), Some(&e), k);
            if frame[14 + 40 + 6..14 + 40 + 8] == [0, 0] && frame[12..14] == [0x86, 0xdd] {
                // A verifier calls IPv6's 0 wrong; the tunnel's packet
                // (behind 8 bytes of VXLAN) is checked on its own.
                assert_eq!(out[14 + 40 + 6..14 + 40 + 8], [0, 0], "no sum stays none");
                check_all(&out[14 + 40 + 16..]).unwrap_or_else(|e| panic!("{fields:?}: {e}"));
            } else {
                check_all(&out).unwrap_or_else(|e| panic!("{fields:?}: {e}"));
            }
            if out.len() == n + 8 {
                assert_eq!(out[n..], [0xee; 8], "the trailer is not the packet's");
            }
        }
    }
    // The trailer is not looked into as the inner packet's bytes.
    let t = Template::new(trailer, false).unwrap();
    assert!(t.place("ip.id").is_ok());
    for d in [
        "udp4 payload=18446744073709551615",
        "udp4 payload=99999999999999999999",
    ] {
        assert!(describe(d).unwrap_err().starts_with("payload"), "{d}");
    }
}
