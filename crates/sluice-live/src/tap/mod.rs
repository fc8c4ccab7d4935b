//! `sluice pace`: a live source. Frames any program sends through a TAP
//! device are read as they arrive, given departure times by the
//! [`Departures`] (a constant gap, a bit rate or a drawn law; per link or
//! per flow) and handed to the engine shortly before they are due. With a
//! return path ([`relay`]) the frames arriving on the outgoing interface
//! for the TAP side are written back into it, so TCP stays closed-loop.

mod departures;
mod relay;

pub use departures::{Departures, PaceLaw, PaceStats};
pub use relay::Relay;

use sluice_core::{Clock, MonoTime, MonotonicClock, Nanos};
use sluice_source::seam::{
    Due, End, Lane, Origin, Outbox, RunContext, Source, SourceError, SourceReport,
};
use sluice_sys::tap::Tap;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

/// How long before its departure a frame is handed to the TX thread: the
/// TX thread's wake-up must fit in it; a frame arriving later than this
/// before an earlier-released one waits behind it at most this long.
const LEAD_NS: u64 = 200_000;
/// Longest wait for a frame, so that a stop is noticed.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// Frames read in one go before the heap is looked at again.
const READ_BURST: usize = 64;

/// Where frames come from: a TAP device, or a test's script.
pub trait FrameInput: Send {
    /// One frame into `buf`; None when none is waiting.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// Waits until a frame may be read, or `timeout` passes.
    fn wait(&mut self, timeout: Duration) -> io::Result<()>;
    /// The device's name, for errors.
    fn name(&self) -> &str;
}

impl FrameInput for Arc<Tap> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        Tap::read(self, buf)
    }
    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        Tap::wait(self, timeout).map(|_| ())
    }
    fn name(&self) -> &str {
        Tap::name(self)
    }
}

/// Where requested gaps go (`--log-requested`): one line per departure,
/// the gap in ns since the previous departure.
pub trait GapLog: Send {
    fn gap(&mut self, ns: u64) -> io::Result<()>;
    /// The log is complete (flush and commit it).
    fn finish(&mut self) -> io::Result<()>;
}

impl<W: Write + Send> GapLog for io::BufWriter<W> {
    fn gap(&mut self, ns: u64) -> io::Result<()> {
        writeln!(self, "{ns}")
    }
    fn finish(&mut self) -> io::Result<()> {
        self.flush()
    }
}

/// When a frame the law gave `due` (and a `gap` to keep after the one
/// before) is handed to the engine: as it is, or under `--tick` at the
/// first tick at or after it, with no spacing (a timer-driven emulator
/// sends everything of a tick together).
fn departure(due: u64, gap: u32, tick: Option<u64>) -> Due {
    match tick {
        Some(t) => Due::at(Nanos(due.div_ceil(t).saturating_mul(t))),
        None => Due::at(Nanos(due)).with_spacing(gap),
    }
}

pub struct PaceSource {
    input: Box<dyn FrameInput>,
    sched: Departures,
    per_flow: bool,
    /// Stop reading this long after the start (None: until stopped); the
    /// run's duration, from `begin`.
    duration: Option<Nanos>,
    log: Option<Box<dyn GapLog>>,
    log_error: Option<String>,
    relay: Option<Relay>,
    clock: MonotonicClock,
    start: MonoTime,
    last_due: Option<u64>,
    /// `--tick`: departures rounded up to multiples of it from the start.
    tick: Option<u64>,
    buf: Vec<u8>,
}

impl PaceSource {
    pub fn new(input: Box<dyn FrameInput>, sched: Departures, per_flow: bool) -> Self {
        let clock = MonotonicClock::new();
        PaceSource {
            input,
            sched,
            per_flow,
            duration: None,
            log: None,
            log_error: None,
            relay: None,
            start: clock.now(),
            clock,
            last_due: None,
            tick: None,
            buf: vec![0; 65_536],
        }
    }

    /// Logs each departure's requested gap.
    pub fn with_log(mut self, log: Box<dyn GapLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// Departures only on multiples of `tick` from the start, as a
    /// fixed-interval timer schedules them: a frame leaves at the first
    /// tick at or after its due time, with no spacing kept, so frames due
    /// in one tick leave back to back. The requested gaps logged stay the
    /// law's.
    pub fn with_tick(mut self, tick: Nanos) -> Self {
        self.tick = Some(tick.0.max(1));
        self
    }

    /// Runs a return path for the length of the run.
    pub fn with_relay(mut self, relay: Relay) -> Self {
        self.relay = Some(relay);
        self
    }

    /// ns since the run's start (0 before it).
    fn now(&self) -> u64 {
        self.clock.now().since(self.start).0
    }

    fn device_error(&self, e: io::Error) -> SourceError {
        SourceError::Device {
            what: format!("TAP {}", self.input.name()),
            error: e,
        }
    }

    /// Hands every frame due within the lead to the outbox; false once
    /// the stream has ended.
    fn release(&mut self, out: &mut Outbox<'_>, now: u64) -> bool {
        let (log, last, log_error) = (&mut self.log, &mut self.last_due, &mut self.log_error);
        let tick = self.tick;
        let mut ok = true;
        let mut any = false;
        self.sched.release(now + LEAD_NS, |due, gap, frame| {
            if !out.push(Lane(0), departure(due, gap, tick), |b| {
                b.extend_from_slice(frame)
            }) {
                ok = false;
                return false;
            }
            any = true;
            let requested = last.map_or(0, |l| due.saturating_sub(l));
            *last = Some(due);
            if let Some(l) = log.as_mut() {
                if let Err(e) = l.gap(requested) {
                    log_error.get_or_insert(format!("--log-requested: {e}"));
                    *log = None;
                }
            }
            true
        });
        ok && (!any || out.flush()) && !out.stopped()
    }

    fn run(&mut self, out: &mut Outbox<'_>) -> Result<(), SourceError> {
        loop {
            let now = self.now();
            if self.duration.is_some_and(|d| now >= d.0) || !out.flush() {
                return Ok(());
            }
            let mut read = 0;
            while read < READ_BURST {
                let Some(n) = self
                    .input
                    .read(&mut self.buf)
                    .map_err(|e| self.device_error(e))?
                else {
                    break;
                };
                read += 1;
                let frame = &self.buf[..n];
                let flow = if self.per_flow {
                    sluice_wire::flow_hash(frame)
                } else {
                    0
                };
                let t = self.now();
                self.sched.arrive(t, frame, flow);
            }
            let now = self.now();
            if !self.release(out, now) {
                return Ok(());
            }
            if read == READ_BURST {
                continue;
            }
            let wait = match self.sched.next_due() {
                Some(d) => Duration::from_nanos(d.saturating_sub(now + LEAD_NS)).min(IDLE_WAIT),
                None => IDLE_WAIT,
            };
            if !wait.is_zero() {
                self.input.wait(wait).map_err(|e| self.device_error(e))?;
            }
        }
    }
}

impl Source for PaceSource {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        let _ = sluice_sys::sched::set_timer_slack(1);
        // Spawned here, it shares the IO thread's CPUs (never a TX CPU).
        if let Some(r) = self.relay.as_mut() {
            r.spawn().map_err(|e| SourceError::Device {
                what: "the return path".into(),
                error: e,
            })?;
        }
        let result = self.run(out);
        if let Some(mut l) = self.log.take() {
            if let Err(e) = l.finish() {
                self.log_error
                    .get_or_insert(format!("--log-requested: {e}"));
            }
        }
        if let Some(r) = self.relay.as_mut() {
            r.stop();
        }
        result.map(|()| End::Done)
    }

    fn origin(&self) -> Origin {
        Origin::Live
    }

    fn begin(&mut self, cx: &RunContext) {
        self.clock = cx.clock;
        self.start = cx.start.unwrap_or_else(|| cx.clock.now());
        self.duration = cx.duration;
    }

    fn report(&self) -> SourceReport {
        let s = &self.sched.stats;
        let mut counters = vec![
            ("arrived", s.arrived),
            ("dropped_queue_full", s.dropped),
            ("late_arrivals", s.late_arrivals),
            ("burst", s.burst),
            ("backlog_max", s.backlog_max),
            (
                "backlog_mean_x1000",
                (s.backlog_sum * 1000).checked_div(s.arrived).unwrap_or(0),
            ),
            ("unsent_at_stop", self.sched.held() as u64),
        ];
        let mut notes = Vec::new();
        if let Some(r) = &self.relay {
            let rs = r.stats();
            counters.push(("returned", rs.returned));
            counters.push(("return_dropped", rs.dropped));
            if let Some(e) = rs.error {
                notes.push(format!("return path: {e}"));
            }
        }
        if s.dropped > 0 {
            notes.push(format!(
                "{} frames arrived to a full backlog (--queue-limit) and were dropped",
                s.dropped
            ));
        }
        notes.extend(self.log_error.clone());
        SourceReport {
            notes,
            counters,
            ..SourceReport::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Caliper Fig. 8: frames requested 70 us apart through a 122 us timer
    /// leave back to back or a tick apart, the back-to-back share being
    /// 1 - 70/122 (the paper measured about 40 % through NIST Net).
    #[test]
    fn ticks_round_departures_up_and_bunch_them() {
        let mut s = Departures::new(PaceLaw::Gap(70_000.0), false, 1, 10_000);
        for _ in 0..1220 {
            s.arrive(5_000, &[0; 60], 0);
        }
        let mut got = Vec::new();
        s.release(u64::MAX, |due, gap, _| {
            got.push((due, departure(due, gap, Some(122_000))));
            true
        });
        assert_eq!(got.len(), 1220);
        let mut together = 0;
        for w in got.windows(2) {
            let (asked, d) = w[1];
            assert_eq!(d.at.0 % 122_000, 0);
            assert!(
                d.at.0 >= asked && d.at.0 < asked + 122_000,
                "{asked} -> {}",
                d.at.0
            );
            assert_eq!(d.spacing, 0);
            let apart = d.at.0 - w[0].1.at.0;
            assert!(apart == 0 || apart == 122_000, "{apart}");
            together += usize::from(apart == 0);
        }
        let share = together as f64 / 1219.0;
        assert!((share - (1.0 - 70.0 / 122.0)).abs() < 0.01, "{share}");
        // Without a tick the law's time and gap go through unchanged.
        let d = departure(5_070_000, 70_000, None);
        assert_eq!((d.at.0, d.spacing), (5_070_000, 70_000));
    }
}
