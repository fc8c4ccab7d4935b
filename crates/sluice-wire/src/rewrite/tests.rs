//! The header rewrite's tests.

use super::*;
use crate::checksum::{fold, ipv4_header_checksum, sum16};
use crate::payload::{complete_checksum, verify_checksums};

/// Ethernet + IPv4 + TCP or UDP with 6 payload bytes, checksums right.
fn frame(proto: u8) -> Vec<u8> {
    let l4_len = if proto == PROTO_TCP { 20 } else { 8 } + 6;
    let mut f = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0x10]);
    f.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
    f.extend_from_slice(&[
        0x12, 0x34, 0x40, 0, 64, proto, 0, 0, 10, 1, 2, 3, 192, 168, 7, 9,
    ]);
    f.extend_from_slice(&1234u16.to_be_bytes());
    f.extend_from_slice(&80u16.to_be_bytes());
    if proto == PROTO_TCP {
        f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        f.extend_from_slice(&(l4_len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
    }
    f.extend_from_slice(b"sluice");
    let c = ipv4_header_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    assert!(complete_checksum(&mut f));
    verify_checksums(&f).unwrap();
    f
}

fn all() -> HeaderRewrite {
    HeaderRewrite {
        enet_dmac: Some(MacAddr([0x02, 0, 0, 0, 0, 0x42])),
        enet_smac: Some(MacAddr([0x02, 0, 0, 0, 0, 0x43])),
        srcipmap: vec!["10.0.0.0/8:172.16.0.0/12".parse().unwrap()],
        dstipmap: vec!["192.168.7.9/32:10.77.0.2/32".parse().unwrap()],
        portmap: vec![
            "80:8080".parse().unwrap(),
            "1000-2000:3000".parse().unwrap(),
        ],
        ttl: Some("-10".parse().unwrap()),
        tos: Some(0xb8),
        ..HeaderRewrite::default()
    }
}

#[test]
fn every_field_changes_and_incremental_checksums_match_a_recompute() {
    for proto in [PROTO_TCP, PROTO_UDP] {
        let mut f = frame(proto);
        assert!(all().apply(&mut f));
        assert_eq!(f[..6], [0x02, 0, 0, 0, 0, 0x42]);
        assert_eq!(f[6..12], [0x02, 0, 0, 0, 0, 0x43]);
        assert_eq!(f[15], 0xb8);
        assert_eq!(f[22], 54);
        // 10.1.2.3 in 10/8 onto 172.16/12: host bits below /12 kept.
        assert_eq!(f[26..30], [172, 17, 2, 3]);
        assert_eq!(f[30..34], [10, 77, 0, 2]);
        assert_eq!(u16::from_be_bytes([f[34], f[35]]), 3000);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 8080);
        verify_checksums(&f).unwrap();
        let mut g = f.clone();
        HeaderRewrite {
            fixcsum: true,
            ..Default::default()
        }
        .apply(&mut g);
        assert_eq!(f, g, "incremental and full checksums differ");
    }
}

#[test]
fn a_wrong_checksum_stays_exactly_as_wrong_unless_fixcsum() {
    // The error, in one's complement arithmetic: wrong − right.
    let err = |wrong: &[u8], right: &[u8], at: usize| {
        let w = |f: &[u8]| u16::from_be_bytes([f[at], f[at + 1]]);
        crate::checksum::fold(u32::from(w(wrong)) + u32::from(!w(right)))
    };
    let mut f = frame(PROTO_TCP);
    let mut right = f.clone();
    f[50] ^= 0x5a; // the TCP checksum
    f[24] ^= 0x0f; // the IPv4 header checksum
    let before = (err(&f, &right, 50), err(&f, &right, 24));
    all().apply(&mut f);
    all().apply(&mut right);
    assert!(verify_checksums(&f).is_err());
    assert_eq!((err(&f, &right, 50), err(&f, &right, 24)), before);
    let fix = HeaderRewrite {
        fixcsum: true,
        ..all()
    };
    fix.apply(&mut f);
    verify_checksums(&f).unwrap();
}

#[test]
fn fixcsum_leaves_the_l4_checksum_to_a_device_that_computes_it() {
    let mut f = frame(PROTO_TCP);
    f[50] ^= 0x5a; // the TCP checksum
    f[24] ^= 0x0f; // the IPv4 header checksum
    let offload = HeaderRewrite {
        fixcsum: true,
        l4_csum_by_device: true,
        ..all()
    };
    offload.apply(&mut f);
    assert_eq!(fold(sum16(&f[14..34], 0)), 0, "the IPv4 header is fixed");
    assert!(
        verify_checksums(&f).is_err(),
        "the TCP checksum is not computed"
    );
    // What the sink and then the device do with the TCP checksum.
    let at = crate::payload::leave_checksum_to_device(&mut f).unwrap();
    let start = usize::from(at.start);
    let c = fold(sum16(&f[start..], 0));
    f[start + 16..start + 18].copy_from_slice(&c.to_be_bytes());
    verify_checksums(&f).unwrap();
}

#[test]
fn udp_without_checksum_keeps_none_and_unmatched_frames_stay() {
    let mut f = frame(PROTO_UDP);
    f[40..42].copy_from_slice(&[0, 0]);
    all().apply(&mut f);
    assert_eq!(f[40..42], [0, 0]);
    // --fixcsum leaves none over IPv4 (as tcprewrite), computes a sum
    // over IPv6, where 0 is none only for tunnels (RFC 6935).
    let fix = HeaderRewrite {
        fixcsum: true,
        ..Default::default()
    };
    for (text, at) in [("udp4 payload=9", 40), ("udp6 payload=9", 60)] {
        let mut f = crate::template::describe(text).unwrap();
        f[at..at + 2].copy_from_slice(&[0, 0]);
        fix.apply(&mut f);
        if text.starts_with("udp4") {
            assert_eq!(f[at..at + 2], [0, 0], "{text}");
        } else {
            assert_ne!(f[at..at + 2], [0, 0], "{text}");
        }
        verify_checksums(&f).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    }
    let mut g = frame(PROTO_TCP);
    let before = g.clone();
    let other = HeaderRewrite {
        srcipmap: vec!["11.0.0.0/8:1.2.3.4/32".parse().unwrap()],
        portmap: vec!["443:8443".parse().unwrap()],
        ..Default::default()
    };
    assert!(!other.apply(&mut g));
    assert_eq!(g, before);
}

#[test]
fn options_parse_and_refuse_nonsense() {
    let m: CidrMap = "2001:db8::/32:fd00::/8".parse().unwrap();
    assert_eq!(m.from.1, 32);
    assert_eq!(m.to.1, 8);
    assert!("10.0.0.0/8:2001:db8::/32".parse::<CidrMap>().is_err());
    assert!("10.0.0.0/33:1.1.1.1".parse::<CidrMap>().is_err());
    assert!("bogus".parse::<CidrMap>().is_err());
    assert_eq!("+3".parse::<TtlOp>().unwrap(), TtlOp::Add(3));
    assert_eq!("7".parse::<TtlOp>().unwrap(), TtlOp::Set(7));
    assert!("300".parse::<TtlOp>().is_err());
    for bad in ["++1", "+-1", "--1", "+", ""] {
        assert!(bad.parse::<TtlOp>().is_err(), "{bad}");
    }
    assert!("2000-1000:5".parse::<PortMap>().is_err());
    assert!("80".parse::<PortMap>().is_err());
    assert_eq!(TtlOp::Sub(100).apply(64), 1);
    let mut a = [10u8, 9, 8, 7];
    let one: CidrMap = "10.0.0.0/8:1.2.3.4".parse().unwrap();
    assert!(one.apply_bytes(&mut a));
    assert_eq!(a, [1, 2, 3, 4]);
}

/// Frames from traces sluice did not write: mutated and truncated
/// headers must never panic, and a frame keeps its length.
#[test]
fn mutated_frames_never_panic_and_keep_their_length() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let seeds = [frame(PROTO_TCP), frame(PROTO_UDP)];
    let mut changed = 0;
    for i in 0..20_000 {
        let mut f = seeds[i % 2].clone();
        for _ in 0..1 + next() % 4 {
            let at = next() as usize % f.len();
            f[at] = next() as u8;
        }
        f.truncate(1 + next() as usize % f.len());
        let len = f.len();
        for fixcsum in [false, true] {
            let rw = HeaderRewrite { fixcsum, ..all() };
            changed += usize::from(rw.apply(&mut f));
            assert_eq!(f.len(), len);
        }
    }
    // Most mutants still parse far enough to be rewritten.
    assert!(changed > 10_000, "{changed}");
}

#[test]
fn vlan_add_edit_del_round_trip() {
    let orig = frame(PROTO_UDP);
    let mut f = orig.clone();
    let add = VlanOp::Add {
        tag: 45,
        pri: Some(5),
        cfi: Some(true),
        proto: 0x8100,
    };
    assert!(edit_vlan(&mut f, add));
    assert_eq!(f[12..18], [0x81, 0x00, 0xb0, 0x2d, 0x08, 0x00]);
    let edit = VlanOp::Edit {
        tag: Some(7),
        pri: None,
        cfi: Some(false),
    };
    assert!(edit_vlan(&mut f, edit));
    assert_eq!(f[14..16], [0xa0, 0x07]);
    assert!(edit_vlan(&mut f, VlanOp::Del));
    assert_eq!(f, orig);
    // Nothing to delete or edit on an untagged frame.
    assert!(!edit_vlan(&mut f, VlanOp::Del));
    assert!(!edit_vlan(&mut f, edit));
}

#[test]
fn fixlen_pads_cut_frames_with_right_checksums_or_drops_them() {
    let full = frame(PROTO_TCP);
    let mut cut = full[..full.len() - 4].to_vec();
    let pad = HeaderRewrite {
        fixlen: Some(FixLen::Pad),
        ..HeaderRewrite::default()
    };
    assert_eq!(
        pad.apply_frame(&mut cut, full.len(), 0, 0),
        Rewritten::Changed
    );
    assert_eq!(cut.len(), full.len());
    assert_eq!(cut[cut.len() - 4..], [0, 0, 0, 0]);
    verify_checksums(&cut).unwrap();
    let mut cut = full[..full.len() - 4].to_vec();
    let trunc = HeaderRewrite {
        fixlen: Some(FixLen::Trunc),
        ..HeaderRewrite::default()
    };
    assert_eq!(
        trunc.apply_frame(&mut cut, full.len(), 0, 0),
        Rewritten::Changed
    );
    assert_eq!(
        usize::from(u16::from_be_bytes([cut[16], cut[17]])),
        cut.len() - 14
    );
    verify_checksums(&cut).unwrap();
    let del = HeaderRewrite {
        fixlen: Some(FixLen::Del),
        ..HeaderRewrite::default()
    };
    let mut f = full.clone();
    assert_eq!(
        del.apply_frame(&mut f, full.len(), 0, 0),
        Rewritten::Unchanged
    );
    f.truncate(50);
    assert_eq!(
        del.apply_frame(&mut f, full.len(), 0, 0),
        Rewritten::Dropped
    );
}

#[test]
fn unique_ip_moves_both_directions_of_a_flow_together() {
    let rw = HeaderRewrite {
        unique_ip: true,
        ..HeaderRewrite::default()
    };
    let fwd = frame(PROTO_TCP);
    let mut rev = fwd.clone();
    let (s, d) = (fwd[26..30].to_vec(), fwd[30..34].to_vec());
    rev[26..30].copy_from_slice(&d);
    rev[30..34].copy_from_slice(&s);
    assert!(complete_checksum(&mut rev));
    let mut f0 = fwd.clone();
    assert_eq!(
        rw.apply_frame(&mut f0, fwd.len(), 0, 0),
        Rewritten::Unchanged
    );
    for pass in 1..4 {
        let (mut a, mut b) = (fwd.clone(), rev.clone());
        rw.apply_frame(&mut a, fwd.len(), pass, 0);
        rw.apply_frame(&mut b, rev.len(), pass, 0);
        assert_eq!(a[26..30], b[30..34], "pass {pass}");
        assert_eq!(a[30..34], b[26..30], "pass {pass}");
        assert_ne!(a[26..34], fwd[26..34]);
        verify_checksums(&a).unwrap();
        verify_checksums(&b).unwrap();
    }
}

/// `frame(PROTO_TCP)` inside VXLAN inside GRE (with its checksum),
/// all over IPv4 from 10.1.2.3: each mode rewrites the layers it
/// names, and every checksum of every layer stays right.
#[test]
fn tunnel_modes_reach_the_layers_they_name_with_checksums_right() {
    fn outer(proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = frame(PROTO_UDP)[..34].to_vec();
        f[23] = proto;
        let len = (20 + payload.len()) as u16;
        f[16..18].copy_from_slice(&len.to_be_bytes());
        f[24..26].fill(0);
        let c = ipv4_header_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }
    let mut vxlan = 4789u16.to_be_bytes().to_vec();
    vxlan.splice(0..0, 1234u16.to_be_bytes());
    let inner = frame(PROTO_TCP);
    vxlan.extend_from_slice(&((16 + inner.len()) as u16).to_be_bytes());
    vxlan.extend_from_slice(&[0, 0, 0x08, 0, 0, 0, 0, 0, 7, 0]);
    vxlan.extend_from_slice(&inner);
    let mut udp = outer(PROTO_UDP, &vxlan);
    assert!(complete_checksum(&mut udp));
    let mut gre = vec![0x80, 0, 0x08, 0, 0, 0, 0, 0];
    gre.extend_from_slice(&udp[14..]);
    let c = crate::checksum::fold(crate::checksum::sum16(&gre, 0));
    gre[4..6].copy_from_slice(&c.to_be_bytes());
    let f = outer(47, &gre);
    // Outer IPv4 (GRE) at 14, inner IPv4 (UDP, VXLAN) at 42, innermost
    // IPv4 (TCP) at 42 + 20 + 16 + 14.
    let (o, m, i) = (14, 42, 92);
    let src = |f: &[u8], at: usize| f[at + 12..at + 16].to_vec();
    let check = |f: &[u8]| {
        verify_checksums(f).unwrap();
        let t = tunnel::find(f).unwrap();
        assert_eq!(
            crate::checksum::fold(crate::checksum::sum16(&f[34..t.end], 0)),
            0
        );
        let mut mid = vec![0; 12];
        mid.extend_from_slice(&[8, 0]);
        mid.extend_from_slice(&f[t.offset..]);
        verify_checksums(&mid).unwrap();
        verify_checksums(&f[i - 14..]).unwrap();
    };
    check(&f);
    for (mode, want) in [
        (TunnelMode::Outer, [true, false, false]),
        (TunnelMode::Inner, [false, false, true]),
        (TunnelMode::Both, [true, true, true]),
    ] {
        for fixcsum in [false, true] {
            let rw = HeaderRewrite {
                srcipmap: vec!["10.1.0.0/16:172.16.0.0/16".parse().unwrap()],
                ttl: Some(TtlOp::Set(9)),
                tunnel: mode,
                fixcsum,
                ..HeaderRewrite::default()
            };
            let mut g = f.clone();
            assert!(rw.apply(&mut g));
            assert_eq!(g.len(), f.len());
            for (k, at) in [o, m, i].into_iter().enumerate() {
                let moved = src(&g, at) == [172, 16, 2, 3];
                assert_eq!(moved, want[k], "{mode:?} layer {k}");
                assert_eq!(g[at + 8] == 9, want[k], "{mode:?} ttl {k}");
            }
            check(&g);
        }
    }
}
