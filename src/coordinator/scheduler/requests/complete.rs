//! `Complete`: commit attempts of one session, each with its count of records, in one
//! turn. An attempt's records are checked against its spool and handed to the committer;
//! each is answered, once its part is durable, whether its trajectory is the job's (a later
//! commit of a job is not).

use super::{Reply, Request};
use crate::coordinator::durable::committer::Commit;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::job_table::CommitStart;
use crate::coordinator::state::replies::CommandError;
use armada_core::MetricDef;
use armada_proto::ids::{AttemptId, SessionId};
use std::time::Instant;

/// Commit `commits` (attempt, records, answer) of `session`.
pub(in crate::coordinator::scheduler) struct Complete {
    pub(in crate::coordinator::scheduler) session: SessionId,
    pub(in crate::coordinator::scheduler) commits: Vec<(AttemptId, u32, Reply<bool>)>,
}

impl Request for Complete {
    type Answer = ();

    fn session(&self) -> Option<&SessionId> {
        Some(&self.session)
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, _reply: Reply<()>) {
        for (attempt, n_records, reply) in self.commits {
            s.complete(&self.session, attempt, n_records, reply);
        }
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn complete(
        &mut self,
        session: &SessionId,
        attempt: AttemptId,
        n_records: u32,
        reply: Reply<bool>,
    ) {
        let (start, effects) = match self.table.begin_commit(session, attempt) {
            Ok(started) => started,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        self.apply(effects);
        let (i, revive) = match start {
            CommitStart::Dropped => {
                let _ = reply.send(Ok(false));
                return;
            }
            CommitStart::Cancelled(message) => {
                let _ = reply.send(Err(CommandError::failed_precondition(message)));
                return;
            }
            CommitStart::Check { job, revive } => (job, revive),
        };
        let checked = match self.spools.take(attempt) {
            None => Err(format!("attempt {attempt} has no spool")),
            Some(spool) => match spool.refusal(n_records) {
                Some(error) => {
                    drop(spool.into_records()); // removes its file
                    Err(error)
                }
                None => Ok(spool),
            },
        };
        let spool = match checked {
            Ok(spool) => spool,
            Err(error) => {
                let effects = self.table.void_if_current(i, attempt, error.clone());
                self.apply(effects);
                let _ = reply.send(Err(CommandError::invalid_argument(error)));
                return;
            }
        };
        self.table.commit(i, attempt, revive);
        let job = self.table.job(i);
        let provenance = self.workers.provenance(session, job.family());
        // Nothing of the sweep is queued, every running job is committing, and no more of
        // its jobs are on their way into the table (a submission is taken in chunks): no
        // commit of it will join this one's part, so the part is written without the linger.
        let counts = self.table.counts(&job.sweep);
        let storing = self.storing.as_ref().is_some_and(|s| *s.ingest.name == *job.sweep);
        let last_of_sweep = !storing && counts.queued == 0 && counts.running <= counts.committing;
        let commit = Commit {
            last_of_sweep,
            provenance,
            sweep: job.sweep.clone(),
            results_dir: self.results_dir.clone(),
            metrics: self.metrics_of(job.family()),
            job: i,
            attempt,
            template: job.template.clone(),
            seed: job.seed,
            key: job.key,
            spool,
            asked: std::time::Instant::now(),
            reply,
        };
        if let Err(unsent) = self.committer.send(commit) {
            let commit = unsent.0;
            self.table.commit_unsent(i);
            let _ = commit.reply.send(Err(CommandError::unavailable("the coordinator is shutting down")));
        }
    }

    pub(in crate::coordinator::scheduler) fn metrics_of(&self, family: &str) -> &'static [MetricDef] {
        self.declaration_of(family).map_or(&[], |f| f.metrics)
    }
}
