//! Per-packet trace read latency (TCPivo Figs. 1 and 3a): the time each
//! packet of a pcap takes to become available, read three ways:
//!
//! - `fread`: a 4 KiB buffered stream, each record's 16-byte header then
//!   its bytes (TCPivo's Fig. 1 baseline, stdio's `fread`);
//! - `mmap`: the whole file mapped with a sequential hint, each record
//!   walked in place (TCPivo's mmap + madvise, Fig. 3a);
//! - `sluice`: `CaptureReader`, the reader `replay` uses (1 MiB reads into
//!   its own window, records parsed in place).
//!
//!     cargo run --release -p sluice-source --example trace_read_latency -- TRACE.pcap fread|mmap|sluice [--cold]
//!
//! `--cold` drops the file's pages from the page cache first
//! (POSIX_FADV_DONTNEED): TCPivo's first run, from the disk; without it,
//! the file is read once before timing (its second run). Prints one line:
//! packets, latency percentiles and maximum (ns), the packets over 10 µs,
//! 100 µs and 1 ms, and the whole read's time. Each latency includes one
//! clock read (tens of ns).

use sluice_capture::CaptureReader;
use std::io::Read;
use std::time::Instant;

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("{e}");
    std::process::exit(2)
}

/// Per-packet latencies of reading `path` by `how`, and a checksum.
fn read(path: &std::path::Path, how: &str) -> (Vec<u32>, u64) {
    let mut lat: Vec<u32> = Vec::with_capacity(1 << 20);
    let mut sum = 0u64;
    let mut last;
    let tick = |lat: &mut Vec<u32>, last: &mut Instant| {
        let now = Instant::now();
        lat.push(
            now.duration_since(*last)
                .as_nanos()
                .min(u128::from(u32::MAX)) as u32,
        );
        *last = now;
    };
    match how {
        "fread" => {
            let f = std::fs::File::open(path).unwrap_or_else(|e| fail(e));
            let mut r = std::io::BufReader::with_capacity(4096, f);
            let mut head = [0u8; 24];
            r.read_exact(&mut head).unwrap_or_else(|e| fail(e));
            let mut rec = [0u8; 16];
            let mut data = vec![0u8; 65_536];
            last = Instant::now();
            while r.read_exact(&mut rec).is_ok() {
                let caplen = u32::from_le_bytes(rec[8..12].try_into().unwrap()) as usize;
                let d = &mut data[..caplen.min(65_536)];
                if r.read_exact(d).is_err() {
                    break;
                }
                sum = sum.wrapping_add(u64::from(d[d.len() / 2]));
                tick(&mut lat, &mut last);
            }
        }
        "mmap" => {
            let map = sluice_sys::filemap::FileMap::open(path).unwrap_or_else(|e| fail(e));
            map.advise_sequential().unwrap_or_else(|e| fail(e));
            let b = map.bytes();
            let mut at = 24usize;
            last = Instant::now();
            while at + 16 <= b.len() {
                let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
                let end = at + 16 + caplen;
                if caplen == 0 || end > b.len() {
                    break;
                }
                sum = sum.wrapping_add(u64::from(b[at + 16 + caplen / 2]));
                at = end;
                tick(&mut lat, &mut last);
            }
        }
        "sluice" => {
            let mut r = CaptureReader::open(path).unwrap_or_else(|e| fail(e));
            last = Instant::now();
            while let Some(p) = r.next_packet().unwrap_or_else(|e| fail(e)) {
                sum = sum.wrapping_add(u64::from(p.data[p.data.len() / 2]));
                tick(&mut lat, &mut last);
            }
        }
        _ => fail("the mode is fread, mmap or sluice"),
    }
    (lat, sum)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(how)) = (args.first(), args.get(1)) else {
        fail("usage: trace_read_latency TRACE.pcap fread|mmap|sluice [--cold]");
    };
    let path = std::path::Path::new(path);
    let cold = args.iter().any(|a| a == "--cold");
    if cold {
        sluice_sys::filemap::drop_cached(path).unwrap_or_else(|e| fail(e));
    } else {
        std::hint::black_box(read(path, "mmap"));
    }
    let t = Instant::now();
    let (mut lat, sum) = read(path, how);
    let total = t.elapsed().as_secs_f64();
    let n = lat.len();
    if n == 0 {
        fail("no packets read");
    }
    let over = |ns: u32| lat.iter().filter(|&&l| l > ns).count();
    let (o10, o100, o1m) = (over(10_000), over(100_000), over(1_000_000));
    lat.sort_unstable();
    let q = |p: f64| lat[((n as f64 * p) as usize).min(n - 1)];
    println!(
        "mode={how} cache={} packets={n} p50_ns={} p99_ns={} p999_ns={} max_ns={} over_10us={o10} over_100us={o100} over_1ms={o1m} total_s={total:.3} check={}",
        if cold { "cold" } else { "warm" },
        q(0.5),
        q(0.99),
        q(0.999),
        lat[n - 1],
        sum % 1000
    );
}
