//! The receiver: stamped frames (`--rx-stamp`) arriving on an interface,
//! counted per stream (loss, duplicates, reordering, one-way latency,
//! jitter: `sluice_analyze::streams`), on their own or on a thread beside
//! a sending command ([`Beside`]); its documents (`sluice.rx/1`) and their
//! text; RFC 2544's searches over trials and their results ([`rfc2544`]).

pub mod rfc2544;

use serde::Serialize;
use sluice_analyze::streams::{ClockCorrection, StreamCounter, StreamReport};
use sluice_sys::rx_ring::{RingFrame, RxRing};
pub use sluice_sys::xdp::rx::RxPath;
use sluice_sys::xdp::rx::XskRx;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Why receiving failed.
#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    /// The receive socket could not be opened (no such interface, no
    /// permission).
    #[error("--rx {iface}: {error}")]
    Open {
        iface: String,
        #[source]
        error: std::io::Error,
    },
    #[error("receiving on {iface}: {error}")]
    Receive {
        iface: String,
        #[source]
        error: std::io::Error,
    },
    #[error("starting the receiver: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the receiver thread panicked")]
    Panicked,
}

/// One `sluice.rx/1` document: a `--stats-json` line, or the summary
/// (and a sending command's `rx` section).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RxDoc {
    pub iface: String,
    /// Seconds since the receiver started.
    pub t: f64,
    /// True for the summary, false for a statistics line.
    #[serde(rename = "final")]
    pub last: bool,
    /// Where receive times come from: `kernel`, `hardware`, or `read`
    /// (AF_XDP: taken as each batch of frames is read).
    pub stamps: String,
    /// How frames reached the receiver: `ring` (TPACKET_V3), `xdp-copy`,
    /// `xdp-generic` or `xdp-zerocopy` (AF_XDP).
    #[serde(default)]
    pub path: String,
    /// Why `--rx-path auto` took the ring (AF_XDP refused); null else.
    #[serde(default)]
    pub path_note: Option<String>,
    /// Stamped frames received (duplicates included).
    pub frames: u64,
    /// Frames without a stamp (other traffic).
    pub unstamped: u64,
    /// Stamped frames of streams past the 512 told apart.
    pub other_streams: u64,
    /// Frames the kernel dropped before the receiver read them.
    pub kernel_drops: u64,
    /// IP fragments: received, datagrams put back together (and then
    /// counted above), timed out, failed.
    #[serde(default)]
    pub fragments: sluice_analyze::reasm::FragStats,
    /// How far CLOCK_REALTIME stepped against the monotonic clock while
    /// receiving (an NTP step, a date set): latency across the step is off
    /// by that much. 0 when it kept pace (within 1 ms).
    pub clock_step_ns: i64,
    pub streams: Vec<StreamReport>,
}

/// A receive socket and what it counted: `sluice rx`'s, and `--rx`'s
/// beside a sending command.
pub struct Receiver {
    iface: String,
    rx: Frames,
    path_note: Option<String>,
    pub counter: StreamCounter,
    drops: u64,
    /// Added to every receive time (tests only: `--clock-shift`).
    shift_ns: i64,
    started: Instant,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC when receiving began, ns.
    realtime_offset: i128,
}

/// Where a receiver's frames come from.
enum Frames {
    Ring(RxRing),
    Xdp(XskRx),
}

impl Frames {
    /// Opens the path `path` asks for; with `auto`, AF_XDP where it binds
    /// in zero-copy mode, else the ring, with the reason.
    fn open(iface: &str, path: RxPath) -> std::io::Result<(Frames, Option<String>)> {
        match path {
            RxPath::Ring => Ok((Frames::Ring(RxRing::open(iface)?), None)),
            RxPath::Xdp => Ok((Frames::Xdp(XskRx::open(iface)?), None)),
            RxPath::Auto => {
                let why = match XskRx::open(iface) {
                    Ok(x) if x.path() == "xdp-zerocopy" => return Ok((Frames::Xdp(x), None)),
                    Ok(x) => format!(
                        "AF_XDP binds {iface} in copy mode only ({}), where the ring costs \
                         less per frame and keeps kernel receive times",
                        x.path()
                    ),
                    Err(e) => format!("AF_XDP refused: {e}"),
                };
                let ring = RxRing::open(iface)?;
                Ok((Frames::Ring(ring), Some(why)))
            }
        }
    }

    fn drain(&mut self, wait: Duration, f: impl FnMut(RingFrame<'_>)) -> std::io::Result<u64> {
        match self {
            Frames::Ring(r) => r.drain(wait, f),
            Frames::Xdp(x) => x.drain(wait, f),
        }
    }

    fn drops(&mut self) -> u64 {
        match self {
            Frames::Ring(r) => r.drops().unwrap_or(0),
            Frames::Xdp(x) => x.drops(),
        }
    }

    fn path(&self) -> &'static str {
        match self {
            Frames::Ring(_) => "ring",
            Frames::Xdp(x) => x.path(),
        }
    }
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns: constant unless the wall
/// clock is stepped (receive times are on the wall clock).
fn realtime_offset() -> i128 {
    sluice_core::clock::paired_offset(
        sluice_sys::clock::monotonic_ns,
        sluice_sys::clock::realtime_ns,
    )
}

impl Receiver {
    /// Opens the receive socket on `iface` (a missing interface is bad
    /// input, a refused socket the environment's); `clocks` correct the
    /// stamps of other hosts' streams, `shift_ns` moves receive times;
    /// `path` says how frames are taken.
    pub fn open(
        iface: &str,
        clocks: Vec<ClockCorrection>,
        shift_ns: i64,
        path: RxPath,
    ) -> Result<Receiver, ReceiveError> {
        let (mut rx, path_note) =
            Frames::open(iface, path).map_err(|error| ReceiveError::Open {
                iface: iface.to_string(),
                error,
            })?;
        let _ = rx.drops(); // counts from here
        Ok(Receiver {
            iface: iface.to_string(),
            rx,
            path_note,
            counter: StreamCounter::with_clocks(clocks),
            drops: 0,
            shift_ns,
            started: Instant::now(),
            realtime_offset: realtime_offset(),
        })
    }

    pub fn stamps(&self) -> &'static str {
        match &self.rx {
            Frames::Ring(r) if r.hardware_stamps() => "hardware",
            Frames::Ring(_) => "kernel",
            Frames::Xdp(_) => "read",
        }
    }

    /// How frames reach the receiver (`ring`, `xdp-copy`, …).
    pub fn path(&self) -> &'static str {
        self.rx.path()
    }

    /// Why AF_XDP was not taken, where `auto` fell back to the ring.
    pub fn path_note(&self) -> Option<&str> {
        self.path_note.as_deref()
    }

    /// Takes the frames the ring holds, waiting up to `wait` for some;
    /// true when one carried a stamp.
    pub fn poll(&mut self, wait: Duration) -> Result<bool, ReceiveError> {
        let counter = &mut self.counter;
        let shift = self.shift_ns;
        let mut stamped = false;
        self.rx
            .drain(wait, |f| {
                let ts = f.ts_ns.saturating_add_signed(shift);
                stamped |= counter.frame(f.data, ts)
            })
            .map_err(|error| ReceiveError::Receive {
                iface: self.iface.clone(),
                error,
            })?;
        Ok(stamped)
    }

    /// What was counted so far (`last`: the final count).
    pub fn doc(&mut self, last: bool) -> RxDoc {
        self.drops += self.rx.drops();
        if last {
            self.counter.finish();
        }
        RxDoc {
            iface: self.iface.clone(),
            t: self.started.elapsed().as_secs_f64(),
            last,
            stamps: self.stamps().to_string(),
            path: self.path().to_string(),
            path_note: self.path_note.clone(),
            frames: self.counter.frames(),
            unstamped: self.counter.unstamped,
            other_streams: self.counter.other_streams,
            kernel_drops: self.drops,
            fragments: self.counter.frags.stats,
            clock_step_ns: {
                let step = realtime_offset() - self.realtime_offset;
                if step.abs() > 1_000_000 {
                    step as i64
                } else {
                    0
                }
            },
            streams: self.counter.report(),
        }
    }
}

/// What a receiver beside a sending command counted lately, for the
/// sender's status line and `--stats-json` (a `sluice.rx/1` line after
/// each interval line).
#[derive(Default)]
pub struct RxLive {
    /// The latest count not yet written as a line.
    pub doc: Option<RxDoc>,
    /// The latest count, kept (when `keep_latest` asks) for readers that
    /// do not take it (`--metrics`).
    pub latest: Option<RxDoc>,
    pub keep_latest: bool,
    /// The status line's part: stamped frames, lost, worst p99 latency.
    pub glance: Option<String>,
}

/// Shared between the receiver's thread and the sender's observer.
pub type SharedLive = std::sync::Arc<std::sync::Mutex<RxLive>>;

/// `--rx IFACE` beside a sending command: a receiver on its own thread
/// from before the first frame leaves until [`Beside::finish`], its
/// count published once a second in [`Beside::live`].
pub struct Beside {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Result<RxDoc, ReceiveError>>,
    pub live: SharedLive,
}

impl Beside {
    pub fn start(
        iface: &str,
        clocks: Vec<ClockCorrection>,
        shift_ns: i64,
        path: RxPath,
    ) -> Result<Beside, ReceiveError> {
        let mut r = Receiver::open(iface, clocks, shift_ns, path)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let live = SharedLive::default();
        let (flag, shared) = (stop.clone(), live.clone());
        let thread = std::thread::Builder::new()
            .name("sluice-rx".into())
            .spawn(move || {
                let mut next = Instant::now() + Duration::from_secs(1);
                while !flag.load(Ordering::Relaxed) {
                    r.poll(Duration::from_millis(20))?;
                    if Instant::now() >= next {
                        let doc = r.doc(false);
                        let mut l = shared.lock().unwrap_or_else(|e| e.into_inner());
                        l.glance = Some(glance(&doc));
                        if l.keep_latest {
                            l.latest = Some(doc.clone());
                        }
                        l.doc = Some(doc);
                        next += Duration::from_secs(1);
                    }
                }
                // What the ring still holds, its last block retired.
                r.poll(Duration::from_millis(20))?;
                Ok(r.doc(true))
            })
            .map_err(ReceiveError::Thread)?;
        Ok(Beside { stop, thread, live })
    }

    /// Waits `linger` for frames still on their way, then stops counting.
    pub fn finish(self, linger: Duration) -> Result<RxDoc, ReceiveError> {
        std::thread::sleep(linger);
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().map_err(|_| ReceiveError::Panicked)?
    }
}

fn us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

pub fn status_line(d: &RxDoc) -> String {
    format!(
        "{:>8.1}s {:>12} stamped  {}  {} streams",
        d.t,
        d.frames,
        glance_counts(d),
        d.streams.len(),
    )
}

/// Lost frames and the worst stream's p99 latency.
fn glance_counts(d: &RxDoc) -> String {
    let lost: u64 = d.streams.iter().map(|s| s.lost).sum();
    let worst = d
        .streams
        .iter()
        .map(|s| s.latency.percentiles.p99_ns)
        .max()
        .unwrap_or(0);
    format!("{lost:>8} lost  latency p99 {}", us(worst))
}

/// A sender's status line's receive part.
fn glance(d: &RxDoc) -> String {
    format!("rx {} {}", d.frames, glance_counts(d))
}

/// The receiver's part of a summary on stderr: one line per stream.
pub fn render(d: &RxDoc) -> String {
    let mut s = format!(
        "received {} stamped frames on {} in {:.3} s ({} other frames, {} dropped by the kernel; {} receive times, by {})",
        d.frames, d.iface, d.t, d.unstamped, d.kernel_drops, d.stamps, d.path
    );
    if let Some(n) = &d.path_note {
        s += &format!("\n{n}: the TPACKET ring received");
    }
    let f = &d.fragments;
    if f.fragments > 0 {
        s += &format!(
            "\nIP fragments: {} received, {} datagrams reassembled, {} timed out, {} failed",
            f.fragments, f.reassembled, f.timed_out, f.failed
        );
    }
    for st in &d.streams {
        let p = &st.latency.percentiles;
        s += &format!(
            "\nstream {}: {} received, {} lost, {} duplicated, {} reordered; one-way latency p50 {} p99 {} max {}; jitter {}",
            st.stream,
            st.received,
            st.lost,
            st.duplicates,
            st.reordered,
            us(p.p50_ns),
            us(p.p99_ns),
            us(p.max_ns),
            us(st.jitter_ns as u64)
        );
        if st.clock_correction_ns != 0 {
            s += &format!(
                " (departures moved by {:.3} ms onto this clock)",
                -st.clock_correction_ns as f64 / 1e6
            );
        }
        if st.early > 0 {
            s += &format!(
                " ({} frames arrived before their departure stamp: the clocks differ)",
                st.early
            );
        }
    }
    if d.clock_step_ns != 0 {
        s += &format!(
            "\nwarning: the wall clock stepped by {:.3} ms while receiving (NTP, a date set): \
             one-way latency across the step is off by that much",
            d.clock_step_ns as f64 / 1e6
        );
    }
    if d.other_streams > 0 {
        s += &format!(
            "\n{} stamped frames of further streams (past 512) counted together",
            d.other_streams
        );
    }
    s
}
