//! `sluice tcpreplay`: tcpreplay's command line. Sending to interfaces
//! runs `sluice replay` (the options mapped one by one); `-w FILE` writes
//! the packets tcpreplay would send into FILE as tcpreplay writes it (a
//! microsecond-magic pcap holding nanosecond fractions, snap length
//! 262144, Ethernet), at once rather than at the replay's pace. Both end
//! with tcpreplay's summary lines (`Actual:`, `Rated:`, `Statistics for
//! network device:`) unless `-q`.

use super::{number, refuse, replay_args, Words};
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_capture::{CaptureReader, LinkType, Stamps, MAX_SNAPLEN};
use sluice_job::autoopts::{arg, flag, Opt, Parsed};
use sluice_source::{Select, SelectRule};
use sluice_wire::{parse_layers, HeaderRewrite, Rewritten};
use std::path::Path;
use std::time::{Duration, Instant};

/// tcpreplay 4.5's options (tcpreplay_opts.def).
pub static TABLE: &[Opt] = &[
    arg("dbug", Some('d')),
    flag("quiet", Some('q')),
    arg("timer", Some('T')),
    arg("maxsleep", None),
    flag("verbose", Some('v')),
    arg("decode", Some('A')).needs(&["verbose"]),
    flag("preload-pcap", Some('K')),
    arg("cachefile", Some('c'))
        .needs(&["intf2"])
        .excludes(&["dualfile"]),
    flag("dualfile", Some('2'))
        .needs(&["intf2"])
        .excludes(&["cachefile"]),
    arg("intf1", Some('i')),
    arg("intf2", Some('I')),
    arg("write", Some('w')).excludes(&["intf2"]),
    arg("include", None).excludes(&["exclude"]),
    arg("exclude", None).excludes(&["include"]),
    flag("listnics", None),
    arg("loop", Some('l')),
    arg("loopdelay-ms", None)
        .needs(&["loop"])
        .excludes(&["loopdelay-ns"]),
    arg("loopdelay-ns", None)
        .needs(&["loop"])
        .excludes(&["loopdelay-ms"]),
    flag("pktlen", None),
    arg("limit", Some('L')),
    arg("duration", None),
    arg("multiplier", Some('x')).excludes(&["pps", "mbps", "topspeed", "oneatatime"]),
    arg("pps", Some('p')).excludes(&["multiplier", "mbps", "topspeed", "oneatatime"]),
    arg("mbps", Some('M')).excludes(&["multiplier", "pps", "topspeed", "oneatatime"]),
    flag("topspeed", Some('t')).excludes(&["mbps", "pps", "multiplier", "oneatatime"]),
    flag("oneatatime", Some('o')),
    arg("pps-multi", None).needs(&["pps"]),
    flag("unique-ip", None).needs(&["loop"]),
    arg("unique-ip-loops", None).needs(&["unique-ip"]),
    flag("netmap", None),
    arg("nm-delay", None),
    flag("no-flow-stats", None),
    arg("flow-expiry", None).excludes(&["no-flow-stats"]),
    flag("pid", Some('P')),
    arg("stats", None),
    flag("suppress-warnings", Some('W')),
    flag("xdp", None),
    arg("xdp-batch-size", None).needs(&["xdp"]),
    flag("version", Some('V')),
    flag("less-help", Some('h')),
];

/// What sending (not `-w`) maps each option onto; `one_pass`: the passes
/// and their pauses are the caller's (top speed with a loop delay).
fn translate(p: &Parsed, w: &mut Words, one_pass: bool) -> Result<(), String> {
    let sink = if p.has("xdp") { "xdp" } else { "afpacket" };
    for (name, value) in &p.opts {
        let v = value.as_deref().unwrap_or("");
        match *name {
            "intf1" => w.two("--to", &format!("{sink}:{v}")),
            "intf2" => w.two("--to2", &format!("{sink}:{v}")),
            "quiet" => w.one("-q"),
            "preload-pcap" => w.one("--preload"),
            "cachefile" => w.two("--split", &format!("tcpprep:{v}")),
            "dualfile" => w.one("--dualfile"),
            "loop" | "loopdelay-ms" | "loopdelay-ns" if one_pass => {}
            "include" | "exclude" | "limit" | "loopdelay-ms" | "loopdelay-ns" | "pps" | "mbps" => {
                w.two(&format!("--{name}"), v)
            }
            "multiplier" => {
                // tcpreplay's atof takes 0 (or any word) as ×1 and a
                // negative factor as no wait at all: both say something
                // else than was meant.
                if !v
                    .trim()
                    .parse::<f64>()
                    .is_ok_and(|x| x.is_finite() && x > 0.0)
                {
                    return Err(format!(
                        "--multiplier {v}: a factor above 0 is needed (-t sends at top speed)"
                    ));
                }
                w.two("-x", v)
            }
            "topspeed" => w.one("--topspeed"),
            "unique-ip" => w.one("--unique-ip"),
            "loop" => w.two("--loop", v),
            "duration" => w.two("--duration", &format!("{v}s")),
            "maxsleep" => w.two("--max-gap", &format!("{v}ms")),
            // sluice's own timing (TSC, spin then sleep) replaces the timer
            // choice; flows are not counted; warnings are few.
            "timer" | "no-flow-stats" | "flow-expiry" | "suppress-warnings" | "dbug" | "xdp"
            | "pid" | "stats" | "no-load-opts" | "write" => {}
            "xdp-batch-size" => {
                return Err(refuse(
                    name,
                    "sluice sizes its AF_XDP batches itself",
                    "sluice replay --to xdp:IFACE --xdp-mode",
                ))
            }
            "verbose" | "decode" => {
                return Err(refuse(
                    name,
                    "sluice prints no packets",
                    "capture on the far side with sluice rx or tcpdump",
                ))
            }
            "oneatatime" => {
                return Err(refuse(
                    name,
                    "sluice does not wait for a key",
                    "sluice replay --limit 1 --include N, one run per packet",
                ))
            }
            "pps-multi" => {
                return Err(refuse(
                    name,
                    "sluice keeps every packet's own time",
                    "sluice replay --pps R --bursts SIZE/GAP for trains of packets",
                ))
            }
            "unique-ip-loops" => {
                return Err(refuse(
                    name,
                    "sluice's --unique-ip moves the addresses every pass",
                    "sluice replay --unique-ip",
                ))
            }
            "netmap" | "nm-delay" => {
                return Err(refuse(
                    name,
                    "sluice has no netmap path",
                    "sluice replay --to xdp:IFACE (AF_XDP)",
                ))
            }
            "pktlen" => {
                return Err(refuse(
                    name,
                    "sluice sends the captured bytes",
                    "sluice replay --fixlen pad sends cut frames at their original length",
                ))
            }
            "listnics" => {
                return Err(refuse(
                    name,
                    "sluice lists no devices",
                    "ip link, or sluice doctor --iface IFACE",
                ))
            }
            other => {
                return Err(refuse(
                    other,
                    "not implemented by sluice",
                    "sluice replay --help",
                ))
            }
        }
    }
    Ok(())
}

pub fn run(args: &[String]) -> Result<u8, Failure> {
    let p = match super::parse_or_info("tcpreplay", TABLE, args)? {
        Some(p) => p,
        None => return Ok(exit::OK),
    };
    // tcpreplay's ranges (tcpreplay_opts.def): --limit 1 and up.
    if number::<u64>(&p, "limit")? == Some(0) {
        return Err(bad_input(anyhow!(
            "--limit 0: out of range, it must be 1 or more (leave it out to send every packet)"
        )));
    }
    let every = number::<u64>(&p, "stats")?;
    if p.operands.is_empty() {
        return Err(bad_input(anyhow!(
            "tcpreplay: a pcap file to send is needed"
        )));
    }
    if p.has("pid") {
        outln!("PID: {}", std::process::id())?;
    }
    if let Some(file) = p.value("write") {
        if p.has("intf1") {
            return Err(bad_input(anyhow!(
                "tcpreplay: -w writes into a file instead of sending: -i and -w exclude each other here"
            )));
        }
        return write(&p, file);
    }
    if !p.has("intf1") {
        return Err(bad_input(anyhow!(
            "tcpreplay: an interface (-i IFACE) or an output file (-w FILE) is needed"
        )));
    }
    // At top speed sluice has no timeline to pause on: tcpreplay's pause
    // between passes (-t with --loopdelay-*) is one pass at a time here,
    // with the pause between them.
    let pause = loop_pause(&p).map_err(|e| bad_input(anyhow!(e)))?;
    let split_passes = p.has("topspeed") && pause.is_some();
    let passes = if split_passes {
        number::<u64>(&p, "loop")?.unwrap_or(1)
    } else {
        1
    };
    super::read_once_inputs(&p.operands, passes, "--loop reads it once per pass")?;
    let mut w = Words::new(&["replay"]);
    for f in &p.operands {
        w.one(f);
    }
    translate(&p, &mut w, split_passes).map_err(|e| bad_input(anyhow!(e)))?;
    w.one("-q");
    let device = p.value("intf1").unwrap_or_default().to_string();
    let device2 = p.value("intf2").map(str::to_string);
    let stop = crate::signals::install()
        .context("installing signal handlers")
        .map_err(Failure::from)?;
    let began = Instant::now();
    let mut st = Stats::default();
    let mut interrupted = false;
    let mut pass = 0u64;
    // --loop 0: for ever (until a signal).
    while passes == 0 || pass < passes {
        if pass > 0 {
            if let Some(d) = pause {
                sleep_unless(&stop, d);
            }
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let mut job = sluice_run::Job::Replay(replay_args(&w)?);
        let prepared = sluice_run::prepare(&mut job)?;
        if pass == 0 && every.is_some() {
            outln!(
                "Test start: {} ...",
                stats_time(std::time::SystemTime::now())
            )?;
        }
        let watch = every
            .filter(|n| *n > 0)
            .map(|n| Box::new(StatsEvery::new(n, &st)) as crate::progress::Watch);
        let ran = prepared.plan.start(stop.clone(), prepared.go, watch)?;
        let s = ran.report()?.summary;
        st.packets += s.packets;
        st.bytes += s.bytes;
        st.failed += s.oversize + s.too_short + s.rejected;
        interrupted |= s.interrupted;
        if !split_passes {
            // The send phase, as tcpreplay times it (from its first packet):
            // a run too short to time rates 0 (tcpreplay's rule), never
            // bytes over a rounded-up microsecond.
            st.took = Duration::from_secs_f64(s.duration_s.max(0.0));
        }
        pass += 1;
        if interrupted {
            break;
        }
    }
    if split_passes {
        st.took = began.elapsed();
    }
    if every.is_some() {
        outln!(
            "Test complete: {}",
            stats_time(std::time::SystemTime::now())
        )?;
    }
    if !p.has("quiet") {
        st.print(&device, device2.as_deref())?;
    }
    Ok(if interrupted {
        exit::INTERRUPTED
    } else if st.failed > 0 {
        exit::PARTIAL
    } else {
        exit::OK
    })
}

/// `--loopdelay-ms` or `--loopdelay-ns`, if given.
fn loop_pause(p: &Parsed) -> Result<Option<Duration>, String> {
    let num = |o: &str| -> Result<Option<u64>, String> {
        p.value(o)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| format!("--{o}: '{v}' is not a count"))
            })
            .transpose()
    };
    Ok(match (num("loopdelay-ms")?, num("loopdelay-ns")?) {
        (Some(ms), _) => Some(Duration::from_millis(ms)),
        (None, Some(ns)) => Some(Duration::from_nanos(ns)),
        _ => None,
    })
}

/// Sleeps `d`, waking early when `stop` is set.
fn sleep_unless(stop: &std::sync::atomic::AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

/// `t` as tcpreplay's `--stats` lines show an instant: `2026-12-07
/// 20:05:15.123456789` (in UTC: the clock sluice reports everywhere).
fn stats_time(t: std::time::SystemTime) -> String {
    let ns = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let s = crate::json::rfc3339(ns);
    s.trim_end_matches('Z').replacen('T', " ", 1)
}

/// `--stats N`: tcpreplay's `Actual:` and `Rated:` lines every N seconds
/// of the run, counted from its start (and from earlier passes').
struct StatsEvery {
    every: f64,
    last: f64,
    base: (u64, u64, Duration),
}

impl StatsEvery {
    fn new(every: u64, before: &Stats) -> StatsEvery {
        StatsEvery {
            every: every as f64,
            last: 0.0,
            base: (before.packets, before.bytes, before.took),
        }
    }
}

impl crate::progress::Watcher for StatsEvery {}

impl sluice_engine::Observer for StatsEvery {
    fn interval(&mut self, s: &sluice_engine::IntervalStats) {
        if s.t - self.last < self.every {
            return;
        }
        self.last = s.t;
        let st = Stats {
            packets: self.base.0 + s.packets,
            bytes: self.base.1 + s.bytes,
            took: self.base.2 + Duration::from_secs_f64(s.t.max(0.0)),
            failed: 0,
        };
        let _ = st.rates();
    }

    fn wants_flows(&self) -> bool {
        false
    }
}

/// Counts for tcpreplay's summary lines.
#[derive(Default)]
struct Stats {
    packets: u64,
    bytes: u64,
    took: Duration,
    failed: u64,
}

impl Stats {
    /// `Actual:`, `Rated:` and `Statistics for network device:` as
    /// tcpreplay prints them (its integer arithmetic, its rounding).
    fn print(&self, device: &str, device2: Option<&str>) -> std::io::Result<()> {
        self.rates()?;
        for d in std::iter::once(device).chain(device2) {
            let sent = if device2.is_some() {
                None
            } else {
                Some(self.packets)
            };
            outln!("Statistics for network device: {d}")?;
            match sent {
                Some(n) => outln!("\tSuccessful packets:        {n}")?,
                None => outln!(
                    "\tSuccessful packets:        (both devices) {}",
                    self.packets
                )?,
            }
            outln!("\tFailed packets:            {}", self.failed)?;
            outln!("\tTruncated packets:         0")?;
            outln!("\tRetried packets (ENOBUFS): 0")?;
            outln!("\tRetried packets (EAGAIN):  0")?;
        }
        Ok(())
    }

    /// `Actual:` and `Rated:` (tcpreplay's `packet_stats`): rates of 0
    /// when no time, packet or byte was counted.
    fn rates(&self) -> std::io::Result<()> {
        let us = u128::from(self.took.as_micros() as u64);
        let (bytes, pkts) = (u128::from(self.bytes), u128::from(self.packets));
        let (b10, p100) = if us == 0 || bytes == 0 || pkts == 0 {
            (0, 0)
        } else if bytes > 1_000_000_000 && us > 1_000_000 {
            (bytes * 10_000 / (us / 1000), pkts * 100_000 / (us / 1000))
        } else {
            (bytes * 10_000_000 / us, pkts * 100_000_000 / us)
        };
        let (bps, bps10) = (b10 / 10, b10 % 10);
        let mb1000 = bps * 8 / 1000;
        let (mb, mb100, mb1000r) = (mb1000 / 1000, (mb1000 / 10) % 100, mb1000 % 1000);
        let secs = self.took.as_secs();
        let nanos = self.took.subsec_nanos();
        if self.took >= Duration::from_secs(1) {
            outln!(
                "Actual: {} packets ({} bytes) sent in {secs}.{:02} seconds",
                self.packets,
                self.bytes,
                nanos / 10_000_000
            )?;
        } else {
            outln!(
                "Actual: {} packets ({} bytes) sent in {secs}.{:06} seconds",
                self.packets,
                self.bytes,
                nanos / 1000
            )?;
        }
        if mb >= 1 {
            outln!(
                "Rated: {bps}.{bps10} Bps, {mb}.{mb100:02} Mbps, {}.{:02} pps",
                p100 / 100,
                p100 % 100
            )?;
        } else {
            outln!(
                "Rated: {bps}.{bps10} Bps, {mb}.{mb1000r:03} Mbps, {}.{:02} pps",
                p100 / 100,
                p100 % 100
            )?;
        }
        Ok(())
    }
}

/// Options that shape the packets `-w` writes; the rest (timing, preload,
/// flows) change when they would be sent, not what.
fn check_write(p: &Parsed) -> Result<(), String> {
    for (name, _) in &p.opts {
        match *name {
            "write" | "include" | "exclude" | "loop" | "limit" | "unique-ip" | "quiet"
            | "multiplier" | "pps" | "mbps" | "topspeed" | "preload-pcap" | "timer"
            | "maxsleep" | "loopdelay-ms" | "loopdelay-ns" | "no-flow-stats" | "flow-expiry"
            | "suppress-warnings" | "dbug" | "pid" | "stats" | "no-load-opts" => {}
            other => {
                return Err(refuse(
                    other,
                    "sluice tcpreplay -w writes the trace's packets as they are",
                    "sluice replay TRACE --to pcap:FILE with the option",
                ))
            }
        }
    }
    Ok(())
}

/// `-w FILE`: the packets of every pass, selected, with `--unique-ip`'s
/// addresses, as tcpreplay writes them.
fn write(p: &Parsed, file: &str) -> Result<u8, Failure> {
    check_write(p).map_err(|e| bad_input(anyhow!(e)))?;
    let loops = number::<u64>(p, "loop")?.unwrap_or(1);
    if loops == 0 {
        return Err(bad_input(anyhow!(
            "--loop 0 loops forever: with -w that is a file without end"
        )));
    }
    let limit = number::<u64>(p, "limit")?;
    let rule = |v: &str, o: &str| {
        v.parse::<SelectRule>()
            .map_err(|e| bad_input(anyhow!("--{o}: {e}")))
    };
    let select = match (p.value("include"), p.value("exclude")) {
        (Some(v), _) => Some(Select::include(rule(v, "include")?)),
        (None, Some(v)) => Some(Select::exclude(rule(v, "exclude")?)),
        _ => None,
    };
    let unique = p.has("unique-ip");
    let rewrite = HeaderRewrite {
        unique_ip: unique,
        ..Default::default()
    };
    let ins: Vec<&Path> = p.operands.iter().map(Path::new).collect();
    crate::dest::check(&ins, &[file])?;
    super::read_once_inputs(&p.operands, loops, "--loop reads it once per pass")?;
    // Before the output opens: a FIFO's wait for its reader ends on SIGINT.
    let stop = crate::signals::install()
        .context("installing signal handlers")
        .map_err(Failure::from)?;
    let mut writer = super::pcap_out(file, LinkType::ETHERNET, MAX_SNAPLEN, Stamps::NanosAsMicros)?;
    let began = Instant::now();
    let mut st = Stats::default();
    let mut frame = Vec::new();
    'all: for pass in 0..loops {
        for f in &p.operands {
            let mut r = CaptureReader::open_stoppable(f, stop.clone())
                .map_err(|e| bad_input(anyhow!(e)))?;
            let snap = super::libpcap_snap(&r);
            let mut n = 0u64;
            loop {
                let pk = match super::next_packet(&mut r, &stop)? {
                    super::Next::Packet(pk) => pk,
                    super::Next::End => break,
                    super::Next::Stopped => {
                        super::pcap_interrupted(writer, file, st.packets)?;
                        st.took = began.elapsed();
                        if !p.has("quiet") {
                            st.print(file, None)?;
                        }
                        return Ok(exit::INTERRUPTED);
                    }
                };
                n += 1;
                if select.as_ref().is_some_and(|s| !s.keeps(n, Some(pk.data))) {
                    continue;
                }
                if limit.is_some_and(|l| st.packets >= l) {
                    break 'all;
                }
                frame.clear();
                frame.extend_from_slice(&pk.data[..pk.data.len().min(snap)]);
                if unique && pass > 0 {
                    // tcpreplay moves the addresses of IP packets only and
                    // counts every other packet of a later pass as failed.
                    if parse_layers(&frame).ip.is_none() {
                        st.failed += 1;
                        continue;
                    }
                    if rewrite.apply_frame(&mut frame, pk.orig_len as usize, pass, 0)
                        == Rewritten::Dropped
                    {
                        continue;
                    }
                    // tcpreplay leaves a multicast group's MAC as it was.
                    frame[..12].copy_from_slice(&pk.data[..12]);
                }
                writer
                    .write_packet(pk.ts_ns, &frame, pk.orig_len)
                    .with_context(|| format!("writing {file}"))?;
                st.packets += 1;
                st.bytes += frame.len() as u64;
            }
        }
    }
    super::pcap_commit(writer, file)?;
    st.took = began.elapsed();
    if !p.has("quiet") {
        st.print(file, None)?;
    }
    Ok(exit::OK)
}
