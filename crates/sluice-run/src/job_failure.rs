//! How a worker's job says why it failed: with [`FAILURE_ENV`] set (the
//! worker sets it for its job), a `sluice` command that fails prints one
//! [`JobFailure`] line on stdout (`docs/schema/failure.json`), which the
//! worker reads instead of the prose on stderr. The CLI writes the line
//! and the worker reads it with this one type.

use serde::{Deserialize, Serialize};

/// The environment variable that asks for the line.
pub const FAILURE_ENV: &str = "SLUICE_FAILURE_JSON";
/// The line's `schema` tag.
pub const FAILURE_SCHEMA: &str = "sluice.failure/1";

/// Whose fault the failure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobFault {
    /// The command line was refused (exit 2).
    Usage,
    /// An input or an option value was (exit 2).
    Input,
    /// A device, socket, disk or thread failed (exit 1).
    Environment,
}

/// The body of a `sluice.failure/1` line (after its `schema` key).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobFailure {
    /// The process's exit code.
    pub exit: u8,
    pub fault: JobFault,
    /// The error and its causes, as stderr has them.
    pub error: String,
}

impl JobFailure {
    /// The failure a line of a job's stdout reports, if it is one.
    pub fn parse(line: &str) -> Option<JobFailure> {
        #[derive(Deserialize)]
        struct Tagged {
            schema: String,
            #[serde(flatten)]
            body: JobFailure,
        }
        let rest = line.strip_prefix(r#"{"schema":""#)?;
        if !rest.starts_with(FAILURE_SCHEMA) {
            return None;
        }
        let t: Tagged = serde_json::from_str(line).ok()?;
        (t.schema == FAILURE_SCHEMA).then_some(t.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_line_is_told_from_a_statistics_line() {
        let line = r#"{"schema":"sluice.failure/1","exit":2,"fault":"usage","error":"--x"}"#;
        let f = JobFailure::parse(line).expect("a failure line");
        assert_eq!(
            (f.exit, f.fault, f.error.as_str()),
            (2, JobFault::Usage, "--x")
        );
        assert!(JobFailure::parse(r#"{"schema":"sluice.interval/1","packets":3}"#).is_none());
        assert!(JobFailure::parse(r#"{"schema":"sluice.failure/1","exit":2}"#).is_none());
    }
}
