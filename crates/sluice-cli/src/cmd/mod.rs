//! Phase three: one module per command runs what `plan` prepared and
//! reports it.

pub mod analyze;
mod analyze_flows;
mod analyze_target;
pub mod demo;
pub mod distributed;
pub mod docs;
pub mod doctor;
mod doctor_nic;
mod finding;
pub mod flows;
pub mod inject;
pub mod jobs;
mod live_capture;
pub mod onoff;
pub mod pace;
pub mod prep;
pub mod profile;
pub mod replay;
pub mod rfc2544;
pub mod rx;
pub mod series;
pub mod series_play;
pub mod top;
