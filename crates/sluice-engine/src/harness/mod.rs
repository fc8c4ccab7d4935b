//! The engine on a bench, in microseconds and without the binary: a
//! scripted source, recording sinks and the virtual clock.
//!
//! - [`Script`] pushes the packets it was given (frame, due, gap, port, flow
//!   key), pass after pass, and can fail at a packet or ask for fates.
//! - [`Recorder`] keeps every frame a TX thread sent with its stamp, port
//!   and the virtual time it was handed over; it can cost virtual time per
//!   frame (a slow link), stall once, refuse oversize frames, fail, or stop
//!   the run.
//! - [`Bench`] runs them through the real engine (`run_parts_on`: IO
//!   thread, outbox, TX threads, pacer, aggregator) on a virtual clock the
//!   recorders move, so lateness and drops happen on cue and every
//!   assertion is exact.

mod failures;
mod fates;
mod live;
mod ordering;
mod parts;
mod passes;
mod timing;

use crate::ClockChoice;
use crate::{batch::run_parts_on, EngineConfig, EngineError, IntervalStats, Observer, Summary};
use sluice_core::{Clock, Due, MonoTime, MonotonicClock, Nanos, VirtualClock};
use sluice_sink::{Sink, SinkError};
use sluice_source::{End, Fates, Origin, Outbox, RunContext, Source, SourceError, SourceReport};
use std::sync::{Arc, Mutex};

/// One scripted packet.
#[derive(Clone, Debug)]
pub struct Step {
    pub frame: Vec<u8>,
    pub due: Due,
    /// Flow key: packets with one key keep one lane.
    pub flow: u64,
}

/// A 64-byte frame carrying `seq` in its first 8 bytes.
pub fn frame(seq: u64) -> Vec<u8> {
    let mut f = seq.to_be_bytes().to_vec();
    f.resize(64, 0xab);
    f
}

/// The sequence number of a [`frame`].
pub fn seq(f: &[u8]) -> u64 {
    u64::from_be_bytes(f[..8].try_into().expect("8 bytes"))
}

/// `n` packets `gap_ns` apart from `first_ns`, one flow each of `flows`.
pub fn steady(n: u64, first_ns: u64, gap_ns: u64, flows: u64) -> Vec<Step> {
    (0..n)
        .map(|i| Step {
            frame: frame(i),
            due: Due::at(Nanos(first_ns + i * gap_ns)),
            flow: i % flows.max(1),
        })
        .collect()
}

/// What the [`Script`] saw of its run.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub begun: Option<(Option<MonoTime>, usize, bool)>,
    pub fills: u64,
    pub fates: Option<Arc<Fates>>,
    /// The duration the run told it to end itself at.
    pub duration: Option<Nanos>,
}

/// A source that pushes its steps, pass after pass.
pub struct Script {
    pub steps: Vec<Step>,
    pub origin: Origin,
    /// Passes the source has (rewind succeeds until then).
    pub passes: u64,
    /// Length of one pass, for preloading (None: no passes).
    pub period: Option<f64>,
    /// Fail with this error before pushing step `.0` of the first pass.
    pub fail_at: Option<(usize, fn() -> SourceError)>,
    pub fates: bool,
    pub first_ts: Option<u64>,
    pub report: SourceReport,
    pub seen: Arc<Mutex<Seen>>,
    pass: u64,
    shift: u64,
}

impl Script {
    pub fn new(steps: Vec<Step>) -> Self {
        Script {
            steps,
            origin: Origin::Memory,
            passes: 1,
            period: None,
            fail_at: None,
            fates: false,
            first_ts: None,
            report: SourceReport::default(),
            seen: Arc::default(),
            pass: 0,
            shift: 0,
        }
    }

    /// The same steps `passes` times, each pass `period_ns` after the last.
    pub fn passes(mut self, passes: u64, period_ns: u64) -> Self {
        self.passes = passes;
        self.period = Some(period_ns as f64);
        self
    }
}

impl Source for Script {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        self.seen.lock().expect("seen").fills += 1;
        if let Some(ts) = self.first_ts {
            out.set_first_ts(ts);
        }
        for (k, s) in self.steps.iter().enumerate() {
            if let Some((at, err)) = self.fail_at {
                if self.pass == 0 && k == at {
                    out.finish();
                    return Err(err());
                }
            }
            let lane = out.lane(|| s.flow);
            let due = Due {
                at: Nanos(s.due.at.0 + self.shift),
                ..s.due
            };
            if !out.push(lane, due, |b| b.extend_from_slice(&s.frame)) {
                return Ok(End::Done);
            }
        }
        out.finish();
        Ok(if self.period.is_some() {
            End::Pass
        } else {
            End::Done
        })
    }

    fn rewind(&mut self) -> Result<bool, SourceError> {
        self.pass += 1;
        self.shift = self.pass * self.period.unwrap_or(0.0) as u64;
        Ok(self.passes == 0 || self.pass < self.passes)
    }

    fn pass_period(&self) -> Option<f64> {
        self.period
    }

    fn origin(&self) -> Origin {
        self.origin
    }

    fn wants_fates(&self) -> bool {
        self.fates
    }

    fn begin(&mut self, cx: &RunContext) {
        let mut seen = self.seen.lock().expect("seen");
        seen.begun = Some((cx.start, cx.lanes, cx.fates.is_some()));
        seen.fates = cx.fates.clone();
        seen.duration = cx.duration;
    }

    fn report(&self) -> SourceReport {
        self.report.clone()
    }
}

/// One frame a [`Recorder`] took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub seq: u64,
    pub len: usize,
    pub port: u8,
    /// The stamp the engine gave it (ns: stamp base + offset from start).
    pub stamp: u64,
    /// Virtual time when it was handed over.
    pub at: u64,
}

/// A sink that records what it is sent (see the module docs).
pub struct Recorder {
    pub sent: Arc<Mutex<Vec<Sent>>>,
    pub clock: VirtualClock,
    /// Virtual time each frame costs.
    pub cost: Nanos,
    /// Stall this long on frame `.0` (counted from 0), once.
    pub stall: Option<(usize, Nanos)>,
    /// Frames longer than this are refused (as oversize, skipped).
    pub mtu: Option<usize>,
    /// Fail fatally on frame `.0`.
    pub fail_at: Option<usize>,
    /// Set `.1` (the run's stop flag) after frame `.0`.
    pub stop_after: Option<(usize, Arc<std::sync::atomic::AtomicBool>)>,
    pub flushes: Arc<Mutex<u64>>,
    pub name: String,
}

impl Recorder {
    pub fn new(clock: &VirtualClock, name: &str) -> Self {
        Recorder {
            sent: Arc::default(),
            clock: clock.clone(),
            cost: Nanos(0),
            stall: None,
            mtu: None,
            fail_at: None,
            stop_after: None,
            flushes: Arc::default(),
            name: name.into(),
        }
    }
}

impl Sink for Recorder {
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send_on(0, frame, stamp_ns)
    }

    fn send_on(&mut self, port: u8, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        let k = self.sent.lock().expect("sent").len();
        if self.fail_at == Some(k) {
            return Err(SinkError::Config(format!(
                "{}: failed on purpose",
                self.name
            )));
        }
        if let Some(limit) = self.mtu.filter(|&m| frame.len() > m) {
            return Err(SinkError::Oversize {
                len: frame.len(),
                limit,
            });
        }
        if let Some((at, d)) = self.stall {
            if at == k {
                self.clock.advance(d);
                self.stall = None;
            }
        }
        self.clock.advance(self.cost);
        self.sent.lock().expect("sent").push(Sent {
            seq: seq(frame),
            len: frame.len(),
            port,
            stamp: stamp_ns,
            at: self.clock.now().0,
        });
        if let Some((after, stop)) = &self.stop_after {
            if k + 1 >= *after {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        *self.flushes.lock().expect("flushes") += 1;
        Ok(())
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

/// Intervals the aggregator reported.
#[derive(Default)]
pub struct Intervals(pub Vec<IntervalStats>);

impl Observer for Intervals {
    fn interval(&mut self, s: &IntervalStats) {
        self.0.push(s.clone());
    }
}

/// A run on the bench: a config on the virtual clock and one recorder per
/// TX thread, all moving the same clock.
pub struct Bench {
    pub cfg: EngineConfig,
    pub clock: VirtualClock,
    pub sinks: Vec<Recorder>,
}

/// What a bench run gave.
pub struct Outcome {
    pub result: Result<Summary, EngineError>,
    /// What each TX thread's recorder took, in order.
    pub sent: Vec<Vec<Sent>>,
    pub intervals: Vec<IntervalStats>,
}

impl Outcome {
    pub fn summary(&self) -> &Summary {
        match &self.result {
            Ok(s) => s,
            Err(e) => panic!("the run failed: {e}"),
        }
    }

    /// Sequence numbers of every thread's frames, thread by thread.
    pub fn seqs(&self) -> Vec<Vec<u64>> {
        self.sent
            .iter()
            .map(|t| t.iter().map(|s| s.seq).collect())
            .collect()
    }
}

impl Bench {
    /// `threads` TX threads on a virtual clock, pacing (not top speed).
    pub fn new(threads: usize) -> Self {
        let clock = VirtualClock::new(MonoTime(0));
        let sinks = (0..threads.max(1))
            .map(|i| Recorder::new(&clock, &format!("rec{i}")))
            .collect();
        Bench {
            cfg: EngineConfig {
                clock: ClockChoice::Virtual,
                // The recorders move the clock every thread waits on.
                shared_virtual_clock: true,
                stats_interval: Nanos::from_millis(1),
                ..EngineConfig::default()
            },
            clock,
            sinks,
        }
    }

    pub fn run(self, source: impl Source + 'static) -> Outcome {
        self.run_parts(vec![Box::new(source)])
    }

    /// A stream given in parts, one planner thread each ([`crate::run_sources`]).
    pub fn run_parts(self, sources: Vec<Box<dyn Source>>) -> Outcome {
        let sent: Vec<_> = self.sinks.iter().map(|s| s.sent.clone()).collect();
        let sinks: Vec<Box<dyn Sink>> = self
            .sinks
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn Sink>)
            .collect();
        let mut obs = Intervals::default();
        let clocks = (MonotonicClock::new(), self.clock);
        let result = run_parts_on(sources, sinks, &self.cfg, &mut obs, clocks);
        Outcome {
            result,
            sent: sent
                .iter()
                .map(|s| s.lock().expect("sent").clone())
                .collect(),
            intervals: obs.0,
        }
    }
}
