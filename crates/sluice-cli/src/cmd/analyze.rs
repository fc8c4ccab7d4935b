//! `sluice analyze`.

use crate::args::AnalyzeArgs;
use crate::json::{self, Kind};
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_analyze::gate::Condition;
use sluice_pace::TimingMode;

pub fn run(mut a: AnalyzeArgs) -> Result<u8, Failure> {
    // A bad condition is refused before the analysis, not after it.
    let gate = match &a.fail_if {
        Some(spec) => Some(
            sluice_analyze::gate::parse(spec).map_err(|e| bad_input(anyhow!("--fail-if: {e}")))?,
        ),
        None => None,
    };
    let asked = a.timing.mode().map_err(|e| bad_input(anyhow!(e)))?;
    // Kept alive until the analysis is done (a temporary capture).
    let _tmp;
    if let Some(iface) = a.live.clone() {
        let (path, tmp) = match &a.save {
            Some(p) => (p.clone(), None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("sluice-capture-")
                    .tempdir()
                    .context("creating a temporary directory")?;
                (t.path().join("capture.pcap"), Some(t))
            }
        };
        _tmp = tmp;
        let mut inputs: Vec<&std::path::Path> = Vec::new();
        if let Some(r) = &a.reference {
            inputs.push(r);
        }
        crate::dest::check(&inputs, &[&path.to_string_lossy()])?;
        let period = a.duration.expect("clap: --capture requires --duration");
        super::live_capture::capture(&iface, period, &path)?;
        a.capture = Some(path);
    }
    if a.plot.is_some() && a.target.is_none() && a.gap.is_none() && a.gaps.is_none() {
        return Err(bad_input(anyhow!(
            "--plot draws what --target, --gap or --gaps compares: give one"
        )));
    }
    if a.flows {
        return super::analyze_flows::run(&a);
    }
    if let Some(t) = &a.target {
        return super::analyze_target::judge_against(
            a.capture_path(),
            t,
            a.sample.0,
            a.max_lag,
            a.json,
            a.plot.as_deref(),
        );
    }
    if a.gap.is_some() || a.gaps.is_some() {
        return gap_errors(&a, gate.as_deref());
    }
    let timing = match (asked, &a.run) {
        (Some(t), _) => t,
        (None, Some(run)) => run_timing(run)?,
        (None, None) => TimingMode::Recorded { multiplier: 1.0 },
    };
    let opts = sluice_analyze::Options {
        timing,
        ..Default::default()
    };
    let report = sluice_analyze::analyze_with(a.capture_path(), a.reference.as_deref(), &opts)
        .map_err(bad_input)?;
    if a.json {
        outln!("{}", json::pretty(Kind::Analysis, &report)?)?;
    } else {
        out!("{}", report.render_text())?;
    }
    judge(gate.as_deref(), Kind::Analysis, &report)
}

/// Applies `--fail-if` to what was reported: exit 4 naming every threshold
/// crossed.
fn judge(
    gate: Option<&[Condition]>,
    kind: Kind,
    report: &impl serde::Serialize,
) -> Result<u8, Failure> {
    let Some(conditions) = gate else {
        return Ok(exit::OK);
    };
    let value = json::value(kind, report)?;
    let crossed = sluice_analyze::gate::check(conditions, &value)
        .map_err(|e| bad_input(anyhow!("--fail-if: {e}")))?;
    for c in &crossed {
        eoutln!("sluice: --fail-if: {c}");
    }
    Ok(if crossed.is_empty() {
        exit::OK
    } else {
        exit::CHECK_FAILED
    })
}

/// `analyze CAPTURE --gap T | --gaps FILE`: |D_R − D_M| percentiles
/// (and with `--plot`, the two CDFs overlaid).
fn gap_errors(a: &AnalyzeArgs, gate: Option<&[Condition]>) -> Result<u8, Failure> {
    use sluice_analyze::pacing::{compare, gap_errors_of, parse_gaps, Requested};
    if let Some(p) = &a.plot {
        let mut reads = vec![a.capture_path()];
        reads.extend(a.gaps.as_deref());
        crate::dest::check(&reads, &[&p.to_string_lossy()])?;
    }
    let cap = sluice_analyze::judge::Packets::read(a.capture_path()).map_err(bad_input)?;
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
    let compared = compare(&cap.times, &cap.lens, requested, a.min_size);
    let Some(e) = gap_errors_of(&compared, cap.times.len()) else {
        return Err(bad_input(anyhow!(
            "{}: no gap to compare (fewer than two frames of at least {} bytes)",
            a.capture_path().display(),
            a.min_size
        )));
    };
    if let Some(p) = &a.plot {
        let title = format!(
            "{}: requested and measured gaps (KS {:.4}, |D_R − D_M| p95 {} ns)",
            a.capture_path().display(),
            e.ks,
            e.p95_ns
        );
        crate::plot::gap_cdf_plot(&compared, p, &title)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if a.json {
        outln!("{}", json::pretty(Kind::GapErrors, &e)?)?;
    } else {
        out!("{}", e.render_text())?;
    }
    judge(gate, Kind::GapErrors, &e)
}

/// The timing mode a replay's `--summary-json` recorded.
fn run_timing(path: &std::path::Path) -> Result<TimingMode, Failure> {
    let name = path.display();
    let text = sluice_source::text::read_bounded(path, 64 << 20)
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    #[derive(serde::Deserialize)]
    struct Run {
        schema: Option<String>,
        timing: Option<sluice_engine::RunTiming>,
    }
    let run: Run = serde_json::from_str(&text)
        .map_err(|e| bad_input(anyhow!("{name}: not a --summary-json file: {e}")))?;
    let tag = Kind::Summary.tag();
    if run.schema.as_deref() != Some(tag) {
        return Err(bad_input(anyhow!(
            "{name}: schema: \"{tag}\" expected, found {}",
            run.schema.map_or("none".into(), |s| format!("\"{s}\""))
        )));
    }
    let Some(t) = run.timing else {
        return Err(bad_input(anyhow!(
            "{name}: timing: null (only replay summaries record it)"
        )));
    };
    let mode = t.replay_mode().ok_or_else(|| {
        bad_input(anyhow!(
            "{name}: timing: a time-series play's (only replay summaries can be compared)"
        ))
    })?;
    let rate = match mode {
        TimingMode::TopSpeed => {
            return Err(bad_input(anyhow!(
                "{name}: the run was at top speed: no requested timing to compare with"
            )))
        }
        TimingMode::Recorded { multiplier } => ("multiplier", multiplier),
        TimingMode::Pps(r) | TimingMode::Mbps(r) => ("rate", r),
    };
    if !(rate.1.is_finite() && rate.1 > 0.0) {
        return Err(bad_input(anyhow!(
            "{name}: timing.{}: a positive number is needed",
            rate.0
        )));
    }
    Ok(mode)
}
