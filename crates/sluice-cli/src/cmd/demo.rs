//! `sluice demo`: the README's first command. Builds a small constant-rate
//! trace in memory, replays it with its recorded timing — through a veth pair
//! into a network namespace, captured there by tcpdump, when run as root;
//! else into a pcap file — then analyzes the result against the trace.

use crate::args::{DemoArgs, ReplayArgs, RunOpts};
use crate::{exit, signals, Failure};
use anyhow::{anyhow, bail, Context};
use sluice_capture::{LinkType, PcapWriter};
use sluice_sink::SinkSpec;
use sluice_sys::output::Output;
use sluice_wire::checksum;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// One line per figure the demo prints.
const EXPLAIN: &str = "\
send-time error ε   when each frame left minus when it was due, on the sender (p50 … max)
late               frames whose ε exceeded 10 µs (--late-threshold)
inter-arrival      gaps between frames as the receiver's capture saw them
received/lost      frames of the trace found in the capture, and those missing
reordered          frames that arrived before one sent earlier
duplicates/foreign frames seen twice, and frames that are not the trace's
achieved rate      the capture's rate against the trace's, in %
|D_M - D_R|        each gap as captured minus the same gap in the trace: the timing error
                   the receiver saw (a virtual machine that pauses adds tens of µs at
                   times: `sluice doctor` measures this machine's floor)";

pub fn run(a: DemoArgs) -> Result<u8, Failure> {
    // Signals first: a SIGINT while the veth pair is being set up still
    // leads to its removal (a second one exits at once).
    let stop = signals::install()?;
    // The files stay, so the figures can be checked with other tools.
    let dir = a.dir.clone();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let trace = dir.join("demo-trace.pcap");
    let gap_ns = (1e9 / a.pps).round() as u64;
    write_trace(&trace, a.packets, gap_ns)?;
    eoutln!(
        "demo: wrote {} ({} UDP frames of 64 bytes, one every {} ns = {:.0} pps)",
        trace.display(),
        a.packets,
        gap_ns,
        a.pps
    );
    let veth = !a.no_veth && is_root() && which("ip") && which("tcpdump");
    let capture = dir.join("demo-capture.pcap");
    let summary = if veth {
        let net = DemoNet::up()?;
        let dump = net.capture(&capture)?;
        eoutln!(
            "demo: replaying through veth {} -> {} (namespace {}), captured by tcpdump",
            net.tx,
            net.rx,
            net.ns
        );
        let s = replay(&trace, SinkSpec::AfPacket(net.tx.clone()), stop)?;
        dump.stop()?;
        s
    } else {
        if !a.no_veth {
            eoutln!("demo: not root (or ip/tcpdump missing): replaying into a pcap file instead of a veth pair");
        }
        replay(&trace, SinkSpec::Pcap(capture.clone()), stop)?
    };
    eoutln!("\n== sender summary ==\n{}", summary.render());
    let report = sluice_analyze::analyze(&capture, Some(&trace))?;
    outln!(
        "\n== analysis of {} against the trace ==",
        capture.display()
    )?;
    out!("{}", report.render_text())?;
    outln!("\n== what the figures mean ==\n{EXPLAIN}")?;
    outln!(
        "\nfiles kept in {}: demo-trace.pcap (what was asked), demo-capture.pcap (what arrived); \
         e.g. sluice report {0}/demo-capture.pcap -r {0}/demo-trace.pcap -o report.html",
        dir.display()
    )?;
    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else {
        exit::OK
    })
}

/// `sluice replay TRACE --to TO` as a typed job, in this process (its
/// frames already carry the sink MAC 02:00:00:00:00:99).
fn replay(
    trace: &Path,
    to: SinkSpec,
    stop: Arc<AtomicBool>,
) -> Result<sluice_engine::Summary, Failure> {
    let args = ReplayArgs::of(
        vec![trace.to_path_buf()],
        Default::default(),
        RunOpts::new(to, Default::default()),
    );
    let ran = sluice_run::run_job(sluice_run::Job::Replay(args), stop, None)?;
    Ok(ran.report()?.summary)
}

/// The frame layout of `bench/mktrace.py`: UDP/IPv4 to MAC
/// 02:00:00:00:00:99 with an 8-byte sequence number at offset 42.
pub fn demo_frame(seq: u64, frame_len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(frame_len);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x99, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let ip_len = (frame_len - 14) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 99, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 99, 0, 2]);
    let c = checksum::ipv4_header_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&1024u16.to_be_bytes());
    f.extend_from_slice(&9u16.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(frame_len, 0);
    f
}

fn write_trace(path: &Path, packets: u64, gap_ns: u64) -> anyhow::Result<()> {
    // Atomic, and never through a symlink planted in the directory.
    let out = Output::create(path)?;
    let mut w = PcapWriter::new(out, LinkType::ETHERNET, 65_535)?;
    let t0 = 1_700_000_000u64 * 1_000_000_000;
    for i in 0..packets {
        let f = demo_frame(i, 64);
        w.write_packet(t0 + i * gap_ns, &f, f.len() as u32)?;
    }
    w.into_inner()?.commit()?;
    Ok(())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn which(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

fn sh(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("running {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A veth pair: `tx` in this namespace, `rx` in a fresh namespace, named
/// after this process (two demos never touch each other's). Removed on
/// drop, so on every way out of `run`, a first SIGINT included.
struct DemoNet {
    ns: String,
    tx: String,
    rx: String,
}

impl DemoNet {
    fn up() -> anyhow::Result<DemoNet> {
        // Interface names have at most 15 bytes.
        let id = std::process::id();
        let net = DemoNet {
            ns: format!("sluice-demo-{id}"),
            tx: format!("sldm{id}a"),
            rx: format!("sldm{id}b"),
        };
        sh(&["ip", "netns", "add", &net.ns])?;
        let (ns, tx, rx) = (net.ns.as_str(), net.tx.as_str(), net.rx.as_str());
        sh(&["ip", "link", "add", tx, "type", "veth", "peer", "name", rx])?;
        // IPv6 autoconfiguration would add foreign frames to the capture.
        let _ = sh(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{tx}.disable_ipv6=1"),
        ]);
        sh(&["ip", "link", "set", rx, "netns", ns])?;
        sh(&[
            "ip",
            "link",
            "set",
            tx,
            "address",
            "02:00:00:00:00:01",
            "up",
        ])?;
        sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "ip",
            "link",
            "set",
            rx,
            "address",
            "02:00:00:00:00:02",
            "up",
        ])?;
        // IPv6 autoconfiguration would add foreign frames to the capture.
        let _ = sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
        Ok(net)
    }

    fn capture(&self, out: &Path) -> anyhow::Result<Dump> {
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "tcpdump",
                "-i",
                &self.rx,
                "-n",
                "-U",
                "--immediate-mode",
                "-B",
                "65536",
            ])
            .args(["--time-stamp-precision=nano", "-w"])
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting tcpdump")?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow!("no tcpdump stderr"))?;
        let mut line = String::new();
        let mut r = BufReader::new(stderr);
        // tcpdump says "listening on ..." once its socket is open.
        while r.read_line(&mut line)? > 0 && !line.contains("listening") {
            line.clear();
        }
        if !line.contains("listening") {
            let _ = child.kill();
            bail!("tcpdump did not start: {}", line.trim());
        }
        Ok(Dump { child })
    }
}

impl Drop for DemoNet {
    fn drop(&mut self) {
        let _ = sh(&["ip", "link", "del", &self.tx]);
        let _ = sh(&["ip", "netns", "del", &self.ns]);
    }
}

struct Dump {
    child: Child,
}

impl Dump {
    /// Stops tcpdump with SIGINT so it flushes its file.
    fn stop(mut self) -> anyhow::Result<()> {
        std::thread::sleep(std::time::Duration::from_millis(300));
        sh(&["kill", "-INT", &self.child.id().to_string()])?;
        self.child.wait().context("waiting for tcpdump")?;
        Ok(())
    }
}
