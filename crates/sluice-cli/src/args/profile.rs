//! `sluice profile` arguments: synth, spectrum, run.

use super::values::positive_count;
use clap::{Args, Subcommand};
use sluice_job::command::{OnOffArgs, ProfileRunArgs};
pub use sluice_job::profile::{FrameOpts, SelectOpts};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    #[command(subcommand)]
    pub command: ProfileCommand,
}

#[derive(Subcommand, Debug)]
pub enum ProfileCommand {
    /// Write the synthesized target trace of a profile (every gap and size drawn from its laws).
    Synth(SynthArgs),
    /// The packet-rate series of a profile or capture, its frequency components and a selection's reconstruction error.
    Spectrum(SpectrumArgs),
    /// Generate a profile: its synthesized sequence (exact) or the paper's Fourier reconstruction.
    Run(Box<ProfileRunArgs>),
    /// Fit every gap and size family to a capture (maximum likelihood), rank them by KS distance, write the best as a profile.
    Fit(FitArgs),
    /// Superposed ON/OFF flows: ON and OFF periods and the gaps inside ON drawn from any law (FLOR §4.3; heavy-tailed periods make self-similar traffic).
    Onoff(Box<OnOffArgs>),
}

#[derive(Args, Debug)]
pub struct FitArgs {
    /// Capture to fit (pcap or pcapng).
    pub capture: PathBuf,
    /// Profile to write (YAML).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Profile (.yaml/.yml or .json; schema in docs/FORMATS.md).
    pub profile: PathBuf,
    /// Trace to write (pcap, ns timestamps from 0).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    #[command(flatten)]
    pub frame: FrameOpts,
    /// Stop after N packets (needed to write a trace larger than the free space the profile's expected size exceeds).
    #[arg(long, value_parser = positive_count)]
    pub limit: Option<u64>,
}

#[derive(Args, Debug)]
pub struct SpectrumArgs {
    /// A profile (.yaml/.yml/.json) or a capture (pcap/pcapng).
    pub input: PathBuf,
    #[command(flatten)]
    pub select: SelectOpts,
    /// Components listed, strongest first (the JSON output lists every kept one).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print JSON (every kept component) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Multiply a profile's rate by R.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}
