//! Fuzzes header rewriting with arbitrary frames (they come from traces
//! sluice did not write): every option set at once, incremental and
//! `--fixcsum`, with length changes (VLAN, MTU, fixlen) and a claimed
//! original length taken from the input, and tunnels (VXLAN, GRE, GTP-U,
//! IP-in-IP) entered in every `--tunnel` mode. Never a panic; a frame without
//! length options keeps its length; padding stays bounded. The same frame
//! as a session's template (`sluice_wire::template`): looked into, its
//! checksums computed or kept, a flow's ends and named fields written in,
//! every frame the template's length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_wire::rewrite::{FixLen, HeaderRewrite, VlanOp, MAX_PADDED};
use sluice_wire::TunnelMode;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let base = HeaderRewrite {
        enet_dmac: Some("02:00:00:00:00:42".parse().unwrap()),
        enet_smac: Some("02:00:00:00:00:43".parse().unwrap()),
        srcipmap: vec![
            "0.0.0.0/0:10.0.0.0/8".parse().unwrap(),
            "::/0:2001:db8::/32".parse().unwrap(),
        ],
        dstipmap: vec!["0.0.0.0/1:192.0.2.0/24".parse().unwrap()],
        portmap: vec!["0-65535:9".parse().unwrap()],
        ttl: Some("-1".parse().unwrap()),
        tos: Some(0xb8),
        seed: (sel & 1 == 1).then_some(55),
        unique_ip: sel & 2 == 2,
        endpoints: (sel & 4 == 4)
            .then(|| ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap())),
        fixcsum: sel & 8 == 8,
        tunnel: [TunnelMode::Outer, TunnelMode::Inner, TunnelMode::Both]
            [sel.count_ones() as usize % 3],
        ..HeaderRewrite::default()
    };
    let mut f = frame.to_vec();
    base.apply(&mut f);
    assert_eq!(f.len(), frame.len());
    let sized = HeaderRewrite {
        vlan: Some(match sel >> 4 & 3 {
            0 => VlanOp::Add {
                tag: 7,
                pri: None,
                cfi: None,
                proto: 0x88a8,
            },
            1 => VlanOp::Del,
            _ => VlanOp::Edit {
                tag: Some(9),
                pri: Some(3),
                cfi: None,
            },
        }),
        mtu_trunc: (sel & 0x40 != 0).then_some(68),
        fixlen: Some([FixLen::Pad, FixLen::Trunc, FixLen::Del][usize::from(sel >> 6) % 3]),
        ..base
    };
    let claimed = frame.len() + usize::from(sel) * 1000;
    let mut f = frame.to_vec();
    sized.apply_frame(&mut f, claimed, u64::from(sel), sel & 1);
    assert!(f.len() <= MAX_PADDED.max(frame.len() + 4));
    template(frame, sel);
});

fn spec() -> sluice_wire::fields::FieldSpec {
    sluice_wire::fields::FieldSpec {
        field: None,
        offset: None,
        bits: None,
        op: sluice_wire::fields::Op::Inc,
        from: None,
        to: None,
        step: None,
        values: None,
        per: sluice_wire::fields::Per::Flow,
        seed: None,
    }
}

fn template(frame: &[u8], sel: u8) {
    use sluice_wire::fields::{FieldSpec, Op, Per};
    use sluice_wire::template::Template;
    let Ok(t) = Template::new(frame.to_vec(), sel & 8 == 8) else {
        return;
    };
    let names = [
        "eth.src", "ip.src", "ip.dst", "ip.id", "ip.ttl", "ip.tos", "sport", "dport",
        "vlan.id", "vlan[1].pcp", "svlan.id", "mpls.label", "mpls[1].ttl", "vxlan.vni",
        "vxlan.src", "gre.key", "gtpu.teid", "ipip.dst",
    ];
    let specs: Vec<FieldSpec> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| (sel as usize + i) % 3 != 0)
        .take(sluice_wire::fields::MAX_FIELDS - 1)
        .map(|(i, n)| FieldSpec {
            field: Some(n.to_string()),
            op: Op::Random,
            per: if i % 2 == 0 { Per::Packet } else { Per::Flow },
            ..spec()
        })
        .chain(std::iter::once(FieldSpec {
            offset: Some(usize::from(sel) % frame.len().max(1)),
            bits: Some(13),
            ..spec()
        }))
        .collect();
    // Every name the template lacks is refused; keep those it has.
    let kept: Vec<_> = specs
        .into_iter()
        .filter(|s| t.engine(std::slice::from_ref(s), 1).is_ok())
        .collect();
    let engine = t.engine(&kept, 7).expect("fields accepted one by one are accepted together");
    let (mut base, mut out) = (Vec::new(), Vec::new());
    for k in 0..3u64 {
        // A template without IP keeps its bytes but still gets its fields
        // drawn per flow.
        let any = std::net::IpAddr::from([0u8; 4]);
        let mut ends = t.ends().unwrap_or(sluice_wire::FlowEnds {
            src: any,
            dst: any,
            sport: 0,
            dport: 0,
        });
        ends.sport ^= 0x1234;
        ends.dport = ends.dport.wrapping_add(u16::from(sel));
        t.flow_frame(&mut base, &ends, Some(&engine), k);
        assert_eq!(base.len(), frame.len());
        out.clear();
        t.write(&mut out, &base, Some(&engine), k * 5);
        assert_eq!(out.len(), frame.len());
    }
}
