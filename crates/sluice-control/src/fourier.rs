//! The distributed-generator paper's §4.4 on the controller: a profile
//! split by components is decomposed here, once, and each worker's task
//! carries its Fourier queues (components, DC share, sampling grid and
//! the shared seed). Workers rebuild their rates from these alone.

use crate::error::{input, Result};
use crate::pb;
use sluice_job::profile::{Mode, ProfileOpts};
use sluice_job::{RemoteJob, Work};
use sluice_profile::{Components, Profile, MAX_SHIPPED};
use std::path::Path;

/// The plan's components when its split is COMPONENTS (None otherwise),
/// every worker's share within what a task may carry.
pub fn plan_components(
    file: &Path,
    split: pb::Split,
    workers: usize,
    job: &RemoteJob,
) -> Result<Option<Components>> {
    if split != pb::Split::Components {
        return Ok(None);
    }
    let Work::Profile(opts) = &job.work else {
        return Err(input!("split: components: a profile job expected"));
    };
    check_opts(opts, workers)?;
    let selection = opts.select.selection().map_err(|e| input!("{e}"))?;
    let name = file.display();
    let mut profile = Profile::load(file, opts.frame.scale).map_err(|e| input!("{e}"))?;
    if let Some(seed) = opts.frame.seed {
        profile.seed = seed;
    }
    let sample = opts.select.sample.0;
    sluice_job::profile::fits_in_memory(&profile, sample, opts.queues)
        .map_err(|e| input!("{name}: {e}"))?;
    let window = opts
        .select
        .window_bins()
        .map_err(|e| input!("--window: {e}"))?;
    let c = Components::of(&profile, sample, selection, opts.queues, window)
        .map_err(|e| input!("{name}: {e}"))?;
    for i in 0..workers as u32 {
        let carried = c.share(i, workers as u32).carried();
        if carried > MAX_SHIPPED {
            return Err(input!(
                "{name}: worker {i}'s task would carry {carried} components, at most \
                 {MAX_SHIPPED}: keep fewer (--keep, --cutoff) or sample more coarsely (--sample)"
            ));
        }
    }
    Ok(Some(c))
}

/// What `profile run --share-by components` refuses, said before any
/// worker is contacted.
fn check_opts(opts: &ProfileOpts, workers: usize) -> Result<()> {
    if opts.mode != Mode::Fourier || !opts.queues.is_multiple_of(workers) {
        return Err(input!(
            "split: components deals out Fourier queues: give --mode fourier and --queues a \
             multiple of {workers} (the workers)"
        ));
    }
    opts.check().map_err(|e| input!("{e}"))
}
