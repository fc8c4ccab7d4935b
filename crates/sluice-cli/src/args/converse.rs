//! `sluice converse` arguments.

use clap::Args;
use sluice_core::Nanos;
use sluice_job::values::{positive_count, positive_duration};

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("side").required(true).multiple(true).args(["client", "server"])))]
pub struct ConverseArgs {
    /// Program of each connection (repeatable, mixed by weight=): http, http-server, rr, bulk, dns, capture:FILE; see --help.
    ///
    /// http:size=N[,path=/p][,host=h][,requests=K][,verify=FILE];
    /// http-server:size=N; rr:req=LAW,resp=LAW[,turns=K] (LAW: N,
    /// uniform(A,B), exp(MEAN)); bulk:size=N[,dir=up|down];
    /// dns[:name=D]; capture:FILE[,pauses=keep|none|×F] (each TCP/UDP
    /// conversation of the capture). Every one takes port=P and weight=W.
    #[arg(long = "program", short = 'p', required = true, value_name = "SPEC")]
    pub programs: Vec<String>,
    /// Client side: the interface it opens connections on.
    #[arg(long, value_name = "IFACE", requires_all = ["pool", "to"])]
    pub client: Option<String>,
    /// Client addresses: A, A-B or A/prefix (answered for on the client interface).
    #[arg(long, value_name = "RANGE")]
    pub pool: Option<String>,
    /// Client ports, LO-HI.
    #[arg(long, default_value = "10000-60999", value_name = "LO-HI")]
    pub ports: String,
    /// The server's address (the programs name its ports).
    #[arg(long, value_name = "IP")]
    pub to: Option<String>,
    /// Client side's next hop (default: the server's address, on the link).
    #[arg(long, value_name = "IP")]
    pub gateway: Option<String>,
    /// Server side: the interface it accepts connections on.
    #[arg(long, value_name = "IFACE", requires = "listen")]
    pub server: Option<String>,
    /// Server addresses: A, A-B or A/prefix.
    #[arg(long, value_name = "RANGE")]
    pub listen: Option<String>,
    /// Server side's next hop (default: the first pool address, on the link).
    #[arg(long, value_name = "IP")]
    pub server_gateway: Option<String>,
    /// New connections per second (default: as fast as --concurrency allows).
    #[arg(long, value_parser = sluice_core::parse::parse_rate)]
    pub cps: Option<f64>,
    /// Exponential gaps between connections (a Poisson process) at --cps.
    #[arg(long, requires = "cps")]
    pub poisson: bool,
    /// Ramp the rate linearly from --cps to this over --ramp-time.
    #[arg(long, value_parser = sluice_core::parse::parse_rate, requires_all = ["cps", "ramp_time"])]
    pub ramp_to: Option<f64>,
    #[arg(long, value_parser = positive_duration, requires = "ramp_to")]
    pub ramp_time: Option<Nanos>,
    /// At most this many connections open at once.
    #[arg(long, value_parser = positive_count)]
    pub concurrency: Option<u64>,
    /// Open this many connections in all, then stop.
    #[arg(long, short = 'n', value_parser = positive_count)]
    pub connections: Option<u64>,
    /// Open connections for this long (a server alone: serve this long).
    #[arg(long, short = 'd', value_parser = positive_duration)]
    pub duration: Option<Nanos>,
    /// After the last open, wait this long for connections to end; the rest (and all at a signal) are reset and counted unfinished.
    #[arg(long, value_parser = positive_duration, default_value = "5s")]
    pub drain: Nanos,
    /// MSS announced and sent.
    #[arg(long, default_value_t = 1460, value_parser = clap::value_parser!(u16).range(64..=9000))]
    pub mss: u16,
    /// Minimum retransmission time-out.
    #[arg(long, value_parser = positive_duration, default_value = "200ms")]
    pub rto_min: Nanos,
    /// SYN retransmissions (and UDP request retries) before a connection times out.
    #[arg(long, default_value_t = 6)]
    pub syn_retries: u8,
    /// How long a connection closed actively stays in TIME-WAIT.
    #[arg(long, value_parser = positive_duration, default_value = "2s")]
    pub time_wait: Nanos,
    /// A connection that hears nothing this long times out (or is probed with --keepalive).
    #[arg(long, value_parser = positive_duration, default_value = "60s")]
    pub idle_timeout: Nanos,
    /// Keep-alive probes after --idle-timeout of silence: INTERVAL,COUNT (e.g. 1s,3).
    #[arg(long, value_name = "INTERVAL,COUNT")]
    pub keepalive: Option<String>,
    /// Most connections held at once per side (SYNs past it are refused and counted).
    #[arg(long, value_parser = positive_count, default_value = "4000000")]
    pub max_conns: u64,
    /// Threads per side, each owning the connections of its share of client ports (the kernel's packet fanout hands each its frames).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// Seed of the sequence numbers, drawn lengths and Poisson gaps.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the counters once a second to PATH (- for stdout), one JSON object per line.
    #[arg(long)]
    pub stats_json: Option<String>,
    /// Write the final counters as JSON to PATH (- for stdout).
    #[arg(long)]
    pub summary_json: Option<String>,
    /// Serve the counters to Prometheus at http://ADDR:PORT/metrics (default address 127.0.0.1; port 0: any free one, printed).
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = sluice_job::values::listen_addr, requires = "metrics_token_file")]
    pub metrics: Option<std::net::SocketAddr>,
    /// The token scrapes must present (bearer); made, mode 0600, when the file does not exist.
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub metrics_token_file: Option<std::path::PathBuf>,
    /// No interval lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
