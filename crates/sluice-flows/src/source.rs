//! The flow source: the flow timer (activates flows at their start), the
//! calendar packet scheduler (a radix heap of next-packet times: exact
//! per-flow inter-packet times, FLOR Appendix D), and the packet builder,
//! filling the engine's batches.
//!
//! Packet k of a flow is due at `start + k × gap`, computed from k (not by
//! adding gaps), so long flows do not drift. A new flow takes its lane from
//! the outbox once and keeps it (per-flow order).
//! Active flows are kept compact (116 bytes each, calendar entry included);
//! their headers are written from a per-flow template built at each packet.

use super::calendar::Calendar;
use super::dtree::DistributionTree;
use super::expand::{Expander, Flow, NO_TOTAL};
use super::session::Proto;
use super::session::{FlowEntry, Session};
use sluice_core::Nanos;
use sluice_source::seam::{End, Lane, Origin, Outbox, Source, SourceError, SourceReport};
use sluice_wire::{FlowHeaders, FlowProto, MacAddr, PacketFields};
use std::path::Path;

#[derive(Clone, Debug)]
pub struct FlowConfig {
    pub seed: Option<u64>,
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    /// Write "SLF1" + flow id + packet index after the prefix.
    pub stamp: bool,
    pub planner: Planner,
    /// A distributed run's share: only flows whose symmetric 5-tuple key
    /// falls to it are sent.
    pub share: Option<sluice_source::Share>,
    /// This planner thread's part of the flows (`--planners`): the flows
    /// whose mixed 5-tuple key falls to it, independent of `share`.
    pub part: Option<sluice_source::Share>,
    /// A pcap output's stamp of the run's start (ns since the epoch, the
    /// `--start-at` instant); None: the wall clock when the source is made.
    pub stamp_from: Option<u64>,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            seed: None,
            src_mac: MacAddr::LOCAL_SRC,
            dst_mac: MacAddr::LOCAL_DST,
            stamp: false,
            planner: Planner::default(),
            share: None,
            part: None,
            stamp_from: None,
        }
    }
}

/// How the next packet among the active flows is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Planner {
    /// Exact per-flow times from a calendar (FLOR Appendix D).
    #[default]
    Calendar,
    /// FLOR's stochastic planning (§5.7): a distribution tree picks the next
    /// flow with probability ∝ intensity, packets leave at the aggregated
    /// intensity; flows under 1 pps and one-packet flows are timed by the
    /// calendar (the slow packet scheduler).
    Stochastic,
}

sluice_core::named_values!(Planner {
    Calendar => "calendar",
    Stochastic => "stochastic",
});

/// Memory of one active flow, its calendar entry included, rounded up
/// (a test checks the structure holds 116 bytes).
const ACTIVE_FLOW_BYTES: u64 = 128;

fn a_gap(a: &Option<Active>) -> f64 {
    a.as_ref().map_or(f64::INFINITY, |a| a.flow.gap_ns)
}

struct Active {
    flow: Flow,
    sent: u64,
    tcp_seq: u32,
    lane: Lane,
    /// SplitMix64 state for per-packet payload lengths (8 bytes, where a
    /// SmallRng takes 32: active flows are many).
    rng: u64,
}

/// SplitMix64 (FLOR §5.6's generator): the next value of `state`.
pub(super) use sluice_core::mix::splitmix64 as splitmix;

pub struct FlowSource {
    cfg: FlowConfig,
    expander: Expander,
    calendar: Calendar,
    slots: Vec<Option<Active>>,
    free: Vec<u32>,
    seed: u64,
    first_ts: u64,
    done: bool,
    /// Flows started so far and the most active at once.
    pub flows_started: u64,
    pub max_active: usize,
    active: usize,
    tree: DistributionTree,
    /// Due time (ns) of the next packet of the stochastic planner.
    fast_next: f64,
    /// SplitMix64 state for the stochastic picks.
    pick: u64,
    /// Header template of the flow (slot) that sent last.
    headers: Option<(u32, FlowHeaders)>,
    /// The session's layers (checked when it was loaded), built once.
    encap: Option<std::sync::Arc<sluice_wire::encapstack::EncapStack>>,
    /// The session's IPv6 extension headers, built once.
    ext: Option<std::sync::Arc<sluice_wire::ip6ext::Ipv6ExtStack>>,
    /// The session's varied fields, and the packets built so far (what a
    /// per-packet field counts).
    fields: Option<sluice_wire::fields::FieldEngine>,
    built: u64,
    /// The session's template, and the frame of the flow (slot) that sent
    /// last: the template with that flow's addresses and ports.
    template: Option<std::sync::Arc<sluice_wire::template::Template>>,
    base: (Option<u32>, Vec<u8>),
}

impl FlowSource {
    pub fn open(path: &Path, cfg: FlowConfig) -> Result<Self, SourceError> {
        Self::new(Session::load(path)?, cfg)
    }

    pub fn new(session: Session, cfg: FlowConfig) -> Result<Self, SourceError> {
        // Flows that start together are active together: a meta-flow of a
        // billion flows without a period is refused, not allocated.
        session.admit(
            ACTIVE_FLOW_BYTES,
            sluice_sys::mem::default_budget(),
            "active at once",
            FlowEntry::peak_active,
        )?;
        let seed = cfg.seed.or(session.seed).unwrap_or(1);
        let encap = if session.encap.is_empty() {
            None
        } else {
            let stack =
                sluice_wire::encapstack::EncapStack::new(&session.encap, cfg.src_mac, cfg.dst_mac)
                    .map_err(|what| crate::session::SessionError::Syntax {
                        file: session.name.clone(),
                        what,
                    })?;
            Some(std::sync::Arc::new(stack))
        };
        // Random fields draw from the run's seed (--seed, else the session's).
        let mut session = session;
        session.seed = Some(seed);
        let fields = session.field_engine()?;
        let ext = if session.ipv6_ext.is_empty() {
            None
        } else {
            let x = sluice_wire::ip6ext::Ipv6ExtStack::new(&session.ipv6_ext).map_err(|what| {
                crate::session::SessionError::Syntax {
                    file: session.name.clone(),
                    what,
                }
            })?;
            Some(std::sync::Arc::new(x))
        };
        let template = session.frame.clone();
        if template.is_some() && cfg.stamp {
            return Err(crate::session::SessionError::Syntax {
                file: session.name.clone(),
                what: "template: --stamp writes into the payload, and a template's frame is sent as it is".into(),
            }
            .into());
        }
        let expander = Expander::new(session, seed)?;
        // Each planner picks with its own stream.
        let pick = seed ^ 0x5851_f42d_4c95_7f2d ^ u64::from(cfg.part.map_or(0, |p| p.index));
        // Captures are stamped from the wall clock at the start of the run.
        let first_ts = cfg
            .stamp_from
            .unwrap_or_else(sluice_sys::clock::realtime_ns);
        Ok(FlowSource {
            cfg,
            expander,
            calendar: Calendar::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seed,
            first_ts,
            done: false,
            flows_started: 0,
            max_active: 0,
            active: 0,
            tree: DistributionTree::new(),
            fast_next: 0.0,
            pick,
            headers: None,
            encap,
            ext,
            fields,
            built: 0,
            template,
            base: (None, Vec::new()),
        })
    }

    fn activate(&mut self, flow: Flow, out: &mut Outbox<'_>) {
        let lane = out.lane(|| u64::from(flow.id));
        let mut rng = self.seed ^ u64::from(flow.id).wrapping_mul(0xd134_2543_de82_ef95);
        let tcp_seq = splitmix(&mut rng) as u32;
        let due = flow.start.0;
        let packets = flow.packets;
        let a = Active {
            flow,
            sent: 0,
            tcp_seq,
            lane,
            rng,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(a);
                s
            }
            None => {
                self.slots.push(Some(a));
                (self.slots.len() - 1) as u32
            }
        };
        let rate = 1e9 / a_gap(&self.slots[slot as usize]);
        if self.cfg.planner == Planner::Stochastic && rate >= 1.0 && packets > 1 {
            // "Immediate" insertion (FLOR §5.7.2): the next fast packet goes
            // out now, later ones at the new aggregated intensity.
            self.tree.insert(slot, rate.round() as u64);
            self.fast_next = due as f64;
        } else {
            // The calendar: every flow under the calendar planner; under the
            // stochastic one, FLOR's slow packet scheduler (< 1 pps, or a
            // single packet). A first packet leads the packets of other
            // flows due at the same time.
            self.calendar.push_first(due, slot);
        }
        self.flows_started += 1;
        self.active += 1;
        self.max_active = self.max_active.max(self.active);
    }

    /// Builds the next packet of the flow in `slot`, due at `due`. Returns
    /// when its next packet is due by the calendar, or None when the flow
    /// has ended (its slot is free again). Sets `done` when the outbox
    /// refuses the packet.
    fn emit(&mut self, slot: u32, due: u64, out: &mut Outbox<'_>) -> Option<u64> {
        // A template's flows build no payload: their frame is the
        // template's (moved out for the call, not counted per packet).
        if let Some(t) = self.template.take() {
            let next = self.emit_template(slot, due, out, &t);
            self.template = Some(t);
            return next;
        }
        let a = self.slots[slot as usize].as_mut()?;
        let f = &a.flow;
        let payload_len = if f.payload_total != NO_TOTAL {
            let total = f.payload_total;
            let (base, extra) = (total / f.packets, total % f.packets);
            (base + u64::from(a.sent < extra)) as usize
        } else if f.payload.0 == f.payload.1 {
            usize::from(f.payload.0)
        } else {
            // Uniform in [min, max] by multiply-shift.
            let span = u64::from(f.payload.1 - f.payload.0) + 1;
            let r = (u128::from(splitmix(&mut a.rng)) * u128::from(span)) >> 64;
            usize::from(f.payload.0) + r as usize
        };
        let last = a.sent + 1 == f.packets;
        let l4 = f.l4();
        // The template of the flow that sent last is kept: a flow sending
        // several packets in a row (few flows, or one) skips rebuilding it.
        // Fields varied per packet build it for each.
        let again = self.fields.as_ref().is_some_and(|e| e.varies_packets());
        if again || self.headers.as_ref().is_none_or(|(s, _)| *s != slot) {
            let mut ends = f.ends();
            let ports = matches!(l4, FlowProto::Udp | FlowProto::Tcp);
            if let Some(e) = &self.fields {
                e.vary_ends(&mut ends, ports, u64::from(f.id), self.built);
            }
            let mut h = FlowHeaders::new(self.cfg.src_mac, self.cfg.dst_mac, ends, l4, f.reverse)
                .expect("families checked when the session was loaded");
            if let Some(e) = &self.fields {
                // The flow's own fields go into its template first, so
                // that a tunnel's entropy follows the flow as varied.
                e.vary(&mut h, u64::from(f.id), self.built);
            }
            if let Some(x) = &self.ext {
                h = h.with_ipv6_ext(x);
            }
            let h = match &self.encap {
                None => h,
                Some(e) => h.with_encap(e),
            };
            self.headers = Some((slot, h));
        }
        let Some((_, headers)) = &self.headers else {
            return None;
        };
        let fields = PacketFields {
            index: a.sent,
            last,
            payload_len,
            tcp_seq: a.tcp_seq,
            prefix: &self.expander.prefixes[f.prefix as usize],
            stamp: self.cfg.stamp.then_some(f.id),
        };
        let (engine, built) = (&self.fields, self.built);
        let pushed = out.push(a.lane, Nanos(due), |b| match engine {
            None => headers.write(b, &fields),
            Some(e) => headers.write_varied(b, &fields, e, u64::from(f.id), built),
        });
        if !pushed {
            self.done = true;
            return None;
        }
        self.built += 1;
        if l4 == FlowProto::Tcp {
            let syn = u32::from(a.sent == 0);
            a.tcp_seq = a.tcp_seq.wrapping_add(payload_len as u32).wrapping_add(syn);
        }
        self.sent(slot)
    }

    /// [`FlowSource::emit`] for a session with a template: the template
    /// with the flow's addresses and ports, the fields written in.
    fn emit_template(
        &mut self,
        slot: u32,
        due: u64,
        out: &mut Outbox<'_>,
        t: &sluice_wire::template::Template,
    ) -> Option<u64> {
        let a = self.slots[slot as usize].as_ref()?;
        let f = &a.flow;
        let (engine, flow) = (self.fields.as_ref(), u64::from(f.id));
        if self.base.0 != Some(slot) {
            // The packet's fields are written over the flow's frame (into
            // the buffer of the flow that sent last).
            t.flow_frame(&mut self.base.1, &f.ends(), engine, flow);
            self.base.0 = Some(slot);
        }
        let (base, packet) = (&self.base.1, self.built);
        if !out.push(a.lane, Nanos(due), |b| t.write(b, base, engine, packet)) {
            self.done = true;
            return None;
        }
        self.built += 1;
        self.sent(slot)
    }

    /// Counts a packet of the flow in `slot` sent: when its next one is
    /// due, or None when it has ended (its slot is free again).
    fn sent(&mut self, slot: u32) -> Option<u64> {
        let a = self.slots[slot as usize].as_mut()?;
        a.sent += 1;
        if a.sent < a.flow.packets {
            Some(a.flow.start.0 + (a.sent as f64 * a.flow.gap_ns) as u64)
        } else {
            self.slots[slot as usize] = None;
            self.free.push(slot);
            self.active -= 1;
            // The slot may go to another flow.
            self.headers = None;
            self.base.0 = None;
            None
        }
    }
}

impl FlowSource {
    /// Whether flow `f` is this source's: its worker's share of a
    /// distributed run and its planner's part (both by 5-tuple, so the
    /// packets of a 5-tuple stay in one planner and on one TX thread).
    fn owns(&self, f: &Flow) -> bool {
        let (share, part) = (self.cfg.share, self.cfg.part);
        if share.is_none() && part.is_none() {
            return true;
        }
        let key = share_key(f);
        // The part's key is mixed again, so that it does not follow the
        // share's (worker 1 of 2 would otherwise give planner 0 nothing).
        let mut mixed = key;
        share.is_none_or(|s| s.takes(key)) && part.is_none_or(|p| p.takes(splitmix(&mut mixed)))
    }
}

impl Source for FlowSource {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        out.set_first_ts(self.first_ts);
        while !self.done {
            let next_cal = self.calendar.peek_due();
            let next_fast = (!self.tree.is_empty()).then_some(self.fast_next as u64);
            let next_packet = match (next_cal, next_fast) {
                (Some(c), Some(f)) => Some(c.min(f)),
                (c, f) => c.or(f),
            };
            let next_flow = self.expander.peek_start().map(|t| t.0);
            // The flow timer runs ahead of the packet scheduler: a flow
            // starting no later than the next packet is activated first.
            match (next_flow, next_packet) {
                (None, None) => {
                    self.done = true;
                    continue;
                }
                (Some(s), p) if p.is_none_or(|p| s <= p) => {
                    if let Some(f) = self.expander.next() {
                        if self.owns(&f) {
                            self.activate(f, out);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            if next_fast.is_some_and(|f| next_packet.is_none_or(|p| f <= p)) {
                let due = self.fast_next as u64;
                // The distribution tree picks a flow with probability
                // proportional to its intensity.
                let r =
                    (u128::from(splitmix(&mut self.pick)) * u128::from(self.tree.total())) >> 64;
                let slot = self.tree.sample(r as u64).expect("tree is not empty");
                if self.emit(slot, due, out).is_none() && !self.done {
                    self.tree.remove(slot);
                }
                if !self.tree.is_empty() {
                    self.fast_next += 1e9 / self.tree.total() as f64;
                }
            } else {
                let Some(e) = self.calendar.pop() else {
                    continue;
                };
                let (due, slot) = (e.due, e.slot);
                if let Some(next) = self.emit(slot, due, out) {
                    self.calendar.push(next, slot);
                }
            }
        }
        Ok(End::Done)
    }

    fn origin(&self) -> Origin {
        Origin::Memory
    }

    fn report(&self) -> SourceReport {
        SourceReport::default()
    }
}

/// A flow's key for `--share`: its symmetric 5-tuple (ICMP: addresses
/// and protocol).
fn share_key(f: &Flow) -> u64 {
    let (proto, ports) = match f.proto {
        Proto::Udp4 | Proto::Udp6 => (17, true),
        Proto::Tcp4 | Proto::Tcp6 => (6, true),
        Proto::Icmp4 => (1, false),
        Proto::Icmp6 => (58, false),
        Proto::Ip4 | Proto::Ip6 => (f.ipproto(), false),
    };
    let (sp, dp) = if ports { (f.sport, f.dport) } else { (0, 0) };
    sluice_source::flow_key(f.src_ip(), sp, f.dst_ip(), dp, proto)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_active_flow_with_its_calendar_entry_fits_in_116_bytes() {
        let per_flow = std::mem::size_of::<Option<Active>>()
            + std::mem::size_of::<super::super::calendar::NextPacket>();
        assert!(per_flow <= 116, "{per_flow} bytes");
    }
}
