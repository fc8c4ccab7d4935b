//! A job as a controller sends it to a worker, and as the worker hands it
//! to the process that runs it.
//!
//! What a peer may ask is decided by these types: a [`RemoteJob`] holds a
//! command's options and how to send, none of which names a file, a
//! device or an output; the files it reads are uploads of the lease, named
//! by [`Upload`]; where it sends, when it starts, its share and what it
//! writes are the worker's own ([`WorkerJob`]).

use crate::flows::FlowsOpts;
use crate::profile::{ProfileOpts, ShareBy};
use crate::replay::ReplayOpts;
use crate::send::SendOpts;
use crate::series::SeriesOpts;
use crate::text;
use serde::{Deserialize, Serialize};
use sluice_analyze::streams::ClockCorrection;
use sluice_core::Nanos;
use sluice_sink::SinkSpec;
use std::path::PathBuf;

/// The plain name of a file uploaded to the worker in this lease: no
/// directory, no leading dot, no control character (see [`plain_name`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Upload(String);

impl Upload {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Upload {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        if plain_name(&name) {
            Ok(Upload(name))
        } else {
            Err(format!(
                "'{}': not the plain name of an upload",
                name.escape_default()
            ))
        }
    }
}

impl From<Upload> for String {
    fn from(u: Upload) -> String {
        u.0
    }
}

/// A file name without a directory, a leading dot (no `..`, no hidden
/// file) or a control character, at most 128 characters: what a worker
/// keeps an upload under.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 128
        && !name.starts_with('.')
        && !name.contains('/')
        && !name.chars().any(char::is_control)
}

/// The command of a job and its own options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Work {
    /// `sluice replay` of the job file (a trace).
    Replay(ReplayOpts),
    /// `sluice flows run` of the job file (a session).
    Flows(FlowsOpts),
    /// `sluice series play` of the job file (an archive), with a device
    /// map from another upload.
    Series {
        #[serde(default)]
        opts: SeriesOpts,
        #[serde(default)]
        map: Option<Upload>,
    },
    /// `sluice profile run` of the job file (a profile; its `from:`
    /// captures are uploads beside it).
    Profile(ProfileOpts),
}

impl Work {
    /// The command's name, as a plan file and the command line write it.
    pub fn command(&self) -> &'static str {
        match self {
            Work::Replay(_) => "replay",
            Work::Flows(_) => "flows",
            Work::Series { .. } => "series",
            Work::Profile(_) => "profile",
        }
    }
}

/// A job as a controller sends it (the proto message `Job` of a task,
/// `sluice-control`'s `jobwire`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteJob {
    pub work: Work,
    #[serde(default)]
    pub send: SendOpts,
}

impl RemoteJob {
    /// Reads a job from a peer: the types refuse an unknown key, a path
    /// and a malformed value (each value is read by the command line's own
    /// parser); [`RemoteJob::check`] what the command line's argument
    /// relations and bounds refuse.
    pub fn from_json(text: &str) -> Result<RemoteJob, String> {
        let doc = serde_json::from_str(text).map_err(|e| format!("the job: {e}"))?;
        RemoteJob::from_value(doc)
    }

    /// [`RemoteJob::from_json`] of a document already parsed (the proto
    /// message's serde form, `sluice-control`'s `jobwire`).
    pub fn from_value(doc: serde_json::Value) -> Result<RemoteJob, String> {
        let job: RemoteJob = serde_path_to_error::deserialize(doc)
            .map_err(|e| format!("the job: {}: {}", e.path(), e.inner()))?;
        job.check().map_err(|e| format!("the job: {e}"))?;
        Ok(job)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a job always serialises")
    }

    /// The checks the command line's parser makes beyond the types.
    pub fn check(&self) -> Result<(), String> {
        self.send.check()?;
        match &self.work {
            Work::Replay(o) => o.check(),
            Work::Flows(o) => o.check(),
            Work::Series { opts, .. } => opts.check(),
            Work::Profile(o) => o.check(),
        }
    }

    /// The uploads the job names besides its job file.
    pub fn uploads(&self) -> Vec<&Upload> {
        match &self.work {
            Work::Series { map: Some(m), .. } => vec![m],
            _ => Vec::new(),
        }
    }
}

/// What a worker counts while its job sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receive {
    /// An interface the worker announced.
    pub iface: String,
    /// How long after the last frame left arrivals still count.
    #[serde(with = "crate::fields::duration")]
    pub wait: Nanos,
    /// The other senders' clocks against this host's (`--rx-clock`).
    #[serde(with = "text::vec")]
    pub clocks: Vec<ClockCorrection>,
}

/// A job as a worker runs it: the peer's [`RemoteJob`] and what the
/// worker decided itself (its files, sink, start, share, receiver and
/// outputs). It travels from the worker to the job's process on a pipe,
/// never from a peer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerJob {
    pub job: RemoteJob,
    /// The job file (an upload).
    pub input: PathBuf,
    /// The series device map (an upload), where the job names one.
    pub map: Option<PathBuf>,
    /// A sink the worker announced.
    #[serde(with = "text")]
    pub to: SinkSpec,
    /// Further sinks the worker announced (its other generating ports):
    /// the job's `--also-to`.
    #[serde(default, with = "text::vec")]
    pub also_to: Vec<SinkSpec>,
    /// CLOCK_REALTIME start on this host, ns since the epoch.
    pub start_at: u64,
    /// Share `(index, count)`, the index from 0, when the job is split.
    pub share: Option<(u32, u32)>,
    /// What a profile's share deals out.
    #[serde(with = "text")]
    pub share_by: ShareBy,
    /// A split by components: this worker's Fourier queues, as the
    /// controller computed them (the worker checked them).
    pub fourier: Option<sluice_profile::Components>,
    pub receive: Option<Receive>,
    /// The first stream id of the job's receive stamps.
    pub streams_from: u32,
    /// Test only: the host's clock is this much ahead (ns).
    pub clock_shift: i64,
    /// The worker passes clock corrections on stdin while the job runs
    /// (lines `shift NS`: every due time moved by NS in all).
    #[serde(default)]
    pub clock_corrections: bool,
    /// Test only: the host's clock runs this many parts per million fast
    /// (the job's schedule runs as fast).
    #[serde(default)]
    pub clock_drift_ppm: f64,
    /// Where the job's summary goes (its statistics go to stdout).
    pub summary_json: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        RemoteJob::from_json(text).expect_err(text)
    }

    #[test]
    fn a_job_reads_back_what_it_wrote_with_every_value_as_the_command_line_writes_it() {
        let text = r#"{"work":{"replay":{"pps":"10k","loop":3,"ttl":"-2",
            "srcipmap":["10.0.0.0/8:192.168.0.0/16"],"enet_dmac":["02:00:00:00:00:09"]}},
            "send":{"limit":"1M","duration":"2s","threads":2,"cpu":"0-1","rx_stamp":"append",
            "spin":"50us","loss":"2.5"}}"#;
        let job = RemoteJob::from_json(text).expect("valid");
        let Work::Replay(o) = &job.work else {
            panic!("{job:?}")
        };
        assert_eq!((o.pps, o.loops), (Some(10_000.0), 3));
        assert_eq!(job.send.limit, Some(1_000_000));
        assert_eq!(job.send.duration, Some(Nanos(2_000_000_000)));
        assert_eq!(job.send.loss, Some(2.5));
        assert_eq!(RemoteJob::from_json(&job.to_json()), Ok(job.clone()));
        // What is not given is the command line's default.
        let bare = RemoteJob::from_json(r#"{"work":{"flows":{}}}"#).unwrap();
        assert_eq!(bare.send, SendOpts::default());
        assert_eq!(bare.work, Work::Flows(FlowsOpts::default()));
    }

    #[test]
    fn keys_that_name_files_devices_or_outputs_do_not_exist_for_a_peer() {
        for (job, key) in [
            (
                r#"{"work":{"replay":{}},"send":{"to":"pcap:/tmp/x"}}"#,
                "to",
            ),
            (r#"{"work":{"replay":{"to2":"pcap:/etc/passwd"}}}"#, "to2"),
            (
                r#"{"work":{"replay":{"split":"cache:/etc/shadow"}}}"#,
                "split",
            ),
            (
                r#"{"work":{"replay":{}},"send":{"summary_json":"/x"}}"#,
                "summary_json",
            ),
            (
                r#"{"work":{"replay":{}},"send":{"stats_json":"/x"}}"#,
                "stats_json",
            ),
            (
                r#"{"work":{"replay":{}},"send":{"start_at":0}}"#,
                "start_at",
            ),
            (r#"{"work":{"replay":{}},"send":{"share":"1/2"}}"#, "share"),
            (r#"{"work":{"replay":{}},"send":{"rx":"eth0"}}"#, "rx"),
            (
                r#"{"work":{"profile":{"confine_inputs":false}}}"#,
                "confine_inputs",
            ),
            (
                r#"{"work":{"replay":{"traces":["/etc/shadow"]}}}"#,
                "traces",
            ),
            (r#"{"work":{"exec":{}}}"#, "exec"),
        ] {
            let e = refused(job);
            assert!(e.contains(&format!("`{key}`")), "{job}: {e}");
        }
        // A device map names an upload by its plain name, never a path.
        let ok = RemoteJob::from_json(r#"{"work":{"series":{"map":"m.csv"}}}"#).unwrap();
        assert_eq!(ok.uploads(), [&Upload("m.csv".into())]);
        for bad in ["/etc/shadow", "../m.csv", ".m", "a/b", "a\nb"] {
            let job = serde_json::json!({"work": {"series": {"map": bad}}}).to_string();
            assert!(refused(&job).contains("plain name"), "{bad}");
        }
    }

    #[test]
    fn values_and_relations_the_command_line_refuses_are_refused() {
        for (job, says) in [
            (
                r#"{"work":{"replay":{"ttl":"++1"}}}"#,
                "expected N, +N or -N",
            ),
            (r#"{"work":{"replay":{"pps":"0"}}}"#, "pps"),
            (r#"{"work":{"replay":{"pps":"1k","mbps":"5"}}}"#, "exclude"),
            (r#"{"work":{"replay":{"enet_vlan":"zap"}}}"#, "enet_vlan"),
            (r#"{"work":{"replay":{"mtu":20}}}"#, "mtu"),
            (r#"{"work":{"flows":{"planners":100000}}}"#, "planners"),
            (
                r#"{"work":{"series":{"opts":{"workers":100000}}}}"#,
                "workers",
            ),
            (r#"{"work":{"profile":{"queues":0}}}"#, "queues"),
            (
                r#"{"work":{"replay":{}},"send":{"limit":"0"}}"#,
                "at least 1",
            ),
            (r#"{"work":{"replay":{}},"send":{"threads":0}}"#, "threads"),
            (
                r#"{"work":{"replay":{}},"send":{"cpu":"0-4294967295"}}"#,
                "cpu",
            ),
            (
                r#"{"work":{"replay":{}},"send":{"tx_queues":"0-99999"}}"#,
                "99999",
            ),
            (
                r#"{"work":{"replay":{}},"send":{"clock":"sundial"}}"#,
                "sundial",
            ),
        ] {
            let e = refused(job);
            assert!(e.contains(says), "{job}: {e}");
        }
        let long = format!(r#"{{"work":{{"replay":{{"{}":1}}}}}}"#, "a\\n".repeat(100));
        assert!(refused(&long).contains("unknown field"));
    }
}
