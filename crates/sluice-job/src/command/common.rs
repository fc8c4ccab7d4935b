//! What every sending command's job holds beside how it sends
//! ([`SendOpts`]): this host's own (where packets go, the receiver beside
//! them, the statistics files) and its part of a split job.

use crate::values::duration;
use crate::SendOpts;
use clap::Args;
use sluice_core::Nanos;
use sluice_sink::SinkSpec;
use sluice_sys::xdp::rx::RxPath;

/// Where packets go, what is received beside them and where the run's
/// statistics go (this host's own), with how it sends ([`SendOpts`], what
/// a worker may take from a peer): every sending command's, declared once.
#[derive(Args, Clone, Debug)]
pub struct RunOpts {
    /// Where packets go: null, pcap:PATH, IFACE (xdp: where AF_XDP binds, else afpacket:), afpacket:IFACE, xdp:IFACE (series play also udp:HOST:PORT).
    #[arg(long, short = 't', default_value_t = SinkSpec::Null)]
    pub to: SinkSpec,
    #[command(flatten)]
    pub send: SendOpts,
    /// Count the stamped frames arriving on this interface while sending (loss, duplicates, reordering, one-way latency, jitter per stream, in the summary); implies --rx-stamp replace.
    #[arg(long, value_name = "IFACE")]
    pub rx: Option<String>,
    /// With --rx: how long after the last frame left the receiver still counts arrivals.
    #[arg(long, value_parser = duration, default_value = "200ms", requires = "rx")]
    pub rx_wait: Nanos,
    /// With --rx: how the receiver takes frames: auto (AF_XDP where it binds in zero-copy mode, else the TPACKET ring), xdp (any mode), or ring (kernel receive times, and the kernel's stack keeps every frame).
    #[arg(long, value_name = "auto|xdp|ring", default_value_t = RxPath::Auto, requires = "rx")]
    pub rx_path: RxPath,
    /// The first stream id of this sender's stamps: TX thread k stamps stream N + k (+256 on a second port), so that senders on several hosts stay apart at one receiver.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rx_streams_from: u32,
    /// With --rx: stamps of streams FIRST to LAST come from a clock OFFSET ahead of this host's (negative: behind), e.g. 1024-1279=-2.5ms; their one-way latency is corrected by it. Repeatable.
    #[arg(
        long,
        value_name = "FIRST[-LAST]=OFFSET",
        requires = "rx",
        allow_hyphen_values = true
    )]
    pub rx_clock: Vec<sluice_analyze::streams::ClockCorrection>,
    /// Test only: this process's wall clock, as stamps and receive times read it, is this much ahead of the host's.
    #[arg(long, value_parser = crate::values::signed_duration, allow_hyphen_values = true, hide = true, default_value_t = 0)]
    pub clock_shift: i64,
    /// Write one JSON object per second to PATH (- for stdout).
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the final summary as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// Write each packet's send time and send-time error ε to PATH (- for stdout), one CSV line per packet: thread,packet,t_ns,eps_ns (ε over time, TCPivo's figures). Not at top speed.
    #[arg(long, value_name = "PATH")]
    pub eps_log: Option<String>,
    /// No live status line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Serve the run's statistics for Prometheus at http://ADDR:PORT/metrics (a bare PORT: on 127.0.0.1; port 0: the kernel chooses, and says which); scrapes must carry --metrics-token-file's secret as a bearer token.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = crate::values::listen_addr, requires = "metrics_token_file")]
    pub metrics: Option<std::net::SocketAddr>,
    /// With --metrics: the secret scrapes send (Authorization: Bearer HEX; Prometheus' credentials_file): 64 hex digits in a file only its owner may read, made (mode 0600) when missing.
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub metrics_token_file: Option<std::path::PathBuf>,
    /// --ramp from a file: one TIME RATE per line (TIME a duration such as 2.5s, or plain seconds; RATE as --ramp takes it; two lines at one time are a step; # comments).
    #[arg(long, value_name = "FILE", conflicts_with = "ramp")]
    pub ramp_file: Option<std::path::PathBuf>,
}

impl RunOpts {
    /// `send` to `to`, with this host's defaults for the rest (no
    /// receiver, no statistics files, the live status line on).
    pub fn new(to: SinkSpec, send: SendOpts) -> RunOpts {
        RunOpts {
            to,
            send,
            rx: None,
            rx_wait: Nanos::from_millis(200),
            rx_path: RxPath::Auto,
            rx_streams_from: 0,
            rx_clock: Vec::new(),
            clock_shift: 0,
            stats_json: None,
            eps_log: None,
            summary_json: None,
            quiet: false,
            metrics: None,
            metrics_token_file: None,
            ramp_file: None,
        }
    }
}

/// One host's part of a job split over several (what `sluice worker` gives
/// each job of a distributed run; usable by hand too).
#[derive(Args, Debug, Default)]
pub struct ShareOpts {
    /// Start at this CLOCK_REALTIME instant, in ns since the epoch (hosts whose clocks agree start together).
    #[arg(long, value_name = "NS", value_parser = crate::values::start_instant)]
    pub start_at: Option<u64>,
    /// Send only share K of N (1 <= K <= N) of the job: flows by symmetric 5-tuple (replay, flows run), devices (series play) or every Nth packet of the global schedule (profile run).
    #[arg(long, value_name = "K/N", value_parser = sluice_source::Share::parse)]
    pub share: Option<sluice_source::Share>,
}
