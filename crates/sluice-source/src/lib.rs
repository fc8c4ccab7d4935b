//! The seam every source implements ([`seam`]: [`Source`], [`Outbox`],
//! [`RunContext`], [`SourceError`]) and trace replay ([`replay`]), with the
//! helpers sources share: job shares ([`share`]), bounded text inputs
//! ([`text`]). The other sources live in crates of their own, by tenant:
//! `sluice-flows` (FLOR flows), `sluice-profile` (stochastic profiles,
//! ON/OFF), `sluice-live` (TAP pacing, inject). Time-series play
//! ([`series`]) supplies the archive reading, indexing and device mapping
//! that the engine's time-series pipeline runs.

pub mod confine;
mod dual;
mod replay;
pub mod seam;
mod select;
pub mod series;
mod share;
mod split;
pub mod text;

pub use replay::{ReplayConfig, ReplaySource};
pub use seam::{
    Due, End, Fate, Fates, Fault, Lane, Origin, Outbox, RunContext, Source, SourceError,
    SourceReport,
};
pub use select::{Select, SelectRule};
pub use share::{flow_key, Share};
pub use split::{prep, AutoKind, Dir, Split, SplitCache, SplitMode, TcpprepCache};

use std::path::Path;

/// Whether a file is YAML by its name (`.yaml`/`.yml`, any case): sessions
/// and device mappings are read as YAML or else as JSON or CSV.
pub fn is_yaml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}
