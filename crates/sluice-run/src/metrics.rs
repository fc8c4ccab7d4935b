//! `--metrics ADDR`: the running job's statistics in Prometheus' text
//! exposition format (version 0.0.4), served over HTTP at `/metrics` for
//! a dashboard to scrape. A TCP port is open to every local user, so a
//! scrape must carry the token of `--metrics-token-file` as a bearer
//! credential (Prometheus' `authorization: {credentials_file: ...}`);
//! anything else is answered 401 and counted nowhere.
//!
//! The job's observer ([`Metrics::watch`]) keeps the latest interval's
//! figures; the server renders them on each scrape. Each client is served
//! on a thread of its own, at most [`MAX_CLIENTS`] at once (one more cuts
//! off the one that waited longest), so clients that send nothing, or a
//! byte now and then, cannot keep a scrape waiting. A client gets one request per
//! connection, 8 KiB of headers and 2 s in all to send them (then 408).

use crate::progress::Watch;
use crate::token::TOKEN_LEN;
use sluice_core::Dist;
use sluice_engine::{IntervalStats, Observer};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest request head read.
const MAX_HEAD: usize = 8 << 10;
/// How long a client has to send its request.
const CLIENT_TIME: Duration = Duration::from_secs(2);
/// Clients served at once; each holds a thread for [`CLIENT_TIME`] at most.
pub const MAX_CLIENTS: usize = 32;

/// The latest interval's figures, without its per-flow counters (which
/// may hold millions of flows: copied every second for nothing).
#[derive(Clone, Debug, Default)]
struct Figures {
    t: f64,
    packets: u64,
    bytes: u64,
    late: u64,
    dropped: u64,
    pps: f64,
    bps: f64,
    eps: Option<Dist>,
}

/// What a receiver beside the run (`--rx`) counted lately.
type Received = Arc<Mutex<Option<sluice_receive::SharedLive>>>;

/// Families a command other than a sending job renders itself (`sluice
/// converse`), served in place of the sending job's figures.
pub type Rendered = Arc<Mutex<Option<String>>>;

/// A metrics server for one run; it stops when dropped.
pub struct Metrics {
    figures: Arc<Mutex<Figures>>,
    received: Received,
    rendered: Rendered,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Where it listens (the port the kernel chose for port 0).
    pub addr: SocketAddr,
}

impl Metrics {
    /// Listens on `addr`; scrapes must carry `token`.
    pub fn serve(addr: SocketAddr, token: [u8; TOKEN_LEN]) -> std::io::Result<Metrics> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let figures = Arc::new(Mutex::new(Figures::default()));
        let received = Received::default();
        let rendered = Rendered::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (f, r, x, s) = (
            figures.clone(),
            received.clone(),
            rendered.clone(),
            stop.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("sluice-metrics".into())
            .spawn(move || accept(listener, token, f, r, x, &s))?;
        Ok(Metrics {
            figures,
            received,
            rendered,
            stop,
            thread: Some(thread),
            addr,
        })
    }

    /// The observer that keeps the figures current.
    pub fn watch(&self) -> Watch {
        Box::new(Keeper(self.figures.clone()))
    }

    /// Where a command that renders its own families puts them (the
    /// sending job's figures are then not served).
    pub fn rendered(&self) -> Rendered {
        self.rendered.clone()
    }

    /// Serves what the receiver beside the run counts too, per stream.
    pub fn follow(&self, live: sluice_receive::SharedLive) {
        live.lock().unwrap_or_else(|e| e.into_inner()).keep_latest = true;
        *self.received.lock().unwrap_or_else(|e| e.into_inner()) = Some(live);
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Keeper(Arc<Mutex<Figures>>);

/// The receiver's counts come from `follow`.
impl crate::progress::Watcher for Keeper {}

impl Observer for Keeper {
    fn interval(&mut self, s: &IntervalStats) {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *f = Figures {
            t: s.t,
            packets: s.packets,
            bytes: s.bytes,
            late: s.late,
            dropped: s.dropped,
            pps: s.pps,
            bps: s.bps,
            eps: s.eps,
        };
    }

    fn wants_flows(&self) -> bool {
        false
    }
}

/// Serves clients, each on a thread of its own, [`MAX_CLIENTS`] at most,
/// until `stop`. With every place taken, the client that has held one
/// longest is cut off (its socket shut down) for the newcomer: a scrape
/// takes milliseconds, so clients that send nothing, or a byte now and
/// then, are always the ones cut, however many of them come. Client
/// threads end within [`CLIENT_TIME`] and are waited for.
fn accept(
    listener: TcpListener,
    token: [u8; TOKEN_LEN],
    f: Arc<Mutex<Figures>>,
    r: Received,
    x: Rendered,
    stop: &AtomicBool,
) {
    // Oldest first: each client's thread and a handle on its socket.
    let mut clients: std::collections::VecDeque<(JoinHandle<()>, TcpStream)> =
        std::collections::VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        clients.retain(|(t, _)| !t.is_finished());
        match listener.accept() {
            Ok((client, _)) => {
                if clients.len() >= MAX_CLIENTS {
                    if let Some((_, oldest)) = clients.pop_front() {
                        let _ = oldest.shutdown(std::net::Shutdown::Both);
                    }
                }
                let Ok(handle) = client.try_clone() else {
                    continue;
                };
                let (f, r, x) = (f.clone(), r.clone(), x.clone());
                let spawned = std::thread::Builder::new()
                    .name("sluice-metrics-client".into())
                    .spawn(move || {
                        let _ = answer(client, &token, &f, &r, &x);
                    });
                if let Ok(t) = spawned {
                    clients.push_back((t, handle));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    for (t, _) in clients {
        let _ = t.join();
    }
}

/// Reads one request and answers it.
fn answer(
    mut c: TcpStream,
    token: &[u8; TOKEN_LEN],
    f: &Mutex<Figures>,
    r: &Received,
    x: &Rendered,
) -> std::io::Result<()> {
    c.set_nonblocking(false)?;
    c.set_write_timeout(Some(CLIENT_TIME))?;
    // One deadline for the whole request: a timeout per read would let a
    // client that sends a byte now and then hold the one server thread.
    let deadline = std::time::Instant::now() + CLIENT_TIME;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return reply(&mut c, "431 Request Header Fields Too Large", "");
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return reply(&mut c, "408 Request Timeout", "");
        }
        c.set_read_timeout(Some(left))?;
        let n = match c.read(&mut buf) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return reply(&mut c, "408 Request Timeout", "");
            }
            read => read?,
        };
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let request = lines.next().unwrap_or_default();
    let mut words = request.split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let bearer = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        .and_then(|(_, v)| v.trim().strip_prefix("Bearer "))
        .and_then(|hex| crate::token::parse(hex.trim()));
    // Compared in time that does not depend on where they differ.
    if !bearer.is_some_and(|b| sluice_sys::secret::same(token, &b)) {
        return reply(&mut c, "401 Unauthorized", "");
    }
    if method != "GET" {
        return reply(&mut c, "405 Method Not Allowed", "");
    }
    if path != "/metrics" {
        return reply(&mut c, "404 Not Found", "");
    }
    if let Some(text) = x.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return reply(&mut c, "200 OK", &(info() + &text));
    }
    let figures = f.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let live = r.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let rx = live.and_then(|l| l.lock().unwrap_or_else(|e| e.into_inner()).latest.clone());
    let mut body = render(&figures);
    if let Some(doc) = &rx {
        body += &render_rx(doc);
    }
    reply(&mut c, "200 OK", &body)
}

fn reply(c: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let auth = if status.starts_with("401") {
        "WWW-Authenticate: Bearer\r\n"
    } else {
        ""
    };
    write!(
        c,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\n{auth}Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    c.flush()
}

/// One metric family: its help and type lines, then a line per sample
/// (its labels, `{...}` or none, and its value).
fn family<L: AsRef<str>>(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, f64)>,
) {
    *out += &format!("# HELP {name} {help}\n# TYPE {name} {kind}\n");
    for (labels, v) in samples {
        *out += &format!("{name}{} {v}\n", labels.as_ref());
    }
}

/// The `sluice_info` family alone.
fn info() -> String {
    let mut out = String::new();
    family(
        &mut out,
        "sluice_info",
        "gauge",
        "The sluice that serves these metrics.",
        [(
            format!("{{version=\"{}\"}}", env!("CARGO_PKG_VERSION")),
            1.0,
        )],
    );
    out
}

/// One metric family in the text exposition format (for commands that
/// render their own: [`Metrics::rendered`]).
pub fn write_family<L: AsRef<str>>(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, f64)>,
) {
    family(out, name, kind, help, samples)
}

/// The figures in the text exposition format.
fn render(f: &Figures) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
        family(&mut out, name, kind, help, samples.iter().copied())
    };
    metric(
        "sluice_info",
        "gauge",
        "The sluice that serves these metrics.",
        &[(
            &format!("{{version=\"{}\"}}", env!("CARGO_PKG_VERSION")),
            1.0,
        )],
    );
    metric(
        "sluice_elapsed_seconds",
        "gauge",
        "Seconds since the run started, at its latest interval.",
        &[("", f.t)],
    );
    metric(
        "sluice_packets_total",
        "counter",
        "Packets sent.",
        &[("", f.packets as f64)],
    );
    metric(
        "sluice_frame_bytes_total",
        "counter",
        "Frame bytes sent.",
        &[("", f.bytes as f64)],
    );
    metric(
        "sluice_late_packets_total",
        "counter",
        "Packets sent later than the late threshold.",
        &[("", f.late as f64)],
    );
    metric(
        "sluice_dropped_packets_total",
        "counter",
        "Packets dropped for missing the drift window (time violations).",
        &[("", f.dropped as f64)],
    );
    metric(
        "sluice_packets_per_second",
        "gauge",
        "Packet rate over the latest interval.",
        &[("", f.pps)],
    );
    metric(
        "sluice_frame_bytes_per_second",
        "gauge",
        "Frame byte rate over the latest interval.",
        &[("", f.bps / 8.0)],
    );
    if let Some(e) = &f.eps {
        let p = &e.percentiles;
        let s = |ns: u64| ns as f64 / 1e9;
        metric(
            "sluice_send_error_seconds",
            "gauge",
            "Send-time error (actual minus scheduled) over the latest interval, by percentile \
             (a gauge of the interval, not a summary: its count and sum would not accumulate).",
            &[
                ("{percentile=\"50\"}", s(p.p50_ns)),
                ("{percentile=\"90\"}", s(p.p90_ns)),
                ("{percentile=\"99\"}", s(p.p99_ns)),
                ("{percentile=\"99.9\"}", s(p.p999_ns)),
                ("{percentile=\"100\"}", s(p.max_ns)),
            ],
        );
    }
    out
}

/// What the receiver beside the run counted, per stream (`--rx`).
fn render_rx(d: &sluice_receive::RxDoc) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: Vec<(String, f64)>| {
        family(&mut out, name, kind, help, samples)
    };
    let per = |v: &dyn Fn(&sluice_analyze::streams::StreamReport) -> f64| -> Vec<(String, f64)> {
        d.streams
            .iter()
            .map(|s| (format!("{{stream=\"{}\"}}", s.stream), v(s)))
            .collect()
    };
    metric(
        "sluice_rx_frames_total",
        "counter",
        "Stamped frames the receiver counted, by stream.",
        per(&|s| s.received as f64),
    );
    metric(
        "sluice_rx_lost_frames",
        "gauge",
        "Frames missing by sequence number so far, by stream (a late arrival lowers it).",
        per(&|s| s.lost as f64),
    );
    metric(
        "sluice_rx_duplicate_frames_total",
        "counter",
        "Frames received twice, by stream.",
        per(&|s| s.duplicates as f64),
    );
    metric(
        "sluice_rx_reordered_frames_total",
        "counter",
        "Frames that arrived before one sent earlier, by stream.",
        per(&|s| s.reordered as f64),
    );
    metric(
        "sluice_rx_jitter_seconds",
        "gauge",
        "RFC 3550 interarrival jitter, by stream.",
        per(&|s| s.jitter_ns / 1e9),
    );
    let mut latency = Vec::new();
    for s in d.streams.iter().filter(|s| s.interval_latency.count > 0) {
        let p = &s.interval_latency.percentiles;
        for (pc, ns) in [("50", p.p50_ns), ("99", p.p99_ns), ("100", p.max_ns)] {
            latency.push((
                format!("{{stream=\"{}\",percentile=\"{pc}\"}}", s.stream),
                ns as f64 / 1e9,
            ));
        }
    }
    metric(
        "sluice_rx_latency_seconds",
        "gauge",
        "One-way latency of the latest second's frames, by stream and percentile.",
        latency,
    );
    metric(
        "sluice_rx_kernel_drops_total",
        "counter",
        "Frames the kernel dropped before the receiver read them.",
        vec![(String::new(), d.kernel_drops as f64)],
    );
    let f = &d.fragments;
    metric(
        "sluice_rx_ip_fragments_total",
        "counter",
        "IP fragments received, and the datagrams they made: reassembled, timed out, failed.",
        [
            ("received", f.fragments),
            ("reassembled", f.reassembled),
            ("timed_out", f.timed_out),
            ("failed", f.failed),
        ]
        .into_iter()
        .map(|(k, v)| (format!("{{outcome=\"{k}\"}}"), v as f64))
        .collect(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_render_as_text_exposition() {
        let text = render(&Figures {
            t: 2.0,
            packets: 10,
            bytes: 640,
            pps: 5.0,
            eps: Some(Dist::default()),
            ..Figures::default()
        });
        assert!(text.contains("# TYPE sluice_packets_total counter\nsluice_packets_total 10\n"));
        assert!(text.contains("sluice_frame_bytes_total 640\n"));
        assert!(text.contains("sluice_send_error_seconds{percentile=\"99\"} 0\n"));
        // No ε at top speed: the metric is left out, not written as 0.
        assert!(!render(&Figures::default()).contains("sluice_send_error_seconds"));
    }
}
