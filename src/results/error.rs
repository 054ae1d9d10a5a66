//! What reading and writing results can fail with, by kind, so that a caller can tell a
//! refusing file system (a missing directory, a full disk) from a file that is not what
//! armada writes (damaged, cut short, foreign) and from data that breaks the results'
//! rules. Each error says where: which file, which job.

use polars::prelude::PolarsError;
use std::fmt::Display;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The file system refused: a missing directory, a full disk, permissions.
    #[error("{action} {}: {cause}", .path.display())]
    Io { action: &'static str, path: PathBuf, cause: io::Error },
    /// A file is not what armada writes: damaged, cut short, or foreign. `why` names it.
    #[error("{why}")]
    Damaged { path: PathBuf, why: String },
    /// Data that breaks the results' rules: a metric's name or value, a column, an axis.
    #[error("{0}")]
    Invalid(String),
    /// Polars could not build, stack or write a frame.
    #[error(transparent)]
    Polars(#[from] PolarsError),
    /// An error, with where it happened (a job, a file) around it.
    #[error("{context}: {cause}")]
    In { context: String, cause: Box<ResultsError> },
}

pub type Result<T, E = ResultsError> = std::result::Result<T, E>;

impl ResultsError {
    /// The file that is not what armada writes, when that is what went wrong.
    pub fn damaged_file(&self) -> Option<&Path> {
        match self.root() {
            ResultsError::Damaged { path, .. } => Some(path),
            _ => None,
        }
    }

    /// What went wrong, under every [`ResultsError::In`].
    pub fn root(&self) -> &ResultsError {
        match self {
            ResultsError::In { cause, .. } => cause.root(),
            other => other,
        }
    }
}

/// An I/O error as the file system's refusal to do `action` on `path`.
pub(crate) fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> ResultsError + 'a {
    move |cause| ResultsError::Io { action, path: path.to_path_buf(), cause }
}

/// An error reading `path` as the file being damaged, cut short or foreign.
pub(crate) fn damaged<'a, E: Display>(action: &'static str, path: &'a Path) -> impl FnOnce(E) -> ResultsError + 'a {
    move |e| ResultsError::Damaged { path: path.to_path_buf(), why: format!("{action} {}: {e}", path.display()) }
}

/// `path` is not what armada writes, as `why` (which names it) says.
pub(crate) fn not_armadas(path: &Path, why: String) -> ResultsError {
    ResultsError::Damaged { path: path.to_path_buf(), why }
}

/// Data that breaks the results' rules.
pub(crate) fn invalid(message: impl Into<String>) -> ResultsError {
    ResultsError::Invalid(message.into())
}

/// A summary asked of a sweep with no trajectories in `trajectories_dir`.
pub(crate) fn nothing_to_summarize(trajectories_dir: &Path) -> ResultsError {
    ResultsError::Invalid(format!("nothing to summarize: no trajectories in {}", trajectories_dir.display()))
}

/// Puts where an error happened around it, keeping its kind (see [`ResultsError::root`]).
pub(crate) trait Within<T> {
    fn within(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<ResultsError>> Within<T> for std::result::Result<T, E> {
    fn within(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ResultsError::In { context: context(), cause: Box::new(e.into()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_where_and_keep_their_kind_under_context() {
        let path = Path::new("sweep/trajectories/part-1.parquet");
        let refused = io("opening", path)(io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(refused.to_string(), "opening sweep/trajectories/part-1.parquet: entity not found");
        let damaged = damaged("reading the footer of", path)("out-of-spec");
        let wrapped: Result<()> = Err::<(), _>(damaged).within(|| "summarizing job k".into());
        let wrapped = wrapped.unwrap_err();
        assert_eq!(
            wrapped.to_string(),
            "summarizing job k: reading the footer of sweep/trajectories/part-1.parquet: out-of-spec"
        );
        assert!(matches!(wrapped.root(), ResultsError::Damaged { path: p, .. } if p == path));
        assert!(matches!(invalid("x").root(), ResultsError::Invalid(m) if m == "x"));
    }
}
