//! `sluice rfc2544`: the benchmarking methodology of RFC 2544 §26 over one
//! port pair: for each frame size, the throughput (the highest rate the
//! device forwards with no more loss than allowed, by binary search over
//! trials), the one-way latency at that rate, and the frame loss rate at
//! 100 %, 90 %, ... of the maximum rate until two trials lose nothing.
//!
//! Each trial is a `sluice replay` of one test frame (or the IMIX set)
//! looped at a fixed rate with `--rx`: frames are stamped with a stream
//! and sequence number, and loss is counted by stamp where they come back,
//! not from interface counters. Trials run in this process, one replay
//! after another (both directions at once with `--both`), each from a
//! fresh engine; its typed report is its record.

use crate::args::Rfc2544Args;
use crate::args::{ReplayArgs, RunOpts};
use crate::dest::Dest;
use crate::plan::Report;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use serde::Serialize;
use sluice_analyze::streams::StreamReport;
use sluice_capture::{LinkType, PcapWriter};
use sluice_core::Dist;
use sluice_job::replay::ReplayOpts;
use sluice_job::SendOpts;
use sluice_sink::SinkSpec;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
    /// The sender fell short of the rate asked by more than 1 % (a
    /// burst: sent fewer frames than asked): the trial does not pass,
    /// whatever the device did, and its loss is at the rate the sender
    /// reached (`sent_pps`), not at `pps`.
    sender_short: bool,
    /// b2b: the burst length asked, frames (null for a timed trial).
    burst: Option<u64>,
    latency: Option<Dist>,
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
    /// What bounds the result from above (see [`Limit`]).
    limit: Limit,
    trials: Vec<Trial>,
}

/// What bounds a throughput search's result from above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Limit {
    /// The device: the lowest failing trial above the result lost more
    /// than the tolerance.
    Device,
    /// The sender: the lowest failing trial above the result failed
    /// only because the sender fell short of its rate (its loss within
    /// the tolerance), or the result is the top of the search and that
    /// top was the sender's own top speed. The device may forward more.
    Sender,
    /// `--max-pps`: the top of the search passed. The device may
    /// forward more.
    MaxPps,
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
    /// The rate asked, in percent of the highest rate.
    percent: u32,
    /// The rate the sender reached, in percent of the highest rate (null
    /// when it measured none): below `percent` by more than 1 % when the
    /// trial's sender fell short, and the loss is then at this rate.
    achieved_percent: Option<f64>,
    /// The trial's sender fell short (its `sender_short`).
    sender_short: bool,
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
    /// Where `max_pps` comes from: `top_speed` (the sender's, measured
    /// by a first trial) or `max_pps` (--max-pps).
    max_from: MaxFrom,
    throughput: Option<Throughput>,
    latency: Option<Trial>,
    loss: Vec<LossRow>,
    back_to_back: Option<BackToBack>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum MaxFrom {
    TopSpeed,
    MaxPps,
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
        (a.opts.dst_mac, a.opts.src_mac, a.opts.dst_ip, a.opts.src_ip)
    } else {
        (a.opts.src_mac, a.opts.dst_mac, a.opts.src_ip, a.opts.dst_ip)
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
    a.opts
        .sizes
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
    // Trials are sending runs: a limit that would fail one part-way is
    // refused before the first.
    sluice_sys::mem::check_address_space(sluice_sys::mem::MIN_ADDRESS_SPACE, "an RFC 2544 trial")
        .map_err(|e| bad_input(anyhow!(e)))?;
    if !(0.0..100.0).contains(&a.opts.loss) {
        return Err(bad_input(anyhow!(
            "--loss must be at least 0 and below 100 (percent), got {}",
            a.opts.loss
        )));
    }
    if !(a.opts.resolution > 0.0 && a.opts.resolution < 50.0) {
        return Err(bad_input(anyhow!(
            "--resolution must be above 0 and below 50 (percent), got {}",
            a.opts.resolution
        )));
    }
    if a.opts.max_pps.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        return Err(bad_input(anyhow!("--max-pps must be a positive rate")));
    }
    for t in &a.opts.tests {
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
        both: a.opts.both,
        trial_s: a.opts.trial.0 as f64 / 1e9,
        loss_tolerance_percent: a.opts.loss,
        resolution_percent: a.opts.resolution,
        sizes: Vec::new(),
    };
    for (size, frames) in sizes(&a)? {
        let trace = dir.path().join(format!("frames-{size}.pcap"));
        write_frames(&a, &frames, &trace, false)?;
        let mut legs = vec![Leg {
            trace,
            to: a.to.clone(),
            rx: a.rx.clone(),
        }];
        if a.opts.both {
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
                to,
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
            stop: stop.clone(),
        };
        let (max, max_from) = match a.opts.max_pps {
            Some(m) => (m, MaxFrom::MaxPps),
            None => (runner.top_speed()?, MaxFrom::TopSpeed),
        };
        eoutln!("rfc2544: {name}-byte frames, up to {max:.0} frames/s");
        let mut r = SizeResult {
            size,
            imix: size == 0,
            mean_size: mean,
            max_pps: max,
            max_from,
            throughput: None,
            latency: None,
            loss: Vec::new(),
            back_to_back: None,
        };
        let want = |t: &str| a.opts.tests.iter().any(|x| x == t);
        if want("throughput") {
            let t = runner.search(max, max_from)?;
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
                .opts
                .b2b_max
                .unwrap_or((max * a.opts.trial.0 as f64 / 1e9).ceil() as u64)
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
    to: SinkSpec,
    rx: String,
}

struct Runner<'a> {
    a: &'a Rfc2544Args,
    /// --to's direction, then with --both the other.
    legs: Vec<Leg>,
    /// Frames in the trace (one pass).
    set: usize,
    stop: Arc<AtomicBool>,
}

impl Runner<'_> {
    /// Replays each leg's frames with `opts` (their timing and passes)
    /// and `limit`, in this process, both directions at once with --both;
    /// their reports.
    fn replay(
        &self,
        opts: ReplayOpts,
        limit: Option<u64>,
    ) -> Result<(Report, Option<Report>), Failure> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Failure {
                code: exit::INTERRUPTED,
                error: anyhow!("stopped"),
            });
        }
        let job = |leg: &Leg| {
            let mut run = RunOpts::new(
                leg.to.clone(),
                SendOpts {
                    limit,
                    ..SendOpts::default()
                },
            );
            run.quiet = true;
            run.rx = Some(leg.rx.clone());
            run.rx_wait = self.a.opts.wait;
            ReplayArgs::of(vec![leg.trace.clone()], opts.clone(), run)
        };
        let mut out: Vec<Report> = std::thread::scope(|s| {
            let legs: Vec<_> = self
                .legs
                .iter()
                .map(|leg| {
                    let (args, stop) = (job(leg), self.stop.clone());
                    s.spawn(move || crate::cmd::replay::run_in_process(args, stop))
                })
                .collect();
            legs.into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<Result<_, _>>()
        })?;
        let back = (out.len() > 1).then(|| out.pop()).flatten();
        Ok((out.pop().expect("one leg at least"), back))
    }

    /// `passes` passes over the frames, preloaded (no file reading while
    /// sending); the caller sets the timing.
    fn passes(loops: u64) -> ReplayOpts {
        ReplayOpts {
            loops,
            preload: true,
            ..ReplayOpts::default()
        }
    }

    /// The sender's top speed with these frames (frames per second).
    fn top_speed(&self) -> Result<f64, Failure> {
        let passes = (200_000 / self.set).max(1) as u64;
        let (s, _) = self.replay(
            ReplayOpts {
                topspeed: true,
                ..Self::passes(passes)
            },
            None,
        )?;
        s.summary
            .pps
            .filter(|p| *p > 0.0)
            .ok_or_else(|| anyhow!("the top-speed trial measured no rate").into())
    }

    /// One trial at `pps` frames per second.
    fn trial(&self, pps: f64) -> Result<Trial, Failure> {
        let frames = (pps * self.a.opts.trial.0 as f64 / 1e9).ceil().max(1.0);
        let passes = (frames / self.set as f64).ceil() as u64;
        let (s, back) = self.replay(
            ReplayOpts {
                pps: Some(pps),
                ..Self::passes(passes)
            },
            None,
        )?;
        let judge = |s: &Report| {
            let mut t = trial_of(s, pps, self.a.opts.loss);
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
            short_note(&t),
            if t.pass { "pass" } else { "fail" }
        );
        Ok(t)
    }

    /// RFC 2544 §26.1: binary search for the highest passing rate.
    fn search(&self, max: f64, max_from: MaxFrom) -> Result<Throughput, Failure> {
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
        while hi - lo > self.a.opts.resolution / 100.0 * hi
            && (trials.len() as u32) < self.a.opts.max_trials
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
            converged: hi - lo <= self.a.opts.resolution / 100.0 * hi,
            limit: limit_of(&trials, best, max_from, self.a.opts.loss),
            trials,
        })
    }

    /// A burst of `frames` frames sent back to back (top speed).
    fn burst(&self, frames: u64) -> Result<Trial, Failure> {
        let passes = frames.div_ceil(self.set as u64);
        let (s, back) = self.replay(
            ReplayOpts {
                topspeed: true,
                ..Self::passes(passes)
            },
            Some(frames),
        )?;
        let judge = |s: &Report| {
            let mut t = trial_of(s, s.summary.pps.unwrap_or(0.0), 0.0);
            t.sender_short = t.sent < frames;
            t.burst = Some(frames);
            t.pass = t.sent == frames && t.lost == 0;
            t
        };
        let t = both_ways(&s, back.as_ref(), judge);
        eoutln!(
            "  burst {frames:>10} frames: {} sent, {} lost{}{} -> {}",
            t.sent,
            t.lost,
            back_note(&t),
            short_note(&t),
            if t.pass { "pass" } else { "fail" }
        );
        Ok(t)
    }

    /// RFC 2544 §26.4: the longest burst without loss, by binary search
    /// up to `most` frames, `--b2b-repeats` times.
    fn back_to_back(&self, most: u64) -> Result<BackToBack, Failure> {
        let mut trials = Vec::new();
        let mut searches = Vec::new();
        for _ in 0..self.a.opts.b2b_repeats.max(1) {
            let (mut lo, mut hi) = (0u64, most);
            let first = self.burst(most)?;
            let clean = first.pass;
            trials.push(first);
            if clean {
                lo = most;
            }
            let close = |lo: u64, hi: u64| {
                hi - lo <= ((self.a.opts.resolution / 100.0 * hi as f64) as u64).max(1)
            };
            while !close(lo, hi) && trials.len() < 64 * self.a.opts.b2b_repeats as usize {
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
            rows.push(loss_row(percent, max, t));
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
fn both_ways(s: &Report, back: Option<&Report>, judge: impl Fn(&Report) -> Trial) -> Trial {
    let mut t = judge(s);
    if let Some(b) = back {
        let r = judge(b);
        t.pass &= r.pass;
        t.reverse = Some(Box::new(r));
    }
    t
}

/// A row of the loss table: the trial at `percent` of `max`.
fn loss_row(percent: u32, max: f64, trial: Trial) -> LossRow {
    // Both directions: the slower sender is the rate reached.
    let reached = std::iter::once(&trial)
        .chain(trial.reverse.as_deref())
        .map(|t| t.sent_pps)
        .try_fold(f64::INFINITY, |m, p| p.map(|p| m.min(p)));
    LossRow {
        percent,
        achieved_percent: reached.filter(|_| max > 0.0).map(|p| p / max * 100.0),
        sender_short: sender_short(&trial),
        trial,
    }
}

/// The sender of either direction fell short.
fn sender_short(t: &Trial) -> bool {
    t.sender_short || t.reverse.as_ref().is_some_and(|r| r.sender_short)
}

/// A trial failed only because its sender fell short of the rate: in
/// each direction the loss (of what was sent) is within `tolerance`
/// percent, or nothing was sent at all.
fn failed_by_sender(t: &Trial, tolerance: f64) -> bool {
    let within = |t: &Trial| t.sent == 0 || t.loss_ratio * 100.0 <= tolerance;
    !t.pass && sender_short(t) && within(t) && t.reverse.as_deref().is_none_or(within)
}

/// What bounds a search that found `best` from above: the lowest failing
/// trial above it, or with none (the top passed) the top's origin.
fn limit_of(trials: &[Trial], best: Option<f64>, max_from: MaxFrom, tolerance: f64) -> Limit {
    let lowest_fail = trials
        .iter()
        .filter(|t| !t.pass && best.is_none_or(|b| t.pps > b))
        .min_by(|a, b| a.pps.total_cmp(&b.pps));
    match lowest_fail {
        Some(t) if failed_by_sender(t, tolerance) => Limit::Sender,
        Some(_) => Limit::Device,
        None if max_from == MaxFrom::TopSpeed => Limit::Sender,
        None => Limit::MaxPps,
    }
}

/// A trial's line's note when its sender fell short: what it reached.
fn short_note(t: &Trial) -> String {
    let one = |t: &Trial, dir: &str| -> Option<String> {
        t.sender_short.then(|| match (t.burst, t.sent_pps) {
            (Some(n), _) => format!(
                ", the sender{dir} fell short: {} of {n} frames sent",
                t.sent
            ),
            (None, Some(p)) => format!(
                ", the sender{dir} fell short: {p:.0} of {:.0} frames/s reached",
                t.pps
            ),
            (None, None) => format!(", the sender{dir} fell short: no rate measured"),
        })
    };
    one(t, "")
        .into_iter()
        .chain(t.reverse.as_deref().and_then(|r| one(r, " back")))
        .collect()
}

/// The other direction's counts, for a trial's line.
fn back_note(t: &Trial) -> String {
    t.reverse.as_ref().map_or(String::new(), |r| {
        format!("; back: {} sent, {} lost", r.sent, r.lost)
    })
}

/// A trial as one replay's summary (with its `rx` section) tells it, at
/// `pps` asked, passing with no more than `tolerance` percent lost.
fn trial_of(s: &Report, pps: f64, tolerance: f64) -> Trial {
    let streams = s.rx.as_ref().map_or(&[][..], |r| &r.streams[..]);
    judged(s.summary.packets, s.summary.pps, streams, pps, tolerance)
}

/// A trial that sent `sent` frames at `sent_pps`, the receiver counting
/// `streams`.
fn judged(
    sent: u64,
    sent_pps: Option<f64>,
    streams: &[StreamReport],
    pps: f64,
    tolerance: f64,
) -> Trial {
    let sum = |k: fn(&StreamReport) -> u64| streams.iter().map(k).sum::<u64>();
    let received = sum(|x| x.received);
    let lost = sent.saturating_sub(received);
    let loss_ratio = if sent > 0 {
        lost as f64 / sent as f64
    } else {
        1.0
    };
    Trial {
        pps,
        sent_pps,
        sent,
        received,
        lost,
        lost_in_sequence: sum(|x| x.lost),
        reordered: sum(|x| x.reordered),
        duplicates: sum(|x| x.duplicates),
        loss_ratio,
        pass: loss_ratio * 100.0 <= tolerance,
        sender_short: false,
        burst: None,
        latency: streams.first().map(|x| x.latency),
        reverse: None,
    }
}

/// One size's results on stderr, RFC 2544 §26's figures: every trial
/// whose sender fell short is marked with the rate it reached, and a
/// throughput the sender bounded says so.
fn render(name: &str, r: &SizeResult) -> String {
    let mut s = format!("{name} bytes:");
    if let Some(t) = &r.throughput {
        match t.pps {
            Some(p) => {
                s += &format!(
                    " throughput {p:.0} frames/s, {:.2} Mbit/s of frames, {:.2} Mbit/s on the wire{}",
                    t.bps.unwrap_or(0.0) / 1e6,
                    t.l1_bps.unwrap_or(0.0) / 1e6,
                    if t.converged { "" } else { " (not converged: --max-trials reached)" }
                );
            }
            None => s += &format!(" no rate passed ({} trials)", t.trials.len()),
        }
        if let Some(note) = limit_note(r, t) {
            s += &format!("\n  {note}");
        }
    }
    if let Some(t) = &r.latency {
        if let Some(l) = &t.latency {
            let p = &l.percentiles;
            let us = |ns: u64| ns as f64 / 1e3;
            s += &format!(
                "\n  latency at the throughput: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs{}",
                us(p.p50_ns),
                us(p.p99_ns),
                us(p.max_ns),
                short_note(t)
            );
        }
    }
    if let Some(b) = &r.back_to_back {
        let short = b.trials.iter().filter(|t| sender_short(t)).count();
        s += &format!(
            "\n  back-to-back: {:.1} frames (searches {:?}){}",
            b.frames,
            b.searches,
            if short > 0 {
                format!(
                    "; in {short} of {} bursts the sender fell short (sent fewer frames than asked)",
                    b.trials.len()
                )
            } else {
                String::new()
            }
        );
    }
    for row in &r.loss {
        let t = &row.trial;
        s += &format!(
            "\n  frame loss at {:>3} % ({:.0} frames/s): {:.4} %",
            row.percent,
            t.pps,
            t.loss_ratio * 100.0
        );
        if row.sender_short {
            s += &format!(
                " SENDER SHORT: it reached {}, so this is the loss at that rate, not at {} %",
                row.achieved_percent
                    .map_or("no measured rate".into(), |a| format!(
                        "{:.0} frames/s ({a:.1} %)",
                        a / 100.0 * r.max_pps
                    )),
                row.percent
            );
        }
    }
    let short_rows = r.loss.iter().filter(|row| row.sender_short).count();
    if short_rows > 0 {
        s += &format!(
            "\n  the sender, not the device, fell short in {short_rows} of {} loss trials: \
             their rates were not offered to the device",
            r.loss.len()
        );
    }
    s
}

/// What a throughput search's bound says about the device, when it is
/// not the device's own limit.
fn limit_note(r: &SizeResult, t: &Throughput) -> Option<String> {
    match t.limit {
        Limit::Device => None,
        Limit::Sender => {
            let above = t
                .trials
                .iter()
                .filter(|x| !x.pass && t.pps.is_none_or(|b| x.pps > b))
                .min_by(|a, b| a.pps.total_cmp(&b.pps));
            Some(match above {
                Some(x) => format!(
                    "LIMITED BY THE SENDER, not the device: at {:.0} frames/s asked the sender {}, \
                     and the device lost no more than allowed; the device's throughput is not measured{}",
                    x.pps,
                    match (x.sent_pps, x.sent) {
                        (_, 0) => "sent nothing".to_string(),
                        (Some(p), _) => format!("reached only {p:.0}"),
                        (None, _) => "reached no measured rate".to_string(),
                    },
                    t.pps.map_or(String::new(), |p| format!(" above {p:.0} frames/s"))
                ),
                None => format!(
                    "LIMITED BY THE SENDER, not the device: the search's top, {:.0} frames/s, is the \
                     sender's top speed, and the device took it; the device may forward more",
                    r.max_pps
                ),
            })
        }
        Limit::MaxPps => Some(format!(
            "the search's top, --max-pps {:.0} frames/s, passed: the device may forward more",
            r.max_pps
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command as Cmd};
    use clap::{CommandFactory, Parser};

    fn args(size: &str) -> Rfc2544Args {
        let cli = Cli::try_parse_from([
            "sluice", "rfc2544", "--to", "null", "--rx", "x", "--sizes", size,
        ])
        .expect("parses");
        match cli.command {
            Cmd::Rfc2544(a) => *a,
            other => panic!("{other:?}"),
        }
    }

    /// `--help` names the bounds the check enforces (64 to 9018).
    #[test]
    fn the_help_names_the_sizes_the_check_takes() {
        let cmd = Cli::command();
        let rfc = cmd.find_subcommand("rfc2544").expect("rfc2544");
        let help = rfc
            .get_arguments()
            .find(|a| a.get_id() == "sizes")
            .and_then(|a| a.get_help())
            .expect("--sizes has help")
            .to_string();
        assert!(help.contains("64 to 9018"), "{help}");
        for ok in ["64", "1518", "9018", "imix"] {
            assert!(sizes(&args(ok)).is_ok(), "{ok}");
        }
        for bad in ["63", "9019"] {
            assert!(sizes(&args(bad)).is_err(), "{bad}");
        }
    }
}

/// Results that cannot mislead: a sender that fell short is marked on
/// every trial, and a bound the sender set is named as the sender's.
#[cfg(test)]
mod sender_limits {
    use super::*;

    /// A trial at `pps` asked whose sender reached `sent_pps`, losing
    /// `lost` of 1000 frames, judged as `Runner::trial` judges.
    fn trial(pps: f64, sent_pps: f64, lost: u64, tolerance: f64) -> Trial {
        let stream = StreamReport {
            received: 1000 - lost,
            lost,
            ..StreamReport::default()
        };
        let mut t = judged(1000, Some(sent_pps), &[stream], pps, tolerance);
        t.sender_short = sent_pps < 0.99 * pps;
        t.pass &= !t.sender_short;
        t
    }

    fn size(max: f64, max_from: MaxFrom, throughput: Option<Throughput>) -> SizeResult {
        SizeResult {
            size: 64,
            imix: false,
            mean_size: 64.0,
            max_pps: max,
            max_from,
            throughput,
            latency: None,
            loss: Vec::new(),
            back_to_back: None,
        }
    }

    fn search(trials: Vec<Trial>, max_from: MaxFrom) -> Throughput {
        let best = trials
            .iter()
            .filter(|t| t.pass)
            .map(|t| t.pps)
            .max_by(f64::total_cmp);
        Throughput {
            pps: best,
            bps: best.map(|p| p * 480.0),
            l1_bps: best.map(|p| p * 672.0),
            converged: true,
            limit: limit_of(&trials, best, max_from, 0.0),
            trials,
        }
    }

    /// The audit's case: 100 % of 48 446 frames/s asked, 17 117 reached,
    /// nothing lost. The row must not read as the device's loss at 100 %.
    #[test]
    fn a_loss_row_whose_sender_fell_short_is_marked_with_the_rate_reached() {
        let max = 48_446.0;
        let mut r = size(max, MaxFrom::TopSpeed, None);
        r.loss = vec![
            loss_row(100, max, trial(max, 17_117.0, 0, 0.0)),
            loss_row(90, max, trial(0.9 * max, 0.9 * max, 0, 0.0)),
        ];
        let row = &r.loss[0];
        assert!(row.sender_short);
        let got = row.achieved_percent.unwrap();
        assert!((got - 35.33).abs() < 0.01, "{got}");
        assert!(!r.loss[1].sender_short);
        let text = render("64", &r);
        let first = text.lines().nth(1).unwrap();
        assert!(
            first.contains("frame loss at 100 %")
                && first.contains("SENDER SHORT")
                && first.contains("17117 frames/s (35.3 %)"),
            "{text}"
        );
        let second = text.lines().nth(2).unwrap();
        assert!(!second.contains("SENDER"), "{text}");
        assert!(
            text.contains("the sender, not the device, fell short in 1 of 2 loss trials"),
            "{text}"
        );
        // The JSON carries the mark on the row and the trial.
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["loss"][0]["sender_short"], true, "{v}");
        assert_eq!(v["loss"][0]["trial"]["sender_short"], true, "{v}");
        assert_eq!(v["loss"][0]["trial"]["sent_pps"], 17_117.0, "{v}");
        assert_eq!(v["loss"][1]["sender_short"], false, "{v}");
        assert_eq!(v["max_from"], "top_speed", "{v}");
    }

    /// A search bounded by trials the sender could not send is the
    /// sender's limit, said in the text and the JSON; one bounded by loss
    /// is the device's; a top that passed is the top's.
    #[test]
    fn a_throughput_the_sender_bounded_says_so() {
        let max = 48_446.0;
        // Top and half fell short with nothing lost; a quarter passed.
        let t = search(
            vec![
                trial(max, 17_117.0, 0, 0.0),
                trial(max / 2.0, 17_050.0, 0, 0.0),
                trial(max / 4.0, max / 4.0, 0, 0.0),
            ],
            MaxFrom::TopSpeed,
        );
        assert_eq!(t.limit, Limit::Sender);
        let r = size(max, MaxFrom::TopSpeed, Some(t));
        let text = render("64", &r);
        assert!(
            text.contains("LIMITED BY THE SENDER, not the device")
                && text.contains("at 24223 frames/s asked the sender reached only 17050"),
            "{text}"
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["throughput"]["limit"], "sender", "{v}");

        // The top failed by loss: the device's limit, nothing said.
        let t = search(
            vec![
                trial(max, max, 50, 0.0),
                trial(max / 2.0, max / 2.0, 0, 0.0),
            ],
            MaxFrom::TopSpeed,
        );
        assert_eq!(t.limit, Limit::Device);
        let text = render("64", &size(max, MaxFrom::TopSpeed, Some(t)));
        assert!(!text.contains("LIMITED") && !text.contains("top"), "{text}");

        // The sender short *and* the device losing more than allowed:
        // the device's.
        let t = search(
            vec![
                trial(max, 17_000.0, 50, 0.0),
                trial(max / 2.0, max / 2.0, 0, 0.0),
            ],
            MaxFrom::TopSpeed,
        );
        assert_eq!(t.limit, Limit::Device);

        // The top passed: the sender's top speed, or --max-pps.
        let t = search(vec![trial(max, max, 0, 0.0)], MaxFrom::TopSpeed);
        assert_eq!(t.limit, Limit::Sender);
        let text = render("64", &size(max, MaxFrom::TopSpeed, Some(t)));
        assert!(
            text.contains("the search's top, 48446 frames/s, is the sender's top speed"),
            "{text}"
        );
        let t = search(vec![trial(max, max, 0, 0.0)], MaxFrom::MaxPps);
        assert_eq!(t.limit, Limit::MaxPps);
        let text = render("64", &size(max, MaxFrom::MaxPps, Some(t)));
        assert!(text.contains("--max-pps 48446 frames/s, passed"), "{text}");

        // No rate passed, every trial short with nothing lost.
        let t = search(
            vec![trial(max, 900.0, 0, 0.0), trial(max / 2.0, 900.0, 0, 0.0)],
            MaxFrom::MaxPps,
        );
        assert_eq!((t.pps, t.limit), (None, Limit::Sender));
    }

    /// A trial's own line names the rate reached; a burst, the frames.
    #[test]
    fn each_short_trial_line_shows_asked_and_reached() {
        let t = trial(48_446.0, 17_117.0, 0, 0.0);
        assert_eq!(
            short_note(&t),
            ", the sender fell short: 17117 of 48446 frames/s reached"
        );
        let mut b = trial(0.0, 1e6, 0, 0.0);
        b.sender_short = true;
        b.burst = Some(2000);
        assert_eq!(
            short_note(&b),
            ", the sender fell short: 1000 of 2000 frames sent"
        );
        assert_eq!(short_note(&trial(100.0, 100.0, 0, 0.0)), "");
    }

    /// Only the tests that ran appear, under the size's name.
    #[test]
    fn no_empty_sections_in_the_text() {
        let mut r = size(1000.0, MaxFrom::MaxPps, None);
        r.back_to_back = Some(BackToBack {
            frames: 12.0,
            searches: vec![12],
            trials: Vec::new(),
        });
        let text = render("1518", &r);
        assert_eq!(
            text,
            "1518 bytes:\n  back-to-back: 12.0 frames (searches [12])"
        );
    }
}
