//! `profile run --mode fourier`: the paper's §4.3–4.4 on one host.
//!
//! The synthesized trace's rate series is decomposed (see [`spectrum`]);
//! the selected components are dealt round-robin, strongest first, to Q
//! queues. Queue q's rate is its own components, each offset into
//! [0, 2a] (the paper's [0, A_i], A_i the peak-to-peak swing), plus a
//! share of the DC component: first what lifts the queue's lowest bin to
//! 0, then the rest of the DC evenly. The shares add up to the DC, so the
//! queues together send the reconstruction; a queue's rate never goes
//! negative unless the reconstruction itself does somewhere (a low-pass
//! of a spiky series), where the count is 0 and the shortfall counted.
//!
//! Each bin, a queue sends rate + carry rounded to the nearest integer
//! packets, the remainder carried to its next bin. Within the bin the
//! packets are placed by the profile's own gap law: the first at the
//! bin's start, then c gaps drawn from the law and scaled so that they
//! span the bin (the last one ends at the next bin's start), so bins stay
//! aligned with the target's. Sizes follow the
//! size law. Each queue's rate series is computed once, before the run, as
//! the inverse FFT of its components: the same values as summing their
//! cosines bin by bin, in O(n log n).
//!
//! [`spectrum`]: super::spectrum

use super::file::Profile;
use super::spectrum::{RateSeries, Selection, Spectrum};
use super::synth::{Planned, Synth};
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// The decomposition a fourier plan uses, for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Decomposition {
    pub bins: usize,
    pub sample_ns: u64,
    /// Components kept (DC not counted) and available.
    pub kept: usize,
    pub available: usize,
    /// Packets of the synthesized trace and of the reconstruction.
    pub target_packets: u64,
    pub planned_packets: u64,
    /// Packets per bin the queues could not send because the
    /// reconstruction went below 0 there.
    pub shortfall: f64,
    /// Per-queue count of components.
    pub per_queue: Vec<usize>,
}

pub struct FourierPlan {
    /// Packets per bin, per queue.
    rates: Vec<Vec<f64>>,
    carry: Vec<f64>,
    bin: usize,
    sample_ns: u64,
    profile: Profile,
    gaps: SmallRng,
    sizes: SmallRng,
    /// This bin's packets, due order, consumed from the back.
    pending: Vec<(u64, u32)>,
    index: u64,
    pub decomposition: Decomposition,
}

impl FourierPlan {
    pub fn new(
        profile: Profile,
        sample_ns: u64,
        selection: Selection,
        queues: usize,
    ) -> Result<FourierPlan, String> {
        let queues = queues.max(1);
        profile.check_analyzable().map_err(|e| e.to_string())?;
        let target = Synth::new(profile.clone());
        let series = RateSeries::from_times(target.map(|p| p.due), sample_ns, None)?;
        let target_packets = series.counts.iter().sum::<f64>() as u64;
        // Each queue keeps its rate series: bins × queues values in all.
        if series.counts.len().saturating_mul(queues) > super::spectrum::MAX_BINS * 4 {
            return Err(format!(
                "{} bins × {queues} queues: more than {} per-queue rates (fewer queues, or a longer t_sample)",
                series.counts.len(),
                super::spectrum::MAX_BINS * 4
            ));
        }
        let spectrum = Spectrum::of(&series)?;
        let keep = spectrum.select(selection);
        // Strongest first, dealt round-robin: queues carry similar power.
        let mut order = keep.clone();
        order.sort_by(|a, b| {
            spectrum.components[b - 1]
                .amplitude
                .total_cmp(&spectrum.components[a - 1].amplitude)
        });
        let mut rates = Vec::with_capacity(queues);
        let mut per_queue = Vec::with_capacity(queues);
        for q in 0..queues {
            let mine: Vec<usize> = order.iter().skip(q).step_by(queues).copied().collect();
            per_queue.push(mine.len());
            let offset: f64 = mine
                .iter()
                .map(|k| spectrum.components[k - 1].amplitude)
                .sum();
            // The components alone, offset into [0, 2a] each.
            let mut r = spectrum.reconstruct(&mine, false);
            r.iter_mut().for_each(|v| *v += offset);
            rates.push(r);
        }
        // DC shares: lift each queue's lowest bin to 0, split the rest.
        let offsets: f64 = rates
            .iter()
            .map(|r| r.iter().sum::<f64>() / r.len() as f64)
            .sum();
        let lows: Vec<f64> = rates
            .iter()
            .map(|r| r.iter().copied().fold(f64::INFINITY, f64::min))
            .collect();
        let rest = spectrum.dc - offsets + lows.iter().sum::<f64>();
        for (r, low) in rates.iter_mut().zip(&lows) {
            let share = -low + rest / queues as f64;
            r.iter_mut().for_each(|v| *v += share);
        }
        let mut shortfall = 0.0;
        for r in &mut rates {
            for v in r.iter_mut() {
                if *v < 0.0 {
                    shortfall -= *v;
                    *v = 0.0;
                }
            }
        }
        let planned: f64 = rates.iter().flat_map(|r| r.iter()).sum();
        let seed = profile.seed;
        Ok(FourierPlan {
            carry: vec![0.0; queues],
            bin: 0,
            sample_ns,
            gaps: SmallRng::seed_from_u64(seed ^ 0x5851_f42d_4c95_7f2d),
            sizes: SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15),
            profile,
            pending: Vec::new(),
            index: 0,
            decomposition: Decomposition {
                bins: spectrum.n,
                sample_ns,
                kept: keep.len(),
                available: spectrum.components.len(),
                target_packets,
                planned_packets: planned.round() as u64,
                shortfall,
                per_queue,
            },
            rates,
        })
    }

    /// Packets per bin of each queue (after the DC shares).
    pub fn queue_rates(&self) -> &[Vec<f64>] {
        &self.rates
    }

    /// Fills `pending` with the packets of the next bin that has any.
    fn next_bin(&mut self) -> bool {
        let bins = self.rates[0].len();
        while self.pending.is_empty() && self.bin < bins {
            let start = self.bin as u64 * self.sample_ns;
            for q in 0..self.rates.len() {
                let want = self.rates[q][self.bin] + self.carry[q];
                // Rounded to nearest, the remainder carried: float noise
                // on an integer rate never loses a packet to flooring.
                let count = (want + 0.5).floor().max(0.0);
                self.carry[q] = want - count;
                let count = count as usize;
                if count == 0 {
                    continue;
                }
                // Packet 0 at the bin's start, then c gaps of the law
                // scaled so the last one ends where the next bin starts.
                let mut gaps = Vec::with_capacity(count);
                let mut sum = 0.0;
                for _ in 0..count {
                    let g = self.profile.gap.sample(&mut self.gaps);
                    sum += g;
                    gaps.push(g);
                }
                let mut at = 0.0;
                for g in &gaps {
                    let t = start + ((at / sum) * self.sample_ns as f64) as u64;
                    self.pending
                        .push((t.min(start + self.sample_ns - 1), q as u32));
                    at += g;
                }
            }
            // Consumed from the back: latest first in the vector.
            self.pending.sort_unstable_by(|a, b| b.cmp(a));
            self.bin += 1;
        }
        !self.pending.is_empty()
    }
}

impl Iterator for FourierPlan {
    type Item = Planned;

    fn next(&mut self) -> Option<Planned> {
        if self.pending.is_empty() && !self.next_bin() {
            return None;
        }
        let (due, queue) = self.pending.pop()?;
        let flows = u64::from(self.profile.packet.flows);
        let p = Planned {
            due,
            size: self.profile.size.sample(&mut self.sizes),
            flow: (self.index % flows) as u32,
            lane: queue,
            index: self.index,
        };
        self.index += 1;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;

    fn poisson(rate: &str, duration: &str) -> Profile {
        let text = format!("seed: 3\nduration: {duration}\nrate: {rate}\nipd: {{dist: poisson}}\n");
        Profile::parse("p.yaml", &text, true, std::path::Path::new("."), 1.0).unwrap()
    }

    /// On a virtual clock (the plan alone): every bin's packets are the
    /// reconstruction's, rounded with the carry, and no queue is ever
    /// asked for a negative count.
    #[test]
    fn per_bin_counts_follow_the_reconstruction_and_never_go_negative() {
        for (queues, sel) in [
            (1, Selection::All),
            (3, Selection::All),
            (2, Selection::Keep(20)),
            (3, Selection::Cutoff(50.0)),
        ] {
            let profile = poisson("200k", "500ms");
            let plan = FourierPlan::new(profile.clone(), 1_000_000, sel, queues).unwrap();
            for r in plan.queue_rates() {
                assert!(r.iter().all(|v| *v >= 0.0), "{queues} queues, {sel:?}");
            }
            // Expected per-bin totals: each queue floor(rate + carry).
            let mut want = vec![0u64; plan.queue_rates()[0].len()];
            for r in plan.queue_rates() {
                let mut carry = 0.0;
                for (b, v) in r.iter().enumerate() {
                    let c = (v + carry + 0.5).floor().max(0.0);
                    carry = v + carry - c;
                    want[b] += c as u64;
                }
            }
            let d = plan.decomposition.clone();
            let got =
                RateSeries::from_times(plan.map(|p| p.due), 1_000_000, Some(want.len())).unwrap();
            let got: Vec<u64> = got.counts.iter().map(|c| *c as u64).collect();
            assert_eq!(got, want, "{queues} queues, {sel:?}");
            if sel == Selection::All {
                // All components: the target trace's bins, to rounding.
                let target = Synth::new(profile.clone());
                let t = RateSeries::from_times(target.map(|p| p.due), 1_000_000, Some(want.len()))
                    .unwrap();
                for (a, b) in t.counts.iter().zip(&got) {
                    if queues == 1 {
                        assert_eq!(*a, *b as f64, "one queue sends the target's bins");
                    }
                    assert!((a - *b as f64).abs() <= queues as f64, "{a} vs {b}");
                }
                assert!(d.target_packets.abs_diff(got.iter().sum::<u64>()) <= queues as u64);
            }
        }
    }
}
