//! The control plane's error: what failed, in words a user can act on,
//! and whose fault it is, which picks the exit code.

/// A failure of the controller, a worker's set-up or the keys.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The plan, its files, an address, the keys, a refused call: the
    /// user's to fix (exit 2).
    #[error("{0}")]
    Input(String),
    /// A worker that cannot be reached or does not answer in time, a
    /// clock offset known too poorly to start, a stop by signal: the
    /// environment's (exit 1).
    #[error("{0}")]
    Environment(String),
}

pub type Result<T, E = ControlError> = std::result::Result<T, E>;

impl ControlError {
    /// Whether the environment, not the plan, is at fault.
    pub fn is_environment(&self) -> bool {
        matches!(self, ControlError::Environment(_))
    }

    /// The same error, saying what it was about first.
    pub fn about(self, what: &str) -> Self {
        match self {
            ControlError::Input(m) => ControlError::Input(format!("{what}: {m}")),
            ControlError::Environment(m) => ControlError::Environment(format!("{what}: {m}")),
        }
    }
}

/// `ControlError::Input` from a format string.
macro_rules! input {
    ($($t:tt)*) => {
        $crate::error::ControlError::Input(format!($($t)*))
    };
}
pub(crate) use input;

/// An error and each of its causes, outermost first.
pub(crate) fn chain<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |c| c.source())
}

/// An error and its causes, each once (transport errors keep their cause
/// deep in the chain).
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in chain(e) {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// Says what was being done when an error happened, keeping its causes.
pub(crate) trait Context<T> {
    fn context(self, what: &str) -> Result<T>;
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::error::Error + 'static> Context<T> for std::result::Result<T, E> {
    fn context(self, what: &str) -> Result<T> {
        self.with_context(|| what.to_string())
    }

    fn with_context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ControlError::Input(format!("{}: {}", what(), describe(&e))))
    }
}

impl From<std::io::Error> for ControlError {
    fn from(e: std::io::Error) -> Self {
        ControlError::Input(describe(&e))
    }
}

impl From<rcgen::Error> for ControlError {
    fn from(e: rcgen::Error) -> Self {
        ControlError::Input(describe(&e))
    }
}

impl From<tonic::transport::Error> for ControlError {
    fn from(e: tonic::transport::Error) -> Self {
        ControlError::Input(describe(&e))
    }
}

impl From<tonic::Status> for ControlError {
    fn from(e: tonic::Status) -> Self {
        ControlError::Input(e.message().to_string())
    }
}
