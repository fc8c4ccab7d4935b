//! The seam between a source and the engine: the whole contract in one
//! file.
//!
//! A source is what to send and when, ideally: one time-ordered stream of
//! packets. It never sleeps and knows nothing of TX threads: it pushes each
//! packet into an [`Outbox`] with one [`Due`] descriptor (due time, and
//! optionally a spacing to keep after the frame before it and an output
//! port).
//! The outbox spreads flows over TX threads by [`Lane`], batches, applies
//! the run's packet limit and duration, and hands batches to the engine;
//! `fill` returns when the stream (or a pass of it) ends. Everything else
//! (preloading, repeating passes, prefetch, pacing, threads, the summary)
//! is the engine's.
//!
//! Before the first `fill` the engine tells every source the run it is in
//! ([`Source::begin`] with a [`RunContext`]): the clock, the common start
//! when it is fixed before the source runs ([`Origin::Live`]), the number
//! of lanes, and, for a source that asks ([`Source::wants_fates`]), the
//! queue of departure [`Fate`]s its frames met, in order. What a source
//! has to say besides its packets goes back in one [`SourceReport`]; what
//! went wrong, in one [`SourceError`] whose [`Fault`] picks the exit code.
//!
//! A new source is one type implementing [`Source`] plus its config; it
//! touches no engine or core file (docs/ARCHITECTURE.md has the checklist).

use sluice_capture::{CaptureError, LinkType};
use sluice_core::{MonoTime, MonotonicClock, Nanos};
use std::sync::Arc;

pub use sluice_core::{Due, Fate, Fates, Lane, Outbox};

/// What the engine's IO thread drives.
pub trait Source: Send {
    /// Pushes packets, in due order, into `out` until this pass of the
    /// source ends, or until `out` refuses one (a limit, the duration, or
    /// the run stopping).
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError>;

    /// Starts the next pass (a trace read again, with its time continuing
    /// from the last pass). False when there is nothing to repeat (a pass
    /// without packets). Only asked after [`End::Pass`].
    fn rewind(&mut self) -> Result<bool, SourceError> {
        Ok(false)
    }

    /// Length in ns of the first pass (its last due time plus one mean
    /// gap): pass k of a preloaded source is the first pass moved by k
    /// periods. None for a source without passes.
    fn pass_period(&self) -> Option<f64> {
        None
    }

    /// Where the packets come from: a file read while sending (the IO
    /// thread then blocks while a TX queue is full), memory, or a device.
    fn origin(&self) -> Origin;

    /// True for a source that must learn what became of each frame it
    /// pushed ([`RunContext::fates`]): it then runs on one TX thread, and
    /// each frame is flushed to the sink as it is sent.
    fn wants_fates(&self) -> bool {
        false
    }

    /// The run this source is in, told once before the first `fill`.
    fn begin(&mut self, _cx: &RunContext) {}

    /// What happened while producing, for the summary: the only way a
    /// source's own counters reach it.
    fn report(&self) -> SourceReport;
}

/// What the engine tells a source before its first `fill`.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// The run's clock (CLOCK_MONOTONIC); due times are offsets from the
    /// start on it.
    pub clock: MonotonicClock,
    /// The common start, for a [`Origin::Live`] source (fixed before it
    /// runs, so it can stamp arrivals on the run's time base). None for the
    /// others: their start is fixed once the TX queues are primed.
    pub start: Option<MonoTime>,
    /// CLOCK_REALTIME at `start`, for a [`Origin::Live`] source: its pcap
    /// output is stamped from it, so a live source that reports times on
    /// the wall clock uses this same origin.
    pub realtime_start: Option<u64>,
    /// Lanes (TX threads) the outbox spreads over.
    pub lanes: usize,
    /// Departure fates of the frames pushed, in order, when the source
    /// asked for them ([`Source::wants_fates`]).
    pub fates: Option<Arc<Fates>>,
    /// The run's duration, for an [`Origin::Live`] source, which ends
    /// itself there: it stops taking frames and the engine sends what it
    /// queued. None for the others (the engine cuts their frames due
    /// after the duration) and for a run without one.
    pub duration: Option<Nanos>,
}

/// What a system clock (`read`: CLOCK_MONOTONIC, CLOCK_REALTIME) read, or
/// will read, at the run's `start` on `clock` (which may lie ahead, the
/// engine's start lead). The two clocks are read as a pair
/// ([`sluice_core::clock::paired_offset`]).
pub fn at_start(clock: &MonotonicClock, start: MonoTime, read: impl FnMut() -> u64) -> u64 {
    let offset = sluice_core::clock::paired_offset(|| sluice_core::Clock::now(clock).0, read);
    (i128::from(start.0) + offset).max(0) as u64
}

/// How a [`Source::fill`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A pass is complete; [`Source::rewind`] may start another.
    Pass,
    /// No more packets: the source is exhausted, or the outbox refused one.
    Done,
}

/// Where a source's packets come from (see [`Source::origin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Read from a file while sending.
    File,
    /// Generated in memory, far ahead of the clock.
    Memory,
    /// Arriving while the run goes (a TAP device, a socket): the run starts
    /// before the first packet exists, and the source is told the start
    /// ([`RunContext::start`]) to stamp arrivals on it.
    Live,
}

/// What a source reports besides its packets (which the engine counts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceReport {
    /// Packets skipped for an unsupported link type.
    pub skipped_unsupported: u64,
    /// Packets whose bytes changed under `--payload`.
    pub rewritten: u64,
    /// A truncated last record, reported once (earlier packets were used).
    pub truncation: Option<String>,
    /// Other things the summary should mention.
    pub notes: Vec<String>,
    /// A live source's own counters (name, value), for the summary.
    pub counters: Vec<(&'static str, u64)>,
}

/// Errors of the sources on this seam: each names the file and where in it.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("{file}: packet {packet}: link type {linktype} is not supported for replay (use --skip-unsupported to skip such packets)")]
    UnsupportedLinkType {
        file: String,
        packet: u64,
        linktype: LinkType,
    },
    #[error("{file}: packet {packet}: {reason}")]
    BadPacket {
        file: String,
        packet: u64,
        reason: String,
    },
    #[error("{file}: contains no packets")]
    Empty { file: String },
    /// A source's own input that it refused (a session, a profile): its
    /// error, which names the file and where. The seam knows no tenant's
    /// error types; each tenant converts its own into this.
    #[error(transparent)]
    Input(Box<dyn std::error::Error + Send + Sync>),
    /// A two-port split that cannot be made (a cache that does not fit).
    #[error("{0}")]
    Split(String),
    /// A live source's device failed (`what` names it).
    #[error("{what}: {error}")]
    Device { what: String, error: std::io::Error },
}

/// Whose fault a failure is: it picks the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// What was read is wrong (a trace, a session file): exit 2.
    Input,
    /// The environment failed (a live source's device or socket mid-run, a
    /// sink): exit 1.
    Environment,
}

impl SourceError {
    /// Whose fault it is (see [`Fault`]).
    pub fn fault(&self) -> Fault {
        match self {
            SourceError::Device { .. } => Fault::Environment,
            _ => Fault::Input,
        }
    }
}
