//! Fuzzes tcpprep's cache format (`TcpprepCache::parse`): any bytes either
//! parse into a cache whose every packet has a direction and which writes
//! back to the same bytes, or are refused with an error naming an offset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_source::TcpprepCache;

fuzz_target!(|data: &[u8]| {
    match TcpprepCache::parse(data) {
        Ok(c) => {
            for k in 0..c.packets.min(1 << 16) {
                assert!(c.dir(k).is_some());
            }
            assert!(c.dir(c.packets).is_none());
            let counts = c.counts();
            assert_eq!(counts.iter().sum::<u64>(), c.packets);
            // The version field is written as tcpprep writes it ("04");
            // everything else comes back as it was.
            let back = c.to_bytes();
            assert_eq!(back.len(), data.len());
            assert_eq!(TcpprepCache::parse(&back), Ok(c));
        }
        Err(e) => assert!(e.starts_with("offset "), "{e}"),
    }
});
