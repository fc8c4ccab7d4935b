//! The ON/OFF source model for a meta-flow's arrivals (FLOR §4.3: the
//! flow scheduler "with some model providing more realistic generation,
//! for example ON/OFF source model" [Varet & Larrieu]).
//!
//! A meta-flow with `onoff` starts its flows only in ON periods: flow k
//! starts once k·period of ON time has passed since `start`, and every OFF
//! period before that point pushes it back by the OFF period's length.
//! The meta-flow keeps its `count` flows and, inside ON periods, its
//! `period`; flows already running go on through an OFF period (it stops
//! arrivals, not packets). The first period is ON, from `start`.
//!
//! Period lengths are a constant (`2s`) or drawn per period: `exponential`
//! (mean), or `pareto` (mean, shape α > 1), whose heavy tail is what makes
//! aggregated ON/OFF sources self-similar (Willinger et al.). Draws come
//! from the entry's own generator, seeded from the session's seed, so the
//! same seed gives the same periods.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use sluice_source::text::Time;

/// A period length: a constant, or a law to draw each one from.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Period {
    Fixed(Time),
    Drawn(Law),
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Law {
    pub dist: Dist,
    pub mean: Time,
    #[serde(default)]
    pub shape: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dist {
    Constant,
    Exponential,
    Pareto,
}

/// `onoff:` of a session entry.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOff {
    pub on: Period,
    pub off: Period,
}

impl Period {
    fn mean_ns(&self) -> u64 {
        match self {
            Period::Fixed(t) => t.0 .0,
            Period::Drawn(l) => l.mean.0 .0,
        }
    }

    fn check(&self, what: &str) -> Result<(), String> {
        if let Period::Drawn(l) = self {
            match (l.dist, l.shape) {
                (Dist::Pareto, Some(a)) if a.is_finite() && a > 1.0 => {}
                (Dist::Pareto, Some(a)) => {
                    return Err(format!(
                    "onoff.{what}.shape: a Pareto period needs shape > 1 (a finite mean), got {a}"
                ))
                }
                (Dist::Pareto, None) => {
                    return Err(format!("onoff.{what}: a Pareto period needs a shape (> 1)"))
                }
                (_, Some(_)) => {
                    return Err(format!(
                        "onoff.{what}.shape: only a Pareto period has a shape"
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// One period's length in ns.
    fn draw(&self, rng: &mut SmallRng) -> u64 {
        let (dist, mean, shape) = match self {
            Period::Fixed(t) => return t.0 .0,
            Period::Drawn(l) => (l.dist, l.mean.0 .0 as f64, l.shape.unwrap_or(0.0)),
        };
        // 1 − u lies in (0, 1]: its logarithm and power are finite.
        let u = 1.0 - rng.random::<f64>();
        let x = match dist {
            Dist::Constant => mean,
            Dist::Exponential => -mean * u.ln(),
            // Inverse transform; scale x_m = mean (α − 1) / α.
            Dist::Pareto => mean * (shape - 1.0) / shape * u.powf(-1.0 / shape),
        };
        x.min(u64::MAX as f64 / 4.0) as u64
    }
}

/// Most ON periods one flow may have to skip: an ON mean this much
/// shorter than the meta-flow's period is refused.
const MAX_PERIODS_PER_FLOW: u64 = 1000;

impl OnOff {
    /// Checks what serde cannot, for a meta-flow of `period` ns.
    pub fn check(&self, period: u64) -> Result<(), String> {
        self.on.check("on")?;
        self.off.check("off")?;
        let on = self.on.mean_ns();
        if on == 0 {
            return Err("onoff.on: an ON period must last (got 0)".into());
        }
        if period == 0 {
            return Err("onoff needs a period: it spaces the flows inside ON periods".into());
        }
        if on.saturating_mul(MAX_PERIODS_PER_FLOW) < period {
            return Err(format!(
                "onoff.on: a mean ON period of {} is over {MAX_PERIODS_PER_FLOW} times shorter than the period {}",
                sluice_core::Nanos(on),
                sluice_core::Nanos(period)
            ));
        }
        Ok(())
    }
}

/// Where a meta-flow stands on its ON/OFF clock.
#[derive(Clone, Debug)]
pub struct OnOffClock {
    model: OnOff,
    rng: SmallRng,
    /// ON time at which the current ON period ends.
    on_end: u64,
    /// OFF time so far, before the current ON period.
    off_total: u64,
}

impl OnOffClock {
    pub fn new(model: OnOff, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let on_end = model.on.draw(&mut rng).max(1);
        OnOffClock {
            model,
            rng,
            on_end,
            off_total: 0,
        }
    }

    /// The time (from the entry's start) at which `on_time` of ON time
    /// has passed. Asked with non-decreasing `on_time` (asking twice for
    /// the same one gives the same answer).
    pub fn place(&mut self, on_time: u64) -> u64 {
        while on_time >= self.on_end {
            self.off_total = self
                .off_total
                .saturating_add(self.model.off.draw(&mut self.rng));
            let on = self.model.on.draw(&mut self.rng).max(1);
            self.on_end = self.on_end.saturating_add(on);
        }
        on_time.saturating_add(self.off_total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> OnOff {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn constant_periods_shift_arrivals_past_each_off() {
        let m = model("{on: 10ms, off: 5ms}");
        m.check(1_000_000).unwrap();
        let mut c = OnOffClock::new(m, 1);
        let ms = 1_000_000;
        // ON [0, 10) ms, OFF [10, 15), ON [15, 25), OFF [25, 30), ...
        let got: Vec<u64> = (0..25).map(|k| c.place(k * 4 * ms) / ms).collect();
        assert_eq!(&got[..6], &[0, 4, 8, 17, 21, 30]);
        // No arrival ever falls in an OFF period.
        for t in got {
            assert!(t % 15 < 10, "{t} ms is in an OFF period");
        }
        assert_eq!(c.place(24 * 4 * ms), c.place(24 * 4 * ms));
    }

    #[test]
    fn drawn_periods_have_their_mean_and_the_same_seed_the_same_periods() {
        let m = model(
            "{on: {dist: exponential, mean: 1ms}, off: {dist: pareto, mean: 3ms, shape: 2.5}}",
        );
        m.check(10_000).unwrap();
        let (mut a, mut b) = (OnOffClock::new(m, 9), OnOffClock::new(m, 9));
        let n = 200_000u64;
        let last = a.place(n * 10_000);
        assert_eq!(last, b.place(n * 10_000));
        // ON time is n × 10 µs = 2 s; OFF is three times ON on average.
        let off = (last - n * 10_000) as f64;
        let ratio = off / (n * 10_000) as f64;
        assert!((2.6..3.4).contains(&ratio), "OFF/ON {ratio}");
    }

    #[test]
    fn bad_models_are_named() {
        for (text, period, want) in [
            (
                "{on: 0s, off: 1s}",
                1000,
                "onoff.on: an ON period must last",
            ),
            (
                "{on: {dist: pareto, mean: 1s}, off: 1s}",
                1000,
                "onoff.on: a Pareto period needs a shape",
            ),
            (
                "{on: 1s, off: {dist: pareto, mean: 1s, shape: 1}}",
                1000,
                "onoff.off.shape",
            ),
            (
                "{on: 1s, off: {dist: exponential, mean: 1s, shape: 2}}",
                1000,
                "only a Pareto",
            ),
            (
                "{on: 1us, off: 1s}",
                1_000_000_000,
                "over 1000 times shorter",
            ),
            ("{on: 1s, off: 1s}", 0, "onoff needs a period"),
        ] {
            let e = model(text).check(period).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
