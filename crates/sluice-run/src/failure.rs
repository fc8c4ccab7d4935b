//! How a command fails: an error with the exit code it deserves (the codes
//! are documented in `main.rs` and the README).

/// Exit codes, documented in `main.rs` and the README.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FATAL: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const PARTIAL: u8 = 3;
    pub const CHECK_FAILED: u8 = 4;
    pub const INTERRUPTED: u8 = 130;
}

/// An error with the exit code it deserves.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: exit::FATAL,
            error: e.into(),
        }
    }
}

pub fn bad_input(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: exit::BAD_INPUT,
        error: error.into(),
    }
}

/// A receiver that failed: a socket that cannot be opened as
/// [`open_failure`] says, anything later the environment's.
pub fn receive_failure(e: sluice_receive::ReceiveError) -> Failure {
    match e {
        sluice_receive::ReceiveError::Open { .. } => open_failure(e),
        other => Failure::from(other),
    }
}

/// A device or socket that cannot be opened: the environment's fault
/// (exit 1: no permission, the network down, an address not here) when an
/// OS error in the chain says so, else the input's (exit 2: no such
/// interface, a bad address).
pub fn open_failure(error: impl Into<anyhow::Error>) -> Failure {
    use std::io::ErrorKind::*;
    let error = error.into();
    let env = error.chain().any(|c| {
        let io = c
            .downcast_ref::<std::io::Error>()
            .or_else(|| match c.downcast_ref() {
                Some(sluice_sink::SinkError::Os { error, .. }) => Some(error),
                _ => None,
            });
        io.is_some_and(|e| {
            matches!(
                e.kind(),
                PermissionDenied | NetworkDown | AddrNotAvailable | AddrInUse
            )
        })
    });
    Failure {
        code: if env { exit::FATAL } else { exit::BAD_INPUT },
        error,
    }
}
