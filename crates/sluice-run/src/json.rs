//! Every JSON document sluice writes starts with `"schema": "sluice.<kind>/1"`
//! naming its JSON Schema in `docs/schema/<kind>.json`. The version goes up
//! when a key changes meaning or goes away (adding a key does not bump it).

use anyhow::Context;
use serde::Serialize;

/// The kinds of document, each with a schema file of the same name.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `--summary-json` of every run.
    Summary,
    /// One line of `--stats-json`.
    Interval,
    /// A `--stats-json` line at the end of each pass (`--loop`).
    Pass,
    /// `sluice rx`: a `--stats-json` line or its `--summary-json`.
    Rx,
    /// `sluice rfc2544 --json`.
    Rfc2544,
    /// `analyze --json`.
    Analysis,
    /// `analyze --gap|--gaps --json`.
    GapErrors,
    /// `analyze --flows --json`.
    Flows,
    /// `analyze --target --json`.
    Judgement,
    /// `profile spectrum --json`.
    Spectrum,
    /// `doctor --json`.
    Doctor,
    /// One worker's statistics line of `control run --stats-json`.
    ControlInterval,
    /// A worker's clock offset measured during the run (`control run
    /// --stats-json`).
    ControlClock,
    /// `control run --summary-json`.
    ControlSummary,
    /// The line a failed command prints on stdout for its worker
    /// (`SLUICE_FAILURE_JSON`).
    Failure,
    /// `sluice converse --summary-json`.
    Converse,
    /// One line of `sluice converse --stats-json`.
    ConverseInterval,
}

impl Kind {
    pub fn tag(self) -> &'static str {
        match self {
            Kind::Summary => "sluice.summary/2",
            Kind::Interval => "sluice.interval/1",
            Kind::Pass => "sluice.pass/1",
            Kind::Rx => "sluice.rx/1",
            Kind::Rfc2544 => "sluice.rfc2544/1",
            Kind::Analysis => "sluice.analysis/1",
            Kind::GapErrors => "sluice.gap-errors/1",
            Kind::Flows => "sluice.flows/1",
            Kind::Judgement => "sluice.judgement/1",
            Kind::Spectrum => "sluice.spectrum/1",
            Kind::Doctor => "sluice.doctor/1",
            Kind::ControlInterval => "sluice.control-interval/1",
            Kind::ControlClock => "sluice.control-clock/1",
            Kind::ControlSummary => "sluice.control-summary/1",
            Kind::Failure => crate::job_failure::FAILURE_SCHEMA,
            Kind::Converse => "sluice.converse/1",
            Kind::ConverseInterval => "sluice.converse-interval/1",
        }
    }
}

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    schema: &'static str,
    /// What ran: on a run's summary and on each of its statistics lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunInfo>,
    #[serde(flatten)]
    body: &'a T,
}

impl<'a, T: Serialize> Tagged<'a, T> {
    fn new(kind: Kind, body: &'a T) -> Self {
        let run = matches!(
            kind,
            Kind::Summary
                | Kind::Interval
                | Kind::Pass
                | Kind::Rx
                | Kind::Rfc2544
                | Kind::Converse
                | Kind::ConverseInterval
        )
        .then(run_info);
        Tagged {
            schema: kind.tag(),
            run,
            body,
        }
    }
}

/// The run a summary or statistics line comes from: when it started (wall
/// clock), which sluice (version and commit), the command line and the
/// input files, so that a result read months later says what made it.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// RFC 3339, UTC, nanoseconds.
    pub started: String,
    /// The same instant, nanoseconds since the UNIX epoch.
    pub started_ns: u64,
    pub version: &'static str,
    pub commit: &'static str,
    /// The arguments after the program name.
    pub command: Vec<String>,
    /// The input files the command read.
    pub inputs: Vec<String>,
}

static RUN: std::sync::Mutex<Option<RunInfo>> = std::sync::Mutex::new(None);

/// Notes the start of the process (wall clock) and its arguments.
pub fn begin_run() {
    *RUN.lock().unwrap_or_else(|e| e.into_inner()) = Some(started_now());
}

/// The input files of the run, as its summary names them.
pub fn set_inputs(inputs: &[&std::path::Path]) {
    if let Some(r) = RUN.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        r.inputs = inputs.iter().map(|p| p.display().to_string()).collect();
    }
}

/// The run begun by [`begin_run`] (begun now when nobody did: unit tests).
fn run_info() -> RunInfo {
    RUN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(started_now)
        .clone()
}

fn started_now() -> RunInfo {
    let started_ns = sluice_sys::clock::realtime_ns();
    RunInfo {
        started: rfc3339(started_ns),
        started_ns,
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("SLUICE_COMMIT"),
        command: std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        inputs: Vec::new(),
    }
}

/// `ns` since the epoch as `YYYY-MM-DDThh:mm:ss.nnnnnnnnnZ` (civil from
/// days: H. Hinnant's algorithm, proleptic Gregorian).
pub fn rfc3339(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:09}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ns % 1_000_000_000
    )
}

/// One indented document.
pub fn pretty<T: Serialize>(kind: Kind, body: &T) -> anyhow::Result<String> {
    serde_json::to_string_pretty(&Tagged::new(kind, body)).context("encoding JSON")
}

/// One line (JSON Lines).
pub fn line<T: Serialize>(kind: Kind, body: &T) -> anyhow::Result<String> {
    serde_json::to_string(&Tagged::new(kind, body)).context("encoding JSON")
}

/// The document as a value, as `--fail-if` reads it.
pub fn value<T: Serialize>(kind: Kind, body: &T) -> anyhow::Result<serde_json::Value> {
    serde_json::to_value(Tagged::new(kind, body)).context("encoding JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Body {
        a: u32,
        b: Option<u32>,
    }

    #[test]
    fn the_schema_comes_first_and_nulls_stay() {
        let t = line(Kind::Analysis, &Body { a: 1, b: None }).unwrap();
        assert_eq!(t, r#"{"schema":"sluice.analysis/1","a":1,"b":null}"#);
        let t = line(Kind::Summary, &Body { a: 1, b: None }).unwrap();
        assert!(
            t.starts_with(r#"{"schema":"sluice.summary/2","run":{"started":""#),
            "{t}"
        );
        assert!(t.ends_with(r#""a":1,"b":null}"#), "{t}");
    }

    #[test]
    fn start_times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            rfc3339(951_782_400_000_000_123),
            "2000-02-29T00:00:00.000000123Z"
        );
        assert_eq!(
            rfc3339(1_795_650_000_999_999_999),
            "2026-11-25T23:40:00.999999999Z"
        );
    }
}
