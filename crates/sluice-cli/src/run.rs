//! Every sending run, one way: a typed [`Job`] (`sluice_job::command`: a
//! sending command's arguments, as its command line or a worker's job
//! file built them) is prepared once into its checked plan and its source
//! ([`prepare`]),
//! then [`run_job`] runs it in this process (`SendPlan::start`). A
//! command concludes it ([`Ran::conclude`]: summary, `--summary-json`,
//! exit code; each command's `run` is its `prepare` and
//! `Prepared::run`); a run that is one part of a larger one takes its
//! typed report ([`Ran::report`]: RFC 2544 trials, `demo`). A worker
//! runs its task's job in a child `sluice job FILE`, which ends here
//! too. Only this file names the commands: they do not name it.

use crate::cmd;
use crate::plan::{Prepared, Ran};
use crate::progress::Watch;
use crate::Failure;
pub use sluice_job::Job;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Checks `job`, opens its inputs and builds its source: nothing is
/// sent yet, and no output is touched.
pub fn prepare(job: &mut Job) -> Result<Prepared<'_>, Failure> {
    match job {
        Job::Replay(a) => cmd::replay::prepare(a),
        Job::Flows(a) => cmd::flows::prepare(a),
        Job::Series(a) => cmd::series_play::prepare(a),
        Job::Profile(a) => cmd::profile::prepare(a),
        Job::OnOff(a) => cmd::onoff::prepare(a),
        Job::Pace(a) => cmd::pace::prepare(a),
        Job::Inject(a) => cmd::inject::prepare(a),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command, FlowsCommand, ProfileCommand};
    use clap::Parser;

    /// The job a command line names.
    fn job(words: &[String]) -> Job {
        let argv = std::iter::once("sluice").chain(words.iter().map(String::as_str));
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Replay(a) => Job::Replay(*a),
            Command::Flows(f) => match f.command {
                FlowsCommand::Run(r) => Job::Flows(*r),
                other => panic!("{other:?}"),
            },
            Command::Profile(p) => match p.command {
                ProfileCommand::Run(r) => Job::Profile(*r),
                ProfileCommand::Onoff(o) => Job::OnOff(*o),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
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
