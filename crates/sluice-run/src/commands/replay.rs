//! `sluice replay`: phase two (validated plan: open the trace and sinks),
//! then run and report.

use crate::plan::{GoFn, Prepared, SendPlan};
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::run_source;
use sluice_job::command::ReplayArgs;
use sluice_job::rate::Nominal;
use sluice_pace::TimingMode;
use sluice_sink::SinkSpec;
use sluice_source::{ReplayConfig, ReplaySource};

/// The replay's plan and source (`run::prepare`).
pub fn prepare(a: &mut ReplayArgs) -> Result<Prepared<'_>, Failure> {
    let (plan, source, timing) = plan_of(a)?;
    Ok(Prepared {
        plan,
        go: Box::new(go(source, timing)),
    })
}

/// Sends `source` with the sinks and settings of the plan.
fn go(source: ReplaySource, timing: TimingMode) -> impl GoFn {
    move |sinks, cfg, progress| {
        run_source(source, sinks, cfg, progress).map(|mut s| {
            s.timing = Some(timing.into());
            s
        })
    }
}

/// Phase two: the checked plan, the opened trace and the timing.
fn plan_of(a: &ReplayArgs) -> Result<(SendPlan, ReplaySource, TimingMode), Failure> {
    a.opts.check().map_err(|e| bad_input(anyhow!(e)))?;
    let timing = timing_mode(a)?;
    let mut plan = SendPlan::new(&a.run, timing == TimingMode::TopSpeed)?.rate(match timing {
        TimingMode::Pps(p) => Nominal::Pps(p),
        TimingMode::Mbps(m) => Nominal::Mbps(m),
        TimingMode::Recorded { multiplier } => Nominal::Multiplier(multiplier),
        TimingMode::TopSpeed => Nominal::None("a top-speed run"),
    })?;
    for t in &a.traces {
        plan = plan.reads(t);
    }
    read_once_inputs(a)?;
    if let Some(to2) = &a.to2 {
        if a.split.is_none() && !a.dualfile {
            return Err(bad_input(anyhow!(
                "--to2 {to2}: give --split (which side each packet is on) or --dualfile (a trace per port)"
            )));
        }
        plan = plan.second_port(to2)?;
    }
    if a.dualfile && (a.traces.len() < 2 || !a.traces.len().is_multiple_of(2)) {
        return Err(bad_input(anyhow!(
            "--dualfile takes traces in pairs, the first of each for --to and the second for --to2; {} given",
            a.traces.len()
        )));
    }
    // A split cache is read too: no output may be it.
    if let Some(c) = a.split.as_ref().and_then(|m| m.file()) {
        plan = plan.reads(c);
    }
    plan.engine.passes = a.opts.loops;
    let fit = XdpFit::of(a);
    plan.engine.preload = a.opts.preload || fit.as_ref().is_some_and(|f| preloads_itself(a, f));
    plan.engine.preload_budget = a.opts.preload_max;
    if plan.engine.preload {
        plan.xdp_keep = fit.map_or(0, |f| umem_room(a, &f));
    }
    plan.engine.start_at = a.part.start_at;
    let split = a
        .split
        .clone()
        .map(|mode| a.split_opts.split(mode))
        .transpose()
        .map_err(|e| bad_input(anyhow!(e)))?;
    let loop_delay = loop_delay(a)?;
    let rewrite = a.rewrite().map_err(|e| bad_input(anyhow!(e)))?;
    let source = ReplaySource::open(ReplayConfig {
        path: a.traces[0].clone(),
        more: if a.dualfile {
            Vec::new()
        } else {
            a.traces[1..].to_vec()
        },
        dual: if a.dualfile {
            a.traces.clone()
        } else {
            Vec::new()
        },
        timing,
        payload: a.opts.payload,
        src_mac: a.opts.src_mac.unwrap_or(ReplayConfig::default().src_mac),
        dst_mac: a.opts.dst_mac.unwrap_or(ReplayConfig::default().dst_mac),
        link_macs_given: a.opts.src_mac.is_some() || a.opts.dst_mac.is_some(),
        rewrite,
        split,
        select: a.select.select(),
        loop_delay,
        skip_unsupported: a.opts.skip_unsupported,
        max_gap: a.opts.max_gap,
        share: a.part.share,
    })
    .map_err(bad_input)?;
    Ok((plan, source, timing))
}

/// The trace files' bytes on disk, or None when one is not a plain,
/// uncompressed file (its size in memory is not known beforehand).
fn trace_bytes(a: &ReplayArgs) -> Option<u64> {
    a.traces.iter().try_fold(0u64, |sum, t| {
        let m = std::fs::metadata(t).ok().filter(|m| m.is_file())?;
        let mut magic = [0u8; 4];
        use std::io::Read;
        std::fs::File::open(t).ok()?.read_exact(&mut magic).ok()?;
        let compressed = magic[..2] == [0x1f, 0x8b] // gzip
            || magic == [0x28, 0xb5, 0x2f, 0xfd] // zstd
            || magic == [0xfd, 0x37, 0x7a, 0x58]; // xz
        (!compressed).then(|| sum + m.len())
    })
}

/// What a replay to an xdp sink (or a bare interface, where xdp is tried
/// first) weighs before preloading its trace and keeping its frames in
/// the UMEM; None for other sinks.
struct XdpFit {
    /// The preload's memory budget.
    budget: u64,
    /// The traces' bytes, None when one is compressed or not a file.
    trace: Option<u64>,
}

impl XdpFit {
    fn of(a: &ReplayArgs) -> Option<Self> {
        matches!(a.run.to, SinkSpec::Xdp(_) | SinkSpec::Iface(_)).then(|| Self {
            budget: a
                .opts
                .preload_max
                .unwrap_or_else(sluice_sys::mem::default_budget),
            trace: trace_bytes(a),
        })
    }
}

/// A replay to xdp preloads without being asked when the trace fits its
/// budget twice over (the preload, and the UMEM's copy): its frames are
/// then placed in the UMEM once and sent with no copy. Options that
/// rewrite each pass or count every packet stream, as with `--preload`.
fn preloads_itself(a: &ReplayArgs, fit: &XdpFit) -> bool {
    !a.opts.unique_ip
        && a.run.send.bursts.is_none()
        && fit.trace.is_some_and(|b| b.saturating_mul(2) <= fit.budget)
}

/// Room each xdp sink keeps for a preloaded trace's frames: twice the
/// trace's bytes (a frame never crosses a UMEM chunk, so up to half of a
/// chunk can go unused), a TX thread's share of it (half as much again:
/// flows do not split evenly), within a thread's share of the budget.
/// Frames beyond it are copied per send, and the summary counts them.
///
/// None at all when that room is larger than the last-level cache: the
/// kernel reads placed frames through its own 4 KiB mapping of the UMEM,
/// and frames that left the cache since the last pass cost it more than
/// the copy into a scratch frame (still in cache) saves; docs/BENCHMARKS.md
/// has the measurements.
///
/// None either for a trace whose size is not known beforehand (a
/// compressed one): its frames are copied.
fn umem_room(a: &ReplayArgs, fit: &XdpFit) -> u64 {
    let Some(trace) = fit.trace.map(|b| b.saturating_mul(2)) else {
        return 0;
    };
    let threads = a.run.send.threads.max(1) as u64;
    let share = if threads == 1 {
        trace
    } else {
        trace / threads * 3 / 2
    };
    let cache = sluice_sys::cpus::last_level_cache().unwrap_or(32 << 20);
    if share > cache {
        return 0;
    }
    share.min(fit.budget / threads)
}

fn timing_mode(a: &ReplayArgs) -> Result<TimingMode, Failure> {
    Ok(if a.opts.topspeed {
        TimingMode::TopSpeed
    } else if let Some(pps) = a.opts.pps {
        TimingMode::Pps(pps)
    } else if let Some(mbps) = a.opts.mbps {
        TimingMode::Mbps(mbps)
    } else {
        let m = a.opts.multiplier.unwrap_or(1.0);
        // Gaps scaled by 1/m: beyond 1e9 either way a gap of a second
        // becomes 30 years, or every gap rounds to 0 ns.
        if !(m.is_finite() && (1e-9..=1e9).contains(&m)) {
            return Err(bad_input(anyhow!(
                "--multiplier must be between 1e-9 and 1e9, got {m}"
            )));
        }
        TimingMode::Recorded { multiplier: m }
    })
}

/// `--loopdelay`, `--loopdelay-ms` or `--loopdelay-ns` (one at most, by
/// clap), which only means something between passes.
fn loop_delay(a: &ReplayArgs) -> Result<Option<sluice_core::Nanos>, Failure> {
    let ns = |v: u64, per: u64| {
        v.checked_mul(per)
            .map(sluice_core::Nanos)
            .ok_or_else(|| bad_input(anyhow!("--loopdelay-ms {v}: too long")))
    };
    let d = match (a.opts.loopdelay, a.opts.loopdelay_ms, a.opts.loopdelay_ns) {
        (Some(d), _, _) => Some(d),
        (_, Some(ms), _) => Some(ns(ms, 1_000_000)?),
        (_, _, Some(n)) => Some(sluice_core::Nanos(n)),
        _ => None,
    };
    if d.is_some() && a.opts.loops == 1 {
        return Err(bad_input(anyhow!(
            "--loopdelay pauses between passes: give --loop N (N > 1, or 0 for ever)"
        )));
    }
    Ok(d)
}

/// A trace that can be read only once (a FIFO, a pipe, a device) is
/// refused where replay would read it again: every pass of `--loop`, a
/// split computed from the trace before it is sent, the same trace named
/// twice.
fn read_once_inputs(a: &ReplayArgs) -> Result<(), Failure> {
    for (i, t) in a.traces.iter().enumerate() {
        if !sluice_capture::read_once(t) {
            continue;
        }
        let again = if a.opts.loops != 1 {
            Some("--loop reads it once per pass")
        } else if a.split.as_ref().is_some_and(|m| m.file().is_none()) {
            Some("--split reads it once to compute the split, then again to send")
        } else if a.traces[..i].iter().any(|u| u == t) {
            Some("it is named twice")
        } else {
            None
        };
        if let Some(why) = again {
            return Err(bad_input(anyhow!(
                "{}: a FIFO, pipe or device can be read once, and {why}: give a file",
                t.display()
            )));
        }
    }
    Ok(())
}
