//! Option groups of the command line's own commands (`analyze`,
//! `report`); a sending job's are `sluice_job::command`'s.

use clap::Args;

/// How the run being judged was timed, so the reference trace is scheduled
/// as `replay` scheduled it (`analyze` and `report`, with `--reference`).
#[derive(Args, Debug)]
pub struct RefTiming {
    /// With a reference: the run sent at this fixed packet rate (as replay's pps option); |D_M − D_R| is measured against that.
    #[arg(long, value_parser = super::values::rate, requires = "reference", group = "timing")]
    pub pps: Option<f64>,
    /// With a reference: the run sent at this fixed bit rate over frame bytes (as replay's mbps option).
    #[arg(long, value_parser = super::values::rate, requires = "reference", group = "timing")]
    pub mbps: Option<f64>,
    /// With a reference: the run scaled the recorded timing by this (as replay's multiplier).
    #[arg(long, short = 'x', requires = "reference", group = "timing")]
    pub multiplier: Option<f64>,
}

impl RefTiming {
    /// The timing mode given, if any; a multiplier must be positive.
    pub fn mode(&self) -> Result<Option<sluice_pace::TimingMode>, String> {
        use sluice_pace::TimingMode;
        Ok(match (self.pps, self.mbps, self.multiplier) {
            (Some(p), ..) => Some(TimingMode::Pps(p)),
            (_, Some(m), _) => Some(TimingMode::Mbps(m)),
            (_, _, Some(x)) if !(x.is_finite() && x > 0.0) => {
                return Err(format!("--multiplier: {x} is not a positive number"))
            }
            (_, _, Some(x)) => Some(TimingMode::Recorded { multiplier: x }),
            _ => None,
        })
    }
}
