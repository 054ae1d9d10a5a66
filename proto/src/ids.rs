//! The identifiers both sides of the protocol pass around, as types of their own, so that
//! an attempt is never taken for a count, a seed or a job's place in a table.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// One lease of one job, numbered by the coordinator: ids are never reused, across
/// restarts too (the store reserves them in blocks), so a late message about an old
/// attempt never lands on a new one. On the wire, `attempt_id` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct AttemptId(pub u64);

impl fmt::Display for AttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl AttemptId {
    /// The wire's `attempt_id` values as ids.
    pub fn all(ids: impl IntoIterator<Item = u64>) -> Vec<AttemptId> {
        ids.into_iter().map(AttemptId).collect()
    }
}

/// A worker session: the secret credential the coordinator drew at its registration, which
/// owns the attempts the session leased. On the wire it travels sealed in the `session`
/// fields. It has no `Display`: a credential does not belong in messages or logs (they name
/// the worker, `w3 (host-a)`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(Arc<str>);

impl SessionId {
    pub fn new(name: &str) -> SessionId {
        SessionId(Arc::from(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Maps keyed by session are looked up by name (hashes and orders as the `str`).
impl Borrow<str> for SessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<String> for SessionId {
    fn from(name: String) -> SessionId {
        SessionId(Arc::from(name))
    }
}

impl From<&str> for SessionId {
    fn from(name: &str) -> SessionId {
        SessionId::new(name)
    }
}

/// A sweep: the name its submitter gave it (`lse-finite-quick`), unique on a coordinator,
/// which names its results directory. Shared: one allocation for all of a sweep's jobs.
/// On the wire, the `sweep_id` and `sweep` fields.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SweepId(Arc<str>);

impl SweepId {
    pub fn new(name: &str) -> SweepId {
        SweepId(Arc::from(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the two are one allocation (the same sweep's shared id), without comparing
    /// names: one pointer compare for every job of a run of the same sweep.
    pub fn same(&self, other: &SweepId) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Display for SweepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A sweep id reads as its name (maps keyed by sweep are looked up by name, paths joined
/// with it).
impl std::ops::Deref for SweepId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SweepId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for SweepId {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&*self.0)
    }
}

impl From<&str> for SweepId {
    fn from(name: &str) -> SweepId {
        SweepId::new(name)
    }
}

impl From<String> for SweepId {
    fn from(name: String) -> SweepId {
        SweepId(Arc::from(name))
    }
}
