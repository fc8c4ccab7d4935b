//! Scheduler and process knobs for the TX threads: CPU pinning, SCHED_FIFO,
//! mlockall, timer slack. Each returns an error the caller reports (e.g.
//! "--rt refused: Operation not permitted") rather than failing the run.

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
    if allowed.is_empty() {
        return Ok(());
    }
    // SAFETY: as in pin_to_cpu: a zeroed cpu_set_t, indices < CPU_SETSIZE,
    // and a live local passed with its exact size.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in allowed {
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

/// Current wall-clock time in nanoseconds since the UNIX epoch.
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Number of CPUs this process may run on.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Sends every message of `msgs` with `sendmmsg(2)`, resuming after partial
/// sends and retrying EINTR/EAGAIN/ENOBUFS (and ECONNREFUSED, the echo of an
/// ICMP port-unreachable on UDP: that datagram is lost, like on any
/// network). `what` names the socket in errors.
///
/// # Safety
/// Every message's name and iovecs must point to memory that is valid for
/// reads for the whole call.
pub(crate) unsafe fn sendmmsg_all(
    fd: std::os::fd::RawFd,
    msgs: &mut [libc::mmsghdr],
    what: &dyn Fn() -> String,
) -> Result<(), crate::SinkError> {
    let n = msgs.len();
    let mut done = 0;
    while done < n {
        // SAFETY: msgs[done..] are initialised mmsghdrs whose pointers are
        // valid (the caller's contract); the count matches the slice.
        let rc = unsafe { libc::sendmmsg(fd, msgs[done..].as_mut_ptr(), (n - done) as u32, 0) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN | libc::ENOBUFS | libc::ECONNREFUSED) => continue,
                _ => return Err(crate::SinkError::os(format!("sendmmsg {}", what()), err)),
            }
        }
        done += rc as usize;
    }
    Ok(())
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
