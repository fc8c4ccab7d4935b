//! `sluice analyze`.

use crate::args::AnalyzeArgs;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};

pub fn run(a: AnalyzeArgs) -> Result<u8, Failure> {
    if a.flows {
        return super::analyze_flows::run(&a);
    }
    if let Some(t) = &a.target {
        return super::profile::judge_against(
            &a.capture,
            t,
            a.sample.0,
            a.max_lag,
            a.json,
            a.plot.as_deref(),
        );
    }
    if a.gap.is_some() || a.gaps.is_some() {
        return gap_errors(&a);
    }
    let report = sluice_analyze::analyze(&a.capture, a.reference.as_deref()).map_err(bad_input)?;
    if a.json {
        let text = serde_json::to_string_pretty(&report).context("encoding JSON")?;
        println!("{text}");
    } else {
        print!("{}", report.render_text());
    }
    Ok(exit::OK)
}

/// `analyze CAPTURE --gap T | --gaps FILE`: |D_R − D_M| percentiles.
fn gap_errors(a: &AnalyzeArgs) -> Result<u8, Failure> {
    use sluice_analyze::pacing::{gap_errors, parse_gaps, Requested};
    let cap = super::profile::read_packets(&a.capture)?;
    let list;
    let requested = match (&a.gap, &a.gaps) {
        (Some(g), _) => Requested::Constant(g.0),
        (None, Some(path)) => {
            let text = sluice_source::text::read_bounded(path, 1 << 30)
                .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
            list = parse_gaps(&text).map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
            Requested::List(&list)
        }
        (None, None) => unreachable!("called with --gap or --gaps"),
    };
    let Some(e) = gap_errors(&cap.times, &cap.lens, requested, a.min_size) else {
        return Err(bad_input(anyhow!(
            "{}: no gap to compare (fewer than two frames of at least {} bytes)",
            a.capture.display(),
            a.min_size
        )));
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&e).context("encoding JSON")?
        );
    } else {
        print!("{}", e.render_text());
    }
    Ok(exit::OK)
}
