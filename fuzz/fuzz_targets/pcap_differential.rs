//! Differential fuzzing of our pcap and pcapng readers against the
//! `pcap-parser` crate: both read the same bytes, and must return the same
//! packets (timestamp, captured bytes, original length, link type,
//! interface) and end the same way (clean end, or a refusal after the same
//! packets), except where `crates/sluice-capture/tests/diff/mod.rs` lists
//! a rule pcap-parser lacks (that file is the check, shared with the
//! deterministic `cargo test` suite `tests/differential.rs`).
//!
//! Inputs that start with a pcap magic or the pcapng section header type
//! are read as they are; others get a header chosen by their first byte
//! (little-endian microsecond pcap, big-endian nanosecond pcap v2.3, or a
//! little- or big-endian section header) put in front of the rest, so
//! mutations spend their time on records and blocks. Gzip is out of scope
//! (pcap-parser reads none).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/sluice-capture/tests/diff/mod.rs"]
mod diff;

const PCAP_LE_US: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
];
const PCAP_BE_NS_V23: [u8; 24] = [
    0xa1, 0xb2, 0x3c, 0x4d, 0, 2, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
];
const SHB_LE: [u8; 28] = [
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
];
const SHB_BE: [u8; 28] = [
    0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 28, 0x1a, 0x2b, 0x3c, 0x4d, 0, 1, 0, 0, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 28,
];

fn known(data: &[u8]) -> bool {
    matches!(
        data.get(..4),
        Some(
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x0a, 0x0d, 0x0d, 0x0a]
        )
    )
}

fuzz_target!(|data: &[u8]| {
    let input = if known(data) || data.is_empty() {
        data.to_vec()
    } else {
        let head: &[u8] = match data[0] % 4 {
            0 => &PCAP_LE_US,
            1 => &PCAP_BE_NS_V23,
            2 => &SHB_LE,
            _ => &SHB_BE,
        };
        [head, &data[1..]].concat()
    };
    if diff::is_gzip(&input) {
        return;
    }
    if let Err(e) = diff::check(&input) {
        panic!("disagreement with pcap-parser: {e}");
    }
});
