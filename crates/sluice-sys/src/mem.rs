//! How much memory the machine can give, for budgets checked before a
//! run allocates (preloading, flows active at once).

/// Budget when /proc/meminfo cannot be read.
const FALLBACK_BUDGET: u64 = 1 << 30;

/// `MemAvailable` from /proc/meminfo, in bytes.
pub fn available() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// The default budget of one run's large allocations: half of the memory
/// available now (1 GiB when that cannot be read).
pub fn default_budget() -> u64 {
    available().map_or(FALLBACK_BUDGET, |b| b / 2)
}

#[cfg(test)]
mod tests {
    #[test]
    fn linux_says_how_much_memory_is_available() {
        let a = super::available().expect("MemAvailable");
        assert!(a > 1 << 20);
        assert_eq!(super::default_budget(), a / 2);
    }
}
