//! The system clocks as nanosecond counts, for protocols that carry
//! absolute times (CLOCK_MONOTONIC for programs on this host,
//! CLOCK_REALTIME for wall-clock times).

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is; both
    // clocks always exist on Linux, so it cannot fail.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC (what `std::time::Instant` reads) in ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns since the epoch.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_agrees_with_instant() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b - a >= 2_000_000, "{a} {b}");
        // After 2020, before 2200.
        let r = realtime_ns();
        assert!(r > 1_577_836_800_000_000_000 && r < 7_258_118_400_000_000_000);
    }
}
