//! The profile source on the seam: a sequence of packets (the synthesized
//! sequence itself, or the Fourier reconstruction) built into UDP frames.

use super::fourier::FourierPlan;
use super::synth::{Planned, Synth};
use sluice_core::Nanos;
use sluice_source::seam::{Due, End, Lane, Origin, Outbox, Source, SourceError, SourceReport};
use sluice_wire::{MacAddr, PacketFields};

/// What the source sends.
pub enum Sequence {
    /// The synthesized sequence, every gap exact.
    Exact(Synth),
    /// The paper's reconstruction from selected frequency components.
    Fourier(FourierPlan),
}

impl Iterator for Sequence {
    type Item = Planned;
    #[inline]
    fn next(&mut self) -> Option<Planned> {
        match self {
            Sequence::Exact(s) => s.next(),
            Sequence::Fourier(f) => f.next(),
        }
    }
}

pub struct ProfileSource {
    sequence: Sequence,
    frames: super::packet::Frames,
    /// Packets sent per flow (the IP identification).
    sent: Vec<u64>,
    /// The TX lane of each plan lane (a flow or a Fourier queue), asked of
    /// the outbox once: it counts each ask as load.
    lanes: Vec<Option<Lane>>,
    header_len: usize,
    first_ts: u64,
    /// A distributed run's split of a Fourier plan, by packet or by queue
    /// (an exact plan's share is planned by its `Synth`).
    share: Option<sluice_source::Share>,
    /// Packets planned so far (all shares).
    planned: u64,
    /// Share by plan lane (Fourier queue) instead of by packet.
    by_lane: bool,
    /// The output each plan lane leaves by, by lane index (empty: the
    /// first output takes all).
    port_of: Vec<u8>,
}

impl ProfileSource {
    /// A source of `sequence`'s packets with `packet`'s headers; a pcap output
    /// is stamped from `first_ts` (ns since the epoch); `seed` draws the
    /// packet's random fields.
    pub fn new(
        sequence: Sequence,
        packet: &super::PacketSpec,
        src_mac: MacAddr,
        dst_mac: MacAddr,
        first_ts: u64,
        seed: u64,
    ) -> Result<Self, SourceError> {
        let frames =
            packet
                .frames(src_mac, dst_mac, seed)
                .map_err(|reason| SourceError::BadPacket {
                    file: "profile".into(),
                    packet: 0,
                    reason,
                })?;
        Ok(ProfileSource {
            sequence,
            sent: vec![0; frames.flows()],
            lanes: Vec::new(),
            frames,
            header_len: usize::from(packet.header_len()),
            first_ts,
            share: None,
            planned: 0,
            by_lane: false,
            port_of: Vec::new(),
        })
    }

    /// Sends only `share`'s part of the global plan: its packets (every
    /// Nth), or with `by_lane` its Fourier queues' (the paper's component
    /// split: each queue holds components and a DC share that keeps its
    /// rate non-negative).
    pub fn with_share(mut self, share: Option<sluice_source::Share>, by_lane: bool) -> Self {
        match (share, &mut self.sequence) {
            // The synthesized sequence plans its share itself.
            (Some(s), Sequence::Exact(synth)) if !by_lane => synth.share(s),
            _ => self.share = share,
        }
        self.by_lane = by_lane;
        self
    }

    /// Several outputs (the paper's generating ports): the lanes this
    /// source sends (its flows, or its Fourier queues), in ascending
    /// order, leave by output rank mod `ports`. Call after
    /// [`with_share`](Self::with_share).
    pub fn with_ports(mut self, ports: usize) -> Self {
        if ports <= 1 {
            self.port_of.clear();
            return self;
        }
        let mine: Vec<u32> = match &self.sequence {
            Sequence::Exact(_) => (0..self.frames.flows() as u32).collect(),
            Sequence::Fourier(f) => {
                let share = self.share.filter(|_| self.by_lane);
                f.queues()
                    .into_iter()
                    .filter(|&q| share.is_none_or(|s| s.takes(u64::from(q))))
                    .collect()
            }
        };
        let lanes = mine.iter().max().map_or(0, |&m| m as usize + 1);
        self.port_of = vec![0; lanes];
        for (rank, &lane) in mine.iter().enumerate() {
            self.port_of[lane as usize] = (rank % ports) as u8;
        }
        self
    }
}

impl Source for ProfileSource {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        out.set_first_ts(self.first_ts);
        let exact = matches!(self.sequence, Sequence::Exact(_));
        let flows = self.frames.flows() as u64;
        for p in self.sequence.by_ref() {
            let flow = p.flow as usize;
            let j = if self.by_lane {
                u64::from(p.lane)
            } else {
                self.planned
            };
            self.planned += 1;
            if self.share.is_some_and(|s| !s.takes(j)) {
                // Its IP identification stays taken: the workers' frames
                // together are the single sender's.
                self.sent[flow] += 1;
                continue;
            }
            let l = p.lane as usize;
            if l >= self.lanes.len() {
                self.lanes.resize(l + 1, None);
            }
            let lane = *self.lanes[l].get_or_insert_with(|| out.lane(|| u64::from(p.lane)));
            let fields = PacketFields {
                // The flow's count of packets before this one, in the
                // whole job: the same IP identification in every share.
                index: if exact {
                    p.index / flows
                } else {
                    self.sent[flow]
                },
                last: false,
                payload_len: usize::from(p.size) - self.header_len,
                tcp_seq: 0,
                prefix: &[],
                stamp: None,
            };
            let frames = &mut self.frames;
            let port = self.port_of.get(l).copied().unwrap_or(0);
            if !out.push(lane, Due::at(Nanos(p.due)).on_port(port), |b| {
                frames.write(b, flow, &fields)
            }) {
                break;
            }
            self.sent[flow] += 1;
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
