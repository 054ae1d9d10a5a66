//! The identifiers both sides of the protocol pass around, as types of their own, so that
//! an attempt is never taken for a count, a seed or a job's place in a table.

use std::fmt;

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
