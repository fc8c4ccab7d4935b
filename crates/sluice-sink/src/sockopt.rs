//! `setsockopt(2)` for the backends: one typed call instead of a raw
//! pointer and length at every option.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Sets option `name` at `level` to `val`, passed with its own size.
pub(crate) fn setsockopt<T>(fd: impl AsFd, level: i32, name: i32, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to a live T of exactly size_of::<T>() bytes, which
    // is what the kernel reads for the options the backends set with it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            (val as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
