//! `Release`: attempts leased and never started, handed back: each job current with one is queued again, first, with the attempt uncounted; answers how many.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::CommandError;
use crate::coordinator::state::stored::{AttemptOutcome, JobState};
use armada_proto::ids::AttemptId;
use armada_proto::ids::SessionId;
use std::time::Instant;
use tracing::warn;

/// Hand back `attempts` of `session`, never started.
pub(in crate::coordinator::scheduler) struct Release {
    pub(in crate::coordinator::scheduler) session: SessionId,
    pub(in crate::coordinator::scheduler) attempts: Vec<AttemptId>,
}

impl Request for Release {
    type Answer = u32;

    fn session(&self) -> Option<&SessionId> {
        Some(&self.session)
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<u32>) {
        let _ = reply.send(s.release(&self.session, self.attempts));
    }
}

impl Scheduler {
    /// Attempts a worker leased and never started: each job current with it is queued
    /// again, first, with the attempt uncounted.
    pub(in crate::coordinator::scheduler) fn release(
        &mut self,
        session: &SessionId,
        attempts: Vec<AttemptId>,
    ) -> Result<u32, CommandError> {
        self.workers.get(session)?;
        let mut released = 0;
        for (id, i) in self.table.releasable(session, &attempts)? {
            let effects = self.table.release(id, i);
            self.apply(effects);
            // Uncounted: the store's count for the job is the table's again.
            let job = self.table.job(i);
            let (sweep, key, attempts) = (job.sweep.clone(), job.key.to_string(), job.attempts);
            // Logged, not answered: a restart would then charge it, as one cut short.
            if let Err(e) = self.store.end_attempt(id, (&sweep, &key), JobState::Queued, attempts, None) {
                warn!(error = %format!("{e:#}"), "store error");
            }
            self.metrics.attempt_ended(AttemptOutcome::Released);
            released += 1;
        }
        Ok(released)
    }
}
