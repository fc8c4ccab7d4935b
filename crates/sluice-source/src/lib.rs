//! Sources yield frames with their due offsets, in time order per TX thread.
//! A source never sleeps and never reads the clock: it runs on the IO thread
//! ahead of real time and the pacer decides when frames actually leave.

pub mod replay;
pub mod series;
mod spread;

pub use replay::{Fill, RepeatPlan, ReplayConfig, ReplayCounters, ReplaySource, SourceError};
