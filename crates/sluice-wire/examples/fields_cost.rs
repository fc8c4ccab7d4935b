//! Nanoseconds per frame of building a flow's frame, plain, behind a
//! VXLAN/IPv4/UDP header, and with three fields varied (the field
//! engine's own cost, apart from the rest of a run); then the same from a
//! template (`template: {describe: …}`), a flow's frame made every other
//! frame:
//!
//!   cargo run --release -p sluice-wire --example fields_cost [FRAMES]
use sluice_wire::encapstack::EncapStack;
use sluice_wire::fields::{FieldEngine, FieldSpec};
use sluice_wire::template::{describe, Template};
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

    // Templates: the session's fields (the VNI's stand-in without VXLAN
    // is the destination address, as bench/encap.sh varies it).
    let plain_specs: Vec<FieldSpec> = serde_json::from_str(
        r#"[{"field": "ip.dst", "from": 1, "to": 16777215},
            {"field": "ip.src", "from": "10.8.0.0", "to": "10.15.255.255"},
            {"field": "sport", "op": "random", "from": 1024, "to": 65535}]"#,
    )
    .unwrap();
    let inner = "udp4 src=10.0.0.1 dst=10.0.0.2 sport=1 dport=9 payload=18";
    let mut run_template = |name: &str, text: &str, specs: &[FieldSpec]| {
        let t = Template::new(describe(text).unwrap(), true).unwrap();
        let engine = t.engine(specs, 1).unwrap();
        let mut base = Vec::new();
        let start = Instant::now();
        for k in 0..frames {
            out.clear();
            if k & 1 == 0 {
                let mut e = ends;
                e.src = std::net::Ipv4Addr::from(0x0a00_0001 + (k >> 1) as u32).into();
                t.flow_frame(&mut base, &e, Some(&engine), k >> 1);
            }
            t.write(&mut out, &base, Some(&engine), k);
            black_box(&out);
        }
        let ns = start.elapsed().as_nanos() as f64 / frames as f64;
        println!("{name:<13} {ns:.1} ns/frame");
        ns
    };
    let a = run_template("t-plain", inner, &plain_specs);
    let d = run_template(
        "t-vxlan",
        &format!("{inner} encap=vxlan:vni=1,src=192.0.2.1,dst=192.0.2.2"),
        &specs,
    );
    println!("template vxlan+fields / plain+fields: x{:.2}", d / a);
}
