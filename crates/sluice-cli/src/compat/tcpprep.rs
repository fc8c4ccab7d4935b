//! `sluice tcpprep`: tcpprep's command line over `sluice prep --format
//! tcpprep`, the cache's comment made as tcpprep makes it (its command
//! line, unless `--no-arg-comment`, then a newline and `-C`'s text).

use super::{refuse, Words};
use crate::args::Command;
use crate::{bad_input, exit, Failure};
use anyhow::anyhow;
use sluice_job::autoopts::{arg, flag, Opt, Parsed};
use sluice_source::{Dir, TcpprepCache};

/// tcpprep 4.5's options (tcpprep_opts.def).
pub static TABLE: &[Opt] = &[
    arg("dbug", Some('d')),
    arg("auto", Some('a')).excludes(&["cidr", "regex", "port", "mac"]),
    arg("cidr", Some('c')).excludes(&["auto", "regex", "port", "mac"]),
    arg("regex", Some('r')).excludes(&["auto", "cidr", "port", "mac"]),
    flag("port", Some('p')).excludes(&["auto", "cidr", "regex", "mac"]),
    arg("mac", Some('e')).excludes(&["auto", "cidr", "regex", "port"]),
    flag("reverse", None),
    arg("comment", Some('C')),
    flag("no-arg-comment", None),
    arg("include", Some('x')).excludes(&["exclude"]),
    arg("exclude", Some('X')).excludes(&["include"]),
    arg("cachefile", Some('o')),
    arg("pcap", Some('i')),
    arg("print-comment", Some('P')),
    arg("print-info", Some('I')),
    arg("print-stats", Some('S')),
    arg("services", Some('s')).needs(&["port"]),
    flag("nonip", Some('N')),
    arg("ratio", Some('R')).needs(&["auto"]),
    arg("minmask", Some('m')).needs(&["auto"]),
    arg("maxmask", Some('M')).needs(&["auto"]),
    flag("verbose", Some('v')),
    arg("decode", Some('A')).needs(&["verbose"]),
    flag("version", Some('V')),
    flag("less-help", Some('h')),
    flag("suppress-warnings", Some('w')),
];

/// The comment tcpprep stores: its arguments joined by spaces (its own
/// quirk kept: `-C` skips itself and the two words after it), cut to its
/// 1024-byte buffer, then a newline and `-C`'s text.
pub fn comment(args: &[String], p: &Parsed) -> Vec<u8> {
    let mut mine = Vec::new();
    if !p.has("no-arg-comment") {
        let mut i = 0;
        while i < args.len() {
            if args[i] == "-C" {
                i += 3;
                continue;
            }
            mine.extend_from_slice(args[i].as_bytes());
            mine.push(b' ');
            i += 1;
        }
        mine.truncate(1023);
        mine.pop();
    }
    if let Some(c) = p.value("comment") {
        mine.push(b'\n');
        mine.extend_from_slice(c.as_bytes());
    }
    mine
}

fn translate(p: &Parsed, w: &mut Words) -> Result<(), String> {
    for (name, value) in &p.opts {
        let v = value.as_deref().unwrap_or("");
        match *name {
            "pcap" | "cachefile" | "comment" | "no-arg-comment" | "dbug" | "suppress-warnings"
            | "no-load-opts" => {}
            "auto" => w.two("--split", &format!("auto:{v}")),
            "cidr" => w.two("--split", &format!("cidr:{v}")),
            "regex" => w.two("--split", &format!("regex:{v}")),
            "mac" => w.two("--split", &format!("mac:{v}")),
            "port" => w.two("--split", "port"),
            "reverse" | "nonip" => w.one(&format!("--{name}")),
            "ratio" | "minmask" | "maxmask" | "include" | "exclude" => {
                w.two(&format!("--{name}"), v)
            }
            "services" => {
                return Err(refuse(
                    name,
                    "sluice's port split takes ports 0-1023 as servers' and reads no services file",
                    "sluice prep --split cidr:NETS or regex:RE for other servers",
                ))
            }
            "verbose" | "decode" => {
                return Err(refuse(
                    name,
                    "sluice prints no packets",
                    "sluice analyze FILE, or tshark -r FILE",
                ))
            }
            other => {
                return Err(refuse(
                    other,
                    "not implemented by sluice",
                    "sluice prep --help",
                ))
            }
        }
    }
    Ok(())
}

pub fn run(args: &[String]) -> Result<u8, Failure> {
    let p = match super::parse_or_info("tcpprep", TABLE, args)? {
        Some(p) => p,
        None => return Ok(exit::OK),
    };
    for (opt, what) in [
        ("print-comment", Print::Comment),
        ("print-info", Print::Info),
        ("print-stats", Print::Stats),
    ] {
        if let Some(f) = p.value(opt) {
            return print(f, what);
        }
    }
    if let Some(extra) = p.operands.first() {
        return Err(bad_input(anyhow!(
            "tcpprep: '{extra}': no operands are taken (the input is -i FILE)"
        )));
    }
    let (Some(input), Some(output)) = (p.value("pcap"), p.value("cachefile")) else {
        return Err(bad_input(anyhow!(
            "tcpprep: both -i/--pcap and -o/--cachefile are needed"
        )));
    };
    if !["auto", "cidr", "regex", "port", "mac"]
        .iter()
        .any(|m| p.has(m))
    {
        return Err(bad_input(anyhow!(
            "tcpprep: a mode is needed: -a, -c, -r, -p or -e"
        )));
    }
    let mut w = Words::new(&["prep", input, "--format", "tcpprep", "-o", output]);
    translate(&p, &mut w).map_err(|e| bad_input(anyhow!(e)))?;
    let Command::Prep(a) = super::sluice_command(&w)? else {
        return Err(bad_input(anyhow!("not a prep command line")));
    };
    crate::cmd::prep::write(a, Some(comment(args, &p)))
}

#[derive(Clone, Copy)]
enum Print {
    Comment,
    Info,
    Stats,
}

/// `-P`, `-I`, `-S`: a cache's comment, each packet's side, the counts, in
/// tcpprep's words.
fn print(file: &str, what: Print) -> Result<u8, Failure> {
    let c = TcpprepCache::read(std::path::Path::new(file)).map_err(|e| bad_input(anyhow!(e)))?;
    match what {
        Print::Comment => {
            outln!("tcpprep args: {}", String::from_utf8_lossy(&c.comment))?;
            outln!("Cache contains data for {} packets", c.packets)?;
        }
        Print::Info => {
            for i in 0..c.packets {
                let side = match c.dir(i) {
                    Some(Dir::Primary) => "Primary",
                    Some(Dir::Secondary) => "Secondary",
                    _ => "Don't Send",
                };
                outln!("Packet {} -> {side}", i + 1)?;
            }
        }
        Print::Stats => {
            let [pri, sec, skip] = c.counts();
            outln!("Primary packets:\t{pri}")?;
            outln!("Secondary packets:\t{sec}")?;
            outln!("Skipped packets:\t{skip}")?;
            outln!("------------------------------")?;
            outln!("Total packets:\t\t{}", c.packets)?;
        }
    }
    Ok(exit::OK)
}
