//! `--clock tsc`: the pacer reads the CPU's time-stamp counter, mapped
//! onto CLOCK_MONOTONIC by a calibration at the start, so a live source's
//! arrival stamps (taken on the monotonic clock) and the TX threads'
//! deadlines stay comparable. At the end the two clocks are read together
//! and their difference reported: the drift the run accumulated.

use serde::Serialize;
use sluice_core::{Clock, MonoTime, MonotonicClock};
use sluice_sys::tsc::{self, Calibration};
use std::time::Duration;

/// How long the counter is calibrated against CLOCK_MONOTONIC: a pair of
/// readings is a few hundred ns wide, so the rate is known to a few ppm.
const CALIBRATION: Duration = Duration::from_millis(50);

/// The counter as nanoseconds of a [`MonotonicClock`].
#[derive(Clone, Copy, Debug)]
pub struct TscClock {
    cal: Calibration,
    mono: MonotonicClock,
}

impl TscClock {
    /// Calibrates against `mono` (spins for the calibration time).
    pub fn calibrate(mono: MonotonicClock) -> TscClock {
        let reference = || mono.now().0;
        TscClock {
            cal: Calibration::measure(&reference, CALIBRATION),
            mono,
        }
    }

    /// What the run reports: the rate found and the drift from
    /// CLOCK_MONOTONIC since the calibration.
    pub fn report(&self) -> ClockReport {
        let (t, m) = (self.now().0 as i64, self.mono.now().0 as i64);
        ClockReport {
            source: "tsc".into(),
            tsc_hz: self.cal.hz.round(),
            calibration_ns: CALIBRATION.as_nanos() as u64,
            drift_ns: t - m,
        }
    }
}

impl Clock for TscClock {
    #[inline(always)]
    fn now(&self) -> MonoTime {
        MonoTime(self.cal.ns(tsc::read()))
    }
}

/// The clock section of a summary (`--clock tsc`).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ClockReport {
    pub source: String,
    /// Counter ticks per second, as calibrated.
    pub tsc_hz: f64,
    /// How long the calibration ran.
    pub calibration_ns: u64,
    /// The counter's time minus CLOCK_MONOTONIC at the end of the run.
    pub drift_ns: i64,
}
