//! Shared vocabulary of every sluice crate: integer-nanosecond time, clocks,
//! rates, human-friendly duration/rate parsing, the send-time-error
//! statistics, and the seam between sources and the engine (batches and
//! the [`Outbox`] they are filled through).
//!
//! Design: time on the data path is a plain `u64` of nanoseconds wrapped in
//! newtypes ([`Nanos`] for spans, [`MonoTime`] for points on the monotonic
//! clock). No floating point, no `std::time::Instant` (opaque, cannot be
//! virtualised), so the pacer can be driven by a [`VirtualClock`] in tests.

pub mod agree;
pub mod batch;
pub mod clock;
pub mod fates;
pub mod mix;
mod names;
pub mod outbox;
pub mod parse;
pub mod spread;
pub mod stats;
pub mod tally;
pub mod time;

pub use batch::{Batch, FrameRef, Work};
pub use clock::{Clock, MonotonicClock, VirtualClock};
pub use fates::{Fate, Fates};
pub use outbox::{Burst, Due, Handoff, Lane, Outbox, OutboxRules};
pub use parse::{parse_count, parse_duration, parse_rate, ParseError};
pub use spread::Spreader;
pub use stats::{Dist, ErrorHistogram, Quantiles};
pub use tally::ErrorTally;
pub use time::{MonoTime, Nanos};
