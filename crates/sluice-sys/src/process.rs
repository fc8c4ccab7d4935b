//! Child processes a worker runs: stopping one by signal, and a child that
//! dies with its parent.

/// Asks process `pid` to stop (SIGTERM). A pid of 0, or one already gone,
/// is nothing to do: the error is the OS's (ESRCH), for the caller to
/// ignore or report.
pub fn terminate(pid: u32) -> std::io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
    Ok(())
}

/// In a child about to exec: SIGTERM when the parent dies, so a worker
/// that dies takes its job with it. Async-signal-safe (one prctl).
fn terminate_with_parent() -> std::io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
    Ok(())
}

/// Makes the child `cmd` starts get SIGTERM when this process dies (a
/// worker that dies takes its job with it).
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec; it makes
    // one async-signal-safe system call (prctl) and touches no memory of
    // the parent.
    unsafe {
        cmd.pre_exec(terminate_with_parent);
    }
}
