//! The synthesized packet sequence of a profile (§4.1's "simulated
//! traffic trace"): packet 0 at time 0, each next one a gap of the gap law
//! later, each of a size of the size law, on flow k mod `flows`. Gaps and
//! sizes come from two generators seeded from the profile's seed, so
//! changing the size law never changes the times. One sequence whatever
//! the thread count: the engine spreads it, the source does not.
//!
//! A distributed worker's share K of N ([`Synth::share`]) plans only its
//! own packets where the gap law allows, so planning scales with workers:
//! - `poisson`: an independent Poisson stream of 1/N the rate (the
//!   splitting theorem: the N streams together are the Poisson process of
//!   the whole rate, in law; not the single sender's draws);
//! - any other law: packets j ≡ K mod N of the global sequence, stepping
//!   N gaps at a time ([`GapLaw::advance`]: no draws for a constant law,
//!   every gap drawn for the others), exactly the single sender's packets
//!   (a renewal process split into independent streams would not add up
//!   to the same law).

use super::file::{Profile, Stop};
use super::gaps::{GapLaw, Spread};
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// One packet of the sequence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Planned {
    /// Due time, ns after the start.
    pub due: u64,
    /// Frame size, bytes (no FCS).
    pub size: u16,
    /// Flow index, 0..flows.
    pub flow: u32,
    /// Which TX queue it belongs to (the flow, or a Fourier queue).
    pub lane: u32,
    /// Position j in the whole job's sequence (every share counts the
    /// same j), from which the flow and its IP identification follow.
    pub index: u64,
}

/// How a share is planned (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ShareMode {
    /// Packets j ≡ K mod N of the global sequence, N gaps at a time.
    Skip,
    /// Poisson: its own stream at 1/N of the rate.
    Thin,
}

pub struct Synth {
    profile: Profile,
    gaps: SmallRng,
    sizes: SmallRng,
    /// Exact (unrounded) time of the next packet, ns.
    t: f64,
    index: u64,
    /// Packets asked for so far (a share's indices step by N, so the stop
    /// flag is polled on this count).
    planned: u64,
    share: Option<(sluice_source::Share, ShareMode)>,
}

impl Synth {
    pub fn new(profile: Profile) -> Self {
        let (gaps, sizes) = generators(profile.seed);
        Synth {
            gaps,
            sizes,
            profile,
            t: 0.0,
            index: 0,
            planned: 0,
            share: None,
        }
    }

    /// Plans only `share`'s packets (see the module docs).
    pub fn share(&mut self, share: sluice_source::Share) {
        let (k, n) = (u64::from(share.index), u64::from(share.count));
        let mode = match self.profile.gap.name() {
            "poisson" if n > 1 => ShareMode::Thin,
            _ => ShareMode::Skip,
        };
        match mode {
            ShareMode::Skip => self.pass_over(k, k),
            ShareMode::Thin => {
                let mix = u64::from(share.index + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                (self.gaps, self.sizes) = generators(self.profile.seed ^ mix);
                let mean = self.profile.gap.mean * n as f64;
                self.profile.gap = GapLaw::new("poisson", mean, Spread::None)
                    .expect("a positive mean stays positive");
                // Its own stream starts at a random point, as a thinned
                // Poisson process does.
                self.t = self.profile.gap.sample(&mut self.gaps)
                    * rand::Rng::random::<f64>(&mut self.gaps);
                self.index = k;
            }
        }
        self.share = Some((share, mode));
    }

    /// One packet of the whole sequence at `self.index`, and the step to
    /// the next one this plan sends.
    #[inline(always)]
    fn draw(&mut self) -> Planned {
        let flow = (self.index % u64::from(self.profile.packet.flows)) as u32;
        let p = Planned {
            due: self.t as u64,
            size: self.profile.size.sample(&mut self.sizes),
            flow,
            lane: flow,
            index: self.index,
        };
        match self.share {
            Some((s, ShareMode::Skip)) => {
                // The gap after this packet and the N − 1 packets after
                // it, whose sizes are drawn too (this one's is).
                let n = u64::from(s.count);
                self.pass_over(n, n - 1);
            }
            Some((s, ShareMode::Thin)) => {
                self.t += self.profile.gap.sample(&mut self.gaps);
                self.index += u64::from(s.count);
            }
            _ => {
                self.t += self.profile.gap.sample(&mut self.gaps);
                self.index += 1;
            }
        }
        p
    }

    /// Whether the profile's packets or duration are used up.
    #[inline(always)]
    fn ended(&self) -> bool {
        match self.profile.stop {
            Stop::Packets(n) => self.index >= n,
            Stop::Duration(d) => self.t >= d.0 as f64,
        }
    }

    /// Moves the sequence `gaps` packets on, planning none of them: the
    /// gaps added one by one as the single sender adds them
    /// ([`GapLaw::advance`]), and `sizes` sizes drawn and dropped, so every
    /// packet planned keeps the single sender's time and size.
    #[inline(always)]
    fn pass_over(&mut self, gaps: u64, sizes: u64) {
        self.t = self.profile.gap.advance(self.t, &mut self.gaps, gaps);
        self.profile.size.pass_over(&mut self.sizes, sizes);
        self.index += gaps;
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Packets the sequence holds in all, when the profile says.
    pub fn packets(&self) -> Option<u64> {
        match self.profile.stop {
            Stop::Packets(n) => Some(n),
            Stop::Duration(_) => None,
        }
    }
}

/// The generators of gaps and of sizes seeded from `seed`: two streams, so
/// changing the size law never changes the times.
fn generators(seed: u64) -> (SmallRng, SmallRng) {
    (
        SmallRng::seed_from_u64(seed),
        SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15),
    )
}

/// The stop flag (SIGINT, SIGTERM) every synthesized sequence watches:
/// a spectrum or Fourier plan of a long profile ends when the user asks.
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// Sequences end early once `flag` is set (set once per process).
pub fn stop_on(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let _ = STOP.set(flag);
}

/// Whether a stop was asked.
pub fn stop_asked() -> bool {
    STOP.get()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

impl Iterator for Synth {
    type Item = Planned;

    #[inline(always)]
    fn next(&mut self) -> Option<Planned> {
        self.planned = self.planned.wrapping_add(1);
        if self.planned.is_multiple_of(4096) && stop_asked() {
            return None;
        }
        // Every share steps straight to its own next packet.
        (!self.ended()).then(|| self.draw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_source::Share;

    fn profile(ipd: &str, stop: &str) -> Profile {
        let text = format!(
            "seed: 3\n{stop}\nrate: 30k\nipd: {{{ipd}}}\nsize: {{dist: imix}}\npacket: {{flows: 4}}\n"
        );
        Profile::parse("p.yaml", &text, true, std::path::Path::new("."), 1.0).unwrap()
    }

    fn shares(p: &Profile, n: u32) -> Vec<Vec<Planned>> {
        (0..n)
            .map(|k| {
                let mut s = Synth::new(p.clone());
                s.share(Share { index: k, count: n });
                s.collect()
            })
            .collect()
    }

    #[test]
    fn constant_and_other_laws_split_into_the_single_senders_packets() {
        for ipd in [
            "dist: constant",
            "dist: pareto, shape: 1.5",
            "dist: normal, cv: 0.2",
        ] {
            let p = profile(ipd, "duration: 200ms");
            let whole: Vec<Planned> = Synth::new(p.clone()).collect();
            let mut joined: Vec<Planned> = shares(&p, 3).concat();
            joined.sort_by_key(|x| x.index);
            assert_eq!(joined, whole, "{ipd}");
        }
    }

    #[test]
    fn a_packet_count_is_the_whole_jobs_in_every_mode() {
        for ipd in ["dist: constant", "dist: poisson", "dist: gamma, shape: 2"] {
            let p = profile(ipd, "packets: 10001");
            let n: usize = shares(&p, 4).iter().map(Vec::len).sum();
            assert_eq!(n, 10_001, "{ipd}");
        }
    }

    #[test]
    fn poisson_shares_are_thinned_streams_that_add_up_to_the_rate() {
        let p = profile("dist: poisson", "duration: 20s");
        let parts = shares(&p, 4);
        for (k, part) in parts.iter().enumerate() {
            // Each share: Poisson at a quarter of 30 kpps.
            let gaps: Vec<f64> = part
                .windows(2)
                .map(|w| (w[1].due - w[0].due) as f64)
                .collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
            assert!(
                (mean / 133_333.3 - 1.0).abs() < 0.02,
                "share {k}: mean {mean}"
            );
            assert!((var.sqrt() / mean - 1.0).abs() < 0.03, "share {k}: cv");
            assert!(part.iter().all(|x| x.index % 4 == k as u64));
        }
        // Together: the whole rate, exponential gaps (cv 1).
        let mut all: Vec<u64> = parts.concat().iter().map(|x| x.due).collect();
        all.sort_unstable();
        let gaps: Vec<f64> = all.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean / 33_333.3 - 1.0).abs() < 0.02, "mean {mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.03,
            "cv {}",
            var.sqrt() / mean
        );
    }
}
