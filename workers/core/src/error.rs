//! Errors of the job model: a spec that fails validation, and a job that fails while running.

use std::fmt;

/// A job or sweep specification that does not validate. `field_path` names the offending
/// field (for example `algorithm[1].params.beta_sqrt`), `message` says what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub field_path: String,
    pub message: String,
}

impl SpecError {
    pub fn new(field_path: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError { field_path: field_path.into(), message: message.into() }
    }

    /// The same error seen from an enclosing field: `inner` becomes `outer.inner`.
    pub fn within(mut self, outer: &str) -> Self {
        self.field_path = if self.field_path.is_empty() {
            outer.to_string()
        } else if self.field_path.starts_with('[') {
            format!("{outer}{}", self.field_path)
        } else {
            format!("{outer}.{}", self.field_path)
        };
        self
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field_path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field_path, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

/// Why a job stopped without reaching its horizon.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum JobError {
    /// The spec passed validation but the family could not use it (a bug in a schema).
    #[error("invalid job: {0}")]
    Invalid(String),
    /// Data the job needs is not on this worker (the message says how to get it).
    #[error("missing data: {0}")]
    MissingData(String),
    /// A numerical failure the algorithm could not recover from.
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// The job's code panicked; the message is the panic payload.
    #[error("job panicked: {0}")]
    Panicked(String),
    /// The consumer of the records asked the job to stop.
    #[error("job cancelled")]
    Cancelled,
}
