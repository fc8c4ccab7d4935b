//! A TX thread of time-series play: pulls chunks from its in-order queue
//! (and, for out-of-order threads, single entries from the out-of-order
//! queue into a local heap ordered by due time), waits for each record's
//! time, builds its datagram and sends it. With a rescue board (several TX
//! threads, real time), it shows its chunk there and, while it waits,
//! sends the records another thread let fall overdue.

use super::board::Board;
use super::config::{SeriesConfig, SeriesPayload};
use super::lanes::{Chunk, Lanes, OooItem};
use super::perflow::{FlowCount, FlowCounters, Pages};
use crate::tx::{Paced, TxCore, TxReport, TxSetup, Verdict};
use sluice_core::{MonoTime, Nanos};
use sluice_sink::{SinkError, Takes};
use sluice_source::series::{DeviceTable, DueRecord, Filled, FlowMap, HEADER_LEN};
use sluice_wire::{Udp4Error, Udp4Template};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

/// Longest a rescuing thread waits without looking at the board again (a
/// thread may show a new chunk meanwhile).
const REWATCH: Nanos = Nanos::from_micros(20);
/// Pause of a TX thread with nothing queued.
const IDLE_NAP: Nanos = Nanos::from_micros(20);

pub(crate) struct SeriesTx {
    /// Pacing, sink and counters, as for every source.
    pub setup: TxSetup,
    /// This thread's number (its slot on the board) and the thread count.
    pub index: usize,
    pub threads: usize,
    pub lanes: Arc<Lanes>,
    /// Rescue between TX threads (None: one thread, or no real time).
    pub board: Option<Arc<Board>>,
    pub queue: usize,
    /// This thread also sends out-of-order records.
    pub ooo: bool,
    /// This thread's per-flow counters, read by the aggregator.
    pub flow_counts: Arc<FlowCounters>,
    /// Its frame templates (empty; allocated before the start).
    pub templates: Templates,
    pub table: Arc<Mutex<DeviceTable>>,
    pub cfg: Arc<SeriesConfig>,
}

/// What a time-series TX thread reports: what every TX thread does, and
/// its own counts.
pub(crate) struct SeriesTxReport {
    pub tx: TxReport,
    pub frames: u64,
    pub out_of_order: u64,
    /// Records of other threads this one sent (or dropped) for them.
    pub rescued: u64,
}

/// Frame template of each flow, built on its first record.
pub(crate) type Templates = Pages<OnceLock<Udp4Template>>;

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
    core: TxCore,
    index: usize,
    threads: usize,
    lanes: Arc<Lanes>,
    board: Option<Arc<Board>>,
    queue: usize,
    ooo: bool,
    flow_counts: Arc<FlowCounters>,
    templates: Templates,
    table: Arc<Mutex<DeviceTable>>,
    cfg: Arc<SeriesConfig>,
    flow_map: FlowMap,
    takes: Takes,
    /// IPv4 identification of the last datagram. Threads take turns
    /// (thread t of n uses t + 1, t + 1 + n, ...), so a flow whose records
    /// several threads send never sees one ID twice within 65 536 / n
    /// datagrams, which fragment reassembly relies on.
    ip_id: u16,
    frames: u64,
    out_of_order: u64,
    rescued: u64,
    heap: BinaryHeap<Pending>,
    seq: u64,
}

pub(crate) fn run(cx: SeriesTx) -> SeriesTxReport {
    let takes = cx.setup.sink.takes();
    let flow_map = cx.cfg.flows.clone();
    let ip_id = (cx.index as u16 + 1).wrapping_sub(cx.threads as u16);
    let mut tx = Tx {
        core: TxCore::new(cx.setup),
        index: cx.index,
        threads: cx.threads,
        lanes: cx.lanes,
        board: cx.board,
        queue: cx.queue,
        ooo: cx.ooo,
        flow_counts: cx.flow_counts,
        templates: cx.templates,
        table: cx.table,
        cfg: cx.cfg,
        flow_map,
        takes,
        ip_id,
        frames: 0,
        out_of_order: 0,
        rescued: 0,
        heap: BinaryHeap::new(),
        seq: 0,
    };
    tx.main_loop();
    SeriesTxReport {
        frames: tx.frames,
        out_of_order: tx.out_of_order,
        rescued: tx.rescued,
        tx: tx.core.finish(),
    }
}

impl Paced for Tx {
    fn core(&mut self) -> &mut TxCore {
        &mut self.core
    }

    fn wait(&mut self, t: MonoTime) {
        Tx::wait(self, t);
    }
}

impl Tx {
    fn stopping(&self) -> bool {
        self.core.error.is_some() || self.lanes.stopped() || self.core.past_duration()
    }

    fn main_loop(&mut self) {
        let lanes = self.lanes.clone();
        let q = &lanes.queues[self.queue];
        let mut idle = 0u32;
        loop {
            if self.stopping() {
                return;
            }
            let Some(chunk) = q.pop() else {
                let done = lanes.producers[self.queue].load(Ordering::Acquire) == 0;
                if done && q.is_empty() {
                    break;
                }
                // Nothing queued: what is pending leaves, out-of-order records
                // due by now go, then back off briefly.
                self.core.flush();
                self.send_ooo_until(self.core.now);
                idle += 1;
                if idle > 64 {
                    self.nap();
                }
                self.core.now = self.core.waiter.now();
                continue;
            };
            idle = 0;
            let done = match self.board.clone() {
                Some(board) => self.send_shown(&board, chunk),
                None => {
                    self.send_chunk(&chunk);
                    Some(chunk)
                }
            };
            // A chunk a rescuer still holds is not recycled.
            if let Some(Chunk { buf, mut entries }) = done {
                drop(buf);
                entries.clear();
                let _ = lanes.spare.push(entries);
            }
            self.core.publish();
        }
        // In-order work is done; out-of-order records may still be queued.
        if self.ooo {
            while !self.stopping() {
                self.pull_ooo();
                if self.heap.is_empty() {
                    if lanes.workers_left.load(Ordering::Acquire) == 0 && lanes.ooo.is_empty() {
                        break;
                    }
                    self.nap();
                    continue;
                }
                let due = self.heap.peek().map(|p| p.due).unwrap_or(Nanos(0));
                self.send_ooo_until_due(due);
                self.core.publish();
            }
        }
        // Done, but the others' last chunks may still need a rescuer.
        if let Some(board) = self.board.clone() {
            while board.others_busy(self.index) && !self.stopping() {
                self.nap();
            }
        }
    }

    /// A short pause with nothing of its own to send: sleeps, or, with a
    /// board, keeps watching it.
    fn nap(&mut self) {
        if self.board.is_some() {
            self.wait(self.core.now + IDLE_NAP);
        } else {
            std::thread::sleep(IDLE_NAP.to_std());
        }
    }

    /// Sends a chunk shown on the board: each record is claimed before it
    /// goes; records a rescuer claimed are skipped. Returns the chunk unless
    /// a rescuer still holds it.
    fn send_shown(&mut self, board: &Board, chunk: Chunk) -> Option<Chunk> {
        let (me, pacer) = (self.index, self.core.pacer);
        let chunk = Arc::new(chunk);
        let Some(first) = chunk.entries.first() else {
            return Arc::try_unwrap(chunk).ok();
        };
        let generation = board.show(me, chunk.clone(), pacer.deadline(first.due));
        let mut i = 0;
        while let Some(&e) = chunk.entries.get(i) {
            if !self.ready_for(e.due) {
                break;
            }
            let Some(verdict) = self.pace(e.due) else {
                break;
            };
            let next = chunk.entries.get(i + 1).map(|n| pacer.deadline(n.due));
            match board.claim(me, generation, i, next) {
                Ok(()) => {
                    self.deliver(&chunk.buf, &e, verdict, false);
                    i += 1;
                }
                Err(unclaimed) => i = unclaimed,
            }
        }
        board.hide(me);
        Arc::try_unwrap(chunk).ok()
    }

    /// Waits until `t`. With a board, wakes up whenever a record of another
    /// thread may have fallen overdue and sends what it can claim.
    fn wait(&mut self, t: MonoTime) {
        let board = self.board.clone();
        loop {
            let target = match &board {
                None => t,
                Some(b) => {
                    let t = t.min(self.core.now + REWATCH);
                    b.watch(self.index).map_or(t, |w| t.min(w))
                }
            };
            self.core.wait_until(target);
            if self.core.now >= t || self.lanes.stopped() {
                return;
            }
            if let Some(b) = &board {
                self.rescue(b);
            }
        }
    }

    /// Sends (or drops, past the drift window) every record of another
    /// thread that is overdue now.
    fn rescue(&mut self, board: &Board) {
        let pacer = self.core.pacer;
        while let Some(r) = board.rescue(self.index, self.core.now, |d| pacer.deadline(d)) {
            let e = r.chunk.entries[r.index];
            // Claimed only once overdue, so never a wait.
            let verdict =
                Verdict::of(pacer.poll(e.due, self.core.now)).unwrap_or(Verdict::Send { eps: 0 });
            self.deliver(&r.chunk.buf, &e, verdict, false);
            self.core.flush();
            self.rescued += 1;
        }
    }

    fn send_chunk(&mut self, chunk: &Chunk) {
        for e in &chunk.entries {
            if !self.ready_for(e.due) {
                return;
            }
            self.send_entry(&chunk.buf, e, false);
        }
    }

    /// Before an in-order record due at `due`: out-of-order records due
    /// earlier go first. False when the run is stopping.
    fn ready_for(&mut self, due: Nanos) -> bool {
        if self.ooo {
            self.pull_ooo();
            self.send_ooo_until_due(due);
        }
        !self.stopping()
    }

    /// Moves queued out-of-order items into the local heap.
    fn pull_ooo(&mut self) {
        if !self.ooo {
            return;
        }
        for _ in 0..1024 {
            let Some(item) = self.lanes.ooo.pop() else {
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
        let due = Nanos(now.since(self.core.pacer.start()).0);
        self.send_ooo_until_due(due);
    }

    fn send_entry(&mut self, buf: &Filled, e: &DueRecord, ooo: bool) {
        if let Some(verdict) = self.pace(e.due) {
            self.deliver(buf, e, verdict, ooo);
        }
    }

    /// Waits for a record due at `due` (rescuing meanwhile, with a board);
    /// None if the run stopped meanwhile.
    fn pace(&mut self, due: Nanos) -> Option<Verdict> {
        crate::tx::pace(self, due)
    }

    /// Sends (or drops) a record its pacing has decided on, and counts it.
    fn deliver(&mut self, buf: &Filled, e: &DueRecord, verdict: Verdict, ooo: bool) {
        let count = self.send_record(buf, e, verdict, ooo);
        if let Some(cell) = self.flow_counts.slot(e.flow as usize) {
            cell.add(count);
        }
    }

    /// [`deliver`](Self::deliver) less the per-flow counters: returns what
    /// they gain.
    fn send_record(
        &mut self,
        buf: &Filled,
        e: &DueRecord,
        verdict: Verdict,
        ooo: bool,
    ) -> FlowCount {
        let mut count = FlowCount::default();
        let Verdict::Send { eps } = verdict else {
            self.core.dropped();
            count.dropped = 1;
            return count;
        };
        let rec = &buf.bytes()[e.offset as usize..e.offset as usize + e.len as usize];
        let payload = match self.cfg.payload {
            SeriesPayload::Data => &rec[HEADER_LEN..],
            SeriesPayload::Record => rec,
        };
        let stamp = self.core.stamp();
        match self.build_and_send(e.flow, payload, stamp) {
            Ok(frames) => {
                self.frames += frames;
                count.sent = 1;
                count.bytes = payload.len() as u64;
                if ooo {
                    self.out_of_order += 1;
                }
                count.late = u64::from(self.core.sent(eps, payload.len()));
            }
            Err(err) => {
                self.core.failed(err);
                if !self.core.topspeed {
                    self.core.now = self.core.waiter.now();
                }
            }
        }
        count
    }

    /// Sends one datagram; returns the frames it took.
    fn build_and_send(&mut self, flow: u32, payload: &[u8], stamp: u64) -> Result<u64, SinkError> {
        if self.takes == Takes::Datagrams {
            self.core.sink.send(payload, stamp)?;
            return Ok(1);
        }
        let (table, cfg, flow_map) = (&self.table, &self.cfg, &self.flow_map);
        let make = || {
            let (dev, copy) = match table.lock() {
                Ok(t) => t
                    .flow_device(flow)
                    .map(|(d, c)| (*d, c))
                    .unwrap_or(([0; 16], 0)),
                Err(_) => ([0; 16], 0),
            };
            Udp4Template::new(cfg.src_mac, cfg.dst_mac, flow_map.flow(&dev, copy), cfg.ttl)
        };
        // Past MAX_FLOWS flows, templates are built per datagram.
        let built;
        let t = match self.templates.slot(flow as usize) {
            Some(slot) => slot.get_or_init(make),
            None => {
                built = make();
                &built
            }
        };
        self.ip_id = self.ip_id.wrapping_add(self.threads as u16);
        let mut frags = t
            .fragments(payload, self.ip_id, self.cfg.mtu)
            .map_err(|e| match e {
                Udp4Error::TooLong(len) => SinkError::Oversize {
                    len,
                    limit: sluice_wire::udp4::MAX_PAYLOAD,
                },
                Udp4Error::Mtu(m) => SinkError::Config(format!("--mtu {m} is below 68")),
            })?;
        let mut n = 0;
        while let Some((head, body)) = frags.next_fragment() {
            self.core.sink.send_parts(head, body, stamp)?;
            n += 1;
        }
        Ok(n)
    }
}
