//! Stochastic traffic profiles (the distributed Fourier generator paper,
//! §3–§4): a profile file ([`file`]) of gap and size laws ([`gaps`],
//! [`sizes`]), its synthesized packet sequence ([`synth`]), the rate
//! series' spectrum ([`spectrum`]) and the Fourier reconstruction
//! ([`fourier`]), sent by one source on the seam ([`source`]).

mod file;
mod fit;
mod fourier;
mod gaps;
mod math;
mod onoff;
mod packet;
mod sizes;
mod source;
mod spectrum;
mod synth;

pub use file::{confine_inputs, read_capture, Profile, ProfileError, Stop};
pub use fit::{fit_gaps, fit_sizes};
pub use fourier::{
    Components, Decomposition, FourierPlan, QueueComponents, MAX_QUEUES, MAX_SHIPPED,
};
pub use gaps::{GapLaw, Spread};
pub use onoff::{OnOffConfig, OnOffSource};
pub use packet::PacketSpec;
pub use sizes::SizeLaw;
pub use source::{ProfileSource, Sequence};
pub use spectrum::{fit_errors, Component, RateSeries, Selection, Spectrum, MAX_BINS};
pub use synth::{stop_asked, stop_on, Planned, Synth};
