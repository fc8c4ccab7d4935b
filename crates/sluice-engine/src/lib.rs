//! The engine: one orchestrator and one TX loop for every source.
//!
//! ```text
//!  IO thread: source.fill ─► Outbox ──batches──► TX thread i: TxLoop (pace → build → sink i)
//!             ◄──────── empty batches for reuse ────────┘
//!  time-series play: IO thread ─► workers ─► MPMC queues ─► the same TxLoop, another feed
//! ```
//!
//! Design: the IO thread runs ahead of real time into reusable batches
//! over bounded channels (prefetch never stalls the sender; memory is
//! bounded by the batches in flight). TX threads start together at a
//! common start time after a barrier (`run.rs`: `Run`), pace every packet
//! with the pure pacer and a sleep+spin waiter, and publish counters once
//! per unit (`tx/`: `TxCore`, `TxLoop`). The caller's thread aggregates
//! statistics once per interval. Synchronous: no async runtime on the data
//! path. docs/ARCHITECTURE.md draws the threads.

mod batch;
mod config;
pub mod epslog;
#[cfg(test)]
mod harness;
mod io;
pub mod live;
mod passes;
mod run;
pub mod series;
mod stats;
mod tsc;
mod tx;

pub use batch::{run_source, run_sources};
pub use config::{ClockChoice, EngineConfig, Loss, RxStampMode};
pub use live::{Applied, LiveRate};
pub use run::EngineError;
pub use series::{run_series, SeriesConfig, SeriesPayload};
pub use stats::{
    duration, FlowStats, FrameCopies, IntervalStats, Observer, PassStats, Placement, RunTiming,
    SeriesSummary, Summary,
};
pub use tsc::{ClockReport, TscClock};

/// Runs side by side, four spinning TX threads would share two CPUs and
/// nobody would be on time: one spinning test at a time.
#[cfg(test)]
pub(crate) static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
