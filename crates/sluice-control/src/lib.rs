//! Distributed generation: `sluice control` drives `sluice worker`s over
//! gRPC with mutual TLS (`proto/sluice/control/v1/worker.proto`). The
//! controller measures each worker's clock offset, publishes the global
//! port map, hands every worker the job with its share and one start
//! instant t_tos, and gathers the statistics into one status and summary.

pub mod clocksvc;
pub mod control;
pub mod error;
pub use sluice_run::job_failure as failure;
mod fourier;
pub mod inprocess;
pub mod jobs;
pub mod jobs_client;
pub mod jobwire;
pub mod local;
pub mod plan;
mod ports;
mod reserve;
pub mod shown;
pub mod tls;
mod upload;
pub mod worker;
mod worker_checks;

pub mod pb {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("sluice.control.v1");
}

/// CLOCK_REALTIME, ns since the epoch.
pub fn now_ns() -> i64 {
    sluice_sys::clock::realtime_ns() as i64
}

/// The sluice command line a task's command runs.
pub fn command_words(c: pb::Command) -> Option<&'static [&'static str]> {
    match c {
        pb::Command::Replay => Some(&["replay"]),
        pb::Command::Flows => Some(&["flows", "run"]),
        pb::Command::Series => Some(&["series", "play"]),
        pb::Command::Profile => Some(&["profile", "run"]),
        pb::Command::Unspecified => None,
    }
}
