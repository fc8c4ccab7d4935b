//! Judge a capture: what a generator actually put on the wire.
//!
//! [`analyze`] reads a capture (pcap or pcapng, via `sluice-capture`) and
//! reports its packet and byte counts, rate and inter-arrival distribution
//! ([`CaptureStats`]). Given the reference trace the capture was generated
//! from, it also matches every captured frame to a reference frame and
//! reports loss, duplicates, foreign frames, reordering, the achieved rate
//! against the requested one and the distribution of the inter-departure
//! error `|D_M - D_R|` ([`Comparison`]).
//!
//! Design decisions:
//! - **Independent of the generator.** This crate depends on nothing of
//!   the engine or the sinks: it judges any generator's capture, ours or a
//!   peer's, from files alone.
//! - **Matching by content** ([`frame_key`], [`Matcher`]): frames are keyed
//!   by a 64-bit hash of their bytes, so any trace works without signatures
//!   or sequence numbers; identical frames match in order of arrival.
//! - **The project's yardstick, exactly** ([`Comparison`], [`Dist`]): the
//!   definitions and percentile ranks are those of `bench/gaperr.py`,
//!   with the reference index in place of its sequence number; an
//!   integration test checks agreement to the nanosecond.
//! - **Bounded memory**: frames are never stored; about 40 bytes per
//!   reference packet plus 8 per value of each exact distribution (capped
//!   by [`Options::max_sort`], beyond which an HDR histogram takes over).
//! - **A cut capture is still judged**: a truncated last record is reported
//!   in [`CaptureStats::truncated`], not turned into an error.

#![forbid(unsafe_code)]

mod analyze;
mod compare;
mod dist;
mod error;
pub mod flows;
pub mod gate;
pub mod judge;
mod key;
mod matching;
pub mod pacing;
pub mod reasm;
mod report;
mod stats;
pub mod streams;

pub use analyze::{analyze, analyze_with, Options};
pub use compare::Comparison;
pub use dist::{Dist, Samples};
pub use error::AnalyzeError;
pub use flows::{collect_flows, FlowKey, FlowRecord, Timeouts};
pub use key::frame_key;
pub use matching::{Match, Matcher, Reference, MAX_REFERENCE_PACKETS};
pub use report::Report;
pub use stats::{CaptureStats, StatsBuilder};
