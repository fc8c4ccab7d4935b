//! [`Outbox`]: where a source puts its packets, and where the engine takes
//! them from.
//!
//! A source produces one time-ordered stream of packets. For each it asks
//! for a [`Lane`] by flow key (the lane of a TX thread: every packet of a
//! flow goes to the same one, so per-flow order holds) and pushes the
//! frame with its [`Due`] (due time, and optionally a spacing to keep and an
//! output port). The outbox owns everything between that call
//! and the TX threads, none of which a source knows about:
//!
//! - **Spreading.** A flow seen first goes to the lane with the fewest
//!   packets so far ([`Spreader`]); with one lane no key is computed.
//! - **Batching.** Frames are packed into one [`Batch`] per lane. A batch is
//!   handed over when it is full, and *before* a packet due more than
//!   `span` after the batch's first frame: batches end at gaps in the
//!   schedule, never inside a burst of packets due together, so a TX thread
//!   crosses from one batch to the next while it would wait anyway. At top
//!   speed (`span` None) only full batches are handed over.
//! - **Limits.** `limit` packets and `max_due` end the stream: [`push`]
//!   returns false and the source stops.
//! - **Bursts.** With a [`Burst`], every `size` packets a gap is added to
//!   the due times of all that follow, and `count` bursts end the stream.
//! - **Hand-over.** Batches go to a [`Handoff`], the engine's: it queues
//!   them for a TX thread (or keeps them, when preloading) and returns an
//!   empty batch to fill next, or None once the run is stopping.
//!
//! [`push`]: Outbox::push

use crate::batch::Batch;
use crate::spread::Spreader;
use crate::time::Nanos;

/// The lane (TX thread) a packet goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane(pub u16);

/// When and how one packet leaves: the one per-packet descriptor a source
/// gives [`Outbox::push`]. `Due::from(nanos)` (or a plain [`Nanos`]) is a
/// due time alone; the builders add the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// Due offset from the run's start.
    pub at: Nanos,
    /// A spacing to keep (ns): the frame leaves no sooner than this after
    /// the frame sent before it on its TX thread, so a late departure
    /// delays the frames chained behind it instead of squeezing their gaps
    /// (`sluice pace`). 0: none. ("Gap" is kept for the time between
    /// packets a source plans or a capture shows; this is a floor.)
    pub spacing: u32,
    /// Output port (two-port replay): 0 the first (`--to`), 1 the second.
    pub port: u8,
}

impl Due {
    /// Due at `at`, no gap, the first port.
    #[inline(always)]
    pub const fn at(at: Nanos) -> Due {
        Due {
            at,
            spacing: 0,
            port: 0,
        }
    }

    /// The same, keeping `spacing` ns after the frame before it.
    #[inline(always)]
    pub const fn with_spacing(self, spacing: u32) -> Due {
        Due { spacing, ..self }
    }

    /// The same, leaving by output `port`.
    #[inline(always)]
    pub const fn on_port(self, port: u8) -> Due {
        Due { port, ..self }
    }
}

impl From<Nanos> for Due {
    #[inline(always)]
    fn from(at: Nanos) -> Due {
        Due::at(at)
    }
}

/// The engine's side of an [`Outbox`].
pub trait Handoff {
    /// Takes the filled `batch` of `lane`; returns an empty batch to fill
    /// next, or None once the run is stopping. `first_ts` is the capture
    /// time of the stream's first packet (ns since the epoch), once known.
    fn hand(&mut self, lane: usize, batch: Batch, first_ts: Option<u64>) -> Option<Batch>;

    /// True once the run is stopping (asked by [`Outbox::flush`] when it
    /// has nothing to hand over).
    fn stopping(&self) -> bool {
        false
    }
}

/// Where the packets of one run go (see the module docs).
pub struct Outbox<'h> {
    batches: Vec<Batch>,
    spread: Spreader,
    handoff: &'h mut dyn Handoff,
    span: Option<Nanos>,
    limit: Option<u64>,
    max_due: Option<Nanos>,
    burst: Option<Burst>,
    grow: Option<fn(&mut Vec<u8>, usize)>,
    packets: u64,
    first_ts: Option<u64>,
    stopped: bool,
    /// The source's pass (0-based) the frames pushed now belong to.
    pass: u64,
}

/// Bursts (TRex's multi-burst, Ostinato's bursts): `size` packets at the
/// stream's own times, then `gap` more before the next burst; `count`
/// bursts (None: until the stream ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    pub size: u64,
    pub gap: Nanos,
    pub count: Option<u64>,
}

impl Burst {
    /// Packets in all (None: no end).
    pub fn packets(&self) -> Option<u64> {
        self.count.map(|c| c.saturating_mul(self.size))
    }

    /// The due time of packet `index` (0-based) planned at `at`.
    #[inline]
    pub fn due(&self, index: u64, at: Nanos) -> Nanos {
        Nanos(at.0.saturating_add((index / self.size.max(1)).saturating_mul(self.gap.0)))
    }
}

impl std::fmt::Display for Burst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.size)?;
        if let Some(c) = self.count {
            write!(f, "x{c}")?;
        }
        if self.gap.0 > 0 {
            write!(f, "/{}ns", self.gap.0)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Burst {
    type Err = String;
    /// `SIZE[xCOUNT][/GAP]`: `1000` (one burst of 1000), `1000/10ms`
    /// (bursts of 1000, 10 ms between, no end), `1000x5/10ms` (five).
    fn from_str(s: &str) -> Result<Burst, String> {
        let (head, gap) = match s.split_once('/') {
            Some((h, g)) => (h, Some(g)),
            None => (s, None),
        };
        let (size, count) = match head.split_once('x') {
            Some((n, c)) => (n, Some(c)),
            None => (head, None),
        };
        let whole = |v: &str, what: &str| -> Result<u64, String> {
            crate::parse::parse_count(v)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{s:?}: {what} {v:?} is not a whole number above 0"))
        };
        let size = whole(size, "the burst size")?;
        let gap = gap
            .map(|g| crate::parse::parse_duration(g).map_err(|e| format!("{s:?}: the gap: {e}")))
            .transpose()?;
        let count = match (count, gap) {
            (Some(c), _) => Some(whole(c, "the burst count")?),
            // One burst without a gap; bursts without end with one.
            (None, None) => Some(1),
            (None, Some(_)) => None,
        };
        Ok(Burst {
            size,
            gap: gap.unwrap_or(Nanos(0)),
            count,
        })
    }
}

/// How an [`Outbox`] batches and when it ends the stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutboxRules {
    /// Hand a batch over before a packet due more than this after its first
    /// frame (None: only when full, for top speed).
    pub span: Option<Nanos>,
    /// End the stream after this many packets.
    pub limit: Option<u64>,
    /// End the stream at the first packet due later than this.
    pub max_due: Option<Nanos>,
    /// Bursts: gaps added every `size` packets, and their end.
    pub burst: Option<Burst>,
    /// Applied to each frame once written (`data`, the frame's start in
    /// it): how the engine grows frames for what it adds as they leave.
    pub grow: Option<fn(&mut Vec<u8>, usize)>,
}

impl<'h> Outbox<'h> {
    /// An outbox of `lanes` lanes (at least one) handing over to `handoff`.
    pub fn new(lanes: usize, rules: OutboxRules, handoff: &'h mut dyn Handoff) -> Self {
        let lanes = lanes.max(1);
        Outbox {
            batches: (0..lanes).map(|_| Batch::new()).collect(),
            spread: Spreader::new(lanes),
            handoff,
            span: rules.span,
            limit: match (rules.limit, rules.burst.and_then(|b| b.packets())) {
                (Some(l), Some(b)) => Some(l.min(b)),
                (l, b) => l.or(b),
            },
            max_due: rules.max_due,
            burst: rules.burst,
            grow: rules.grow,
            packets: 0,
            first_ts: None,
            stopped: false,
            pass: 0,
        }
    }

    /// The lane of the flow whose key `key` computes; the key is computed
    /// only when there is more than one lane. Each call counts one packet
    /// towards the lane's load (a source that keeps a flow's lane calls
    /// this once per flow).
    #[inline]
    pub fn lane(&mut self, key: impl FnOnce() -> u64) -> Lane {
        if self.batches.len() == 1 {
            return Lane(0);
        }
        Lane(self.spread.thread(key()) as u16)
    }

    /// Appends a frame to `lane`'s batch, leaving as `due` says (a plain
    /// [`Nanos`] is a due time without gap or port): `write` appends its
    /// bytes to the buffer it is given. False when the stream has ended
    /// and the source should stop: a limit or `max_due` (the frame was not
    /// taken), or the run is stopping (whether it was taken no longer
    /// matters).
    #[inline(always)]
    pub fn push(
        &mut self,
        lane: Lane,
        due: impl Into<Due>,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> bool {
        let Due {
            mut at,
            spacing,
            port,
        } = due.into();
        if let Some(b) = &self.burst {
            at = b.due(self.packets, at);
        }
        if self.stopped
            || self.limit.is_some_and(|l| self.packets >= l)
            || self.max_due.is_some_and(|m| at > m)
        {
            self.stopped = true;
            return false;
        }
        if let Some(span) = self.span {
            for i in 0..self.batches.len() {
                let stale = self.batches[i]
                    .first_due()
                    .is_some_and(|first| at.saturating_sub(first) > span);
                if stale && !self.hand_over(i) {
                    return false;
                }
            }
        }
        let i = usize::from(lane.0).min(self.batches.len() - 1);
        let b = &mut self.batches[i];
        let offset = b.data.len();
        write(&mut b.data);
        if let Some(grow) = self.grow {
            grow(&mut b.data, offset);
        }
        b.commit(offset, at);
        if spacing != 0 {
            b.set_last_spacing(spacing);
        }
        if port != 0 {
            b.set_last_port(port);
        }
        self.packets += 1;
        if b.is_full() {
            return self.hand_over(i);
        }
        true
    }

    /// Records the capture time of the stream's first packet (ns since the
    /// epoch; the first call wins): pcap output is stamped from there.
    #[inline]
    pub fn set_first_ts(&mut self, ts: u64) {
        self.first_ts.get_or_insert(ts);
    }

    /// Hands over every batch that holds frames (the end of the stream).
    pub fn finish(&mut self) {
        self.flush();
    }

    /// Hands over every batch that holds frames now: a live source that has
    /// read all that was waiting does not hold frames back for a fuller
    /// batch. False once the stream has ended (a stop included).
    pub fn flush(&mut self) -> bool {
        for i in 0..self.batches.len() {
            if !self.batches[i].is_empty() && !self.hand_over(i) {
                return false;
            }
        }
        if self.handoff.stopping() {
            self.stopped = true;
        }
        !self.stopped
    }

    /// The source's pass ended: frames pushed from now on belong to the
    /// next. With `split`, every batch holding frames is handed over first,
    /// so that each batch holds one pass's frames (per-pass statistics
    /// need that; it costs a partial batch per lane and pass). False once
    /// the stream has ended.
    pub fn end_pass(&mut self, split: bool) -> bool {
        let going = !split || self.flush();
        self.pass += 1;
        going
    }

    /// Packets pushed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// True once the stream was ended by a limit, `max_due` or a stop.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    fn hand_over(&mut self, i: usize) -> bool {
        let mut full = std::mem::replace(&mut self.batches[i], Batch::unallocated());
        full.pass = self.pass;
        match self.handoff.hand(i, full, self.first_ts) {
            Some(fresh) => {
                self.batches[i] = fresh;
                true
            }
            None => {
                self.stopped = true;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps what it is handed: (lane, dues).
    #[derive(Default)]
    struct Keep(Vec<(usize, Vec<u64>)>, Option<usize>);

    impl Handoff for Keep {
        fn hand(&mut self, lane: usize, b: Batch, _: Option<u64>) -> Option<Batch> {
            self.0
                .push((lane, b.entries.iter().map(|e| e.due.0).collect()));
            if self.1.is_some_and(|n| self.0.len() >= n) {
                return None;
            }
            Some(Batch::new())
        }
    }

    #[test]
    fn bursts_add_their_gap_and_end_after_their_count() {
        let b: Burst = "3x2/1ms".parse().unwrap();
        assert_eq!(
            b,
            Burst {
                size: 3,
                gap: Nanos(1_000_000),
                count: Some(2)
            }
        );
        assert_eq!(b.to_string().parse::<Burst>(), Ok(b));
        assert_eq!("5".parse::<Burst>().map(|b| b.count), Ok(Some(1)));
        assert_eq!("5/2us".parse::<Burst>().map(|b| b.count), Ok(None));
        for bad in ["0", "x3", "3x0/1ms", "3/5", "3/fast", ""] {
            assert!(bad.parse::<Burst>().is_err(), "{bad}");
        }
        let mut h = Keep::default();
        let mut out = Outbox::new(
            1,
            OutboxRules {
                burst: Some(b),
                ..OutboxRules::default()
            },
            &mut h,
        );
        let mut i = 0u64;
        while out.push(Lane(0), Nanos(i * 10), |d| d.push(0)) {
            i += 1;
        }
        out.finish();
        assert_eq!(out.packets(), 6);
        drop(out);
        let dues: Vec<u64> = h.0.iter().flat_map(|(_, d)| d.clone()).collect();
        assert_eq!(dues, [0, 10, 20, 1_000_030, 1_000_040, 1_000_050]);
    }

    fn rules(span: Option<u64>) -> OutboxRules {
        OutboxRules {
            span: span.map(Nanos),
            ..OutboxRules::default()
        }
    }

    #[test]
    fn a_batch_ends_at_a_gap_before_the_late_packet() {
        let mut keep = Keep::default();
        let mut out = Outbox::new(1, rules(Some(100)), &mut keep);
        for due in [0, 50, 100, 250, 260] {
            assert!(out.push(Lane(0), Nanos(due), |b| b.push(1)));
        }
        out.finish();
        assert_eq!(keep.0, vec![(0, vec![0, 50, 100]), (0, vec![250, 260])]);
    }

    #[test]
    fn at_top_speed_only_full_batches_are_handed_over() {
        let mut keep = Keep::default();
        let mut out = Outbox::new(1, rules(None), &mut keep);
        for due in 0..600u64 {
            assert!(out.push(Lane(0), Nanos(due * 1_000_000), |b| b.push(1)));
        }
        out.finish();
        let sizes: Vec<usize> = keep.0.iter().map(|(_, d)| d.len()).collect();
        assert_eq!(sizes, vec![crate::batch::BATCH_PACKETS, 600 - 512]);
    }

    #[test]
    fn a_pass_end_splits_batches_when_asked_and_labels_them() {
        #[derive(Default)]
        struct Passes(Vec<(u64, Vec<u64>)>);
        impl Handoff for Passes {
            fn hand(&mut self, _: usize, b: Batch, _: Option<u64>) -> Option<Batch> {
                self.0
                    .push((b.pass, b.entries.iter().map(|e| e.due.0).collect()));
                Some(Batch::new())
            }
        }
        for split in [true, false] {
            let mut g = Passes::default();
            let mut out = Outbox::new(1, rules(None), &mut g);
            out.push(Lane(0), Nanos(0), |b| b.push(1));
            out.push(Lane(0), Nanos(1), |b| b.push(1));
            assert!(out.end_pass(split));
            out.push(Lane(0), Nanos(2), |b| b.push(1));
            out.finish();
            let want = if split {
                vec![(0, vec![0, 1]), (1, vec![2])]
            } else {
                vec![(1, vec![0, 1, 2])]
            };
            assert_eq!(g.0, want, "split {split}");
        }
    }

    #[test]
    fn chained_spacings_stay_with_their_frames() {
        #[derive(Default)]
        struct Spacings(Vec<Vec<u32>>);
        impl Handoff for Spacings {
            fn hand(&mut self, _: usize, b: Batch, _: Option<u64>) -> Option<Batch> {
                self.0.push((0..b.len()).map(|i| b.spacing(i)).collect());
                Some(Batch::new())
            }
        }
        let mut g = Spacings::default();
        let mut out = Outbox::new(1, rules(None), &mut g);
        out.push(Lane(0), Nanos(0), |b| b.push(1));
        out.push(Lane(0), Due::at(Nanos(5)).with_spacing(5), |b| b.push(1));
        out.push(Lane(0), Nanos(9), |b| b.push(1));
        out.push(Lane(0), Due::at(Nanos(20)).with_spacing(11), |b| b.push(1));
        assert!(out.flush());
        assert_eq!(g.0, vec![vec![0, 5, 0, 11]]);
    }

    #[test]
    fn ports_stay_with_their_frames() {
        #[derive(Default)]
        struct Ports(Vec<Vec<u8>>);
        impl Handoff for Ports {
            fn hand(&mut self, _: usize, b: Batch, _: Option<u64>) -> Option<Batch> {
                self.0.push((0..b.len()).map(|i| b.port(i)).collect());
                Some(Batch::new())
            }
        }
        let mut p = Ports::default();
        let mut out = Outbox::new(1, rules(None), &mut p);
        out.push(Lane(0), Due::at(Nanos(0)).on_port(1), |b| b.push(1));
        out.push(Lane(0), Nanos(1), |b| b.push(1));
        out.push(Lane(0), Due::at(Nanos(2)).on_port(1).with_spacing(3), |b| {
            b.push(1)
        });
        assert!(out.flush());
        assert_eq!(p.0, vec![vec![1, 0, 1]]);
    }

    #[test]
    fn a_limit_and_max_due_end_the_stream() {
        let mut keep = Keep::default();
        let lim = OutboxRules {
            limit: Some(2),
            ..rules(None)
        };
        let mut out = Outbox::new(1, lim, &mut keep);
        assert!(out.push(Lane(0), Nanos(0), |b| b.push(1)));
        assert!(out.push(Lane(0), Nanos(1), |b| b.push(1)));
        assert!(!out.push(Lane(0), Nanos(2), |b| b.push(1)));
        assert_eq!(out.packets(), 2);
        let mut keep = Keep::default();
        let due = OutboxRules {
            max_due: Some(Nanos(5)),
            ..rules(None)
        };
        let mut out = Outbox::new(1, due, &mut keep);
        assert!(out.push(Lane(0), Nanos(5), |b| b.push(1)));
        assert!(!out.push(Lane(0), Nanos(6), |b| b.push(1)));
        assert!(out.stopped());
    }

    #[test]
    fn flows_keep_their_lane_and_the_load_evens_out() {
        let mut keep = Keep::default();
        let mut out = Outbox::new(2, rules(None), &mut keep);
        let mut lanes = std::collections::HashMap::new();
        for i in 0..64u64 {
            let lane = out.lane(|| i % 4);
            assert_eq!(*lanes.entry(i % 4).or_insert(lane), lane);
            assert!(out.push(lane, Nanos(i), |b| b.push(1)));
        }
        out.finish();
        let per: Vec<usize> = keep.0.iter().map(|(_, d)| d.len()).collect();
        assert_eq!(per, vec![32, 32]);
    }

    #[test]
    fn a_stopping_engine_ends_the_stream() {
        let mut keep = Keep(Vec::new(), Some(1));
        let mut out = Outbox::new(1, rules(None), &mut keep);
        let mut taken = 0;
        while out.push(Lane(0), Nanos(0), |b| b.push(1)) {
            taken += 1;
        }
        // The push that filled the batch found the engine stopping.
        assert_eq!(taken + 1, crate::batch::BATCH_PACKETS);
        assert_eq!(out.packets(), crate::batch::BATCH_PACKETS as u64);
        assert!(out.stopped());
    }
}
