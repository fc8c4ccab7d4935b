//! Test networks that cannot collide with the host's. An address a test
//! puts on an interface of the root namespace adds a route the whole host
//! uses: on a host that already routes that subnet (a LAN, a VPN, a
//! container bridge) the test would take part of it over and fail on
//! traffic it never sent. So the /24 is chosen at run time, among
//! candidates no route or address of the host overlaps
//! (`ip -4 route show table all`, `ip -4 -o addr show`), and held against
//! other test runs on the machine by a lock file until it is dropped.
//! Addresses inside a namespace the test created are private to it and
//! need none of this.
//!
//! `SLUICE_TEST_SUBNETS="10.88.0.0/24 10.88.1.0/24"` replaces the
//! candidates. `bench/subnet.sh` does the same for the bench scripts, with
//! the same lock files, so a test and a bench script never share a /24.

#![allow(unsafe_code)]

use std::fmt;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable that replaces the candidate subnets.
pub const SUBNETS_ENV: &str = "SLUICE_TEST_SUBNETS";

/// An IPv4 /24: its first three octets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subnet(pub [u8; 3]);

impl Subnet {
    /// `10.77.0.0/24`, `10.77.0.0` or `10.77.0`.
    pub fn parse(s: &str) -> Option<Subnet> {
        let s = s.trim();
        let s = s.strip_suffix("/24").unwrap_or(s);
        let s = s
            .strip_suffix(".0")
            .filter(|p| p.split('.').count() == 3)
            .unwrap_or(s);
        let mut o = [0u8; 3];
        let mut parts = s.split('.');
        for b in &mut o {
            *b = parts.next()?.parse().ok()?;
        }
        parts.next().is_none().then_some(Subnet(o))
    }

    /// Host `n` of the subnet: `10.77.0.n`.
    pub fn host(&self, n: u8) -> String {
        let [a, b, c] = self.0;
        format!("{a}.{b}.{c}.{n}")
    }

    /// Host `n` with the prefix length, for `ip addr add`: `10.77.0.n/24`.
    pub fn cidr(&self, n: u8) -> String {
        format!("{}/24", self.host(n))
    }

    /// The prefix as the bench scripts write it: `10.77.0`.
    pub fn prefix(&self) -> String {
        let [a, b, c] = self.0;
        format!("{a}.{b}.{c}")
    }

    fn first(&self) -> u32 {
        let [a, b, c] = self.0;
        u32::from_be_bytes([a, b, c, 0])
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.0/24", self.prefix())
    }
}

/// Route types `ip route` prints before the destination.
const ROUTE_TYPES: &[&str] = &[
    "unicast",
    "local",
    "broadcast",
    "multicast",
    "blackhole",
    "unreachable",
    "prohibit",
    "throw",
    "nat",
    "anycast",
];

/// `a.b.c.d` or `a.b.c.d/len` as (address, prefix length).
fn prefix_of(word: &str) -> Option<(u32, u8)> {
    let (addr, len) = match word.split_once('/') {
        Some((a, l)) => (a, l.parse().ok().filter(|l| *l <= 32)?),
        None => (word, 32),
    };
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    Some((u32::from(ip), len))
}

/// Every IPv4 prefix the host routes or holds an address in, with the
/// line it came from: destinations of `ip -4 route show table all` (the
/// default route, which every more specific route overrides, left out)
/// and the addresses and peers of `ip -4 -o addr show`.
pub fn host_prefixes(routes: &str, addrs: &str) -> Vec<(u32, u8, String)> {
    let mut out = Vec::new();
    for line in routes.lines() {
        let mut words = line.split_whitespace();
        let mut dst = words.next().unwrap_or("");
        if ROUTE_TYPES.contains(&dst) {
            dst = words.next().unwrap_or("");
        }
        if let Some((a, l)) = prefix_of(dst).filter(|(_, l)| *l > 0) {
            out.push((a, l, line.trim().to_string()));
        }
    }
    for line in addrs.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for w in words.windows(2) {
            if w[0] == "inet" || w[0] == "peer" {
                if let Some((a, l)) = prefix_of(w[1]) {
                    let line = line.split('\\').next().unwrap_or(line).trim();
                    out.push((a, l, line.to_string()));
                }
            }
        }
    }
    out
}

/// The host's line that overlaps `s`, if any.
fn clash(s: Subnet, host: &[(u32, u8, String)]) -> Option<&str> {
    host.iter()
        .find(|(a, l, _)| {
            let m = (*l).min(24);
            let mask = if m == 0 { 0 } else { u32::MAX << (32 - m) };
            a & mask == s.first() & mask
        })
        .map(|(_, _, line)| line.as_str())
}

/// The candidates: those of `SLUICE_TEST_SUBNETS` where it is set, else
/// `preferred` and then 10.77.0.0/24 up to 10.254.255.0/24.
fn candidates(preferred: Subnet) -> Result<Vec<Subnet>, String> {
    if let Ok(list) = std::env::var(SUBNETS_ENV) {
        return list
            .split([' ', ',', '\t', '\n'])
            .filter(|w| !w.is_empty())
            .map(|w| Subnet::parse(w).ok_or_else(|| format!("{SUBNETS_ENV}: '{w}' is not a /24")))
            .collect();
    }
    Ok(default_candidates(preferred))
}

/// `preferred`, then 10.77.0.0/24 up to 10.254.255.0/24.
fn default_candidates(preferred: Subnet) -> Vec<Subnet> {
    let mut all = vec![preferred];
    for b in 77..=254u8 {
        for c in 0..=255u8 {
            if Subnet([10, b, c]) != preferred {
                all.push(Subnet([10, b, c]));
            }
        }
    }
    all
}

/// The first of `candidates` that no host prefix overlaps and `take`
/// accepts (`take` holds it, or says another run does); the error names
/// each clash when none is left.
pub fn pick_subnet<T>(
    candidates: &[Subnet],
    host: &[(u32, u8, String)],
    mut take: impl FnMut(Subnet) -> Option<T>,
) -> Result<(Subnet, T), String> {
    let mut clashes: Vec<String> = Vec::new();
    let mut held = 0;
    for &s in candidates {
        if let Some(line) = clash(s, host) {
            // Each line of the host's once, with the first /24 it takes.
            let quoted = format!("'{line}'");
            if clashes.len() < 5 && !clashes.iter().any(|c| c.ends_with(&quoted)) {
                clashes.push(format!("{s} overlaps the host's {quoted}"));
            }
            continue;
        }
        match take(s) {
            Some(t) => return Ok((s, t)),
            None => held += 1,
        }
    }
    Err(format!(
        "no free /24 for a test network among {} candidates ({held} held by other runs{}{}); \
         name free ones in {SUBNETS_ENV}",
        candidates.len(),
        if clashes.is_empty() { "" } else { "; " },
        clashes.join("; ")
    ))
}

/// A /24 held for one test: free on the host when it was chosen, and
/// locked against other tests and bench scripts of this machine until
/// dropped.
#[derive(Debug)]
pub struct SubnetLease {
    pub subnet: Subnet,
    _lock: File,
}

impl std::ops::Deref for SubnetLease {
    type Target = Subnet;
    fn deref(&self) -> &Subnet {
        &self.subnet
    }
}

/// The lock file of `s`, shared with `bench/subnet.sh`.
pub fn lock_path(s: Subnet) -> PathBuf {
    std::env::temp_dir().join(format!("sluice-subnet-{}.lock", s.prefix()))
}

/// The lock of `s`, or None when another process holds it.
fn lock(path: &Path) -> Option<File> {
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    // SAFETY: flock(2) on a descriptor this function owns for the call;
    // no memory is passed.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    (r == 0).then_some(f)
}

fn ip(args: &[&str]) -> Result<String, String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if !o.status.success() {
        return Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// A /24 for addresses on interfaces of the root namespace that no route
/// or address of this host overlaps, `preferred` first; held until the
/// lease is dropped. Panics naming the clashes when none is free: a test
/// network on a subnet the host uses would take its traffic.
pub fn free_subnet(preferred: Subnet) -> SubnetLease {
    try_free_subnet(preferred).unwrap_or_else(|e| panic!("{e}"))
}

/// As [`free_subnet`], the reason as an error.
pub fn try_free_subnet(preferred: Subnet) -> Result<SubnetLease, String> {
    let routes = ip(&["-4", "route", "show", "table", "all"])?;
    let addrs = ip(&["-4", "-o", "addr", "show"])?;
    let host = host_prefixes(&routes, &addrs);
    let (subnet, lock) = pick_subnet(&candidates(preferred)?, &host, |s| lock(&lock_path(s)))?;
    Ok(SubnetLease {
        subnet,
        _lock: lock,
    })
}

/// True when no interface of this namespace and no named network
/// namespace is called `name`: a test creates only what is free, and so
/// deletes only what it made.
pub fn name_free(name: &str) -> bool {
    !Path::new("/sys/class/net").join(name).exists() && !Path::new("/run/netns").join(name).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = "\
default via 192.0.2.1 dev eth0
10.77.0.0/24 dev br-lab proto kernel scope link src 10.77.0.1
10.77.1.7 via 192.0.2.1 dev eth0
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2
local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1
broadcast 192.0.2.255 dev eth0 table local proto kernel scope link src 192.0.2.2
";
    const ADDRS: &str = "\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever
7: tun0    inet 10.77.2.1 peer 10.77.3.9/32 scope global tun0\\       valid_lft forever
";

    #[test]
    fn subnets_parse_and_print_as_the_scripts_write_them() {
        let s = Subnet::parse("10.77.0.0/24").unwrap();
        assert_eq!(Subnet::parse("10.77.0"), Some(s));
        assert_eq!(Subnet::parse("10.77.0.0"), Some(s));
        assert_eq!(
            (s.host(2), s.cidr(1)),
            ("10.77.0.2".into(), "10.77.0.1/24".into())
        );
        assert_eq!(
            (s.to_string(), s.prefix()),
            ("10.77.0.0/24".into(), "10.77.0".into())
        );
        for bad in ["10.77", "10.77.0.0.0", "10.300.0", "x"] {
            assert_eq!(Subnet::parse(bad), None, "{bad}");
        }
    }

    /// A host that routes 10.77.0.0/24 (today's fixed choice) gets another
    /// /24, past host routes, addresses and peers.
    #[test]
    fn a_subnet_the_host_routes_is_passed_over() {
        let host = host_prefixes(ROUTES, ADDRS);
        let cands = default_candidates(Subnet([10, 77, 0]));
        let (s, ()) = pick_subnet(&cands, &host, |_| Some(())).unwrap();
        assert_eq!(s, Subnet([10, 77, 4]), "10.77.0-3 are the host's");
        // One held by another run is passed over too.
        let (s, ()) =
            pick_subnet(&cands, &host, |s| (s != Subnet([10, 77, 4])).then_some(())).unwrap();
        assert_eq!(s, Subnet([10, 77, 5]));
        // The default route does not count; 192.0.2.0/24 and 127/8 do.
        assert!(clash(Subnet([10, 9, 0]), &host).is_none());
        assert!(clash(Subnet([192, 0, 2]), &host).is_some());
        assert!(clash(Subnet([127, 5, 0]), &host).is_some());
    }

    /// A host routing all of 10/8 (a VPN) leaves no candidate: the error
    /// names the clash and the way out.
    #[test]
    fn when_none_is_free_the_error_names_the_clash() {
        let routes = format!("{ROUTES}10.0.0.0/8 dev tun1 scope link\n");
        let host = host_prefixes(&routes, ADDRS);
        let cands = [Subnet([10, 77, 0]), Subnet([10, 200, 3])];
        let e = pick_subnet(&cands, &host, |_| Some(())).unwrap_err();
        assert!(
            e.contains("10.200.3.0/24 overlaps the host's '10.0.0.0/8 dev tun1"),
            "{e}"
        );
        assert!(e.contains(SUBNETS_ENV), "{e}");
    }

    /// The lock holds a /24 against every other lease until dropped.
    #[test]
    fn a_leased_subnet_is_locked_until_dropped() {
        let path =
            std::env::temp_dir().join(format!("sluice-subnet-test-{}.lock", std::process::id()));
        let held = lock(&path).expect("a fresh lock");
        assert!(lock(&path).is_none(), "held by the first");
        drop(held);
        // A process another test thread forks at that moment holds a copy
        // of the descriptor (and so the flock) until it execs, which
        // closes it: a loaded machine can stretch that to seconds.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let free = loop {
            if lock(&path).is_some() {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(free, "free again");
        let _ = std::fs::remove_file(&path);
    }

    /// bench/subnet.sh picks the same way: with a fake `ip` whose tables
    /// hold 10.77.0-3, it passes them over; a SUBNET the host uses is
    /// refused, naming the clash; names in use are refused.
    #[test]
    fn the_bench_scripts_helper_passes_over_the_hosts_subnets() {
        let d = std::env::temp_dir().join(format!("sluice-subnet-sh-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fake = d.join("ip");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\ncase \"$*\" in\n*route*) cat <<'EOF'\n{ROUTES}EOF\n;;\n*addr*) cat <<'EOF'\n{ADDRS}EOF\n;;\n*link\\ show\\ taken0*) echo 9: taken0; exit 0 ;;\n*link\\ show*) exit 1 ;;\nesac\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!(
            "{}:{}",
            d.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let sh = |script: &str, env: &[(&str, &str)]| {
            let o = Command::new("bash")
                .arg("-c")
                .arg(format!(
                    ". '{}'; {script}",
                    crate::bench_script("subnet.sh").display()
                ))
                .env("PATH", &path)
                .env("TMPDIR", &d)
                .env_remove(SUBNETS_ENV)
                .env_remove("SUBNET")
                .envs(env.iter().copied())
                .output()
                .expect("bash runs");
            (
                o.status.success(),
                String::from_utf8_lossy(&o.stdout).trim().to_string(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        };
        let (ok, out, err) = sh("free_subnet net 10.77.0 && echo $net", &[]);
        assert!(ok, "{err}");
        assert_eq!(out, "10.77.4", "{err}");
        // Held by a lease of this process: the script takes the next.
        let held = lock(&d.join("sluice-subnet-10.77.4.lock")).unwrap();
        let (ok, out, err) = sh("free_subnet net 10.77.0 && echo $net", &[]);
        assert!(ok && out == "10.77.5", "{out} {err}");
        drop(held);
        // SUBNET (the caller holds it) is checked against the host only.
        let (ok, out, err) = sh(
            "free_subnet net 10.77.0 && echo $net",
            &[("SUBNET", "10.88.1")],
        );
        assert!(ok && out == "10.88.1", "{out} {err}");
        let (ok, _, err) = sh("free_subnet net 10.77.0", &[("SUBNET", "10.77.1")]);
        assert!(
            !ok && err.contains("10.77.1.0/24") && err.contains("10.77.1.7 via"),
            "{err}"
        );
        let (ok, out, err) = sh(
            "free_subnet net 10.77.0 && echo $net",
            &[(SUBNETS_ENV, "10.77.0.0/24 10.90.9.0/24")],
        );
        assert!(ok && out == "10.90.9", "{out} {err}");
        let (ok, _, err) = sh("free_subnet net 10.77.0", &[(SUBNETS_ENV, "10.77.0")]);
        assert!(!ok && err.contains("10.77.0.0/24 dev br-lab"), "{err}");
        // Names.
        let (ok, _, err) = sh("names_free free0 taken0", &[]);
        assert!(!ok && err.contains("taken0"), "{err}");
        let (ok, _, err) = sh("names_free free0 free1", &[]);
        assert!(ok, "{err}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
