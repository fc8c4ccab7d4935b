//! Live status line (terminal only) and `--stats-json` lines.

use crate::dest::Dest;
use sluice_engine::{IntervalStats, Observer};
use std::io::{IsTerminal, Write};

pub struct Progress {
    status: bool,
    json: Option<Dest>,
    pub json_error: Option<std::io::Error>,
}

impl Progress {
    pub fn new(quiet: bool, json: Option<Dest>) -> Self {
        Progress {
            status: !quiet && std::io::stderr().is_terminal(),
            json,
            json_error: None,
        }
    }

    /// Ends the status line so the summary starts on a fresh line.
    pub fn finish(&mut self) {
        if self.status {
            eoutln!();
        }
        if let Some(w) = self.json.take() {
            if let Err(e) = w.commit() {
                self.json_error.get_or_insert(e);
            }
        }
    }
}

pub fn status_line(s: &IntervalStats) -> String {
    let eps = s
        .eps
        .map(|p| format!("  ε p99 {} ns", p.percentiles.p99_ns))
        .unwrap_or_default();
    format!(
        "{:>8.1}s {:>12} pkts {:>12.0} pps {:>10.1} Mbit/s{eps}  late {}  dropped {}",
        s.t,
        s.packets,
        s.pps,
        s.bps / 1e6,
        s.late,
        s.dropped
    )
}

impl Observer for Progress {
    fn interval(&mut self, s: &IntervalStats) {
        if self.status {
            eout!("\r{}\x1b[K", status_line(s));
        }
        if let Some(w) = &mut self.json {
            let line = crate::json::line(crate::json::Kind::Interval, s).unwrap_or_default();
            if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
                self.json_error.get_or_insert(e);
            }
        }
    }

    fn wants_flows(&self) -> bool {
        self.json.is_some()
    }
}
