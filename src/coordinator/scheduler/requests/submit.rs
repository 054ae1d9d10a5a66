//! `Submit`: a sweep's jobs. Each submission is stored a chunk at a time between other
//! commands (see [`Ingest`]), and made the sweep once the store has it whole. One is stored
//! at a time; the others wait their turn.

use super::{Reply, Request};
use crate::coordinator::durable::store::Commit;
use crate::coordinator::scheduler::{internal, now_ms, release_free_memory, Scheduler};
use crate::coordinator::state::ingest::{Ingest, Step};
use crate::coordinator::state::jobs::{self, Key, Prepared, Submission, Template};
use crate::coordinator::state::replies::{CommandError, Submitted, SweepEvent};
use crate::coordinator::state::sweeps::FailurePage;
use crate::results;
use armada_proto::ids::{SessionId, SweepId};
use armada_proto::v1 as pb;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{info, warn};

/// Jobs of a submission written to the store per transaction, or added to the job table,
/// per turn: a few milliseconds here, so a command arriving meanwhile hardly waits.
const STORE_CHUNK: usize = 4096;

/// A submission that added this many jobs gives the memory it no longer needs (its
/// parsed jobs, their keys and rows) back to the system.
const TRIM_AFTER: usize = 100_000;

/// A submission being stored (see [`Ingest`]), with what its answer needs.
pub(in crate::coordinator::scheduler) struct Storing {
    pub(in crate::coordinator::scheduler) ingest: Ingest,
    /// Its generation in the store.
    generation: i64,
    started: Instant,
    reply: Reply<Submitted>,
    /// A resolving sweep's file, and whether this is one of its rounds.
    source: Option<Arc<str>>,
    round: bool,
}

/// Submit a sweep's jobs.
pub(in crate::coordinator::scheduler) struct Submit {
    pub(in crate::coordinator::scheduler) submission: Submission,
}

impl Request for Submit {
    type Answer = Submitted;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: std::time::Instant, reply: Reply<Submitted>) {
        s.submit(self.submission, reply);
    }
}

impl Scheduler {
    /// Start storing a submission, or queue it behind the one being stored.
    pub(in crate::coordinator::scheduler) fn submit(&mut self, submission: Submission, reply: Reply<Submitted>) {
        if self.storing.is_some() {
            self.waiting.push_back((submission, reply));
            return;
        }
        let (round, name) = (submission.round, submission.name.clone());
        match self.begin_storing(submission) {
            Ok(storing) => self.storing = Some(Storing { reply, ..storing }),
            Err(e) => {
                if round {
                    warn!(sweep = %name, error = %e, "a resolving sweep's next round could not be stored: it stops here");
                    self.announce(&name);
                }
                let _ = reply.send(Err(e));
                self.next_submission();
            }
        }
    }

    /// What a submission adds to its sweep (jobs whose keys it does not know yet, `done`
    /// when their trajectories are on disk already) and drops from it (jobs of the previous
    /// submission that this one does not contain). The store gets the new jobs in chunks
    /// ([`Self::store_chunk`]); nothing changes in memory until they are all stored.
    pub(in crate::coordinator::scheduler) fn begin_storing(
        &mut self,
        submission: Submission,
    ) -> Result<Storing, CommandError> {
        let Submission { name, family, templates, families, jobs, keys, by_key, prepared, source, round } = submission;
        // A resubmission: what the sweep has is not added again, and what it has that the
        // submission does not is dropped. Worked out off the scheduler when the sweep has
        // not changed since (it grows with the sweep); here otherwise.
        self.sweeps.check_family(&name, &family)?;
        let revision = self.sweeps.revision(&name);
        let (plan, on_disk) = match prepared.filter(|p| p.revision == revision) {
            Some(Prepared { plan, on_disk, .. }) => (plan, on_disk),
            None => {
                let plan = self.sweeps.plan(&name, &family, &keys, &self.table)?;
                let (on_disk, damaged) = results::stored_keys(&self.results_dir.join(&name)).map_err(internal)?;
                for e in damaged {
                    warn!(sweep = %name, error = %e, "a damaged part is left out: `armada check --repair` queues its jobs again");
                }
                (plan, on_disk.iter().filter_map(|k| Key::parse(k)).collect())
            }
        };
        let templates: Vec<Arc<Template>> =
            templates.into_iter().zip(families).map(|(spec, family)| self.templates.shared(spec, &family)).collect();
        let generation = self.store.begin_submission(&name, &family, now_ms()).map_err(internal)?;
        let ingest = Ingest::new(name, family, templates, jobs, by_key, plan, on_disk, self.table.end());
        Ok(Storing { ingest, generation, started: Instant::now(), reply: oneshot::channel().0, source, round })
    }

    /// One step of the submission being stored: the next chunk of its jobs into the store,
    /// or (once all are) into the job table; then its commit, which makes it the sweep.
    pub(in crate::coordinator::scheduler) fn store_chunk(&mut self) {
        let Some(storing) = self.storing.as_mut() else { return };
        let name = storing.ingest.name.as_str();
        let sweep: SweepId = self.sweeps.id_of(name).unwrap_or_else(|| name.into());
        let step = storing.ingest.step(&mut self.table, &sweep, STORE_CHUNK);
        let name = storing.ingest.name.as_str();
        let committing = matches!(step, Step::Commit(_));
        let result = match step {
            Step::Write(rows) => self.store.add_jobs(name, storing.generation, &rows),
            Step::Added => Ok(()),
            Step::Commit(removed) => {
                let commit = Commit {
                    family: &storing.ingest.family,
                    removed: &removed,
                    source: storing.source.as_deref(),
                    round: storing.round,
                };
                self.store.commit_submission(name, storing.generation, &commit)
            }
        };
        if let Err(e) = result {
            // Nothing of it counts: its rows are dropped, its jobs were in no sweep.
            let storing = self.storing.take().expect("checked");
            self.table.truncate(storing.ingest.first);
            if let Err(e) = self.store.abandon_submissions() {
                warn!(error = %format!("{e:#}"), "store error");
            }
            if storing.round {
                self.announce(&storing.ingest.name);
            }
            let _ = storing.reply.send(Err(internal(e)));
            self.next_submission();
        } else if committing {
            let storing = self.storing.take().expect("checked");
            self.finish_storing(storing);
            self.next_submission();
        }
    }

    /// The declared families of a sweep whose families were `was` and are now `now`
    /// that another declaration (a revision, a version) replaced.
    fn revised(&self, was: &str, now: &str) -> Vec<pb::RevisedFamily> {
        let registry = self.catalog.get();
        let version =
            |name: &str, digest: &str| registry.resolve(&format!("{name}+{digest}")).map_or(0, |f| f.version());
        jobs::revised_families(was, now)
            .into_iter()
            .map(|(name, was_digest, digest)| pb::RevisedFamily {
                name: name.to_string(),
                was_digest: was_digest.to_string(),
                digest: digest.to_string(),
                was_version: version(name, was_digest),
                version: version(name, digest),
            })
            .collect()
    }

    pub(in crate::coordinator::scheduler) fn next_submission(&mut self) {
        while self.storing.is_none() {
            let Some((submission, reply)) = self.waiting.pop_front() else { return };
            self.submit(submission, reply);
        }
    }

    /// A submission is committed in the store and its jobs are in the job table: make it
    /// the sweep (drop what it dropped, queue its jobs and the sweep's failed and
    /// cancelled ones again), then answer.
    pub(in crate::coordinator::scheduler) fn finish_storing(&mut self, storing: Storing) {
        let Storing { ingest, started, reply, source, round, .. } = storing;
        let stored = started.elapsed();
        let n_added = ingest.n_added(&self.table) as u32;
        let (name, family, removed, first) = (&ingest.name, &ingest.family, ingest.removed(), ingest.first);
        let revised = self.sweeps.get(name).map_or_else(|_| Vec::new(), |was| self.revised(&was.family, family));
        let only_submitted = self.config.only_submitted;
        let effects =
            self.sweeps.submitted(name, family, source, round, removed, first, &mut self.table, only_submitted);
        let counts = self.sweeps.counts(name, &self.table);
        let n_jobs = self.sweeps.get(name).map_or(0, |s| s.jobs.len() as u32);
        info!(
            sweep = %name,
            jobs = n_jobs,
            new = n_added,
            dropped = removed.len(),
            already_done = counts.done,
            stored = ?stored,
            queued = ?(started.elapsed() - stored),
            "sweep stored and queued"
        );
        self.apply(effects);
        if round {
            // Watchers hear the round's jobs counted (a progress bar's new length).
            if let Ok(status) = self.sweeps.status(name, FailurePage::default(), &self.table) {
                self.emit(name, SweepEvent::Snapshot(status));
            }
        }
        for r in &revised {
            info!(sweep = %name, family = %r.name, was = %r.was_digest, now = %r.digest, "a family's declaration changed: its jobs run again");
        }
        let _ = reply.send(Ok(Submitted {
            sweep_id: ingest.name.into(),
            n_jobs,
            n_added,
            n_already_done: counts.done,
            revised,
        }));
        if n_added as usize >= TRIM_AFTER {
            release_free_memory();
        }
    }
}
