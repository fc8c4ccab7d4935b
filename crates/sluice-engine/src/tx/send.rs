//! The one TX loop: every source's packets are paced, built and sent here.
//!
//! A TX thread takes [`Unit`]s (packets in due order) from its [`Feed`]
//! and, for each packet: sends first the feed's side packets due no later
//! (time-series out-of-order records), stops if the run is stopping, paces
//! it with the [`TxCore`] (waiting, and with a [`Board`] rescuing other
//! threads' overdue packets while it waits), then has the feed build and
//! send it. What differs between pipelines is only the feed: where units
//! come from, how a packet's bytes are built (copied from a batch of built
//! frames, or written from a per-flow template in front of a record), and
//! what it counts besides the core's counters.

use super::board::Board;
use super::core::{TxCore, TxReport, Verdict};
use super::unit::Unit;
use crate::live::REREAD;
use sluice_core::{MonoTime, Nanos};
use sluice_pace::Decision;
use std::sync::Arc;

/// Longest a rescuing thread waits without looking at the board again (a
/// thread may show a new unit meanwhile).
const REWATCH: Nanos = Nanos::from_micros(20);
/// Pause of a TX thread with nothing queued.
const IDLE_NAP: Nanos = Nanos::from_micros(20);
/// Idle polls (flushing, sending side packets due) before a TX thread naps.
const IDLE_SPINS: u32 = 64;

/// What a feed has next.
pub(crate) enum Next<U> {
    Unit(U),
    /// Nothing yet: more may come.
    Idle,
    /// Nothing more will come.
    Done,
}

/// Where a TX thread's packets come from, and how they are built and sent.
pub(crate) trait Feed {
    type Unit: Unit;
    /// Whether the feed has side packets (they go before any packet due
    /// after them, so every packet's due time matters).
    const SIDE: bool = false;

    /// The next unit. A feed may block here (flushing the core's sink
    /// first), or answer Idle and let the loop poll.
    fn next(&mut self, core: &mut TxCore) -> Next<Self::Unit>;

    /// A unit whose packets have all been claimed, for reuse.
    fn recycle(&mut self, unit: Self::Unit);

    /// Builds and sends packet `i` of `unit`, or drops it, as `verdict`
    /// says; counts it in `core` (and in the feed's own counters).
    fn send(&mut self, core: &mut TxCore, unit: &Self::Unit, i: usize, verdict: Verdict);

    /// Takes in side packets that arrived (they wait in due order).
    fn pull_side(&mut self) {}

    /// Due offset of the earliest side packet waiting.
    fn side_due(&self) -> Option<Nanos> {
        None
    }

    /// Sends (or drops) the earliest side packet.
    fn send_side(&mut self, _core: &mut TxCore, _verdict: Verdict) {}

    /// True when no side packet will arrive any more.
    fn side_done(&self) -> bool {
        true
    }
}

/// One TX thread: its core, its feed, and the rescue board it shares with
/// the other TX threads (None: one thread, no real time, or a pipeline
/// that keeps flows on their thread).
pub(crate) struct TxLoop<F: Feed> {
    pub core: TxCore,
    pub feed: F,
    board: Option<Arc<Board<F::Unit>>>,
    me: usize,
    /// Packets of other threads this one sent (or dropped) for them.
    pub rescued: u64,
}

impl<F: Feed> TxLoop<F> {
    pub fn new(core: TxCore, feed: F, board: Option<Arc<Board<F::Unit>>>, me: usize) -> Self {
        TxLoop {
            core,
            feed,
            board,
            me,
            rescued: 0,
        }
    }

    /// Sends everything the feed has, then finishes the sink. Returns the
    /// report, the feed (with its own counters) and the packets rescued.
    pub fn run(mut self) -> (TxReport, F, u64) {
        self.core.hold_until_start();
        self.main_loop();
        (self.core.finish(), self.feed, self.rescued)
    }

    fn main_loop(&mut self) {
        let mut idle = 0u32;
        loop {
            if self.core.stopping() {
                return;
            }
            let unit = match self.feed.next(&mut self.core) {
                Next::Unit(u) => u,
                Next::Done => break,
                Next::Idle => {
                    // Nothing queued: what is pending leaves, side packets
                    // due by now go, then back off briefly.
                    self.core.flush();
                    let now = self.core.due_now();
                    self.send_side_until(now);
                    idle += 1;
                    if idle > IDLE_SPINS {
                        self.nap();
                    }
                    self.core.now = self.core.waiter.now();
                    continue;
                }
            };
            idle = 0;
            let done = match self.board.clone() {
                Some(board) => self.send_shown(&board, unit),
                None => {
                    self.send_unit(&unit);
                    Some(unit)
                }
            };
            // The unit's last frame leaves now, before the unit goes back
            // to the IO thread (a wake-up) and the next is fetched: left
            // for the next frame's wait to flush, the last frame of every
            // batch left microseconds after its time at low rates.
            if !self.core.topspeed {
                self.core.flush();
            }
            // A unit a rescuer still holds is not recycled.
            if let Some(u) = done {
                self.feed.recycle(u);
            }
            if self.core.topspeed {
                self.core.now = self.core.waiter.now();
            }
            self.core.publish();
        }
        // The units are done; side packets may still be queued.
        while !self.core.stopping() {
            self.feed.pull_side();
            match self.feed.side_due() {
                Some(due) => {
                    self.send_side_until(due);
                    self.core.publish();
                }
                None if self.feed.side_done() => break,
                None => self.nap(),
            }
        }
        // Done, but the others' last units may still need a rescuer.
        if let Some(board) = self.board.clone() {
            while board.others_busy(self.me) && !self.core.stopping() {
                self.nap();
            }
        }
    }

    fn send_unit(&mut self, unit: &F::Unit) {
        if self.core.topspeed && !F::SIDE {
            // At top speed nothing waits: a packet's due time and kept gap
            // decide nothing, and the clock (so the duration) moves once
            // per unit. Only a stop or a failed sink ends the unit early;
            // a pause holds the next unit.
            if self.core.paused() {
                self.hold_paused();
            }
            for i in 0..unit.len() {
                if self.core.error.is_some() || self.core.interrupted() {
                    return;
                }
                self.feed
                    .send(&mut self.core, unit, i, Verdict::Send { eps: 0 });
            }
            return;
        }
        for (i, due) in unit.dues().enumerate() {
            if !self.ready_for(due) {
                return;
            }
            let Some(verdict) = self.pace(due, unit.spacing(i)) else {
                return;
            };
            self.feed.send(&mut self.core, unit, i, verdict);
        }
    }

    /// Sends a unit shown on the board: each packet is claimed before it
    /// goes; packets a rescuer claimed are skipped. Returns the unit unless
    /// a rescuer still holds it.
    fn send_shown(&mut self, board: &Board<F::Unit>, unit: F::Unit) -> Option<F::Unit> {
        let me = self.me;
        if unit.len() == 0 {
            return Some(unit);
        }
        let unit = Arc::new(unit);
        let generation = board.show(me, unit.clone(), self.core.deadline_of(unit.due(0)));
        let mut i = 0;
        while i < unit.len() {
            let due = unit.due(i);
            if !self.ready_for(due) {
                break;
            }
            let Some(verdict) = self.pace(due, 0) else {
                break;
            };
            let next = (i + 1 < unit.len()).then(|| self.core.deadline_of(unit.due(i + 1)));
            match board.claim(me, generation, i, next) {
                Ok(()) => {
                    self.feed.send(&mut self.core, &unit, i, verdict);
                    i += 1;
                }
                Err(unclaimed) => i = unclaimed,
            }
        }
        board.hide(me);
        Arc::try_unwrap(unit).ok()
    }

    /// Before a packet due at `due`: side packets due no later go first.
    /// False when the run is stopping.
    #[inline(always)]
    fn ready_for(&mut self, due: Nanos) -> bool {
        self.feed.pull_side();
        self.send_side_until(due);
        !self.core.stopping()
    }

    /// Sends side packets due no later than `due`.
    fn send_side_until(&mut self, due: Nanos) {
        while let Some(d) = self.feed.side_due() {
            if d > due || self.core.stopping() {
                return;
            }
            let Some(verdict) = self.pace(d, 0) else {
                return;
            };
            self.feed.send_side(&mut self.core, verdict);
        }
    }

    /// Waits until a packet planned at `due` (keeping `spacing` after the
    /// last departure) may leave, then says whether it is sent or
    /// dropped; None when the run stopped, ended or the sink failed
    /// meanwhile. Before any wait, what the sink has queued leaves.
    #[inline(always)]
    fn pace(&mut self, due: Nanos, spacing: u32) -> Option<Verdict> {
        if self.core.topspeed {
            return Some(Verdict::Send { eps: 0 });
        }
        let v = match self.core.timed(due, spacing) {
            Some(at) => match self.core.pacer.poll(at, self.core.now) {
                Decision::WaitUntil(t) => self.pace_after_wait(due, spacing, Some(t)),
                d => Verdict::of(d),
            },
            None if self.core.past_end() => None,
            None => self.pace_after_wait(due, spacing, None),
        };
        if let Some(Verdict::Send { .. }) = v {
            self.core.departed();
        }
        v
    }

    /// [`pace`](Self::pace) once the packet is not due yet: flush, wait
    /// until `t` (None: not reached, a paused timeline), poll again (a
    /// packet waited for is never a violation). On a live timeline no
    /// wait is longer than [`REREAD`]: a change planned [`CHANGE_LEAD`]
    /// ahead is seen before its instant.
    ///
    /// [`CHANGE_LEAD`]: crate::live::CHANGE_LEAD
    #[inline(never)]
    fn pace_after_wait(
        &mut self,
        due: Nanos,
        spacing: u32,
        mut t: Option<MonoTime>,
    ) -> Option<Verdict> {
        loop {
            self.core.flush();
            if self.core.error.is_some() {
                return None;
            }
            match t {
                Some(t) if !self.core.rereads() => self.wait(t),
                // Far from its deadline (or paused) a thread on a live
                // timeline sleeps a slice and looks again: it neither
                // misses a change nor spins a core for a paused job.
                Some(t) if t.since(self.core.now) > self.core.spin + REREAD => self.sleep_slice(),
                None => self.sleep_slice(),
                Some(t) => self.wait(t.min(self.core.now + REREAD)),
            }
            if self.core.interrupted() {
                return None;
            }
            let Some(at) = self.core.timed(due, spacing) else {
                if self.core.past_end() {
                    return None;
                }
                t = None;
                continue;
            };
            match self.core.pacer.poll_waited(at, self.core.now) {
                Decision::WaitUntil(next) => t = Some(next),
                d => return Verdict::of(d),
            }
        }
    }

    /// Sleeps [`REREAD`] (watching the board, if any) and reads the clock.
    fn sleep_slice(&mut self) {
        if self.board.is_some() {
            let until = self.core.now + REREAD;
            self.wait(until);
        } else {
            std::thread::sleep(REREAD.to_std());
            self.core.now = self.core.waiter.now();
        }
    }

    /// A top-speed run paused: holds until resumed (or stopped).
    #[cold]
    fn hold_paused(&mut self) {
        self.core.flush();
        while self.core.paused() && !self.core.interrupted() {
            self.nap();
            self.core.now = self.core.waiter.now();
        }
    }

    /// Waits until `t`. With a board, wakes up whenever a packet of another
    /// thread may have fallen overdue and sends what it can claim.
    fn wait(&mut self, t: MonoTime) {
        let Some(board) = self.board.clone() else {
            self.core.wait_until(t);
            return;
        };
        loop {
            let target = t.min(self.core.now + REWATCH);
            let target = board.watch(self.me).map_or(target, |w| target.min(w));
            self.core.wait_until(target);
            if self.core.now >= t || self.core.interrupted() {
                return;
            }
            self.rescue(&board);
        }
    }

    /// Sends (or drops, past the drift window) every packet of another
    /// thread that is overdue now.
    fn rescue(&mut self, board: &Board<F::Unit>) {
        let pacer = self.core.pacer;
        loop {
            let core = &self.core;
            let Some(r) = board.rescue(self.me, core.now, |d| core.deadline_of(d)) else {
                break;
            };
            let due = self.core.real(r.unit.due(r.index)).unwrap_or(Nanos(0));
            // Claimed only once overdue, so never a wait.
            let verdict =
                Verdict::of(pacer.poll(due, self.core.now)).unwrap_or(Verdict::Send { eps: 0 });
            self.feed.send(&mut self.core, &r.unit, r.index, verdict);
            self.core.flush();
            self.rescued += 1;
        }
    }

    /// A short pause with nothing of its own to send: sleeps, or, with a
    /// board, keeps watching it.
    fn nap(&mut self) {
        if self.board.is_some() {
            self.wait(self.core.now + IDLE_NAP);
        } else {
            std::thread::sleep(IDLE_NAP.to_std());
        }
    }
}
