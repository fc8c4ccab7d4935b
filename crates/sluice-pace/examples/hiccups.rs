//! Platform timing floor: spins on CLOCK_MONOTONIC for a while and reports
//! every gap between consecutive clock reads longer than 1 µs (interrupts,
//! hypervisor steal, SMIs). No sender can be more punctual than this: a
//! packet due inside a hiccup leaves when it ends.
//!
//!     cargo run --release -p sluice-pace --example hiccups [SECONDS]
//!
//! Run it pinned (`taskset -c 1`) to see the CPU a TX thread would use.

use sluice_core::{Clock, MonotonicClock};

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let clock = MonotonicClock::new();
    let start = clock.now();
    let end = start.0 + (secs * 1e9) as u64;
    let bounds = [1_000u64, 2_000, 5_000, 10_000, 20_000, 50_000, u64::MAX];
    let mut counts = [0u64; 6];
    let (mut lost, mut max, mut prev) = (0u64, 0u64, start.0);
    loop {
        let now = clock.now().0;
        if now >= end {
            break;
        }
        let gap = now - prev;
        prev = now;
        if gap > bounds[0] {
            lost += gap;
            max = max.max(gap);
            let k = bounds.windows(2).position(|w| gap <= w[1]).unwrap_or(5);
            counts[k] += 1;
        }
    }
    let n: u64 = counts.iter().sum();
    println!(
        "hiccups > 1 us: {n} in {secs} s ({:.0}/s), {:.3} % of the time lost, max {:.1} us",
        n as f64 / secs,
        lost as f64 / (secs * 1e9) * 100.0,
        max as f64 / 1e3
    );
    println!(
        "  1-2 us {}  2-5 us {}  5-10 us {}  10-20 us {}  20-50 us {}  > 50 us {}",
        counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]
    );
}
