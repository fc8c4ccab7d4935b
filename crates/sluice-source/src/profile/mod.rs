//! Stochastic traffic profiles (the distributed Fourier generator paper,
//! §3–§4): a profile file ([`file`]) of gap and size laws ([`gaps`],
//! [`sizes`]), its synthesized packet sequence ([`synth`]), the rate
//! series' spectrum ([`spectrum`]) and the Fourier reconstruction
//! ([`fourier`]), sent by one source on the seam ([`source`]).

pub mod file;
pub mod fit;
pub mod fourier;
pub mod gaps;
pub mod math;
pub mod onoff;
pub mod sizes;
pub mod source;
pub mod spectrum;
pub mod synth;

pub use file::{PacketSpec, Profile, ProfileError, Stop};
pub use fourier::{Decomposition, FourierPlan};
pub use gaps::GapLaw;
pub use onoff::{OnOffConfig, OnOffSource};
pub use sizes::SizeLaw;
pub use source::{Plan, ProfileSource};
pub use spectrum::{RateSeries, Selection, Spectrum};
pub use synth::{Planned, Synth};
