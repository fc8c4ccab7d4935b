//! How `sluice profile run` sends a profile: exact or Fourier, the
//! components kept, the queues, the frames' addresses and the rate's
//! scale (the profile file is the command line's, or an upload).

use crate::text;
use crate::values::{named, positive_duration};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_core::Nanos;
use sluice_wire::MacAddr;

/// Most Fourier queues a job may spread components over.
pub const MAX_QUEUES: usize = sluice_profile::MAX_QUEUES;

/// How `profile run` sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// The synthesized sequence itself, every gap exact.
    #[default]
    Exact,
    /// Components spread over queues, packets counted per t_sample.
    Fourier,
}

sluice_core::named_values!(Mode {
    Exact => "exact",
    Fourier => "fourier",
});

/// What `--share` deals out in `profile run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ShareBy {
    /// Every Nth packet of the global schedule (planned alone where the gap law allows: see docs/CLI.md).
    #[default]
    Packets,
    /// Fourier queues (components and their DC share): needs --mode fourier and a multiple of N queues.
    Components,
}

sluice_core::named_values!(ShareBy {
    Packets => "packets",
    Components => "components",
});

/// Frame addresses and rate scaling, shared by synth and run.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrameOpts {
    /// Multiply the profile's rate by R (gaps R times shorter; shapes kept).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seed of every draw (overrides the profile's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Source MAC of every frame.
    #[arg(long, default_value_t = MacAddr::LOCAL_SRC)]
    #[serde(with = "text")]
    pub src_mac: MacAddr,
    /// Destination MAC of every frame.
    #[arg(long, default_value_t = MacAddr::LOCAL_DST)]
    #[serde(with = "text")]
    pub dst_mac: MacAddr,
}

impl Default for FrameOpts {
    fn default() -> Self {
        FrameOpts {
            scale: 1.0,
            seed: None,
            src_mac: MacAddr::LOCAL_SRC,
            dst_mac: MacAddr::LOCAL_DST,
        }
    }
}

/// Which components to keep.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelectOpts {
    /// Sampling interval t_sample of the packet-rate series.
    #[arg(long, value_parser = positive_duration, default_value = "1ms")]
    #[serde(with = "crate::fields::positive_duration")]
    pub sample: Nanos,
    /// Keep the K strongest components (the DC component is always kept).
    #[arg(long, conflicts_with = "cutoff")]
    pub keep: Option<usize>,
    /// Keep the components at or below HZ (the paper's low-pass).
    #[arg(long)]
    pub cutoff: Option<f64>,
    /// Short-time transform: windows of T (a multiple of --sample, at least two), each with its own components.
    #[arg(long, value_parser = positive_duration)]
    #[serde(with = "crate::fields::opt_positive_duration")]
    pub window: Option<Nanos>,
}

impl Default for SelectOpts {
    fn default() -> Self {
        SelectOpts {
            sample: Nanos::from_millis(1),
            keep: None,
            cutoff: None,
            window: None,
        }
    }
}

/// `profile run`'s own options.
#[derive(Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileOpts {
    /// exact: the synthesized sequence; fourier: the reconstruction from selected components.
    #[arg(long, value_parser = named::<Mode>(Mode::NAMES), default_value_t = Mode::default())]
    #[serde(with = "text")]
    pub mode: Mode,
    #[command(flatten)]
    pub select: SelectOpts,
    /// Fourier queues the components are spread over (each a stream of its own; TX threads take queues round-robin).
    #[arg(long, default_value_t = 1)]
    pub queues: usize,
    #[command(flatten)]
    pub frame: FrameOpts,
}

impl Default for ProfileOpts {
    fn default() -> Self {
        ProfileOpts {
            mode: Mode::default(),
            select: SelectOpts::default(),
            queues: 1,
            frame: FrameOpts::default(),
        }
    }
}

impl ProfileOpts {
    /// What the command line's argument relations refuse, and a queue
    /// count a job from a peer could make unbounded.
    pub fn check(&self) -> Result<(), String> {
        if self.select.keep.is_some() && self.select.cutoff.is_some() {
            return Err("keep and cutoff exclude each other".into());
        }
        if self.queues == 0 || self.queues > MAX_QUEUES {
            return Err(format!("queues must be between 1 and {MAX_QUEUES}"));
        }
        self.select.window_bins().map(|_| ())
    }
}

impl SelectOpts {
    /// The components kept: the K strongest, those at or below a cutoff
    /// (a frequency ≥ 0), or all.
    pub fn selection(&self) -> Result<sluice_profile::Selection, String> {
        use sluice_profile::Selection;
        Ok(match (self.keep, self.cutoff) {
            (Some(k), _) => Selection::Keep(k),
            (None, Some(hz)) if hz.is_finite() && hz >= 0.0 => Selection::Cutoff(hz),
            (None, Some(hz)) => return Err(format!("--cutoff must be a frequency ≥ 0, got {hz}")),
            (None, None) => Selection::All,
        })
    }

    /// Bins of each window of `--window` (None: one window), refused
    /// unless a multiple of `--sample` of at least two.
    pub fn window_bins(&self) -> Result<Option<u64>, String> {
        let Some(w) = self.window else {
            return Ok(None);
        };
        let s = self.sample.0;
        if !w.0.is_multiple_of(s) || w.0 / s < 2 {
            return Err(format!(
                "window {w} is not a multiple of at least two of the sample {}",
                self.sample
            ));
        }
        Ok(Some(w.0 / s))
    }
}

/// Refuses, before planning, a Fourier plan or spectrum of `p` larger than
/// the memory budget (`--max-memory`, or half of what the machine, the
/// process's limits and its cgroup leave), naming both.
pub fn fits_in_memory(
    p: &sluice_profile::Profile,
    sample_ns: u64,
    queues: usize,
) -> Result<(), String> {
    let need = p.fourier_bytes(sample_ns, queues);
    let budget = sluice_sys::mem::default_budget();
    if need > budget as f64 {
        return Err(format!(
            "a Fourier plan at t_sample {} takes about {:.0} MB, more than the memory \
             budget of {:.0} MB (half of what the machine, ulimit -v and the cgroup leave, \
             or --max-memory): sample more coarsely (--sample) or shorten the profile",
            Nanos(sample_ns),
            need / 1e6,
            budget as f64 / 1e6
        ));
    }
    Ok(())
}
