//! Sources yield frames with their due offsets, in time order per TX thread.
//! A source never sleeps and never reads the clock: it runs on the IO thread
//! ahead of real time and the pacer decides when frames actually leave.

pub mod flows;
pub mod replay;
pub mod series;
mod spread;

pub use replay::{Fill, RepeatPlan, ReplayConfig, ReplayCounters, ReplaySource, SourceError};

use sluice_core::Batch;
use std::path::Path;

/// Whether a file is YAML by its name (`.yaml`/`.yml`, any case): sessions
/// and device mappings are read as YAML or else as JSON or CSV.
pub(crate) fn is_yaml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// What the engine's IO thread drives: anything that fills batches with
/// frames and their due times, in time order per TX thread.
pub trait Source: Send {
    /// Appends frames to `batches` (one per TX thread) until one of them is
    /// ready to hand over (`ready[i]` set) or the source ends.
    fn fill(&mut self, batches: &mut [Batch], ready: &mut [bool]) -> Result<Fill, SourceError>;
    /// Capture time of the first frame (ns since the epoch), once known:
    /// the pcap sink stamps frames from there.
    fn first_ts(&self) -> Option<u64>;
    /// What happened while producing, for the summary.
    fn counters(&self) -> &ReplayCounters;
    /// Whether the first pass is to be held in memory and repeated.
    fn preloading(&self) -> bool {
        false
    }
    /// Whether packets are generated in memory (no file is read while
    /// sending): such a source runs far ahead of the clock, and the IO
    /// thread naps rather than blocks while a TX queue is full.
    fn generated(&self) -> bool {
        false
    }
    /// How to repeat a preloaded first pass.
    fn repeat_plan(&self) -> Option<RepeatPlan> {
        None
    }
    /// Gives up preloading and keeps producing.
    fn stream_rest(&mut self) {}
}
