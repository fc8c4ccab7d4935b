//! The rate timeline: how a run's planned schedule maps onto real time
//! when its rate changes while it runs.
//!
//! Sources plan every packet at a *nominal* due offset (their own rate,
//! as if nothing changed). The timeline is the rate scale `s(t)` over
//! real time `t` (1 = as planned, 2 = twice as fast, 0 = paused); the
//! nominal time reached at `t` is `D(t) = ∫ s`. A packet planned at
//! nominal `d` is due at the first real `t` with `D(t) ≥ d`.
//!
//! `s` is piecewise linear (steps, linear ramps, holds), so `D` is
//! piecewise quadratic and each due time is solved exactly from its
//! piece's anchors: no error accumulates across changes, and the schedule
//! stays absolute (a change moves no packet planned before it). `D` never
//! decreases, so the order of packets (per flow and overall) is kept.

/// One piece of the rate curve: from real offset `at`, where the nominal
/// time reached is `nominal`, the scale goes linearly from `from` to `to`
/// over `over` ns (0: at once), then holds at `to` until the next piece.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Piece {
    at: u64,
    nominal: f64,
    from: f64,
    to: f64,
    over: u64,
}

impl Piece {
    /// The nominal time covered by the ramp part.
    fn ramp_span(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.over as f64
    }

    /// `D(at + tau)` within this piece.
    fn nominal_after(&self, tau: u64) -> f64 {
        if tau <= self.over {
            let t = tau as f64;
            let a = self.slope();
            self.nominal + self.from * t + a * t * t / 2.0
        } else {
            self.nominal + self.ramp_span() + self.to * (tau - self.over) as f64
        }
    }

    /// Scale change per ns during the ramp.
    fn slope(&self) -> f64 {
        if self.over == 0 {
            0.0
        } else {
            (self.to - self.from) / self.over as f64
        }
    }

    fn scale_after(&self, tau: u64) -> f64 {
        if tau >= self.over {
            self.to
        } else {
            self.from + self.slope() * tau as f64
        }
    }

    /// The hold after the ramp as a [`Line`], up to `end_nominal` (where
    /// the next piece starts); None when it does not move (scale 0).
    fn hold_line(&self, end_nominal: f64) -> Option<Line> {
        if self.to <= 0.0 {
            return None;
        }
        let per = 1.0 / self.to;
        let lo = self.nominal + self.ramp_span();
        // τ = over + (d − lo) / to, so real = at + over − lo·per + d·per.
        Some(Line {
            lo,
            hi: end_nominal,
            base: self.at as f64 + self.over as f64 - lo * per,
            per,
            end: f64::INFINITY,
        })
    }

    /// The real offset into this piece at which `D` reaches `d` (≥
    /// `nominal`); None when it never does.
    fn reach(&self, d: f64) -> Option<f64> {
        let delta = (d - self.nominal).max(0.0);
        if delta == 0.0 {
            return Some(0.0);
        }
        let span = self.ramp_span();
        if self.over > 0 && delta <= span {
            // from·τ + a·τ²/2 = δ, in the form without cancellation
            // (valid for a = 0 and for from = 0 alike).
            let a = self.slope();
            let root = (self.from * self.from + 2.0 * a * delta).max(0.0).sqrt();
            let den = self.from + root;
            return (den > 0.0).then(|| 2.0 * delta / den);
        }
        (self.to > 0.0).then(|| self.over as f64 + (delta - span) * (1.0 / self.to))
    }
}

/// Where the timeline is a straight line: planned offsets in `[lo, hi)`
/// are due at `base + d × per` (a hold at a constant scale).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub lo: f64,
    pub hi: f64,
    pub base: f64,
    pub per: f64,
    /// Where the next piece starts (real): no due time is later.
    pub end: f64,
}

impl Line {
    /// No line: nothing falls in it.
    pub const NONE: Line = Line {
        lo: 1.0,
        hi: 0.0,
        base: 0.0,
        per: 0.0,
        end: 0.0,
    };

    /// The due offset of `d`, when it falls on the line.
    #[inline(always)]
    pub fn real(&self, d: u64) -> Option<u64> {
        let d = of(d);
        (d >= self.lo && d < self.hi).then(|| ns((self.base + d * self.per).min(self.end)))
    }
}

/// What a change does from its instant on.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The scale steps to this.
    Scale(f64),
    /// The scale goes linearly from where it is to `to` over `over` ns.
    Ramp { to: f64, over: u64 },
    /// Points (offset from the change, scale), linear between them; the
    /// scale stays at the last one's. Offsets must not decrease; two at
    /// one offset are a step.
    Points(Vec<(u64, f64)>),
    /// Nothing is due until a resume.
    Pause,
    /// Back to the scale a pause left (or the one set while paused).
    Resume,
}

/// A change the timeline cannot take.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ChangeError {
    #[error("a rate scale must be finite and 0 or more, not {0}")]
    BadScale(f64),
    #[error("the job is paused: resume it before a ramp")]
    Paused,
    #[error("ramp points must not go back in time ({0} ns after {1} ns)")]
    Backwards(u64, u64),
    #[error("ramp points: none given")]
    Empty,
}

/// The rate scale over real time, from the start of a run (pure).
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// Never empty; `at` strictly increasing after the first (which is 0).
    pieces: Vec<Piece>,
    /// While paused: the scale a resume goes back to.
    paused: Option<f64>,
}

impl Timeline {
    /// A constant scale from the start.
    pub fn constant(scale: f64) -> Timeline {
        Timeline {
            pieces: vec![Piece {
                at: 0,
                nominal: 0.0,
                from: scale,
                to: scale,
                over: 0,
            }],
            paused: None,
        }
    }

    /// Linear between `points` (real offset, scale) from the start; the
    /// first point's scale holds before it, the last one's after.
    pub fn from_points(points: &[(u64, f64)]) -> Result<Timeline, ChangeError> {
        let first = points.first().ok_or(ChangeError::Empty)?;
        check_scale(first.1)?;
        let mut t = Timeline::constant(first.1);
        t.change(0, Change::Points(points.to_vec()))?;
        Ok(t)
    }

    /// True while paused.
    pub fn paused(&self) -> bool {
        self.paused.is_some()
    }

    /// True when every packet is due at its planned offset (one piece at
    /// scale 1 from the start: nothing changed).
    pub fn is_identity(&self) -> bool {
        matches!(self.pieces.as_slice(), [p] if p.at == 0 && p.from == 1.0 && p.to == 1.0)
    }

    /// While paused: the scale a resume goes back to.
    pub fn resumes_to(&self) -> Option<f64> {
        self.paused
    }

    /// The piece in force at real offset `t`.
    fn piece_at(&self, t: u64) -> &Piece {
        let i = self.pieces.partition_point(|p| p.at <= t);
        &self.pieces[i.saturating_sub(1)]
    }

    /// The scale at real offset `t`.
    pub fn scale_at(&self, t: u64) -> f64 {
        let p = self.piece_at(t);
        p.scale_after(t - p.at.min(t))
    }

    /// `D(t)`: the nominal time reached at real offset `t`.
    pub fn nominal_at(&self, t: u64) -> f64 {
        let p = self.piece_at(t);
        p.nominal_after(t - p.at.min(t))
    }

    /// The real offset at which a packet planned at nominal `d` is due;
    /// None while the timeline never reaches it (paused, or a ramp down to
    /// 0). `hint` is the piece the caller found last (due times asked in
    /// order start the search there).
    #[inline]
    pub fn real_of(&self, d: u64, hint: &mut usize) -> Option<u64> {
        let i = self.piece_of(of(d), hint);
        // On the hold: the line's own arithmetic, so that a caller of
        // `line_at` gets these very values.
        if let Some(r) = self.line_of(i).and_then(|l| l.real(d)) {
            return Some(r);
        }
        let p = &self.pieces[i];
        let tau = p.reach(of(d))?;
        let end = self
            .pieces
            .get(i + 1)
            .map_or(f64::INFINITY, |q| q.at as f64);
        Some(ns((p.at as f64 + tau).min(end)))
    }

    /// The first piece at whose end D reaches `d`, searched from `hint`
    /// (left there): back while the piece before already did, forward
    /// while this one does not.
    fn piece_of(&self, d: f64, hint: &mut usize) -> usize {
        let n = self.pieces.len();
        let mut i = (*hint).min(n - 1);
        while i > 0 && self.pieces[i].nominal >= d {
            i -= 1;
        }
        while i + 1 < n && self.pieces[i + 1].nominal < d {
            i += 1;
        }
        *hint = i;
        i
    }

    /// Piece `i`'s hold as a [`Line`] up to where the next piece starts.
    fn line_of(&self, i: usize) -> Option<Line> {
        let next = self.pieces.get(i + 1);
        let mut line = self.pieces[i].hold_line(next.map_or(f64::INFINITY, |q| q.nominal))?;
        line.end = next.map_or(f64::INFINITY, |q| q.at as f64);
        Some(line)
    }

    /// The straight [`Line`] that `d` falls on (a hold at a constant
    /// scale), found from `hint` as [`real_of`](Self::real_of) does: a
    /// caller maps the due times that follow on it with one multiply-add
    /// each, the same values `real_of` gives.
    pub fn line_at(&self, d: u64, hint: &mut usize) -> Option<Line> {
        let i = self.piece_of(of(d), hint);
        self.line_of(i).filter(|l| l.real(d).is_some())
    }

    /// Forgets the pieces that ended before real offset `t` (the one in
    /// force at `t` stays): a long-running job changed again and again
    /// keeps a bounded timeline. A packet planned in a forgotten piece
    /// is due at once (it was long overdue).
    pub fn forget_before(&mut self, t: u64) {
        let keep_from = self.pieces.partition_point(|p| p.at <= t).saturating_sub(1);
        if keep_from > 0 {
            self.pieces.drain(..keep_from);
        }
    }

    /// Pieces held (for bounds).
    pub fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// Applies `change` from real offset `at` (pieces from `at` on are
    /// replaced: a change overrides what was planned after it).
    pub fn change(&mut self, at: u64, change: Change) -> Result<(), ChangeError> {
        let scale = self.scale_at(at);
        let nominal = self.nominal_at(at);
        // Every piece from `at` on goes; one is always pushed after.
        let cut = |pieces: &mut Vec<Piece>| {
            let keep = pieces.partition_point(|p| p.at < at);
            pieces.truncate(keep);
        };
        let hold = |s: f64| Piece {
            at,
            nominal,
            from: s,
            to: s,
            over: 0,
        };
        match change {
            Change::Scale(s) => {
                check_scale(s)?;
                if self.paused.is_some() {
                    self.paused = Some(s);
                    return Ok(());
                }
                cut(&mut self.pieces);
                self.pieces.push(hold(s));
            }
            Change::Pause => {
                if self.paused.is_some() {
                    return Ok(());
                }
                self.paused = Some(scale);
                cut(&mut self.pieces);
                self.pieces.push(hold(0.0));
            }
            Change::Resume => {
                let Some(s) = self.paused.take() else {
                    return Ok(());
                };
                cut(&mut self.pieces);
                self.pieces.push(hold(s));
            }
            Change::Ramp { to, over } => {
                check_scale(to)?;
                if self.paused.is_some() {
                    return Err(ChangeError::Paused);
                }
                cut(&mut self.pieces);
                self.pieces.push(Piece {
                    at,
                    nominal,
                    from: scale,
                    to,
                    over,
                });
            }
            Change::Points(mut points) => {
                if self.paused.is_some() {
                    return Err(ChangeError::Paused);
                }
                let Some(&(t0, s0)) = points.first() else {
                    return Err(ChangeError::Empty);
                };
                let mut prev = t0;
                for &(t, s) in &points {
                    check_scale(s)?;
                    if t < prev {
                        return Err(ChangeError::Backwards(t, prev));
                    }
                    prev = t;
                }
                // The first point's scale holds before it.
                if t0 > 0 {
                    points.insert(0, (0, s0));
                }
                cut(&mut self.pieces);
                let mut new: Vec<Piece> = Vec::with_capacity(points.len());
                let mut push = |at: u64, from: f64, to: f64, over: u64| {
                    let nominal = match new.last() {
                        None => nominal,
                        Some(q) => q.nominal_after(at - q.at),
                    };
                    new.push(Piece {
                        at,
                        nominal,
                        from,
                        to,
                        over,
                    });
                };
                for w in points.windows(2) {
                    let ((ta, sa), (tb, sb)) = (w[0], w[1]);
                    // Two points at one offset are a step: no piece.
                    if tb > ta {
                        push(at + ta, sa, sb, tb - ta);
                    }
                }
                let &(tk, sk) = points.last().expect("not empty");
                push(at + tk, sk, sk, 0);
                self.pieces.extend(new);
            }
        }
        Ok(())
    }
}

/// The nearest whole ns of an offset (≥ 0; exact below 2^52 ns, 52 days):
/// `f64::round` is a libm call on the baseline x86-64 target, too slow
/// for every packet.
#[inline(always)]
fn ns(x: f64) -> u64 {
    // Through i64: one conversion instruction each way (u64's takes a
    // branch); offsets stay far below 2^63.
    (x + 0.5).max(0.0) as i64 as u64
}

/// A planned offset as f64, through i64 for the same reason.
#[inline(always)]
fn of(d: u64) -> f64 {
    d as i64 as f64
}

fn check_scale(s: f64) -> Result<(), ChangeError> {
    if s.is_finite() && s >= 0.0 {
        Ok(())
    } else {
        Err(ChangeError::BadScale(s))
    }
}

#[cfg(test)]
mod tests;
