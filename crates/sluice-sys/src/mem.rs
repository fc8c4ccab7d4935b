//! How much memory this process can be given, for budgets checked before
//! a run allocates (preloading, flows active at once, inject's queue):
//! the least of what the machine has available, what the process's
//! resource limits leave (`RLIMIT_AS`, `RLIMIT_DATA`) and what its cgroup
//! leaves (cgroup v2 `memory.max` − `memory.current`, v1
//! `memory.limit_in_bytes` − `memory.usage_in_bytes`, at every level up
//! the hierarchy). `--max-memory` overrides it.

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

/// What the cgroups this process is in leave it: the least, over its
/// cgroup and every ancestor, of the limit less the usage — cgroup v2
/// (`memory.max` − `memory.current`) and v1 (`memory.limit_in_bytes` −
/// `memory.usage_in_bytes`, where the memory controller is mounted). None
/// when no level sets a limit (or there is no cgroup to read).
fn cgroup_room() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    cgroup_room_in(&cg, &mounts, &|p: &std::path::Path| {
        std::fs::read_to_string(p).ok()
    })
}

/// [`cgroup_room`] from the text of `/proc/self/cgroup` and
/// `/proc/self/mountinfo`, reading control files with `read`.
fn cgroup_room_in(
    cgroup: &str,
    mountinfo: &str,
    read: &dyn Fn(&std::path::Path) -> Option<String>,
) -> Option<u64> {
    use std::path::{Path, PathBuf};
    let mut rooms = Vec::new();
    // Every level from the process's cgroup up to the mount's root.
    let levels = |root: &Path, path: &str| -> Vec<PathBuf> {
        let mut dir = root.join(path.trim_start_matches('/'));
        let mut out = vec![dir.clone()];
        while dir != root && dir.pop() {
            out.push(dir.clone());
        }
        out
    };
    for line in cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let (root, max, used) = if controllers.is_empty() {
            let root = mount_of(mountinfo, "cgroup2", None)
                .unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup"));
            (root, "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            let root = mount_of(mountinfo, "cgroup", Some("memory"))
                .unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup/memory"));
            (root, "memory.limit_in_bytes", "memory.usage_in_bytes")
        } else {
            continue;
        };
        for dir in levels(&root, path) {
            // "max" (v2) or a page-rounded i64::MAX (v1): no limit here.
            let Some(limit) = read(&dir.join(max)).and_then(|t| t.trim().parse::<u64>().ok())
            else {
                continue;
            };
            if limit >= 1 << 60 {
                continue;
            }
            let current = read(&dir.join(used))
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(0);
            rooms.push(limit.saturating_sub(current));
        }
    }
    rooms.into_iter().min()
}

/// Where a cgroup filesystem of type `fstype` is mounted (for v1, the one
/// with the `controller` among its super options).
fn mount_of(mountinfo: &str, fstype: &str, controller: Option<&str>) -> Option<std::path::PathBuf> {
    mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let mut post = post.split_whitespace();
        if post.next()? != fstype {
            return None;
        }
        let opts = post.nth(1).unwrap_or("");
        if let Some(c) = controller {
            if !opts.split(',').any(|o| o == c) {
                return None;
            }
        }
        pre.split_whitespace().nth(4).map(std::path::PathBuf::from)
    })
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

/// Address space a sending run needs at the least, whatever it sends:
/// the binary, its threads' stacks and their allocators' first blocks.
/// Below it a run would die of a failed allocation part-way, so it is
/// refused at its start instead.
pub const MIN_ADDRESS_SPACE: u64 = 128 << 20;

/// Refuses an address-space limit (`RLIMIT_AS`: `ulimit -v`, `prlimit
/// --as`) below `need` bytes, naming both; `what` names who needs it.
pub fn check_address_space(need: u64, what: &str) -> Result<(), String> {
    match rustix::process::getrlimit(rustix::process::Resource::As).current {
        Some(limit) if limit < need => Err(format!(
            "the address-space limit (RLIMIT_AS: ulimit -v, prlimit --as) is {} MiB, below the \
             {} MiB {what} needs: raise it, or bound memory with a cgroup (memory.max) instead",
            limit >> 20,
            need >> 20
        )),
        _ => Ok(()),
    }
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

    /// A fake filesystem of control files for [`cgroup_room_in`].
    fn files<'a>(
        list: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&std::path::Path) -> Option<String> + 'a {
        move |p| {
            list.iter()
                .find(|(n, _)| std::path::Path::new(n) == p)
                .map(|(_, t)| t.to_string())
        }
    }

    #[test]
    fn a_cgroup_v1_memory_limit_is_read() {
        // 500 MiB limit, 100 MiB used, in a v1 memory hierarchy.
        let cg = "12:memory:/lab/run\n11:cpu,cpuacct:/lab/run\n0::/\n";
        let mounts = "30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n";
        let f = files(&[
            (
                "/sys/fs/cgroup/memory/lab/run/memory.limit_in_bytes",
                "524288000\n",
            ),
            (
                "/sys/fs/cgroup/memory/lab/run/memory.usage_in_bytes",
                "104857600\n",
            ),
            (
                "/sys/fs/cgroup/memory/lab/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("/sys/fs/cgroup/memory.max", "max\n"),
        ]);
        assert_eq!(cgroup_room_in(cg, mounts, &f), Some(524288000 - 104857600));
    }

    #[test]
    fn a_limit_of_a_parent_cgroup_counts() {
        let cg = "0::/a/b\n";
        let mounts = "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let f = files(&[
            ("/sys/fs/cgroup/a/b/memory.max", "max\n"),
            ("/sys/fs/cgroup/a/b/memory.current", "10\n"),
            ("/sys/fs/cgroup/a/memory.max", "1000\n"),
            ("/sys/fs/cgroup/a/memory.current", "400\n"),
        ]);
        assert_eq!(cgroup_room_in(cg, mounts, &f), Some(600));
        // No level limits: no figure.
        let f = files(&[("/sys/fs/cgroup/a/b/memory.max", "max\n")]);
        assert_eq!(cgroup_room_in(cg, mounts, &f), None);
    }
}
