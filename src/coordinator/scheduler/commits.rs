//! Commits: an attempt's records are checked against its spool and handed to the
//! committer; when the committer reports the part durable (or not), its jobs are done in
//! one store transaction (or queued again).

use super::Scheduler;
use crate::coordinator::committer::{Commit, PartWritten};
use crate::coordinator::handle::Reply;
use crate::coordinator::job_table::CommitStart;
use crate::coordinator::replies::{CommandError, SweepEvent};
use crate::coordinator::store::AttemptOutcome;
use crate::coordinator::trouble::Place;
use armada_core::MetricDef;
use armada_proto::ids::{AttemptId, SessionId};
use tracing::warn;

impl Scheduler {
    pub(super) fn complete(&mut self, session: &SessionId, attempt: AttemptId, n_records: u32, reply: Reply<bool>) {
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

    pub(super) fn metrics_of(&self, family: &str) -> &'static [MetricDef] {
        self.declaration_of(family).map_or(&[], |f| f.metrics)
    }

    /// A part was written (or not): its jobs are done, in one store transaction, or each
    /// goes back to the queue after a pause that grows while writes there keep failing.
    pub(super) fn part_written(&mut self, written: PartWritten, now: std::time::Instant) {
        let PartWritten { part, jobs } = written;
        let Some(first) = jobs.first() else { return };
        let sweep = self.table.job(first.job).sweep.clone();
        let place = Place::Parts(sweep.to_string());
        match &part {
            Ok(_) => self.metrics.writes.succeeded(&place),
            Err(e) => self.metrics.writes.failed(place, e, std::time::SystemTime::now()),
        }
        let committed: Vec<(usize, AttemptId)> = jobs.iter().map(|c| (c.job, c.attempt)).collect();
        let recorded = part.and_then(|part| {
            let done: Vec<([u8; 16], u32)> =
                jobs.iter().map(|c| (*self.table.job(c.job).key.bytes(), self.table.job(c.job).attempts)).collect();
            self.store.commit_part(&sweep, &part, &done).map_err(|e| format!("recording part {part}: {e:#}"))
        });
        if let Err(e) = recorded {
            let failures = self.metrics.writes.affecting(&sweep).iter().map(|t| t.failures).max().unwrap_or(1);
            let pause = unwritten_pause(failures);
            warn!(%sweep, jobs = jobs.len(), error = %e, ?pause, "committing failed; the jobs are queued again after a pause");
            let (effects, reopen) = self.table.commit_failed(&committed, &e, now + pause);
            self.apply(effects);
            for c in jobs {
                // The coordinator's failure, not the worker's: a status the worker retries
                // past, keeping its session and its other attempts.
                let message = format!("the coordinator could not write the trajectory ({e}); the job is queued again");
                let _ = c.reply.send(Err(CommandError::unavailable(message)));
            }
            for sweep in reopen {
                self.open_live(&sweep);
            }
            return;
        }
        let (effects, reopen) = self.table.committed(&committed);
        let watched = self.watched(&sweep);
        let mut locations = Vec::with_capacity(jobs.len());
        for mut c in jobs {
            locations.extend(c.location.take());
            if watched {
                let job = self.table.job(c.job);
                let final_metrics = self
                    .metrics_of(job.family())
                    .iter()
                    .zip(c.last)
                    .map(|(m, value)| (m.name.to_string(), value))
                    .collect();
                let event = SweepEvent::JobFinished {
                    job_key: job.key.to_string(),
                    description: job.describe(),
                    final_metrics,
                };
                self.emit(&sweep, event);
            }
            let _ = c.reply.send(Ok(true));
            self.metrics.attempt_ended(AttemptOutcome::Committed);
            self.metrics.commit_answered(c.asked.elapsed());
        }
        self.live.committed(&sweep, locations);
        for sweep in reopen {
            self.open_live(&sweep);
        }
        self.apply(effects);
    }
}

/// How long the jobs of a part that could not be written wait before they are leased
/// again, after `failures` failed writes in a row there: 250 ms doubling to 10 s, so that a
/// sweep whose parts cannot be written (a full disk, a file in the way) does not cycle its
/// jobs through the workers as fast as they run, and resumes within 10 s once it can.
pub(super) fn unwritten_pause(failures: u64) -> std::time::Duration {
    let doublings = failures.saturating_sub(1).min(6) as u32;
    std::time::Duration::from_millis(250 << doublings).min(std::time::Duration::from_secs(10))
}
