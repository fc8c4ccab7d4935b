//! Fuzzes header rewriting with arbitrary frames (they come from traces
//! sluice did not write): every option set at once, incremental and
//! `--fixcsum`. A frame must keep its length and never panic, whatever
//! its headers claim.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_wire::rewrite::HeaderRewrite;

fuzz_target!(|data: &[u8]| {
    for fixcsum in [false, true] {
        let rw = HeaderRewrite {
            enet_dmac: Some("02:00:00:00:00:42".parse().unwrap()),
            enet_smac: Some("02:00:00:00:00:43".parse().unwrap()),
            srcipmap: vec!["0.0.0.0/0:10.0.0.0/8".parse().unwrap(), "::/0:2001:db8::/32".parse().unwrap()],
            dstipmap: vec!["0.0.0.0/1:192.0.2.0/24".parse().unwrap()],
            portmap: vec!["0-65535:9".parse().unwrap()],
            ttl: Some("-1".parse().unwrap()),
            tos: Some(0xb8),
            fixcsum,
        };
        let mut frame = data.to_vec();
        rw.apply(&mut frame);
        assert_eq!(frame.len(), data.len());
    }
});
