//! Fuzzes the receiver's frame counting with IP reassembly: the input is
//! a list of frames (a u16 length, a u8 time step in ms, the bytes), each
//! counted as `sluice rx` counts it. Nothing may panic; every fragment is
//! accounted for at most once as a datagram reassembled, timed out or
//! failed; and after the end nothing is held.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_analyze::streams::StreamCounter;

fuzz_target!(|data: &[u8]| {
    let mut c = StreamCounter::new();
    let (mut at, mut t) = (0usize, 0u64);
    let mut frames = 0u64;
    while let Some(h) = data.get(at..at + 3) {
        let len = usize::from(u16::from_be_bytes([h[0], h[1]]));
        t += u64::from(h[2]) * 1_000_000_000 / 8;
        let Some(f) = data.get(at + 3..at + 3 + len) else {
            break;
        };
        c.frame(f, t);
        frames += 1;
        at += 3 + len;
    }
    c.finish();
    let s = c.frags.stats;
    assert!(s.fragments <= frames);
    assert!(s.reassembled + s.timed_out + s.failed <= s.fragments + s.failed);
    assert!(s.reassembled + s.timed_out <= s.fragments);
    assert_eq!(
        c.frames() + c.unstamped + s.fragments - s.reassembled,
        frames,
        "{s:?}"
    );
});
