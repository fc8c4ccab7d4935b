//! A host's counters as a document: per program and in total, with the
//! times' percentiles; the body of `sluice.converse/1` (the summary) and
//! of each `sluice.converse-interval/1` line.

use crate::counters::{Counts, HostCounts, Pcts, Times};
use crate::host::Host;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct ProgramReport {
    pub name: String,
    #[serde(flatten)]
    pub counts: Counts,
    pub connect: Pcts,
    pub first_byte: Pcts,
    pub complete: Pcts,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideReport {
    /// `client` or `server`.
    pub side: &'static str,
    pub iface: String,
    pub programs: Vec<ProgramReport>,
    pub total: ProgramReport,
    pub host: HostCounts,
    /// Connections held at the end (TIME-WAIT included).
    pub active: u64,
    /// Most connections held at once.
    pub peak_active: u64,
    /// Completed connections per second over the run.
    pub completed_per_s: f64,
    /// Bytes of connection state per connection at the peak (records,
    /// table, timer links: no payload is held).
    pub state_bytes_per_conn: u64,
}

/// The report of `host` after `secs` seconds.
pub fn side(host: &Host, side: &'static str, iface: &str, secs: f64, peak: u64) -> SideReport {
    let progs = &host.x.progs;
    let mut programs = Vec::new();
    let mut all = Times::default();
    for (i, p) in progs.iter().enumerate() {
        let t = &host.x.times[i];
        all.add(t);
        programs.push(ProgramReport {
            name: p.name.clone(),
            counts: host.x.counts[i].clone(),
            connect: Pcts::of(&t.connect),
            first_byte: Pcts::of(&t.first_byte),
            complete: Pcts::of(&t.complete),
        });
    }
    let total = host.total();
    SideReport {
        side,
        iface: iface.into(),
        programs,
        total: ProgramReport {
            name: "total".into(),
            counts: total.clone(),
            connect: Pcts::of(&all.connect),
            first_byte: Pcts::of(&all.first_byte),
            complete: Pcts::of(&all.complete),
        },
        host: host.x.host.clone(),
        active: host.active(),
        peak_active: peak,
        completed_per_s: if secs > 0.0 {
            total.completed as f64 / secs
        } else {
            0.0
        },
        state_bytes_per_conn: (host.state_bytes() as u64)
            .checked_div(peak.max(1))
            .unwrap_or(0),
    }
}
