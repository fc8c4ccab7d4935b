//! The seam between a source and the engine.
//!
//! A source is what to send and when, ideally: one time-ordered stream of
//! packets. It never sleeps, never reads the clock and knows nothing of TX
//! threads: it pushes each packet into an [`Outbox`] (which spreads flows
//! over TX threads, batches, applies the run's packet limit and duration,
//! and hands batches to the engine) and returns when its stream ends.
//! Everything else (preloading, repeating passes, prefetch, pacing) is the
//! engine's.
//!
//! A new source is one type implementing [`Source`] plus its config.

use sluice_capture::{CaptureError, LinkType};
use sluice_core::Outbox;

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
    /// thread then blocks while a TX queue is full), or memory.
    fn origin(&self) -> Origin;

    /// The run's clock and its start (due times are offsets from it), told
    /// to a [`Origin::Live`] source before its first `fill`.
    fn begin(&mut self, _clock: sluice_core::MonotonicClock, _start: sluice_core::MonoTime) {}

    /// What happened while producing, for the summary.
    fn report(&self) -> SourceReport;
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
    /// before the first packet exists, and the source is told the clock
    /// ([`Source::begin`]) to stamp arrivals on it.
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
    #[error(transparent)]
    Session(#[from] crate::flows::SessionError),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// A two-port split that cannot be made (a cache that does not fit).
    #[error("{0}")]
    Split(String),
    /// A live source's device failed (`what` names it).
    #[error("{what}: {error}")]
    Device { what: String, error: std::io::Error },
}

impl SourceError {
    /// Whose fault it is: the environment's (a live source's device or
    /// socket failed mid-run: exit 1, as for a sink) or the input's (what
    /// was read is wrong: exit 2).
    pub fn is_environment(&self) -> bool {
        matches!(self, SourceError::Device { .. })
    }
}
