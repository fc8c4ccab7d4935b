//! Live rate control: a run's [`Timeline`] shared between whoever changes
//! it (a service, the command line's `--ramp`) and the TX threads that
//! read it.
//!
//! A change takes effect at a planned instant: [`CHANGE_LEAD`] from now
//! at the earliest, so that every TX thread, which looks at the timeline
//! at least every [`REREAD`] while it waits, has seen it by then. Due
//! times are solved from the timeline's anchors (see `sluice_pace::
//! timeline`), so a change neither drifts the schedule nor moves a packet
//! due before it.

use sluice_core::{MonoTime, Nanos};
use sluice_pace::{Change, ChangeError, Line, Timeline};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The earliest a change takes effect after it is asked for.
pub const CHANGE_LEAD: Nanos = Nanos::from_millis(2);
/// Pieces of the timeline that ended this long ago are forgotten.
const FORGET_AFTER: Nanos = Nanos::from_secs(10);
/// The longest a waiting TX thread goes without looking at the timeline
/// (half the lead: a change is seen before its instant).
pub(crate) const REREAD: Nanos = Nanos::from_millis(1);

/// The clock of a run that began: its start and a reading of its now.
struct Began {
    start: MonoTime,
    now: Box<dyn Fn() -> MonoTime + Send + Sync>,
}

/// A run's rate timeline, changeable while it runs.
pub struct LiveRate {
    /// Bumped (after the timeline is replaced) at every change.
    epoch: AtomicU64,
    timeline: Mutex<Arc<Timeline>>,
    /// Mirrors the timeline's pause, for a top-speed run (no due times).
    paused: AtomicBool,
    /// Every due time moved by this (ns, later when positive): a clock
    /// correction (a worker's clock found drifting from its controller's).
    shift: AtomicI64,
    began: OnceLock<Began>,
}

impl std::fmt::Debug for LiveRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRate")
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .field("paused", &self.paused())
            .finish_non_exhaustive()
    }
}

/// Where a change took effect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Applied {
    /// Offset from the run's start (0 before the run began).
    pub at: Nanos,
    /// The rate scale from then on (while paused: the one a resume
    /// goes back to).
    pub scale: f64,
    pub paused: bool,
}

impl LiveRate {
    pub fn new(timeline: Timeline) -> Arc<LiveRate> {
        Arc::new(LiveRate {
            epoch: AtomicU64::new(0),
            paused: AtomicBool::new(timeline.paused()),
            shift: AtomicI64::new(0),
            timeline: Mutex::new(Arc::new(timeline)),
            began: OnceLock::new(),
        })
    }

    /// The time since the run's start; None before it began.
    pub fn elapsed(&self) -> Option<Nanos> {
        let b = self.began.get()?;
        Some((b.now)().since(b.start))
    }

    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// The timeline as it stands.
    pub fn timeline(&self) -> Arc<Timeline> {
        self.timeline
            .lock()
            .map(|t| t.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// The scale from the earliest instant a change could take effect
    /// (so a change just made shows; while paused: the scale a resume
    /// goes back to).
    pub fn scale(&self) -> f64 {
        let t = self.timeline();
        let soon = self.elapsed().map_or(0, |e| (e + CHANGE_LEAD).0);
        t.resumes_to().unwrap_or_else(|| t.scale_at(soon))
    }

    /// Applies `change` at the offset `at` from the start, or as soon as
    /// it can ([`CHANGE_LEAD`] from now at the earliest; at the start
    /// before the run began).
    pub fn change(&self, change: Change, at: Option<Nanos>) -> Result<Applied, ChangeError> {
        let earliest = self.elapsed().map_or(0, |e| (e + CHANGE_LEAD).0);
        let at = at.map_or(earliest, |a| a.0.max(earliest));
        let mut guard = self.timeline.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = (**guard).clone();
        next.change(at, change)?;
        // What ended a while ago no TX thread still asks about.
        next.forget_before(earliest.saturating_sub(FORGET_AFTER.0));
        let applied = Applied {
            at: Nanos(at),
            scale: next.resumes_to().unwrap_or_else(|| next.scale_at(at)),
            paused: next.paused(),
        };
        self.paused.store(next.paused(), Ordering::Relaxed);
        *guard = Arc::new(next);
        self.epoch.fetch_add(1, Ordering::Release);
        Ok(applied)
    }

    /// Moves every due time from now on by `ns` in all (later when
    /// positive; not added to earlier shifts): a clock correction. A
    /// packet moved into the past is due at once.
    pub fn set_shift(&self, ns: i64) {
        self.shift.store(ns, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// The shift in force ([`set_shift`](Self::set_shift)).
    pub fn shift(&self) -> i64 {
        self.shift.load(Ordering::Relaxed)
    }

    /// The run began at `start` on the clock `now` reads.
    pub(crate) fn begin(&self, start: MonoTime, now: Box<dyn Fn() -> MonoTime + Send + Sync>) {
        let _ = self.began.set(Began { start, now });
    }

    /// A TX thread's view; `real_clock`: the run's clock moves on its own
    /// (a change may come while the thread waits).
    pub(crate) fn reader(self: &Arc<Self>, real_clock: bool) -> TimelineReader {
        TimelineReader {
            real_clock,
            epoch: Cell::new(self.epoch.load(Ordering::Acquire)),
            current: RefCell::new(self.timeline()),
            hint: Cell::new(0),
            line: Cell::new(Line::NONE),
            identity: Cell::new(self.timeline().is_identity() && self.shift() == 0),
            shift: Cell::new(self.shift()),
            live: self.clone(),
        }
    }
}

/// One TX thread's copy of the timeline, refreshed when it changed.
pub(crate) struct TimelineReader {
    /// On a real clock waits are cut to [`REREAD`]; on a virtual one the
    /// timeline is all known before the run, and a packet it never
    /// reaches ends the thread.
    pub real_clock: bool,
    live: Arc<LiveRate>,
    epoch: Cell<u64>,
    current: RefCell<Arc<Timeline>>,
    hint: Cell<usize>,
    /// The straight stretch the last due time fell on: the next ones
    /// there cost one multiply-add.
    line: Cell<Line>,
    /// Nothing changed yet: due times are the planned ones.
    identity: Cell<bool>,
    /// [`LiveRate::set_shift`]'s, as of `epoch`.
    shift: Cell<i64>,
}

impl TimelineReader {
    #[inline(always)]
    fn fresh(&self) {
        let e = self.live.epoch.load(Ordering::Acquire);
        if e != self.epoch.get() {
            self.refresh(e);
        }
    }

    #[cold]
    fn refresh(&self, e: u64) {
        let t = self.live.timeline();
        let shift = self.live.shift();
        self.shift.set(shift);
        self.identity.set(t.is_identity() && shift == 0);
        *self.current.borrow_mut() = t;
        self.epoch.set(e);
        self.hint.set(0);
        self.line.set(Line::NONE);
    }

    /// The real due offset of a packet planned at `due`; None while it is
    /// not reached (paused).
    #[inline]
    pub fn real(&self, due: Nanos) -> Option<Nanos> {
        self.fresh();
        if self.identity.get() {
            return Some(due);
        }
        let r = match self.line.get().real(due.0) {
            Some(r) => Nanos(r),
            None => self.real_slow(due)?,
        };
        Some(self.shifted(r))
    }

    #[inline(always)]
    fn shifted(&self, r: Nanos) -> Nanos {
        match self.shift.get() {
            0 => r,
            s => Nanos(r.0.saturating_add_signed(s)),
        }
    }

    #[inline(never)]
    fn real_slow(&self, due: Nanos) -> Option<Nanos> {
        let t = self.current.borrow();
        let mut hint = self.hint.get();
        // On a straight stretch: keep it for the due times that follow.
        let line = t.line_at(due.0, &mut hint);
        self.line.set(line.unwrap_or(Line::NONE));
        let r = match line {
            Some(l) => l.real(due.0),
            None => t.real_of(due.0, &mut hint),
        };
        self.hint.set(hint);
        r.map(Nanos)
    }

    /// The nominal time reached at real offset `t`.
    pub fn nominal(&self, t: Nanos) -> Nanos {
        self.fresh();
        let t = t.0.saturating_add_signed(-self.shift.get());
        Nanos(self.current.borrow().nominal_at(t).max(0.0) as u64)
    }

    /// The scale at real offset `t`.
    pub fn scale_at(&self, t: Nanos) -> f64 {
        self.fresh();
        self.current.borrow().scale_at(t.0)
    }

    /// True while paused (a top-speed run holds its units).
    #[inline(always)]
    pub fn paused(&self) -> bool {
        self.live.paused()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_moves_every_due_time_later_or_earlier_and_none_below_zero() {
        let live = LiveRate::new(Timeline::constant(1.0));
        let r = live.reader(true);
        assert_eq!(r.real(Nanos(1_000)), Some(Nanos(1_000)));
        live.set_shift(300);
        assert_eq!(r.real(Nanos(1_000)), Some(Nanos(1_300)));
        assert_eq!(r.nominal(Nanos(1_300)), Nanos(1_000));
        // Not cumulative: the shift in all.
        live.set_shift(-400);
        assert_eq!(r.real(Nanos(1_000)), Some(Nanos(600)));
        assert_eq!(r.real(Nanos(100)), Some(Nanos(0)));
        // With a rate change too.
        live.change(Change::Scale(2.0), None).unwrap();
        assert_eq!(r.real(Nanos(2_000)), Some(Nanos(600)));
        live.set_shift(0);
        assert_eq!(r.real(Nanos(2_000)), Some(Nanos(1_000)));
    }

    #[test]
    fn before_the_run_a_change_applies_from_the_start() {
        let live = LiveRate::new(Timeline::constant(1.0));
        let a = live.change(Change::Scale(2.0), None).unwrap();
        assert_eq!(a.at, Nanos(0));
        let r = live.reader(true);
        assert_eq!(r.real(Nanos(1_000)), Some(Nanos(500)));
    }

    #[test]
    fn a_change_during_the_run_is_planned_ahead_and_seen_by_readers() {
        let live = LiveRate::new(Timeline::constant(1.0));
        let now = Arc::new(AtomicU64::new(5_000_000));
        let n = now.clone();
        live.begin(
            MonoTime(1_000_000),
            Box::new(move || MonoTime(n.load(Ordering::Relaxed))),
        );
        let r = live.reader(true);
        assert_eq!(r.real(Nanos(10_000_000)), Some(Nanos(10_000_000)));
        let a = live.change(Change::Pause, None).unwrap();
        // 4 ms into the run, 2 ms ahead.
        assert_eq!(a.at, Nanos(6_000_000));
        assert!(a.paused && live.paused());
        assert_eq!(r.real(Nanos(5_999_999)), Some(Nanos(5_999_999)));
        assert_eq!(r.real(Nanos(10_000_000)), None);
        now.store(20_000_000, Ordering::Relaxed);
        let b = live
            .change(Change::Resume, Some(Nanos(25_000_000)))
            .unwrap();
        assert_eq!(b.at, Nanos(25_000_000));
        assert_eq!(r.real(Nanos(10_000_000)), Some(Nanos(29_000_000)));
        // A refused change leaves the timeline alone.
        assert!(live.change(Change::Scale(-2.0), None).is_err());
        assert_eq!(r.real(Nanos(10_000_000)), Some(Nanos(29_000_000)));
    }
}
