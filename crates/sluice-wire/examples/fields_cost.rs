//! Nanoseconds per frame of building a flow's frame, plain, behind a
//! VXLAN/IPv4/UDP template, and with three fields varied (the field
//! engine's own cost, apart from the rest of a run):
//!
//!   cargo run --release -p sluice-wire --example fields_cost [FRAMES]
use sluice_wire::encapstack::EncapStack;
use sluice_wire::fields::{FieldEngine, FieldSpec};
use sluice_wire::{FlowEnds, FlowHeaders, FlowProto, MacAddr, PacketFields};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let frames: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    let layers = vec!["vxlan:vni=1,src=192.0.2.1,dst=192.0.2.2".parse().unwrap()];
    let stack = Arc::new(EncapStack::new(&layers, mac, mac).unwrap());
    let specs: Vec<FieldSpec> = serde_json::from_str(
        r#"[{"field": "vxlan.vni", "from": 1, "to": 16777215},
            {"field": "ip.src", "from": "10.8.0.0", "to": "10.15.255.255"},
            {"field": "sport", "op": "random", "from": 1024, "to": 65535}]"#,
    )
    .unwrap();
    let engine = FieldEngine::new(&specs, &layers, 1).unwrap();
    let ends = FlowEnds {
        src: "10.0.0.1".parse().unwrap(),
        dst: "10.0.0.2".parse().unwrap(),
        sport: 1,
        dport: 9,
    };
    let mut out = Vec::with_capacity(256);
    let mut run = |name: &str, stack: Option<&Arc<EncapStack>>, fields: bool| {
        let t = Instant::now();
        for k in 0..frames {
            out.clear();
            let f = PacketFields {
                index: k & 1,
                last: false,
                payload_len: 18,
                tcp_seq: 0,
                prefix: b"",
                stamp: None,
            };
            // A new flow every other frame (its template built, as with
            // many flows at once).
            let mut e = ends;
            if fields {
                engine.vary_ends(&mut e, true, k >> 1, k);
            }
            let mut h = FlowHeaders::new(mac, mac, e, FlowProto::Udp, false).unwrap();
            if let Some(s) = stack {
                h = h.with_encap(s);
            }
            if fields {
                engine.vary(&mut h, k >> 1, k);
                h.write_varied(&mut out, &f, &engine, k >> 1, k);
            } else {
                h.write(&mut out, &f);
            }
            black_box(&out);
        }
        let ns = t.elapsed().as_nanos() as f64 / frames as f64;
        println!("{name:<13} {ns:.1} ns/frame");
        ns
    };
    let a = run("plain", None, false);
    run("plain+fields", None, true);
    run("vxlan", Some(&stack), false);
    let d = run("vxlan+fields", Some(&stack), true);
    println!("vxlan+fields / plain: x{:.2}", d / a);
}
