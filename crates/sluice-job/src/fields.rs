//! Serde of the fields that the command line reads with one of
//! [`crate::values`]' parsers: written as the command line takes them,
//! read back by the same parser, so a job from a file or a peer is checked
//! as the command line is.

use crate::text::parsed_field;

parsed_field!(duration, sluice_core::Nanos, crate::values::duration);
parsed_field!(opt opt_duration, sluice_core::Nanos, crate::values::duration);
parsed_field!(
    positive_duration,
    sluice_core::Nanos,
    crate::values::positive_duration
);
parsed_field!(opt opt_positive_duration, sluice_core::Nanos, crate::values::positive_duration);
parsed_field!(opt opt_positive_count, u64, crate::values::positive_count);
parsed_field!(opt opt_rate, f64, crate::values::rate);
parsed_field!(opt opt_cpus, crate::values::CpuList, crate::values::cpus);
parsed_field!(opt opt_queues, crate::values::CpuList, crate::values::queues);
parsed_field!(probability, f64, crate::values::probability);
parsed_field!(opt opt_loss, f64, crate::values::loss_percent);
