//! IO-thread throughput: reads an archive the way `series play`'s IO thread
//! does (large buffers of whole records, lengths checked, double buffered)
//! or, with `--mmap`, by mapping it and walking the records in place (the
//! alternative the time-series paper's Fig. 9 measures), and reports GB/s.
//! Either way every record is touched once, as a worker would.
//!
//!     cargo run --release -p sluice-source --example archive_read -- ARCHIVE [BUFFER_MIB] [--mmap] [--cold]
//!
//! `--cold` drops this file's pages from the page cache first
//! (POSIX_FADV_DONTNEED), so the disk is measured; without it, run it twice
//! (or `cat ARCHIVE > /dev/null` first) to measure from the page cache.

use sluice_source::series::{ArchiveChunker, Filled};
use std::time::Instant;

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("{e}");
    std::process::exit(2)
}

/// Walks the records of `data` (2-byte big-endian lengths): (records, a
/// byte of each summed, so the walk is not optimised away).
fn walk(data: &[u8]) -> (u64, u64) {
    let (mut at, mut n, mut sum) = (0usize, 0u64, 0u64);
    while at + 2 <= data.len() {
        let len = usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
        if len < 2 || at + len > data.len() {
            break;
        }
        sum += u64::from(data[at + len - 1]);
        at += len;
        n += 1;
    }
    (n, sum)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let plain: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let Some(path) = plain.first() else {
        fail("usage: archive_read ARCHIVE [BUFFER_MIB] [--mmap] [--cold]");
    };
    let mib: usize = plain.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    if flag("--cold") {
        sluice_sys::filemap::drop_cached(path.as_ref()).unwrap_or_else(|e| fail(e));
    }
    let (bytes, records, sum, s, how) = if flag("--mmap") {
        let t = Instant::now();
        let map = sluice_sys::filemap::FileMap::open(path.as_ref()).unwrap_or_else(|e| fail(e));
        let (n, sum) = walk(map.bytes());
        let len = map.bytes().len();
        drop(map);
        let s = t.elapsed().as_secs_f64();
        (len as u64, n, sum, s, "mmap, walked in place".to_string())
    } else {
        let mut chunker = ArchiveChunker::open(path.as_ref()).unwrap_or_else(|e| fail(e));
        // Two buffers, as the IO thread has per worker; allocated (and
        // touched) before timing, as in a run.
        let mut bufs = [Filled::new(mib << 20), Filled::new(mib << 20)];
        let t = Instant::now();
        let (mut i, mut sum) = (0usize, 0u64);
        loop {
            match chunker.fill(&mut bufs[i % 2]) {
                Ok(true) => {
                    sum += walk(bufs[i % 2].bytes()).1;
                    i += 1;
                }
                Ok(false) => break,
                Err(e) => fail(e),
            }
        }
        let s = t.elapsed().as_secs_f64();
        let how = format!("{mib} MiB buffers, double buffered");
        (chunker.bytes_read, chunker.records(), sum, s, how)
    };
    println!(
        "read {bytes} bytes, {records} records in {s:.3} s: {:.2} GB/s, {:.1} M records/s ({how}; check {})",
        bytes as f64 / s / 1e9,
        records as f64 / s / 1e6,
        sum % 1000
    );
}
