//! RFC 2544 §26's searches over trials, and their results: throughput (the
//! highest rate the device forwards with no more loss than allowed, by
//! binary search), the frame loss rate table, back-to-back bursts; each
//! trial judged from what was sent and what the receiver counted.
//!
//! How a trial is run is the caller's ([`Trials`]: `sluice rfc2544` replays
//! a test frame in its own process); what it means, and the order of the
//! trials, is here, with the results' document (`sluice.rfc2544/1`), which
//! `sluice report` reads back with these types.

mod text;

pub use text::{back_note, burst_line, render, short_note, trial_line};

use serde::{Deserialize, Serialize};
use sluice_analyze::streams::StreamReport;
use sluice_core::Dist;

/// Ethernet's preamble, start delimiter and inter-frame gap: the bytes a
/// frame takes on the wire besides its own (for L1 rates).
pub const L1_OVERHEAD: f64 = 20.0;

/// One trial: a rate held for the trial's length, or a burst.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Frames per second asked.
    pub pps: f64,
    /// Frames per second the sender reached.
    pub sent_pps: Option<f64>,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    /// Lost by sequence number within the streams (the rest never came
    /// after the last one received).
    pub lost_in_sequence: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// lost / sent.
    pub loss_ratio: f64,
    pub pass: bool,
    /// The sender fell short of the rate asked by more than 1 % (a
    /// burst: sent fewer frames than asked): the trial does not pass,
    /// whatever the device did, and its loss is at the rate the sender
    /// reached (`sent_pps`), not at `pps`.
    pub sender_short: bool,
    /// b2b: the burst length asked, frames (null for a timed trial).
    pub burst: Option<u64>,
    pub latency: Option<Dist>,
    /// With --both: the other direction's trial, held at the same time
    /// (the trial passes when both do); the fields above are --to's.
    pub reverse: Option<Box<Trial>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// The highest rate that passed (frames per second), null if none did.
    pub pps: Option<f64>,
    /// Frame bits per second at that rate, and with Ethernet's 20 bytes
    /// of preamble and gap per frame (L1).
    pub bps: Option<f64>,
    pub l1_bps: Option<f64>,
    /// The search ended within its resolution (not at its most trials).
    pub converged: bool,
    /// What bounds the result from above (see [`Limit`]).
    pub limit: Limit,
    pub trials: Vec<Trial>,
}

/// What bounds a throughput search's result from above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The device: the lowest failing trial above the result lost more
    /// than the tolerance.
    Device,
    /// The sender: the lowest failing trial above the result failed
    /// only because the sender fell short of its rate (its loss within
    /// the tolerance), or the result is the top of the search and that
    /// top was the sender's own top speed. The device may forward more.
    Sender,
    /// `--max-pps`: the top of the search passed. The device may
    /// forward more.
    MaxPps,
}

/// RFC 2544 §26.4: the longest burst at the highest rate the device
/// takes without loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackToBack {
    /// Mean of the searches' results, frames.
    pub frames: f64,
    /// Each search's longest clean burst (0 when none was).
    pub searches: Vec<u64>,
    /// Every burst tried, in order.
    pub trials: Vec<Trial>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossRow {
    /// The rate asked, in percent of the highest rate.
    pub percent: u32,
    /// The rate the sender reached, in percent of the highest rate (null
    /// when it measured none): below `percent` by more than 1 % when the
    /// trial's sender fell short, and the loss is then at this rate.
    pub achieved_percent: Option<f64>,
    /// The trial's sender fell short (its `sender_short`).
    pub sender_short: bool,
    pub trial: Trial,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// RFC 2544 frame size (FCS included), or 0 for IMIX.
    pub size: usize,
    pub imix: bool,
    /// Mean frame size of the set (FCS included).
    pub mean_size: f64,
    pub max_pps: f64,
    /// Where `max_pps` comes from: `top_speed` (the sender's, measured
    /// by a first trial) or `max_pps` (--max-pps).
    pub max_from: MaxFrom,
    pub throughput: Option<Throughput>,
    pub latency: Option<Trial>,
    pub loss: Vec<LossRow>,
    pub back_to_back: Option<BackToBack>,
}

impl SizeResult {
    /// The size's name: its bytes, or `imix`.
    pub fn name(&self) -> String {
        if self.imix {
            "imix".into()
        } else {
            self.size.to_string()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxFrom {
    TopSpeed,
    MaxPps,
}

/// The document of a run (`sluice.rfc2544/1`, its `schema` key added by
/// the writer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub to: String,
    pub rx: String,
    pub both: bool,
    pub trial_s: f64,
    pub loss_tolerance_percent: f64,
    pub resolution_percent: f64,
    pub sizes: Vec<SizeResult>,
}

/// How trials are run: one at a rate, or one burst. Each returns the
/// trial judged ([`Trial::timed`], [`Trial::of_burst`], [`both_ways`]).
pub trait Trials {
    type Error;
    /// One trial at `pps` frames per second.
    fn trial(&self, pps: f64) -> Result<Trial, Self::Error>;
    /// A burst of `frames` frames sent back to back (top speed).
    fn burst(&self, frames: u64) -> Result<Trial, Self::Error>;
}

/// The searches' bounds (`sluice rfc2544`'s options).
#[derive(Clone, Copy, Debug)]
pub struct Search {
    /// Loss a trial may show and still pass, percent of the frames sent.
    pub tolerance: f64,
    /// A search ends once its bounds are this close, percent of the upper.
    pub resolution: f64,
    /// Trials before a throughput search gives up.
    pub max_trials: u32,
    /// Back-to-back searches per size.
    pub b2b_repeats: u32,
}

/// What one direction of a trial sent, and what its receiver counted.
#[derive(Clone, Copy, Debug)]
pub struct Sent<'a> {
    pub frames: u64,
    /// The rate the sender reached.
    pub pps: Option<f64>,
    pub streams: &'a [StreamReport],
}

impl Trial {
    /// A trial at `pps` asked: it passes with no more than `tolerance`
    /// percent lost and its sender within 1 % of the rate.
    pub fn timed(sent: Sent<'_>, pps: f64, tolerance: f64) -> Trial {
        let mut t = Trial::counted(sent, pps, tolerance);
        t.sender_short = sent.pps.is_some_and(|p| p < 0.99 * pps) || sent.frames == 0;
        t.pass &= !t.sender_short;
        t
    }

    /// A burst of `frames` asked: it passes when all were sent and none
    /// was lost.
    pub fn of_burst(sent: Sent<'_>, frames: u64) -> Trial {
        let mut t = Trial::counted(sent, sent.pps.unwrap_or(0.0), 0.0);
        t.sender_short = sent.frames < frames;
        t.burst = Some(frames);
        t.pass = sent.frames == frames && t.lost == 0;
        t
    }

    /// What was sent and received, at `pps` asked, passing on loss alone.
    pub fn counted(sent: Sent<'_>, pps: f64, tolerance: f64) -> Trial {
        let Sent {
            frames: sent,
            pps: sent_pps,
            streams,
        } = sent;
        let sum = |k: fn(&StreamReport) -> u64| streams.iter().map(k).sum::<u64>();
        let received = sum(|x| x.received);
        let lost = sent.saturating_sub(received);
        let loss_ratio = if sent > 0 {
            lost as f64 / sent as f64
        } else {
            1.0
        };
        Trial {
            pps,
            sent_pps,
            sent,
            received,
            lost,
            lost_in_sequence: sum(|x| x.lost),
            reordered: sum(|x| x.reordered),
            duplicates: sum(|x| x.duplicates),
            loss_ratio,
            pass: loss_ratio * 100.0 <= tolerance,
            sender_short: false,
            burst: None,
            latency: streams.first().map(|x| x.latency),
            reverse: None,
        }
    }

    /// The sender of either direction fell short.
    pub fn either_short(&self) -> bool {
        self.sender_short || self.reverse.as_ref().is_some_and(|r| r.sender_short)
    }
}

/// A trial of both directions: --to's, with the other direction's (if
/// any) kept beside it; it passes when both do.
pub fn both_ways(mut t: Trial, back: Option<Trial>) -> Trial {
    if let Some(r) = back {
        t.pass &= r.pass;
        t.reverse = Some(Box::new(r));
    }
    t
}

/// A row of the loss table: the trial at `percent` of `max`.
pub fn loss_row(percent: u32, max: f64, trial: Trial) -> LossRow {
    // Both directions: the slower sender is the rate reached.
    let reached = std::iter::once(&trial)
        .chain(trial.reverse.as_deref())
        .map(|t| t.sent_pps)
        .try_fold(f64::INFINITY, |m, p| p.map(|p| m.min(p)));
    LossRow {
        percent,
        achieved_percent: reached.filter(|_| max > 0.0).map(|p| p / max * 100.0),
        sender_short: trial.either_short(),
        trial,
    }
}

/// A trial failed only because its sender fell short of the rate: in
/// each direction the loss (of what was sent) is within `tolerance`
/// percent, or nothing was sent at all.
fn failed_by_sender(t: &Trial, tolerance: f64) -> bool {
    let within = |t: &Trial| t.sent == 0 || t.loss_ratio * 100.0 <= tolerance;
    !t.pass && t.either_short() && within(t) && t.reverse.as_deref().is_none_or(within)
}

/// The lowest failing trial above `best` (all failing ones with none).
fn lowest_fail_above(trials: &[Trial], best: Option<f64>) -> Option<&Trial> {
    trials
        .iter()
        .filter(|t| !t.pass && best.is_none_or(|b| t.pps > b))
        .min_by(|a, b| a.pps.total_cmp(&b.pps))
}

/// What bounds a search that found `best` from above: the lowest failing
/// trial above it, or with none (the top passed) the top's origin.
pub fn limit_of(trials: &[Trial], best: Option<f64>, max_from: MaxFrom, tolerance: f64) -> Limit {
    match lowest_fail_above(trials, best) {
        Some(t) if failed_by_sender(t, tolerance) => Limit::Sender,
        Some(_) => Limit::Device,
        None if max_from == MaxFrom::TopSpeed => Limit::Sender,
        None => Limit::MaxPps,
    }
}

/// RFC 2544 §26.1: binary search for the highest passing rate up to
/// `max`, frames of `mean_size` bytes (FCS included) for the bit rates.
pub fn throughput<T: Trials>(
    trials: &T,
    s: &Search,
    max: f64,
    max_from: MaxFrom,
    mean_size: f64,
) -> Result<Throughput, T::Error> {
    let mut done = Vec::new();
    let first = trials.trial(max)?;
    let top_passes = first.pass;
    done.push(first);
    let (mut lo, mut hi) = (0.0f64, max);
    let mut best = None;
    if top_passes {
        lo = max;
        best = Some(max);
    }
    let close = |lo: f64, hi: f64| hi - lo <= s.resolution / 100.0 * hi;
    while !close(lo, hi) && (done.len() as u32) < s.max_trials {
        let mid = (lo + hi) / 2.0;
        let t = trials.trial(mid)?;
        if t.pass {
            lo = mid;
            best = Some(mid);
        } else {
            hi = mid;
        }
        done.push(t);
    }
    Ok(Throughput {
        pps: best,
        bps: best.map(|p| p * (mean_size - 4.0) * 8.0),
        l1_bps: best.map(|p| p * (mean_size + L1_OVERHEAD) * 8.0),
        converged: close(lo, hi),
        limit: limit_of(&done, best, max_from, s.tolerance),
        trials: done,
    })
}

/// RFC 2544 §26.4: the longest burst without loss, by binary search up to
/// `most` frames, `b2b_repeats` times.
pub fn back_to_back<T: Trials>(trials: &T, s: &Search, most: u64) -> Result<BackToBack, T::Error> {
    let repeats = s.b2b_repeats.max(1);
    let mut done = Vec::new();
    let mut searches = Vec::new();
    for _ in 0..repeats {
        let (mut lo, mut hi) = (0u64, most);
        let first = trials.burst(most)?;
        let clean = first.pass;
        done.push(first);
        if clean {
            lo = most;
        }
        let close =
            |lo: u64, hi: u64| hi - lo <= ((s.resolution / 100.0 * hi as f64) as u64).max(1);
        while !close(lo, hi) && done.len() < 64 * repeats as usize {
            let mid = lo + (hi - lo) / 2;
            let t = trials.burst(mid)?;
            if t.pass {
                lo = mid;
            } else {
                hi = mid;
            }
            done.push(t);
        }
        searches.push(lo);
    }
    Ok(BackToBack {
        frames: searches.iter().sum::<u64>() as f64 / searches.len() as f64,
        searches,
        trials: done,
    })
}

/// RFC 2544 §26.3: loss at 100 %, 90 %, ... of `max` until two successive
/// trials lose nothing.
pub fn loss_table<T: Trials>(trials: &T, max: f64) -> Result<Vec<LossRow>, T::Error> {
    let mut rows: Vec<LossRow> = Vec::new();
    for percent in (1..=10).rev().map(|k| k * 10) {
        let t = trials.trial(max * f64::from(percent) / 100.0)?;
        rows.push(loss_row(percent, max, t));
        let clean = |r: &LossRow| r.trial.lost == 0 && !r.trial.sender_short;
        if rows.len() >= 2 && rows[rows.len() - 2..].iter().all(clean) {
            break;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests;
