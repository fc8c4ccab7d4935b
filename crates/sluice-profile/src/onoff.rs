//! The ON/OFF source (FLOR §4.3, ref. [18]; the classic model of bursty
//! traffic): `flows` independent flows, each alternating ON periods, in
//! which it sends frames with gaps drawn from a gap law, and silent OFF
//! periods; ON and OFF lengths are drawn from any gap law too. With
//! heavy-tailed periods (pareto of shape 1 < α < 2) the superposition of
//! many such flows is self-similar (Willinger et al., 1997).
//!
//! Each flow starts in its stationary state, approximately: ON with
//! probability E[on] / (E[on] + E[off]), its first packet within one mean
//! gap, or else OFF for a uniform part of one OFF draw. An ON period sends
//! at least its first packet. Flows are merged in due order through a
//! heap; each has its own seeded generator, so a run is reproducible and a
//! flow's packets do not depend on how many other flows there are.

use super::gaps::GapLaw;
use super::packet::PacketSpec;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sluice_core::Nanos;
use sluice_source::seam::{End, Lane, Origin, Outbox, Source, SourceError, SourceReport};
use sluice_wire::{MacAddr, PacketFields};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What an ON/OFF run sends.
#[derive(Clone, Debug)]
pub struct OnOffConfig {
    /// Lengths of ON periods (ns).
    pub on: GapLaw,
    /// Lengths of OFF periods (ns).
    pub off: GapLaw,
    /// Gaps between a flow's packets while it is ON (ns).
    pub gap: GapLaw,
    /// Frame length in bytes (without FCS), headers included.
    pub size: u16,
    /// Addresses and ports of the frames; flow k has source port
    /// `sport + k`, and `flows` is the number of flows.
    pub packet: PacketSpec,
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub seed: u64,
}

/// One flow's state: where its current ON period ends, its generator.
struct Flow {
    rng: SmallRng,
    on_end: u64,
    /// Packets sent (the IP identification).
    sent: u64,
}

/// The source (see the module docs).
pub struct OnOffSource {
    cfg: OnOffConfig,
    flows: Vec<Flow>,
    frames: crate::packet::Frames,
    lanes: Vec<Option<Lane>>,
    /// (next due, flow), earliest first.
    next: BinaryHeap<Reverse<(u64, u32)>>,
    payload_len: usize,
    on_periods: u64,
}

impl OnOffSource {
    /// Errors name the option at fault (`--size`, the addresses).
    pub fn new(cfg: OnOffConfig) -> Result<Self, SourceError> {
        let bad = |reason: String| SourceError::BadPacket {
            file: "onoff".into(),
            packet: 0,
            reason,
        };
        let p = &cfg.packet;
        let header = p.header_len();
        if cfg.size < header || cfg.size > 9_000 {
            return Err(bad(format!(
                "--size {}: a UDP frame here is {header} to 9000 bytes",
                cfg.size
            )));
        }
        if p.flows == 0 || u64::from(p.sport) + u64::from(p.flows) > 65_536 {
            return Err(bad(format!(
                "--flows {}: flows take source ports {} and up, which end at 65535",
                p.flows, p.sport
            )));
        }
        let frames = p.frames(cfg.src_mac, cfg.dst_mac, cfg.seed).map_err(bad)?;
        let mut flows = Vec::with_capacity(p.flows as usize);
        let mut next = BinaryHeap::with_capacity(p.flows as usize);
        let p_on = cfg.on.mean / (cfg.on.mean + cfg.off.mean);
        for k in 0..p.flows {
            // Each flow its own stream of draws, whatever the flow count.
            let mut rng = SmallRng::seed_from_u64(
                cfg.seed ^ u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            // ON now (its first frame within a mean gap), or ON after a
            // uniform part of an OFF period.
            let first = if rng.random::<f64>() < p_on {
                rng.random::<f64>() * cfg.gap.mean
            } else {
                rng.random::<f64>() * cfg.off.sample(&mut rng)
            };
            let on_end = first + cfg.on.sample(&mut rng);
            next.push(Reverse((first as u64, k)));
            flows.push(Flow {
                rng,
                on_end: on_end as u64,
                sent: 0,
            });
        }
        let n = p.flows;
        Ok(OnOffSource {
            payload_len: usize::from(cfg.size - header),
            cfg,
            flows,
            frames,
            lanes: vec![None; n as usize],
            next,
            on_periods: u64::from(n),
        })
    }

    /// When flow `k`, which sent a packet at `due`, sends its next one:
    /// after a gap, or after an OFF period at the start of the next ON.
    fn after(&mut self, k: usize, due: u64) -> u64 {
        let f = &mut self.flows[k];
        let t = due + self.cfg.gap.sample(&mut f.rng) as u64;
        if t < f.on_end {
            return t;
        }
        let on_start = f.on_end + self.cfg.off.sample(&mut f.rng) as u64;
        f.on_end = on_start + self.cfg.on.sample(&mut f.rng) as u64;
        self.on_periods += 1;
        on_start
    }
}

impl Source for OnOffSource {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        while let Some(Reverse((due, k))) = self.next.pop() {
            let i = k as usize;
            let lane = *self.lanes[i].get_or_insert_with(|| out.lane(|| u64::from(k)));
            let fields = PacketFields {
                index: self.flows[i].sent,
                last: false,
                payload_len: self.payload_len,
                tcp_seq: 0,
                prefix: &[],
                stamp: None,
            };
            let frames = &mut self.frames;
            if !out.push(lane, Nanos(due), |b| frames.write(b, i, &fields)) {
                break;
            }
            self.flows[i].sent += 1;
            let t = self.after(i, due);
            self.next.push(Reverse((t, k)));
        }
        out.finish();
        Ok(End::Done)
    }

    fn origin(&self) -> Origin {
        Origin::Memory
    }

    fn report(&self) -> SourceReport {
        SourceReport {
            counters: vec![("on_periods", self.on_periods)],
            ..SourceReport::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gaps::Spread;
    use sluice_core::{Batch, Handoff, OutboxRules};

    /// Keeps (due, source port) of every frame.
    #[derive(Default)]
    struct Keep(Vec<(u64, u16)>);

    impl Handoff for Keep {
        fn hand(&mut self, _: usize, b: Batch, _: Option<u64>) -> Option<Batch> {
            for (f, due) in b.iter() {
                self.0.push((due.0, u16::from_be_bytes([f[34], f[35]])));
            }
            Some(Batch::new())
        }
    }

    fn law(dist: &str, mean_ns: f64, spread: Spread) -> GapLaw {
        GapLaw::new(dist, mean_ns, spread).unwrap()
    }

    fn config(flows: u32, seed: u64) -> OnOffConfig {
        OnOffConfig {
            on: law("pareto", 2e6, Spread::Shape(1.5)),
            off: law("pareto", 6e6, Spread::Shape(1.5)),
            gap: law("constant", 10_000.0, Spread::None),
            size: 100,
            packet: PacketSpec {
                proto: "udp4".into(),
                src: [10, 0, 0, 1].into(),
                dst: [10, 0, 0, 2].into(),
                sport: 2000,
                dport: 9,
                flows,
                ..PacketSpec::default()
            },
            src_mac: MacAddr::LOCAL_SRC,
            dst_mac: MacAddr::LOCAL_DST,
            seed,
        }
    }

    fn run(cfg: OnOffConfig, until_ns: u64) -> Vec<(u64, u16)> {
        let mut keep = Keep::default();
        let rules = OutboxRules {
            max_due: Some(Nanos(until_ns)),
            ..OutboxRules::default()
        };
        let mut out = Outbox::new(1, rules, &mut keep);
        let mut src = OnOffSource::new(cfg).unwrap();
        assert_eq!(src.fill(&mut out).unwrap(), End::Done);
        keep.0
    }

    #[test]
    fn flows_alternate_gaps_and_silences_in_due_order() {
        let got = run(config(8, 1), 2_000_000_000);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "due order");
        let mut by_flow: std::collections::BTreeMap<u16, Vec<u64>> = Default::default();
        for (due, port) in &got {
            by_flow.entry(*port).or_default().push(*due);
        }
        assert_eq!(by_flow.len(), 8);
        for (port, dues) in by_flow {
            let gaps: Vec<u64> = dues.windows(2).map(|w| w[1] - w[0]).collect();
            // Inside an ON period: the constant gap; across an OFF period
            // whatever was left of the ON period plus its length.
            let silences = gaps.iter().filter(|&&g| g != 10_000).count();
            assert!(silences > 10, "flow {port}: {silences} OFF periods in 2 s");
        }
    }

    #[test]
    fn the_share_of_time_on_follows_the_period_means() {
        // E[on] / (E[on] + E[off]) = 2 / 8: a quarter of 64 flows' time.
        let mut c = config(64, 7);
        c.on = law("poisson", 2e6, Spread::None);
        c.off = law("poisson", 6e6, Spread::None);
        let got = run(c, 10_000_000_000);
        let per_flow_full = 10e9 / 10_000.0;
        let share = got.len() as f64 / (64.0 * per_flow_full);
        assert!((share - 0.25).abs() < 0.02, "ON share {share}");
    }

    #[test]
    fn a_seed_gives_the_same_run_and_flows_do_not_depend_on_each_other() {
        let a = run(config(4, 9), 500_000_000);
        assert_eq!(a, run(config(4, 9), 500_000_000));
        assert_ne!(a, run(config(4, 10), 500_000_000));
        // Flow 0 (port 2000) is the same with 4 flows or 16.
        let first = |v: &[(u64, u16)]| -> Vec<u64> {
            v.iter().filter(|x| x.1 == 2000).map(|x| x.0).collect()
        };
        assert_eq!(first(&a), first(&run(config(16, 9), 500_000_000)));
    }

    #[test]
    fn bad_sizes_and_port_ranges_name_the_option() {
        let mut c = config(1, 0);
        c.size = 20;
        let e = OnOffSource::new(c).err().expect("too short").to_string();
        assert!(e.contains("--size 20"), "{e}");
        let mut c = config(1, 0);
        c.packet.sport = 65_000;
        c.packet.flows = 1_000;
        let e = OnOffSource::new(c).err().expect("ports").to_string();
        assert!(e.contains("--flows 1000"), "{e}");
    }
}
