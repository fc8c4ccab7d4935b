//! Running a sending job, as a library: a typed [`Job`]
//! (`sluice_job::command`: a sending command's arguments, as a command
//! line, a worker's job file or a program built them) is prepared once
//! into its checked plan and its source ([`prepare`]), then [`run_job`]
//! runs it in this process (`SendPlan::start`). A command line concludes
//! it ([`Ran::conclude`]: summary, `--summary-json`, exit code;
//! [`command`]); a program, RFC 2544's trials, `demo` and the worker's
//! Jobs service take its typed report ([`Ran::report`]). A worker's
//! distributed task runs in a child `sluice job FILE`
//! ([`worker::run_file`]) so its deadline can end it.
//!
//! The `sluice` binary is parsing, dispatch and printing over this
//! crate; `examples/embed.rs` is a program that embeds it.

/// `println!`/`print!` that hand the write's error back instead of
/// panicking: a reader that goes away (`| head -1`) ends the command
/// quietly through `?`.
#[macro_export]
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*)
    }};
}
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($t)*)
    }};
}
/// `eprintln!`/`eprint!` that never panic: a closed or broken stderr
/// loses the message, never the run, its outputs or its exit code.
#[macro_export]
macro_rules! eoutln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}
#[macro_export]
macro_rules! eout {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($t)*);
    }};
}

pub mod commands;
pub mod dest;
mod failure;
pub mod job_failure;
pub mod json;
pub mod metrics;
pub mod placement;
pub mod plan;
pub mod progress;
pub mod signals;
pub mod token;
pub mod worker;

/// The version and the commit it was built from (`unknown` outside git).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SLUICE_COMMIT"), ")");

pub use failure::{bad_input, exit, open_failure, receive_failure, Failure};
pub use plan::{Prepared, Ran, Report, SendPlan};
pub use progress::{Watch, Watcher};
pub use sluice_job::Job;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Checks `job`, opens its inputs and builds its source: nothing is
/// sent yet, and no output is touched.
pub fn prepare(job: &mut Job) -> Result<Prepared<'_>, Failure> {
    match job {
        Job::Replay(a) => commands::replay::prepare(a),
        Job::Flows(a) => commands::flows::prepare(a),
        Job::Series(a) => commands::series::prepare(a),
        Job::Profile(a) => commands::profile::prepare(a),
        Job::OnOff(a) => commands::onoff::prepare(a),
        Job::Pace(a) => commands::pace::prepare(a),
        Job::Inject(a) => commands::inject::prepare(a),
    }
}

/// Runs `job` in this process, stopped when `stop` is set and observed
/// by `watch` (each interval's and pass's statistics as they happen,
/// beside the job's own status line and `--stats-json`): the run, ended,
/// for its caller to conclude or report.
pub fn run_job(mut job: Job, stop: Arc<AtomicBool>, watch: Option<Watch>) -> Result<Ran, Failure> {
    let p = prepare(&mut job)?;
    p.plan.start(stop, p.go, watch)
}

/// `job` as its command line runs it: stopped by SIGINT/SIGTERM, then
/// concluded (summary, `--summary-json`, exit code).
pub fn command(mut job: Job) -> Result<u8, Failure> {
    prepare(&mut job)?.run()
}

/// Test-only: a command's arguments parsed from its words, as the
/// binary's parser parses them (the same clap derive).
#[cfg(test)]
pub(crate) mod test_args {
    use clap::{Args, FromArgMatches};

    pub fn parse<T: Args + FromArgMatches>(words: &[&str]) -> T {
        let cmd = T::augment_args(clap::Command::new("sluice"));
        let m = cmd
            .try_get_matches_from(std::iter::once("sluice").chain(words.iter().copied()))
            .unwrap_or_else(|e| panic!("{words:?}: {e}"));
        T::from_arg_matches(&m).expect("parses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The job a command line names.
    fn job(words: &[String]) -> Job {
        let w: Vec<&str> = words.iter().map(String::as_str).collect();
        match w[..] {
            ["replay", ref rest @ ..] => Job::Replay(test_args::parse(rest)),
            ["flows", "run", ref rest @ ..] => Job::Flows(test_args::parse(rest)),
            ["profile", "run", ref rest @ ..] => Job::Profile(test_args::parse(rest)),
            ["profile", "onoff", ref rest @ ..] => Job::OnOff(test_args::parse(rest)),
            _ => panic!("{words:?}"),
        }
    }

    /// Each sending job from a file runs in this process to its typed
    /// report, on a virtual clock into `null`: the packets its input
    /// holds (the session: 20 × 2 + 10 + 5 + 10 + 10 + 3 + 100 × 10).
    #[test]
    fn every_kind_of_job_runs_in_process_to_its_typed_report() {
        let root = sluice_testkit::repo_root();
        let file = |rel: &str| root.join(rel).display().to_string();
        let quick = ["--to", "null", "--clock", "virtual", "-q"];
        for (mut words, packets) in [
            (
                vec![
                    "replay".into(),
                    file("testdata/traces/libtrace__100_packets.pcap"),
                ],
                100,
            ),
            (
                vec![
                    "flows".into(),
                    "run".into(),
                    file("examples/sessions/mixed.yaml"),
                ],
                1078,
            ),
            (
                vec![
                    "profile".into(),
                    "run".into(),
                    file("examples/profiles/poisson.yaml"),
                    "--limit".into(),
                    "1000".into(),
                ],
                1000,
            ),
            (
                [
                    "profile",
                    "onoff",
                    "--on",
                    "constant:10ms",
                    "--off",
                    "constant:10ms",
                    "--gap",
                    "constant:100us",
                    "--limit",
                    "500",
                ]
                .map(String::from)
                .to_vec(),
                500,
            ),
        ] {
            words.extend(quick.map(String::from));
            let stop = Arc::new(AtomicBool::new(false));
            let r = run_job(job(&words), stop, None)
                .and_then(Ran::report)
                .unwrap_or_else(|f| panic!("{words:?}: {:#}", f.error));
            assert_eq!(r.summary.packets, packets, "{words:?}");
            assert!(!r.summary.interrupted && r.rx.is_none(), "{words:?}");
        }
    }

    /// A job's bad input is refused by its preparation, before anything
    /// is opened, as the command line refuses it.
    #[test]
    fn a_job_that_cannot_run_is_refused_as_bad_input() {
        let words = ["replay", "/nonexistent.pcap", "--to", "null"].map(String::from);
        let stop = Arc::new(AtomicBool::new(false));
        match run_job(job(&words), stop, None) {
            Err(f) => assert_eq!(f.code, crate::exit::BAD_INPUT, "{:#}", f.error),
            Ok(_) => panic!("ran"),
        }
    }

    /// What a caller's observer saw.
    #[derive(Clone, Default)]
    struct Seen(Arc<std::sync::Mutex<Vec<u64>>>);

    impl crate::progress::Watcher for Seen {}

    impl sluice_engine::Observer for Seen {
        fn interval(&mut self, s: &sluice_engine::IntervalStats) {
            self.0.lock().unwrap().push(s.packets);
        }
    }

    /// A caller's observer sees the job's intervals as they happen: a
    /// run of at least 1.5 s has one at 1 s, and none counts more than
    /// the summary.
    #[test]
    fn a_callers_observer_sees_each_interval() {
        let words = [
            "profile",
            "onoff",
            "--on",
            "constant:1s",
            "--off",
            "constant:1ms",
            "--gap",
            "constant:1ms",
            "--duration",
            "1500ms",
            "--to",
            "null",
            "-q",
        ]
        .map(String::from);
        let seen = Seen::default();
        let stop = Arc::new(AtomicBool::new(false));
        let r = run_job(job(&words), stop, Some(Box::new(seen.clone())))
            .and_then(Ran::report)
            .unwrap_or_else(|f| panic!("{:#}", f.error));
        let counts = seen.0.lock().unwrap().clone();
        assert!(!counts.is_empty(), "no interval seen");
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
        assert!(*counts.last().unwrap() <= r.summary.packets, "{counts:?}");
    }
}
