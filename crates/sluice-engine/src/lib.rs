//! The engine runs one pipeline per TX thread:
//!
//! ```text
//!  IO thread: source.fill ──batches──► TX thread i: pacer ─► sink i
//!             ◄──────── empty batches for reuse ─────────┘
//! ```
//!
//! Design: the IO thread reads ahead of real time into reusable batches over
//! bounded channels (prefetch never stalls the sender; memory is bounded by
//! the number of batches in flight). TX threads start together at a common
//! start time after a barrier, pace every frame with the pure pacer and a
//! sleep+spin waiter, and publish counters once per batch. The caller's
//! thread aggregates statistics once per interval. Synchronous: no async
//! runtime on the data path.

mod config;
mod io;
mod run;
pub mod series;
mod stats;
mod tx;

pub use config::{ClockChoice, EngineConfig};
pub use run::{run_source, EngineError};
pub use series::{run_series, SeriesConfig, SeriesPayload};
pub use stats::{FlowStats, IntervalStats, Observer, Summary};
