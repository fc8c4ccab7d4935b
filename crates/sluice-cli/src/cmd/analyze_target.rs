//! `analyze CAPTURE --target T`: how closely a capture follows a target
//! (a profile, a reference capture, or per-bin counts), by the stochastic
//! profiles paper's accuracy measures (ratejudge.py's definitions).

use crate::{bad_input, Failure};
use anyhow::{anyhow, Context};
use sluice_analyze::judge::{judge, Packets, Target};
use sluice_profile::{Profile, Synth};
use std::path::Path;

/// Per-bin counts, one per line (`bin,count` or `count`, a header allowed),
/// as ratejudge.py reads them.
fn read_counts(path: &Path) -> Result<Vec<f64>, Failure> {
    let text = sluice_source::text::read_bounded(path, 256 << 20)
        .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let last = line.trim().rsplit(',').next().unwrap_or("");
        if last.is_empty() {
            continue;
        }
        match last.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => out.push(v),
            _ if out.is_empty() => {} // a header
            _ => {
                return Err(bad_input(anyhow!(
                    "{}: line {}: '{last}' is not a count",
                    path.display(),
                    i + 1
                )))
            }
        }
    }
    Ok(out)
}

/// `analyze CAPTURE --target T`: the paper's accuracy measures.
pub fn judge_against(
    capture: &Path,
    target: &Path,
    sample_ns: u64,
    max_lag: i64,
    json: bool,
    plot: Option<&Path>,
) -> Result<u8, Failure> {
    if let Some(p) = plot {
        let spec = p.to_string_lossy();
        crate::dest::check(&[capture, target], &[&spec])?;
    }
    if !(0..=100_000).contains(&max_lag) {
        return Err(bad_input(anyhow!("--max-lag must be between 0 and 100000")));
    }
    let target_is_csv = target
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let t = if Profile::is_profile_path(target) {
        let p = Profile::load(target, 1.0).map_err(bad_input)?;
        p.check_analyzable().map_err(bad_input)?;
        let mut pk = Packets::default();
        for q in Synth::new(p) {
            pk.times.push(q.due);
            pk.lens.push(u32::from(q.size));
        }
        Target::Packets(pk)
    } else if target_is_csv {
        Target::Counts(read_counts(target)?)
    } else {
        Target::Packets(Packets::read(target).map_err(bad_input)?)
    };
    let cap = Packets::read(capture).map_err(bad_input)?;
    let j = judge(&t, &cap, sample_ns, max_lag).map_err(|e| bad_input(anyhow!("{e}")))?;
    if let Some(p) = plot {
        let title = format!(
            "{} against {}: hist Pearson {}, series Pearson {}",
            capture.display(),
            target.display(),
            j.hist_pearson,
            j.pearson
        );
        crate::plot::rate_plot(&j, p, &title)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if json {
        outln!("{}", crate::json::pretty(crate::json::Kind::Judgement, &j)?)?;
    } else {
        outln!("{}", j.oneline())?;
    }
    Ok(crate::exit::OK)
}
