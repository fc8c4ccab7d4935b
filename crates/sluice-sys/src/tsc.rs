//! The CPU's time-stamp counter as a clock (`--clock tsc`): one `rdtsc`
//! per reading instead of a vDSO `clock_gettime`, as the timing papers
//! use. Usable only where the counter is invariant (constant rate, not
//! stopped in idle states: `constant_tsc` and `nonstop_tsc`), calibrated
//! against CLOCK_MONOTONIC; the caller measures and reports the drift
//! between the two over the run.

use std::time::{Duration, Instant};

/// The counter now (0 where there is none: [`invariant`] refuses those).
#[inline(always)]
pub fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC reads a register; it has no memory effects and is
        // available on every x86_64 CPU.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Ok when the counter ticks at a constant rate through frequency changes
/// and idle states; else the reason it cannot be a clock here.
pub fn invariant() -> Result<(), String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("the TSC clock needs an x86_64 CPU".into());
    }
    let info = std::fs::read_to_string("/proc/cpuinfo")
        .map_err(|e| format!("cannot read /proc/cpuinfo: {e}"))?;
    let flags = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
        .into_iter()
        .filter(|f| !has(f))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "this CPU's TSC is not invariant (no {} in /proc/cpuinfo): its rate changes with \
             frequency or idle states; use --clock monotonic",
            missing.join(", ")
        ))
    }
}

/// A linear map from counter ticks to a reference clock's nanoseconds,
/// fixed by two paired readings `span` apart.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    tsc0: u64,
    ns0: u64,
    /// Nanoseconds per tick, in 32.32 fixed point.
    mult: u64,
    /// Ticks per second.
    pub hz: f64,
}

impl Calibration {
    /// Calibrates against `reference` (ns) over `span` (spent spinning).
    pub fn measure(reference: &dyn Fn() -> u64, span: Duration) -> Calibration {
        let (tsc0, ns0) = pair(reference);
        let end = Instant::now() + span;
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        let (tsc1, ns1) = pair(reference);
        let ticks = tsc1.saturating_sub(tsc0).max(1);
        let ns = ns1.saturating_sub(ns0);
        Calibration {
            tsc0,
            ns0,
            mult: ((u128::from(ns) << 32) / u128::from(ticks)) as u64,
            hz: ticks as f64 * 1e9 / ns.max(1) as f64,
        }
    }

    /// The reference clock's time at counter value `tsc`.
    #[inline(always)]
    pub fn ns(&self, tsc: u64) -> u64 {
        let d = tsc.wrapping_sub(self.tsc0);
        self.ns0 + ((u128::from(d) * u128::from(self.mult)) >> 32) as u64
    }
}

/// A counter reading and a reference reading taken as close together as
/// five tries allow (the counter read on both sides of the reference).
fn pair(reference: &dyn Fn() -> u64) -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let a = read();
        let r = reference();
        let b = read();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a + (b.wrapping_sub(a)) / 2, r);
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibrated_counter_follows_the_monotonic_clock() {
        if invariant().is_err() {
            eprintln!("SKIPPED: no invariant TSC here");
            return;
        }
        let mono = crate::clock::monotonic_ns;
        let c = Calibration::measure(&mono, Duration::from_millis(20));
        assert!(c.hz > 1e8 && c.hz < 1e11, "{c:?}");
        std::thread::sleep(Duration::from_millis(200));
        let (t, m) = pair(&mono);
        // 200 ms on, a rate wrong by 2 % or more would be 4 ms off; a
        // loaded machine (a pause inside a reading pair) costs far less
        // than that, so the bound holds under load and still catches a
        // wrong scale or origin.
        let err = c.ns(t) as i64 - m as i64;
        assert!(err.abs() < 4_000_000, "{err} ns off ({c:?})");
    }

    #[test]
    fn the_map_is_linear_in_ticks() {
        let c = Calibration {
            tsc0: 1000,
            ns0: 5,
            mult: 1 << 31, // half a nanosecond per tick
            hz: 2e9,
        };
        assert_eq!(c.ns(1000), 5);
        assert_eq!(c.ns(3000), 1005);
    }
}
