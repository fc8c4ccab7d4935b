//! What a host is told: its addresses and next hop, its client side's
//! pool, rate and limits, and the TCP settings of its connections.

use crate::frame::Mac;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The wheel's tick, ns.
pub const TICK_NS: u64 = 1_000_000;

#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// MSS this stack announces (and sends at most).
    pub mss: u16,
    pub wscale: u8,
    /// Receive window announced (data is consumed as it arrives).
    pub rcv_wnd: u32,
    /// Initial congestion window, segments (RFC 6928).
    pub init_cwnd: u32,
    pub rto_init_ms: u32,
    pub rto_min_ms: u32,
    pub rto_max_ms: u32,
    /// SYN (or SYN-ACK) retransmissions before giving up.
    pub syn_retries: u8,
    /// Data retransmissions before giving up.
    pub retries: u8,
    pub time_wait_ms: u64,
    /// A connection that hears nothing this long times out (or, with
    /// keep-alive, is probed).
    pub idle_ms: u64,
    pub delack_ms: u64,
    /// Keep-alive probes: (interval ms, probes) after `idle_ms` of silence.
    pub keepalive: Option<(u64, u8)>,
    /// UDP: a request unanswered this long is sent again.
    pub udp_rto_ms: u64,
    /// UDP server: a finished conversation answers repeats this long.
    pub udp_linger_ms: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            wscale: 7,
            rcv_wnd: 4 << 20,
            init_cwnd: 10,
            rto_init_ms: 1000,
            rto_min_ms: 200,
            rto_max_ms: 60_000,
            syn_retries: 6,
            retries: 10,
            time_wait_ms: 2000,
            idle_ms: 60_000,
            delack_ms: 20,
            keepalive: None,
            udp_rto_ms: 1000,
            udp_linger_ms: 2000,
        }
    }
}

/// How fast the client opens connections.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Connections per second (0: as fast as concurrency allows).
    pub cps: f64,
    /// Exponential gaps (a Poisson process) instead of even ones.
    pub poisson: bool,
    /// Ramp to this rate over this many ns, linearly.
    pub ramp: Option<(f64, u64)>,
}

#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The server's address (each program names its port).
    pub target: u32,
    /// Local ports of the pool, inclusive.
    pub ports: (u16, u16),
    pub rate: Rate,
    /// At most this many connections open at once.
    pub concurrency: Option<u64>,
    /// At most this many connections in all.
    pub limit: Option<u64>,
    /// No new connection after this time (ns of the run's clock).
    pub open_until: Option<u64>,
    /// This host is thread `.0` of `.1`: it opens only from the client
    /// ports [`crate::fanout::shard_of`] gives it.
    pub shard: (u32, u32),
}

#[derive(Debug, Clone)]
pub struct HostConfig {
    pub mac: Mac,
    /// Every frame goes to this next hop (a router, or the peer itself).
    pub gateway: u32,
    /// The next hop's address, when known beforehand (else ARP finds it).
    pub gateway_mac: Option<Mac>,
    /// The host's addresses, inclusive (a client's pool, a server's).
    pub addrs: (u32, u32),
    pub client: Option<ClientConfig>,
    /// Accept connections on the programs' ports.
    pub server: bool,
    pub tcp: TcpConfig,
    /// Most connections held at once (SYNs past it are refused).
    pub max_conns: usize,
    pub seed: u64,
    /// The next hop's address as one thread learned it, for the others
    /// (0: not yet); threads of one side share it.
    pub shared_gw: Option<Arc<AtomicU64>>,
    /// The run's time zero on a clock every run of this host shares
    /// (CLOCK_MONOTONIC, ns): initial sequence numbers grow across runs,
    /// and each run starts its walk of the pool elsewhere, so a tuple a
    /// peer still holds in TIME-WAIT from an earlier run is opened again
    /// above where it ended (RFC 6528), or not at all. 0 on a virtual
    /// clock.
    pub clock_base: u64,
}
