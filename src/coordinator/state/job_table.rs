//! The job table as a pure state machine: the jobs, their queue, and the attempts leased
//! to workers, changed only by the transitions below. It does no I/O and reads no clock:
//! a transition takes the time it happens at (`now`) and returns what must follow from it
//! ([`Effect`]s: store writes, spools, live summaries, watchers), which the scheduler
//! carries out, in order, before it answers the command.
//!
//! Where a transition depends on a store write that may fail (a lease needs the store's
//! attempt ids, a commit needs its part recorded), the scheduler writes first and then
//! applies the transition that matches the outcome ([`JobTable::start_attempts`] or
//! [`JobTable::unpick`]; [`JobTable::committed`] or [`JobTable::commit_failed`]).
//!
//! Invariants, checked over random histories by the property test below:
//! - a job is `running` exactly when it has a current attempt, and that attempt is leased;
//! - a lease lives `lease_ttl` after it was granted or last renewed, and no longer;
//! - the first commit of a job wins: once one has begun, no other attempt of the job
//!   commits, and a job is `done` once, by one attempt;
//! - a job has had at most `max_attempts` counted attempts, and it is `failed` only once it
//!   has used them all, or its own error ended it (unless the policy retries job errors);
//! - an attempt leased ahead whose lease expires before its worker said it started is not
//!   counted (its worker died holding it; the job never ran).

use super::jobs::{Job, JobIndex};
use super::queue::JobQueue;
use super::replies::CommandError;
use super::stored::{AttemptOutcome, JobState};
use armada_proto::ids::{AttemptId, SessionId, SweepId};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

/// Uncounted attempts after which a job fails: its records never fit its schema, or its
/// leases keep expiring before its workers say it started (it kills them at once).
pub const MAX_VOIDED: u32 = 10;

/// A command that keeps the scheduler at least this long gives running leases the time back.
pub const BUSY_EXCUSED: Duration = Duration::from_millis(50);

/// A sweep's jobs by state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub queued: u32,
    pub running: u32,
    pub done: u32,
    pub failed: u32,
    pub cancelled: u32,
    /// Of the running: leased to a worker that has not started them (leased ahead).
    pub leased: u32,
    /// Handed to the committer, their part not yet reported (most are running; a late
    /// attempt's may be queued).
    pub committing: u32,
}

impl Counts {
    /// Nothing is queued or running.
    pub fn is_finished(&self) -> bool {
        self.queued == 0 && self.running == 0
    }

    fn of(&mut self, state: JobState) -> &mut u32 {
        match state {
            JobState::Queued => &mut self.queued,
            JobState::Running => &mut self.running,
            JobState::Done => &mut self.done,
            JobState::Failed => &mut self.failed,
            JobState::Cancelled => &mut self.cancelled,
        }
    }

    fn is_empty(&self) -> bool {
        *self == Counts::default()
    }
}

/// How long leases live and how often a job is tried.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub lease_ttl: Duration,
    pub max_attempts: u32,
    /// Retry a job whose own code failed (deterministic given its key, so by default it
    /// fails at once).
    pub retry_job_errors: bool,
}

/// Why an attempt failed, as its worker reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The job itself raised (an exception, a panic, records its family refuses): the same
    /// key fails the same way, so it is not retried unless the policy says so.
    Job,
    /// The worker could not run it (or did not say why): retried up to `max_attempts`.
    Worker,
}

/// A leased attempt.
pub struct Attempt {
    pub job: JobIndex,
    /// The worker session that holds it.
    pub session: SessionId,
    pub expires: Instant,
}

/// What a transition asks the scheduler to carry out.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Store: the attempt ended (`committed`, `failed`, `dropped`, ...), and its job is now
    /// in `state` (with `error`, when one is given).
    EndAttempt { attempt: AttemptId, job: JobIndex, outcome: AttemptOutcome, state: JobState, error: Option<String> },
    /// Spools: a leased attempt's records will arrive here.
    OpenSpool { attempt: AttemptId, job: JobIndex, session: SessionId },
    /// Spools: the attempt's records are not wanted.
    DiscardSpool(AttemptId),
    /// Live summaries: the job settled without a result (failed or cancelled).
    SettledWithoutResult(JobIndex),
    /// Watchers: the job's attempt started on a worker.
    Started { job: JobIndex, attempt: AttemptId, worker: String },
    /// Watchers: an attempt of the job failed; `is_final` when the job will not be retried.
    Failed { job: JobIndex, error: String, attempt_no: u32, is_final: bool },
    /// The sweep may have nothing left queued or running.
    CheckFinished(SweepId),
    /// Live summaries: (re)open the sweep's from its jobs' states.
    OpenLive(SweepId),
    /// Live summaries: the sweep is gone.
    CloseLive(SweepId),
}

/// How a commit begins ([`JobTable::begin_commit`]).
#[derive(Debug, PartialEq)]
pub enum CommitStart {
    /// The job is done or committing already: this attempt's result is dropped.
    Dropped,
    /// The job was cancelled: the result is refused, with this message.
    Cancelled(String),
    /// The attempt may commit its job once its records check out; `revive` when the job had
    /// failed meanwhile (this late result is the only one).
    Check { job: JobIndex, revive: bool },
}

pub struct JobTable {
    /// Every job, by index: jobs are only appended (and a submission that could not be
    /// stored is cut off again), so an index names one job for the table's life.
    jobs: Vec<Job>,
    queue: JobQueue,
    attempts: HashMap<AttemptId, Attempt>,
    policy: Policy,
    /// Jobs whose trajectory the coordinator could not write, each queued again at its time
    /// (see [`JobTable::commit_failed`]).
    deferred: Vec<(Instant, JobIndex)>,
    /// Each sweep's jobs by state, kept with every change of state ([`JobTable::set_state`])
    /// so that a status, and the check for a finished sweep after every settled job, cost
    /// nothing like a scan of the sweep.
    counts: HashMap<SweepId, Counts>,
}

impl JobTable {
    pub fn new(policy: Policy) -> Self {
        JobTable {
            jobs: Vec::new(),
            queue: JobQueue::default(),
            attempts: HashMap::new(),
            policy,
            deferred: Vec::new(),
            counts: HashMap::new(),
        }
    }

    /// The job at index `i`.
    pub fn job(&self, i: JobIndex) -> &Job {
        &self.jobs[i]
    }

    /// How many jobs the table holds.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// The index the next job pushed gets.
    pub fn end(&self) -> JobIndex {
        JobIndex::new(self.jobs.len())
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Append a job (loaded from the store or submitted), not queued; answers its index.
    pub fn push(&mut self, job: Job) -> JobIndex {
        *self.counts.entry(job.sweep.clone()).or_default().of(job.state) += 1;
        self.jobs.push(job);
        JobIndex::new(self.jobs.len() - 1)
    }

    /// Drop the jobs from index `first` on: a submission that could not be stored. They
    /// were never queued or leased.
    pub fn truncate(&mut self, first: JobIndex) {
        debug_assert!(self.jobs[first.get().min(self.jobs.len())..].iter().all(|j| j.current.is_none()));
        for i in first.up_to(self.end()) {
            self.uncount(i);
        }
        self.jobs.truncate(first.get());
    }

    /// Sweep `sweep`'s jobs by state (none: it has no job).
    pub fn counts(&self, sweep: &str) -> Counts {
        self.counts.get(sweep).copied().unwrap_or_default()
    }

    /// Every change of a job's state goes through here, which keeps its sweep's counts.
    /// A job that enters `running` is leased, not started, until its worker says it started.
    fn set_state(&mut self, i: JobIndex, state: JobState) {
        let job = &mut self.jobs[i];
        if job.state == state {
            return;
        }
        if !job.dropped {
            let counts = self.counts.get_mut(&job.sweep).expect("a job's sweep is counted");
            *counts.of(job.state) -= 1;
            *counts.of(state) += 1;
            counts.leased -= u32::from(job.leased_ahead());
            counts.leased += u32::from(state == JobState::Running);
        }
        job.started = false;
        job.state = state;
    }

    /// The worker of `session` says it started `attempts` (those it holds; others are
    /// ignored): their jobs count as running, no longer as leased ahead.
    pub fn started(&mut self, session: &SessionId, attempts: &[AttemptId]) {
        for id in attempts {
            let Some(a) = self.attempts.get(id).filter(|a| a.session == *session) else { continue };
            let job = &mut self.jobs[a.job];
            if job.current == Some(*id) && job.leased_ahead() {
                job.started = true;
                if !job.dropped {
                    self.counts.get_mut(&job.sweep).expect("a job's sweep is counted").leased -= 1;
                }
            }
        }
    }

    /// Job `i` no longer counts in its sweep.
    fn uncount(&mut self, i: JobIndex) {
        let job = &self.jobs[i];
        if job.dropped {
            return;
        }
        if let Some(counts) = self.counts.get_mut(&job.sweep) {
            *counts.of(job.state) -= 1;
            counts.leased -= u32::from(job.leased_ahead());
            counts.committing -= u32::from(job.committing);
            if counts.is_empty() {
                self.counts.remove(&job.sweep);
            }
        }
    }

    /// How many jobs were ever queued: it changes whenever one is.
    pub fn queued_so_far(&self) -> u64 {
        self.queue.pushed()
    }

    /// Whether job `i` is in the queue.
    pub fn is_queued(&self, i: JobIndex) -> bool {
        self.queue.contains(i)
    }

    /// Queue these jobs at the back, in the order given, each in its family's queue (a
    /// sweep's jobs are of one family, or of it and extensions of it).
    pub fn enqueue_all(&mut self, jobs: &[JobIndex]) {
        for run in jobs.chunk_by(|&a, &b| self.jobs[a].family() == self.jobs[b].family()) {
            self.queue.extend(self.jobs[run[0]].family(), run);
        }
    }

    /// The attempts current on their jobs and not settled, with each one's job: what a
    /// restart charges to the jobs if they never end (`Store::note_open_attempts`).
    pub fn open_attempts(&self) -> impl Iterator<Item = (AttemptId, JobIndex)> + '_ {
        self.attempts
            .iter()
            .filter(|(&id, a)| self.jobs[a.job].current == Some(id) && !self.is_settled(a.job))
            .map(|(&id, a)| (id, a.job))
    }

    /// Leased attempts per worker session.
    pub fn attempts_by_session(&self) -> HashMap<&SessionId, u32> {
        let mut counts = HashMap::new();
        for a in self.attempts.values() {
            *counts.entry(&a.session).or_default() += 1;
        }
        counts
    }

    /// The sessions holding a lease not yet expired at `now`, or an attempt being committed
    /// (an expired attempt stays known for a late commit, but holds nothing).
    pub fn sessions_holding(&self, now: Instant) -> HashSet<&SessionId> {
        self.attempts.values().filter(|a| a.expires >= now || self.jobs[a.job].committing).map(|a| &a.session).collect()
    }

    /// Queue job `i` (first, for a retry); the queue is per family.
    pub fn enqueue(&mut self, i: JobIndex, front: bool) {
        let family = self.jobs[i].family();
        if front {
            self.queue.push_front(i, family);
        } else {
            self.queue.push_back(i, family);
        }
    }

    /// Done, failed or cancelled, or committing: nothing an attempt does can change it.
    pub fn is_settled(&self, i: JobIndex) -> bool {
        let j = &self.jobs[i];
        matches!(j.state, JobState::Done | JobState::Failed | JobState::Cancelled) || j.committing
    }

    pub fn attempt(&self, id: AttemptId) -> Option<&Attempt> {
        self.attempts.get(&id)
    }

    /// The attempt, if `session` holds it: NOT_FOUND when it is not known (void or
    /// finished), PERMISSION_DENIED when another session leased it.
    pub fn held(&self, session: &SessionId, attempt: AttemptId) -> Result<&Attempt, CommandError> {
        let a = self
            .attempts
            .get(&attempt)
            .ok_or_else(|| CommandError::not_found(format!("attempt {attempt} is not known (void or finished)")))?;
        if a.session != *session {
            return Err(CommandError::permission_denied(format!(
                "attempt {attempt} is not held by this worker session"
            )));
        }
        Ok(a)
    }

    /// Refuse a request about several attempts when one of them is another session's.
    pub fn check_session(&self, session: &SessionId, attempts: &[AttemptId]) -> Result<(), CommandError> {
        match attempts.iter().find(|id| self.attempts.get(id).is_some_and(|a| a.session != *session)) {
            Some(id) => {
                Err(CommandError::permission_denied(format!("attempt {id} is not held by this worker session")))
            }
            None => Ok(()),
        }
    }

    /// Up to `max_jobs` queued jobs of `families`, taken off the queue for a lease: then
    /// [`Self::start_attempts`] starts them, or [`Self::unpick`] puts them back.
    pub fn pick(&mut self, families: &BTreeSet<String>, max_jobs: u32) -> Vec<JobIndex> {
        let mut picked = Vec::new();
        while picked.len() < max_jobs as usize {
            let Some(i) = self.queue.pop(families) else { break };
            // The queue may hold jobs that were cancelled or committed since they were
            // queued, or whose expired attempt is committing right now.
            if self.jobs[i].state == JobState::Queued && !self.jobs[i].committing && !picked.contains(&i) {
                picked.push(i);
            }
        }
        picked
    }

    /// Picked jobs that could not be leased go back to the front of the queue, in order.
    pub fn unpick(&mut self, picked: &[JobIndex]) {
        for &i in picked.iter().rev() {
            self.enqueue(i, true);
        }
    }

    /// Start attempts `ids` (the store's) of the `picked` jobs for `session`, whose leases
    /// expire `lease_ttl` after `now`.
    pub fn start_attempts(
        &mut self,
        picked: &[JobIndex],
        ids: &[AttemptId],
        session: &SessionId,
        worker: &str,
        now: Instant,
    ) -> Vec<Effect> {
        let expires = now + self.policy.lease_ttl;
        let mut effects = Vec::with_capacity(3 * picked.len());
        for (&i, &id) in picked.iter().zip(ids) {
            self.set_state(i, JobState::Running);
            let job = &mut self.jobs[i];
            job.current = Some(id);
            job.attempts += 1;
            self.know_attempt(id, Attempt { job: i, session: session.clone(), expires });
            effects.push(Effect::OpenSpool { attempt: id, job: i, session: session.clone() });
            effects.push(Effect::Started { job: i, attempt: id, worker: worker.to_string() });
        }
        effects
    }

    /// Renew the leases of `attempts` held by `session` until `lease_ttl` after `heard`
    /// (a heartbeat applied late never shortens a lease that a later one renewed);
    /// answers the attempts to abandon (their jobs are settled, or they are unknown).
    pub fn heartbeat(
        &mut self,
        session: &SessionId,
        attempts: Vec<AttemptId>,
        heard: Instant,
    ) -> Result<Vec<AttemptId>, CommandError> {
        // Another session's attempt: the whole heartbeat is refused, and renews nothing.
        self.check_session(session, &attempts)?;
        let expires = heard + self.policy.lease_ttl;
        let mut abandon = Vec::new();
        for id in attempts {
            match self.attempts.get(&id).map(|a| a.job) {
                Some(i) if self.jobs[i].current == Some(id) => {
                    let attempt = self.attempts.get_mut(&id).expect("found");
                    attempt.expires = attempt.expires.max(expires);
                }
                Some(i) if !self.is_settled(i) => {
                    // An expired attempt whose job is queued or run by another attempt: it
                    // may still commit first, so it is left alone.
                }
                Some(i) if self.jobs[i].state == JobState::Failed => {
                    // Its job failed when this attempt's lease ran out on its last try (a
                    // paused process, a migrated VM): its result still commits if it comes,
                    // so the worker is not told to throw the work away.
                }
                _ => abandon.push(id),
            }
        }
        Ok(abandon)
    }

    /// The leases not renewed in time: their jobs go back to the queue (or fail). The
    /// attempts stay known, so a late result still commits if nothing else has. `worker`
    /// names a session for the error.
    pub fn expire(&mut self, now: Instant, worker: impl Fn(&SessionId) -> String) -> Vec<Effect> {
        let mut expired: Vec<(AttemptId, JobIndex, String)> = self
            .attempts
            .iter()
            .filter(|(&id, a)| a.expires < now && self.jobs[a.job].current == Some(id) && !self.jobs[a.job].committing)
            .map(|(&id, a)| (id, a.job, worker(&a.session)))
            .collect();
        // In attempt order, so that the effects do not depend on the map's.
        expired.sort_unstable_by_key(|e| e.0);
        let mut effects = Vec::new();
        for (id, i, worker) in expired {
            tracing::warn!(sweep = %self.jobs[i].sweep, job = %self.jobs[i].key, attempt = %id, %worker, "lease expired");
            let job = &mut self.jobs[i];
            // Never started: its worker died (or lost the coordinator) holding it ahead, and
            // the job never ran, so the attempt is not charged.
            let unstarted = job.leased_ahead() && job.voided + 1 < MAX_VOIDED;
            if unstarted {
                (job.attempts, job.voided) = (job.attempts.saturating_sub(1), job.voided + 1);
            }
            let when = if unstarted { " before it started" } else { "" };
            let error = format!("lease expired{when}: worker {worker} stopped heartbeating");
            self.requeue_or_fail(i, id, error, &mut effects);
        }
        effects
    }

    /// Leases do not age while the scheduler itself is busy: heartbeats sent during a long
    /// command (a sweep of a million jobs takes seconds to store) wait in its mailbox, so
    /// every running lease gets that time back.
    pub fn excuse(&mut self, busy: Duration) {
        if busy < BUSY_EXCUSED {
            return;
        }
        for a in self.attempts.values_mut() {
            a.expires += busy;
        }
    }

    /// An attempt's result arrived: drop it, refuse it, or let it be checked for a commit.
    /// On `Check` the attempt is no longer leased; its spool is the scheduler's to check,
    /// then [`Self::commit`] or [`Self::void_if_current`] follows.
    pub fn begin_commit(
        &mut self,
        session: &SessionId,
        attempt: AttemptId,
    ) -> Result<(CommitStart, Vec<Effect>), CommandError> {
        let i = self.held(session, attempt)?.job;
        let job = &self.jobs[i];
        if job.state == JobState::Done || job.committing {
            let mut effects = vec![Effect::EndAttempt {
                attempt,
                job: i,
                outcome: AttemptOutcome::Dropped,
                state: job.state,
                error: None,
            }];
            self.forget_attempt(attempt, &mut effects);
            return Ok((CommitStart::Dropped, effects));
        }
        if job.state == JobState::Cancelled {
            let message = format!("job {} is {}", job.key, job.state.as_str());
            let mut effects = Vec::new();
            self.forget_attempt(attempt, &mut effects);
            return Ok((CommitStart::Cancelled(message), effects));
        }
        // A late result of a job that failed meanwhile (this attempt's lease expired, and
        // the job ran out of attempts): nothing else committed, so it commits.
        let revive = job.state == JobState::Failed;
        self.unknow_attempt(attempt);
        Ok((CommitStart::Check { job: i, revive }, Vec::new()))
    }

    /// The attempt's records checked out: its job is committing (its part is being
    /// written), and no other attempt commits it.
    pub fn commit(&mut self, i: JobIndex, attempt: AttemptId, revive: bool) {
        if revive {
            self.set_state(i, JobState::Running);
            let job = &mut self.jobs[i];
            tracing::info!(sweep = %job.sweep, job = %job.key, %attempt, "a late result commits; the job had failed");
            (job.current, job.error, job.revived) = (Some(attempt), None, true);
        }
        self.set_committing(i, true);
    }

    /// The commit could not be handed to the committer: the job is as it was.
    pub fn commit_unsent(&mut self, i: JobIndex) {
        self.set_committing(i, false);
    }

    /// Every change of a job's `committing` flag goes through here, which keeps its
    /// sweep's count of them.
    fn set_committing(&mut self, i: JobIndex, committing: bool) {
        let job = &mut self.jobs[i];
        if job.committing == committing {
            return;
        }
        job.committing = committing;
        if !job.dropped {
            let counts = self.counts.get_mut(&job.sweep).expect("a job's sweep is counted");
            match committing {
                true => counts.committing += 1,
                false => counts.committing -= 1,
            }
        }
    }

    /// The part holding these `(job, attempt)`s is recorded: the jobs are done, and every
    /// other attempt of theirs is moot. Answers the sweeps of revived jobs, whose live
    /// summaries must be reopened.
    pub fn committed(&mut self, jobs: &[(JobIndex, AttemptId)]) -> (Vec<Effect>, BTreeSet<SweepId>) {
        let reopen = self.end_commits(jobs);
        let mut effects = Vec::new();
        for &(i, _) in jobs {
            self.set_state(i, JobState::Done);
            self.jobs[i].current = None;
            self.forget_attempts_of(i, &mut effects);
            effects.push(Effect::CheckFinished(self.jobs[i].sweep.clone()));
        }
        (effects, reopen)
    }

    /// The part holding these `(job, attempt)`s could not be written or recorded: the
    /// coordinator's failure, not the jobs'. Each job whose current attempt it was is queued
    /// again, first, at `retry_at` (see [`JobTable::requeue_due`]: a write that keeps failing
    /// does not cycle its jobs through the workers as fast as they run), with that attempt
    /// uncounted (it re-runs to the same bits).
    pub fn commit_failed(
        &mut self,
        jobs: &[(JobIndex, AttemptId)],
        error: &str,
        retry_at: Instant,
    ) -> (Vec<Effect>, BTreeSet<SweepId>) {
        let reopen = self.end_commits(jobs);
        let mut effects = Vec::new();
        for &(i, attempt) in jobs {
            let error = format!("writing its trajectory: {error}");
            match self.jobs[i].current {
                Some(current) if current == attempt => {
                    self.requeue_unwritten(i, attempt, error, retry_at, &mut effects)
                }
                // The job's current attempt finished while this (late) one was committing,
                // and its result was dropped: run it again.
                Some(current) if !self.attempts.contains_key(&current) => {
                    self.requeue_unwritten(i, current, error, retry_at, &mut effects)
                }
                // A late (expired) attempt's job is queued, or run by another attempt.
                _ => {
                    // A lease may have taken the queued job off the queue, and passed it
                    // by, while this attempt was committing.
                    if self.jobs[i].state == JobState::Queued && !self.queue.contains(i) {
                        self.enqueue(i, true);
                    }
                }
            }
        }
        (effects, reopen)
    }

    /// Queue job `i` again at `retry_at`, first, its attempt `attempt` uncounted: what it
    /// computed could not be written, for the coordinator's reasons (`error`).
    fn requeue_unwritten(
        &mut self,
        i: JobIndex,
        attempt: AttemptId,
        error: String,
        retry_at: Instant,
        effects: &mut Vec<Effect>,
    ) {
        self.set_state(i, JobState::Queued);
        let job = &mut self.jobs[i];
        job.attempts = job.attempts.saturating_sub(1);
        job.current = None;
        job.error = Some(error.as_str().into());
        let attempt_no = job.attempts;
        effects.push(Effect::EndAttempt {
            attempt,
            job: i,
            outcome: AttemptOutcome::Unwritten,
            state: JobState::Queued,
            error: Some(error.clone()),
        });
        self.deferred.push((retry_at, i));
        effects.push(Effect::Failed { job: i, error, attempt_no, is_final: false });
    }

    /// Queue the deferred jobs whose time has come by `now` (those still queued: a cancel
    /// may have settled one meanwhile, a resubmission queued it already).
    pub fn requeue_due(&mut self, now: Instant) {
        if self.deferred.iter().all(|&(at, _)| at > now) {
            return;
        }
        let (due, later): (Vec<_>, Vec<_>) = self.deferred.drain(..).partition(|&(at, _)| at <= now);
        self.deferred = later;
        for (_, i) in due.into_iter().rev() {
            if self.jobs[i].state == JobState::Queued && self.jobs[i].current.is_none() && !self.queue.contains(i) {
                self.enqueue(i, true);
            }
        }
    }

    fn end_commits(&mut self, jobs: &[(JobIndex, AttemptId)]) -> BTreeSet<SweepId> {
        let mut reopen = BTreeSet::new();
        for &(i, _) in jobs {
            self.set_committing(i, false);
            let job = &mut self.jobs[i];
            // Revived jobs settle again (done, or failed once more): their sweeps' summaries
            // are rebuilt from the jobs' states.
            if std::mem::take(&mut job.revived) {
                reopen.insert(job.sweep.clone());
            }
        }
        reopen
    }

    /// The worker reports that an attempt failed: answers whether its job will be tried
    /// again. A job's own error uses up its attempts at once, unless the policy retries them.
    pub fn fail(
        &mut self,
        session: &SessionId,
        attempt: AttemptId,
        error: String,
        cause: Cause,
        worker: &str,
    ) -> Result<(bool, Vec<Effect>), CommandError> {
        self.held(session, attempt)?;
        let a = self.unknow_attempt(attempt).expect("held");
        let mut effects = vec![Effect::DiscardSpool(attempt)];
        if self.is_settled(a.job) || self.jobs[a.job].current != Some(attempt) {
            // Settled, or superseded by another attempt: this failure changes nothing.
            return Ok((false, effects));
        }
        tracing::warn!(sweep = %self.jobs[a.job].sweep, job = %self.jobs[a.job].key, %attempt, %worker, %error, "attempt failed");
        let give_up = cause == Cause::Job && !self.policy.retry_job_errors;
        let retry = self.end_attempt(a.job, attempt, error, give_up, &mut effects);
        Ok((retry, effects))
    }

    /// Of `attempts` handed back by `session`, those whose jobs they still run (and that
    /// are not committing): the store releases them, then [`Self::release`] does.
    pub fn releasable(
        &self,
        session: &SessionId,
        attempts: &[AttemptId],
    ) -> Result<Vec<(AttemptId, JobIndex)>, CommandError> {
        self.check_session(session, attempts)?;
        let mut seen = HashSet::new();
        Ok(attempts
            .iter()
            .filter(|&&id| seen.insert(id))
            .filter_map(|&id| Some((id, self.attempts.get(&id)?.job)))
            .filter(|&(id, i)| self.jobs[i].current == Some(id) && !self.jobs[i].committing)
            .collect())
    }

    /// A leased attempt that never started: its job is queued again, first, with the
    /// attempt uncounted.
    pub fn release(&mut self, attempt: AttemptId, i: JobIndex) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.forget_attempt(attempt, &mut effects);
        self.set_state(i, JobState::Queued);
        let job = &mut self.jobs[i];
        job.current = None;
        job.attempts = job.attempts.saturating_sub(1);
        self.enqueue(i, true);
        effects
    }

    /// The attempt's records broke its job's schema (`error` says how): the attempt is
    /// forgotten and, if its job still runs it, void.
    pub fn refused(&mut self, attempt: AttemptId, error: String) -> Vec<Effect> {
        let mut effects = Vec::new();
        let Some(a) = self.unknow_attempt(attempt) else { return effects };
        if self.jobs[a.job].current == Some(attempt) && !self.is_settled(a.job) {
            self.void(a.job, attempt, error, &mut effects);
        }
        effects
    }

    /// The records of attempt `attempt` of job `i`, checked for its commit, break its
    /// schema (`error` says how): void it, if the job still runs it.
    pub fn void_if_current(&mut self, i: JobIndex, attempt: AttemptId, error: String) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.jobs[i].current == Some(attempt) {
            self.void(i, attempt, error, &mut effects);
        }
        effects
    }

    /// An attempt void for the worker's fault (records that broke the schema): the job is
    /// queued again without the attempt counting against `max_attempts`, unless it has been
    /// voided [`MAX_VOIDED`] times.
    fn void(&mut self, i: JobIndex, attempt: AttemptId, error: String, effects: &mut Vec<Effect>) {
        let job = &mut self.jobs[i];
        job.voided += 1;
        if job.voided >= MAX_VOIDED {
            let error = format!("{error} (its attempts were refused {MAX_VOIDED} times)");
            job.attempts = self.policy.max_attempts;
            self.requeue_or_fail(i, attempt, error, effects);
            return;
        }
        job.attempts = job.attempts.saturating_sub(1);
        tracing::warn!(sweep = %job.sweep, job = %job.key, %attempt, %error, "attempt voided");
        self.requeue_or_fail(i, attempt, format!("attempt voided: {error}"), effects);
    }

    /// Cancel `jobs`: the queued and running ones (not committing) are `cancelled`, and a
    /// running attempt hears "abandon" at its next heartbeat.
    pub fn cancel(&mut self, jobs: &[JobIndex]) -> Vec<Effect> {
        let mut effects = Vec::new();
        for &i in jobs {
            let job = &self.jobs[i];
            if matches!(job.state, JobState::Queued | JobState::Running) && !job.committing {
                self.set_state(i, JobState::Cancelled);
                if let Some(a) = self.jobs[i].current.take() {
                    self.forget_attempt(a, &mut effects);
                }
                effects.push(Effect::SettledWithoutResult(i));
            }
        }
        effects
    }

    /// Jobs that leave their sweep (a resubmission dropped them, or the sweep is deleted):
    /// tombstones from now on (the slots stay, so indices are stable). Their attempts are
    /// forgotten, so a worker running one hears "abandon" at its next heartbeat.
    pub fn drop_jobs(&mut self, jobs: &[JobIndex]) -> Vec<Effect> {
        let mut effects = Vec::new();
        for &i in jobs {
            self.uncount(i);
            let job = &mut self.jobs[i];
            job.dropped = true;
            job.state = JobState::Cancelled;
            job.current = None;
            self.forget_attempts_of(i, &mut effects);
        }
        effects
    }

    /// Failed and cancelled jobs of a resubmitted sweep: queued again, from their first
    /// attempt.
    pub fn retry(&mut self, jobs: &[JobIndex]) {
        for &i in jobs {
            self.set_state(i, JobState::Queued);
            let job = &mut self.jobs[i];
            job.attempts = 0;
            job.voided = 0;
            job.error = None;
            self.enqueue(i, false);
        }
    }

    /// Forget an attempt and its records.
    fn forget_attempt(&mut self, attempt: AttemptId, effects: &mut Vec<Effect>) {
        self.unknow_attempt(attempt);
        effects.push(Effect::DiscardSpool(attempt));
    }

    /// Forget every attempt of job `i`.
    fn forget_attempts_of(&mut self, i: JobIndex, effects: &mut Vec<Effect>) {
        let mut ids = std::mem::take(&mut self.jobs[i].known_attempts);
        ids.sort_unstable();
        for id in ids {
            self.forget_attempt(id, effects);
        }
    }

    /// Every attempt enters the table here, which indexes it by its job.
    fn know_attempt(&mut self, id: AttemptId, attempt: Attempt) {
        self.jobs[attempt.job].known_attempts.push(id);
        self.attempts.insert(id, attempt);
    }

    /// Every attempt leaves the table here, which unindexes it.
    fn unknow_attempt(&mut self, id: AttemptId) -> Option<Attempt> {
        let a = self.attempts.remove(&id)?;
        let known = &mut self.jobs[a.job].known_attempts;
        if let Some(at) = known.iter().position(|&k| k == id) {
            known.swap_remove(at);
        }
        // Most jobs have one attempt: give its memory back once the job has none.
        if known.is_empty() {
            *known = Vec::new();
        }
        Some(a)
    }

    /// A failed or expired attempt: queue the job for another attempt, or mark it failed
    /// when it has had `max_attempts`. Returns whether it will be retried.
    fn requeue_or_fail(&mut self, i: JobIndex, attempt: AttemptId, error: String, effects: &mut Vec<Effect>) -> bool {
        self.end_attempt(i, attempt, error, false, effects)
    }

    /// [`Self::requeue_or_fail`], or fail the job now when `give_up` (its own error).
    fn end_attempt(
        &mut self,
        i: JobIndex,
        attempt: AttemptId,
        error: String,
        give_up: bool,
        effects: &mut Vec<Effect>,
    ) -> bool {
        let max_attempts = self.policy.max_attempts;
        let retry = !give_up && self.jobs[i].attempts < max_attempts;
        let state = if retry { JobState::Queued } else { JobState::Failed };
        effects.push(Effect::EndAttempt {
            attempt,
            job: i,
            outcome: AttemptOutcome::Failed,
            state,
            error: Some(error.clone()),
        });
        self.set_state(i, state);
        let job = &mut self.jobs[i];
        job.current = None;
        job.error = Some(error.as_str().into());
        let attempt_no = job.attempts;
        if retry {
            // To the front: a retried job should not wait behind the whole sweep.
            self.enqueue(i, true);
        } else {
            effects.push(Effect::SettledWithoutResult(i));
        }
        effects.push(Effect::Failed { job: i, error, attempt_no, is_final: !retry });
        effects.push(Effect::CheckFinished(self.jobs[i].sweep.clone()));
        retry
    }
}

#[cfg(test)]
mod tests {
    use super::super::jobs::{Key, Template};
    use super::*;
    use crate::testing::Gen;
    use armada_core::JobSpec;
    use std::sync::Arc;

    const TTL: Duration = Duration::from_secs(10);
    const MAX_ATTEMPTS: u32 = 3;
    const SESSIONS: [&str; 3] = ["a", "b", "c"];

    fn table(n_jobs: usize) -> JobTable {
        let mut t = JobTable::new(Policy { lease_ttl: TTL, max_attempts: MAX_ATTEMPTS, retry_job_errors: false });
        let spec = JobSpec::new("f", "bench", "algo");
        let template = Arc::new(Template::new(spec.clone(), spec.family.as_str().into(), 0));
        let sweep: SweepId = "s".into();
        for i in 0..n_jobs {
            let key = Key::parse(&format!("{i:032x}")).unwrap();
            t.push(Job::new(sweep.clone(), template.clone(), i as u64, key, JobState::Queued));
            t.enqueue(JobIndex::new(i), false);
        }
        t
    }

    /// What the history says the table must hold.
    #[derive(Default)]
    struct Model {
        /// Each leased attempt's session and its deadline: granted or renewed + ttl, plus
        /// any busy time excused since.
        leases: HashMap<AttemptId, (SessionId, Instant)>,
        /// The attempt that committed each done job.
        done_by: HashMap<JobIndex, AttemptId>,
        /// Jobs a resubmission dropped (the table knows them as cancelled; a commit under
        /// way when they were dropped may still make one done).
        tombstones: BTreeSet<JobIndex>,
        /// Commits handed to the committer and not yet written.
        committing: Vec<(JobIndex, AttemptId)>,
        /// Jobs whose own error (not the worker's) failed one of their attempts: they may
        /// fail before their last attempt.
        own_errors: HashSet<JobIndex>,
        next_id: u64,
    }

    /// Every invariant of the module doc, after every transition.
    fn check(t: &JobTable, m: &Model, context: &str) {
        for (i, job) in t.jobs.iter().enumerate() {
            let i = JobIndex::new(i);
            let at = || format!("{context}: job {i:?} ({:?}, current {:?})", job.state, job.current);
            assert_eq!(job.state == JobState::Running, job.current.is_some(), "{}", at());
            if let (Some(id), false) = (job.current, job.committing) {
                let a = t.attempt(id).unwrap_or_else(|| panic!("{}: its attempt is not leased", at()));
                assert_eq!(a.job, i, "{}", at());
            }
            assert!(job.attempts <= MAX_ATTEMPTS, "{}: {} attempts", at(), job.attempts);
            if job.state == JobState::Failed && !m.own_errors.contains(&i) {
                assert_eq!(job.attempts, MAX_ATTEMPTS, "{}: failed before its last attempt", at());
            }
            let deferred = t.deferred.iter().any(|&(_, j)| j == i);
            if job.state == JobState::Queued && !job.committing {
                assert!(t.queue.contains(i) || deferred, "{}: queued, but neither in the queue nor deferred", at());
            }
            if !m.tombstones.contains(&i) {
                assert_eq!(job.state == JobState::Done, m.done_by.contains_key(&i), "{}", at());
            }
        }
        let mut counted = Counts::default();
        for job in t.jobs.iter().filter(|j| !j.dropped) {
            *counted.of(job.state) += 1;
            counted.leased += u32::from(job.leased_ahead());
            counted.committing += u32::from(job.committing);
        }
        let sweep = t.jobs.first().map(|j| j.sweep.clone()).unwrap_or_else(|| "".into());
        assert_eq!(t.counts(&sweep), counted, "{context}: the kept counts against a count");
        // The index from jobs to attempts holds exactly the known attempts, each under its job.
        let mut indexed: Vec<(AttemptId, JobIndex)> = t
            .jobs
            .iter()
            .enumerate()
            .flat_map(|(i, j)| j.known_attempts.iter().map(move |&id| (id, JobIndex::new(i))))
            .collect();
        let mut known: Vec<(AttemptId, JobIndex)> = t.attempts.iter().map(|(&id, a)| (id, a.job)).collect();
        indexed.sort_unstable();
        known.sort_unstable();
        assert_eq!(indexed, known, "{context}: the attempts indexed by job against the attempts known");
        for (id, (session, expires)) in &m.leases {
            if let Some(a) = t.attempt(*id) {
                assert_eq!((&a.session, a.expires), (session, *expires), "{context}: attempt {id}'s lease");
            }
        }
    }

    /// Random histories of leases, heartbeats, time passing, expiry, commits (whose parts
    /// are written or not), failures, releases, refused records, busy spells and a cancel,
    /// against the invariants above; the first-commit rule and lease expiry are checked
    /// at the transition that decides them. No store, no clock, no sleeping.
    #[test]
    fn random_histories_keep_the_lifecycle_invariants() {
        let (mut expired, mut wins, mut dropped, mut failed, mut unwritten) = (0, 0, 0, 0, 0);
        let (mut unstarted_expired, mut job_errors) = (0, 0);
        for seed in 1..=400u64 {
            let mut rng = Gen::new(seed);
            let n_jobs = 1 + rng.below(6) as usize;
            let mut t = table(n_jobs);
            let mut m = Model { next_id: 1, ..Model::default() };
            let t0 = Instant::now();
            let mut now = t0;
            let families: BTreeSet<String> = ["f".to_string()].into();
            for step in 0..200 {
                let session: SessionId = SESSIONS[rng.below(3) as usize].into();
                let held: Vec<AttemptId> =
                    m.leases.iter().filter(|(_, (s, _))| *s == session).map(|(&id, _)| id).collect();
                let some_held = |rng: &mut Gen| (!held.is_empty()).then(|| held[rng.below(held.len() as u64) as usize]);
                let context = format!("seed {seed} step {step}");
                match rng.below(100) {
                    0..=19 => {
                        let picked = t.pick(&families, 1 + rng.below(3) as u32);
                        if rng.chance(10) {
                            // The store could not start them.
                            t.unpick(&picked);
                        } else {
                            let ids: Vec<AttemptId> =
                                (0..picked.len() as u64).map(|k| AttemptId(m.next_id + k)).collect();
                            m.next_id += ids.len() as u64;
                            t.start_attempts(&picked, &ids, &session, "w", now);
                            for id in ids {
                                m.leases.insert(id, (session.clone(), now + TTL));
                            }
                        }
                    }
                    20..=34 => {
                        let mut asked: Vec<AttemptId> = held.iter().copied().filter(|_| rng.chance(70)).collect();
                        asked.push(AttemptId(m.next_id + 7)); // never leased
                        let abandon = t.heartbeat(&session, asked.clone(), now).unwrap();
                        for id in asked {
                            let current = t.attempt(id).is_some_and(|a| t.jobs[a.job].current == Some(id));
                            if current {
                                // Renewed to now + TTL, or kept if a busy spell excused it longer.
                                let expires = &mut m.leases.get_mut(&id).unwrap().1;
                                *expires = (*expires).max(now + TTL);
                            }
                            let settled = t.attempt(id).is_none_or(|a| t.is_settled(a.job));
                            let failed = t.attempt(id).is_some_and(|a| t.jobs[a.job].state == JobState::Failed);
                            let kept = current || failed;
                            assert_eq!(abandon.contains(&id), settled && !kept, "{context}: heartbeat of {id}");
                        }
                        // The worker says some have started, another session's among them
                        // (ignored): the kept counts must follow (checked after each step).
                        let started: Vec<AttemptId> = held.iter().copied().filter(|_| rng.chance(50)).collect();
                        t.started(&session, &started);
                        let other = SESSIONS.iter().find(|&&o| o != session.as_str()).expect("several sessions");
                        t.started(&(*other).into(), &held);
                    }
                    35..=49 => {
                        now += Duration::from_millis(rng.below(6000));
                        t.requeue_due(now);
                        assert!(t.deferred.iter().all(|&(at, _)| at > now), "{context}: a due job left deferred");
                        let due: HashSet<AttemptId> = t
                            .jobs
                            .iter()
                            .filter(|j| !j.committing)
                            .filter_map(|j| j.current)
                            .filter(|id| m.leases[id].1 < now)
                            .collect();
                        // Attempts leased ahead and never started are not charged when
                        // their leases expire (until a job has had MAX_VOIDED such).
                        let before: Vec<(bool, u32, u32)> =
                            t.jobs.iter().map(|j| (j.leased_ahead(), j.attempts, j.voided)).collect();
                        let effects = t.expire(now, |s| s.as_str().to_string());
                        for id in &due {
                            let i = t.attempt(*id).expect("an expired attempt stays known").job;
                            let (ahead, attempts, voided) = before[i.get()];
                            let uncharged = ahead && voided + 1 < MAX_VOIDED;
                            let charged = attempts - u32::from(uncharged);
                            assert_eq!(t.jobs[i].attempts, charged, "{context}: expiry of {id}, leased ahead {ahead}");
                            if uncharged {
                                assert_eq!(t.jobs[i].state, JobState::Queued, "{context}: an unstarted job is retried");
                                unstarted_expired += 1;
                            }
                        }
                        let ended: HashSet<AttemptId> = effects
                            .iter()
                            .filter_map(|e| match e {
                                Effect::EndAttempt { attempt, .. } => Some(*attempt),
                                _ => None,
                            })
                            .collect();
                        assert_eq!(ended, due, "{context}: exactly the leases past their deadline expire");
                        expired += ended.len();
                    }
                    50..=64 => {
                        let Some(id) = some_held(&mut rng) else { continue };
                        let job = t.attempt(id).map(|a| a.job);
                        match t.begin_commit(&session, id) {
                            Err(e) => panic!("{context}: {e}"),
                            Ok((CommitStart::Dropped, _)) => {
                                let job = &t.jobs[job.unwrap()];
                                assert!(job.state == JobState::Done || job.committing, "{context}: dropped");
                                dropped += 1;
                                m.leases.remove(&id);
                            }
                            Ok((CommitStart::Cancelled(_), _)) => {
                                m.leases.remove(&id);
                            }
                            Ok((CommitStart::Check { job, revive }, _)) => {
                                assert_eq!(revive, t.jobs[job].state == JobState::Failed);
                                m.leases.remove(&id);
                                if rng.chance(15) {
                                    t.void_if_current(job, id, "broken records".into());
                                } else {
                                    t.commit(job, id, revive);
                                    m.committing.push((job, id));
                                }
                            }
                        }
                    }
                    65..=74 => {
                        if m.committing.is_empty() {
                            continue;
                        }
                        let n = 1 + rng.below(m.committing.len() as u64) as usize;
                        let part: Vec<(JobIndex, AttemptId)> = m.committing.drain(..n).collect();
                        if rng.chance(20) {
                            let current: Vec<(JobIndex, u32)> = part
                                .iter()
                                .filter(|&&(job, id)| t.jobs[job].current == Some(id))
                                .map(|&(job, _)| (job, t.jobs[job].attempts))
                                .collect();
                            t.commit_failed(&part, "disk full", now + Duration::from_secs(1));
                            // The coordinator's failure: queued again after a while, the
                            // attempt uncounted.
                            for (job, attempts) in current {
                                let j = &t.jobs[job];
                                assert_eq!((j.state, j.attempts), (JobState::Queued, attempts - 1), "{context}");
                                assert!(!t.queue.contains(job), "{context}: an unwritten job is leased at once");
                                unwritten += 1;
                            }
                        } else {
                            t.committed(&part);
                            for &(job, id) in part.iter().filter(|(job, _)| !m.tombstones.contains(job)) {
                                let first = m.done_by.insert(job, id);
                                assert_eq!(first, None, "{context}: job {job} committed twice");
                                wins += 1;
                            }
                        }
                    }
                    75..=82 => {
                        let Some(id) = some_held(&mut rng) else { continue };
                        let job = t.attempt(id).map(|a| a.job).unwrap();
                        let current = t.jobs[job].current == Some(id) && !t.is_settled(job);
                        let cause = if rng.chance(50) { Cause::Job } else { Cause::Worker };
                        let attempts = t.jobs[job].attempts;
                        let (retry, effects) = t.fail(&session, id, "boom".into(), cause, "w").unwrap();
                        if current && cause == Cause::Job {
                            // The job's own error: not retried, and reported at its own attempt.
                            assert!(!retry && t.jobs[job].state == JobState::Failed, "{context}: job error retried");
                            let reported = effects.iter().find_map(|e| match e {
                                Effect::Failed { attempt_no, is_final, .. } => Some((*attempt_no, *is_final)),
                                _ => None,
                            });
                            assert_eq!(reported, Some((attempts, true)), "{context}");
                            m.own_errors.insert(job);
                            job_errors += 1;
                        }
                        m.leases.remove(&id);
                        failed += 1;
                    }
                    83..=89 => {
                        let asked: Vec<AttemptId> = held.iter().copied().filter(|_| rng.chance(50)).collect();
                        for (id, job) in t.releasable(&session, &asked).unwrap() {
                            let before = t.jobs[job].attempts;
                            t.release(id, job);
                            assert_eq!(t.jobs[job].attempts, before - 1, "{context}: a release is uncounted");
                            m.leases.remove(&id);
                        }
                    }
                    90..=93 => {
                        let Some(id) = some_held(&mut rng) else { continue };
                        t.refused(id, "records refused".into());
                        m.leases.remove(&id);
                    }
                    94..=98 => {
                        let busy = Duration::from_millis(rng.below(200));
                        t.excuse(busy);
                        if busy >= BUSY_EXCUSED {
                            for (_, expires) in m.leases.values_mut() {
                                *expires += busy;
                            }
                        }
                    }
                    99 if rng.chance(50) => {
                        // A resubmission: drops one job, runs the failed and cancelled again.
                        let dropped = JobIndex::new(rng.below(n_jobs as u64) as usize);
                        if !m.tombstones.contains(&dropped) {
                            t.drop_jobs(&[dropped]);
                            m.tombstones.insert(dropped);
                            m.done_by.remove(&dropped);
                        }
                        let again: Vec<JobIndex> = (0..n_jobs)
                            .map(JobIndex::new)
                            .filter(|i| !m.tombstones.contains(i))
                            .filter(|&i| matches!(t.jobs[i].state, JobState::Failed | JobState::Cancelled))
                            .collect();
                        t.retry(&again);
                        for i in again {
                            assert_eq!((t.jobs[i].state, t.jobs[i].attempts), (JobState::Queued, 0));
                        }
                    }
                    _ => {
                        if rng.chance(20) {
                            let all: Vec<JobIndex> = (0..n_jobs).map(JobIndex::new).collect();
                            t.cancel(&all);
                            for (i, job) in t.jobs.iter().enumerate() {
                                assert!(job.state != JobState::Running || job.committing, "{context}: {i} runs");
                            }
                        }
                    }
                }
                // Attempts the table forgot (settled jobs, cancels) are no longer held.
                m.leases.retain(|id, _| t.attempt(*id).is_some());
                check(&t, &m, &context);
            }
        }
        // The histories reach every decision often.
        assert!(expired > 500 && wins > 500 && dropped > 20 && failed > 200, "{expired} {wins} {dropped} {failed}");
        assert!(unwritten > 50, "{unwritten} commits the coordinator could not write");
        assert!(unstarted_expired > 100 && job_errors > 100, "{unstarted_expired} {job_errors}");
    }

    /// A table of one job, running as attempt 7 of session `a` since the instant answered.
    fn one_running_attempt() -> (JobTable, Instant) {
        let mut t = table(1);
        let families: BTreeSet<String> = ["f".to_string()].into();
        let session: SessionId = "a".into();
        let t0 = Instant::now();
        let picked = t.pick(&families, 1);
        t.start_attempts(&picked, &[AttemptId(7)], &session, "w", t0);
        t.started(&"a".into(), &[AttemptId(7)]);
        (t, t0)
    }

    /// A lease renewed within its ttl lives on however long the job runs; one that is not
    /// expires on the first look after its deadline, and not before.
    #[test]
    fn a_lease_lives_exactly_its_ttl_after_its_last_renewal() {
        let (mut t, t0) = one_running_attempt();
        let mut now = t0;
        for _ in 0..1000 {
            now += TTL - Duration::from_millis(1);
            assert!(t.expire(now, |s| s.as_str().to_string()).is_empty());
            assert_eq!(t.heartbeat(&"a".into(), vec![AttemptId(7)], now).unwrap(), Vec::<AttemptId>::new());
        }
        assert!(t.expire(now + TTL, |s| s.as_str().to_string()).is_empty(), "at the deadline itself it still lives");
        let effects = t.expire(now + TTL + Duration::from_nanos(1), |s| format!("{}!", s.as_str()));
        assert_eq!(
            effects[0],
            Effect::EndAttempt {
                attempt: AttemptId(7),
                job: JobIndex::new(0),
                outcome: AttemptOutcome::Failed,
                state: JobState::Queued,
                error: Some("lease expired: worker a! stopped heartbeating".into()),
            }
        );
        assert_eq!(t.jobs[0].state, JobState::Queued);
    }

    /// A heartbeat renews from when it came, even applied later (the scheduler was busy),
    /// and one applied after a later one does not shorten the lease that one renewed.
    #[test]
    fn a_heartbeat_renews_from_when_it_came_and_never_shortens_a_lease() {
        let (mut t, t0) = one_running_attempt();
        let heard = t0 + TTL / 2;
        // Renewed to heard + TTL, whenever the scheduler applies it.
        assert!(t.heartbeat(&"a".into(), vec![AttemptId(7)], heard).unwrap().is_empty());
        assert!(t.expire(heard + TTL, |s| s.as_str().to_string()).is_empty());
        // An older heartbeat applied after it changes nothing.
        assert!(t.heartbeat(&"a".into(), vec![AttemptId(7)], t0).unwrap().is_empty());
        assert!(t.expire(heard + TTL, |s| s.as_str().to_string()).is_empty());
        let effects = t.expire(heard + TTL + Duration::from_nanos(1), |s| s.as_str().to_string());
        assert!(
            matches!(effects[0], Effect::EndAttempt { attempt: AttemptId(7), outcome: AttemptOutcome::Failed, .. }),
            "expired one nanosecond after heard + TTL: {effects:?}"
        );
        assert_eq!(t.jobs[0].state, JobState::Queued);
    }

    /// A worker killed while it held 15 leases, one job running and 14 leased ahead, is
    /// charged the one it started: three such deaths fail no job that never ran.
    #[test]
    fn a_dead_worker_is_charged_only_for_the_jobs_it_started() {
        let mut t = table(15);
        let families: BTreeSet<String> = ["f".to_string()].into();
        let mut now = Instant::now();
        let mut next = 1;
        for death in 1..=3u32 {
            let picked = t.pick(&families, 15);
            assert_eq!(picked.len(), 15);
            let ids: Vec<AttemptId> = (next..next + 15).map(AttemptId).collect();
            next += 15;
            t.start_attempts(&picked, &ids, &"a".into(), "w", now);
            let running = ids[picked.iter().position(|&i| i == JobIndex::new(0)).unwrap()];
            t.started(&"a".into(), &[running]);
            assert_eq!(t.counts("s").leased, 14);
            now += TTL + Duration::from_millis(1);
            let effects = t.expire(now, |s| s.as_str().to_string());
            let failed = effects.iter().filter(|e| matches!(e, Effect::Failed { .. })).count();
            assert_eq!(failed, 15, "each expiry is reported");
            assert_eq!(t.jobs[0].attempts, death, "the started job is charged");
            for job in &t.jobs[1..] {
                assert_eq!((job.state, job.attempts), (JobState::Queued, 0), "death {death}");
            }
        }
        assert_eq!(t.jobs[0].state, JobState::Failed, "the job that ran three times and died with its worker");
        assert_eq!(t.counts("s").failed, 1);
    }

    /// A job's own error fails it at the first attempt; the worker's trouble is retried;
    /// with `retry_job_errors` a job error is retried as the worker's is.
    #[test]
    fn a_jobs_own_error_fails_it_at_once_unless_the_policy_retries_it() {
        for retry_job_errors in [false, true] {
            let mut t = table(2);
            t.policy.retry_job_errors = retry_job_errors;
            let families: BTreeSet<String> = ["f".to_string()].into();
            let picked = t.pick(&families, 2);
            t.start_attempts(&picked, &[AttemptId(1), AttemptId(2)], &"a".into(), "w", Instant::now());
            let (retry, _) = t.fail(&"a".into(), AttemptId(1), "ValueError: boom".into(), Cause::Job, "w").unwrap();
            assert_eq!(retry, retry_job_errors);
            let expected = if retry_job_errors { JobState::Queued } else { JobState::Failed };
            assert_eq!((t.jobs[0].state, t.jobs[0].attempts), (expected, 1), "failed at its first attempt");
            let (retry, _) = t.fail(&"a".into(), AttemptId(2), "connection lost".into(), Cause::Worker, "w").unwrap();
            assert!(retry);
            assert_eq!((t.jobs[1].state, t.jobs[1].attempts), (JobState::Queued, 1));
        }
    }

    /// A long command's busy time is given back to every running lease, so heartbeats that
    /// waited in the mailbox meanwhile still arrive in time; short ones are not excused.
    #[test]
    fn busy_time_is_given_back_to_running_leases() {
        let mut t = table(1);
        let families: BTreeSet<String> = ["f".to_string()].into();
        let t0 = Instant::now();
        let picked = t.pick(&families, 1);
        t.start_attempts(&picked, &[AttemptId(1)], &"a".into(), "w", t0);
        t.excuse(BUSY_EXCUSED - Duration::from_millis(1));
        assert_eq!(t.attempt(AttemptId(1)).unwrap().expires, t0 + TTL, "a short command is not excused");
        t.excuse(Duration::from_secs(4));
        assert_eq!(t.attempt(AttemptId(1)).unwrap().expires, t0 + TTL + Duration::from_secs(4));
        assert!(t.expire(t0 + TTL + Duration::from_secs(3), |s| s.as_str().to_string()).is_empty());
        assert!(!t.expire(t0 + TTL + Duration::from_secs(5), |s| s.as_str().to_string()).is_empty());
        assert_eq!(t.jobs[0].state, JobState::Queued);
    }
}
