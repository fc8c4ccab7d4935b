//! Typed jobs: the options of every sending command, in one place.
//!
//! The command line fills these types (clap derives their options), a
//! worker receives them as data from its controller ([`remote`]), and
//! every command runs from them: an option is declared once, here, and
//! reaches the command line, plan files and workers with no list of
//! option names to keep in step. Each type reads a value as the command
//! line does, with the same parser, so a job from a peer is checked as a
//! command line is; `check` adds what the command line's argument
//! relations refuse.

pub mod autoopts;
pub mod command;
pub mod fields;
pub mod flows;
pub mod live;
pub mod onoff;
pub mod profile;
pub mod rate;
pub mod receive;
pub mod remote;
pub mod replay;
pub mod send;
pub mod series;
pub mod text;
pub mod values;

pub use command::Job;
pub use remote::{RemoteJob, Upload, Work, WorkerJob};
pub use send::SendOpts;
// The types a job's fields hold that its users name too.
pub use sluice_analyze::streams::ClockCorrection;
pub use sluice_core::Nanos;
pub use sluice_engine::RxStampMode;
pub use sluice_sink::SinkSpec;
