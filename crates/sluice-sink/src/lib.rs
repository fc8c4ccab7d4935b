//! Sinks: where frames go.
//!
//! A [`Sink`] takes frames one at a time and pushes them out in batches on
//! [`Sink::flush`]. Backends: [`NullSink`] (counts only: measures the
//! engine), [`PcapSink`] (a nanosecond pcap file), [`AfPacketSink`]
//! (PACKET_MMAP TX ring with PACKET_QDISC_BYPASS, falling back to sendmmsg),
//! [`UdpSink`] (datagrams through kernel UDP sockets, sendmmsg batches),
//! [`XdpSink`] (AF_XDP: one XDP socket per TX thread, zero-copy or copy mode).
//!
//! Design: the backends own the `unsafe` of sockets and mmap; scheduler and
//! other OS calls live in `sluice-sys`; the rest of the workspace denies
//! `unsafe_code`.

pub mod afpacket;
mod iface;
pub mod launch;
mod mmsg;
pub mod null;
pub mod open;
pub mod pcap;
pub mod ports;
mod sockopt;
mod spec;
pub mod udp;
pub mod xdp;

pub use afpacket::{AfPacketSink, TxMode};
pub use launch::LaunchTime;
pub use null::NullSink;
pub use open::SinkOptions;
pub use pcap::PcapSink;
pub use ports::PortSink;
pub use spec::SinkSpec;
pub use udp::UdpSink;
pub use xdp::{XdpMode, XdpSink};

/// Errors of a sink. `Oversize` and `TooShort` are per packet and not
/// fatal: the frame is skipped and counted, the run goes on.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The OS error is part of the text (not a separate source in the
    /// error chain, which would print it twice).
    #[error("{what}: {error}")]
    Os { what: String, error: std::io::Error },
    #[error(
        "frame of {len} bytes exceeds the interface limit of {limit} bytes (MTU + link header)"
    )]
    Oversize { len: usize, limit: usize },
    #[error(
        "frame of {len} bytes is shorter than the link header the interface needs ({min} bytes)"
    )]
    TooShort { len: usize, min: usize },
    #[error("{0}")]
    Config(String),
    /// A file output that cannot be prepared (its own error says which).
    #[error(transparent)]
    Output(#[from] sluice_sys::output::OutputError),
}

impl SinkError {
    pub(crate) fn os(what: impl Into<String>, source: std::io::Error) -> Self {
        SinkError::Os {
            what: what.into(),
            error: source,
        }
    }

    /// Per-packet problems that the engine counts and skips.
    pub fn is_per_packet(&self) -> bool {
        matches!(
            self,
            SinkError::Oversize { .. } | SinkError::TooShort { .. }
        )
    }
}

/// The unit a sink sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// Whole Ethernet frames (headers built by sluice).
    Frames,
    /// UDP payloads; the kernel builds the headers ([`UdpSink`]).
    Datagrams,
}

/// Frame `index` of the `count` frames of kept batch `batch`
/// (`sluice_core::Batch::kept`): bytes that stay the same for the rest of
/// the run, so a sink may keep its own copy and send that again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptFrame {
    pub batch: u64,
    pub index: u32,
    pub count: u32,
}

/// How a sink's frames reached its buffers: kept frames placed once and
/// sent from there again, or frames copied on each send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Copies {
    /// Kept frames copied into the sink's memory, once each.
    pub placed: u64,
    /// Sends of a placed frame: no copy at all.
    pub in_place: u64,
    /// Sends that copied the frame (not kept, or no room to keep it).
    pub copied: u64,
}

impl std::ops::AddAssign for Copies {
    fn add_assign(&mut self, o: Copies) {
        self.placed += o.placed;
        self.in_place += o.in_place;
        self.copied += o.copied;
    }
}

/// A packet destination.
pub trait Sink: Send {
    /// Queues one frame. `stamp_ns` is the send time as nanoseconds since the
    /// UNIX epoch (capture-writing sinks record it; wire sinks ignore it).
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError>;
    /// Queues one frame given in two pieces, `head` then `body` (headers
    /// built per packet in front of a payload that stays where it is). The
    /// sinks here write both pieces straight into their output buffer; the
    /// default joins them in a temporary first.
    fn send_parts(&mut self, head: &[u8], body: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send(&[head, body].concat(), stamp_ns)
    }
    /// Queues one UDP payload to leave from `from` to `to` (sinks that take
    /// datagrams, [`UdpSink`]); a sink that builds frames itself, or sends
    /// to one target, ignores the addresses.
    fn send_from(
        &mut self,
        _from: std::net::SocketAddrV4,
        _to: std::net::SocketAddrV4,
        payload: &[u8],
        stamp_ns: u64,
    ) -> Result<(), SinkError> {
        self.send(payload, stamp_ns)
    }
    /// Queues one frame for output `port` (two-port replay, several
    /// NICs: [`PortSink`]); a sink with one output takes every frame.
    fn send_on(&mut self, _port: u8, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send(frame, stamp_ns)
    }
    /// [`Sink::send_parts`] for output `port`.
    fn send_parts_on(
        &mut self,
        _port: u8,
        head: &[u8],
        body: &[u8],
        stamp_ns: u64,
    ) -> Result<(), SinkError> {
        self.send_parts(head, body, stamp_ns)
    }
    /// Outputs behind this sink (1 but for a [`PortSink`]).
    fn ports(&self) -> usize {
        1
    }
    /// Queues one frame of a kept batch: a sink that keeps frames places
    /// it the first time and sends its own copy from then on; the others
    /// send it as any frame.
    fn send_kept(&mut self, _at: KeptFrame, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send(frame, stamp_ns)
    }
    /// How frames reached the sink's buffers, for sinks that keep frames
    /// (none for the others).
    fn copies(&self) -> Option<Copies> {
        None
    }
    /// What `send` takes: whole Ethernet frames, or UDP payloads.
    fn takes(&self) -> Takes {
        Takes::Frames
    }
    /// Hands every queued frame to the OS (or the file).
    fn flush(&mut self) -> Result<(), SinkError>;
    /// Finishes the output (flushes files). Called once at the end.
    fn finish(&mut self) -> Result<(), SinkError> {
        self.flush()
    }
    /// Finishes the output of a run that failed or was stopped: a file
    /// output replaces nothing that existed (it is kept beside it, and a
    /// warning names it). Called once at the end, instead of `finish`.
    fn finish_incomplete(&mut self) -> Result<(), SinkError> {
        self.finish()
    }
    /// Puts a file output in place once the whole run's outcome is known:
    /// `complete` when no thread, source or helper failed and nothing
    /// stopped the run. Called once, after `finish` or
    /// `finish_incomplete`, by whoever knows the outcome; sinks that send
    /// have nothing to do.
    fn settle(&mut self, _complete: bool) -> Result<(), SinkError> {
        Ok(())
    }
    /// Human-readable name for messages and the summary.
    fn describe(&self) -> String;
    /// How frames reach a network device (`tx-ring`, `sendmmsg`,
    /// `xdp-copy`, `xdp-zerocopy`), for the summary; none for files and
    /// `null`.
    fn tx_path(&self) -> Option<&'static str> {
        None
    }
    /// Frames the kernel refused after they were queued (a batch sent at
    /// once cannot fail one frame at a time): skipped and counted, the run
    /// goes on. Cumulative.
    fn rejected(&self) -> u64 {
        0
    }
    /// Packets queued by `send` and not yet handed to the OS (and their
    /// bytes): a packet is counted as sent only once the OS took it, so a
    /// run that fails with packets still queued does not count them.
    fn unsent(&self) -> (u64, u64) {
        (0, 0)
    }
}
