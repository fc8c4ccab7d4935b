//! Fuzzes the text formats sluice reads from other tools or from users:
//! nfdump flow-record CSV (`flows import`), time-series CSV (`series
//! convert`), flow sessions (YAML and JSON) and device mappings (YAML and
//! CSV) and profiles (YAML and JSON). Each must return a value or an error, never panic or hang; what
//! is accepted must hold together:
//! - an imported session parses back, and expands into as many flows as
//!   the importer says it wrote;
//! - a converted archive reads back record for record;
//! - an accepted session expands (lazily: the first 1 000 flows), and its
//!   first flows' frames build behind its layers with its fields;
//! - a layer in the command line's form writes back as it reads;
//! - a template's description (`describe`) or hex builds a frame of its
//!   bounded length, which a template then looks into.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_archive::{convert_csv_from, ArchiveReader, ArchiveWriter, DataEncoding};
use sluice_flows::{import_text, Expander, Session};
use sluice_source::series::FlowMap;
use sluice_wire::encap::EncapLayer;
use sluice_wire::encapstack::EncapStack;
use sluice_wire::ip6ext::Ipv6ExtStack;
use sluice_wire::{FlowHeaders, FlowProto, PacketFields};
use std::io::Cursor;
use std::net::Ipv4Addr;
use std::sync::Arc;

fn import(text: &str) {
    if let Ok((yaml, stats)) = import_text("fuzz.csv", text) {
        let s = Session::parse("imported", &yaml, true).expect("imported session parses back");
        let flows = Expander::new(s, 1)
            .expect("imported session expands")
            .count() as u64;
        assert_eq!(flows, stats.flows, "flows written and flows read back");
    }
}

fn convert(data: &[u8]) {
    for enc in DataEncoding::ALL {
        let mut w = ArchiveWriter::new(Vec::new());
        let Ok(stats) = convert_csv_from(Cursor::new(data), "fuzz.csv", &mut w, "out", enc) else {
            continue;
        };
        let bytes = w.finish().expect("writing to memory");
        let mut r = ArchiveReader::from_reader("out", Cursor::new(bytes));
        let mut n = 0;
        while r
            .next_record()
            .expect("a converted archive reads back")
            .is_some()
        {
            n += 1;
        }
        assert_eq!(n, stats.records);
    }
}

fn session(text: &str) {
    for yaml in [true, false] {
        if let Ok(s) = Session::parse("fuzz", text, yaml) {
            let frames = layers_and_fields(&s);
            if let Ok(e) = Expander::new(s, 7) {
                for (k, f) in e.take(1000).enumerate() {
                    let _ = (f.src_ip(), f.dst_ip());
                    // The first flows' frames, behind the session's layers
                    // and with its fields, are built as a source builds them.
                    if let (Some((stack, engine, ext)), true) = (&frames, k < 50) {
                        frame(stack.as_ref(), engine.as_ref(), ext, &f);
                    }
                }
            }
        }
    }
}

type Frames = (
    Option<Arc<EncapStack>>,
    Option<sluice_wire::fields::FieldEngine>,
    Arc<Ipv6ExtStack>,
);

/// An accepted session's layers and fields build.
fn layers_and_fields(s: &Session) -> Option<Frames> {
    let mac = sluice_wire::MacAddr([2, 0, 0, 0, 0, 1]);
    let stack = if s.encap.is_empty() {
        None
    } else {
        Some(Arc::new(
            EncapStack::new(&s.encap, mac, mac).expect("an accepted session's layers build"),
        ))
    };
    let engine = s
        .field_engine()
        .expect("an accepted session's fields build");
    let ext = Ipv6ExtStack::new(&s.ipv6_ext).expect("an accepted session's IPv6 headers build");
    Some((stack, engine, Arc::new(ext)))
}

fn frame(
    stack: Option<&Arc<EncapStack>>,
    engine: Option<&sluice_wire::fields::FieldEngine>,
    ext: &Arc<Ipv6ExtStack>,
    f: &sluice_flows::Flow,
) {
    let mac = sluice_wire::MacAddr([2, 0, 0, 0, 0, 1]);
    let l4 = f.l4();
    let mut ends = f.ends();
    let ports = matches!(l4, FlowProto::Udp | FlowProto::Tcp);
    if let Some(e) = engine {
        e.vary_ends(&mut ends, ports, u64::from(f.id), 3);
    }
    let Ok(mut h) = FlowHeaders::new(mac, mac, ends, l4, false) else {
        return;
    };
    if let Some(e) = engine {
        e.vary(&mut h, u64::from(f.id), 3);
    }
    h = h.with_ipv6_ext(ext);
    if let Some(s) = stack {
        h = h.with_encap(s);
    }
    let fields = PacketFields {
        index: 1,
        last: false,
        payload_len: 10,
        tcp_seq: 0,
        prefix: b"",
        stamp: None,
    };
    let mut out = Vec::new();
    match engine {
        Some(e) => h.write_varied(&mut out, &fields, e, u64::from(f.id), 3),
        None => h.write(&mut out, &fields),
    }
    assert_eq!(out.len(), h.frame_len(10));
}

/// Each line as a command line's layer, field and extension header:
/// what parses writes back as it reads.
fn layer_lines(text: &str) {
    for line in text.lines().take(64) {
        if let Ok(l) = line.parse::<EncapLayer>() {
            let again: EncapLayer = l.to_string().parse().expect("a written layer reads back");
            assert_eq!(again, l);
        }
        if let Ok(f) = line.parse::<sluice_wire::fields::FieldSpec>() {
            let again: sluice_wire::fields::FieldSpec =
                f.to_string().parse().expect("a written field reads back");
            assert_eq!(again, f);
        }
        if let Ok(x) = line.parse::<sluice_wire::ip6ext::Ipv6Ext>() {
            let again: sluice_wire::ip6ext::Ipv6Ext =
                x.to_string().parse().expect("a written header reads back");
            assert_eq!(again, x);
        }
    }
}

fn profile(text: &str) {
    for yaml in [true, false] {
        let dir = std::path::Path::new("/nonexistent");
        if let Ok(p) = sluice_profile::Profile::parse("fuzz", text, yaml, dir, 1.0) {
            // An accepted profile synthesizes (the first 1 000 packets).
            for q in sluice_profile::Synth::new(p).take(1000) {
                let _ = q.size;
            }
        }
    }
}

fn mapping(text: &str) {
    for yaml in [true, false] {
        let _ = FlowMap::new(Ipv4Addr::new(10, 0, 0, 2), 9000).parse("fuzz", text, yaml);
    }
}

fuzz_target!(|data: &[u8]| {
    convert(data);
    if let Ok(text) = std::str::from_utf8(data) {
        import(text);
        session(text);
        layer_lines(text);
        mapping(text);
        profile(text);
        template(text);
    }
});

/// Each line as a template's description and as hex.
fn template(text: &str) {
    use sluice_wire::template::{describe, parse_hex, Template, MAX_TEMPLATE};
    for line in text.lines().take(8) {
        for frame in [describe(line), parse_hex(line)].into_iter().flatten() {
            if let Ok(t) = Template::new(frame.clone(), true) {
                assert!(t.bytes().len() <= MAX_TEMPLATE);
                assert_eq!(t.bytes().len(), frame.len());
            }
        }
    }
}
