//! Error type shared by every fallible operation of the crate.

/// Why a GP operation failed.
///
/// Programmer errors that cannot come from data (e.g. a `Points` buffer whose length is not a
/// multiple of its dimension) panic instead; everything a caller can trigger with user data or
/// configuration is reported here.
#[derive(Debug, thiserror::Error)]
pub enum GpError {
    /// A covariance matrix stayed numerically indefinite even after jitter escalation.
    #[error("matrix is not positive definite after {attempts} jitter attempts (last jitter {jitter:e})")]
    NotPositiveDefinite {
        /// Number of jittered attempts made.
        attempts: u32,
        /// Largest diagonal jitter tried.
        jitter: f64,
    },
    /// An input point has the wrong dimension.
    #[error("dimension mismatch: expected {expected}, got {got}")]
    DimensionMismatch {
        /// Dimension the kernel / point set expects.
        expected: usize,
        /// Dimension supplied.
        got: usize,
    },
    /// Two inputs that must have the same length (e.g. `x` and `y`) do not.
    #[error("length mismatch: expected {expected}, got {got}")]
    LengthMismatch {
        /// Expected length.
        expected: usize,
        /// Supplied length.
        got: usize,
    },
    /// A NaN or infinity appeared in the named input or intermediate quantity.
    #[error("non-finite value in {0}")]
    NonFinite(&'static str),
    /// A hyperparameter or configuration value is outside its valid range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// A candidate index is out of range.
    #[error("candidate index {index} out of range for {len} candidates")]
    IndexOutOfRange {
        /// Requested index.
        index: usize,
        /// Number of candidates.
        len: usize,
    },
}
