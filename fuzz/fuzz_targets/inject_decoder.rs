//! Fuzzes the `sluice inject` message decoder with arbitrary client
//! streams: every message is split off and decoded, every description of
//! an accepted DESCS is built. Each input must give built frames of the
//! length they asked for, or an error naming an offset and a field; never
//! a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_live::inject::walk_stream;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = walk_stream(data) {
        assert!(e.offset <= data.len() as u64, "{e}");
        assert!(!e.field.is_empty());
    }
});
