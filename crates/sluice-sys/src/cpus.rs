//! CPU counts and CPU lists.

/// Number of CPUs this process may run on.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Parses a CPU list as `taskset -c` writes it: numbers and inclusive
/// ranges separated by commas (`1`, `0,1`, `0-3,8`). Order is kept
/// (TX thread i goes to the i-th CPU); an empty list is refused.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("'{t}' is not a CPU number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("'{part}': a range goes from low to high"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        assert_eq!(parse_cpu_list("1"), Ok(vec![1]));
        assert_eq!(parse_cpu_list("1,0"), Ok(vec![1, 0]));
        assert_eq!(parse_cpu_list("0-2, 5"), Ok(vec![0, 1, 2, 5]));
    }

    #[test]
    fn a_bad_cpu_list_names_the_bad_part() {
        assert_eq!(parse_cpu_list("0,x"), Err("'x' is not a CPU number".into()));
        assert!(parse_cpu_list("3-1").unwrap_err().contains("'3-1'"));
        assert!(parse_cpu_list("").is_err());
    }

    #[test]
    fn this_process_has_at_least_one_cpu() {
        assert!(online_cpus() >= 1);
    }
}
