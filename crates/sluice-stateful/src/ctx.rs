//! Everything of a host but its records, which the per-connection code
//! (`tcp`, `udp`) borrows beside the one record it works on: the
//! settings, the programs, the queue of frames to send and the counters.

use crate::config::HostConfig;
use crate::conn::Conn;
use crate::counters::{Counts, HostCounts, Times};
use crate::frame::{self, Mac};
use crate::program::Program;
use rand::rngs::SmallRng;
use std::sync::Arc;

/// What happens to a record after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Keep,
    Free,
}

/// Frames to send, back to back in one buffer.
#[derive(Default)]
pub struct Outq {
    pub buf: Vec<u8>,
    pub ends: Vec<usize>,
}

impl Outq {
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Marks the bytes appended since the last frame as one frame.
    pub fn close_frame(&mut self) {
        self.ends.push(self.buf.len());
    }

    pub fn frames(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&e| {
            let f = &self.buf[start..e];
            start = e;
            f
        })
    }

    /// Forgets the first `n` frames (sent).
    pub fn consume(&mut self, n: usize) {
        if n >= self.ends.len() {
            self.buf.clear();
            self.ends.clear();
            return;
        }
        let cut = self.ends[n - 1];
        self.buf.drain(..cut);
        self.ends.drain(..n);
        for e in &mut self.ends {
            *e -= cut;
        }
    }
}

/// Everything of a host but its records: what the per-connection code
/// borrows beside the one record it works on.
pub struct Ctx {
    pub cfg: HostConfig,
    pub progs: Arc<Vec<Program>>,
    pub out: Outq,
    pub counts: Vec<Counts>,
    pub times: Vec<Times>,
    pub host: HostCounts,
    pub rng: SmallRng,
    pub ip_id: u16,
    pub gw_mac: Option<Mac>,
    /// Key of the initial sequence numbers' hash.
    pub isn_key: u64,
}

impl Ctx {
    pub fn next_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(1);
        self.ip_id
    }

    pub fn ends(&self, c: &Conn) -> frame::Ends {
        frame::Ends {
            src_mac: self.cfg.mac,
            dst_mac: self.gw_mac.unwrap_or(frame::BROADCAST),
            src: c.local_ip,
            dst: c.peer_ip,
            sport: c.local_port,
            dport: c.peer_port,
        }
    }
}
