//! `sluice`: a software traffic generator.
//!
//! Exit codes:
//! - 0: done (packets dropped on purpose by `--drift` are not an error)
//! - 1: the environment failed: an output that cannot be created, written
//!   or is locked, a socket, a disk, a thread
//! - 2: bad usage or bad input: an unreadable or malformed input, a bad
//!   option value, an output that aliases an input or is a symlink, a
//!   missing interface
//! - 3: finished, but some packets could not be sent (e.g. larger than the MTU)
//! - 130: stopped by SIGINT/SIGTERM after a clean shutdown (summary printed)

// `outln!`, `out!`, `eoutln!`, `eout!`: writes that never panic
// (sluice-run's, shared with the library).
#[macro_use]
extern crate sluice_run;

mod args;
mod cmd;
mod compat;
mod job;
mod plot;
mod report;

use clap::Parser;
use sluice_control::failure::{JobFailure, JobFault, FAILURE_ENV};
use std::process::ExitCode;

use sluice_run as run;
pub use sluice_run::{
    bad_input, dest, exit, json, open_failure, placement, plan, progress, signals, token, Failure,
};

/// Prints the `sluice.failure/1` line when a worker asked for one (see
/// `sluice_control::failure`).
fn report_failure(exit: u8, fault: JobFault, error: String) {
    if std::env::var_os(FAILURE_ENV).is_none() {
        return;
    }
    let body = JobFailure { exit, fault, error };
    if let Ok(l) = json::line(json::Kind::Failure, &body) {
        let _ = outln!("{l}");
    }
}

/// What clap says of a command line it refused, without its pointer to
/// `--help` (whoever reads it did not type that command line).
pub fn clap_cause(e: &clap::Error) -> String {
    e.render()
        .to_string()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A hint for a command line that reads as another tool's: `sluice
/// replay -t x.pcap` (tcpreplay's -t is top speed; sluice's -t is --to).
fn tip_for(argv: &[String]) -> Option<String> {
    let cmd = argv.get(1)?;
    if cmd != "replay" {
        return None;
    }
    let at = argv.iter().position(|a| a == "-t")?;
    let next = argv.get(at + 1)?;
    let file = [".pcap", ".pcapng", ".cap", ".gz"]
        .iter()
        .any(|x| next.ends_with(x))
        || std::path::Path::new(next).is_file();
    file.then(|| {
        format!(
            "-t is --to (where frames go) in sluice replay: '{next}' was taken as a sink. \
             tcpreplay's -t is --topspeed here: sluice replay {next} --topspeed --to SINK, \
             or sluice tcpreplay -t -i IFACE {next}"
        )
    })
}

fn main() -> ExitCode {
    json::begin_run();
    // Called as tcpreplay, tcprewrite or tcpprep (a user's own symlink):
    // that tool's command line.
    let mut argv = std::env::args_os();
    if let Some(tool) = argv.next().as_deref().and_then(compat::tool_of) {
        let rest: Option<Vec<String>> = argv.map(|a| a.into_string().ok()).collect();
        let Some(rest) = rest else {
            eoutln!("{tool}: an argument is not UTF-8");
            return ExitCode::from(exit::BAD_INPUT);
        };
        return finish(compat::run(tool, &rest));
    }
    let cli = match args::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() {
                report_failure(exit::BAD_INPUT, JobFault::Usage, clap_cause(&e));
                if let Some(tip) = tip_for(&std::env::args().collect::<Vec<_>>()) {
                    let _ = e.print();
                    eoutln!("\ntip: {tip}");
                    return ExitCode::from(exit::BAD_INPUT);
                }
            }
            e.exit()
        }
    };
    if let Some(b) = cli.max_memory {
        sluice_sys::mem::set_budget(b);
    }
    let result = match cli.command {
        args::Command::Replay(a) => run::command(run::Job::Replay(*a)),
        args::Command::Analyze(a) => cmd::analyze::run(*a),
        args::Command::Demo(a) => cmd::demo::run(a),
        args::Command::Series(a) => cmd::series::run(a),
        args::Command::Flows(a) => cmd::flows::run(a),
        args::Command::Profile(args::ProfileArgs {
            command: args::ProfileCommand::Onoff(o),
        }) => run::command(run::Job::OnOff(*o)),
        args::Command::Profile(a) => cmd::profile::run(a),
        args::Command::Pace(a) => run::command(run::Job::Pace(*a)),
        args::Command::Inject(a) => run::command(run::Job::Inject(*a)),
        args::Command::Report(a) => report::run(a),
        args::Command::Doctor(a) => cmd::doctor::run(a),
        args::Command::Worker(a) => cmd::distributed::worker(a),
        args::Command::Control(a) => cmd::distributed::control(a),
        args::Command::Jobs(a) => cmd::jobs::jobs(a),
        args::Command::Top(a) => cmd::top::top(a),
        args::Command::Keygen(a) => cmd::distributed::keygen(a),
        args::Command::Prep(a) => cmd::prep::run(a),
        args::Command::Rx(a) => cmd::rx::run(a),
        args::Command::Converse(a) => cmd::converse::run(*a),
        args::Command::Rfc2544(a) => cmd::rfc2544::run(*a),
        args::Command::Completions(a) => cmd::docs::completions(a),
        args::Command::Man(a) => cmd::docs::man(a),
        args::Command::Job(a) => sluice_run::worker::run_file(&a.file),
        args::Command::Tcpreplay(a) => compat::run("tcpreplay", &a.args),
        args::Command::Tcprewrite(a) => compat::run("tcprewrite", &a.args),
        args::Command::Tcpprep(a) => compat::run("tcpprep", &a.args),
    };
    finish(result)
}

/// The exit code of a command's result, its error printed.
fn finish(result: Result<u8, Failure>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if is_broken_pipe(&f.error) {
                return ExitCode::from(exit::OK);
            }
            eoutln!("sluice: error: {:#}", f.error);
            let fault = if f.code == exit::BAD_INPUT {
                JobFault::Input
            } else {
                JobFault::Environment
            };
            report_failure(f.code, fault, format!("{:#}", f.error));
            ExitCode::from(f.code)
        }
    }
}

/// Output piped into `head` is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
