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
    /// Connections completed by each thread (`--threads`).
    pub thread_completed: Vec<u64>,
}

/// One host's counters at one moment, to send across threads and add
/// up (the threads of one side are one side in the report).
#[derive(Debug, Clone)]
pub struct Snap {
    pub side: &'static str,
    pub iface: String,
    pub names: Vec<String>,
    pub counts: Vec<Counts>,
    pub times: Vec<Times>,
    pub host: HostCounts,
    pub active: u64,
    pub open: u64,
    pub peak: u64,
    pub state_bytes: u64,
    /// Connections completed by each thread of the side.
    pub per_thread: Vec<u64>,
}

impl Snap {
    pub fn of(host: &Host, side: &'static str, iface: &str, peak: u64) -> Snap {
        Snap {
            side,
            iface: iface.into(),
            names: host.x.progs.iter().map(|p| p.name.clone()).collect(),
            counts: host.x.counts.clone(),
            times: host.x.times.clone(),
            host: host.x.host.clone(),
            active: host.active(),
            open: host.open_now(),
            peak,
            state_bytes: host.state_bytes() as u64,
            per_thread: vec![host.total().completed],
        }
    }

    /// Adds another thread's snapshot of the same side.
    pub fn add(&mut self, o: &Snap) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            a.add(b);
        }
        for (a, b) in self.times.iter_mut().zip(&o.times) {
            a.add(b);
        }
        let h = &mut self.host;
        let g = &o.host;
        h.rx_frames += g.rx_frames;
        h.rx_malformed += g.rx_malformed;
        h.rx_ignored += g.rx_ignored;
        h.rx_stray += g.rx_stray;
        h.rx_cut += g.rx_cut;
        h.arp_replies += g.arp_replies;
        h.arp_requests += g.arp_requests;
        h.tx_frames += g.tx_frames;
        h.tx_dropped += g.tx_dropped;
        h.pool_busy += g.pool_busy;
        h.table_full += g.table_full;
        self.active += o.active;
        self.open += o.open;
        self.peak += o.peak;
        self.state_bytes += o.state_bytes;
        self.per_thread.extend_from_slice(&o.per_thread);
    }

    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for c in &self.counts {
            t.add(c);
        }
        t
    }
}

/// Adds up the snapshots of each side (threads), sides in first-seen order.
pub fn merge(snaps: &[Snap]) -> Vec<Snap> {
    let mut out: Vec<Snap> = Vec::new();
    for s in snaps {
        match out.iter_mut().find(|o| o.side == s.side) {
            Some(o) => o.add(s),
            None => out.push(s.clone()),
        }
    }
    out
}

/// The report of one side after `secs` seconds.
pub fn side(s: &Snap, secs: f64) -> SideReport {
    let mut programs = Vec::new();
    let mut all = Times::default();
    for (i, name) in s.names.iter().enumerate() {
        let t = &s.times[i];
        all.add(t);
        programs.push(ProgramReport {
            name: name.clone(),
            counts: s.counts[i].clone(),
            connect: Pcts::of(&t.connect),
            first_byte: Pcts::of(&t.first_byte),
            complete: Pcts::of(&t.complete),
        });
    }
    let total = s.total();
    SideReport {
        side: s.side,
        iface: s.iface.clone(),
        programs,
        total: ProgramReport {
            name: "total".into(),
            counts: total.clone(),
            connect: Pcts::of(&all.connect),
            first_byte: Pcts::of(&all.first_byte),
            complete: Pcts::of(&all.complete),
        },
        host: s.host.clone(),
        active: s.active,
        peak_active: s.peak,
        completed_per_s: if secs > 0.0 {
            total.completed as f64 / secs
        } else {
            0.0
        },
        state_bytes_per_conn: s.state_bytes / s.peak.max(1),
        thread_completed: s.per_thread.clone(),
    }
}
