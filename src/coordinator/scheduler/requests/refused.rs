//! `Refused`: an attempt's uploaded records broke its job's schema (its spool says why): the attempt is void, its job queued again.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use armada_proto::ids::AttemptId;
use armada_proto::ids::SessionId;
use std::time::Instant;

/// The records of attempt `attempt` were refused.
pub(in crate::coordinator::scheduler) struct Refused {
    pub(in crate::coordinator::scheduler) attempt: AttemptId,
}

impl Request for Refused {
    type Answer = ();

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, _reply: Reply<()>) {
        s.refused(self.attempt);
    }
}

impl Scheduler {
    /// Records of the upload stream broke the schema: the attempt is void (its spool knows
    /// why), and its job queued again.
    pub(in crate::coordinator::scheduler) fn refused(&mut self, attempt: AttemptId) {
        if self.table.attempt(attempt).is_none() {
            return;
        }
        let error = self.spools.take(attempt).and_then(|s| {
            let why = s.broken().map(str::to_owned);
            drop(s.into_records());
            why
        });
        let effects = self.table.refused(attempt, error.unwrap_or_else(|| "records refused".into()));
        self.apply(effects);
    }
}
