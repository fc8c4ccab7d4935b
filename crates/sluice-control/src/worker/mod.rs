//! `sluice worker`: serves the control plane and runs each task's typed
//! job (`sluice_job::RemoteJob`) in a `sluice job` child process (the same
//! binary, so a distributed job is exactly the job one host would run,
//! and a job that fails or is killed never takes the worker with it),
//! started at the agreed instant and given its part of the job. The
//! child's statistics lines are streamed back as they come; its summary
//! ends the stream. A task carries a deadline: the worker stops the child
//! at it whether or not a controller is still there.
//!
//! A worker acts only on what it was given, and the job's types decide
//! what that may be: sinks it announced itself, options that name no file
//! and no device, files uploaded to it by their plain names (never a path
//! of its own). Registering takes a lease: the port map,
//! uploads, job and `Stop` belong to the controller that registered, and
//! others are refused while it holds them. Without TLS it serves a 0600
//! unix socket whose peers' uids are checked, never TCP.

mod admit;
mod config;
mod listen;
mod service;
mod state;
mod task;

pub use config::{WorkerConfig, WorkerListen, LEASE_IDLE, SESSION_KEY};
pub use listen::serve;
