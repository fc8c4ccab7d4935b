//! CPU counts and CPU lists.

/// Number of CPUs this process may run on.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Highest CPU number the kernel may ever bring online on this host
/// (`/sys/devices/system/cpu/possible`, e.g. `0-63`); the online count
/// less one where that file cannot be read.
pub fn max_possible_cpu() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            s.trim()
                .split(',')
                .filter_map(|p| p.rsplit('-').next()?.trim().parse::<usize>().ok())
                .max()
        })
        .unwrap_or_else(|| online_cpus().saturating_sub(1))
}

/// Bytes of the last-level cache CPU 0 sees (the highest `level` under
/// `/sys/devices/system/cpu/cpu0/cache/`), or None where sysfs does not
/// say.
pub fn last_level_cache() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
            let level: u32 = read("level")?.trim().parse().ok()?;
            Some((level, cache_size(&read("size")?)?))
        })
        .max()
        .map(|(_, size)| size)
}

/// A cache size as sysfs writes it: `32768K`, `1M`, or bytes.
fn cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Most interface queues a list may name: the kernel's own limit on a
/// device's TX queues (`ip link add … numtxqueues` refuses more).
pub const MAX_QUEUE: usize = 4095;

/// Parses a CPU list as `taskset -c` writes it: numbers and inclusive
/// ranges separated by commas (`1`, `0,1`, `0-3,8`). Order is kept
/// (TX thread i goes to the i-th CPU); an empty list is refused, and so
/// is a CPU this host cannot have (checked before a range is expanded, so
/// no value can make the list large).
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let max = max_possible_cpu();
    parse_bounded_list(s, max, "CPU", &format!("a CPU of this host (0-{max})"))
}

/// Parses a list of interface queue numbers, written as a CPU list, each
/// at most [`MAX_QUEUE`].
pub fn parse_queue_list(s: &str) -> Result<Vec<usize>, String> {
    parse_bounded_list(
        s,
        MAX_QUEUE,
        "queue",
        &format!("an interface queue (0-{MAX_QUEUE})"),
    )
}

/// A comma list of numbers and ranges, each number at most `max`
/// (`noun` and `what` say what they are in errors), with at most
/// `max + 1` entries in all.
fn parse_bounded_list(s: &str, max: usize, noun: &str, what: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let num = |t: &str| {
            let n = t
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("'{t}' is not a {noun} number"))?;
            if n > max {
                return Err(format!("{n} is not {what}"));
            }
            Ok(n)
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("'{part}': a range goes from low to high"));
                }
                if out.len() + (b - a + 1) > max + 1 {
                    return Err(format!("'{s}' names more than {} entries", max + 1));
                }
                out.extend(a..=b);
            }
            None => {
                if out.len() > max {
                    return Err(format!("'{s}' names more than {} entries", max + 1));
                }
                out.push(num(part)?)
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_sizes_read_as_sysfs_writes_them() {
        assert_eq!(super::cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(super::cache_size("1M"), Some(1 << 20));
        assert_eq!(super::cache_size("512"), Some(512));
        assert_eq!(super::cache_size("K"), None);
        assert_eq!(super::cache_size(""), None);
    }
    use super::*;

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        // The syntax, apart from this host's CPUs (queues share it).
        assert_eq!(parse_queue_list("1"), Ok(vec![1]));
        assert_eq!(parse_queue_list("1,0"), Ok(vec![1, 0]));
        assert_eq!(parse_queue_list("0-2, 5"), Ok(vec![0, 1, 2, 5]));
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
    }

    #[test]
    fn a_bad_cpu_list_names_the_bad_part() {
        assert_eq!(parse_cpu_list("0,x"), Err("'x' is not a CPU number".into()));
        assert!(parse_queue_list("3-1").unwrap_err().contains("'3-1'"));
        assert!(parse_cpu_list("").is_err());
    }

    #[test]
    fn a_huge_list_is_refused_before_it_is_expanded() {
        // Expanding this range would ask for 32 GiB.
        let e = parse_cpu_list("0-4294967295").unwrap_err();
        assert!(e.contains("4294967295 is not a CPU of this host"), "{e}");
        let e = parse_queue_list("0-4294967295").unwrap_err();
        assert!(e.contains("is not an interface queue (0-4095)"), "{e}");
        assert_eq!(parse_queue_list("4094-4095"), Ok(vec![4094, 4095]));
        // Repeated entries cannot grow it past the bound either.
        let many = ["0-4095"; 3].join(",");
        assert!(parse_queue_list(&many)
            .unwrap_err()
            .contains("more than 4096"));
        let max = max_possible_cpu();
        assert_eq!(parse_cpu_list(&max.to_string()), Ok(vec![max]));
        assert!(max + 1 >= online_cpus());
    }

    #[test]
    fn this_process_has_at_least_one_cpu() {
        assert!(online_cpus() >= 1);
    }
}
