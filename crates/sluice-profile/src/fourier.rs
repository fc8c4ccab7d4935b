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
//! The queues' components and DC shares ([`Components`]) are what a
//! distributed run's controller ships to its workers (the paper's task):
//! a worker rebuilds its queues' rates from them alone.
//!
//! Each bin, a queue sends rate + carry rounded to the nearest integer
//! packets, the remainder carried to its next bin. Within the bin the
//! packets are placed by the profile's own gap law: the first at the
//! bin's start, then c gaps drawn from the law and scaled so that they
//! span the bin (the last one ends at the next bin's start), so bins stay
//! aligned with the target's. Sizes follow the
//! size law. Each queue draws gaps and sizes from its own streams (the
//! seed and its index): a queue sends the same packets on any worker. Each queue's rate series is computed once, before the run, as
//! the inverse FFT of its components: the same values as summing their
//! cosines bin by bin, in O(n log n).
//!
//! [`spectrum`]: super::spectrum

use super::file::Profile;
use super::spectrum::{Component, RateSeries, Selection, Spectrum, MAX_BINS};
use super::synth::{Planned, Synth};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use realfft::num_complex::Complex;
use realfft::RealFftPlanner;
use serde::{Deserialize, Serialize};

/// Most components one task may carry (a worker's share of a plan): the
/// task stays a few MB, well inside a worker's message limit.
pub const MAX_SHIPPED: usize = 1 << 18;

/// Most Fourier queues a plan may have.
pub const MAX_QUEUES: usize = 1024;

/// The decomposition a fourier plan uses, for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Decomposition {
    pub bins: usize,
    pub sample_ns: u64,
    /// Components kept (DC not counted) and available.
    pub kept: usize,
    pub available: usize,
    /// Packets of the synthesized trace (None where the components were
    /// shipped: the trace was the controller's) and of the reconstruction.
    pub target_packets: Option<u64>,
    pub planned_packets: u64,
    /// Packets per bin the queues could not send because the
    /// reconstruction went below 0 there.
    pub shortfall: f64,
    /// Per-queue count of components (all windows).
    pub per_queue: Vec<usize>,
    /// Windows of the short-time transform (1: the whole series).
    pub windows: usize,
}

/// One Fourier queue as a task carries it (§4.4): its components and the
/// packets per bin added to their sum (each component's offset into
/// [0, 2a] and the queue's share of the DC component).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueComponents {
    /// Its index among the plan's queues: its draws' seed.
    pub queue: u32,
    /// The window of the short-time transform they describe (0 when the
    /// series is one window).
    pub window: u32,
    /// Packets per bin added to the components' sum.
    pub base: f64,
    pub components: Vec<Component>,
}

/// What the paper's task carries for a worker: the components computed
/// once by the controller, the sampling grid and the shared seed. A
/// worker rebuilds its queues' rates from these alone (an inverse FFT),
/// never the decomposition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Components {
    pub sample_ns: u64,
    /// Bins n of the rate series (t_duration = n · t_sample).
    pub bins: u64,
    /// Bins of each window of the short-time transform (the last may be
    /// shorter); `bins` for one window.
    pub window_bins: u64,
    /// The seed of every worker's draws (the profile's, or --seed).
    pub seed: u64,
    /// Queues of the whole plan.
    pub queue_count: u32,
    /// Components available (n/2 per window) and kept, in the whole plan.
    pub available: u64,
    pub kept: u64,
    /// This task's queues, window by window.
    pub queues: Vec<QueueComponents>,
}

impl Components {
    /// The controller's decomposition of `profile` (§4.2–4.4), every
    /// queue's components and DC share.
    pub fn of(
        profile: &Profile,
        sample_ns: u64,
        selection: Selection,
        queues: usize,
        window: Option<u64>,
    ) -> Result<Components, String> {
        decompose(profile, sample_ns, selection, queues, window).map(|(c, _, _)| c)
    }

    /// The windows' (first bin, bins).
    fn spans(&self) -> impl Iterator<Item = (usize, usize)> {
        spans(self.bins as usize, self.window_bins as usize)
    }

    /// The queues of share `index` of `count` (queue q goes to q mod
    /// `count`).
    pub fn share(&self, index: u32, count: u32) -> Components {
        Components {
            queues: self
                .queues
                .iter()
                .filter(|q| q.queue % count.max(1) == index)
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// Components of all this task's queues.
    pub fn carried(&self) -> usize {
        self.queues.iter().map(|q| q.components.len()).sum()
    }

    /// Refuses a task no controller of ours writes, naming the key: a
    /// peer's task is bounded before anything is allocated for it.
    pub fn check(&self) -> Result<(), String> {
        let n = self.bins;
        if self.sample_ns == 0 {
            return Err("fourier.sample_ns: must be above 0".into());
        }
        if n < 2 || n > MAX_BINS as u64 {
            return Err(format!("fourier.bins: {n}: between 2 and {MAX_BINS}"));
        }
        if self.queue_count == 0 || self.queue_count as usize > MAX_QUEUES {
            return Err(format!(
                "fourier.queue_count: {}: between 1 and {MAX_QUEUES}",
                self.queue_count
            ));
        }
        if self.queues.is_empty() {
            return Err("fourier.queues: none: a task carries at least one queue".into());
        }
        if self.window_bins < 2 || self.window_bins > n {
            return Err(format!(
                "fourier.window_bins: {}: between 2 and bins = {n}",
                self.window_bins
            ));
        }
        let windows: Vec<(usize, usize)> = self.spans().collect();
        let mut pairs = std::collections::HashSet::with_capacity(self.queues.len());
        let mut distinct = std::collections::HashSet::new();
        for (i, q) in self.queues.iter().enumerate() {
            if q.window as usize >= windows.len() {
                return Err(format!(
                    "fourier.queues[{i}].window: {}: the series has {} windows",
                    q.window,
                    windows.len()
                ));
            }
            if !pairs.insert((q.queue, q.window)) {
                return Err(format!(
                    "fourier.queues[{i}]: queue {} of window {} given twice",
                    q.queue, q.window
                ));
            }
            distinct.insert(q.queue);
        }
        if distinct.len() * windows.len() != self.queues.len() {
            return Err(format!(
                "fourier.queues: {} entries for {} queues in {} windows: every queue needs each window",
                self.queues.len(),
                distinct.len(),
                windows.len()
            ));
        }
        if (n as usize).saturating_mul(distinct.len()) > MAX_BINS * 4 {
            return Err(format!(
                "fourier: {n} bins × {} queues: more than {} per-queue rates",
                distinct.len(),
                MAX_BINS * 4
            ));
        }
        if self.carried() > MAX_SHIPPED {
            return Err(format!(
                "fourier: {} components: a task carries at most {MAX_SHIPPED}",
                self.carried()
            ));
        }
        let dt = self.sample_ns as f64 * 1e-9;
        for (i, q) in self.queues.iter().enumerate() {
            let key = format!("fourier.queues[{i}]");
            if q.queue >= self.queue_count {
                return Err(format!(
                    "{key}.queue: {}: below queue_count {} expected",
                    q.queue, self.queue_count
                ));
            }
            let n = windows[q.window as usize].1 as u64;
            if !q.base.is_finite() {
                return Err(format!("{key}.base: a finite number expected"));
            }
            let mut ks = std::collections::HashSet::with_capacity(q.components.len());
            for (j, c) in q.components.iter().enumerate() {
                let key = format!("{key}.components[{j}]");
                if c.k == 0 || c.k as u64 > n / 2 {
                    return Err(format!(
                        "{key}.k: {}: between 1 and bins/2 = {}",
                        c.k,
                        n / 2
                    ));
                }
                if !ks.insert(c.k) {
                    return Err(format!("{key}.k: {}: given twice", c.k));
                }
                if !(c.amplitude.is_finite() && c.amplitude >= 0.0) {
                    return Err(format!("{key}.amplitude: a finite number ≥ 0 expected"));
                }
                if !c.phase.is_finite() {
                    return Err(format!("{key}.phase: a finite number expected"));
                }
                let f = c.k as f64 / (n as f64 * dt);
                if !c.freq_hz.is_finite() || (c.freq_hz - f).abs() > 1e-9 * f {
                    return Err(format!(
                        "{key}.freq_hz: {}: component k = {} of {n} bins of {} ns is at {f} Hz",
                        c.freq_hz, c.k, self.sample_ns
                    ));
                }
            }
        }
        Ok(())
    }

    /// Each queue's rate series (packets per bin), window after window,
    /// queues in ascending order (checked: each has every window once).
    fn rates(&self) -> (Vec<u32>, Vec<Vec<f64>>) {
        let spans: Vec<(usize, usize)> = self.spans().collect();
        let mut entries: Vec<&QueueComponents> = self.queues.iter().collect();
        entries.sort_unstable_by_key(|q| (q.queue, q.window));
        entries
            .chunks(spans.len())
            .map(|mine| {
                let mut r = Vec::with_capacity(self.bins as usize);
                for q in mine {
                    r.extend(rates_of(spans[q.window as usize].1, &q.components, q.base));
                }
                (mine[0].queue, r)
            })
            .unzip()
    }
}

/// The windows of a series of `n` bins, `w` bins each (the last may be
/// shorter): (first bin, bins).
fn spans(n: usize, w: usize) -> impl Iterator<Item = (usize, usize)> {
    let w = w.max(1);
    (0..n.div_ceil(w)).map(move |i| (i * w, w.min(n - i * w)))
}

/// The rate of a queue: its components' sum (an inverse FFT of their
/// bins, eq. 3) plus `base`, packets per bin.
fn rates_of(n: usize, components: &[Component], base: f64) -> Vec<f64> {
    if n < 2 {
        // A window of one bin has its DC alone.
        return vec![base; n];
    }
    let mut bins = vec![Complex::new(0.0, 0.0); n / 2 + 1];
    let half = n as f64 / 2.0;
    for c in components {
        bins[c.k] = if n.is_multiple_of(2) && c.k == n / 2 {
            // The Nyquist bin of a real signal is real.
            Complex::new(c.amplitude * n as f64 * c.phase.cos(), 0.0)
        } else {
            Complex::from_polar(c.amplitude * half, c.phase)
        };
    }
    let ifft = RealFftPlanner::<f64>::new().plan_fft_inverse(n);
    let mut out = ifft.make_output_vec();
    ifft.process(&mut bins, &mut out)
        .expect("n/2 + 1 bins, the first (and a Nyquist) real");
    out.iter_mut().for_each(|v| *v = *v / n as f64 + base);
    out
}

/// The decomposition and every queue's rates (§4.2–4.4 on one host),
/// window by window with `window` (bins; the short-time transform of
/// §2.3: each window's components are its own).
fn decompose(
    profile: &Profile,
    sample_ns: u64,
    selection: Selection,
    queues: usize,
    window: Option<u64>,
) -> Result<(Components, Vec<Vec<f64>>, u64), String> {
    let queues = queues.max(1);
    if queues > MAX_QUEUES {
        return Err(format!("{queues} queues: at most {MAX_QUEUES}"));
    }
    profile.check_analyzable().map_err(|e| e.to_string())?;
    let target = Synth::new(profile.clone());
    let series = RateSeries::from_times(target.map(|p| p.due), sample_ns, None)?;
    let target_packets = series.counts.iter().sum::<f64>() as u64;
    let n = series.counts.len();
    // Each queue keeps its rate series: bins × queues values in all.
    if n.saturating_mul(queues) > MAX_BINS * 4 {
        return Err(format!(
            "{n} bins × {queues} queues: more than {} per-queue rates (fewer queues, or a longer t_sample)",
            MAX_BINS * 4
        ));
    }
    if n < 2 {
        return Err("a rate series of fewer than 2 bins has no spectrum".into());
    }
    let window_bins = match window {
        Some(w) if w < 2 => {
            return Err(format!("a window of {w} bins: at least 2 t_sample"));
        }
        Some(w) => (w as usize).min(n),
        None => n,
    };
    let mut rates = vec![Vec::with_capacity(n); queues];
    let mut shipped = Vec::new();
    let (mut kept, mut available) = (0, 0);
    for (w, (first, len)) in spans(n, window_bins).enumerate() {
        let seg = RateSeries {
            sample_ns,
            counts: series.counts[first..first + len].to_vec(),
        };
        let (dc, components, keep) = if len >= 2 {
            let spectrum = Spectrum::of(&seg)?;
            let keep = spectrum.select(selection);
            (spectrum.dc, spectrum.components, keep)
        } else {
            (seg.counts[0], Vec::new(), Vec::new())
        };
        kept += keep.len();
        available += components.len();
        // Strongest first, dealt round-robin: queues carry similar power.
        let mut order = keep;
        order.sort_by(|a, b| {
            components[b - 1]
                .amplitude
                .total_cmp(&components[a - 1].amplitude)
        });
        let mut dealt = Vec::with_capacity(queues);
        let mut raw = Vec::with_capacity(queues);
        for q in 0..queues {
            let mine: Vec<Component> = order
                .iter()
                .skip(q)
                .step_by(queues)
                .map(|k| components[k - 1])
                .collect();
            // The components alone, offset into [0, 2a] each.
            let offset: f64 = mine.iter().map(|c| c.amplitude).sum();
            // Their sum alone: the base is added once it is known, as a
            // worker adds it (the same floating-point sums, the same
            // packets).
            raw.push(rates_of(len, &mine, 0.0));
            dealt.push((mine, offset));
        }
        // DC shares: lift each queue's lowest bin to 0, split the rest.
        let offsets: f64 = dealt.iter().map(|(_, o)| o).sum();
        let lows: Vec<f64> = raw
            .iter()
            .zip(&dealt)
            .map(|(r, (_, offset))| r.iter().copied().fold(f64::INFINITY, f64::min) + offset)
            .collect();
        let rest = dc - offsets + lows.iter().sum::<f64>();
        for (q, ((components, offset), (r, low))) in
            dealt.into_iter().zip(raw.iter().zip(&lows)).enumerate()
        {
            let base = offset + (-low + rest / queues as f64);
            rates[q].extend(r.iter().map(|v| v + base));
            shipped.push(QueueComponents {
                queue: q as u32,
                window: w as u32,
                base,
                components,
            });
        }
    }
    Ok((
        Components {
            sample_ns,
            bins: n as u64,
            window_bins: window_bins as u64,
            seed: profile.seed,
            queue_count: queues as u32,
            available: available as u64,
            kept: kept as u64,
            queues: shipped,
        },
        rates,
        target_packets,
    ))
}

/// A queue's own draws and state: its packets are the same whichever
/// worker sends it.
struct QueueState {
    /// Its index among the plan's queues.
    queue: u32,
    gaps: SmallRng,
    sizes: SmallRng,
    carry: f64,
    /// Packets it sent so far.
    sent: u64,
}

pub struct FourierPlan {
    /// Packets per bin, per queue.
    rates: Vec<Vec<f64>>,
    queues: Vec<QueueState>,
    /// Queues of the whole plan (a worker sends some of them).
    queue_count: u64,
    bin: usize,
    sample_ns: u64,
    profile: Profile,
    /// This bin's packets (due, queue slot, size, index), due order,
    /// consumed from the back.
    pending: Vec<(u64, u32, u16, u64)>,
    pub decomposition: Decomposition,
}

impl FourierPlan {
    /// The plan of one host: the decomposition, then every queue.
    pub fn new(
        profile: Profile,
        sample_ns: u64,
        selection: Selection,
        queues: usize,
        window: Option<u64>,
    ) -> Result<FourierPlan, String> {
        let (c, rates, target) = decompose(&profile, sample_ns, selection, queues, window)?;
        let order = (0..c.queue_count).collect();
        Ok(FourierPlan::of(profile, c, order, rates, Some(target)))
    }

    /// A worker's plan: its queues rebuilt from the components a
    /// controller shipped (checked first), with the shipped seed.
    pub fn from_components(mut profile: Profile, c: Components) -> Result<FourierPlan, String> {
        c.check()?;
        profile.seed = c.seed;
        let (order, rates) = c.rates();
        Ok(FourierPlan::of(profile, c, order, rates, None))
    }

    /// The plan of queues `order` (their indices in the plan), `rates`
    /// each.
    fn of(
        profile: Profile,
        c: Components,
        order: Vec<u32>,
        mut rates: Vec<Vec<f64>>,
        target_packets: Option<u64>,
    ) -> FourierPlan {
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
        let seed = c.seed;
        // Each queue its own streams, from the shared seed and its index.
        let stream = |q: u32, salt: u64| {
            SmallRng::seed_from_u64(
                seed ^ salt ^ (u64::from(q) + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            )
        };
        let queues = order
            .iter()
            .map(|&queue| QueueState {
                queue,
                gaps: stream(queue, 0x5851_f42d_4c95_7f2d),
                sizes: stream(queue, 0x9e37_79b9_7f4a_7c15),
                carry: 0.0,
                sent: 0,
            })
            .collect();
        let mut counts = std::collections::HashMap::with_capacity(order.len());
        for q in &c.queues {
            *counts.entry(q.queue).or_insert(0) += q.components.len();
        }
        let per_queue = order.iter().map(|q| counts[q]).collect();
        FourierPlan {
            queues,
            queue_count: u64::from(c.queue_count),
            bin: 0,
            sample_ns: c.sample_ns,
            profile,
            pending: Vec::new(),
            decomposition: Decomposition {
                bins: c.bins as usize,
                sample_ns: c.sample_ns,
                kept: c.kept as usize,
                available: c.available as usize,
                target_packets,
                planned_packets: planned.round() as u64,
                shortfall,
                per_queue,
                windows: c.spans().count(),
            },
            rates,
        }
    }

    /// The indices of the queues this plan sends, ascending.
    pub fn queues(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.queues.iter().map(|q| q.queue).collect();
        v.sort_unstable();
        v
    }

    /// Queues of the whole plan (this plan may send some of them).
    pub fn queue_count(&self) -> u64 {
        self.queue_count
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
            for (rate, q) in self.rates.iter().zip(&mut self.queues) {
                let want = rate[self.bin] + q.carry;
                // Rounded to nearest, the remainder carried: float noise
                // on an integer rate never loses a packet to flooring.
                let count = (want + 0.5).floor().max(0.0);
                q.carry = want - count;
                let count = count as usize;
                if count == 0 {
                    continue;
                }
                // Packet 0 at the bin's start, then c gaps of the law
                // scaled so the last one ends where the next bin starts.
                let mut gaps = Vec::with_capacity(count);
                let mut sum = 0.0;
                for _ in 0..count {
                    let g = self.profile.gap.sample(&mut q.gaps);
                    sum += g;
                    gaps.push(g);
                }
                let mut at = 0.0;
                for g in &gaps {
                    let t = start + ((at / sum) * self.sample_ns as f64) as u64;
                    // The queue's k-th packet is the plan's packet
                    // k·Q + q: flows and sizes are the same on any worker.
                    let index = q.sent * self.queue_count + u64::from(q.queue);
                    let size = self.profile.size.sample(&mut q.sizes);
                    self.pending
                        .push((t.min(start + self.sample_ns - 1), q.queue, size, index));
                    q.sent += 1;
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
        let (due, queue, size, index) = self.pending.pop()?;
        let flows = u64::from(self.profile.packet.flows);
        Some(Planned {
            due,
            size,
            flow: (index % flows) as u32,
            lane: queue,
            index,
        })
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
            let plan = FourierPlan::new(profile.clone(), 1_000_000, sel, queues, None).unwrap();
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
                let target = d.target_packets.unwrap();
                assert!(target.abs_diff(got.iter().sum::<u64>()) <= queues as u64);
            }
        }
    }

    /// The paper's task (§4.4): the controller decomposes once; each
    /// worker rebuilds only its queues from the shipped components (after
    /// a trip through JSON, as a worker's job file takes it), and the
    /// workers' packets together are the single host's, packet for packet.
    #[test]
    fn shipped_components_rebuild_the_single_hosts_packets() {
        let profile = poisson("50k", "300ms");
        for (queues, workers, sel, window) in [
            (3, 3, Selection::Keep(40), None),
            (4, 2, Selection::All, None),
            (2, 1, Selection::Cutoff(100.0), None),
            // Short-time: windows of 64 bins (the last one 44), each with
            // its own components.
            (4, 2, Selection::Keep(6), Some(64)),
        ] {
            let whole: Vec<Planned> =
                FourierPlan::new(profile.clone(), 1_000_000, sel, queues, window)
                    .unwrap()
                    .collect();
            let c = Components::of(&profile, 1_000_000, sel, queues, window).unwrap();
            let windows = if window.is_some() { 5 } else { 1 };
            assert_eq!(c.queues.len(), queues * windows);
            let mut joined = Vec::new();
            for w in 0..workers {
                let task = c.share(w, workers);
                assert_eq!(task.queues.len(), queues / workers as usize * windows);
                let text = serde_json::to_string(&task).unwrap();
                let back: Components = serde_json::from_str(&text).unwrap();
                assert_eq!(back, task, "JSON keeps every bit");
                // The worker's profile may carry another seed: the shipped
                // one is the plan's.
                let mut theirs = profile.clone();
                theirs.seed = 99;
                let plan = FourierPlan::from_components(theirs, back).unwrap();
                assert!(plan.decomposition.target_packets.is_none());
                joined.extend(plan);
            }
            let key = |p: &Planned| (p.due, p.lane, p.index, p.size, p.flow);
            let mut a: Vec<_> = whole.iter().map(key).collect();
            let mut b: Vec<_> = joined.iter().map(key).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert!(!a.is_empty());
            assert!(
                a == b,
                "{queues} queues on {workers} workers: {} vs {} packets",
                a.len(),
                b.len()
            );
        }
    }

    /// A peer's task is bounded and consistent before anything is built.
    #[test]
    fn a_task_no_controller_writes_is_refused_by_key() {
        let profile = poisson("20k", "100ms");
        let good = Components::of(&profile, 1_000_000, Selection::Keep(10), 2, None).unwrap();
        good.check().unwrap();
        let bad = |f: &dyn Fn(&mut Components), key: &str| {
            let mut c = good.clone();
            f(&mut c);
            let e = FourierPlan::from_components(profile.clone(), c)
                .err()
                .unwrap();
            assert!(e.contains(key), "{key}: {e}");
        };
        bad(&|c| c.bins = 1, "fourier.bins");
        bad(&|c| c.bins = u64::MAX, "fourier.bins");
        bad(&|c| c.sample_ns = 0, "fourier.sample_ns");
        bad(&|c| c.queue_count = 0, "fourier.queue_count");
        bad(&|c| c.queues.clear(), "fourier.queues");
        bad(
            &|c| c.queues[1].queue = 0,
            "fourier.queues[1]: queue 0 of window 0 given twice",
        );
        bad(&|c| c.queues[0].queue = 7, "fourier.queues[0].queue");
        bad(&|c| c.queues[0].base = f64::NAN, "fourier.queues[0].base");
        bad(
            &|c| c.queues[0].components[1].k = 51,
            "fourier.queues[0].components[1].k",
        );
        bad(
            &|c| c.queues[0].components[1].k = c.queues[0].components[0].k,
            "components[1].k",
        );
        bad(&|c| c.queues[1].components[0].amplitude = -1.0, "amplitude");
        bad(
            &|c| c.queues[1].components[0].phase = f64::INFINITY,
            "phase",
        );
        bad(&|c| c.queues[1].components[0].freq_hz *= 2.0, "freq_hz");
        // Short-time windows: each queue once per window, each window's
        // components on its own grid.
        let windowed =
            Components::of(&profile, 1_000_000, Selection::Keep(3), 2, Some(30)).unwrap();
        assert_eq!((windowed.window_bins, windowed.queues.len()), (30, 8));
        windowed.check().unwrap();
        let bad_w = |f: &dyn Fn(&mut Components), key: &str| {
            let mut c = windowed.clone();
            f(&mut c);
            let e = c.check().unwrap_err();
            assert!(e.contains(key), "{key}: {e}");
        };
        bad_w(&|c| c.window_bins = 1, "fourier.window_bins: 1");
        bad_w(&|c| c.queues[7].window = 4, "fourier.queues[7].window: 4");
        bad_w(&|c| drop(c.queues.pop()), "every queue needs each window");
        // The last window has 10 bins: k 6 is past its n/2.
        bad_w(
            &|c| c.queues[7].components[0].k = 6,
            "between 1 and bins/2 = 5",
        );
        bad(
            &|c| {
                let one = c.queues[0].components[0];
                c.queues[0].components = vec![one; MAX_SHIPPED + 1];
            },
            "at most",
        );
    }
}
