//! Fuzzes the text formats sluice reads from other tools or from users:
//! nfdump flow-record CSV (`flows import`), time-series CSV (`series
//! convert`), flow sessions (YAML and JSON) and device mappings (YAML and
//! CSV) and profiles (YAML and JSON). Each must return a value or an error, never panic or hang; what
//! is accepted must hold together:
//! - an imported session parses back, and expands into as many flows as
//!   the importer says it wrote;
//! - a converted archive reads back record for record;
//! - an accepted session expands (lazily: the first 1 000 flows).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_archive::{convert_csv_from, ArchiveReader, ArchiveWriter, DataEncoding};
use sluice_flows::{import_text, Expander, Session};
use sluice_source::series::FlowMap;
use std::io::Cursor;
use std::net::Ipv4Addr;

fn import(text: &str) {
    if let Ok((yaml, stats)) = import_text("fuzz.csv", text) {
        let s = Session::parse("imported", &yaml, true).expect("imported session parses back");
        let flows = Expander::new(s, 1).expect("imported session expands").count() as u64;
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
        while r.next_record().expect("a converted archive reads back").is_some() {
            n += 1;
        }
        assert_eq!(n, stats.records);
    }
}

fn session(text: &str) {
    for yaml in [true, false] {
        if let Ok(s) = Session::parse("fuzz", text, yaml) {
            if let Ok(e) = Expander::new(s, 7) {
                for f in e.take(1000) {
                    let _ = (f.src_ip(), f.dst_ip());
                }
            }
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
        mapping(text);
        profile(text);
    }
});
