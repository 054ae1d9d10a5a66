//! The requests that change or read one thing: a sweep (status, cancel, delete, its
//! summaries' inputs), a family (declare), a worker session (register, lease, heartbeat,
//! fail, release), and the clock's (expiry, forgetting silent workers).

use super::{internal, Scheduler};
use crate::coordinator::catalog::{Decision, Declarer};
use crate::coordinator::declared::Checked;
use crate::coordinator::job_table::{Cause, Effect};
use crate::coordinator::replies::{
    CommandError, Declared, Lease, Leases, Registered, Registration, SummaryInputs, SweepStatus,
};
use crate::coordinator::store::{AttemptOutcome, JobState};
use crate::coordinator::sweeps::FailurePage;
use crate::coordinator::trouble::Place;
use crate::results;
use armada_proto::ids::{AttemptId, SessionId};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use tracing::{info, warn};

/// The longest error message kept for a job, in bytes: what a worker reports is clipped.
pub(super) const MAX_ERROR_BYTES: usize = 4096;

/// `error` clipped to [`MAX_ERROR_BYTES`] (at a character boundary), saying how much was cut.
fn clip(mut error: String) -> String {
    if error.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        let cut = error.len() - end;
        error.truncate(end);
        error.push_str(&format!(" ... ({cut} more bytes)"));
    }
    error
}

/// A worker that found nothing to lease asks again after this long.
pub(super) const NOTHING_TO_LEASE_RETRY: Duration = Duration::from_millis(200);

/// A session that never asked for jobs is a registration its worker gave up (it died, or
/// registered again after losing the connection): forgotten once silent this long.
const FORGET_UNUSED_SESSION_AFTER: Duration = Duration::from_secs(60);

/// When the store cannot start attempts, workers ask again this much later (the longest a
/// worker waits between two lease requests), not at once.
const STORE_TROUBLE_RETRY: Duration = Duration::from_secs(5);

impl Scheduler {
    pub(super) fn status(&self, id: &str) -> Result<SweepStatus, CommandError> {
        self.status_page(id, FailurePage::default())
    }

    /// A sweep's status with one page of its failures and the writes failing that hold it up.
    pub(super) fn status_page(&self, id: &str, page: FailurePage) -> Result<SweepStatus, CommandError> {
        let mut status = self.sweeps.status(id, page, &self.table)?;
        status.write_troubles = self.metrics.writes.affecting(id);
        Ok(status)
    }

    pub(super) fn cancel(&mut self, id: &str) -> Result<SweepStatus, CommandError> {
        self.sweeps.get(id)?;
        self.store.cancel(id).map_err(internal)?;
        let effects = self.sweeps.cancel(id, &mut self.table)?;
        info!(sweep = %id, "sweep cancelled");
        self.apply(effects);
        self.status(id)
    }

    /// Forget a sweep with nothing queued or running: its jobs, attempts and live
    /// summaries, here and in the store (its results are the caller's to remove).
    pub(super) fn delete(&mut self, id: &str) -> Result<(PathBuf, u32), CommandError> {
        self.sweeps.deletable(id, self.storing.as_ref().map(|s| s.ingest.name.as_str()), &self.table)?;
        self.store.delete_sweep(id).map_err(internal)?;
        let (effects, n_jobs) = self.sweeps.delete(id, &mut self.table)?;
        self.watchers.remove(id);
        self.apply(effects);
        info!(sweep = %id, jobs = n_jobs, "sweep deleted");
        Ok((self.results_dir.join(id), n_jobs))
    }

    pub(super) fn summary_inputs(&self, id: &str, with_keys: bool) -> Result<SummaryInputs, CommandError> {
        let sweep = self.sweeps.get(id)?;
        let family = self.declaration_of(&sweep.family);
        let counts = self.sweeps.counts(id, &self.table);
        let done_keys = match with_keys {
            true => self.sweeps.done(id, &self.table).map(|j| j.key.to_string()).collect(),
            false => BTreeSet::new(),
        };
        Ok(SummaryInputs {
            sweep_dir: self.results_dir.join(id),
            finished: counts.is_finished(),
            n_done: counts.done,
            done_keys,
            n_failed: counts.failed,
            n_cells: sweep.n_cells,
            metrics: family.map_or(&[], |f| f.metrics),
            headline: family.map_or(&[], |f| f.headline_metrics),
            axes: family.map_or(&[], |f| f.summary_axes),
        })
    }

    /// Keep a family's declaration (in the store first), unless the same one is kept.
    pub(super) fn declare(&mut self, declaration: Checked, declarer: &Declarer) -> Result<Declared, CommandError> {
        let (checked, restyled) = match self.catalog.decide(declaration, declarer)? {
            Decision::Known { digest } => return Ok(Declared { digest, created: false }),
            Decision::Restyled(checked) => (checked, true),
            Decision::New(checked) => (checked, false),
        };
        let Checked { info, digest } = &*checked;
        let encoded = prost::Message::encode_to_vec(info);
        // The coordinator's trouble (a full disk, say), shown where operators look: the
        // caller is told to try again later, not that it erred.
        self.store.keep_family(&info.name, info.version, digest, &declarer.token, &encoded).map_err(|e| {
            CommandError::unavailable(format!(
                "the coordinator cannot record the declaration of `{}` in its store ({e:#}); try again later",
                info.name
            ))
        })?;
        let what = if restyled { "its docs replaced" } else { "family declared" };
        info!(family = %info.name, version = info.version, %digest, code = %info.code, "{what}");
        let declared = Declared { digest: digest.clone(), created: !restyled };
        self.catalog.add(*checked, &declarer.token);
        Ok(declared)
    }

    /// Forget the declarations of `name` at `version` (all, or the one of `digest`), in
    /// the store first, unless a stored sweep uses one: FAILED_PRECONDITION naming them.
    pub(super) fn remove_family(
        &mut self,
        name: &str,
        version: u32,
        digest: Option<&str>,
    ) -> Result<Vec<String>, CommandError> {
        if self.catalog.builtin().families().any(|f| f.name() == name) {
            return Err(CommandError::invalid_argument(format!("name: `{name}` is a built-in family")));
        }
        let digests = self.catalog.revisions(name, version, digest);
        if digests.is_empty() {
            let which = digest.map_or(String::new(), |d| format!(" with digest {d}"));
            return Err(CommandError::not_found(format!(
                "no declaration of family `{name}` version {version}{which} is kept"
            )));
        }
        let references: Vec<String> = digests.iter().map(|d| format!("{name}+{d}")).collect();
        let users = self.sweeps.using(&references);
        if !users.is_empty() {
            return Err(CommandError::failed_precondition(format!(
                "family `{name}` version {version} is used by sweeps {}: delete them first (`armada delete`)",
                users.join(", ")
            )));
        }
        self.store.remove_families(name, &digests).map_err(internal)?;
        self.catalog.remove(name, &digests);
        info!(family = %name, version, digests = ?digests, "declarations removed");
        Ok(digests)
    }

    pub(super) fn register(
        &mut self,
        mut registration: Registration,
        now: std::time::Instant,
    ) -> Result<Registered, CommandError> {
        // The families it declares are kept first: a session runs only what is kept.
        let mut declared = HashMap::new();
        let observed = &registration.observed;
        let declarer = Declarer { token: observed.token.clone(), unlimited: observed.unlimited };
        for (i, declaration) in std::mem::take(&mut registration.declarations).into_iter().enumerate() {
            let (name, code) = (declaration.info.name.clone(), declaration.info.code.clone());
            let Declared { digest, .. } = self
                .declare(declaration, &declarer)
                .map_err(|e| CommandError::new(e.kind(), format!("declarations[{i}]: {}", e.message())))?;
            let reference = format!("{name}+{digest}");
            declared.insert(name, crate::coordinator::sessions::Declared { reference, code });
        }
        let session = SessionId::from(crate::secret::random_secret());
        let worker = self.workers.register(
            registration,
            env!("CARGO_PKG_VERSION"),
            &self.catalog.get(),
            &declared,
            session.clone(),
            now,
        )?;
        info!(
            worker = %worker.id,
            name = %worker.name,
            families = ?worker.families,
            "worker registered"
        );
        Ok(Registered {
            worker_id: worker.id.clone(),
            session,
            lease_ttl: self.config.lease_ttl,
            heartbeat: self.config.heartbeat,
        })
    }

    pub(super) fn part_of(&self, sweep: &str, key: &str) -> Result<Option<PathBuf>, CommandError> {
        self.sweeps.get(sweep)?;
        let part = self.store.part_of(sweep, key).map_err(internal)?;
        Ok(part.map(|p| results::trajectories_dir(&self.results_dir.join(sweep)).join(p)))
    }

    pub(super) fn lease(
        &mut self,
        session: &SessionId,
        max_jobs: u32,
        now: std::time::Instant,
    ) -> Result<Leases, CommandError> {
        let (session, worker) = self.workers.get(session)?;
        let (worker_id, families) = (worker.id.clone(), worker.families.clone());
        let max_jobs = max_jobs.min(armada_proto::lease::most_leased(worker.slots));
        self.workers.asked_for_jobs(&session);
        // A store that cannot write could not record what the attempts commit: nothing is
        // leased meanwhile, and the worker keeps its session (see `trouble`).
        if self.metrics.writes.failing(&Place::Store) {
            return Ok(Leases { leases: Vec::new(), retry_after: STORE_TROUBLE_RETRY });
        }
        let picked = self.table.pick(&families, max_jobs);
        if picked.is_empty() {
            return Ok(Leases { leases: Vec::new(), retry_after: NOTHING_TO_LEASE_RETRY });
        }
        let Some(ids) = self.attempt_ids(picked.len() as u64) else {
            // The coordinator's trouble (a full disk, say), shown where operators look
            // (see `trouble`): the worker keeps its session and asks again later.
            self.table.unpick(&picked);
            return Ok(Leases { leases: Vec::new(), retry_after: STORE_TROUBLE_RETRY });
        };
        let ids: Vec<AttemptId> = ids.map(AttemptId).collect();
        self.leased_since_noted = true;
        let effects = self.table.start_attempts(&picked, &ids, &session, &worker_id, now);
        self.apply(effects);
        let leases = picked
            .iter()
            .zip(&ids)
            .map(|(&i, &id)| {
                let job = self.table.job(i);
                Lease {
                    attempt_id: id,
                    sweep_id: job.sweep.to_string(),
                    job_key: job.key.to_string(),
                    spec: job.valid().spec,
                    attempt: job.attempts,
                }
            })
            .collect();
        Ok(Leases { leases, retry_after: Duration::ZERO })
    }

    /// `n` new attempt ids, reserving a block in the store when those reserved run out
    /// (None: the store cannot reserve them).
    fn attempt_ids(&mut self, n: u64) -> Option<std::ops::Range<u64>> {
        let ids = &mut self.attempt_ids;
        let end = ids.next + n;
        if end - 1 > ids.reserved {
            let last = end - 1 + super::ATTEMPT_ID_BLOCK;
            if let Err(e) = self.store.reserve_attempt_ids(last) {
                warn!(error = %format!("{e:#}"), "the store cannot reserve attempt ids; no job is leased meanwhile");
                return None;
            }
            ids.reserved = last;
        }
        let range = ids.next..end;
        ids.next = end;
        Some(range)
    }

    pub(super) fn heartbeat(
        &mut self,
        session: &SessionId,
        attempts: Vec<AttemptId>,
        started: &[AttemptId],
        heard: std::time::Instant,
    ) -> Result<Vec<AttemptId>, CommandError> {
        self.workers.get(session)?;
        // Lease deadlines live in memory only: a restart voids every running attempt anyway,
        // so a heartbeat never waits on the store.
        let abandon = self.table.heartbeat(session, attempts, heard)?;
        self.table.started(session, started);
        Ok(abandon)
    }

    pub(super) fn fail(
        &mut self,
        session: &SessionId,
        attempt: AttemptId,
        error: String,
        cause: Cause,
    ) -> Result<bool, CommandError> {
        let worker = self.workers.get(session).map_or_else(|_| "a gone worker".to_string(), |(_, w)| w.id.clone());
        let (retry, effects) = self.table.fail(session, attempt, clip(error), cause, &worker)?;
        self.apply(effects);
        Ok(retry)
    }

    /// Attempts a worker leased and never started: each job current with it is queued
    /// again, first, with the attempt uncounted.
    pub(super) fn release(&mut self, session: &SessionId, attempts: Vec<AttemptId>) -> Result<u32, CommandError> {
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

    /// Records of the upload stream broke the schema: the attempt is void (its spool knows
    /// why), and its job queued again.
    pub(super) fn refused(&mut self, attempt: AttemptId) {
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

    /// Leases past their deadline: the job goes back to the queue (or fails).
    pub(super) fn expire_leases(&mut self, now: std::time::Instant) {
        let workers = &self.workers;
        let effects = self.table.expire(now, |session| workers.describe(session, "?"));
        let expired = effects.iter().filter(|e| matches!(e, Effect::EndAttempt { .. })).count();
        self.metrics.leases_expired.fetch_add(expired as u64, Relaxed);
        self.apply(effects);
    }

    /// Workers silent for `forget_worker_after` and holding nothing are dropped, and those
    /// that never asked for jobs once silent for a minute (or that, if shorter).
    pub(super) fn forget_idle_workers(&mut self, now: std::time::Instant) {
        let after = self.config.forget_worker_after;
        let unused_after = after.min(FORGET_UNUSED_SESSION_AFTER);
        if !self.workers.any_silent(now, unused_after) {
            return;
        }
        let holding = self.table.sessions_holding(now);
        for worker in self.workers.forget_idle(now, after, unused_after, |session| holding.contains(session)) {
            info!(%worker, "worker forgotten: silent, holding nothing");
        }
        self.late_abandons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|session, _| self.workers.get(session).is_ok());
    }
}
