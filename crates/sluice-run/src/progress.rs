//! Live status line (terminal only) and `--stats-json` lines.

use crate::dest::Dest;
use sluice_engine::{IntervalStats, Observer, PassStats};
use std::io::{IsTerminal, Write};

pub struct Progress {
    status: bool,
    json: Option<Dest>,
    pub json_error: Option<std::io::Error>,
    /// The run's length where it is known: `--duration`, `--limit`.
    pub length: Length,
    /// `--rx`: the receiver's latest count, shown and written after each
    /// interval.
    pub rx: Option<sluice_receive::SharedLive>,
    /// Observers beside the status line and `--stats-json` (`--metrics`,
    /// a caller of `run::run_job`): every interval and pass, as they
    /// happen.
    pub watch: Vec<Watch>,
}

/// An observer a caller hands a job: every interval and pass, and with
/// `--rx` the receiver's count after each interval.
pub trait Watcher: Observer {
    fn rx(&mut self, _doc: &sluice_receive::RxDoc) {}
}

pub type Watch = Box<dyn Watcher + Send>;

/// What ends a run, when the user said: the status line shows how far it
/// is and when it will end.
#[derive(Clone, Copy, Debug, Default)]
pub struct Length {
    pub duration_s: Option<f64>,
    pub packets: Option<u64>,
}

impl Length {
    /// The share of the run done (0..=1) at `t` seconds with `packets`
    /// sent: the larger of the two, as either limit ends the run.
    pub fn done(&self, t: f64, packets: u64) -> Option<f64> {
        let by_time = self.duration_s.filter(|d| *d > 0.0).map(|d| t / d);
        let by_count = self
            .packets
            .filter(|n| *n > 0)
            .map(|n| packets as f64 / n as f64);
        match (by_time, by_count) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
        .map(|f| f.clamp(0.0, 1.0))
    }
}

impl Progress {
    pub fn new(quiet: bool, json: Option<Dest>) -> Self {
        Progress {
            status: !quiet && std::io::stderr().is_terminal(),
            json,
            json_error: None,
            length: Length::default(),
            rx: None,
            watch: Vec::new(),
        }
    }

    /// `--rx`: the receiver's final count (`final: true`) as the last
    /// line, so that the lines end with the counts the summary gives.
    pub fn rx_final(&mut self, doc: &sluice_receive::RxDoc) {
        self.json_line(crate::json::Kind::Rx, doc);
    }

    /// Ends the status line so the summary starts on a fresh line, and
    /// the `--stats-json` log: put in place when the run is `complete`,
    /// else kept beside an earlier log.
    pub fn finish(&mut self, complete: bool) {
        if self.status {
            eoutln!();
        }
        if let Some(w) = self.json.take() {
            if let Err(e) = w.end(complete) {
                self.json_error.get_or_insert(e);
            }
        }
    }
}

impl Progress {
    fn json_line(&mut self, kind: crate::json::Kind, body: &impl serde::Serialize) {
        if let Some(w) = &mut self.json {
            let line = crate::json::line(kind, body).unwrap_or_default();
            if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
                self.json_error.get_or_insert(e);
            }
        }
    }
}

/// Late packets (of those sent) past which the status line suggests
/// `sluice doctor`: the machine, not the schedule, is the likely cause.
const MANY_LATE: f64 = 0.05;

pub fn status_line(s: &IntervalStats, length: &Length) -> String {
    let eps = s
        .eps
        .map(|p| format!("  ε p99 {}", sluice_engine::duration(p.percentiles.p99_ns)))
        .unwrap_or_default();
    let progress = match length.done(s.t, s.packets) {
        Some(f) if f > 0.0 => {
            let left = s.t * (1.0 - f) / f;
            format!("  {:>3.0}% ETA {}", f * 100.0, clock(left))
        }
        Some(_) => "    0%".to_string(),
        None => String::new(),
    };
    let hint = if s.packets >= 1000 && s.late as f64 > MANY_LATE * s.packets as f64 {
        "  (many late: `sluice doctor` says why)"
    } else {
        ""
    };
    format!(
        "{:>8.1}s {:>12} pkts {:>12.0} pps {:>10.1} Mbit/s{eps}  late {}  dropped {}{progress}{hint}",
        s.t,
        s.packets,
        s.pps,
        s.bps / 1e6,
        s.late,
        s.dropped
    )
}

/// Seconds as `m:ss` (or `h:mm:ss`).
fn clock(secs: f64) -> String {
    let t = secs.max(0.0).round() as u64;
    if t >= 3600 {
        format!("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
    } else {
        format!("{}:{:02}", t / 60, t % 60)
    }
}

impl Observer for Progress {
    fn interval(&mut self, s: &IntervalStats) {
        let (doc, glance) = match &self.rx {
            Some(live) => {
                let mut l = live.lock().unwrap_or_else(|e| e.into_inner());
                (l.doc.take(), l.glance.clone())
            }
            None => (None, None),
        };
        if self.status {
            let rx = glance.map(|g| format!("  {g}")).unwrap_or_default();
            eout!("\r{}{rx}\x1b[K", status_line(s, &self.length));
        }
        self.json_line(crate::json::Kind::Interval, s);
        if let Some(doc) = &doc {
            self.json_line(crate::json::Kind::Rx, doc);
        }
        for w in &mut self.watch {
            w.interval(s);
            if let Some(doc) = &doc {
                w.rx(doc);
            }
        }
    }

    fn pass(&mut self, p: &PassStats) {
        self.json_line(crate::json::Kind::Pass, p);
        for w in &mut self.watch {
            w.pass(p);
        }
    }

    fn wants_flows(&self) -> bool {
        self.json.is_some() || self.watch.iter().any(|w| w.wants_flows())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(t: f64, packets: u64, late: u64) -> IntervalStats {
        IntervalStats {
            t,
            packets,
            bytes: packets * 64,
            late,
            dropped: 0,
            pps: 1000.0,
            bps: 512_000.0,
            eps: None,
            flows: Vec::new(),
            active_flows: None,
        }
    }

    #[test]
    fn the_status_line_shows_progress_eta_and_a_hint_when_many_are_late() {
        let len = Length {
            duration_s: Some(10.0),
            packets: None,
        };
        let l = status_line(&interval(2.5, 2500, 0), &len);
        assert!(l.contains(" 25% ETA 0:08"), "{l}");
        assert!(!l.contains("doctor"), "{l}");
        let l = status_line(&interval(2.5, 2500, 500), &Length::default());
        assert!(!l.contains('%') && l.contains("`sluice doctor`"), "{l}");
        // A packet limit reached first ends the run first.
        let len = Length {
            duration_s: Some(100.0),
            packets: Some(1000),
        };
        assert!(status_line(&interval(1.0, 500, 0), &len).contains(" 50% ETA 0:01"));
        assert_eq!(clock(3725.0), "1:02:05");
    }
}
