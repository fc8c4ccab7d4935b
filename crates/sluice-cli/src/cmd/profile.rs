//! `sluice profile`: synthesize a profile's trace, show its spectrum,
//! generate it (exact or Fourier).

use crate::args::{FitArgs, ProfileArgs, ProfileCommand, RunOpts, SpectrumArgs, SynthArgs};
use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::{anyhow, Context};
use serde::Serialize;
use sluice_analyze::judge::Packets;
use sluice_engine::{run_source, ClockChoice};
use sluice_job::SendOpts;
use sluice_profile::{
    Component, Profile, ProfileSource, RateSeries, Selection, Sequence, Spectrum, Synth,
};
use sluice_run::commands::profile::{fits_in_memory, load, read_paths, selection};
use sluice_sink::SinkSpec;
use std::path::Path;

pub fn run(a: ProfileArgs) -> Result<u8, Failure> {
    // Every synthesized sequence (a spectrum, a Fourier plan, a synth)
    // ends when SIGINT or SIGTERM asks.
    let stop = crate::signals::install().context("installing signal handlers")?;
    sluice_profile::stop_on(stop);
    match a.command {
        ProfileCommand::Synth(s) => synth(s),
        ProfileCommand::Spectrum(s) => show_spectrum(s),
        ProfileCommand::Run(r) => sluice_run::command(sluice_run::Job::Profile(*r)),
        ProfileCommand::Fit(f) => fit(f),
        // `main` runs it as a job (`run::Job::OnOff`), the same way.
        ProfileCommand::Onoff(o) => sluice_run::command(sluice_run::Job::OnOff(*o)),
    }
}

/// How a selection reads in the spectrum's output.
fn selection_text(sel: Selection) -> String {
    match sel {
        Selection::All => "all".to_string(),
        Selection::Keep(k) => format!("keep {k}"),
        Selection::Cutoff(hz) => format!("cutoff {hz} Hz"),
    }
}

/// The synthesized trace, through the engine on a virtual clock into a
/// pcap: the frames `profile run --mode exact` sends, stamped from 0.
fn synth(a: SynthArgs) -> Result<u8, Failure> {
    let profile = load(&a.profile, a.frame.scale, a.frame.seed)?;
    let reads = profile.inputs.clone();
    // What the trace will take (16-byte record headers), against what
    // the disk has: a profile's rate times its duration can be anything.
    let packets = profile
        .expected_packets()
        .min(a.limit.map_or(f64::MAX, |n| n as f64));
    let bytes = 24.0 + packets * (16.0 + profile.size.mean);
    let dir = sluice_sys::output::parent_dir(&a.output);
    if let Some(free) = sluice_sys::mem::free_space(dir) {
        if bytes > free as f64 && a.limit.is_none() {
            return Err(bad_input(anyhow!(
                "{}: the trace would take about {:.3e} bytes ({:.3e} packets) and {} has {} free; \
                 give --limit N packets (or a shorter duration) to write part of it",
                a.profile.display(),
                bytes,
                packets,
                dir.display(),
                free
            )));
        }
    }
    let (packet, seed) = (profile.packet.clone(), profile.seed);
    let source = ProfileSource::new(
        Sequence::Exact(Synth::new(profile)),
        &packet,
        a.frame.src_mac,
        a.frame.dst_mac,
        0,
        seed,
    )
    .map_err(bad_input)?;
    let mut opts = RunOpts::new(
        SinkSpec::Pcap(a.output.clone()),
        SendOpts {
            limit: a.limit,
            no_pin: true,
            launch_time: sluice_sink::LaunchTime::Off,
            clock: ClockChoice::Virtual,
            ..SendOpts::default()
        },
    );
    opts.quiet = true;
    let mut plan = SendPlan::new(&opts, false)?;
    for path in read_paths(&a.profile, &reads) {
        plan = plan.reads(path);
    }
    plan.run(|sinks, cfg, progress| run_source(source, sinks, cfg, progress))
}

#[derive(Serialize)]
struct SpectrumOut<'a> {
    input: String,
    sample_ns: u64,
    bins: usize,
    packets: u64,
    /// Mean packets per bin.
    dc: f64,
    available: usize,
    kept: usize,
    selection: &'a str,
    reconstruction: ErrorsOut,
    components: Vec<Component>,
    /// `--window`: the short-time transform's windows (the components
    /// are each window's; `components` is then empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    window_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    windows: Option<Vec<WindowOut>>,
}

#[derive(Serialize)]
struct ErrorsOut {
    mse: f64,
    nmse: f64,
    pearson: f64,
}

/// The rate series of a capture: packets per bin from its first packet.
fn capture_series(path: &Path, sample_ns: u64) -> Result<RateSeries, Failure> {
    let times = Packets::read(path).map_err(bad_input)?.times;
    let Some(&t0) = times.first() else {
        return Err(bad_input(anyhow!(
            "{}: the capture has no packets",
            path.display()
        )));
    };
    RateSeries::from_times(times.iter().map(|t| t.saturating_sub(t0)), sample_ns, None)
        .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))
}

fn show_spectrum(a: SpectrumArgs) -> Result<u8, Failure> {
    let sample = a.select.sample.0;
    let series = if Profile::is_profile_path(&a.input) {
        let p = load(&a.input, a.scale, None)?;
        p.check_analyzable().map_err(bad_input)?;
        fits_in_memory(&p, sample, 1, &a.input)?;
        let series = RateSeries::from_times(Synth::new(p).map(|p| p.due), sample, None)
            .map_err(|e| bad_input(anyhow!("{}: {e}", a.input.display())))?;
        if sluice_profile::stop_asked() {
            eoutln!("sluice: interrupted while synthesizing the profile; nothing written");
            return Ok(crate::exit::INTERRUPTED);
        }
        series
    } else {
        capture_series(&a.input, sample)?
    };
    let sel = selection(&a.select)?;
    if let Some(w) = a
        .select
        .window_bins()
        .map_err(|e| bad_input(anyhow!("--{e}")))?
    {
        return show_windowed(&a, &series, w as usize, sel);
    }
    let s = Spectrum::of(&series).map_err(|e| bad_input(anyhow!("{}: {e}", a.input.display())))?;
    let keep = s.select(sel);
    let back = s.reconstruct(&keep, true);
    let (mse, nmse, pearson) = sluice_profile::fit_errors(&series.counts, &back);
    let mut listed: Vec<usize> = keep.clone();
    listed.sort_by(|x, y| {
        s.components[y - 1]
            .amplitude
            .total_cmp(&s.components[x - 1].amplitude)
    });
    let sel_text = selection_text(sel);
    let packets = series.counts.iter().sum::<f64>() as u64;
    if a.json {
        let out = SpectrumOut {
            input: a.input.display().to_string(),
            sample_ns: sample,
            bins: s.n,
            packets,
            dc: s.dc,
            available: s.components.len(),
            kept: keep.len(),
            selection: &sel_text,
            reconstruction: ErrorsOut { mse, nmse, pearson },
            components: listed.iter().map(|k| s.components[k - 1]).collect(),
            window_ns: None,
            windows: None,
        };
        outln!(
            "{}",
            crate::json::pretty(crate::json::Kind::Spectrum, &out)?
        )?;
        return Ok(crate::exit::OK);
    }
    let per_s = 1e9 / sample as f64;
    outln!(
        "{}: {} packets in {} bins of {} (mean {:.3} packets/bin, {:.1} pps)",
        a.input.display(),
        packets,
        s.n,
        sluice_core::Nanos(sample),
        s.dc,
        s.dc * per_s
    )?;
    outln!(
        "components: {} up to {:.1} Hz; kept {} ({sel_text}) and DC",
        s.components.len(),
        s.components.last().map_or(0.0, |c| c.freq_hz),
        keep.len()
    )?;
    outln!(
        "reconstruction vs the full series: MSE {mse:.6}  NMSE {nmse:.3e}  Pearson {pearson:.6}"
    )?;
    outln!(
        "{:>9} {:>12} {:>14} {:>9}",
        "k",
        "freq Hz",
        "amplitude",
        "phase"
    )?;
    for k in listed.iter().take(a.top) {
        let c = s.components[k - 1];
        outln!(
            "{:>9} {:>12.3} {:>14.6} {:>9.4}",
            c.k,
            c.freq_hz,
            c.amplitude,
            c.phase
        )?;
    }
    Ok(crate::exit::OK)
}

#[derive(Serialize)]
struct WindowOut {
    start_s: f64,
    bins: usize,
    dc: f64,
    available: usize,
    kept: usize,
    components: Vec<Component>,
}

/// `profile spectrum --window`: the short-time transform (§2.3): each
/// window's spectrum and selection, and the windows' reconstructions
/// together against the full series.
fn show_windowed(
    a: &SpectrumArgs,
    series: &RateSeries,
    w: usize,
    sel: Selection,
) -> Result<u8, Failure> {
    let sample = series.sample_ns;
    let n = series.counts.len();
    let mut back = Vec::with_capacity(n);
    let mut windows = Vec::new();
    for first in (0..n).step_by(w.max(1)) {
        let counts = series.counts[first..n.min(first + w)].to_vec();
        let start_s = first as f64 * sample as f64 * 1e-9;
        if counts.len() < 2 {
            // A last window of one bin: its DC alone.
            back.extend(&counts);
            windows.push(WindowOut {
                start_s,
                bins: 1,
                dc: counts[0],
                available: 0,
                kept: 0,
                components: Vec::new(),
            });
            continue;
        }
        let part = RateSeries {
            sample_ns: sample,
            counts,
        };
        let s =
            Spectrum::of(&part).map_err(|e| bad_input(anyhow!("{}: {e}", a.input.display())))?;
        let mut keep = s.select(sel);
        back.extend(s.reconstruct(&keep, true));
        keep.sort_by(|x, y| {
            s.components[y - 1]
                .amplitude
                .total_cmp(&s.components[x - 1].amplitude)
        });
        windows.push(WindowOut {
            start_s,
            bins: s.n,
            dc: s.dc,
            available: s.components.len(),
            kept: keep.len(),
            components: keep.iter().map(|k| s.components[k - 1]).collect(),
        });
    }
    let (mse, nmse, pearson) = sluice_profile::fit_errors(&series.counts, &back);
    let sel_text = selection_text(sel);
    let packets = series.counts.iter().sum::<f64>() as u64;
    let kept: usize = windows.iter().map(|w| w.kept).sum();
    let available: usize = windows.iter().map(|w| w.available).sum();
    let dc = packets as f64 / n as f64;
    if a.json {
        let out = SpectrumOut {
            input: a.input.display().to_string(),
            sample_ns: sample,
            bins: n,
            packets,
            dc,
            available,
            kept,
            selection: &sel_text,
            reconstruction: ErrorsOut { mse, nmse, pearson },
            components: Vec::new(),
            window_ns: Some(w as u64 * sample),
            windows: Some(windows),
        };
        outln!(
            "{}",
            crate::json::pretty(crate::json::Kind::Spectrum, &out)?
        )?;
        return Ok(crate::exit::OK);
    }
    outln!(
        "{}: {} packets in {} bins of {} (mean {:.3} packets/bin, {:.1} pps)",
        a.input.display(),
        packets,
        n,
        sluice_core::Nanos(sample),
        dc,
        dc * 1e9 / sample as f64
    )?;
    outln!(
        "windows: {} of {}; kept {kept} of {available} components ({sel_text} in each) and each window's DC",
        windows.len(),
        sluice_core::Nanos(w as u64 * sample),
    )?;
    outln!(
        "reconstruction vs the full series: MSE {mse:.6}  NMSE {nmse:.3e}  Pearson {pearson:.6}"
    )?;
    outln!(
        "{:>10} {:>12} {:>6} {:>12} {:>12}",
        "start s",
        "DC/bin",
        "kept",
        "top freq Hz",
        "amplitude"
    )?;
    for w in windows.iter().take(a.top) {
        let top = w.components.first();
        outln!(
            "{:>10.3} {:>12.3} {:>6} {:>12.3} {:>12.6}",
            w.start_s,
            w.dc,
            w.kept,
            top.map_or(0.0, |c| c.freq_hz),
            top.map_or(0.0, |c| c.amplitude)
        )?;
    }
    Ok(crate::exit::OK)
}

/// `profile fit`: every family fitted, ranked by KS, the best written.
fn fit(a: FitArgs) -> Result<u8, Failure> {
    use sluice_profile::{fit_gaps, fit_sizes};
    use std::io::Write;
    let out_spec = a.output.to_string_lossy().into_owned();
    crate::dest::check(&[&a.capture], &[&out_spec])?;
    let name = a.capture.display().to_string();
    let (gaps, sizes) =
        sluice_profile::read_capture(&a.capture).map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    let g = fit_gaps(&gaps).map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    let least = sizes.iter().copied().min().unwrap_or(42).min(42);
    let z = fit_sizes(&sizes, least).map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    let span_ns: f64 = gaps.iter().sum();
    eoutln!(
        "gaps of {name} ({} gaps, mean {:.1} ns), KS distance of each fitted family:",
        gaps.len(),
        span_ns / gaps.len() as f64
    );
    for f in &g {
        eoutln!("  {:<10} KS {:.4}  {}", f.family, f.ks, f.yaml());
    }
    eoutln!("sizes ({} frames):", sizes.len());
    for f in &z {
        eoutln!("  {:<10} KS {:.4}  {}", f.family, f.ks, f.yaml);
    }
    let (best_gap, best_size) = (&g[0], &z[0]);
    let duration_ns = (span_ns + best_gap.mean).round() as u64;
    let yaml = format!(
        "# Fitted to {name} by `sluice profile fit`: gaps {} (KS {:.4}), sizes {} (KS {:.4}).\n\
         seed: 1\n\
         duration: {}ns\n\
         rate: {}\n\
         ipd: {}\n\
         size: {}\n",
        best_gap.family,
        best_gap.ks,
        best_size.family,
        best_size.ks,
        duration_ns.max(1),
        1e9 / best_gap.mean,
        best_gap.yaml(),
        best_size.yaml
    );
    // What is written must load: the same checks as `profile run`.
    let dir = a.output.parent().unwrap_or(Path::new("."));
    Profile::parse(&out_spec, &yaml, true, dir, 1.0)
        .map_err(|e| anyhow!("the fitted profile does not load: {e}"))?;
    let mut out = crate::dest::Dest::open(&out_spec)?;
    out.write_all(yaml.as_bytes())
        .and_then(|()| out.commit())
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    eoutln!(
        "sluice: {name} -> {}: ipd {}, size {}",
        a.output.display(),
        best_gap.family,
        best_size.family
    );
    Ok(crate::exit::OK)
}
