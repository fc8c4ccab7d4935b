//! The plan `sluice control run` reads (YAML): the workers, the job and
//! how to split it. Unknown keys are refused; errors name the key.

use crate::error::{input, Result};
use crate::pb;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub workers: Vec<WorkerEntry>,
    pub job: JobEntry,
    /// flow (replay, flows), device (series), packets or components
    /// (profile); default: flow, flow, device, packets.
    #[serde(default)]
    pub split: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(from = "RawWorkerEntry")]
pub struct WorkerEntry {
    pub name: String,
    /// HOST:PORT of `sluice worker --listen`.
    pub address: String,
    /// The sink this worker sends on: afpacket:IFACE, xdp:IFACE or null.
    pub to: String,
    /// Its further generating ports (the paper's §5.2), `to:` being a
    /// list: each a global port of its own; the worker's Fourier queues
    /// (or flows) are dealt over `to` and these.
    pub also_to: Vec<String>,
    /// An interface this worker counts stamped frames on while it sends
    /// (every worker's, one-way latency corrected by the measured clock
    /// offsets).
    pub rx: Option<String>,
}

impl WorkerEntry {
    /// Every sink it sends on, `to` first.
    pub fn sinks(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.to).chain(&self.also_to)
    }
}

/// A worker entry as written: `to` one sink or a list of them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkerEntry {
    name: String,
    address: String,
    to: OneOrMany,
    #[serde(default)]
    rx: Option<String>,
}

#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "to: a sink (afpacket:IFACE, xdp:IFACE or null) or a list of sinks"
)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
    /// `to: null`, as YAML reads it.
    Null(()),
}

impl From<RawWorkerEntry> for WorkerEntry {
    fn from(r: RawWorkerEntry) -> Self {
        let (to, also_to) = match r.to {
            OneOrMany::One(s) => (s, Vec::new()),
            OneOrMany::Null(()) => ("null".into(), Vec::new()),
            // An empty list is refused by `parse` (`to` empty).
            OneOrMany::Many(mut v) if !v.is_empty() => (v.remove(0), v),
            OneOrMany::Many(_) => (String::new(), Vec::new()),
        };
        WorkerEntry {
            name: r.name,
            address: r.address,
            to,
            also_to,
            rx: r.rx,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobEntry {
    /// replay, flows, series or profile.
    pub command: String,
    /// The job's input, relative to the plan file.
    pub file: PathBuf,
    /// Options every worker's job gets, as on the command line.
    #[serde(default)]
    pub args: Vec<String>,
    /// How long the job runs (every task's deadline follows from it).
    pub duration: String,
    /// Files the job reads (a profile's `from:` captures, a series
    /// `--map`), relative to the plan file: uploaded beside the job file
    /// under their plain names, which the job names them by.
    #[serde(default)]
    pub files: Vec<PathBuf>,
}

/// A checked plan.
#[derive(Debug)]
pub struct Plan {
    pub workers: Vec<WorkerEntry>,
    pub command: pb::Command,
    pub file: PathBuf,
    /// The job's other inputs, uploaded beside `file` (names unique).
    pub files: Vec<PathBuf>,
    pub args: Vec<String>,
    pub duration_ns: u64,
    pub split: pb::Split,
}

/// Stream ids each worker stamps with when one receives: worker i takes
/// `i × STREAMS_PER_WORKER ..` (its TX threads, on one or two ports).
pub const STREAMS_PER_WORKER: u32 = 1024;
/// Workers whose streams fit a short stamp's 16-bit stream id.
pub const MAX_STAMPING: usize = (1 << 16) / STREAMS_PER_WORKER as usize;

pub fn load(path: &Path) -> Result<Plan> {
    let name = path.display().to_string();
    // A plan is a page of YAML; an endless device or a huge file is not.
    let text = sluice_sys::input::read_text_capped(path, 16 << 20, "plan file")
        .map_err(|e| input!("{name}: {e}"))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&name, &text, base)
}

/// Parses plan text named `name`; `base` resolves the job's files (which
/// must exist).
pub fn parse(name: &str, text: &str, base: &Path) -> Result<Plan> {
    let f: PlanFile = serde_yaml_ng::from_str(text).map_err(|e| input!("{name}: {e}"))?;
    if f.workers.is_empty() {
        return Err(input!("{name}: workers: at least one is needed"));
    }
    for (i, w) in f.workers.iter().enumerate() {
        if f.workers[..i].iter().any(|o| o.name == w.name) {
            return Err(input!(
                "{name}: workers[{i}].name: '{}' is used twice",
                w.name
            ));
        }
        if let Some(rx) = &w.rx {
            let plain = !rx.is_empty()
                && rx.len() < 16
                && !rx.contains(['/', ':'])
                && !rx.chars().any(|c| c.is_whitespace() || c.is_control());
            if !plain {
                return Err(input!(
                    "{name}: workers[{i}].rx: '{}': an interface name expected",
                    rx.escape_default()
                ));
            }
        }
        for (k, to) in w.sinks().enumerate() {
            let key = if w.also_to.is_empty() {
                format!("workers[{i}].to")
            } else {
                format!("workers[{i}].to[{k}]")
            };
            if to != "null" && !to.starts_with("afpacket:") && !to.starts_with("xdp:") {
                return Err(input!(
                    "{name}: {key}: '{to}': afpacket:IFACE, xdp:IFACE or null expected"
                ));
            }
            if w.sinks().take(k).any(|o| o == to) {
                return Err(input!("{name}: {key}: '{to}' is listed twice"));
            }
        }
        if w.also_to.len() > usize::from(u8::MAX) {
            return Err(input!(
                "{name}: workers[{i}].to: {} sinks: at most {} per worker",
                w.also_to.len() + 1,
                u16::from(u8::MAX) + 1
            ));
        }
    }
    if f.workers.iter().any(|w| w.rx.is_some()) && f.workers.len() > MAX_STAMPING {
        return Err(input!(
            "{name}: workers: {} with a receiver: at most {MAX_STAMPING} keep their stamp streams apart",
            f.workers.len()
        ));
    }
    let command = match f.job.command.as_str() {
        "replay" => pb::Command::Replay,
        "flows" => pb::Command::Flows,
        "series" => pb::Command::Series,
        "profile" => pb::Command::Profile,
        c => {
            return Err(input!(
                "{name}: job.command: '{c}': replay, flows, series or profile expected"
            ))
        }
    };
    if matches!(command, pb::Command::Replay | pb::Command::Flows) {
        if let Some(i) = f.workers.iter().position(|w| !w.also_to.is_empty()) {
            return Err(input!(
                "{name}: workers[{i}].to: several sinks per worker are for series and profile jobs; {} sends by one",
                f.job.command
            ));
        }
    }
    let split = match (command, f.split.as_deref()) {
        (pb::Command::Replay | pb::Command::Flows, None | Some("flow")) => pb::Split::ByFlow,
        (pb::Command::Series, None | Some("device")) => pb::Split::ByDevice,
        (pb::Command::Profile, None | Some("packets")) => pb::Split::Packets,
        (pb::Command::Profile, Some("components")) => pb::Split::Components,
        (_, Some(s)) => {
            return Err(input!(
                "{name}: split: '{s}' does not apply to {} (replay, flows: flow; series: device; profile: packets or components)",
                f.job.command
            ))
        }
        _ => unreachable!("every command has a default split"),
    };
    let duration_ns = sluice_core::parse_duration(&f.job.duration)
        .map_err(|e| input!("{name}: job.duration: {e}"))?
        .0;
    if duration_ns == 0 {
        return Err(input!("{name}: job.duration: must be above 0"));
    }
    let file = base.join(&f.job.file);
    if !file.is_file() {
        return Err(input!("{name}: job.file: {}: no such file", file.display()));
    }
    let mut names = vec![upload_name(&file)];
    let mut files = Vec::new();
    for (i, extra) in f.job.files.iter().enumerate() {
        let p = base.join(extra);
        let key = format!("{name}: job.files[{i}]");
        if !p.is_file() {
            return Err(input!("{key}: {}: no such file", p.display()));
        }
        let n = upload_name(&p);
        if !sluice_job::remote::plain_name(&n) {
            return Err(input!(
                "{key}: '{}': a file name may not start with a dot or hold control characters",
                n.escape_default()
            ));
        }
        if names.contains(&n) {
            return Err(input!(
                "{key}: a second file named '{n}': the job names its files by their plain names"
            ));
        }
        names.push(n);
        files.push(p);
    }
    Ok(Plan {
        workers: f.workers,
        command,
        file,
        files,
        args: f.job.args,
        duration_ns,
        split,
    })
}

/// The name a file is uploaded under: its last component.
pub fn upload_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(workers: &str, command: &str) -> std::result::Result<Plan, String> {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("j"), b"x").unwrap();
        let text =
            format!("workers:\n{workers}job:\n  command: {command}\n  file: j\n  duration: 1s\n");
        parse("plan.yaml", &text, d.path()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_worker_takes_one_sink_or_a_list_of_them() {
        let p = parsed(
            "  - {name: a, address: x, to: \"xdp:e1\"}\n  - {name: b, address: y, to: [\"xdp:e1\", \"afpacket:e2\"]}\n",
            "profile",
        )
        .unwrap();
        assert_eq!(
            (p.workers[0].to.as_str(), p.workers[0].also_to.len()),
            ("xdp:e1", 0)
        );
        assert_eq!(p.workers[1].to, "xdp:e1");
        assert_eq!(p.workers[1].also_to, ["afpacket:e2"]);
        let e = parsed(
            "  - {name: b, address: y, to: [\"xdp:e1\", \"xdp:e1\"]}\n",
            "series",
        )
        .unwrap_err();
        assert!(
            e.contains("workers[0].to[1]: 'xdp:e1' is listed twice"),
            "{e}"
        );
        let e = parsed(
            "  - {name: b, address: y, to: [\"xdp:e1\", \"e2\"]}\n",
            "series",
        )
        .unwrap_err();
        assert!(e.contains("workers[0].to[1]: 'e2': afpacket:IFACE"), "{e}");
        let e = parsed("  - {name: b, address: y, to: []}\n", "series").unwrap_err();
        assert!(e.contains("workers[0].to: '': afpacket:IFACE"), "{e}");
        let e = parsed("  - {name: b, address: y, to: {a: 1}}\n", "series").unwrap_err();
        assert!(e.contains("workers[0]: to: a sink"), "{e}");
        let e = parsed(
            "  - {name: a, address: x, to: null}\n  - {name: b, address: y, to: [\"xdp:e1\", \"xdp:e2\"]}\n",
            "replay",
        )
        .unwrap_err();
        assert!(e.contains("workers[1].to: several sinks per worker"), "{e}");
    }
}
