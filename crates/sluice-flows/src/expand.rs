//! Meta-flows → flows, lazily and in start-time order (FLOR's flow
//! scheduler): each session entry yields its flows in increasing start
//! times, and a heap over the entries merges them. A million-flow meta-flow
//! costs nothing until its flows start.

use super::onoff::OnOffClock;
use super::session::{FlowEntry, Net, Proto, Session, SessionError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sluice_core::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `Flow::payload_total` when the session gives no byte total.
pub const NO_TOTAL: u64 = u64::MAX;

/// An IPv4 or IPv6 address in 16 bytes (IPv4 in the IPv4-mapped form),
/// where an `IpAddr` takes 17: it keeps an active flow within 104 bytes.
/// The flow's protocol says which family it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Addr([u8; 16]);

impl From<IpAddr> for Addr {
    fn from(ip: IpAddr) -> Self {
        Addr(match ip {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        })
    }
}

impl Addr {
    #[inline]
    pub fn ip(self, v6: bool) -> IpAddr {
        if v6 {
            IpAddr::V6(Ipv6Addr::from(self.0))
        } else {
            let [.., a, b, c, d] = self.0;
            IpAddr::V4(Ipv4Addr::new(a, b, c, d))
        }
    }
}

/// One concrete flow.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    pub id: u32,
    pub proto: Proto,
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub start: Nanos,
    pub packets: u64,
    /// ns between packets.
    pub gap_ns: f64,
    /// Payload length bounds, drawn uniformly per packet.
    pub payload: (u16, u16),
    /// Index into the session's prefix table (distinct prefixes).
    pub prefix: u16,
    /// Exact total payload bytes, spread over the packets (first ones get
    /// the remainder), instead of `payload`; [`NO_TOTAL`] when not set (a
    /// sentinel, not an Option: it keeps an active flow within 104 bytes).
    pub payload_total: u64,
    /// The reverse direction of a bi-flow.
    pub reverse: bool,
}

impl Flow {
    /// Its L4 header (for `ip4`/`ip6`, none: its protocol number).
    pub fn l4(&self) -> sluice_wire::FlowProto {
        self.proto.l4(self.ipproto())
    }

    /// The IP protocol number of an `ip4`/`ip6` flow. Such a flow has no
    /// ports (the session refuses them), so `dport` holds the number: a
    /// field of its own would grow every active flow by 8 bytes.
    pub fn ipproto(&self) -> u8 {
        if self.proto.ip_only() {
            self.dport as u8
        } else {
            0
        }
    }

    pub fn src_ip(&self) -> IpAddr {
        self.src.ip(self.proto.v6())
    }

    pub fn dst_ip(&self) -> IpAddr {
        self.dst.ip(self.proto.v6())
    }

    /// Its addresses and ports, as a frame's template takes them.
    pub fn ends(&self) -> sluice_wire::FlowEnds {
        sluice_wire::FlowEnds {
            src: self.src_ip(),
            dst: self.dst_ip(),
            sport: self.sport,
            dport: self.dport,
        }
    }
}

/// What expanding an entry changes, kept beside the entries (moved from
/// the session, not copied).
struct EntryState {
    count: u64,
    period: u64,
    next: u64,
    rng: SmallRng,
    prefix: u16,
    /// The ON/OFF clock of a meta-flow with `onoff`.
    onoff: Option<Box<OnOffClock>>,
}

impl EntryState {
    /// Start of flow `k` after the entry's own start.
    fn offset(&mut self, k: u64) -> u64 {
        let on_time = k.saturating_mul(self.period);
        match &mut self.onoff {
            Some(c) => c.place(on_time),
            None => on_time,
        }
    }
}

pub struct Expander {
    entries: Vec<FlowEntry>,
    states: Vec<EntryState>,
    /// (next start, entry) of the meta-flows.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// (start, entry) of the entries that are one flow, sorted once: a
    /// session of many standalone flows is read in order instead of through
    /// a heap as large as the session.
    singles: Vec<(u64, usize)>,
    single_at: usize,
    next_id: u32,
    pending: Option<Flow>,
    /// Custom payload prefixes, indexed by `Flow::prefix`.
    pub prefixes: Vec<Vec<u8>>,
}

impl Expander {
    /// Takes the session's entries (a session of a million standalone
    /// entries is not held twice).
    pub fn new(mut session: Session, seed: u64) -> Result<Self, SessionError> {
        let mut prefixes = vec![Vec::new()];
        let mut index = std::collections::HashMap::new();
        let mut states = Vec::with_capacity(session.flows.len());
        let mut heap = BinaryHeap::new();
        let mut singles = Vec::new();
        let entries = std::mem::take(&mut session.flows);
        for (i, e) in entries.iter().enumerate() {
            let prefix = match &e.prefix {
                Some(p) => {
                    let bytes = p.bytes().map_err(|what| session.entry_error(i, what))?;
                    match index.get(&bytes) {
                        Some(&k) => k,
                        None => {
                            let k = u16::try_from(prefixes.len()).map_err(|_| {
                                session.entry_error(
                                    i,
                                    "more than 65 535 distinct payload prefixes in one session"
                                        .into(),
                                )
                            })?;
                            index.insert(bytes.clone(), k);
                            prefixes.push(bytes);
                            k
                        }
                    }
                }
                None => 0,
            };
            if e.count.unwrap_or(1) == 1 {
                singles.push((e.start.0 .0, i));
            } else {
                heap.push(Reverse((e.start.0 .0, i)));
            }
            states.push(EntryState {
                count: e.count.unwrap_or(1),
                period: e.period.map_or(0, |p| p.0 .0),
                next: 0,
                rng: SmallRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                prefix,
                // Its own generator: adding `onoff` changes no varied field.
                onoff: e.onoff.as_ref().map(|m| {
                    let s = seed ^ (i as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ 0x0f0f;
                    Box::new(OnOffClock::new(**m, s))
                }),
            });
        }
        singles.sort_unstable();
        Ok(Expander {
            entries,
            states,
            heap,
            singles,
            single_at: 0,
            next_id: 0,
            pending: None,
            prefixes,
        })
    }

    /// Start time of the next flow, if any.
    pub fn peek_start(&self) -> Option<Nanos> {
        if let Some(p) = &self.pending {
            return Some(p.start);
        }
        self.next_entry().map(|(t, _)| Nanos(t))
    }

    /// The entry whose flow starts next: the earliest (start, entry) of the
    /// heap and the sorted singles.
    fn next_entry(&self) -> Option<(u64, usize)> {
        let meta = self.heap.peek().map(|Reverse(k)| *k);
        let single = self.singles.get(self.single_at).copied();
        match (meta, single) {
            (Some(m), Some(s)) => Some(m.min(s)),
            (m, s) => m.or(s),
        }
    }

    fn make(&mut self, i: usize) -> Flow {
        let st = &mut self.states[i];
        let e = &self.entries[i];
        let k = st.next;
        st.next += 1;
        let start = Nanos(e.start.0 .0.saturating_add(st.offset(k)));
        let mut src = add(e.src, k.wrapping_mul(e.step.src));
        let mut dst = add(e.dst, k.wrapping_mul(e.step.dst));
        let mut sport = e.sport.wrapping_add((k as u16).wrapping_mul(e.step.sport));
        let mut dport = e.dport.wrapping_add((k as u16).wrapping_mul(e.step.dport));
        if e.proto.ip_only() {
            // No ports: the protocol number rides in `dport` (Flow::ipproto).
            dport = u16::from(e.ipproto.unwrap_or(super::session::DEFAULT_IPPROTO));
        }
        let rng = &mut st.rng;
        if let Some(n) = e.vary.src {
            src = random_in(n, rng);
        }
        if let Some(n) = e.vary.dst {
            dst = random_in(n, rng);
        }
        if let Some([a, b]) = e.vary.sport {
            sport = rng.random_range(a.min(b)..=a.max(b));
        }
        if let Some([a, b]) = e.vary.dport {
            dport = rng.random_range(a.min(b)..=a.max(b));
        }
        let mut payload = e.payload.bounds();
        if let Some([a, b]) = e.vary.payload {
            let v = rng.random_range(a.min(b)..=a.max(b));
            payload = (v, v);
        }
        let mut gap_ns = e.gap_ns();
        if let Some([a, b]) = e.vary.pps {
            gap_ns = 1e9 / rng.random_range(a..=b);
        }
        let mut packets = e.packets;
        if let Some([a, b]) = e.vary.packets {
            packets = rng.random_range(a..=b);
        }
        let flow = Flow {
            id: self.next_id,
            proto: e.proto,
            src: src.into(),
            dst: dst.into(),
            sport,
            dport,
            start,
            packets,
            gap_ns,
            payload,
            prefix: st.prefix,
            payload_total: e.bytes.map_or(NO_TOTAL, |b| {
                b.saturating_sub(e.header_len() as u64 * packets)
            }),
            reverse: false,
        };
        self.next_id = self.next_id.wrapping_add(1);
        if e.biflow {
            let mut back = flow.clone();
            back.id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            std::mem::swap(&mut back.src, &mut back.dst);
            if !e.proto.ip_only() {
                std::mem::swap(&mut back.sport, &mut back.dport);
            }
            back.reverse = true;
            self.pending = Some(back);
        }
        if st.next < st.count {
            let t = e.start.0 .0.saturating_add(st.offset(st.next));
            self.heap.push(Reverse((t, i)));
        }
        flow
    }
}

impl Iterator for Expander {
    type Item = Flow;
    fn next(&mut self) -> Option<Flow> {
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        let (t, i) = self.next_entry()?;
        if self.singles.get(self.single_at) == Some(&(t, i)) {
            self.single_at += 1;
        } else {
            self.heap.pop();
        }
        Some(self.make(i))
    }
}

fn add(a: IpAddr, k: u64) -> IpAddr {
    match a {
        IpAddr::V4(v) => IpAddr::V4(Ipv4Addr::from(u32::from(v).wrapping_add(k as u32))),
        IpAddr::V6(v) => IpAddr::V6(Ipv6Addr::from(u128::from(v).wrapping_add(u128::from(k)))),
    }
}

fn random_in(n: Net, rng: &mut SmallRng) -> IpAddr {
    match n.base {
        IpAddr::V4(b) => {
            let host = if n.prefix >= 32 {
                0
            } else {
                u32::MAX >> n.prefix
            };
            IpAddr::V4(Ipv4Addr::from(
                (u32::from(b) & !host) | (rng.random::<u32>() & host),
            ))
        }
        IpAddr::V6(b) => {
            let host = if n.prefix >= 128 {
                0
            } else {
                u128::MAX >> n.prefix
            };
            IpAddr::V6(Ipv6Addr::from(
                (u128::from(b) & !host) | (rng.random::<u128>() & host),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(yaml: &str) -> Session {
        let s: Session = serde_yaml_ng::from_str(yaml).unwrap();
        for f in &s.flows {
            f.check().unwrap();
        }
        s
    }

    #[test]
    fn meta_flows_expand_in_start_order_with_steps_and_biflows() {
        let s = session(
            "flows:\n\
             - {proto: udp4, src: 10.0.0.1, dst: 10.0.1.1, sport: 100, dport: 53, start: 5ms, packets: 3, pps: 10, count: 3, period: 10ms, step: {src: 1, sport: 2}}\n\
             - {proto: tcp4, src: 10.9.0.1, dst: 10.9.0.2, sport: 1, dport: 2, start: 12ms, packets: 1, biflow: true}\n",
        );
        let flows: Vec<Flow> = Expander::new(s.clone(), 1).unwrap().collect();
        let starts: Vec<u64> = flows.iter().map(|f| f.start.0 / 1_000_000).collect();
        assert_eq!(starts, vec![5, 12, 12, 15, 25]);
        assert_eq!(flows[0].src_ip(), "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(flows[3].src_ip(), "10.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!((flows[3].sport, flows[4].sport), (102, 104));
        assert!(flows[2].reverse && flows[2].src == flows[1].dst && flows[2].sport == 2);
        let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4], "ids in the order flows start");
    }

    #[test]
    fn variation_stays_in_range_and_is_reproducible() {
        let s = session(
            "flows:\n\
             - {proto: udp6, src: '2001:db8::1', dst: '2001:db8::2', start: 0, packets: 5, pps: 1, count: 500, \
                vary: {src: '2001:db8:1::/48', sport: [1000, 1009], pps: [2, 4], packets: [1, 3], payload: [10, 20]}}\n",
        );
        let a: Vec<Flow> = Expander::new(s.clone(), 7).unwrap().collect();
        let b: Vec<Flow> = Expander::new(s.clone(), 7).unwrap().collect();
        assert_eq!(a, b);
        assert_ne!(a, Expander::new(s.clone(), 8).unwrap().collect::<Vec<_>>());
        for f in &a {
            let IpAddr::V6(v) = f.src_ip() else { panic!() };
            assert_eq!(v.segments()[..3], [0x2001, 0xdb8, 1]);
            assert!((1000..=1009).contains(&f.sport));
            assert!((1e9 / 4.0..=1e9 / 2.0).contains(&f.gap_ns));
            assert!((1..=3).contains(&f.packets));
            assert!(f.payload.0 == f.payload.1 && (10..=20).contains(&f.payload.0));
        }
        assert!(
            a.iter()
                .map(|f| f.sport)
                .collect::<std::collections::HashSet<_>>()
                .len()
                == 10
        );
    }
}
