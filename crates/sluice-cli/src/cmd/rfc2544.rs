//! `sluice rfc2544`: the benchmarking methodology of RFC 2544 §26 over one
//! port pair: for each frame size, the throughput (the highest rate the
//! device forwards with no more loss than allowed, by binary search over
//! trials), the one-way latency at that rate, and the frame loss rate at
//! 100 %, 90 %, ... of the maximum rate until two trials lose nothing.
//!
//! Each trial is a `sluice replay` of one test frame (or the IMIX set)
//! looped at a fixed rate with `--rx`: frames are stamped with a stream
//! and sequence number, and loss is counted by stamp where they come back,
//! not from interface counters. Trials run as child processes of this
//! one, so each starts from a clean engine and its summary is its record.

use crate::args::Rfc2544Args;
use crate::dest::Dest;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use serde::Serialize;
use serde_json::Value;
use sluice_capture::{LinkType, PcapWriter};
use sluice_sink::SinkSpec;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Ethernet's preamble, start delimiter and inter-frame gap: the bytes a
/// frame takes on the wire besides its own (for L1 rates).
const L1_OVERHEAD: f64 = 20.0;
/// IMIX (7:4:1 of 64, 594 and 1518 bytes), as frames in send order.
const IMIX: [usize; 12] = [64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 64, 594];

/// One trial: a rate held for the trial's length.
#[derive(Clone, Debug, Serialize)]
struct Trial {
    /// Frames per second asked.
    pps: f64,
    /// Frames per second the sender reached.
    sent_pps: Option<f64>,
    sent: u64,
    received: u64,
    lost: u64,
    /// Lost by sequence number within the streams (the rest never came
    /// after the last one received).
    lost_in_sequence: u64,
    reordered: u64,
    duplicates: u64,
    /// lost / sent.
    loss_ratio: f64,
    pass: bool,
    /// The sender fell short of the rate asked by more than 1 %: the
    /// trial does not pass, whatever the device did.
    sender_short: bool,
    latency: Option<Value>,
    /// With --both: the other direction's trial, held at the same time
    /// (the trial passes when both do); the fields above are --to's.
    reverse: Option<Box<Trial>>,
}

#[derive(Serialize)]
struct Throughput {
    /// The highest rate that passed (frames per second), null if none did.
    pps: Option<f64>,
    /// Frame bits per second at that rate, and with Ethernet's 20 bytes
    /// of preamble and gap per frame (L1).
    bps: Option<f64>,
    l1_bps: Option<f64>,
    /// The search ended within its resolution (not at --max-trials).
    converged: bool,
    trials: Vec<Trial>,
}

/// RFC 2544 §26.4: the longest burst at the highest rate the device
/// takes without loss.
#[derive(Serialize)]
struct BackToBack {
    /// Mean of the searches' results, frames.
    frames: f64,
    /// Each search's longest clean burst (0 when none was).
    searches: Vec<u64>,
    /// Every burst tried, in order.
    trials: Vec<Trial>,
}

#[derive(Serialize)]
struct LossRow {
    percent: u32,
    trial: Trial,
}

#[derive(Serialize)]
struct SizeResult {
    /// RFC 2544 frame size (FCS included), or 0 for IMIX.
    size: usize,
    imix: bool,
    /// Mean frame size of the set (FCS included).
    mean_size: f64,
    max_pps: f64,
    throughput: Option<Throughput>,
    latency: Option<Trial>,
    loss: Vec<LossRow>,
    back_to_back: Option<BackToBack>,
}

#[derive(Serialize)]
struct Results {
    to: String,
    rx: String,
    both: bool,
    trial_s: f64,
    loss_tolerance_percent: f64,
    resolution_percent: f64,
    sizes: Vec<SizeResult>,
}

/// A UDP/IPv4 test frame of `size` bytes with the FCS (so `size − 4`
/// built), checksums right; the stamp goes at the end of its payload.
fn test_frame(a: &Rfc2544Args, size: usize, reverse: bool) -> Vec<u8> {
    let len = size - 4;
    let (src_mac, dst_mac, src_ip, dst_ip) = if reverse {
        (a.dst_mac, a.src_mac, a.dst_ip, a.src_ip)
    } else {
        (a.src_mac, a.dst_mac, a.src_ip, a.dst_ip)
    };
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst_mac.0);
    f.extend_from_slice(&src_mac.0);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src_ip.octets());
    f.extend_from_slice(&dst_ip.octets());
    let c = sluice_wire::ipv4_header_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    // UDP 49184 -> 7 (RFC 2544 Appendix C.2.6.4: UDP echo).
    f.extend_from_slice(&49184u16.to_be_bytes());
    f.extend_from_slice(&7u16.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(len, 0);
    sluice_wire::complete_checksum(&mut f);
    f
}

fn sizes(a: &Rfc2544Args) -> Result<Vec<(usize, Vec<usize>)>, Failure> {
    a.sizes
        .iter()
        .map(|s| {
            if s == "imix" {
                return Ok((0, IMIX.to_vec()));
            }
            match s.parse::<usize>() {
                Ok(n) if (64..=9018).contains(&n) => Ok((n, vec![n])),
                _ => Err(bad_input(anyhow!(
                    "--sizes: '{s}' is not a frame size (64 to 9018 bytes with the FCS) or imix"
                ))),
            }
        })
        .collect()
}

pub fn run(a: Rfc2544Args) -> Result<u8, Failure> {
    if !(0.0..100.0).contains(&a.loss) {
        return Err(bad_input(anyhow!(
            "--loss must be at least 0 and below 100 (percent), got {}",
            a.loss
        )));
    }
    if !(a.resolution > 0.0 && a.resolution < 50.0) {
        return Err(bad_input(anyhow!(
            "--resolution must be above 0 and below 50 (percent), got {}",
            a.resolution
        )));
    }
    if a.max_pps.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        return Err(bad_input(anyhow!("--max-pps must be a positive rate")));
    }
    for t in &a.tests {
        if !matches!(t.as_str(), "throughput" | "latency" | "loss" | "b2b") {
            return Err(bad_input(anyhow!(
                "--tests: '{t}' is not throughput, latency, loss or b2b"
            )));
        }
    }
    if !matches!(a.to, SinkSpec::AfPacket(_) | SinkSpec::Xdp(_)) {
        return Err(bad_input(anyhow!(
            "--to {}: the test frames leave by an interface (afpacket:IFACE or xdp:IFACE)",
            a.to
        )));
    }
    let json_out = a.json.as_deref().map(Dest::open).transpose()?;
    let dir = tempfile::tempdir().context("a scratch directory for the trials")?;
    let stop = crate::signals::install().context("installing signal handlers")?;
    let mut results = Results {
        to: a.to.to_string(),
        rx: a.rx.clone(),
        both: a.both,
        trial_s: a.trial.0 as f64 / 1e9,
        loss_tolerance_percent: a.loss,
        resolution_percent: a.resolution,
        sizes: Vec::new(),
    };
    for (size, frames) in sizes(&a)? {
        let trace = dir.path().join(format!("frames-{size}.pcap"));
        write_frames(&a, &frames, &trace, false)?;
        let mut legs = vec![Leg {
            trace,
            to: a.to.to_string(),
            rx: a.rx.clone(),
        }];
        if a.both {
            // The way back: out of the receiving interface, counted on
            // the sending one.
            let (to, rx) = match &a.to {
                SinkSpec::AfPacket(i) => (SinkSpec::AfPacket(a.rx.clone()), i),
                SinkSpec::Xdp(i) => (SinkSpec::Xdp(a.rx.clone()), i),
                _ => unreachable!("--to was checked to be an interface"),
            };
            let trace = dir.path().join(format!("frames-{size}-back.pcap"));
            write_frames(&a, &frames, &trace, true)?;
            legs.push(Leg {
                trace,
                to: to.to_string(),
                rx: rx.clone(),
            });
        }
        let mean = frames.iter().sum::<usize>() as f64 / frames.len() as f64;
        let name = if size == 0 {
            "imix".to_string()
        } else {
            size.to_string()
        };
        let runner = Runner {
            a: &a,
            legs,
            set: frames.len(),
            dir: dir.path(),
            stop: &stop,
        };
        let max = match a.max_pps {
            Some(m) => m,
            None => runner.top_speed()?,
        };
        eoutln!("rfc2544: {name}-byte frames, up to {max:.0} frames/s");
        let mut r = SizeResult {
            size,
            imix: size == 0,
            mean_size: mean,
            max_pps: max,
            throughput: None,
            latency: None,
            loss: Vec::new(),
            back_to_back: None,
        };
        let want = |t: &str| a.tests.iter().any(|x| x == t);
        if want("throughput") {
            let t = runner.search(max)?;
            if want("latency") {
                if let Some(pps) = t.pps {
                    r.latency = Some(runner.trial(pps)?);
                }
            }
            r.throughput = Some(Throughput {
                bps: t.pps.map(|p| p * (mean - 4.0) * 8.0),
                l1_bps: t.pps.map(|p| p * (mean + L1_OVERHEAD) * 8.0),
                ..t
            });
        }
        if want("loss") {
            r.loss = runner.loss_table(max)?;
        }
        if want("b2b") {
            let most = a
                .b2b_max
                .unwrap_or((max * a.trial.0 as f64 / 1e9).ceil() as u64)
                .max(1);
            r.back_to_back = Some(runner.back_to_back(most)?);
        }
        eoutln!("{}", render(&name, &r));
        results.sizes.push(r);
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
    }
    if let Some(mut out) = json_out {
        let text = crate::json::pretty(crate::json::Kind::Rfc2544, &results)?;
        writeln!(out, "{text}")
            .and_then(|_| out.commit())
            .context("writing --json")?;
    }
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(exit::INTERRUPTED);
    }
    Ok(exit::OK)
}

fn write_frames(
    a: &Rfc2544Args,
    sizes: &[usize],
    path: &Path,
    reverse: bool,
) -> Result<(), Failure> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = PcapWriter::new(std::io::BufWriter::new(file), LinkType::ETHERNET, 65_535)
        .context("writing the test frames")?;
    for (i, &s) in sizes.iter().enumerate() {
        let f = test_frame(a, s, reverse);
        w.write_packet(i as u64 * 1000, &f, f.len() as u32)
            .context("writing the test frames")?;
    }
    w.into_inner().context("writing the test frames")?;
    Ok(())
}

/// One direction of a trial: its frames, where they leave, where they
/// are counted.
struct Leg {
    trace: PathBuf,
    to: String,
    rx: String,
}

struct Runner<'a> {
    a: &'a Rfc2544Args,
    /// --to's direction, then with --both the other.
    legs: Vec<Leg>,
    /// Frames in the trace (one pass).
    set: usize,
    dir: &'a Path,
    stop: &'a std::sync::atomic::AtomicBool,
}

impl Runner<'_> {
    /// Runs `sluice replay` with `timing` for `passes` passes; its summary.
    /// Runs `sluice replay` with `timing` for `passes` passes, in both
    /// directions at once with --both; their summaries.
    fn replay(&self, timing: &[&str], passes: u64) -> Result<(Value, Option<Value>), Failure> {
        if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Failure {
                code: exit::INTERRUPTED,
                error: anyhow!("stopped"),
            });
        }
        let exe = std::env::current_exe().context("finding sluice itself")?;
        let wait = format!("{}ns", self.a.wait.0);
        let mut children = Vec::new();
        for (k, leg) in self.legs.iter().enumerate() {
            let summary: PathBuf = self.dir.join(format!("trial-{k}.json"));
            let _ = std::fs::remove_file(&summary);
            let child = Command::new(&exe)
                .arg("replay")
                .arg(&leg.trace)
                .args(timing)
                .args(["--loop", &passes.to_string(), "--preload", "-q"])
                .args(["--to", &leg.to, "--rx", &leg.rx, "--rx-wait", &wait])
                .arg("--summary-json")
                .arg(&summary)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .context("running a trial")?;
            children.push((child, summary));
        }
        let mut out = Vec::new();
        for (child, summary) in children {
            let o = child.wait_with_output().context("running a trial")?;
            let text = std::fs::read(&summary).map_err(|_| {
                let err = String::from_utf8_lossy(&o.stderr);
                Failure {
                    code: if o.status.code() == Some(2) {
                        exit::BAD_INPUT
                    } else {
                        exit::FATAL
                    },
                    error: anyhow!("a trial failed: {}", err.trim()),
                }
            })?;
            let v: Value = serde_json::from_slice(&text).context("reading a trial's summary")?;
            out.push(v);
        }
        let back = (out.len() > 1).then(|| out.pop()).flatten();
        Ok((out.pop().expect("one leg at least"), back))
    }

    /// The sender's top speed with these frames (frames per second).
    fn top_speed(&self) -> Result<f64, Failure> {
        let passes = (200_000 / self.set).max(1) as u64;
        let (s, _) = self.replay(&["--topspeed"], passes)?;
        s["pps"]
            .as_f64()
            .filter(|p| *p > 0.0)
            .ok_or_else(|| anyhow!("the top-speed trial measured no rate").into())
    }

    /// One trial at `pps` frames per second.
    fn trial(&self, pps: f64) -> Result<Trial, Failure> {
        let frames = (pps * self.a.trial.0 as f64 / 1e9).ceil().max(1.0);
        let passes = (frames / self.set as f64).ceil() as u64;
        let rate = format!("{pps}");
        let (s, back) = self.replay(&["--pps", &rate], passes)?;
        let judge = |s: &Value| {
            let mut t = trial_of(s, pps, self.a.loss);
            let sent_pps = t.sent_pps;
            t.sender_short = sent_pps.is_some_and(|p| p < 0.99 * pps) || t.sent == 0;
            t.pass &= !t.sender_short;
            t
        };
        let t = both_ways(&s, back.as_ref(), judge);
        eoutln!(
            "  trial {:>12.0} frames/s: {} sent, {} lost ({:.4} %){}{} -> {}",
            pps,
            t.sent,
            t.lost,
            t.loss_ratio * 100.0,
            back_note(&t),
            if t.sender_short {
                ", the sender fell short"
            } else {
                ""
            },
            if t.pass { "pass" } else { "fail" }
        );
        Ok(t)
    }

    /// RFC 2544 §26.1: binary search for the highest passing rate.
    fn search(&self, max: f64) -> Result<Throughput, Failure> {
        let mut trials = Vec::new();
        let first = self.trial(max)?;
        let top_passes = first.pass;
        trials.push(first);
        let (mut lo, mut hi) = (0.0f64, max);
        let mut best = None;
        if top_passes {
            lo = max;
            best = Some(max);
        }
        while hi - lo > self.a.resolution / 100.0 * hi && (trials.len() as u32) < self.a.max_trials
        {
            let mid = (lo + hi) / 2.0;
            let t = self.trial(mid)?;
            if t.pass {
                lo = mid;
                best = Some(mid);
            } else {
                hi = mid;
            }
            trials.push(t);
        }
        Ok(Throughput {
            pps: best,
            bps: None,
            l1_bps: None,
            converged: hi - lo <= self.a.resolution / 100.0 * hi,
            trials,
        })
    }

    /// A burst of `frames` frames sent back to back (top speed).
    fn burst(&self, frames: u64) -> Result<Trial, Failure> {
        let passes = frames.div_ceil(self.set as u64);
        let (s, back) = self.replay(&["--topspeed", "--limit", &frames.to_string()], passes)?;
        let judge = |s: &Value| {
            let mut t = trial_of(s, s["pps"].as_f64().unwrap_or(0.0), 0.0);
            t.sender_short = t.sent < frames;
            t.pass = t.sent == frames && t.lost == 0;
            t
        };
        let t = both_ways(&s, back.as_ref(), judge);
        eoutln!(
            "  burst {frames:>10} frames: {} sent, {} lost{} -> {}",
            t.sent,
            t.lost,
            back_note(&t),
            if t.pass { "pass" } else { "fail" }
        );
        Ok(t)
    }

    /// RFC 2544 §26.4: the longest burst without loss, by binary search
    /// up to `most` frames, `--b2b-repeats` times.
    fn back_to_back(&self, most: u64) -> Result<BackToBack, Failure> {
        let mut trials = Vec::new();
        let mut searches = Vec::new();
        for _ in 0..self.a.b2b_repeats.max(1) {
            let (mut lo, mut hi) = (0u64, most);
            let first = self.burst(most)?;
            let clean = first.pass;
            trials.push(first);
            if clean {
                lo = most;
            }
            let close = |lo: u64, hi: u64| {
                hi - lo <= ((self.a.resolution / 100.0 * hi as f64) as u64).max(1)
            };
            while !close(lo, hi) && trials.len() < 64 * self.a.b2b_repeats as usize {
                let mid = lo + (hi - lo) / 2;
                let t = self.burst(mid)?;
                if t.pass {
                    lo = mid;
                } else {
                    hi = mid;
                }
                trials.push(t);
            }
            searches.push(lo);
        }
        Ok(BackToBack {
            frames: searches.iter().sum::<u64>() as f64 / searches.len() as f64,
            searches,
            trials,
        })
    }

    /// RFC 2544 §26.3: loss at 100 %, 90 %, ... of `max` until two
    /// successive trials lose nothing.
    fn loss_table(&self, max: f64) -> Result<Vec<LossRow>, Failure> {
        let mut rows: Vec<LossRow> = Vec::new();
        for percent in (1..=10).rev().map(|k| k * 10) {
            let t = self.trial(max * f64::from(percent) / 100.0)?;
            rows.push(LossRow { percent, trial: t });
            let clean = |r: &LossRow| r.trial.lost == 0 && !r.trial.sender_short;
            if rows.len() >= 2 && rows[rows.len() - 2..].iter().all(clean) {
                break;
            }
        }
        Ok(rows)
    }
}

/// A trial from its summaries: --to's, with the other direction's (if
/// any) kept beside it; it passes when both do.
fn both_ways(s: &Value, back: Option<&Value>, judge: impl Fn(&Value) -> Trial) -> Trial {
    let mut t = judge(s);
    if let Some(b) = back {
        let r = judge(b);
        t.pass &= r.pass;
        t.reverse = Some(Box::new(r));
    }
    t
}

/// The other direction's counts, for a trial's line.
fn back_note(t: &Trial) -> String {
    t.reverse.as_ref().map_or(String::new(), |r| {
        format!("; back: {} sent, {} lost", r.sent, r.lost)
    })
}

/// A trial as one replay's summary (with its `rx` section) tells it, at
/// `pps` asked, passing with no more than `tolerance` percent lost.
fn trial_of(s: &Value, pps: f64, tolerance: f64) -> Trial {
    let sent = s["packets"].as_u64().unwrap_or(0);
    let streams = s["rx"]["streams"].as_array().cloned().unwrap_or_default();
    let sum = |k: &str| {
        streams
            .iter()
            .map(|x| x[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let received = sum("received");
    let lost = sent.saturating_sub(received);
    let loss_ratio = if sent > 0 {
        lost as f64 / sent as f64
    } else {
        1.0
    };
    Trial {
        pps,
        sent_pps: s["pps"].as_f64(),
        sent,
        received,
        lost,
        lost_in_sequence: sum("lost"),
        reordered: sum("reordered"),
        duplicates: sum("duplicates"),
        loss_ratio,
        pass: loss_ratio * 100.0 <= tolerance,
        sender_short: false,
        latency: streams.first().map(|x| x["latency"].clone()),
        reverse: None,
    }
}

/// One size's results on stderr, RFC 2544 §26's figures.
fn render(name: &str, r: &SizeResult) -> String {
    let mut s = String::new();
    if let Some(t) = &r.throughput {
        match t.pps {
            Some(p) => {
                s += &format!(
                    "{name} bytes: throughput {p:.0} frames/s, {:.2} Mbit/s of frames, {:.2} Mbit/s on the wire{}",
                    t.bps.unwrap_or(0.0) / 1e6,
                    t.l1_bps.unwrap_or(0.0) / 1e6,
                    if t.converged { "" } else { " (not converged: --max-trials reached)" }
                );
            }
            None => s += &format!("{name} bytes: no rate passed ({} trials)", t.trials.len()),
        }
    }
    if let Some(l) = r.latency.as_ref().and_then(|t| t.latency.as_ref()) {
        let p = &l["percentiles"];
        let us = |k: &str| p[k].as_f64().unwrap_or(0.0) / 1e3;
        s += &format!(
            "\n  latency at the throughput: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            us("p50_ns"),
            us("p99_ns"),
            us("max_ns")
        );
    }
    if let Some(b) = &r.back_to_back {
        s += &format!(
            "\n  back-to-back: {:.1} frames (searches {:?})",
            b.frames, b.searches
        );
    }
    for row in &r.loss {
        s += &format!(
            "\n  frame loss at {:>3} % ({:.0} frames/s): {:.4} %",
            row.percent,
            row.trial.pps,
            row.trial.loss_ratio * 100.0
        );
    }
    s
}
