//! ε per packet over time (TCPivo Figs. 2-9): each TX thread keeps its
//! packets' (send time, ε) in a block and hands full blocks to a writer
//! thread, never waiting for it: a block the writer has no room for is
//! counted as lost rather than delaying the next departure. Memory stays
//! at [`BLOCKS`] blocks of [`BLOCK`] rows.

use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Rows a TX thread gathers before handing them over.
pub const BLOCK: usize = 4096;
/// Blocks waiting for the writer at most (16 MiB of rows).
pub const BLOCKS: usize = 256;

/// One TX thread's rows: its packets `first..first + rows.len()`.
pub struct EpsBlock {
    pub thread: u32,
    pub first: u64,
    /// (send time since the run's start, ε), ns.
    pub rows: Vec<(u64, i64)>,
}

/// Where TX threads hand their blocks (one per run, cloned per thread).
#[derive(Clone, Debug)]
pub struct EpsLog {
    tx: Sender<EpsBlock>,
    /// Rows given up because the writer fell behind.
    pub lost: Arc<AtomicU64>,
}

impl EpsLog {
    /// The log and the receiving end its writer drains.
    pub fn new() -> (EpsLog, Receiver<EpsBlock>) {
        let (tx, rx) = crossbeam_channel::bounded(BLOCKS);
        (
            EpsLog {
                tx,
                lost: Arc::new(AtomicU64::new(0)),
            },
            rx,
        )
    }
}

/// Writes blocks as CSV (`thread,packet,t_ns,eps_ns`, a header first)
/// until every sender is gone; the rows written.
pub fn write_csv(rx: Receiver<EpsBlock>, out: &mut dyn Write) -> std::io::Result<u64> {
    writeln!(out, "thread,packet,t_ns,eps_ns")?;
    // Formatted by hand (itoa): the writer must keep pace with TX threads
    // sending millions of packets a second.
    let (mut n, mut line) = (0, Vec::with_capacity(80));
    let mut num = itoa::Buffer::new();
    for b in rx {
        let mut thread = itoa::Buffer::new();
        let thread = thread.format(b.thread).as_bytes();
        for (k, &(t, eps)) in b.rows.iter().enumerate() {
            line.clear();
            line.extend_from_slice(thread);
            line.push(b',');
            line.extend_from_slice(num.format(b.first + k as u64).as_bytes());
            line.push(b',');
            line.extend_from_slice(num.format(t).as_bytes());
            line.push(b',');
            line.extend_from_slice(num.format(eps).as_bytes());
            line.push(b'\n');
            out.write_all(&line)?;
        }
        n += b.rows.len() as u64;
    }
    Ok(n)
}

/// A TX thread's recorder.
pub(crate) struct EpsRecorder {
    log: EpsLog,
    thread: u32,
    next: u64,
    rows: Vec<(u64, i64)>,
}

impl EpsRecorder {
    pub fn new(log: EpsLog, thread: usize) -> Self {
        EpsRecorder {
            log,
            thread: thread as u32,
            next: 0,
            rows: Vec::with_capacity(BLOCK),
        }
    }

    #[inline(always)]
    pub fn record(&mut self, t_ns: u64, eps: i64) {
        self.rows.push((t_ns, eps));
        if self.rows.len() == BLOCK {
            self.hand_over(false);
        }
    }

    /// Hands the rows gathered to the writer: waiting for room at the end
    /// of the run (`last`), never while sending.
    #[inline(never)]
    pub fn hand_over(&mut self, last: bool) {
        if self.rows.is_empty() {
            return;
        }
        let rows = std::mem::replace(
            &mut self.rows,
            Vec::with_capacity(if last { 0 } else { BLOCK }),
        );
        let n = rows.len() as u64;
        let block = EpsBlock {
            thread: self.thread,
            first: self.next,
            rows,
        };
        self.next += n;
        let sent = if last {
            self.log.tx.send(block).is_ok()
        } else {
            match self.log.tx.try_send(block) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            }
        };
        if !sent {
            self.log.lost.fetch_add(n, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_reach_the_writer_in_each_threads_order() {
        let (log, rx) = EpsLog::new();
        let mut a = EpsRecorder::new(log.clone(), 0);
        let mut b = EpsRecorder::new(log.clone(), 1);
        for i in 0..(BLOCK as u64 + 3) {
            a.record(i * 10, i as i64 - 5);
        }
        b.record(7, -2);
        a.hand_over(true);
        b.hand_over(true);
        let lost = log.lost.clone();
        drop((a, b, log));
        let mut out = Vec::new();
        assert_eq!(write_csv(rx, &mut out).unwrap(), BLOCK as u64 + 4);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "thread,packet,t_ns,eps_ns");
        assert_eq!(lines[1], "0,0,0,-5");
        assert!(lines.contains(&"0,4098,40980,4093"));
        assert!(lines.contains(&"1,0,7,-2"));
        assert_eq!(lost.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_writer_that_falls_behind_costs_rows_not_time() {
        let (log, rx) = EpsLog::new();
        let mut a = EpsRecorder::new(log.clone(), 0);
        // Nobody reads: BLOCKS blocks fit, the rest are counted as lost.
        for i in 0..((BLOCKS + 2) * BLOCK) as u64 {
            a.record(i, 0);
        }
        assert_eq!(log.lost.load(Ordering::Relaxed), 2 * BLOCK as u64);
        assert_eq!(rx.len(), BLOCKS);
    }
}
