//! `sluice analyze`.

use crate::args::AnalyzeArgs;
use crate::{bad_input, exit, Failure};
use anyhow::Context;

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
    let report = sluice_analyze::analyze(&a.capture, a.reference.as_deref()).map_err(bad_input)?;
    if a.json {
        let text = serde_json::to_string_pretty(&report).context("encoding JSON")?;
        println!("{text}");
    } else {
        print!("{}", report.render_text());
    }
    Ok(exit::OK)
}
