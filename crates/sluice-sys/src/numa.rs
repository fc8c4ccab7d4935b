//! NUMA nodes: which CPUs each has, which node a NIC hangs off, and a
//! process's memory kept on one node (FLOR §5.4.1: a NIC is reached
//! through one processor's PCIe controller, memory through its own
//! controller; threads and pages on the NIC's node avoid the
//! interconnect).

use std::io;

/// The nodes this host has, in order, each with its CPUs (sysfs
/// `node*/cpulist`); one node holding every online CPU where sysfs has no
/// node directory (a kernel without NUMA).
pub fn nodes() -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = std::fs::read_dir("/sys/devices/system/node")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: usize = name.strip_prefix("node")?.parse().ok()?;
            let list = std::fs::read_to_string(e.path().join("cpulist")).ok()?;
            let cpus = match list.trim() {
                "" => Vec::new(), // a node of memory alone
                l => crate::cpus::parse_cpu_list(l).ok()?,
            };
            Some((n, cpus))
        })
        .collect();
    out.sort();
    if out.is_empty() {
        out.push((0, (0..crate::cpus::online_cpus()).collect()));
    }
    out
}

/// The node the device behind `iface` is attached to: None for a device
/// with no node (virtual interfaces, a host without NUMA: sysfs says -1
/// or has no `device/numa_node`).
pub fn iface_node(iface: &str) -> Option<usize> {
    if iface.is_empty() || iface.contains('/') || iface.starts_with('.') {
        return None;
    }
    std::fs::read_to_string(format!("/sys/class/net/{iface}/device/numa_node"))
        .ok()?
        .trim()
        .parse::<i64>()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
}

/// MPOL_PREFERRED (linux/mempolicy.h).
const MPOL_PREFERRED: libc::c_int = 1;
/// Nodes a mask here can name: a mask of 1024 bits, as libnuma's default.
const MASK_BITS: usize = 1024;

fn mask_of(nodes: impl IntoIterator<Item = usize>) -> [libc::c_ulong; MASK_BITS / 64] {
    let mut m = [0 as libc::c_ulong; MASK_BITS / 64];
    for n in nodes.into_iter().filter(|&n| n < MASK_BITS) {
        m[n / 64] |= 1 << (n % 64);
    }
    m
}

/// Prefers `node` for the calling thread's new pages (threads it spawns
/// afterwards inherit the policy), then moves the pages the process
/// already has on other nodes to it. Returns the pages that could not be
/// moved (0 on one node: there is nothing to move).
pub fn keep_memory_on(node: usize, all: &[usize]) -> io::Result<u64> {
    if node >= MASK_BITS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "node number out of range",
        ));
    }
    let to = mask_of([node]);
    // SAFETY: set_mempolicy reads `MASK_BITS` bits from a live local
    // array of exactly that many bits; it changes only this thread's
    // allocation policy.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            MPOL_PREFERRED,
            to.as_ptr(),
            MASK_BITS as libc::c_ulong,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let others: Vec<usize> = all.iter().copied().filter(|&n| n != node).collect();
    if others.is_empty() {
        return Ok(0);
    }
    let from = mask_of(others);
    // SAFETY: migrate_pages reads two masks of `MASK_BITS` bits from live
    // local arrays; pid 0 is this process, whose pages it moves (the
    // data stays where the program sees it).
    let left = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            0,
            MASK_BITS as libc::c_ulong,
            from.as_ptr(),
            to.as_ptr(),
        )
    };
    if left < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(left as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_online_cpu_is_on_a_node() {
        let n = nodes();
        assert!(!n.is_empty());
        let mut all: Vec<usize> = n.iter().flat_map(|(_, c)| c.clone()).collect();
        all.sort_unstable();
        let len = all.len();
        all.dedup();
        assert!(len > 0 && all.len() == len, "each CPU on one node: {n:?}");
        assert_eq!(iface_node("lo"), None, "a virtual device has no node");
        assert_eq!(iface_node("../x"), None);
    }

    #[test]
    fn memory_kept_on_a_node_this_host_has() {
        let n = nodes();
        let ids: Vec<usize> = n.iter().map(|(i, _)| *i).collect();
        // On a thread of its own: the policy is the thread's.
        std::thread::spawn(move || {
            assert!(keep_memory_on(ids[0], &ids).is_ok());
            assert!(keep_memory_on(MASK_BITS, &ids).is_err());
        })
        .join()
        .unwrap();
    }
}
