//! The feed of time-series play: units are chunks of records from this
//! thread's in-order MPMC queue; side packets are out-of-order records
//! (for the out-of-order TX threads), kept in a local heap by due time.
//! A record's datagram is built when it is sent: a per-flow UDP template
//! in front of the record's bytes, which stay in the IO buffer (fragmented
//! when longer than the MTU).

use super::config::{SeriesConfig, SeriesPayload};
use super::lanes::{Chunk, Lanes, OooItem};
use super::perflow::{FlowCount, FlowCounters, Pages};
use crate::tx::{Feed, Next, TxCore, Unit, Verdict};
use sluice_core::Nanos;
use sluice_sink::{SinkError, Takes};
use sluice_source::series::{DeviceTable, DueRecord, Filled, FlowMap, HEADER_LEN};
use sluice_wire::{Udp4Error, Udp4Template};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::net::SocketAddrV4;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

/// Ethernet, IPv4 and UDP headers of an unfragmented datagram.
const DATAGRAM_HEADERS: usize = 14 + 20 + 8;

/// Frame template of each flow, built on its first record.
pub(crate) type Templates = Pages<OnceLock<Udp4Template>>;

impl Unit for Chunk {
    #[inline]
    fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    fn due(&self, i: usize) -> Nanos {
        self.entries[i].due
    }

    #[inline]
    fn dues(&self) -> impl Iterator<Item = Nanos> + '_ {
        self.entries.iter().map(|e| e.due)
    }
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

pub(crate) struct SeriesFeed {
    lanes: Arc<Lanes>,
    queue: usize,
    /// This thread also sends out-of-order records.
    ooo: bool,
    /// This thread's per-flow counters, read by the aggregator.
    flow_counts: Arc<FlowCounters>,
    templates: Templates,
    table: Arc<Mutex<DeviceTable>>,
    cfg: Arc<SeriesConfig>,
    flow_map: FlowMap,
    takes: Takes,
    /// Outputs behind this thread's sink (`--also-to`): flow k leaves by
    /// output k mod `ports`.
    ports: usize,
    threads: usize,
    /// IPv4 identification of the last datagram. Threads take turns
    /// (thread t of n uses t + 1, t + 1 + n, ...), so a flow whose records
    /// several threads send never sees one ID twice within 65 536 / n
    /// datagrams, which fragment reassembly relies on.
    ip_id: u16,
    heap: BinaryHeap<Pending>,
    seq: u64,
    /// Frames on the wire (more than records when fragmenting).
    pub frames: u64,
    /// Records sent out of order.
    pub out_of_order: u64,
    /// `--rx-stamp`: each datagram's payload leaves with a receive stamp.
    pub stamper: Option<PayloadStamper>,
}

/// Receive stamps on datagram payloads: one stream per TX thread.
pub(crate) struct PayloadStamper {
    stream: u32,
    append: bool,
    pub departures: crate::tx::StampNumbers,
    buf: Vec<u8>,
}

impl PayloadStamper {
    pub fn new(
        stream: u32,
        append: bool,
        clock: &sluice_core::MonotonicClock,
        shift_ns: i64,
    ) -> Self {
        PayloadStamper {
            stream,
            append,
            departures: crate::tx::StampNumbers::new(clock, shift_ns),
            buf: Vec::with_capacity(2048),
        }
    }
}

/// Where a time-series TX thread stands among the others.
pub(crate) struct FeedPlace {
    pub index: usize,
    pub threads: usize,
    pub queue: usize,
    pub ooo: bool,
}

impl SeriesFeed {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        place: FeedPlace,
        lanes: Arc<Lanes>,
        flow_counts: Arc<FlowCounters>,
        templates: Templates,
        table: Arc<Mutex<DeviceTable>>,
        cfg: Arc<SeriesConfig>,
        takes: Takes,
        ports: usize,
    ) -> Self {
        SeriesFeed {
            flow_map: cfg.flows.clone(),
            ip_id: (place.index as u16 + 1).wrapping_sub(place.threads as u16),
            threads: place.threads,
            queue: place.queue,
            ooo: place.ooo,
            lanes,
            flow_counts,
            templates,
            table,
            cfg,
            takes,
            ports: ports.max(1),
            heap: BinaryHeap::new(),
            seq: 0,
            frames: 0,
            out_of_order: 0,
            stamper: None,
        }
    }

    /// Sends (or drops) a record its pacing has decided on, and counts it,
    /// per flow too.
    fn deliver(&mut self, core: &mut TxCore, buf: &Filled, e: &DueRecord, v: Verdict, ooo: bool) {
        let count = self.send_record(core, buf, e, v, ooo);
        if let Some(cell) = self.flow_counts.slot(e.flow as usize) {
            cell.add(count);
        }
    }

    /// [`deliver`](Self::deliver) less the per-flow counters: returns what
    /// they gain.
    fn send_record(
        &mut self,
        core: &mut TxCore,
        buf: &Filled,
        e: &DueRecord,
        verdict: Verdict,
        ooo: bool,
    ) -> FlowCount {
        let mut count = FlowCount::default();
        let Verdict::Send { eps } = verdict else {
            core.dropped();
            count.dropped = 1;
            return count;
        };
        let rec = &buf.bytes()[e.offset as usize..e.offset as usize + e.len as usize];
        let payload = match self.cfg.payload {
            SeriesPayload::Data => &rec[HEADER_LEN..],
            SeriesPayload::Record => rec,
        };
        let stamp = core.stamp();
        // The stamped copy is taken out of the stamper while it is sent.
        let mut stamped = Vec::new();
        let payload = match self.stamper.as_mut() {
            Some(st) => {
                std::mem::swap(&mut stamped, &mut st.buf);
                let (stream, deps) = (st.stream, &mut st.departures);
                let now = core.now;
                let room =
                    sluice_wire::rxstamp::stamp_payload(&mut stamped, payload, st.append, || {
                        deps.take(stream, 0, now)
                    });
                if !room {
                    deps.unstamped += 1;
                }
                &stamped[..]
            }
            None => payload,
        };
        // A datagram dropped by --loss takes all its fragments with it.
        let sent = if core.lose() {
            Ok((0, 0))
        } else {
            self.build_and_send(core, e.flow, payload, stamp)
        };
        let payload_len = payload.len();
        if let Some(st) = self.stamper.as_mut() {
            st.buf = stamped;
        }
        match sent {
            Ok((frames, frame_bytes)) => {
                self.frames += frames;
                count.sent = 1;
                count.bytes = payload_len as u64;
                if ooo {
                    self.out_of_order += 1;
                }
                count.late = u64::from(core.sent(eps, frame_bytes));
            }
            Err(err) => {
                // Refused, not sent: ε is not recorded, the clock moves on.
                if !core.failed(err) && !core.topspeed {
                    core.now = core.waiter.now();
                }
            }
        }
        count
    }

    /// Sends one datagram; returns the frames it took and their bytes
    /// (link header included). A datagram sink's frames are the kernel's:
    /// they count as one frame of the payload and its UDP, IPv4 and
    /// Ethernet headers.
    fn build_and_send(
        &mut self,
        core: &mut TxCore,
        flow: u32,
        payload: &[u8],
        stamp: u64,
    ) -> Result<(u64, usize), SinkError> {
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
        if self.takes == Takes::Datagrams {
            // The kernel builds the headers: the datagram leaves from its
            // flow's source to its flow's destination.
            let f = &t.flow;
            let from = SocketAddrV4::new(f.src_ip.into(), f.src_port);
            let to = SocketAddrV4::new(f.dst_ip.into(), f.dst_port);
            core.sink.send_from(from, to, payload, stamp)?;
            return Ok((1, payload.len() + DATAGRAM_HEADERS));
        }
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
        // Several outputs (`--also-to`): each device's flow by its own.
        let port = (flow as usize % self.ports) as u8;
        let (mut n, mut bytes) = (0, 0);
        while let Some((head, body)) = frags.next_fragment() {
            core.sink.send_parts_on(port, head, body, stamp)?;
            n += 1;
            bytes += head.len() + body.len();
        }
        Ok((n, bytes))
    }
}

impl Feed for SeriesFeed {
    type Unit = Chunk;
    /// Out-of-order records.
    const SIDE: bool = true;

    fn next(&mut self, _core: &mut TxCore) -> Next<Chunk> {
        let q = &self.lanes.queues[self.queue];
        match q.pop() {
            Some(chunk) => Next::Unit(chunk),
            None if self.lanes.producers[self.queue].load(Ordering::Acquire) == 0
                && q.is_empty() =>
            {
                Next::Done
            }
            None => Next::Idle,
        }
    }

    fn recycle(&mut self, chunk: Chunk) {
        let Chunk { buf, mut entries } = chunk;
        drop(buf);
        entries.clear();
        let _ = self.lanes.spare.push(entries);
    }

    #[inline]
    fn send(&mut self, core: &mut TxCore, chunk: &Chunk, i: usize, verdict: Verdict) {
        let e = chunk.entries[i];
        self.deliver(core, &chunk.buf, &e, verdict, false);
    }

    /// Moves queued out-of-order items into the local heap.
    fn pull_side(&mut self) {
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

    fn side_due(&self) -> Option<Nanos> {
        self.heap.peek().map(|p| p.due)
    }

    fn send_side(&mut self, core: &mut TxCore, verdict: Verdict) {
        if let Some(p) = self.heap.pop() {
            self.deliver(core, &p.item.buf, &p.item.entry, verdict, true);
        }
    }

    fn side_done(&self) -> bool {
        !self.ooo
            || (self.lanes.workers_left.load(Ordering::Acquire) == 0 && self.lanes.ooo.is_empty())
    }
}
