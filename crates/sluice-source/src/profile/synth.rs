//! The synthesized packet sequence of a profile (§4.1's "simulated
//! traffic trace"): packet 0 at time 0, each next one a gap of the gap law
//! later, each of a size of the size law, on flow k mod `flows`. Gaps and
//! sizes come from two generators seeded from the profile's seed, so
//! changing the size law never changes the times. One sequence whatever
//! the thread count: the engine spreads it, the source does not.

use super::file::{Profile, Stop};
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
}

pub struct Synth {
    profile: Profile,
    gaps: SmallRng,
    sizes: SmallRng,
    /// Exact (unrounded) time of the next packet, ns.
    t: f64,
    index: u64,
}

impl Synth {
    pub fn new(profile: Profile) -> Self {
        let seed = profile.seed;
        Synth {
            gaps: SmallRng::seed_from_u64(seed),
            sizes: SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15),
            profile,
            t: 0.0,
            index: 0,
        }
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

    #[inline]
    fn next(&mut self) -> Option<Planned> {
        if self.index.is_multiple_of(4096) && stop_asked() {
            return None;
        }
        match self.profile.stop {
            Stop::Packets(n) if self.index >= n => return None,
            Stop::Duration(d) if self.t >= d.0 as f64 => return None,
            _ => {}
        }
        let flow = (self.index % u64::from(self.profile.packet.flows)) as u32;
        let p = Planned {
            due: self.t as u64,
            size: self.profile.size.sample(&mut self.sizes),
            flow,
            lane: flow,
        };
        self.t += self.profile.gap.sample(&mut self.gaps);
        self.index += 1;
        Some(p)
    }
}
