//! `sluice converse`: client and server conversations on sluice's own
//! TCP/UDP stack, one port per side, with interval lines and a summary
//! (`sluice.converse-interval/1`, `sluice.converse/1`).

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

/// A label value in the exposition format: backslash, quote and newline
/// escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The counters as Prometheus families (`--metrics`).
fn prometheus(snaps: &[Snap], secs: f64) -> String {
    use sluice_run::metrics::write_family as family;
    let sides = report::merge(snaps);
    let mut out = String::new();
    family(
        &mut out,
        "sluice_converse_elapsed_seconds",
        "gauge",
        "Seconds since the run started.",
        [("", secs)],
    );
    let mut conns = Vec::new();
    let mut bytes = Vec::new();
    let mut segs = Vec::new();
    let mut retx = Vec::new();
    let mut open = Vec::new();
    let mut times = Vec::new();
    for s in &sides {
        let side = s.side;
        open.push((format!("{{side=\"{side}\"}}"), s.open as f64));
        let mut each: Vec<(String, sluice_stateful::counters::Counts)> = s
            .names
            .iter()
            .zip(&s.counts)
            .map(|(n, c)| (label(n), c.clone()))
            .collect();
        each.push(("total".into(), s.total()));
        for (p, c) in &each {
            let l = |extra: &str| format!("{{side=\"{side}\",program=\"{p}\"{extra}}}");
            for (outcome, v) in [
                ("attempted", c.attempted),
                ("established", c.established),
                ("completed", c.completed),
                ("reset_by_peer", c.reset_by_peer),
                ("reset_by_us", c.reset_by_us),
                ("timed_out", c.timed_out),
                ("aborted", c.aborted),
                ("unfinished", c.unfinished),
            ] {
                conns.push((l(&format!(",outcome=\"{outcome}\"")), v as f64));
            }
            bytes.push((l(",direction=\"tx\""), c.bytes_tx as f64));
            bytes.push((l(",direction=\"rx\""), c.bytes_rx as f64));
            segs.push((l(",direction=\"tx\""), c.segments_tx as f64));
            segs.push((l(",direction=\"rx\""), c.segments_rx as f64));
            retx.push((l(""), c.retransmitted as f64));
        }
        let mut all = sluice_stateful::counters::Times::default();
        for t in &s.times {
            all.add(t);
        }
        times.push((side, all));
    }
    family(
        &mut out,
        "sluice_converse_connections_total",
        "counter",
        "Connections by outcome.",
        conns,
    );
    family(
        &mut out,
        "sluice_converse_open_connections",
        "gauge",
        "Connections open now.",
        open,
    );
    family(
        &mut out,
        "sluice_converse_payload_bytes_total",
        "counter",
        "Payload bytes sent (tx, retransmissions included) and received in order (rx).",
        bytes,
    );
    family(
        &mut out,
        "sluice_converse_segments_total",
        "counter",
        "TCP segments or UDP datagrams sent and received.",
        segs,
    );
    family(
        &mut out,
        "sluice_converse_retransmitted_total",
        "counter",
        "Segments sent again.",
        retx,
    );
    // Each time a summary: quantiles over the run, its sum and count.
    for (what, help) in [
        (
            "connect",
            "Time from the SYN (or first datagram) to the handshake's end.",
        ),
        (
            "first_byte",
            "Time from the SYN to the first payload byte received (client).",
        ),
        ("complete", "Time from the SYN to completion."),
    ] {
        let name = format!("sluice_converse_{what}_seconds");
        let mut samples = Vec::new();
        let mut tail = String::new();
        for (side, t) in &times {
            let h = match what {
                "connect" => &t.connect,
                "first_byte" => &t.first_byte,
                _ => &t.complete,
            };
            for q in [0.5, 0.9, 0.99] {
                let v = if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(q) as f64 / 1e6
                };
                samples.push((format!("{{side=\"{side}\",quantile=\"{q}\"}}"), v));
            }
            let sum = h.mean() * h.len() as f64 / 1e6;
            tail += &format!(
                "{name}_sum{{side=\"{side}\"}} {sum}\n{name}_count{{side=\"{side}\"}} {}\n",
                h.len()
            );
        }
        family(&mut out, &name, "summary", help, samples);
        out += &tail;
    }
    out
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
    let ports_range = addr::ports(&a.ports).map_err(usage)?;
    let threads = a.threads.max(1);
    let clock_base = sluice_sys::clock::monotonic_ns();
    let mut per_thread: Vec<Vec<Port>> = (0..threads).map(|_| Vec::new()).collect();
    let pool = a
        .pool
        .as_deref()
        .map(|p| addr::range("--pool", p))
        .transpose()
        .map_err(usage)?;
    let listen = a
        .listen
        .as_deref()
        .map(|p| addr::range("--listen", p))
        .transpose()
        .map_err(usage)?;
    if let Some(iface) = &a.client {
        let pool = pool.ok_or_else(|| usage("--client needs --pool"))?;
        let target = ip("--to", a.to.as_deref().unwrap_or_default())?;
        check_pool(&a, pool, ports_range, &progs)?;
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
        let n = u64::from(threads);
        for (i, port) in open_ports(iface, threads, true)?.into_iter().enumerate() {
            let i64_ = i as u64;
            let cfg = HostConfig {
                mac: port.mac(),
                gateway,
                gateway_mac: None,
                addrs: pool,
                client: Some(ClientConfig {
                    target,
                    ports: ports_range,
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
                    shard: (i as u32, threads),
                }),
                server: false,
                tcp: tcp.clone(),
                max_conns: part(a.max_conns, n, i64_) as usize,
                seed: a.seed.wrapping_add(i64_),
                shared_gw: Some(Arc::clone(&shared)),
                clock_base,
            };
            per_thread[i].push(Port::new(port, Host::new(cfg, progs.clone(), 0), "client"));
        }
    }
    if let Some(iface) = &a.server {
        let listen = listen.ok_or_else(|| usage("--server needs --listen"))?;
        let gateway = match (&a.server_gateway, pool) {
            (Some(g), _) => ip("--server-gateway", g)?,
            (None, Some(p)) => p.0,
            (None, None) => {
                return Err(usage(
                    "--server needs --server-gateway (its next hop) when there is no --pool",
                ))
            }
        };
        let shared = Arc::new(AtomicU64::new(0));
        let n = u64::from(threads);
        for (i, port) in open_ports(iface, threads, false)?.into_iter().enumerate() {
            let cfg = HostConfig {
                mac: port.mac(),
                gateway,
                gateway_mac: None,
                addrs: listen,
                client: None,
                server: true,
                tcp: tcp.clone(),
                max_conns: part(a.max_conns, n, i as u64) as usize,
                seed: a.seed ^ 0x5eed ^ i as u64,
                shared_gw: Some(Arc::clone(&shared)),
                clock_base,
            };
            per_thread[i].push(Port::new(port, Host::new(cfg, progs.clone(), 0), "server"));
        }
        eoutln!(
            "converse: server on {iface} answers {}-{} on the programs' ports",
            show(listen.0),
            show(listen.1)
        );
    }
    for p in progs.iter() {
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
    if a.client.is_none() && a.duration.is_none() && !a.quiet {
        eoutln!("converse: serving until SIGINT");
    }
    if let Some(c) = &a.client {
        eoutln!(
            "converse: client on {c}: {} programs, pool {}-{} ports {}-{}, to {}",
            progs.len(),
            show(pool.unwrap().0),
            show(pool.unwrap().1),
            ports_range.0,
            ports_range.1,
            a.to.as_deref().unwrap_or_default()
        );
    }
    let until = Until {
        stop: stop.clone(),
        deadline: a.duration.map(|d| d.0),
        drain: a.drain.0,
    };
    let mut prev = Vec::new();
    let mut stats_error: Option<std::io::Error> = None;
    let quiet = a.quiet;
    let metrics = match (a.metrics, &a.metrics_token_file) {
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
    };
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
    let secs = elapsed as f64 / 1e9;
    let sides = reports(&last_snaps, secs);
    let complete = !stop.load(Ordering::Relaxed);
    if let Some(w) = stats_out {
        w.end(complete).context("writing --stats-json")?;
    }
    let doc = Doc {
        elapsed_s: secs,
        last: true,
        sides: &sides,
    };
    if let Some(mut out) = summary_out {
        let text = crate::json::pretty(Kind::Converse, &doc)?;
        writeln!(out, "{text}")
            .and_then(|_| out.end(complete))
            .context("writing --summary-json")?;
    }
    for s in &sides {
        eoutln!("{}", render(s, secs));
    }
    if let Some(e) = stats_error {
        return Err(anyhow!("writing --stats-json: {e}").into());
    }
    if stop.load(Ordering::Relaxed) {
        return Ok(exit::INTERRUPTED);
    }
    let failed = sides.iter().any(|s| {
        s.total.counts.completed < s.total.counts.ended() || s.total.counts.mismatched > 0
    });
    Ok(if failed { exit::PARTIAL } else { exit::OK })
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
