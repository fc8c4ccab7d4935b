//! Fuzzes the TSH reader: every input is read as a `.tsh` trace (TSH has
//! no magic; the name decides), gzip-compressed ones included.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::drain_as(data, "fuzz.tsh");
});
