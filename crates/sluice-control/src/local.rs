//! What a local job reports as it runs (`inprocess`: `sluice_run`'s
//! jobs with a live rate), and how a change a client asks for becomes a
//! change of the job's rate timeline.

use sluice_engine::LiveRate;
use sluice_job::rate::{Nominal, Ramp, Rate};
use sluice_pace::Change;
use std::sync::Arc;

/// What a running local job reports.
#[derive(Clone, Debug)]
pub enum Event {
    /// One interval: its `--stats-json` line, packets sent in all and
    /// the interval's rate.
    Stats {
        line: String,
        packets: u64,
        pps: f64,
        /// ε p50 and p99, ns (None at top speed).
        eps: Option<(u64, u64)>,
    },
    /// The receiver's count after an interval (`--rx`): its line, frames
    /// received and lost in all, and the interval's latency p50 (ns).
    Rx {
        line: String,
        received: u64,
        lost: u64,
        latency_p50_ns: Option<u64>,
    },
    /// The summary (`--summary-json`'s document); `stopped`: a stop
    /// ended it.
    Finished { summary: String, stopped: bool },
    /// Its error, once it had started.
    Failed(String),
}

/// Where a job's events go (called on the job's own threads).
pub type Events = Arc<dyn Fn(Event) + Send + Sync>;

/// A job started: its live rate, and the rate it was planned at.
pub struct Started {
    pub live: Arc<LiveRate>,
    pub nominal: Nominal,
}

/// A client's change of a job planned at `nominal`, as a change of its
/// timeline. `ramp`: `TO/OVER` from the rate now, or points from now
/// (`TIME=RATE,…`).
pub fn change_of(
    nominal: &Nominal,
    c: &crate::pb::change_request::Change,
) -> Result<Change, String> {
    use crate::pb::change_request::Change as C;
    // A ramp of MAX_POINTS points is a few hundred KiB of text; what is
    // longer is no change (and is never echoed whole).
    if let C::Rate(t) | C::Ramp(t) = c {
        if t.len() > MAX_CHANGE_TEXT {
            return Err(format!(
                "'{}': {} bytes, more than a change may have ({MAX_CHANGE_TEXT})",
                crate::shown::shown(t),
                t.len()
            ));
        }
    }
    let positive = |s: f64| {
        if s.is_finite() && s > 0.0 {
            Ok(s)
        } else {
            Err(format!(
                "a rate of {s} times the job's: above 0 expected (pause stops sending)"
            ))
        }
    };
    let change = match c {
        C::Pause(true) => Change::Pause,
        C::Resume(true) => Change::Resume,
        C::Pause(false) | C::Resume(false) => return Err("pause or resume: true expected".into()),
        C::Rate(r) => {
            let r: Rate = r.parse().map_err(|e: String| crate::shown::shown(&e))?;
            Change::Scale(positive(nominal.scale(r)?)?)
        }
        C::Ramp(text) if !text.contains('=') => {
            let shown = crate::shown::shown(text);
            let (to, over) = text
                .split_once('/')
                .ok_or_else(|| format!("ramp '{shown}': TO/OVER or TIME=RATE,… expected"))?;
            let to: Rate = to.parse().map_err(|e: String| crate::shown::shown(&e))?;
            let over = sluice_core::parse_duration(over)
                .map_err(|e| format!("ramp '{shown}': {}", crate::shown::shown(&e.to_string())))?;
            Change::Ramp {
                to: positive(nominal.scale(to)?)?,
                over: over.0,
            }
        }
        C::Ramp(text) => {
            let ramp: Ramp = text.parse().map_err(|e: String| crate::shown::shown(&e))?;
            Change::Points(ramp.scales(nominal)?)
        }
    };
    Ok(change)
}

/// The longest rate or ramp text a change may carry.
pub const MAX_CHANGE_TEXT: usize = 256 << 10;

/// The latest instant a change may name: 30 days after the job's start.
pub const MAX_CHANGE_AT_NS: u64 = 30 * 86_400 * 1_000_000_000;

/// A change's instant (`at_ns`, from the job's start; 0: as soon as it can
/// apply), refused past [`MAX_CHANGE_AT_NS`].
pub fn change_at(at_ns: u64) -> Result<Option<sluice_core::Nanos>, String> {
    if at_ns > MAX_CHANGE_AT_NS {
        return Err(format!(
            "at_ns: {at_ns}: more than 30 days after the job's start"
        ));
    }
    Ok((at_ns > 0).then_some(sluice_core::Nanos(at_ns)))
}

/// A change as a log line shows it: its kind and its text, shortened.
pub fn change_line(c: &crate::pb::change_request::Change) -> String {
    use crate::pb::change_request::Change as C;
    match c {
        C::Pause(_) => "pause".into(),
        C::Resume(_) => "resume".into(),
        C::Rate(t) => format!("rate '{}'", crate::shown::shown(t)),
        C::Ramp(t) => format!("ramp '{}'", crate::shown::shown(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::change_request::Change as C;

    #[test]
    fn a_change_to_nothing_far_or_huge_is_refused_briefly() {
        let n = Nominal::Pps(10_000.0);
        assert!(change_of(&n, &C::Rate("0".into())).is_err());
        assert!(change_of(&n, &C::Ramp("0/2s".into())).is_err());
        let huge = format!("{}k", "9".repeat(2 << 20));
        let e = change_of(&n, &C::Rate(huge)).unwrap_err();
        assert!(e.len() < 1000, "{} bytes", e.len());
        let e = change_of(&n, &C::Ramp(format!("1k/{}", "x".repeat(100_000)))).unwrap_err();
        assert!(e.len() < 1000, "{} bytes", e.len());
        assert!(change_at(u64::MAX).is_err());
        assert_eq!(change_at(0), Ok(None));
        assert_eq!(change_at(5), Ok(Some(sluice_core::Nanos(5))));
        let line = change_line(&C::Ramp("0s=1k,".repeat(20_000)));
        assert!(line.len() < 600, "{line}");
    }

    #[test]
    fn a_clients_change_is_a_change_of_scale() {
        let n = Nominal::Pps(10_000.0);
        assert_eq!(
            change_of(&n, &C::Rate("50k".into())),
            Ok(Change::Scale(5.0))
        );
        assert_eq!(
            change_of(&n, &C::Rate("x0.5".into())),
            Ok(Change::Scale(0.5))
        );
        assert_eq!(
            change_of(&n, &C::Ramp("20k/2s".into())),
            Ok(Change::Ramp {
                to: 2.0,
                over: 2_000_000_000
            })
        );
        assert_eq!(
            change_of(&n, &C::Ramp("0s=10k,1s=10k,1s=30k".into())),
            Ok(Change::Points(vec![
                (0, 1.0),
                (1_000_000_000, 1.0),
                (1_000_000_000, 3.0)
            ]))
        );
        assert_eq!(change_of(&n, &C::Pause(true)), Ok(Change::Pause));
        assert!(change_of(&n, &C::Rate("fast".into())).is_err());
        assert!(
            change_of(&Nominal::None("a top-speed run"), &C::Rate("x2".into()))
                .unwrap_err()
                .contains("top-speed")
        );
        // A top-speed job still pauses.
        assert_eq!(
            change_of(&Nominal::None("a top-speed run"), &C::Pause(true)),
            Ok(Change::Pause)
        );
    }
}
