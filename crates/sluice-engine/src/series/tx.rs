//! A TX thread of time-series play: pulls chunks from its in-order queue
//! (and, for out-of-order threads, single entries from the out-of-order
//! queue into a local heap ordered by due time), waits for each record's
//! time, builds its datagram and sends it.

use super::config::{SeriesConfig, SeriesPayload};
use super::lanes::{Chunk, Lanes, OooItem};
use crate::stats::{CounterSnapshot, SharedCounters};
use sluice_core::{ErrorHistogram, MonoTime, Nanos};
use sluice_pace::{Decision, Pacer, Waiter};
use sluice_sink::{Sink, SinkError, Takes};
use sluice_source::series::{DeviceTable, Entry, Filled, FlowMap, HEADER_LEN};
use sluice_wire::{Udp4Error, Udp4Template};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HANDOFF: Nanos = Nanos::from_millis(100);

/// Per-flow counters, indexed by flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlowCount {
    pub sent: u64,
    pub bytes: u64,
    pub late: u64,
    pub dropped: u64,
}

pub(crate) struct TxContext {
    pub lanes: Arc<Lanes>,
    pub queue: usize,
    /// This thread also sends out-of-order records.
    pub ooo: bool,
    pub sink: Box<dyn Sink>,
    pub waiter: Box<dyn Waiter + Send>,
    pub pacer: Pacer,
    pub topspeed: bool,
    pub late_threshold: Nanos,
    pub duration: Option<Nanos>,
    /// T_g in ns since the epoch: pcap output is stamped with record time.
    pub stamp_base: u64,
    pub counters: Arc<SharedCounters>,
    pub flow_counts: Arc<Mutex<Vec<FlowCount>>>,
    pub table: Arc<Mutex<DeviceTable>>,
    pub cfg: Arc<SeriesConfig>,
}

pub(crate) struct TxOutcome {
    pub totals: CounterSnapshot,
    pub frames: u64,
    pub out_of_order: u64,
    pub last_send: MonoTime,
    pub sink: String,
    pub error: Option<SinkError>,
}

/// An out-of-order entry in the local heap (earliest due first).
struct Pending {
    due: Nanos,
    seq: u64,
    item: OooItem,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (o.due, o.seq).cmp(&(self.due, self.seq)) // reversed: min-heap
    }
}

struct Tx {
    cx: TxContext,
    c: CounterSnapshot,
    hist: ErrorHistogram,
    flows: Vec<FlowCount>,
    templates: Vec<Option<Udp4Template>>,
    flow_map: FlowMap,
    takes: Takes,
    ip_id: u16,
    frames: u64,
    out_of_order: u64,
    now: MonoTime,
    last_send: MonoTime,
    last_handoff: MonoTime,
    heap: BinaryHeap<Pending>,
    seq: u64,
    error: Option<SinkError>,
}

pub(crate) fn run(cx: TxContext) -> TxOutcome {
    let start = cx.pacer.start();
    let takes = cx.sink.takes();
    let flow_map = cx.cfg.flows.clone();
    let mut tx = Tx {
        now: cx.waiter.now(),
        cx,
        c: CounterSnapshot::default(),
        hist: ErrorHistogram::new(),
        flows: Vec::new(),
        templates: Vec::new(),
        flow_map,
        takes,
        ip_id: 0,
        frames: 0,
        out_of_order: 0,
        last_send: start,
        last_handoff: start,
        heap: BinaryHeap::new(),
        seq: 0,
        error: None,
    };
    tx.main_loop();
    if let Err(e) = tx.cx.sink.finish() {
        tx.error.get_or_insert(e);
    }
    if tx.cx.topspeed {
        tx.last_send = tx.cx.waiter.now();
    }
    tx.cx.counters.publish(&tx.c);
    if let Ok(mut shared) = tx.cx.flow_counts.lock() {
        shared.clone_from(&tx.flows);
    }
    tx.cx.counters.eps.finish(tx.hist);
    TxOutcome {
        totals: tx.c,
        frames: tx.frames,
        out_of_order: tx.out_of_order,
        last_send: tx.last_send,
        sink: tx.cx.sink.describe(),
        error: tx.error,
    }
}

impl Tx {
    fn stopping(&self) -> bool {
        self.error.is_some()
            || self.cx.lanes.stopped()
            || self
                .cx
                .duration
                .is_some_and(|d| self.now.since(self.cx.pacer.start()) >= d)
    }

    fn main_loop(&mut self) {
        let lanes = self.cx.lanes.clone();
        let q = &lanes.queues[self.cx.queue];
        let mut idle = 0u32;
        loop {
            if self.stopping() {
                return;
            }
            let Some(chunk) = q.pop() else {
                let done = lanes.producers[self.cx.queue].load(Ordering::Acquire) == 0;
                if done && q.is_empty() {
                    break;
                }
                // Nothing queued: what is pending leaves, out-of-order records
                // due by now go, then back off briefly.
                self.flush();
                self.send_ooo_until(self.now);
                idle += 1;
                if idle > 64 {
                    std::thread::sleep(Duration::from_micros(20));
                }
                self.now = self.cx.waiter.now();
                continue;
            };
            idle = 0;
            self.send_chunk(&chunk);
            let Chunk { buf, mut entries } = chunk;
            drop(buf);
            entries.clear();
            let _ = lanes.spare.push(entries);
            self.maybe_publish();
        }
        // In-order work is done; out-of-order records may still be queued.
        if self.cx.ooo {
            while !self.stopping() {
                self.pull_ooo();
                if self.heap.is_empty() {
                    if lanes.workers_left.load(Ordering::Acquire) == 0 && lanes.ooo.is_empty() {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(20));
                    continue;
                }
                let due = self.heap.peek().map(|p| p.due).unwrap_or(Nanos(0));
                self.send_ooo_until_due(due);
                self.maybe_publish();
            }
        }
    }

    fn send_chunk(&mut self, chunk: &Chunk) {
        for e in &chunk.entries {
            if self.cx.ooo {
                self.pull_ooo();
                self.send_ooo_until_due(e.due);
            }
            if self.stopping() {
                return;
            }
            self.send_entry(&chunk.buf, e, false);
        }
    }

    /// Moves queued out-of-order items into the local heap.
    fn pull_ooo(&mut self) {
        if !self.cx.ooo {
            return;
        }
        for _ in 0..1024 {
            let Some(item) = self.cx.lanes.ooo.pop() else {
                break;
            };
            self.seq += 1;
            self.heap.push(Pending {
                due: item.entry.due,
                seq: self.seq,
                item,
            });
        }
    }

    /// Sends heap entries due no later than `due`.
    fn send_ooo_until_due(&mut self, due: Nanos) {
        while self.heap.peek().is_some_and(|p| p.due <= due) {
            if self.stopping() {
                return;
            }
            let Some(p) = self.heap.pop() else { break };
            self.send_entry(&p.item.buf, &p.item.entry, true);
        }
    }

    /// Sends heap entries already due at `now`.
    fn send_ooo_until(&mut self, now: MonoTime) {
        let due = Nanos(now.since(self.cx.pacer.start()).0);
        self.send_ooo_until_due(due);
    }

    fn flush(&mut self) {
        if let Err(e) = self.cx.sink.flush() {
            self.error.get_or_insert(e);
        }
    }

    fn send_entry(&mut self, buf: &Filled, e: &Entry, ooo: bool) {
        let eps = if self.cx.topspeed {
            Some(0)
        } else {
            let mut waited = false;
            loop {
                let d = if waited {
                    self.cx.pacer.poll_waited(e.due, self.now)
                } else {
                    self.cx.pacer.poll(e.due, self.now)
                };
                match d {
                    Decision::WaitUntil(t) => {
                        waited = true;
                        self.flush();
                        let lanes = &self.cx.lanes;
                        self.now = self.cx.waiter.wait_until(t, &|| lanes.stopped());
                        if self.cx.lanes.stopped() {
                            return;
                        }
                    }
                    Decision::Send { eps_ns } => break Some(eps_ns),
                    Decision::Drop { .. } => break None,
                }
            }
        };
        let flow = e.flow as usize;
        if self.flows.len() <= flow {
            self.flows.resize(flow + 1, FlowCount::default());
        }
        let Some(eps) = eps else {
            self.c.dropped += 1;
            self.flows[flow].dropped += 1;
            self.now = self.cx.waiter.now();
            return;
        };
        let rec = &buf.bytes()[e.offset as usize..e.offset as usize + e.len as usize];
        let payload = match self.cx.cfg.payload {
            SeriesPayload::Data => &rec[HEADER_LEN..],
            SeriesPayload::Record => rec,
        };
        let stamp = self
            .cx
            .stamp_base
            .wrapping_add(self.now.since(self.cx.pacer.start()).0);
        match self.build_and_send(e.flow, payload, stamp) {
            Ok(frames) => {
                self.frames += frames;
                self.c.packets += 1;
                self.c.bytes += payload.len() as u64;
                let f = &mut self.flows[flow];
                f.sent += 1;
                f.bytes += payload.len() as u64;
                if ooo {
                    self.out_of_order += 1;
                }
            }
            Err(err) if err.is_per_packet() => self.c.oversize += 1,
            Err(err) => {
                self.error.get_or_insert(err);
                return;
            }
        }
        if !self.cx.topspeed {
            self.hist.record(eps);
            if eps > self.cx.late_threshold.0 as i64 {
                self.c.late += 1;
                self.flows[flow].late += 1;
            }
            self.last_send = self.now;
            self.now = self.cx.waiter.now();
        }
    }

    /// Sends one datagram; returns the frames it took.
    fn build_and_send(&mut self, flow: u32, payload: &[u8], stamp: u64) -> Result<u64, SinkError> {
        if self.takes == Takes::Datagrams {
            self.cx.sink.send(payload, stamp)?;
            return Ok(1);
        }
        let f = flow as usize;
        if self.templates.len() <= f {
            self.templates.resize(f + 1, None);
        }
        if self.templates[f].is_none() {
            let (dev, copy) = match self.cx.table.lock() {
                Ok(t) => t
                    .flow_device(flow)
                    .map(|(d, c)| (*d, c))
                    .unwrap_or(([0; 16], 0)),
                Err(_) => ([0; 16], 0),
            };
            let cfg = &self.cx.cfg;
            self.templates[f] = Some(Udp4Template::new(
                cfg.src_mac,
                cfg.dst_mac,
                self.flow_map.flow(&dev, copy),
                cfg.ttl,
            ));
        }
        let t = self.templates[f].as_ref().expect("template just built");
        self.ip_id = self.ip_id.wrapping_add(1);
        let mut frags = t
            .fragments(payload, self.ip_id, self.cx.cfg.mtu)
            .map_err(|e| match e {
                Udp4Error::TooLong(len) => SinkError::Oversize {
                    len,
                    limit: sluice_wire::udp4::MAX_PAYLOAD,
                },
                Udp4Error::Mtu(m) => SinkError::Config(format!("--mtu {m} is below 68")),
            })?;
        let mut n = 0;
        while let Some((head, body)) = frags.next_fragment() {
            self.cx.sink.send_parts(head, body, stamp)?;
            n += 1;
        }
        Ok(n)
    }

    fn maybe_publish(&mut self) {
        self.cx.counters.publish(&self.c);
        if self.now.since(self.last_handoff) >= HANDOFF
            && self.cx.counters.eps.offer(&mut self.hist)
        {
            // Never waits for the aggregator: if it is reading, next time.
            if let Ok(mut shared) = self.cx.flow_counts.try_lock() {
                shared.clone_from(&self.flows);
            }
            self.last_handoff = self.now;
        }
    }
}
