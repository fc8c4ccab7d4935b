//! Phase three: one module per command runs what `plan` prepared and
//! reports it.

pub mod analyze;
mod analyze_flows;
mod analyze_target;
pub mod converse;
mod converse_metrics;
pub mod demo;
pub mod distributed;
pub mod docs;
pub mod doctor;
mod doctor_nic;
mod finding;
pub mod flows;
pub mod jobs;
mod live_capture;
pub mod prep;
pub mod profile;
pub mod rfc2544;
pub mod rx;
pub mod series;
pub mod top;
