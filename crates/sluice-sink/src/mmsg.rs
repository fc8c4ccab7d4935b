//! `sendmmsg(2)` with the retries every batching backend needs.

/// Sends every message of `msgs` with `sendmmsg(2)`, resuming after partial
/// sends and retrying EINTR/EAGAIN/ENOBUFS (and ECONNREFUSED, the echo of an
/// ICMP port-unreachable on UDP: that datagram is lost, like on any
/// network). A message the kernel refuses on its own (EINVAL, EMSGSIZE) is
/// skipped and counted: one bad frame never stops the run. Returns the
/// messages skipped. `what` names the socket in errors. `done` counts the
/// messages dealt with (taken or skipped), also when an error stops it.
///
/// # Safety
/// Every message's name and iovecs must point to memory that is valid for
/// reads for the whole call.
pub(crate) unsafe fn sendmmsg_all(
    fd: std::os::fd::RawFd,
    msgs: &mut [libc::mmsghdr],
    what: &dyn Fn() -> String,
    done: &mut usize,
) -> Result<u64, crate::SinkError> {
    let n = msgs.len();
    *done = 0;
    let mut skipped = 0;
    while *done < n {
        // SAFETY: msgs[done..] are initialised mmsghdrs whose pointers are
        // valid (the caller's contract); the count matches the slice.
        let rc = unsafe { libc::sendmmsg(fd, msgs[*done..].as_mut_ptr(), (n - *done) as u32, 0) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN | libc::ENOBUFS | libc::ECONNREFUSED) => continue,
                // The first remaining message is the one refused.
                Some(libc::EINVAL | libc::EMSGSIZE) => {
                    *done += 1;
                    skipped += 1;
                    continue;
                }
                _ => return Err(crate::SinkError::os(format!("sendmmsg {}", what()), err)),
            }
        }
        *done += rc as usize;
    }
    Ok(skipped)
}
