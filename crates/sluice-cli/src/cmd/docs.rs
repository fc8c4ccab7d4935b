//! `sluice completions` and `sluice man`: generated from the same clap
//! definitions the parser uses, so they never drift from it.

use crate::args::docs::{CompletionsArgs, ManArgs};
use crate::args::Cli;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use clap::CommandFactory;
use std::io::Write;
use std::path::Path;

pub fn completions(a: CompletionsArgs) -> Result<u8, Failure> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "sluice", &mut out);
    std::io::stdout()
        .write_all(&out)
        .context("writing the completion script")?;
    Ok(exit::OK)
}

pub fn man(a: ManArgs) -> Result<u8, Failure> {
    let mut cmd = Cli::command();
    cmd.build();
    let Some(dir) = a.dir else {
        let page = render(&cmd, "sluice")?;
        std::io::stdout()
            .write_all(&page)
            .context("writing the man page")?;
        return Ok(exit::OK);
    };
    if !dir.is_dir() {
        return Err(bad_input(anyhow!(
            "--dir {}: not a directory",
            dir.display()
        )));
    }
    let mut pages = vec![("sluice".to_string(), cmd.clone())];
    collect(&cmd, "sluice", &mut pages);
    for (name, c) in &pages {
        let page = render(&c.clone().name(name.clone()), name)?;
        write_atomically(&dir.join(format!("{name}.1")), &page)?;
    }
    eoutln!(
        "sluice: {} man pages written to {}",
        pages.len(),
        dir.display()
    );
    Ok(exit::OK)
}

/// Every subcommand, depth first, named as man(1) expects: sluice-series-play.
fn collect(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("{prefix}-{}", sub.get_name());
        out.push((name.clone(), sub.clone()));
        collect(sub, &name, out);
    }
}

/// A page's EXAMPLES section (roff): command lines a user types.
fn examples(page: &str) -> String {
    let lines: &[(&str, &str)] = match page {
        "sluice" => &[
            ("Try it on a built-in example (through a veth pair as root, else into a pcap file):", "sluice demo"),
            ("Replay a trace at its recorded timing, then at 100k packets/s:", "sluice replay trace.pcap --to afpacket:eth0"),
            ("", "sluice replay trace.pcap --to afpacket:eth0 --pps 100k"),
            ("Use tcpreplay's own command line:", "sluice tcpreplay -i eth0 -t trace.pcap"),
        ],
        "sluice-replay" => &[
            ("Twice as fast as recorded, three passes:", "sluice replay trace.pcap --to afpacket:eth0 -x 2 --loop 3"),
            ("Top speed over AF_XDP with new MACs:", "sluice replay trace.pcap --to xdp:eth0 --topspeed --enet-dmac 02:00:00:00:00:99"),
            ("Rewrite into a file instead of sending:", "sluice replay in.pcap --to pcap:out.pcap --clock virtual --pnat 10.0.0.0/8:192.168.0.0/16"),
        ],
        "sluice-tcpreplay" => &[
            ("As tcpreplay: top speed out of eth0:", "sluice tcpreplay -i eth0 -t trace.pcap"),
            ("Two ports split by a tcpprep cache:", "sluice tcpreplay -c trace.cache -i eth0 -I eth1 trace.pcap"),
            ("Into a file, packets 7 and 11 to 20:", "sluice tcpreplay -w out.pcap --include 7,11-20 trace.pcap"),
        ],
        "sluice-tcprewrite" => &[
            ("As tcprewrite: map ports and set the destination MAC:", "sluice tcprewrite -i in.pcap -o out.pcap -r 80:8080 --enet-dmac=00:11:22:33:44:55"),
            ("Options from a file's [TCPREWRITE] section:", "sluice tcprewrite --load-opts rewrite.conf"),
        ],
        "sluice-tcpprep" => &[
            ("As tcpprep: a cache splitting clients and servers:", "sluice tcpprep -a client -i trace.pcap -o trace.cache"),
            ("Print what a cache holds:", "sluice tcpprep -I trace.cache"),
        ],
        "sluice-worker" => &[
            ("Serve jobs on a unix socket (its peer's uid is checked):", "sluice worker --listen unix:/run/sluice/worker.sock"),
        ],
        "sluice-analyze" => &[
            ("Compare a capture with the trace it was sent from:", "sluice analyze cap.pcap --reference trace.pcap"),
        ],
        _ => &[],
    };
    let mut out = String::from(".SH EXAMPLES\n");
    if lines.is_empty() {
        let words = page.replacen("sluice-", "sluice ", 1).replace('-', " ");
        out.push_str(&format!(
            "Every option of the command, with its default:\n.PP\n.nf\n{words} --help\n.fi\n"
        ));
        return out;
    }
    for (what, cmd) in lines {
        if !what.is_empty() {
            out.push_str(&format!(".PP\n{}\n", roff_text(what)));
        }
        out.push_str(&format!(".nf\n.RS\n{}\n.RE\n.fi\n", roff_text(cmd)));
    }
    out
}

/// Text safe in a roff line: backslashes doubled, a leading dot or quote
/// escaped.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\\\").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// The man page `page` of `cmd` (roff), its EXAMPLES section last.
fn render(cmd: &clap::Command, page: &str) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .context("rendering the man page")?;
    out.extend_from_slice(examples(page).as_bytes());
    Ok(out)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{}: creating a temporary file", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("{}: writing", path.display()))?;
    tmp.persist(path)
        .map_err(|e| anyhow!("{}: {}", path.display(), e.error))?;
    Ok(())
}
