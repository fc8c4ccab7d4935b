//! What the worker asks of whoever runs its local jobs in-process (the
//! `sluice` binary: `run::run_job` with a live rate), and how a change a
//! client asks for becomes a change of the job's rate timeline.

use sluice_engine::LiveRate;
use sluice_job::rate::{Nominal, Ramp, Rate};
use sluice_job::WorkerJob;
use sluice_pace::Change;
use std::sync::atomic::AtomicBool;
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

/// Runs a local job in this process.
pub trait LocalRunner: Send + Sync + 'static {
    /// Checks `job` and opens its inputs; refused (the command line's
    /// message) before anything is sent, else started on threads of its
    /// own, stopped when `stop` is set, reporting to `events` until it
    /// finishes or fails.
    /// `paused`: nothing is sent until the job's rate is resumed.
    fn start(
        &self,
        job: WorkerJob,
        paused: bool,
        stop: Arc<AtomicBool>,
        events: Events,
    ) -> Result<Started, String>;
}

/// A client's change of a job planned at `nominal`, as a change of its
/// timeline. `ramp`: `TO/OVER` from the rate now, or points from now
/// (`TIME=RATE,…`).
pub fn change_of(
    nominal: &Nominal,
    c: &crate::pb::change_request::Change,
) -> Result<Change, String> {
    use crate::pb::change_request::Change as C;
    Ok(match c {
        C::Pause(true) => Change::Pause,
        C::Resume(true) => Change::Resume,
        C::Pause(false) | C::Resume(false) => return Err("pause or resume: true expected".into()),
        C::Rate(r) => {
            let r: Rate = r.parse()?;
            Change::Scale(nominal.scale(r)?)
        }
        C::Ramp(text) if !text.contains('=') => {
            let (to, over) = text
                .split_once('/')
                .ok_or_else(|| format!("ramp {text:?}: TO/OVER or TIME=RATE,… expected"))?;
            let to: Rate = to.parse()?;
            let over =
                sluice_core::parse_duration(over).map_err(|e| format!("ramp {text:?}: {e}"))?;
            Change::Ramp {
                to: nominal.scale(to)?,
                over: over.0,
            }
        }
        C::Ramp(text) => {
            let ramp: Ramp = text.parse()?;
            Change::Points(ramp.scales(nominal)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::change_request::Change as C;

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
