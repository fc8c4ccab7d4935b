//! A sending command's whole job, as its command line or a worker's job
//! file builds it: the command's own options and how it sends (this
//! crate's option types) with what is this host's own (inputs, where
//! packets go, the receiver beside them, the statistics files, a share of
//! a split job). The command line parses these types; `sluice-cli`'s
//! `run_job` runs a [`Job`] in its process.

mod common;
mod flows;
mod live;
mod profile;
mod replay;
mod select;
mod series;
mod split;

pub use common::{RunOpts, ShareOpts};
pub use flows::RunArgs;
pub use live::{InjectArgs, OnOffArgs, PaceArgs};
pub use profile::ProfileRunArgs;
pub use replay::ReplayArgs;
pub use select::SelectOpts as PacketSelect;
pub use series::PlayArgs;
pub use split::SplitOpts;

/// A sending command's job.
// One per run, moved once: boxing the arguments would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Job {
    /// `sluice replay`.
    Replay(ReplayArgs),
    /// `sluice flows run`.
    Flows(RunArgs),
    /// `sluice series play`.
    Series(PlayArgs),
    /// `sluice profile run`.
    Profile(ProfileRunArgs),
    /// `sluice profile onoff`.
    OnOff(OnOffArgs),
    /// `sluice pace`.
    Pace(PaceArgs),
    /// `sluice inject`.
    Inject(InjectArgs),
}

impl Job {
    /// The host's options of the run (where it sends, its outputs).
    pub fn run_opts_mut(&mut self) -> &mut RunOpts {
        match self {
            Job::Replay(a) => &mut a.run,
            Job::Flows(a) => &mut a.run,
            Job::Series(a) => &mut a.run,
            Job::Profile(a) => &mut a.run,
            Job::OnOff(a) => &mut a.run,
            Job::Pace(a) => &mut a.run,
            Job::Inject(a) => &mut a.run,
        }
    }
}
