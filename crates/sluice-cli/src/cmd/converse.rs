//! `sluice converse`: client and server conversations on sluice's own
//! TCP/UDP stack, one port per side, with interval lines and a summary
//! (`sluice.converse-interval/1`, `sluice.converse/1`).

use super::converse_metrics::prometheus;
use crate::args::ConverseArgs;
use crate::dest::Dest;
use crate::json::Kind;
use crate::{exit, signals, Failure};
use anyhow::{anyhow, Context};
use serde::Serialize;
use sluice_stateful::addr::{self, show};
use sluice_stateful::drive::{self, Port, Until};
use sluice_stateful::fanout;
use sluice_stateful::host::{ClientConfig, Host, HostConfig, Rate, TcpConfig};
use sluice_stateful::program::{Program, Proto};
use sluice_stateful::report::Snap;
use sluice_stateful::report::{self, SideReport};
use sluice_stateful::{capture, templates};
use sluice_sys::packet_port::PacketPort;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn usage(e: impl std::fmt::Display) -> Failure {
    Failure {
        code: exit::BAD_INPUT,
        error: anyhow!("{e}"),
    }
}

fn ip(what: &'static str, s: &str) -> Result<u32, Failure> {
    let (a, b) = addr::range(what, s).map_err(usage)?;
    if a != b {
        return Err(usage(format!("{what} {s:?}: one address, not a range")));
    }
    Ok(a)
}

/// The programs of every `--program`, in order.
pub fn programs(specs: &[String]) -> Result<Vec<Program>, Failure> {
    let read = |p: &str| std::fs::read(p).map_err(|e| format!("cannot read {p}: {e}"));
    let mut out = Vec::new();
    for s in specs {
        if let Some(rest) = s.strip_prefix("capture:") {
            let progs = capture::programs(rest).map_err(usage)?;
            out.extend(progs);
        } else {
            out.push(templates::parse(s, &read).map_err(usage)?);
        }
    }
    Ok(out)
}

fn tcp_config(a: &ConverseArgs) -> Result<TcpConfig, Failure> {
    let keepalive = match &a.keepalive {
        None => None,
        Some(k) => {
            let (i, n) = k
                .split_once(',')
                .ok_or_else(|| usage(format!("--keepalive {k:?}: INTERVAL,COUNT")))?;
            let i = sluice_job::values::positive_duration(i)
                .map_err(|e| usage(format!("--keepalive: {e}")))?;
            let n: u8 = n
                .trim()
                .parse()
                .map_err(|_| usage(format!("--keepalive {k:?}: COUNT is 1 to 255")))?;
            Some((i.0 / 1_000_000, n))
        }
    };
    Ok(TcpConfig {
        mss: a.mss,
        rto_min_ms: (a.rto_min.0 / 1_000_000).max(1) as u32,
        syn_retries: a.syn_retries,
        time_wait_ms: a.time_wait.0 / 1_000_000,
        idle_ms: (a.idle_timeout.0 / 1_000_000).max(1),
        keepalive,
        ..TcpConfig::default()
    })
}

/// Refuses a client side that could never open what it is asked to.
fn check_pool(
    a: &ConverseArgs,
    pool: (u32, u32),
    ports: (u16, u16),
    progs: &[Program],
) -> Result<(), Failure> {
    let addrs = u64::from(pool.1 - pool.0) + 1;
    let nports = u64::from(ports.1 - ports.0) + 1;
    let mut share = std::collections::HashMap::new();
    for p in progs {
        *share.entry((p.proto, p.port)).or_insert(0u64) += 1;
    }
    let most = share.values().copied().max().unwrap_or(1);
    if nports < most {
        return Err(usage(format!(
            "--ports {}-{}: {most} programs share one server port, so each needs ports of its own; give at least {most} ports",
            ports.0, ports.1
        )));
    }
    let tuples = addrs * (nports / most);
    if let Some(c) = a.concurrency {
        if c > tuples {
            return Err(usage(format!(
                "--concurrency {c} is more than the pool holds: {addrs} addresses × {} ports per program = {tuples} connections at once",
                nports / most
            )));
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct Doc<'a> {
    elapsed_s: f64,
    #[serde(rename = "final")]
    last: bool,
    sides: &'a [SideReport],
}

fn reports(snaps: &[Snap], secs: f64) -> Vec<SideReport> {
    report::merge(snaps)
        .iter()
        .map(|s| report::side(s, secs))
        .collect()
}

fn status_line(snaps: &[Snap], secs: f64, prev: &mut Vec<u64>) -> String {
    let sides = report::merge(snaps);
    let mut parts = vec![format!("{secs:>6.1}s")];
    prev.resize(sides.len(), 0);
    for (i, s) in sides.iter().enumerate() {
        let t = s.total();
        let cps = t.completed - prev[i].min(t.completed);
        prev[i] = t.completed;
        parts.push(format!(
            "{}: {} conn/s, {} open, {} est, {} done, {} rst, {} t/o, {} retx",
            s.side,
            cps,
            s.open,
            t.established,
            t.completed,
            t.reset_by_peer + t.reset_by_us,
            t.timed_out,
            t.retransmitted
        ));
    }
    parts.join(" | ")
}

/// `total` split over `n` threads, thread `i`'s part (the first ones take
/// the remainder).
fn part(total: u64, n: u64, i: u64) -> u64 {
    total / n + u64::from(i < total % n)
}

/// Opens `n` ports on `iface`, in one fanout group when `n` > 1 (`client`:
/// the client side's program).
fn open_ports(iface: &str, n: u32, client: bool) -> Result<Vec<PacketPort>, Failure> {
    let fatal = |e: std::io::Error| Failure {
        code: exit::FATAL,
        error: anyhow!("{e}"),
    };
    if !std::path::Path::new("/sys/class/net").join(iface).exists() {
        return Err(usage(format!(
            "no interface {iface:?} here (interfaces: {})",
            sluice_sys::net::list_interfaces()
        )));
    }
    let mut ports = Vec::new();
    for _ in 0..n {
        ports.push(PacketPort::open(iface).map_err(fatal)?);
    }
    if n > 1 {
        let prog = fanout::program(client, n);
        // A group id of this process's own; another one's on the same
        // interface would refuse the join: try the next.
        let base = (std::process::id() as u16)
            .wrapping_mul(2)
            .wrapping_add(u16::from(client));
        let mut joined = Err(std::io::Error::other("no fanout group"));
        for k in 0..16u16 {
            let id = base.wrapping_add(k * 2);
            joined = ports.iter().try_for_each(|p| p.join_fanout(id, &prog));
            if joined.is_ok() {
                break;
            }
            // The sockets that joined stay in the failed group: start over.
            ports = (0..n)
                .map(|_| PacketPort::open(iface))
                .collect::<Result<_, _>>()
                .map_err(fatal)?;
        }
        joined.map_err(fatal)?;
    }
    Ok(ports)
}

pub fn run(a: ConverseArgs) -> Result<u8, Failure> {
    let stop = signals::install().context("installing signal handlers")?;
    let progs = programs(&a.programs)?;
    if progs.is_empty() {
        return Err(usage(
            "no program: the captures hold no complete conversation",
        ));
    }
    let progs = Arc::new(progs);
    let tcp = tcp_config(&a)?;
    let summary_out = a.summary_json.as_deref().map(Dest::open).transpose()?;
    let mut stats_out = a
        .stats_json
        .as_deref()
        .map(|p| Dest::open_log(p, "--stats-json"))
        .transpose()?;
    let setup = Setup {
        progs: progs.clone(),
        tcp,
        threads: a.threads.max(1),
        clock_base: sluice_sys::clock::monotonic_ns(),
        ports: addr::ports(&a.ports).map_err(usage)?,
        pool: a
            .pool
            .as_deref()
            .map(|p| addr::range("--pool", p))
            .transpose()
            .map_err(usage)?,
    };
    let mut per_thread: Vec<Vec<Port>> = (0..setup.threads).map(|_| Vec::new()).collect();
    if let Some(iface) = &a.client {
        client_side(&a, &setup, iface, &mut per_thread)?;
    }
    if let Some(iface) = &a.server {
        server_side(&a, &setup, iface, &mut per_thread)?;
    }
    check_udp(&progs)?;
    announce(&a, &setup);
    let until = Until {
        stop: stop.clone(),
        deadline: a.duration.map(|d| d.0),
        drain: a.drain.0,
    };
    let mut prev = Vec::new();
    let mut stats_error: Option<std::io::Error> = None;
    let quiet = a.quiet;
    let metrics = serve_metrics(&a)?;
    let rendered = metrics.as_ref().map(|m| m.rendered());
    let mut last_snaps = Vec::new();
    let elapsed = drive::run_threads(
        per_thread,
        &until,
        Duration::from_secs(1),
        |snaps, now, last| {
            let secs = now as f64 / 1e9;
            if let Some(r) = &rendered {
                *r.lock().unwrap_or_else(|e| e.into_inner()) = Some(prometheus(snaps, secs));
            }
            if last {
                last_snaps = snaps.to_vec();
                return;
            }
            if !quiet {
                eoutln!("{}", status_line(snaps, secs, &mut prev));
            }
            if let Some(w) = stats_out.as_mut() {
                let sides = reports(snaps, secs);
                let doc = Doc {
                    elapsed_s: secs,
                    last: false,
                    sides: &sides,
                };
                let line = crate::json::line(Kind::ConverseInterval, &doc).unwrap_or_default();
                if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
                    stats_error.get_or_insert(e);
                }
            }
        },
    )
    .map_err(|e| Failure {
        code: exit::FATAL,
        error: anyhow!("{e}"),
    })?;
    let outputs = Outputs {
        stats: stats_out,
        summary: summary_out,
        stats_error,
    };
    write_outputs(outputs, &last_snaps, elapsed, stop.load(Ordering::Relaxed))
}

/// What both sides are built from.
struct Setup {
    progs: Arc<Vec<Program>>,
    tcp: TcpConfig,
    threads: u32,
    clock_base: u64,
    ports: (u16, u16),
    pool: Option<(u32, u32)>,
}

/// The client side's ports and hosts, one per thread.
fn client_side(
    a: &ConverseArgs,
    s: &Setup,
    iface: &str,
    per_thread: &mut [Vec<Port>],
) -> Result<(), Failure> {
    let pool = s.pool.ok_or_else(|| usage("--client needs --pool"))?;
    let target = ip("--to", a.to.as_deref().unwrap_or_default())?;
    check_pool(a, pool, s.ports, &s.progs)?;
    let gateway = a
        .gateway
        .as_deref()
        .map(|g| ip("--gateway", g))
        .transpose()?
        .unwrap_or(target);
    if a.connections.is_none() && a.duration.is_none() {
        return Err(usage(
            "--client needs --connections or --duration (when to stop opening)",
        ));
    }
    let shared = Arc::new(AtomicU64::new(0));
    let concurrency = a
        .concurrency
        .or(if a.cps.is_none() { Some(1000) } else { None });
    let n = u64::from(s.threads);
    for (i, port) in open_ports(iface, s.threads, true)?.into_iter().enumerate() {
        let i64_ = i as u64;
        let cfg = HostConfig {
            mac: port.mac(),
            gateway,
            gateway_mac: None,
            addrs: pool,
            client: Some(ClientConfig {
                target,
                ports: s.ports,
                rate: Rate {
                    cps: a.cps.unwrap_or(0.0) / n as f64,
                    poisson: a.poisson,
                    ramp: a
                        .ramp_to
                        .zip(a.ramp_time)
                        .map(|(to, t)| (to / n as f64, t.0)),
                },
                concurrency: concurrency.map(|c| part(c, n, i64_).max(1)),
                limit: a.connections.map(|l| part(l, n, i64_)),
                open_until: a.duration.map(|d| d.0),
                shard: (i as u32, s.threads),
            }),
            server: false,
            tcp: s.tcp.clone(),
            max_conns: part(a.max_conns, n, i64_) as usize,
            seed: a.seed.wrapping_add(i64_),
            shared_gw: Some(Arc::clone(&shared)),
            clock_base: s.clock_base,
        };
        per_thread[i].push(Port::new(
            port,
            Host::new(cfg, s.progs.clone(), 0),
            "client",
        ));
    }
    Ok(())
}

/// The server side's ports and hosts, one per thread.
fn server_side(
    a: &ConverseArgs,
    s: &Setup,
    iface: &str,
    per_thread: &mut [Vec<Port>],
) -> Result<(), Failure> {
    let listen = a
        .listen
        .as_deref()
        .map(|p| addr::range("--listen", p))
        .transpose()
        .map_err(usage)?
        .ok_or_else(|| usage("--server needs --listen"))?;
    let gateway = match (&a.server_gateway, s.pool) {
        (Some(g), _) => ip("--server-gateway", g)?,
        (None, Some(p)) => p.0,
        (None, None) => {
            return Err(usage(
                "--server needs --server-gateway (its next hop) when there is no --pool",
            ))
        }
    };
    let shared = Arc::new(AtomicU64::new(0));
    let n = u64::from(s.threads);
    for (i, port) in open_ports(iface, s.threads, false)?.into_iter().enumerate() {
        let cfg = HostConfig {
            mac: port.mac(),
            gateway,
            gateway_mac: None,
            addrs: listen,
            client: None,
            server: true,
            tcp: s.tcp.clone(),
            max_conns: part(a.max_conns, n, i as u64) as usize,
            seed: a.seed ^ 0x5eed ^ i as u64,
            shared_gw: Some(Arc::clone(&shared)),
            clock_base: s.clock_base,
        };
        per_thread[i].push(Port::new(
            port,
            Host::new(cfg, s.progs.clone(), 0),
            "server",
        ));
    }
    eoutln!(
        "converse: server on {iface} answers {}-{} on the programs' ports",
        show(listen.0),
        show(listen.1)
    );
    Ok(())
}

/// Refuses a UDP program whose turn does not fit one datagram.
fn check_udp(progs: &[Program]) -> Result<(), Failure> {
    for p in progs {
        if p.proto == Proto::Udp
            && p.turns
                .iter()
                .any(|t| p.turn_len(t, &[u32::MAX; 2], 0) > sluice_stateful::udp::MAX_DATAGRAM)
        {
            return Err(usage(format!(
                "program {:?}: a UDP turn is longer than one datagram (1472 bytes)",
                p.name
            )));
        }
    }
    Ok(())
}

/// `--metrics`: the server, its token read (or made) first.
fn serve_metrics(a: &ConverseArgs) -> Result<Option<sluice_run::metrics::Metrics>, Failure> {
    Ok(match (a.metrics, &a.metrics_token_file) {
        (Some(addr), Some(file)) => {
            let token = sluice_run::token::read_or_make(file, "--metrics-token-file")?;
            let m = sluice_run::metrics::Metrics::serve(addr, token)
                .map_err(|e| sluice_run::open_failure(anyhow!("--metrics {addr}: {e}")))?;
            eoutln!(
                "sluice: metrics on http://{}/metrics (scrapes need the token of {})",
                m.addr,
                file.display()
            );
            Some(m)
        }
        _ => None,
    })
}

/// Where the run's documents go.
struct Outputs {
    stats: Option<Dest>,
    summary: Option<Dest>,
    stats_error: Option<std::io::Error>,
}

/// Writes the summary (and ends the stats lines), prints each side, and
/// gives the exit code.
fn write_outputs(
    o: Outputs,
    last_snaps: &[Snap],
    elapsed: u64,
    stopped: bool,
) -> Result<u8, Failure> {
    let secs = elapsed as f64 / 1e9;
    let sides = reports(last_snaps, secs);
    let complete = !stopped;
    if let Some(w) = o.stats {
        w.end(complete).context("writing --stats-json")?;
    }
    let doc = Doc {
        elapsed_s: secs,
        last: true,
        sides: &sides,
    };
    if let Some(mut out) = o.summary {
        let text = crate::json::pretty(Kind::Converse, &doc)?;
        writeln!(out, "{text}")
            .and_then(|_| out.end(complete))
            .context("writing --summary-json")?;
    }
    for s in &sides {
        eoutln!("{}", render(s, secs));
    }
    if let Some(e) = o.stats_error {
        return Err(anyhow!("writing --stats-json: {e}").into());
    }
    if stopped {
        return Ok(exit::INTERRUPTED);
    }
    let failed = sides.iter().any(|s| {
        s.total.counts.completed < s.total.counts.ended() || s.total.counts.mismatched > 0
    });
    Ok(if failed { exit::PARTIAL } else { exit::OK })
}

/// Says what runs: a client's pool and target, a server alone.
fn announce(a: &ConverseArgs, s: &Setup) {
    if a.client.is_none() && a.duration.is_none() && !a.quiet {
        eoutln!("converse: serving until SIGINT");
    }
    if let Some(c) = &a.client {
        eoutln!(
            "converse: client on {c}: {} programs, pool {}-{} ports {}-{}, to {}",
            s.progs.len(),
            show(s.pool.unwrap_or_default().0),
            show(s.pool.unwrap_or_default().1),
            s.ports.0,
            s.ports.1,
            a.to.as_deref().unwrap_or_default()
        );
    }
}

/// The summary of one side, as text.
fn render(s: &SideReport, secs: f64) -> String {
    let mut o = String::new();
    let t = &s.total;
    let c = &t.counts;
    o.push_str(&format!(
        "{} on {} over {secs:.2} s: {} attempted, {} established, {} completed ({:.0}/s), {} reset by peer, {} reset by us, {} timed out, {} aborted, {} unfinished\n",
        s.side, s.iface, c.attempted, c.established, c.completed, s.completed_per_s, c.reset_by_peer, c.reset_by_us, c.timed_out, c.aborted, c.unfinished
    ));
    o.push_str(&format!(
        "  bytes {} out / {} in, segments {} out / {} in, {} retransmitted ({} fast, {} time-outs), peak {} open, {} B of state per connection\n",
        c.bytes_tx, c.bytes_rx, c.segments_tx, c.segments_rx, c.retransmitted, c.fast_retransmits, c.timeouts_rto, s.peak_active, s.state_bytes_per_conn
    ));
    if c.verified + c.mismatched > 0 {
        o.push_str(&format!(
            "  responses checked: {} right, {} wrong\n",
            c.verified, c.mismatched
        ));
    }
    for (name, p) in [
        ("connect", &t.connect),
        ("first byte", &t.first_byte),
        ("complete", &t.complete),
    ] {
        if p.count > 0 {
            o.push_str(&format!(
                "  time to {name}: p50 {} µs, p90 {} µs, p99 {} µs, max {} µs\n",
                p.p50_us, p.p90_us, p.p99_us, p.max_us
            ));
        }
    }
    if s.programs.len() > 1 {
        for p in &s.programs {
            let c = &p.counts;
            o.push_str(&format!(
                "  {}: {} attempted, {} completed, {} reset, {} timed out, {} aborted, {} retransmitted\n",
                p.name, c.attempted, c.completed, c.reset_by_peer + c.reset_by_us, c.timed_out, c.aborted, c.retransmitted
            ));
        }
    }
    let h = &s.host;
    o.push_str(&format!(
        "  frames: {} in ({} malformed, {} ignored, {} of no connection), {} out ({} dropped by a full socket)",
        h.rx_frames, h.rx_malformed, h.rx_ignored, h.rx_stray, h.tx_frames, h.tx_dropped
    ));
    if h.pool_busy > 0 {
        o.push_str(&format!(
            ", {} opens waited for a free address and port",
            h.pool_busy
        ));
    }
    o
}
