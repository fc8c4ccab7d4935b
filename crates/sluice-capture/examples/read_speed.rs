//! Read-throughput check (not a test): reads a capture from the page cache
//! and prints MB/s and packets/s.
//!
//! `cargo run --release -p sluice-capture --example read_speed [FILE]`
//!
//! Without FILE it writes a pcap of 3,000,000 records of 64 bytes
//! (~240 MB) to the temp directory first. The file is read once to warm the
//! page cache, then timed over several passes; every packet's bytes are
//! touched so the work cannot be optimised away.

use std::path::PathBuf;
use std::time::Instant;

use sluice_capture::{CaptureReader, LinkType, PcapWriter};

fn main() {
    let path = match std::env::args().nth(1) {
        Some(p) => PathBuf::from(p),
        None => {
            let p = std::env::temp_dir().join("sluice-read-speed.pcap");
            let f = std::fs::File::create(&p).expect("create temp pcap");
            let mut w = PcapWriter::new(f, LinkType::ETHERNET, 65_535).unwrap();
            let mut frame = [0u8; 64];
            for i in 0..3_000_000u64 {
                frame[..8].copy_from_slice(&i.to_le_bytes());
                w.write_packet(1_700_000_000_000_000_000 + i * 1_000, &frame, 64)
                    .unwrap();
            }
            w.into_inner().unwrap();
            p
        }
    };
    let pass = || {
        let mut r = CaptureReader::open(&path).unwrap();
        let mut sum = 0u64;
        while let Some(p) = r.next_packet().unwrap() {
            sum = sum.wrapping_add(p.ts_ns ^ u64::from(p.data[p.data.len() / 2]));
        }
        (r.offset(), r.packets_read(), sum)
    };
    pass();
    let mut best = f64::INFINITY;
    let (mut bytes, mut packets) = (0, 0);
    for _ in 0..5 {
        let t = Instant::now();
        let (b, p, sum) = pass();
        std::hint::black_box(sum);
        best = best.min(t.elapsed().as_secs_f64());
        (bytes, packets) = (b, p);
    }
    println!(
        "{}: {bytes} bytes, {packets} packets; best of 5: {:.3} s = {:.0} MB/s, {:.1} M packets/s",
        path.display(),
        best,
        bytes as f64 / best / 1e6,
        packets as f64 / best / 1e6
    );
}
