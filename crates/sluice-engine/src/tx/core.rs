//! [`TxCore`]: what every TX thread does per packet, in one place: how a
//! packet is paced (the pure [`Pacer`] plus the wait strategy, flushing
//! what is queued before any wait), how a send is counted (packets, bytes,
//! late past the threshold, ε into the histogram, the last send time), how
//! a drop and a per-packet sink refusal count, and how counters and ε
//! reach the aggregator without ever blocking the TX thread.

use crate::config::LossDraws;
use crate::live::TimelineReader;
use crate::stats::{CounterSnapshot, SharedCounters, HISTOGRAM_HANDOFF};
use sluice_core::{ErrorHistogram, Fate, Fates, MonoTime, Nanos};
use sluice_pace::{Decision, Pacer, Waiter};
use sluice_sink::{Sink, SinkError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What pacing decided for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send now; ε in ns (0 at top speed).
    Send { eps: i64 },
    /// Later than the drift window: a time violation.
    Drop,
}

impl Verdict {
    /// The verdict of a send or drop decision; None for a wait.
    pub fn of(d: Decision) -> Option<Verdict> {
        match d {
            Decision::Send { eps_ns } => Some(Verdict::Send { eps: eps_ns }),
            Decision::Drop { .. } => Some(Verdict::Drop),
            Decision::WaitUntil(_) => None,
        }
    }
}

/// The settings and shared state one TX thread starts with.
pub(crate) struct TxSetup {
    pub sink: Box<dyn Sink>,
    pub waiter: Box<dyn Waiter + Send>,
    pub pacer: Pacer,
    pub topspeed: bool,
    pub late_threshold: Nanos,
    pub duration: Option<Nanos>,
    /// Capture time of the stream's start: pcap output is stamped
    /// `stamp_base + (send time − start)`.
    pub stamp_base: u64,
    pub counters: Arc<SharedCounters>,
    pub stop: Arc<AtomicBool>,
    /// Where each frame's fate is recorded, for a source that asked.
    pub fates: Option<Arc<Fates>>,
    /// `--loss`: this thread's draws.
    pub loss: Option<LossDraws>,
    /// The live rate timeline due times are read through.
    pub timeline: Option<TimelineReader>,
    /// How long before a deadline the waiter spins.
    pub spin: Nanos,
    /// `--eps-log`: this thread's recorder.
    pub eps_log: Option<crate::epslog::EpsRecorder>,
}

/// What a TX thread reports when it ends.
pub(crate) struct TxReport {
    pub totals: CounterSnapshot,
    pub last_send: MonoTime,
    pub sink: String,
    pub tx_path: Option<&'static str>,
    /// How the sink's frames reached its buffers (sinks that keep frames).
    pub copies: Option<sluice_sink::Copies>,
    pub error: Option<SinkError>,
    /// The finished sink, for the run to settle once every thread, the
    /// source and the helpers have ended (taken by [`crate::run`]).
    pub output: Option<Box<dyn Sink>>,
}

/// How far a chain of spaced packets may fall behind its own spacings
/// before the packets after catch up (see [`TxCore::keep_spacing`]), ns.
pub(crate) const STALL_NS: u64 = 10_000;
/// Most a spacing is shortened by to catch up, ns: each shortened gap is
/// an error of that size.
pub(crate) const MAX_CATCH_UP_NS: u64 = 2_000;
/// Most a chain is ever behind, ns: a longer stall's excess is given up,
/// so one stall shortens at most (this − STALL_NS) / MAX_CATCH_UP_NS
/// gaps.
pub(crate) const MAX_CHAIN_LATE_NS: u64 = 50_000;

/// Pacing, sending and counting of one TX thread.
pub(crate) struct TxCore {
    pub sink: Box<dyn Sink>,
    pub waiter: Box<dyn Waiter + Send>,
    pub pacer: Pacer,
    pub topspeed: bool,
    late_threshold: Nanos,
    duration: Option<Nanos>,
    stamp_base: u64,
    counters: Arc<SharedCounters>,
    stop: Arc<AtomicBool>,
    fates: Option<Arc<Fates>>,
    loss: Option<LossDraws>,
    timeline: Option<TimelineReader>,
    /// How long before a deadline the waiter spins.
    pub spin: Nanos,
    /// The run's duration is over for this thread (on a live timeline:
    /// its next packet is due after it).
    ended: bool,
    pub c: CounterSnapshot,
    hist: ErrorHistogram,
    eps_log: Option<crate::epslog::EpsRecorder>,
    /// The clock as last read.
    pub now: MonoTime,
    last_send: MonoTime,
    /// When the last packet was let go (its pacing decision): chained
    /// gaps count from here.
    pub last_departure: MonoTime,
    /// Where the last packet would have left had every spacing of its
    /// chain been kept from the chain's first departure (a packet without
    /// a spacing starts a chain where it leaves), as an offset; the last
    /// departure is at most MAX_CHAIN_LATE_NS behind it.
    chain_at: u64,
    /// The spacing of the packet being paced now.
    pending_spacing: u32,
    last_handoff: MonoTime,
    /// The first fatal sink error; the thread stops on it.
    pub error: Option<SinkError>,
}

impl TxCore {
    pub fn new(s: TxSetup) -> Self {
        let start = s.pacer.start();
        TxCore {
            now: s.waiter.now(),
            sink: s.sink,
            waiter: s.waiter,
            pacer: s.pacer,
            topspeed: s.topspeed,
            late_threshold: s.late_threshold,
            duration: s.duration,
            stamp_base: s.stamp_base,
            counters: s.counters,
            stop: s.stop,
            fates: s.fates,
            loss: s.loss,
            timeline: s.timeline,
            spin: s.spin,
            ended: false,
            c: CounterSnapshot::default(),
            hist: ErrorHistogram::new(),
            eps_log: s.eps_log,
            last_send: start,
            last_departure: start,
            chain_at: 0,
            pending_spacing: 0,
            last_handoff: start,
            error: None,
        }
    }

    /// A top-speed run has no schedule, yet it starts when the run does
    /// (`--start-at`, shared by every worker of a distributed job): the
    /// first frame waits for the start, a paced one for its due time.
    pub fn hold_until_start(&mut self) {
        let start = self.pacer.start();
        if self.topspeed && self.now < start {
            let stop = self.stop.clone();
            self.now = self
                .waiter
                .wait_until(start, &|| stop.load(Ordering::Relaxed));
        }
    }

    /// The run's stop flag (a signal, or another thread's fatal error).
    #[inline(always)]
    pub fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// True once the run's duration is over. A top-speed run ends on the
    /// clock. A paced run ends when its frames do: the producers hand over
    /// no frame due at or after the duration, so every frame due before it
    /// is sent, however late the sender runs (a loaded machine, the last
    /// frames of a distributed share); the clock only ends a paced run
    /// that has not ended by twice its duration and a second (a source
    /// that went quiet), and a paused live timeline ([`Self::past_end`]).
    #[inline(always)]
    pub fn past_duration(&self) -> bool {
        self.ended
            || self.duration.is_some_and(|d| {
                let late = if self.topspeed {
                    Nanos(0)
                } else {
                    d.max(Nanos::from_secs(1))
                };
                self.now.since(self.pacer.start()) >= Nanos(d.0.saturating_add(late.0))
            })
    }

    /// True once the clock is past the run's duration.
    #[inline(always)]
    pub fn past_end(&self) -> bool {
        self.ended
            || self
                .duration
                .is_some_and(|d| self.now.since(self.pacer.start()) >= d)
    }

    /// True when waits are cut short to see changes: a live timeline on
    /// a real clock.
    #[inline(always)]
    pub fn rereads(&self) -> bool {
        self.timeline.as_ref().is_some_and(|t| t.real_clock)
    }

    /// True while a live timeline is paused.
    #[inline(always)]
    pub fn paused(&self) -> bool {
        self.timeline.as_ref().is_some_and(TimelineReader::paused)
    }

    /// The real due offset of a packet planned at `due` that keeps
    /// `spacing` after the last departure (see [`keep_spacing`]); None
    /// while the timeline does not reach it (paused) or, on a live
    /// timeline, when it is due after the run's duration (the thread
    /// ends).
    ///
    /// [`keep_spacing`]: Self::keep_spacing
    #[inline(always)]
    pub fn timed(&mut self, due: Nanos, spacing: u32) -> Option<Nanos> {
        let Some(t) = &self.timeline else {
            return Some(self.keep_spacing(due, spacing));
        };
        let Some(real) = t.real(due) else {
            // On a virtual clock nothing will change the timeline.
            self.ended |= !t.real_clock;
            return None;
        };
        if self.duration.is_some_and(|d| real > d) {
            self.ended = true;
            return None;
        }
        // A spacing is planned time: it shrinks as the rate grows.
        let spacing = if spacing == 0 {
            0
        } else {
            let s = t.scale_at(real);
            if s > 0.0 {
                (f64::from(spacing) / s).min(f64::from(u32::MAX)) as u32
            } else {
                spacing
            }
        };
        Some(self.keep_spacing(real, spacing))
    }

    /// The real due offset of a packet planned at `due` (None: not
    /// reached yet).
    #[inline(always)]
    pub fn real(&self, due: Nanos) -> Option<Nanos> {
        match &self.timeline {
            None => Some(due),
            Some(t) => t.real(due),
        }
    }

    /// The absolute deadline of a packet planned at `due` (the end of
    /// time while it is not reached).
    #[inline(always)]
    pub fn deadline_of(&self, due: Nanos) -> MonoTime {
        self.real(due)
            .map_or(MonoTime(u64::MAX), |r| self.pacer.deadline(r))
    }

    /// True when this thread should stop: a fatal sink error, a stop, or
    /// the end of the run's duration.
    #[inline(always)]
    pub fn stopping(&self) -> bool {
        self.error.is_some() || self.interrupted() || self.past_duration()
    }

    /// The due offset of a packet planned at `due` that must also leave
    /// `spacing` ns after the last departure (0: no such constraint).
    ///
    /// Packets chained by their spacings keep them from the chain's first
    /// departure, not from their own plans: how late that first one left
    /// (a pipeline's delay between planning and sending) moves the chain
    /// and never shortens a gap. A spacing is kept whole while the chain
    /// is at most [`STALL_NS`] behind; past that (a stall inside the
    /// chain: a VM pause, a preempted thread) it gives up what the
    /// lateness exceeds the stall by, at most a tenth of itself and
    /// [`MAX_CATCH_UP_NS`], so the chain catches up over the packets that
    /// follow, never in a burst.
    #[inline(always)]
    pub fn keep_spacing(&mut self, due: Nanos, spacing: u32) -> Nanos {
        self.pending_spacing = spacing;
        if spacing == 0 {
            return due;
        }
        let left = self.last_departure.since(self.pacer.start()).0;
        let give = left
            .saturating_sub(self.chain_at)
            .saturating_sub(STALL_NS)
            .min(u64::from(spacing / 10))
            .min(MAX_CATCH_UP_NS);
        due.max(Nanos(left + u64::from(spacing) - give))
    }

    /// The packet being paced left now.
    #[inline(always)]
    pub fn departed(&mut self) {
        self.last_departure = self.now;
        let left = self.now.since(self.pacer.start()).0;
        self.chain_at = match self.pending_spacing {
            0 => left,
            s => self.chain_at + u64::from(s),
        };
        // What a long stall took beyond MAX_CHAIN_LATE_NS is given up, not
        // caught up: catching it up would shorten that many more gaps.
        self.chain_at = self.chain_at.max(left.saturating_sub(MAX_CHAIN_LATE_NS));
    }

    /// The planned offset due now (on a live timeline: the nominal time
    /// reached).
    pub fn due_now(&self) -> Nanos {
        let real = Nanos(self.now.since(self.pacer.start()).0);
        match &self.timeline {
            None => real,
            Some(t) => t.nominal(real),
        }
    }

    /// Waits until `t` (or a stop) and reads the clock.
    pub fn wait_until(&mut self, t: MonoTime) {
        let stop = &self.stop;
        self.now = self.waiter.wait_until(t, &|| stop.load(Ordering::Relaxed));
    }

    /// The capture stamp of a packet sent now.
    #[inline(always)]
    pub fn stamp(&self) -> u64 {
        self.stamp_base
            .wrapping_add(self.now.since(self.pacer.start()).0)
    }

    /// `--loss`: whether the frame about to leave is dropped on purpose
    /// (counted; it is not sent, and not in `packets`).
    #[inline(always)]
    pub fn lose(&mut self) -> bool {
        // Without --loss: one test of a field, no write.
        self.loss.is_some() && self.draw_loss()
    }

    /// `--loss`'s draw for the frame about to leave, counted when it is
    /// dropped.
    #[inline(never)]
    fn draw_loss(&mut self) -> bool {
        let lost = self.loss.as_mut().is_some_and(LossDraws::drop_next);
        self.c.loss_dropped += u64::from(lost);
        lost
    }

    /// Counts a packet of `bytes` sent with send-time error `eps`; returns
    /// whether it was late.
    #[inline(always)]
    pub fn sent(&mut self, eps: i64, bytes: usize) -> bool {
        if self.fates.is_some() {
            self.depart();
        }
        self.c.packets += 1;
        self.c.bytes += bytes as u64;
        if self.topspeed {
            return false;
        }
        self.hist.record(eps);
        if let Some(log) = self.eps_log.as_mut() {
            log.record(self.now.since(self.pacer.start()).0, eps);
        }
        let late = eps > self.late_threshold.0 as i64;
        if late {
            self.c.late += 1;
        }
        self.last_send = self.now;
        self.now = self.waiter.now();
        late
    }

    /// Puts the frame just handed to the sink on the wire and records when:
    /// a departure acknowledged to a client must be the frame's, not the
    /// time it was queued (a queued frame leaves only at the next flush,
    /// which a backlog or a preemption can put far later).
    #[inline(never)]
    fn depart(&mut self) {
        let at = self.waiter.now();
        self.flush();
        if let Some(d) = &self.fates {
            d.record(Fate::Sent(at.since(self.pacer.start())));
        }
    }

    /// Counts a packet dropped as a time violation.
    #[inline(always)]
    pub fn dropped(&mut self) {
        if let Some(d) = &self.fates {
            d.record(Fate::Dropped);
        }
        self.c.dropped += 1;
        self.now = self.waiter.now();
    }

    /// Counts a per-packet sink refusal (too long or too short for the
    /// link), or keeps a fatal error (the thread stops). Returns true when
    /// fatal.
    pub fn failed(&mut self, err: SinkError) -> bool {
        if let (Some(d), SinkError::Oversize { .. } | SinkError::TooShort { .. }) =
            (&self.fates, &err)
        {
            d.record(Fate::Refused);
        }
        match err {
            SinkError::Oversize { .. } => self.c.oversize += 1,
            SinkError::TooShort { .. } => self.c.too_short += 1,
            err => {
                self.error.get_or_insert(err);
                return true;
            }
        }
        false
    }

    /// Hands everything queued to the OS; a failure is kept as fatal.
    pub fn flush(&mut self) {
        if let Err(e) = self.sink.flush() {
            self.error.get_or_insert(e);
        }
    }

    /// Publishes the counters and, every [`HISTOGRAM_HANDOFF`], hands ε
    /// over (never waiting for the aggregator: if it is reading, next
    /// time).
    #[inline]
    pub fn publish(&mut self) {
        self.c.rejected = self.sink.rejected();
        self.counters.publish(&self.handed_over());
        if self.now.since(self.last_handoff) >= HISTOGRAM_HANDOFF
            && self.counters.eps.offer(&mut self.hist)
        {
            self.last_handoff = self.now;
        }
    }

    /// The counters as the OS saw them: packets still queued in the sink
    /// (a batch not yet flushed, or never flushed because the run failed)
    /// and packets the kernel refused once queued are not sent.
    fn handed_over(&self) -> CounterSnapshot {
        let (unsent, unsent_bytes) = self.sink.unsent();
        let mut c = self.c;
        c.packets = c.packets.saturating_sub(unsent + c.rejected);
        c.bytes = c.bytes.saturating_sub(unsent_bytes);
        c
    }

    /// Finishes the sink and hands the last counters and ε over.
    pub fn finish(mut self) -> TxReport {
        // Stopped (a signal, another thread's failure) or failed: a file
        // output replaces nothing that existed.
        let complete = self.error.is_none() && !self.stop.load(Ordering::Relaxed);
        let finished = if complete {
            self.sink.finish()
        } else {
            self.sink.finish_incomplete()
        };
        if let Err(e) = finished {
            self.error.get_or_insert(e);
        }
        if self.topspeed {
            // At top speed the last frame has left once the sink is finished.
            self.last_send = self.waiter.now();
        }
        self.c.rejected = self.sink.rejected();
        self.c = self.handed_over();
        self.counters.publish(&self.c);
        self.counters.eps.finish(self.hist);
        if let Some(mut log) = self.eps_log.take() {
            log.hand_over(true);
        }
        TxReport {
            totals: self.c,
            last_send: self.last_send,
            sink: self.sink.describe(),
            tx_path: self.sink.tx_path(),
            copies: self.sink.copies(),
            error: self.error,
            output: Some(self.sink),
        }
    }
}
