//! How much memory this process can be given, for budgets checked before
//! a run allocates (preloading, flows active at once, inject's queue):
//! the least of what the machine has available, what the process's
//! resource limits leave (`RLIMIT_AS`, `RLIMIT_DATA`) and what its cgroup
//! leaves (`memory.max` − `memory.current`). `--max-memory` overrides it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Budget when nothing can be read.
const FALLBACK_BUDGET: u64 = 1 << 30;

/// Set by `--max-memory`: the budget every default takes instead (0:
/// none set).
static OVERRIDE: AtomicU64 = AtomicU64::new(0);

/// `MemAvailable` from /proc/meminfo, in bytes.
pub fn mem_available() -> Option<u64> {
    meminfo_field(
        &std::fs::read_to_string("/proc/meminfo").ok()?,
        "MemAvailable:",
    )
}

fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// What a soft resource limit leaves above what the process uses now
/// (`used` from /proc/self/status, in bytes); None when unlimited.
fn rlimit_room(resource: rustix::process::Resource, used_key: &str) -> Option<u64> {
    let limit = rustix::process::getrlimit(resource).current?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let used = meminfo_field(&status, used_key).unwrap_or(0);
    Some(limit.saturating_sub(used))
}

/// The cgroup (v2) this process is in: `memory.max` − `memory.current`;
/// None when there is no limit (or no cgroup v2).
fn cgroup_room() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?; // "max": no limit
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// The memory this process may still take, in bytes: the least of
/// MemAvailable, the address-space and data limits' room, and the
/// cgroup's room.
pub fn available() -> Option<u64> {
    [
        mem_available(),
        rlimit_room(rustix::process::Resource::As, "VmSize:"),
        rlimit_room(rustix::process::Resource::Data, "VmData:"),
        cgroup_room(),
    ]
    .into_iter()
    .flatten()
    .min()
}

/// Sets the budget every default takes (`--max-memory`).
pub fn set_budget(bytes: u64) {
    OVERRIDE.store(bytes.max(1), Ordering::Relaxed);
}

/// The default budget of one run's large allocations: `--max-memory`
/// when given, else half of [`available`] (1 GiB when nothing can be
/// read).
pub fn default_budget() -> u64 {
    match OVERRIDE.load(Ordering::Relaxed) {
        0 => available().map_or(FALLBACK_BUDGET, |b| b / 2),
        set => set,
    }
}

/// Bytes free to an unprivileged writer on the filesystem holding `dir`.
pub fn free_space(dir: &std::path::Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_the_least_of_memory_limits_and_cgroup() {
        let a = available().expect("some memory figure");
        assert!(a > 1 << 20);
        assert!(a <= mem_available().unwrap());
        assert!(default_budget() <= a / 2 + (a / 100));
        assert!(free_space(std::path::Path::new("/")).unwrap() > 0);
    }
}
