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
    /// `control run --summary-json`.
    ControlSummary,
}

impl Kind {
    pub fn tag(self) -> &'static str {
        match self {
            Kind::Summary => "sluice.summary/1",
            Kind::Interval => "sluice.interval/1",
            Kind::Analysis => "sluice.analysis/1",
            Kind::GapErrors => "sluice.gap-errors/1",
            Kind::Flows => "sluice.flows/1",
            Kind::Judgement => "sluice.judgement/1",
            Kind::Spectrum => "sluice.spectrum/1",
            Kind::Doctor => "sluice.doctor/1",
            Kind::ControlInterval => "sluice.control-interval/1",
            Kind::ControlSummary => "sluice.control-summary/1",
        }
    }
}

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    schema: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

/// One indented document.
pub fn pretty<T: Serialize>(kind: Kind, body: &T) -> anyhow::Result<String> {
    serde_json::to_string_pretty(&Tagged {
        schema: kind.tag(),
        body,
    })
    .context("encoding JSON")
}

/// One line (JSON Lines).
pub fn line<T: Serialize>(kind: Kind, body: &T) -> anyhow::Result<String> {
    serde_json::to_string(&Tagged {
        schema: kind.tag(),
        body,
    })
    .context("encoding JSON")
}

/// The document as a value, as `--fail-if` reads it.
pub fn value<T: Serialize>(kind: Kind, body: &T) -> anyhow::Result<serde_json::Value> {
    serde_json::to_value(Tagged {
        schema: kind.tag(),
        body,
    })
    .context("encoding JSON")
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
        let t = line(Kind::Summary, &Body { a: 1, b: None }).unwrap();
        assert_eq!(t, r#"{"schema":"sluice.summary/1","a":1,"b":null}"#);
    }
}
