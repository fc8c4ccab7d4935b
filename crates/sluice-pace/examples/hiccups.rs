//! Platform timing floor: spins on CLOCK_MONOTONIC for a while and reports
//! every gap between consecutive clock reads longer than 1 µs (interrupts,
//! hypervisor steal, SMIs). No sender can be more punctual than this: a
//! packet due inside a hiccup leaves when it ends.
//!
//!     cargo run --release -p sluice-pace --example hiccups [SECONDS [THREADS]]
//!
//! Run it pinned (`taskset -c 1`) to see the CPU a TX thread would use.
//! With THREADS > 1, that many threads spin at once (one per CPU on an
//! otherwise idle machine) on one clock, and the report adds how many of
//! the first thread's hiccups over 5 µs overlap a hiccup of another: near
//! 0 % when CPUs are interrupted independently (a second TX thread can
//! stand in for the first), near 100 % when the whole machine stops (a
//! VM paused by its host).

use sluice_core::{Clock, MonoTime, MonotonicClock};

/// Gap bounds of the report, in ns.
const BOUNDS: [u64; 7] = [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, u64::MAX];

/// One thread's hiccups: (start, length) in ns of the shared clock.
fn spin(clock: MonotonicClock, end: MonoTime) -> Vec<(u64, u64)> {
    let mut events = Vec::with_capacity(1 << 16);
    let mut prev = clock.now().0;
    loop {
        let now = clock.now().0;
        if now >= end.0 {
            return events;
        }
        if now - prev > BOUNDS[0] {
            events.push((prev, now - prev));
        }
        prev = now;
    }
}

fn report(secs: f64, events: &[(u64, u64)]) {
    let mut counts = [0u64; 6];
    let (mut lost, mut max) = (0u64, 0u64);
    for &(_, gap) in events {
        lost += gap;
        max = max.max(gap);
        let k = BOUNDS.windows(2).position(|w| gap <= w[1]).unwrap_or(5);
        counts[k] += 1;
    }
    let n = events.len();
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

/// How many of `a`'s hiccups over `min` ns overlap one of `others`'.
fn overlapping(a: &[(u64, u64)], others: &[(u64, u64)], min: u64) -> (usize, usize) {
    let long: Vec<_> = a.iter().filter(|e| e.1 > min).collect();
    let longest = others.iter().map(|e| e.1).max().unwrap_or(0);
    let both = long
        .iter()
        .filter(|&&&(s, g)| {
            // `others` is in time order: skip what ended before `s`.
            let i = others.partition_point(|&(t, _)| t + longest <= s);
            others[i..]
                .iter()
                .take_while(|&&(t, _)| t <= s + g)
                .any(|&(t, h)| t + h > s)
        })
        .count();
    (long.len(), both)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let clock = MonotonicClock::new();
    let end = clock.now() + sluice_core::Nanos((secs * 1e9) as u64);
    let all: Vec<Vec<(u64, u64)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads.max(1))
            .map(|_| s.spawn(move || spin(clock, end)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("spinning thread"))
            .collect()
    });
    for (i, events) in all.iter().enumerate() {
        if all.len() > 1 {
            println!("thread {i}:");
        }
        report(secs, events);
    }
    if all.len() > 1 {
        let mut others: Vec<(u64, u64)> = all[1..].concat();
        others.sort_unstable();
        for min in [5_000, 10_000] {
            let (n, both) = overlapping(&all[0], &others, min);
            println!(
                "thread 0 hiccups > {} us: {n}, overlapping another thread's: {both} ({:.1} %)",
                min / 1000,
                100.0 * both as f64 / n.max(1) as f64
            );
        }
    }
}
