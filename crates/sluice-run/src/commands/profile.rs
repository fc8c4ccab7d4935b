//! `sluice profile run`: a profile's plan and source, exact or Fourier.

use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::run_source;
use sluice_job::command::ProfileRunArgs;
use sluice_job::profile::{Mode, SelectOpts, ShareBy};
use sluice_profile::{FourierPlan, Profile, ProfileSource, Selection, Sequence, Synth};
use std::path::{Path, PathBuf};

/// The profile's plan and source (`run::prepare`).
pub fn prepare(a: &mut ProfileRunArgs) -> Result<crate::plan::Prepared<'_>, Failure> {
    let a = &*a;
    a.opts.check().map_err(|e| bad_input(anyhow!(e)))?;
    if a.confine_inputs {
        sluice_profile::confine_inputs();
    }
    // A profile's rates are its own: a ramp scales them.
    let mut plan =
        SendPlan::new(&a.run, false)?.rate(sluice_job::rate::Nominal::Multiplier(1.0))?;
    plan.engine.start_at = a.part.start_at;
    plan = plan.also_to(&a.also_to)?;
    if let (Some(s), ShareBy::Components) = (a.part.share, a.share_by) {
        if a.opts.mode != Mode::Fourier || !a.opts.queues.is_multiple_of(s.count as usize) {
            return Err(bad_input(anyhow!(
                "--share-by components deals out Fourier queues: give --mode fourier and --queues a multiple of {}",
                s.count
            )));
        }
    }
    let profile = load(&a.profile, a.opts.frame.scale, a.opts.frame.seed)?;
    say_duration_is_the_profiles(a, &profile);
    let reads = profile.inputs.clone();
    let (packet, seed) = (profile.packet.clone(), profile.seed);
    let sequence = match a.opts.mode {
        Mode::Exact => {
            if a.opts.select.keep.is_some()
                || a.opts.select.cutoff.is_some()
                || a.opts.select.window.is_some()
                || a.opts.queues != 1
            {
                return Err(bad_input(anyhow!(
                    "--keep, --cutoff, --window and --queues select Fourier components: give --mode fourier"
                )));
            }
            Sequence::Exact(Synth::new(profile))
        }
        // A worker's queues: the controller decomposed the profile once.
        Mode::Fourier if a.fourier.is_some() => {
            let c = a.fourier.clone().expect("matched");
            if c.queue_count as usize != a.opts.queues {
                return Err(bad_input(anyhow!(
                    "the task's components are dealt over {} queues, the job asks for {}",
                    c.queue_count,
                    a.opts.queues
                )));
            }
            let f = FourierPlan::from_components(profile, c)
                .map_err(|e| bad_input(anyhow!("{}: {e}", a.profile.display())))?;
            let d = &f.decomposition;
            eoutln!(
                "sluice: fourier: queues {} of {} shipped by the controller: {} components on {} bins of {}, {} packets planned",
                d.per_queue.len(),
                f.queue_count(),
                d.per_queue.iter().sum::<usize>(),
                d.bins,
                sluice_core::Nanos(d.sample_ns),
                d.planned_packets,
            );
            Sequence::Fourier(f)
        }
        Mode::Fourier => fourier(a, profile)?,
    };
    // A pcap output is stamped from the run's start: the --start-at
    // instant (CLOCK_REALTIME) when given, else now (the run starts a
    // moment after, once planned).
    let first_ts = a
        .part
        .start_at
        .unwrap_or_else(sluice_sys::clock::realtime_ns);
    let source = ProfileSource::new(
        sequence,
        &packet,
        a.opts.frame.src_mac,
        a.opts.frame.dst_mac,
        first_ts,
        seed,
    )
    .map_err(bad_input)?
    // Shipped components are this worker's queues already: no share.
    .with_share(
        a.part.share.filter(|_| a.fourier.is_none()),
        a.share_by == ShareBy::Components,
    )
    .with_ports(1 + a.also_to.len());
    for path in read_paths(&a.profile, &reads) {
        plan = plan.reads(path);
    }
    Ok(crate::plan::Prepared {
        plan,
        go: Box::new(|sinks, cfg, progress| run_source(source, sinks, cfg, progress)),
    })
}

/// The Fourier run this host plans itself: the profile decomposed,
/// its components selected and dealt over `--queues`, said on stderr.
fn fourier(a: &ProfileRunArgs, profile: Profile) -> Result<Sequence, Failure> {
    // `--queues` was bounded by `ProfileOpts::check`.
    let sel = selection(&a.opts.select)?;
    profile.check_analyzable().map_err(bad_input)?;
    fits_in_memory(&profile, a.opts.select.sample.0, a.opts.queues, &a.profile)?;
    // `--window` was checked by `ProfileOpts::check`.
    let window = a
        .opts
        .select
        .window_bins()
        .map_err(|e| bad_input(anyhow!("--{e}")))?;
    let f = FourierPlan::new(profile, a.opts.select.sample.0, sel, a.opts.queues, window)
        .map_err(|e| bad_input(anyhow!("{}: {e}", a.profile.display())))?;
    if sluice_profile::stop_asked() {
        return Err(Failure {
            code: crate::exit::INTERRUPTED,
            error: anyhow!("interrupted while planning the Fourier run; nothing sent"),
        });
    }
    let d = &f.decomposition;
    eoutln!(
        "sluice: fourier: {} bins of {}{}, {} of {} components kept, {} queues ({} components each at most), {} packets planned for {} in the target{}",
        d.bins,
        sluice_core::Nanos(d.sample_ns),
        if d.windows > 1 {
            format!(" in {} windows", d.windows)
        } else {
            String::new()
        },
        d.kept,
        d.available,
        d.per_queue.len(),
        d.per_queue.iter().max().unwrap_or(&0),
        d.planned_packets,
        d.target_packets.unwrap_or_default(),
        if d.shortfall > 0.0 {
            format!(
                "; the reconstruction goes below 0 in places: {:.0} packets not sent there",
                d.shortfall
            )
        } else {
            String::new()
        }
    );
    Ok(Sequence::Fourier(f))
}

pub fn load(path: &Path, scale: f64, seed: Option<u64>) -> Result<Profile, Failure> {
    let mut p = Profile::load(path, scale).map_err(bad_input)?;
    if let Some(s) = seed {
        p.seed = s;
    }
    Ok(p)
}

pub fn selection(s: &SelectOpts) -> Result<Selection, Failure> {
    s.selection().map_err(|e| bad_input(anyhow!(e)))
}

/// Every file a profile command reads: the profile and its `from:`
/// captures (for the output alias check).
pub fn read_paths<'a>(profile: &'a Path, captures: &'a [PathBuf]) -> Vec<&'a Path> {
    std::iter::once(profile)
        .chain(captures.iter().map(PathBuf::as_path))
        .collect()
}

/// [`sluice_job::profile::fits_in_memory`], naming the file.
pub fn fits_in_memory(
    p: &Profile,
    sample_ns: u64,
    queues: usize,
    file: &std::path::Path,
) -> Result<(), Failure> {
    sluice_job::profile::fits_in_memory(p, sample_ns, queues)
        .map_err(|e| bad_input(anyhow!("{}: {e}", file.display())))
}

/// The profile's own `duration:` ends what it plans; a longer
/// `--duration` (a distributed job's deadline, or a user's) cannot
/// lengthen it: said rather than ending early without a word.
fn say_duration_is_the_profiles(a: &ProfileRunArgs, profile: &Profile) {
    if let (Some(d), sluice_profile::Stop::Duration(own)) = (a.run.send.duration, &profile.stop) {
        if d.0 > own.0 && !a.run.quiet && a.part.share.is_none() {
            eoutln!(
                "sluice: {}: the profile plans {} (its duration:); the run ends then, \
                 before --duration {}",
                a.profile.display(),
                sluice_core::Nanos(own.0),
                sluice_core::Nanos(d.0)
            );
        }
    }
}
