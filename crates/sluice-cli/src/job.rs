//! Typed jobs on the command line's side: a plan's job, written as
//! command-line words, parsed by the command line's own parser into the
//! [`RemoteJob`] a controller sends. (`sluice job FILE`, the worker's
//! job run, is `sluice_run::worker`'s.)

use crate::args::{Cli, Command};
use anyhow::anyhow;
use clap::{Args, CommandFactory, FromArgMatches};
use sluice_control::plan::Plan;
use sluice_job::{RemoteJob, SendOpts, Upload, Work};
use std::collections::HashSet;

/// The ids of the options `T` declares.
fn ids<T: Args>() -> HashSet<String> {
    T::augment_args(clap::Command::new("job"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// A plan's job as every worker gets it: its words parsed by the command
/// line's parser (all its checks), then only what the job's types hold.
/// An option that is not theirs (where to send, outputs, a receiver, a
/// start, a share, a file other than an upload) is refused by name: the
/// worker sets those itself.
pub fn plan_job(plan: &Plan) -> anyhow::Result<RemoteJob> {
    let job = words_job(plan)?;
    if job.send.duration.is_some() {
        return Err(anyhow!(
            "job.args: --duration: the plan's job.duration says how long the job runs"
        ));
    }
    Ok(job)
}

/// [`plan_job`] without the plan's own duration: a job for one host's
/// `Jobs` service (`sluice jobs submit`), which may say how long it runs.
pub fn words_job(plan: &Plan) -> anyhow::Result<RemoteJob> {
    let words = sluice_control::command_words(plan.command)
        .ok_or_else(|| anyhow!("job.command: none given"))?;
    let mut argv: Vec<String> = std::iter::once("sluice")
        .chain(words.iter().copied())
        .map(String::from)
        .collect();
    argv.push(plan.file.display().to_string());
    argv.extend(plan.args.iter().cloned());
    let refused = |e: clap::Error| {
        anyhow!(
            "job.args {:?}: refused before any worker was contacted: {}",
            plan.args,
            crate::clap_cause(&e)
        )
    };
    let cli = Cli::command();
    let matches = cli.clone().try_get_matches_from(&argv).map_err(refused)?;
    let (mut leaf, mut leaf_cmd) = (&matches, &cli);
    for w in words {
        leaf = leaf
            .subcommand_matches(w)
            .expect("the words name the command");
        leaf_cmd = leaf_cmd
            .find_subcommand(w)
            .expect("the words name the command");
    }
    let mut own = ids::<SendOpts>();
    own.extend(match plan.command {
        sluice_control::pb::Command::Replay => ids::<sluice_job::replay::ReplayOpts>(),
        sluice_control::pb::Command::Flows => ids::<sluice_job::flows::FlowsOpts>(),
        sluice_control::pb::Command::Series => {
            // A device map is an upload of the plan's `files`.
            let mut s = ids::<sluice_job::series::SeriesOpts>();
            s.insert("map".into());
            s
        }
        _ => ids::<sluice_job::profile::ProfileOpts>(),
    });
    // A worker's job never has a status line: -q is harmless.
    own.insert("quiet".into());
    for arg in leaf_cmd.get_arguments().filter(|a| !a.is_positional()) {
        let id = arg.get_id().as_str();
        let given = leaf.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        if given && !own.contains(id) {
            return Err(anyhow!(
                "job.args: --{} is each worker's own (where it sends, its outputs, its receiver, \
                 start and share): a distributed job cannot carry it",
                arg.get_long().unwrap_or(id)
            ));
        }
    }
    // One operand, the job's file: a second one (or words after `--`)
    // would be parsed and then lost.
    let operands: Vec<String> = leaf_cmd
        .get_arguments()
        .filter(|a| a.is_positional())
        .filter_map(|a| leaf.get_raw(a.get_id().as_str()))
        .flatten()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if let Some(extra) = operands.get(1) {
        return Err(anyhow!(
            "job.args: '{extra}': a job takes one operand, its file ({}); \
             options go before any `--`",
            plan.file.display()
        ));
    }
    let cli = Cli::from_arg_matches(&matches).map_err(refused)?;
    let (work, send) = match cli.command {
        Command::Replay(a) => (Work::Replay(a.opts), a.run.send),
        Command::Flows(f) => match f.command {
            crate::args::FlowsCommand::Run(r) => (Work::Flows(r.opts), r.run.send),
            _ => unreachable!("the words name flows run"),
        },
        Command::Series(s) => match s.command {
            crate::args::SeriesCommand::Play(p) => {
                let map = p
                    .map
                    .map(|m| upload_of(plan, &m.display().to_string()))
                    .transpose()?;
                (Work::Series { opts: p.opts, map }, p.run.send)
            }
            _ => unreachable!("the words name series play"),
        },
        Command::Profile(p) => match p.command {
            crate::args::ProfileCommand::Run(r) => (Work::Profile(r.opts), r.run.send),
            _ => unreachable!("the words name profile run"),
        },
        _ => unreachable!("a plan's command sends"),
    };
    let job = RemoteJob { work, send };
    job.check().map_err(|e| anyhow!("job.args: {e}"))?;
    Ok(job)
}

/// `name` as an upload of the plan (one of its `files`, by plain name).
fn upload_of(plan: &Plan, name: &str) -> anyhow::Result<Upload> {
    let known = plan
        .files
        .iter()
        .any(|f| sluice_control::plan::upload_name(f) == name);
    if !known {
        return Err(anyhow!(
            "job.args: --map {name}: not the plain name of one of job.files (a worker reads uploads only)"
        ));
    }
    Upload::try_from(name.to_string()).map_err(|e| anyhow!("job.args: --map: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{FlowsCommand, ProfileCommand, SeriesCommand};
    use clap::Parser;
    use sluice_control::pb;

    fn parsed(words: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("sluice").chain(words.iter().copied()))
            .expect("parses")
            .command
    }

    /// The job types' defaults are the command line's: a job from a peer
    /// that leaves a key out runs as a command line that leaves the option
    /// out.
    #[test]
    fn the_job_types_default_to_what_the_command_line_does() {
        let Command::Replay(r) = parsed(&["replay", "t.pcap"]) else {
            panic!()
        };
        assert_eq!(r.run.send, SendOpts::default());
        assert_eq!(r.opts, Default::default());
        let Command::Flows(f) = parsed(&["flows", "run", "s.yaml"]) else {
            panic!()
        };
        let FlowsCommand::Run(f) = f.command else {
            panic!()
        };
        assert_eq!(f.opts, Default::default());
        let Command::Series(s) = parsed(&["series", "play", "a.sts"]) else {
            panic!()
        };
        let SeriesCommand::Play(s) = s.command else {
            panic!()
        };
        assert_eq!(s.opts, Default::default());
        let Command::Profile(p) = parsed(&["profile", "run", "p.yaml"]) else {
            panic!()
        };
        let ProfileCommand::Run(p) = p.command else {
            panic!()
        };
        assert_eq!(p.opts, Default::default());
        // The live sources' and ON/OFF's own options, from the command
        // line and from JSON leaving every default out, are one value.
        let Command::Pace(p) = parsed(&["pace", "--tap", "t0", "--gap", "20us"]) else {
            panic!()
        };
        let from_json: sluice_job::live::PaceOpts =
            serde_json::from_str(r#"{"gap": "20us"}"#).unwrap();
        assert_eq!(p.opts, from_json);
        let Command::Inject(i) = parsed(&["inject", "--listen", "unix:/tmp/x"]) else {
            panic!()
        };
        assert_eq!(i.opts, Default::default());
        let Command::Profile(p) = parsed(&[
            "profile",
            "onoff",
            "--on",
            "pareto:100ms,shape=1.5",
            "--off",
            "constant:1s",
            "--gap",
            "constant:100us",
        ]) else {
            panic!()
        };
        let ProfileCommand::Onoff(o) = p.command else {
            panic!()
        };
        let text = serde_json::to_string(&o.opts).unwrap();
        let back: sluice_job::onoff::OnOffOpts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, o.opts);
        let Command::Rfc2544(r) = parsed(&["rfc2544", "--to", "afpacket:a", "--rx", "b"]) else {
            panic!()
        };
        assert_eq!(r.opts, Default::default());
        let Command::Rx(r) = parsed(&["rx", "b", "--rx-clock", "1-2=-5ns"]) else {
            panic!()
        };
        let back: sluice_job::receive::RxOpts =
            serde_json::from_str(&serde_json::to_string(&r.opts).unwrap()).unwrap();
        assert_eq!(back, r.opts);
        let bare: sluice_job::onoff::OnOffOpts = serde_json::from_str(
            r#"{"on": "pareto:100ms,shape=1.5", "off": "constant:1s", "gap": "constant:100us"}"#,
        )
        .unwrap();
        assert_eq!(bare, o.opts);
    }

    fn plan(dir: &std::path::Path, command: pb::Command, args: &[&str]) -> Plan {
        let file = dir.join("job.in");
        std::fs::write(&file, b"x").unwrap();
        let map = dir.join("m.csv");
        std::fs::write(&map, b"x").unwrap();
        Plan {
            workers: Vec::new(),
            command,
            file,
            files: vec![map],
            args: args.iter().map(|s| s.to_string()).collect(),
            duration_ns: 1,
            split: pb::Split::ByFlow,
        }
    }

    /// A plan's words become the typed job; options that are each
    /// worker's own are refused by name, whichever command line form.
    #[test]
    fn a_plans_words_become_a_typed_job_and_a_hosts_own_options_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let job = plan_job(&plan(
            d.path(),
            pb::Command::Replay,
            &["--pps", "2k", "-q", "--threads=2", "--ttl", "-1"],
        ))
        .unwrap();
        let Work::Replay(o) = &job.work else { panic!() };
        assert_eq!((o.pps, job.send.threads), (Some(2000.0), 2));
        for (cmd, args, name) in [
            (
                pb::Command::Replay,
                &["--summary-json", "/x"][..],
                "--summary-json",
            ),
            (pb::Command::Replay, &["-qtpcap:/tmp/x"], "--to"),
            (pb::Command::Replay, &["--to2", "pcap:/x"], "--to2"),
            (pb::Command::Replay, &["--split", "cache:/x"], "--split"),
            (pb::Command::Replay, &["--rx", "eth0"], "--rx"),
            (pb::Command::Replay, &["--share", "1/2"], "--share"),
            (
                pb::Command::Profile,
                &["--confine-inputs"],
                "--confine-inputs",
            ),
            (pb::Command::Flows, &["--stats-json=-"], "--stats-json"),
            (
                pb::Command::Flows,
                &["--confine-inputs"],
                "--confine-inputs",
            ),
        ] {
            let e = plan_job(&plan(d.path(), cmd, args))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(name) && e.contains("each worker's own"),
                "{args:?}: {e}"
            );
        }
        let e = plan_job(&plan(d.path(), pb::Command::Replay, &["--duration", "1s"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("job.duration"), "{e}");
        // A second operand, or words after `--`, would be lost: refused.
        for args in [&["b.pcap"][..], &["--pps", "1k", "--", "--ttl", "3"]] {
            let e = plan_job(&plan(d.path(), pb::Command::Replay, args))
                .unwrap_err()
                .to_string();
            assert!(e.contains("one operand"), "{args:?}: {e}");
        }
        // A device map is one of the plan's files, by plain name.
        let job = plan_job(&plan(d.path(), pb::Command::Series, &["--map", "m.csv"])).unwrap();
        assert_eq!(job.uploads().len(), 1);
        let e = plan_job(&plan(
            d.path(),
            pb::Command::Series,
            &["--map", "/etc/shadow"],
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("job.files"), "{e}");
    }
}
