//! Fuzzes header rewriting with arbitrary frames (they come from traces
//! sluice did not write): every option set at once, incremental and
//! `--fixcsum`, with length changes (VLAN, MTU, fixlen) and a claimed
//! original length taken from the input, and tunnels (VXLAN, GRE, GTP-U,
//! IP-in-IP) entered in every `--tunnel` mode. Never a panic; a frame without
//! length options keeps its length; padding stays bounded.
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
});
