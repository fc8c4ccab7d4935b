//! Fuzzes the classic pcap path: inputs that do not start with a pcap (or
//! gzip) magic get a valid little-endian microsecond file header put in
//! front, so mutations spend their time on record headers.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| {
    let magic = data.get(..4).unwrap_or(&[]);
    let known = matches!(
        magic,
        [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xc3, 0xd4]
            | [0x4d, 0x3c, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d]
    ) || data.starts_with(&[0x1f, 0x8b]);
    if known {
        common::drain(data);
    } else {
        let mut v = HEADER.to_vec();
        v.extend_from_slice(data);
        common::drain(&v);
    }
});
