//! What a test lab reads of conversations: per program and in total,
//! connections by outcome, bytes and segments each way, retransmissions,
//! and the times to connect, to the first byte and to completion.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Counts of one program on one side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Connections opened (client: SYN sent; server: SYN accepted).
    pub attempted: u64,
    pub established: u64,
    /// Program done and the connection closed in order (both FINs acked).
    pub completed: u64,
    pub reset_by_peer: u64,
    pub reset_by_us: u64,
    /// Given up: no answer within the retries, or idle past the timeout.
    pub timed_out: u64,
    /// The peer closed, or sent what the program does not expect, before
    /// the program was done.
    pub aborted: u64,
    /// Still open when the run ended (reset then, to clean up the device).
    pub unfinished: u64,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    pub segments_tx: u64,
    pub segments_rx: u64,
    /// Segments sent again (on a time-out or a fast retransmit).
    pub retransmitted: u64,
    pub fast_retransmits: u64,
    pub timeouts_rto: u64,
    /// HTTP bodies checked against the expected length and digest.
    pub verified: u64,
    pub mismatched: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.attempted += o.attempted;
        self.established += o.established;
        self.completed += o.completed;
        self.reset_by_peer += o.reset_by_peer;
        self.reset_by_us += o.reset_by_us;
        self.timed_out += o.timed_out;
        self.aborted += o.aborted;
        self.unfinished += o.unfinished;
        self.bytes_tx += o.bytes_tx;
        self.bytes_rx += o.bytes_rx;
        self.segments_tx += o.segments_tx;
        self.segments_rx += o.segments_rx;
        self.retransmitted += o.retransmitted;
        self.fast_retransmits += o.fast_retransmits;
        self.timeouts_rto += o.timeouts_rto;
        self.verified += o.verified;
        self.mismatched += o.mismatched;
    }

    /// Connections that ended, one way or another.
    pub fn ended(&self) -> u64 {
        self.completed
            + self.reset_by_peer
            + self.reset_by_us
            + self.timed_out
            + self.aborted
            + self.unfinished
    }
}

/// Times of one program, µs.
#[derive(Debug, Clone)]
pub struct Times {
    pub connect: Histogram<u64>,
    pub first_byte: Histogram<u64>,
    pub complete: Histogram<u64>,
}

impl Default for Times {
    fn default() -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds are valid");
        Times {
            connect: h(),
            first_byte: h(),
            complete: h(),
        }
    }
}

impl Times {
    pub fn add(&mut self, o: &Times) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.connect.add(&o.connect);
        let _ = self.first_byte.add(&o.first_byte);
        let _ = self.complete.add(&o.complete);
    }
}

pub fn record(h: &mut Histogram<u64>, ns: u64) {
    let _ = h.record((ns / 1000).max(1));
}

/// Percentiles of one time, µs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Pcts {
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl Pcts {
    pub fn of(h: &Histogram<u64>) -> Pcts {
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        Pcts {
            count: h.len(),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: if h.is_empty() { 0 } else { h.max() },
        }
    }
}

/// Frames a host handled that belong to no program's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostCounts {
    pub rx_frames: u64,
    /// Too short, bad IPv4 header, fragments, lengths that disagree.
    pub rx_malformed: u64,
    /// Not ARP, TCP or UDP to one of the host's addresses.
    pub rx_ignored: u64,
    /// Segments of no connection (answered with a reset, as a stack does).
    pub rx_stray: u64,
    /// Frames longer than the receive slot (cut).
    pub rx_cut: u64,
    pub arp_replies: u64,
    pub arp_requests: u64,
    pub tx_frames: u64,
    /// Frames the socket had no room for (TCP sends them again).
    pub tx_dropped: u64,
    /// Opens put off because every address and port of the pool was busy.
    pub pool_busy: u64,
    /// Connections a full table refused.
    pub table_full: u64,
}
