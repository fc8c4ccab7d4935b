//! Engine settings that are not about the source or the sink.

use sluice_core::Nanos;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Which clock drives the pacer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockChoice {
    /// CLOCK_MONOTONIC: real sending.
    #[default]
    Monotonic,
    /// The CPU's invariant time-stamp counter, calibrated against
    /// CLOCK_MONOTONIC: real sending with one `rdtsc` per clock reading.
    Tsc,
    /// A virtual clock that jumps to each deadline: deterministic, instant
    /// runs for tests and trace conversion (ε is always 0).
    Virtual,
}

sluice_core::named_values!(ClockChoice {
    Monotonic => "monotonic",
    Tsc => "tsc",
    Virtual => "virtual",
});

impl ClockChoice {
    /// True for the clocks of real sending (time passes on its own).
    pub fn is_real(self) -> bool {
        self != ClockChoice::Virtual
    }
}

#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub clock: ClockChoice,
    /// Spin (instead of sleeping) for the last `spin` before each deadline.
    pub spin: Nanos,
    /// T_d: drop packets later than this and count them as time violations.
    pub drift: Option<Nanos>,
    /// A packet sent later than this after its due time counts as late.
    pub late_threshold: Nanos,
    /// CPU for each TX thread (cycled if shorter than the thread count).
    pub cpus: Vec<usize>,
    /// Where the planners (a part's IO thread, a series worker) and the
    /// helper threads go, and the summary's account of the placement;
    /// None: planners not pinned, helpers anywhere but on `cpus`.
    pub placement: Option<crate::Placement>,
    /// Where each packet's send time and ε go (`--eps-log`).
    pub eps_log: Option<crate::epslog::EpsLog>,
    /// SCHED_FIFO + mlockall for the TX threads.
    pub realtime: bool,
    /// Stop sending this long after the start (no packet due later is
    /// produced).
    pub duration: Option<Nanos>,
    /// Stop after this many packets (records, for time-series play).
    pub limit: Option<u64>,
    /// Passes over a source that has them (a trace); 0 = forever. Time
    /// continues across passes.
    pub passes: u64,
    /// Keep the first pass in memory and send every pass from there (no
    /// file reading while sending); falls back to streaming over
    /// `preload_budget`.
    pub preload: bool,
    /// Interval of `Observer::interval` calls.
    pub stats_interval: Nanos,
    /// Set by a signal handler (or anyone) to stop the run cleanly.
    pub stop: Arc<AtomicBool>,
    /// True in top-speed mode: no pacing, no ε.
    pub topspeed: bool,
    /// Bytes a preloaded source may occupy before the run falls back to
    /// streaming; None = half of the memory available at start.
    pub preload_budget: Option<u64>,
    /// Start at this CLOCK_REALTIME instant (ns since the epoch) instead of
    /// at once: how workers of a distributed run start together. An instant
    /// already past starts at once.
    pub start_at: Option<u64>,
    /// Report each pass of a source read more than once (`Observer::pass`).
    /// Batches then end at pass ends: a partial batch per lane and pass.
    pub pass_stats: bool,
    /// `--rx-stamp`: each frame leaves with a receive stamp (stream,
    /// sequence, departure) at the end of its payload.
    pub rx_stamp: Option<RxStampMode>,
    /// The first stamp stream: TX thread k of port p stamps stream
    /// `stamp_streams_from + k + 256 p` (senders on several hosts keep
    /// their streams apart for one receiver).
    pub stamp_streams_from: u32,
    /// Added to the wall clock the stamps read (tests only: a host whose
    /// clock is off by this much).
    pub stamp_clock_shift_ns: i64,
    /// On the virtual clock, every TX thread shares one clock (a harness
    /// that moves it from its sinks); by default each thread has its own,
    /// from the common start, so one thread's schedule never makes
    /// another's packets late or stamps them with its time.
    pub shared_virtual_clock: bool,
    /// Drop this share of frames on purpose as they would leave (after
    /// their receive stamp, so a receiver counts them lost), each TX
    /// thread drawing from its own stream of the seed: the same seed and
    /// run drop the same frames. Counted in the summary's `loss_dropped`.
    pub loss: Option<Loss>,
    /// The rate timeline, when the rate may change while the run goes
    /// (`--ramp`, a service): due times are read through it, and the
    /// duration is real time (packets are not cut at a planned offset).
    pub live: Option<Arc<crate::live::LiveRate>>,
    /// Bursts of the planned stream (one planner thread; a preloaded
    /// trace is streamed instead).
    pub burst: Option<sluice_core::Burst>,
}

/// `--loss`: the share of frames dropped and the seed of the draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss {
    /// 0.0..=1.0.
    pub share: f64,
    pub seed: u64,
}

impl Loss {
    /// TX thread `lane`'s draws: SplitMix64 from the seed and the lane,
    /// a frame dropped when its draw is below `share` of 2^64.
    pub(crate) fn draws(self, lane: usize) -> LossDraws {
        LossDraws {
            state: self.seed ^ (lane as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            below: (self.share.clamp(0.0, 1.0) * 18_446_744_073_709_551_616.0) as u64,
            all: self.share >= 1.0,
        }
    }
}

/// One TX thread's loss draws.
pub(crate) struct LossDraws {
    state: u64,
    below: u64,
    all: bool,
}

impl LossDraws {
    /// Whether the next frame is dropped.
    #[inline]
    pub fn drop_next(&mut self) -> bool {
        let draw = sluice_core::mix::splitmix64(&mut self.state);
        self.all || draw < self.below
    }
}

/// Where a receive stamp goes (see `sluice_wire::rxstamp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxStampMode {
    /// Over the last 24 payload bytes (frames with fewer go unstamped).
    Replace,
    /// In 24 bytes added to the payload.
    Append,
}

sluice_core::named_values!(RxStampMode {
    Replace => "replace",
    Append => "append",
});

impl EngineConfig {
    /// Planner k's CPU is entry k mod len; empty: not pinned.
    pub(crate) fn planner_cpus(&self) -> &[usize] {
        self.placement.as_ref().map_or(&[], |p| &p.planner_cpus)
    }

    /// CPUs the helper threads keep to; empty: any but the TX threads'.
    pub(crate) fn helper_cpus(&self) -> &[usize] {
        self.placement.as_ref().map_or(&[], |p| &p.helper_cpus)
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            clock: ClockChoice::Monotonic,
            spin: Nanos::from_millis(10),
            drift: None,
            late_threshold: Nanos::from_micros(10),
            cpus: Vec::new(),
            placement: None,
            eps_log: None,
            realtime: false,
            duration: None,
            limit: None,
            passes: 1,
            preload: false,
            stats_interval: Nanos::from_secs(1),
            stop: Arc::new(AtomicBool::new(false)),
            topspeed: false,
            preload_budget: None,
            start_at: None,
            pass_stats: false,
            rx_stamp: None,
            stamp_streams_from: 0,
            stamp_clock_shift_ns: 0,
            shared_virtual_clock: false,
            loss: None,
            live: None,
            burst: None,
        }
    }
}
