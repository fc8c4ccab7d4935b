//! IO-thread throughput: reads an archive the way `series play`'s IO thread
//! does (large buffers of whole records, lengths checked) and reports GB/s.
//!
//!     cargo run --release -p sluice-source --example archive_read -- ARCHIVE [BUFFER_MIB]
//!
//! Run it twice (or `cat ARCHIVE > /dev/null` first) to measure from the
//! page cache; drop caches first to measure the disk.

use sluice_source::series::{ArchiveChunker, Filled};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: archive_read ARCHIVE [BUFFER_MIB]");
        std::process::exit(2);
    };
    let mib: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let mut chunker = ArchiveChunker::open(path.as_ref()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    // Two buffers, as the IO thread has per worker; allocated (and touched)
    // before timing, as in a run.
    let mut bufs = [Filled::new(mib << 20), Filled::new(mib << 20)];
    let t = Instant::now();
    let mut i = 0;
    loop {
        match chunker.fill(&mut bufs[i % 2]) {
            Ok(true) => i += 1,
            Ok(false) => break,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2)
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "read {} bytes, {} records in {s:.3} s: {:.2} GB/s, {:.1} M records/s ({mib} MiB buffers)",
        chunker.bytes_read,
        chunker.records(),
        chunker.bytes_read as f64 / s / 1e9,
        chunker.records() as f64 / s / 1e6
    );
}
