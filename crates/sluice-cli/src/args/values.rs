//! The option-value parsers live with the job types they fill.

pub use sluice_job::values::*;
