//! What a TX thread asks of the scheduler: CPU pinning, SCHED_FIFO,
//! mlockall, timer slack. Each returns an error the caller reports (e.g.
//! "--rt refused: Operation not permitted") rather than failing the run.

use crate::cpus::online_cpus;
use std::io;

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cpu index out of range",
        ));
    }
    // SAFETY: cpu_set_t is plain data, zero is a valid (empty) set; CPU_SET is
    // given an index checked against CPU_SETSIZE above; sched_setaffinity reads
    // exactly size_of::<cpu_set_t>() bytes from a live local.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Restricts the calling thread to CPUs not in `avoid` (when any remain),
/// so helper threads keep off the CPUs of pinned TX threads.
pub fn avoid_cpus(avoid: &[usize]) -> io::Result<()> {
    let n = online_cpus().min(libc::CPU_SETSIZE as usize);
    let allowed: Vec<usize> = (0..n).filter(|c| !avoid.contains(c)).collect();
    allow_cpus(&allowed)
}

/// Restricts the calling thread to the CPUs `allowed` (nothing changes
/// when it is empty); threads it spawns afterwards inherit the set.
pub fn allow_cpus(allowed: &[usize]) -> io::Result<()> {
    let allowed: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|&c| c < libc::CPU_SETSIZE as usize)
        .collect();
    if allowed.is_empty() {
        return Ok(());
    }
    // SAFETY: as in pin_to_cpu: a zeroed cpu_set_t, indices < CPU_SETSIZE,
    // and a live local passed with its exact size.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in &allowed {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// True when the kernel throttles real-time threads (sched_rt_runtime_us
/// is not -1): a spinning SCHED_FIFO thread is then frozen for the rest of
/// every period (50 ms of each second by default).
pub fn rt_throttled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .map(|s| s.trim() != "-1")
        .unwrap_or(false)
}

/// Gives the calling thread SCHED_FIFO at `priority` (1..=99).
pub fn set_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid, live struct.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Locks current and future pages in RAM so page faults cannot stall sending.
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall takes only flags and touches no memory of ours.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the calling thread's timer slack (default 50 µs) so sleeps wake on
/// time; the pacer then spins only the last few microseconds.
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and no pointers.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_slack_and_pinning_work_on_linux() {
        set_timer_slack(1).unwrap();
        pin_to_cpu(0).unwrap();
        assert!(pin_to_cpu(100_000).is_err());
    }
}
