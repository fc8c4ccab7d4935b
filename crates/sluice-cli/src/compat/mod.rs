//! tcpreplay's own command lines: `sluice tcpreplay`, `sluice tcprewrite`
//! and `sluice tcpprep` take those tools' options as their 4.5 manual
//! pages define them (AutoOpts' syntax, `--load-opts` files
//! included), and the binary answers to those names through argv[0] too
//! (a user's own symlink). Each option maps onto a sluice option, or is
//! refused in one line that names the sluice way. The command lines are
//! read by `sluice_job::autoopts`; tcprewrite's editor is
//! `sluice_wire::tcpedit`'s (these are its front-ends).

mod tcpprep;
mod tcpreplay;
mod tcprewrite;

use crate::args::{Cli, Command, ReplayArgs};
use crate::{bad_input, Failure};
use anyhow::{anyhow, Context};
use clap::Parser;
use sluice_capture::{LinkType, PcapWriter, Stamps, MAX_SNAPLEN};
use sluice_job::autoopts::{self as opts, Opt, Parsed};
use sluice_sys::output::Output;
use std::path::Path;

/// The tools sluice stands in for.
pub const TOOLS: [&str; 3] = ["tcpreplay", "tcprewrite", "tcpprep"];

/// The tool a program name (argv[0]) stands for, if any: `tcpreplay`,
/// `/usr/local/bin/tcprewrite`.
pub fn tool_of(argv0: &std::ffi::OsStr) -> Option<&'static str> {
    let name = std::path::Path::new(argv0).file_name()?.to_str()?;
    TOOLS.into_iter().find(|t| *t == name)
}

/// Runs `tool` on its own arguments (without the program name).
pub fn run(tool: &str, args: &[String]) -> Result<u8, Failure> {
    match tool {
        "tcpreplay" => tcpreplay::run(args),
        "tcprewrite" => tcprewrite::run(args),
        "tcpprep" => tcpprep::run(args),
        other => Err(bad_input(anyhow!(
            "{other}: not a tool sluice stands in for"
        ))),
    }
}

/// Parses `args`; answers `--help`, `-h`, `--more-help` and `-V` (None:
/// answered, nothing more to do) and refuses `--save-opts`.
fn parse_or_info(
    tool: &str,
    table: &'static [Opt],
    args: &[String],
) -> Result<Option<Parsed>, Failure> {
    let p = opts::parse(&tool.to_uppercase(), table, args).map_err(|e| bad_input(anyhow!(e)))?;
    if p.has("version") {
        outln!(
            "{tool} (sluice {}): tcpreplay 4.5's {tool} options on sluice's engine",
            crate::args::VERSION
        )?;
        return Ok(None);
    }
    if p.has("help") || p.has("less-help") || p.has("more-help") {
        let mut names: Vec<String> = table
            .iter()
            .chain(opts::COMMON)
            .map(|o| match o.short {
                Some(c) => format!("-{c}/--{}", o.name),
                None => format!("--{}", o.name),
            })
            .collect();
        names.sort();
        outln!(
            "{tool} - sluice's stand-in for tcpreplay 4.5's {tool}\n\
             Usage: sluice {tool} [OPTIONS]{}\n\
             Options (as {tool}'s manual page defines them; docs/CLI.md \"tcpreplay's \
             tools\" says how each maps onto sluice):\n  {}",
            if tool == "tcpreplay" { " FILE..." } else { "" },
            names.join("\n  ")
        )?;
        return Ok(None);
    }
    if p.has("save-opts") {
        return Err(bad_input(anyhow!(refuse(
            "save-opts",
            "sluice writes no option files",
            "keep the command line in a script, or write the --load-opts file by hand"
        ))));
    }
    Ok(Some(p))
}

/// The captured bytes libpcap hands out of a pcap file: no more than the
/// file header's snapshot length (0, or one past libpcap's largest, counts
/// as that largest), which a damaged or odd file may exceed.
fn libpcap_snap(reader: &sluice_capture::CaptureReader) -> usize {
    match reader.snaplen() {
        Some(n) if n > 0 && n <= MAX_SNAPLEN => n as usize,
        _ => MAX_SNAPLEN as usize,
    }
}

/// The pcap file a tool writes, with its header (written atomically,
/// `sluice_sys::output`: put in place by [`pcap_commit`] only).
fn pcap_out(
    path: &str,
    linktype: LinkType,
    snaplen: u32,
    stamps: Stamps,
) -> Result<PcapWriter<Output>, Failure> {
    let out = Output::create(Path::new(path)).map_err(crate::dest::output_failure)?;
    Ok(PcapWriter::with_stamps(out, linktype, snaplen, stamps)
        .with_context(|| format!("writing {path}"))?)
}

/// Flushes `w` and puts its file in place.
fn pcap_commit(w: PcapWriter<Output>, path: &str) -> Result<(), Failure> {
    let out = w.into_inner().with_context(|| format!("writing {path}"))?;
    out.commit().with_context(|| format!("writing {path}"))?;
    Ok(())
}

/// Ends the output of a run that SIGINT/SIGTERM stopped: what was written
/// replaces nothing (`NAME.partial` beside a file that was there), and
/// stderr says where it went.
fn pcap_interrupted(w: PcapWriter<Output>, path: &str, packets: u64) -> Result<(), Failure> {
    let out = w.into_inner().with_context(|| format!("writing {path}"))?;
    let went = out
        .commit_partial()
        .with_context(|| format!("writing {path}"))?;
    eoutln!(
        "sluice: interrupted: {packets} packets written to {}",
        went.display()
    );
    Ok(())
}

/// What reading the next packet gave.
enum Next<'r> {
    Packet(sluice_capture::Packet<'r>),
    End,
    /// SIGINT/SIGTERM set `stop` (before the packet or while waiting for it).
    Stopped,
}

/// The next packet of `r`, unless `stop` is set; a read error is the
/// input's fault (exit 2).
fn next_packet<'r>(
    r: &'r mut sluice_capture::CaptureReader,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Next<'r>, Failure> {
    let read = r.next_packet();
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(Next::Stopped);
    }
    match read {
        Ok(Some(p)) => Ok(Next::Packet(p)),
        Ok(None) => Ok(Next::End),
        Err(e) => Err(bad_input(anyhow!(e))),
    }
}

/// Refuses an input that can be read only once (a FIFO, a pipe, a
/// device) where the tool would read it `reads` times.
fn read_once_inputs(inputs: &[String], reads: u64, why: &str) -> Result<(), Failure> {
    for (i, f) in inputs.iter().enumerate() {
        if !sluice_capture::read_once(Path::new(f)) {
            continue;
        }
        let why = if reads != 1 {
            why
        } else if inputs[..i].contains(f) {
            "it is named twice"
        } else {
            continue;
        };
        return Err(bad_input(anyhow!(
            "{f}: a FIFO, pipe or device can be read once, and {why}: give a file"
        )));
    }
    Ok(())
}

/// A number option's value as AutoOpts reads one (decimal, 0x hex or 0
/// octal), in `T`'s range; the option is named in the error.
fn number<T: std::str::FromStr>(p: &Parsed, name: &str) -> Result<Option<T>, Failure> {
    p.value(name)
        .map(|v| {
            parse_c_number(v)
                .and_then(|n| T::from_str(&n.to_string()).ok())
                .ok_or_else(|| bad_input(anyhow!("--{name}: '{v}' is not a number in range")))
        })
        .transpose()
}

/// A number as AutoOpts reads one: decimal, 0x hex or 0 octal.
fn parse_c_number(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if v.len() > 1 && v.starts_with('0') {
        u64::from_str_radix(&v[1..], 8).ok()
    } else {
        v.parse().ok()
    }
}

/// A refused option, in one line: what it is, why, and the sluice way.
fn refuse(option: &str, why: &str, way: &str) -> String {
    let option = option.trim_start_matches('-');
    format!("--{option}: {why}; in sluice: {way}")
}

/// A `sluice` command line being built.
pub struct Words(Vec<String>);

impl Words {
    fn new(first: &[&str]) -> Words {
        Words(first.iter().map(|s| s.to_string()).collect())
    }
    fn one(&mut self, a: &str) {
        self.0.push(a.to_string());
    }
    fn two(&mut self, a: &str, b: &str) {
        self.0.push(a.to_string());
        self.0.push(b.to_string());
    }
}

/// `sluice replay WORDS...` read by sluice's own parser.
fn replay_args(w: &Words) -> Result<ReplayArgs, Failure> {
    match sluice_command(w)? {
        Command::Replay(a) => Ok(*a),
        _ => Err(bad_input(anyhow!("not a replay command line"))),
    }
}

/// `sluice WORDS...` read by sluice's own parser; its errors name the
/// command line they refused.
fn sluice_command(w: &Words) -> Result<Command, Failure> {
    let all = std::iter::once("sluice".to_string()).chain(w.0.iter().cloned());
    Cli::try_parse_from(all).map(|c| c.command).map_err(|e| {
        bad_input(anyhow!(
            "{} (sluice {})",
            crate::clap_cause(&e),
            w.0.join(" ")
        ))
    })
}
