//! `PartWritten` (from the committer): a part was written, or could not be; its jobs are
//! done in one store transaction, or queued again after a pause.

use super::{Reply, Request};
use crate::coordinator::durable::committer::PartWritten;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::jobs::JobIndex;
use crate::coordinator::state::replies::CommandError;
use crate::coordinator::state::replies::SweepEvent;
use crate::coordinator::state::stored::AttemptOutcome;
use crate::coordinator::state::trouble::Place;
use armada_proto::ids::{AttemptId, SessionId};
use std::time::Instant;
use tracing::warn;

impl Request for PartWritten {
    type Answer = ();

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, now: Instant, _reply: Reply<()>) {
        s.part_written(self, now);
    }
}

impl Scheduler {
    /// A part was written (or not): its jobs are done, in one store transaction, or each
    /// goes back to the queue after a pause that grows while writes there keep failing.
    pub(in crate::coordinator::scheduler) fn part_written(&mut self, written: PartWritten, now: std::time::Instant) {
        let PartWritten { part, jobs } = written;
        let Some(first) = jobs.first() else { return };
        let sweep = self.table.job(first.job).sweep.clone();
        let place = Place::Parts(sweep.to_string());
        match &part {
            Ok(_) => self.metrics.writes.succeeded(&place),
            Err(e) => self.metrics.writes.failed(place, e, std::time::SystemTime::now()),
        }
        let committed: Vec<(JobIndex, AttemptId)> = jobs.iter().map(|c| (c.job, c.attempt)).collect();
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
        let in_detail = self.watched_in_detail(&sweep);
        let mut locations = Vec::with_capacity(jobs.len());
        for mut c in jobs {
            locations.extend(c.location.take());
            if in_detail {
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
        // Before the effects, which may announce the sweep finished: its last event.
        if self.watched(&sweep) {
            if let Some(counts) = self.sweeps.sweep_counts(&sweep, &self.table) {
                self.emit(&sweep, SweepEvent::Progress(counts));
            }
        }
        self.apply(effects);
    }
}

/// How long the jobs of a part that could not be written wait before they are leased
/// again, after `failures` failed writes in a row there: 250 ms doubling to 10 s, so that a
/// sweep whose parts cannot be written (a full disk, a file in the way) does not cycle its
/// jobs through the workers as fast as they run, and resumes within 10 s once it can.
pub(in crate::coordinator::scheduler) fn unwritten_pause(failures: u64) -> std::time::Duration {
    let doublings = failures.saturating_sub(1).min(6) as u32;
    std::time::Duration::from_millis(250 << doublings).min(std::time::Duration::from_secs(10))
}
