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
//! fresh engine; its typed report is its record. The searches, the
//! judging of a trial and the results are `sluice_receive::rfc2544`'s;
//! this file makes the test frames and runs the trials.

use crate::args::Rfc2544Args;
use crate::args::{ReplayArgs, RunOpts};
use crate::dest::Dest;
use crate::plan::Report;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_capture::{LinkType, PcapWriter};
use sluice_job::replay::ReplayOpts;
use sluice_job::SendOpts;
use sluice_receive::rfc2544::{self as rfc, MaxFrom, Results, SizeResult, Trial};
use sluice_sink::SinkSpec;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// IMIX (7:4:1 of 64, 594 and 1518 bytes), as frames in send order.
const IMIX: [usize; 12] = [64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 64, 594];

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
    if a.to.iface().is_none() {
        return Err(bad_input(anyhow!(
            "--to {}: the test frames leave by an interface (IFACE, afpacket:IFACE or xdp:IFACE)",
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
                SinkSpec::Iface(i) => (SinkSpec::Iface(a.rx.clone()), i),
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
        let search = rfc::Search {
            tolerance: a.opts.loss,
            resolution: a.opts.resolution,
            max_trials: a.opts.max_trials,
            b2b_repeats: a.opts.b2b_repeats,
        };
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
            let t = rfc::throughput(&runner, &search, max, max_from, mean)?;
            if want("latency") {
                if let Some(pps) = t.pps {
                    r.latency = Some(rfc::Trials::trial(&runner, pps)?);
                }
            }
            r.throughput = Some(t);
        }
        if want("loss") {
            r.loss = rfc::loss_table(&runner, max)?;
        }
        if want("b2b") {
            let most = a
                .opts
                .b2b_max
                .unwrap_or((max * a.opts.trial.0 as f64 / 1e9).ceil() as u64)
                .max(1);
            r.back_to_back = Some(rfc::back_to_back(&runner, &search, most)?);
        }
        eoutln!("{}", rfc::render(&r));
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
                    s.spawn(move || {
                        sluice_run::run_job(sluice_run::Job::Replay(args), stop, None)?.report()
                    })
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
}

impl rfc::Trials for Runner<'_> {
    type Error = Failure;

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
        let judge = |r: &Report| Trial::timed(sent(r), pps, self.a.opts.loss);
        let t = rfc::both_ways(judge(&s), back.as_ref().map(judge));
        eoutln!("{}", rfc::trial_line(&t));
        Ok(t)
    }

    fn burst(&self, frames: u64) -> Result<Trial, Failure> {
        let passes = frames.div_ceil(self.set as u64);
        let (s, back) = self.replay(
            ReplayOpts {
                topspeed: true,
                ..Self::passes(passes)
            },
            Some(frames),
        )?;
        let judge = |r: &Report| Trial::of_burst(sent(r), frames);
        let t = rfc::both_ways(judge(&s), back.as_ref().map(judge));
        eoutln!("{}", rfc::burst_line(&t));
        Ok(t)
    }
}

/// What a replay sent, and what its receiver counted.
fn sent(r: &Report) -> rfc::Sent<'_> {
    rfc::Sent {
        frames: r.summary.packets,
        pps: r.summary.pps,
        streams: r.rx.as_ref().map_or(&[][..], |x| &x.streams[..]),
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
