//! Sources: what to send and when, ideally. Each source is one module
//! implementing the [`Source`] seam (see [`seam`]): trace replay
//! ([`replay`]), flows and meta-flows ([`flows`]), stochastic profiles
//! ([`profile`]), live frames paced from a TAP device ([`pace`]). Time-series play
//! ([`series`]) supplies the archive reading, indexing and device mapping
//! that the engine's time-series pipeline runs.

pub mod flows;
pub mod inject;
pub mod pace;
pub mod profile;
pub mod replay;
pub mod seam;
pub mod series;
pub mod share;
pub mod split;
pub mod text;

pub use replay::{ReplayConfig, ReplaySource};
pub use seam::{
    Due, End, Fate, Fates, Fault, Lane, Origin, Outbox, RunContext, Source, SourceError,
    SourceReport,
};
pub use share::Share;

use std::path::Path;

/// Whether a file is YAML by its name (`.yaml`/`.yml`, any case): sessions
/// and device mappings are read as YAML or else as JSON or CSV.
pub(crate) fn is_yaml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}
