//! A task's job in its child process (`sluice job FILE`): started,
//! its statistics lines forwarded, stopped at its deadline, and how it
//! ended told back.

use super::config::KILL_AFTER;
use super::state::log;
use crate::error::Result;
use crate::failure::{JobFailure, FAILURE_ENV};
use crate::now_ns;
use crate::pb::{self, update};
use crate::worker_checks::without_dir;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tonic::Status;

/// A task admitted to run: its job (a file in the lease's directory),
/// where, and when.
pub(crate) struct Admitted {
    /// The job's process's arguments: `job FILE`.
    pub(crate) args: Vec<String>,
    /// What the job is, for the log.
    pub(crate) what: String,
    pub(crate) dir: PathBuf,
    pub(crate) summary: PathBuf,
    pub(crate) name: String,
    /// Start and deadline on this host's clock.
    pub(crate) start: i64,
    pub(crate) deadline: i64,
    /// The job takes clock corrections on its stdin.
    pub(crate) corrections: bool,
}

/// Writes each clock correction to the job's stdin as `shift NS`; ends
/// when the job's pipe or the worker's channel closes.
pub(crate) async fn pass_corrections(
    mut stdin: tokio::process::ChildStdin,
    mut rx: tokio::sync::mpsc::Receiver<i64>,
) {
    use tokio::io::AsyncWriteExt as _;
    while let Some(shift) = rx.recv().await {
        let line = format!("shift {shift}\n");
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// How much of a job's stderr the worker keeps (its end).
pub(crate) const STDERR_TAIL: usize = 64 * 1024;

/// The job's process: `exe args` in `dir`, output piped, killed with the
/// worker.
pub(crate) fn job_command(exe: &Path, args: &[String], dir: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(args)
        .current_dir(dir)
        // A failure is told as one JSON line on stdout (sluice.failure/1).
        .env(FAILURE_ENV, "1")
        // A crash reports its message, never a backtrace with build paths.
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // A worker that dies takes its job with it (the job stops cleanly on
    // SIGTERM, summary flushed).
    sluice_sys::process::die_with_parent(cmd.as_std_mut());
    cmd
}

/// How a job's process ended.
pub(crate) struct Ended {
    /// None when it could not be waited for.
    pub(crate) status: Option<std::process::ExitStatus>,
    /// Its stderr, for a process that died without a failure line.
    pub(crate) stderr: String,
    /// Its `sluice.failure/1` line, when it failed and said so.
    pub(crate) failure: Option<JobFailure>,
}

/// Forwards the job's statistics lines until its output ends, stopping it
/// at its deadline (a controller that went away does not stop it: the
/// deadline does); how it ended.
pub(crate) async fn watch(
    job: &Admitted,
    mut child: tokio::process::Child,
    stdout: tokio::process::ChildStdout,
    mut stderr: tokio::process::ChildStderr,
    tx: &tokio::sync::mpsc::Sender<Result<pb::Update, Status>>,
) -> Ended {
    let pid = child.id().unwrap_or(0);
    let mut lines = BufReader::new(stdout).lines();
    let err_text = tokio::spawn(async move {
        let mut s = String::new();
        // Only the end is kept: a job that writes without end costs the
        // worker a bounded buffer.
        let mut buf = [0u8; 8192];
        let mut tail: Vec<u8> = Vec::new();
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    });
    let until = Duration::from_nanos(job.deadline.saturating_sub(now_ns()).max(0) as u64);
    let deadline_at = tokio::time::Instant::now() + until;
    let mut stopped = false;
    let mut failure = None;
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(l)) => match JobFailure::parse(&l) {
                    Some(f) => failure = Some(f),
                    None => {
                        let _ = tx.send(Ok(pb::Update { kind: Some(update::Kind::Stats(l)) })).await;
                    }
                },
                _ => break,
            },
            _ = tokio::time::sleep_until(deadline_at), if !stopped => {
                log(&format!("'{}': deadline reached: stopping the job", job.name));
                let _ = sluice_sys::process::terminate(pid);
                stopped = true;
            }
        }
    }
    let status = match tokio::time::timeout(KILL_AFTER, child.wait()).await {
        Ok(s) => s.ok(),
        Err(_) => {
            let _ = child.kill().await;
            child.wait().await.ok()
        }
    };
    Ended {
        status,
        stderr: err_text.await.unwrap_or_default(),
        failure,
    }
}

/// The job's last update: its summary, or why there is none. A job that
/// failed says why in its failure line; one without (killed, crashed) is
/// described by its exit status and stderr.
pub(crate) fn outcome(summary: &Path, ended: Ended) -> update::Kind {
    if let Ok(t) = std::fs::read_to_string(summary) {
        return update::Kind::Finished(t);
    }
    // The lease's files as the peer named them: this worker's own
    // directories are none of its business.
    let dir = summary.parent().unwrap_or(Path::new("/"));
    let plain = |t: &str| without_dir(t, dir);
    match ended.failure {
        // sluice exits 2 on bad input, before it sends anything.
        Some(f) if f.exit == 2 => update::Kind::Refused(plain(&f.error)),
        Some(f) => update::Kind::Failed(format!("{} (exit status: {})", plain(&f.error), f.exit)),
        None => update::Kind::Failed(format!(
            "{} ({})",
            plain(&last_error_line(&ended.stderr)),
            ended.status.map_or("killed".into(), |s| s.to_string())
        )),
    }
}

/// What a job that died without a failure line said last: a panic's
/// message, else its last line that is not part of a backtrace, at most
/// 300 characters. A backtrace (build paths, frames) never reaches the
/// controller.
pub(crate) fn last_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    let panic = lines.iter().rposition(|l| l.contains("panicked at"));
    let line = match panic {
        // The message is the line after `thread 'x' panicked at FILE:L:C:`.
        Some(i) => lines
            .get(i + 1)
            .filter(|l| !l.is_empty() && !l.starts_with("note:"))
            .map(|m| format!("the job panicked: {m}"))
            .unwrap_or_else(|| "the job panicked".into()),
        None => lines
            .iter()
            .rev()
            .find(|l| !l.is_empty() && !backtrace_line(l))
            .map_or_else(|| "no error message".into(), |l| l.to_string()),
    };
    shown_long(&line, 300)
}

/// A line of a Rust backtrace or its notes.
pub(crate) fn backtrace_line(l: &str) -> bool {
    let frame = l
        .split_once(':')
        .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    frame || l.starts_with("at ") || l.starts_with("stack backtrace") || l.starts_with("note: ")
}

/// `text` with control characters escaped, cut at `max` characters.
pub(crate) fn shown_long(text: &str, max: usize) -> String {
    let mut s = String::new();
    for c in text.chars().take(max) {
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    if text.chars().count() > max {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_crashed_job_reports_its_message_not_its_backtrace() {
        let panic = "thread 'main' panicked at /build/sluice/crates/x/src/a.rs:3:5:\n\
                     index out of bounds\nstack backtrace:\n   0: rust_begin_unwind\n\
                     \x20            at /rustc/abc/library/std/src/panicking.rs:652:5\n\
                     note: Some details are omitted\n";
        let l = last_error_line(panic);
        assert_eq!(l, "the job panicked: index out of bounds");
        let abort = "memory allocation of 34359738368 bytes failed\n";
        assert_eq!(
            last_error_line(abort),
            "memory allocation of 34359738368 bytes failed"
        );
        let chatty = "progress\nsluice: cannot open x\n  12: main\n      at /b/main.rs:1\n";
        assert_eq!(last_error_line(chatty), "sluice: cannot open x");
        assert_eq!(last_error_line(""), "no error message");
        assert!(last_error_line(&"y".repeat(1000)).chars().count() <= 301);
        assert!(!last_error_line("bad\x1b[2Jline").contains('\x1b'));
    }
}
