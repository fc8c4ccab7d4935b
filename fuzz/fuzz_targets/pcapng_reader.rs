//! Fuzzes the pcapng path: inputs that do not start with the Section Header
//! Block type get a valid little-endian SHB put in front, so mutations spend
//! their time on interface and packet blocks.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const SHB: [u8; 28] = [
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| {
    if data.starts_with(&SHB[..4]) || data.starts_with(&[0x1f, 0x8b]) {
        common::drain(data);
    } else {
        let mut v = SHB.to_vec();
        v.extend_from_slice(data);
        common::drain(&v);
    }
});
