//! Skipped tests, made visible: libtest captures what a passing test
//! prints, so a skip said with `eprintln!` alone shows only under
//! `--nocapture`. A skip is written straight to the stderr handle (which
//! the capture does not intercept), and the test binary prints one summary
//! line at exit, after libtest's own `test result` line.

#![allow(unsafe_code)]

use std::io::Write;
use std::sync::{Mutex, Once};

/// "test (needs what)" of every skip in this process.
static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

/// Records that `test` did not run because `what` is missing: a failure
/// under CI (where `.ci/run` provides every tool), else a `SKIPPED` line
/// now and in the binary's summary at exit.
pub fn skip(test: &str, what: &str) {
    assert!(
        !crate::under_ci(),
        "{test}: needs {what}, which CI must provide (.ci/run installs it)"
    );
    // libtest runs each test on a thread named after it.
    let name = match std::thread::current().name() {
        Some(n) if n != "main" => n.to_string(),
        _ => test.to_string(),
    };
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {name}: needs {what}, which is not available here"
    );
    SKIPPED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(format!("{name} (needs {what})"));
    AT_EXIT.call_once(|| {
        // SAFETY: atexit(3) registers a function with the C ABI and no
        // arguments; `summary` is one and lives as long as the program.
        unsafe {
            libc::atexit(summary);
        }
    });
}

/// Runs at exit (after libtest printed its result): one line listing the
/// skips. Must not panic, as it runs outside Rust's main.
extern "C" fn summary() {
    let list = match SKIPPED.lock() {
        Ok(l) => l,
        Err(e) => e.into_inner(),
    };
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {} test(s) of {}: {}",
        list.len(),
        std::env::args().next().unwrap_or_default(),
        list.join("; ")
    );
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// Run alone by the test below, in a child process without `CI`.
    #[test]
    fn skip_probe() {
        if std::env::var_os("SLUICE_TESTKIT_SKIP_PROBE").is_some() {
            super::skip("skip probe", "sluice-no-such-tool");
        }
    }

    fn probe(ci: bool) -> std::process::Output {
        let exe = std::env::current_exe().expect("the test binary");
        let mut cmd = Command::new(exe);
        cmd.args(["skips::tests::skip_probe", "--exact"])
            .env("SLUICE_TESTKIT_SKIP_PROBE", "1")
            .env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output().expect("run the test binary")
    }

    #[test]
    fn under_ci_a_missing_tool_fails_the_test() {
        let out = probe(true);
        assert!(!out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("which CI must provide"), "{stdout}");
    }

    #[test]
    fn a_skip_is_listed_after_the_test_result_without_nocapture() {
        let out = probe(false);
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains("test result: ok. 1 passed"), "{stdout}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("SKIPPED 1 test(s) of ")
                && last.ends_with("skips::tests::skip_probe (needs sluice-no-such-tool)"),
            "{stderr}"
        );
    }
}
