//! The scheduler: one actor that owns the job table. Every request of either service
//! becomes a request ([`requests`], a file each) on its mailbox, so state changes happen one at a time, in order,
//! and each is written to the [`Store`] before it is answered.
//!
//! Job lifecycle: `queued` -> (lease) `running` -> (commit) `done`; a failed or expired
//! attempt re-queues the job until it has had `max_attempts`, then it is `failed` with its
//! last error; `cancel` makes queued and running jobs `cancelled`. The first attempt to
//! commit wins: a later commit of the same job is answered `committed = false`, and any
//! attempt whose job is no longer running it is told to stop at its next heartbeat.
//!
//! The decisions are made by pure state machines: the jobs' ([`super::state::job_table`]), the sweeps'
//! ([`super::state::sweeps`]) and the worker sessions' ([`super::state::sessions`]). This actor is their
//! executor: it reads the clock once per command and passes it in, and it carries out each
//! transition's effects (the store's writes, spools, commits, live summaries, watchers)
//! before it answers.
//!
//! Records do not pass through here: upload streams write into the attempt's [`Spool`]
//! directly. The scheduler opens a spool at lease time, hands the winner's to the
//! committer at commit time, and marks the job `done` when the committer reports its part
//! durable (see [`super::durable::committer`]).

use super::durable::backups::{self, BackupPolicy};
use super::durable::catalog::Catalog;
use super::durable::committer::{self, Commit, CommitConfig};
use super::durable::spool::{RecordSchema, Spools};
use super::durable::store::{Store, StoreError};
use super::durable::summarizer::{self, JobTally, LiveSummaries, Opening};
use super::state::job_table::{Effect, JobTable, Policy};
use super::state::jobs::{base_family, Job, Submission, Template, Templates};
use super::state::metrics::Metrics;
use super::state::replies::{CommandError, JobFailed, Submitted, SweepEvent};
use super::state::sessions::Sessions;
use super::state::stored::JobState;
use super::state::sweeps::Sweeps;
use super::state::trouble::Place;
use crate::results::rounds::ReadValues;
use crate::results::{self, Cell};
use armada_core::Declaration;
use armada_proto::ids::SweepId;
use handle::{LateAbandons, SchedulerHandle};
use requests::{tell, Mail, Reply};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, mpsc};
// Tokio's clock, not the system's: lease deadlines follow it, so tests pause and advance
// time instead of sleeping.
use tokio::time::Instant;
use tracing::{info, warn};

pub mod handle;
mod load;
mod requests;
mod ticks;

use requests::submit::Storing;

/// Timing and retry policy.
#[derive(Clone, Copy, Debug)]
pub struct SchedulerConfig {
    /// A lease lives this long without a heartbeat.
    pub lease_ttl: Duration,
    /// Workers are asked to heartbeat this often.
    pub heartbeat: Duration,
    /// Attempts (failed or expired) before a job is marked failed.
    pub max_attempts: u32,
    /// Retry jobs whose own code failed, as the worker's trouble is (by default such a
    /// job fails at once: the same key fails the same way).
    pub retry_job_errors: bool,
    /// Lease only the jobs of sweeps submitted to this coordinator, not the queued jobs of
    /// sweeps found in the store (`armada run`, which runs exactly its own sweep).
    pub only_submitted: bool,
    /// How commits are grouped into trajectory parts.
    pub commit: CommitConfig,
    /// A worker not heard from this long, and holding no live lease, is forgotten: a
    /// coordinator that outlives many workers does not keep them all. One that comes back
    /// registers again (a late commit of an expired attempt still counts).
    pub forget_worker_after: Duration,
    /// How often the store is backed up, and how many backups are kept.
    pub backup: BackupPolicy,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            lease_ttl: Duration::from_secs(10),
            heartbeat: Duration::from_millis(2500),
            max_attempts: 3,
            retry_job_errors: false,
            only_submitted: false,
            commit: CommitConfig::default(),
            forget_worker_after: Duration::from_secs(600),
            backup: BackupPolicy::default(),
        }
    }
}

/// Commands waiting for the actor. Callers wait when it is full (back-pressure on the
/// services), and the actor takes a command in microseconds, so a thousand is room for
/// every worker's heartbeat and commit of a large cluster at once without a wait.
const MAILBOX_CAPACITY: usize = 1024;

/// Events kept for a sweep's watchers: room for a burst (a large sweep's jobs settling
/// together); a watcher that falls further behind is sent a fresh snapshot instead.
const WATCH_EVENTS: usize = 4096;

/// Give freed heap memory back to the system. glibc keeps what a large submission freed
/// (hundreds of bytes a job) mapped otherwise, so a coordinator's RSS would stay at its peak.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of glibc's heaps to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The watchers of one sweep: the channel of its events, and a count of those who want
/// every job's events (each holds a clone of `in_detail`; see [`Scheduler::watched_in_detail`]).
pub(in crate::coordinator) struct Watchers {
    pub(in crate::coordinator) events: broadcast::Sender<SweepEvent>,
    pub(in crate::coordinator) in_detail: Arc<()>,
}

impl Watchers {
    fn new() -> Self {
        Watchers { events: broadcast::channel(WATCH_EVENTS).0, in_detail: Arc::new(()) }
    }
}

/// Drop the event channels no one watches any more, with their buffers (room for
/// [`WATCH_EVENTS`] events: hundreds of KB): a finished sweep's watchers leave, and no event
/// would come to drop its channel. Answers how many were dropped.
fn prune_unwatched(watchers: &mut HashMap<SweepId, Watchers>) -> usize {
    let before = watchers.len();
    watchers.retain(|_, w| w.events.receiver_count() > 0);
    before - watchers.len()
}

pub struct Scheduler {
    /// The families known, built in and declared.
    catalog: Arc<Catalog>,
    store: Store,
    results_dir: Arc<PathBuf>,
    config: SchedulerConfig,
    /// The jobs, their queue and their leased attempts.
    table: JobTable,
    /// The sweeps: their jobs and flags.
    sweeps: Sweeps,
    /// Each watched sweep's events, made by the first watch and dropped with the last
    /// watcher: an unwatched sweep holds no buffer.
    watchers: HashMap<SweepId, Watchers>,
    /// The submission being stored, a chunk at a time between other commands, and those
    /// waiting for it.
    storing: Option<Storing>,
    waiting: VecDeque<(Submission, Reply<Submitted>)>,
    /// Leases that found nothing and wait for jobs to be queued.
    held_leases: requests::lease::HeldLeases,
    /// The jobs' shared templates.
    templates: Templates,
    /// Registered workers by session credential.
    workers: Sessions,
    spools: Spools,
    /// The actor's own mailbox, for the tasks it starts to answer on (a round's judging);
    /// weak, so that it does not keep the actor alive.
    mailbox: mpsc::WeakSender<Mail>,
    /// Each resolving sweep's job values read by its rounds' judging so far, so that a
    /// round reads only the jobs done since the last one.
    round_values: HashMap<SweepId, Arc<std::sync::Mutex<ReadValues>>>,
    live: LiveSummaries,
    committer: mpsc::UnboundedSender<Commit>,
    metrics: Arc<Metrics>,
    /// What heartbeats answered too late for their callers found to abandon.
    late_abandons: LateAbandons,
    /// When the store was last backed up (at first: when the actor started).
    last_backup: std::time::Instant,
    /// The next attempt id, and the last one the store has reserved.
    attempt_ids: AttemptIds,
    /// Attempts were leased since the open ones were last noted in the store, and when
    /// that was.
    leased_since_noted: bool,
    noted_at: std::time::Instant,
}

/// Attempt ids are reserved in the store a block at a time and handed out from memory, so
/// a lease writes nothing per job (a restart starts after the last reserved id: no id is
/// used twice, across restarts too).
#[derive(Clone, Copy, Debug, Default)]
struct AttemptIds {
    next: u64,
    reserved: u64,
}

/// Attempt ids reserved per write of the store: one write per this many attempts.
const ATTEMPT_ID_BLOCK: u64 = 1 << 16;

/// How often the open attempts are noted in the store (when some were leased since): the
/// store is written once per this, not per lease, and a crash leaves uncharged only the
/// attempts leased in the last of it.
const NOTE_OPEN_ATTEMPTS: Duration = Duration::from_secs(1);

/// The wall clock in UNIX milliseconds, as the store and provenance record times.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Why a scheduler could not start on its data directory.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Results(#[from] results::ResultsError),
    #[error("making the spool directory {}: {cause}", .path.display())]
    Spools { path: PathBuf, cause: std::io::Error },
}

/// A store (or results) error answered as an internal one, its causes spelled out.
fn internal(e: impl Into<anyhow::Error>) -> CommandError {
    let e = e.into();
    warn!(error = %format!("{e:#}"), "store error");
    CommandError::internal(format!("coordinator store: {e:#}"))
}

impl Scheduler {
    /// Load the state of `store` (voiding the attempts of a previous life) and start the
    /// actor. Results go to `results_dir/<sweep>/`.
    pub fn start(
        catalog: Arc<Catalog>,
        mut store: Store,
        results_dir: PathBuf,
        config: SchedulerConfig,
    ) -> Result<SchedulerHandle, StartError> {
        let (tx, rx) = mpsc::channel(MAILBOX_CAPACITY);
        let spool_dir = crate::data_dir::DataDir(&results_dir).spool();
        let spools = Spools::open(&spool_dir).map_err(|cause| StartError::Spools { path: spool_dir, cause })?;
        // The committer reports through a weak handle, so that the actor stops, and closes its
        // store, once every outside handle is dropped.
        let mailbox = tx.downgrade();
        let live = LiveSummaries::start(move |sweep, generation| {
            if let Some(mailbox) = mailbox.upgrade() {
                let _ = mailbox
                    .blocking_send(tell(requests::summarized::Summarized { sweep: SweepId::from(sweep), generation }));
            }
        });
        let metrics = Arc::new(Metrics::default());
        store.report_writes_to(metrics.writes.clone());
        let mailbox = tx.downgrade();
        let committer = committer::start(config.commit, live.clone(), metrics.clone(), move |written| {
            if let Some(mailbox) = mailbox.upgrade() {
                let _ = mailbox.blocking_send(tell(written));
            }
        });
        let late_abandons = LateAbandons::default();
        let mut s = Scheduler {
            catalog,
            store,
            sweeps: Sweeps::new(results_dir.clone()),
            results_dir: Arc::new(results_dir),
            config,
            table: JobTable::new(Policy {
                lease_ttl: config.lease_ttl,
                max_attempts: config.max_attempts,
                retry_job_errors: config.retry_job_errors,
            }),
            watchers: HashMap::new(),
            round_values: HashMap::new(),
            storing: None,
            waiting: VecDeque::new(),
            held_leases: requests::lease::HeldLeases::default(),
            templates: Templates::default(),
            workers: Sessions::default(),
            spools: spools.clone(),
            mailbox: tx.downgrade(),
            live: live.clone(),
            committer,
            metrics: metrics.clone(),
            late_abandons: late_abandons.clone(),
            last_backup: Instant::now().into_std(),
            attempt_ids: AttemptIds::default(),
            leased_since_noted: false,
            noted_at: Instant::now().into_std(),
        };
        let store_path = crate::data_dir::DataDir(&s.results_dir).store();
        // Pages SQLite finds damaged only as it reads them: named, with the way out.
        s.load().map_err(|e| match e {
            StartError::Store(e) => StartError::Store(e.naming_damage(&store_path)),
            e => e,
        })?;
        tokio::spawn(s.run(rx));
        Ok(SchedulerHandle::new(tx, spools, live, metrics, late_abandons))
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Mail>) {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            // Commands first: a submission being stored takes the time in between, a chunk
            // at a time, so heartbeats and leases never wait behind a large sweep.
            tokio::select! {
                biased;
                command = rx.recv() => match command {
                    Some(c) => {
                        let started = Instant::now();
                        self.handle(c, started.into_std());
                        self.table.excuse(started.elapsed());
                    }
                    None => break,
                },
                _ = tick.tick() => {
                    let now = Instant::now().into_std();
                    self.expire_leases(now);
                    self.table.requeue_due(now);
                    self.forget_idle_workers(now);
                    prune_unwatched(&mut self.watchers);
                    self.back_up_if_due(now);
                    if now.duration_since(self.noted_at) >= NOTE_OPEN_ATTEMPTS {
                        self.note_open_attempts(now);
                    }
                }
                _ = tokio::task::yield_now(), if self.storing.is_some() => {
                    let started = Instant::now();
                    self.store_chunk();
                    self.table.excuse(started.elapsed());
                }
            }
            self.announce_write_troubles();
            self.answer_held_leases();
        }
        self.note_open_attempts(Instant::now().into_std());
    }

    /// Note the open attempts in the store, if any were leased since the last note: a
    /// restart charges those that never ended to their jobs.
    fn note_open_attempts(&mut self, now: std::time::Instant) {
        self.noted_at = now;
        if !std::mem::take(&mut self.leased_since_noted) {
            // A store in trouble is tried again once a second (a write that changes nothing),
            // so that leases resume as soon as it writes again.
            if self.metrics.writes.failing(&Place::Store) {
                let _ = self.store.reserve_attempt_ids(self.attempt_ids.reserved);
            }
            return;
        }
        let mut by_sweep: HashMap<&str, Vec<u8>> = HashMap::new();
        for (id, i) in self.table.open_attempts() {
            let job = self.table.job(i);
            let entries = by_sweep.entry(&job.sweep).or_default();
            entries.extend_from_slice(&id.0.to_le_bytes());
            entries.extend_from_slice(job.key.bytes());
        }
        let open: Vec<(&str, Vec<u8>)> = by_sweep.into_iter().collect();
        if let Err(e) = self.store.note_open_attempts(&open) {
            // Noted again at the next tick: until then a crash would leave them uncharged.
            warn!(error = %format!("{e:#}"), "store error");
            self.leased_since_noted = true;
        }
    }

    /// Carry out one request, at `now` (the clock is read once, by the caller).
    fn handle(&mut self, command: Mail, now: std::time::Instant) {
        if let Some(session) = command.session() {
            self.workers.touch(session, now);
        }
        command.handle(self, now);
    }

    /// Carry out a transition's effects in order (the store's writes, spools, live
    /// summaries, watchers), then announce the sweeps that finished.
    fn apply(&mut self, effects: Vec<Effect>) {
        let mut finished = BTreeSet::new();
        for effect in effects {
            match effect {
                Effect::EndAttempt { attempt, job, outcome, state, error } => {
                    self.metrics.attempt_ended(outcome);
                    let job = self.table.job(job);
                    let (sweep, key, attempts) = (job.sweep.clone(), job.key.to_string(), job.attempts);
                    // Logged, not answered: the store then still has the job's state before
                    // this attempt, and a restart queues it again.
                    let ended = self.store.end_attempt(attempt, (&sweep, &key), state, attempts, error.as_deref());
                    if let Err(e) = ended {
                        warn!(error = %format!("{e:#}"), "store error");
                    }
                }
                Effect::OpenSpool { attempt, job, session } => {
                    let job = self.table.job(job);
                    let family = self.declaration_of(job.family());
                    let schema = RecordSchema {
                        metrics: family.map_or(&[], |f| f.metrics),
                        horizon: job.template.spec.horizon,
                        ends_early: family.is_some_and(|f| f.ends_early),
                    };
                    self.spools.create(attempt, session, schema);
                }
                Effect::DiscardSpool(attempt) => self.spools.discard(attempt),
                Effect::SettledWithoutResult(i) => {
                    let job = self.table.job(i);
                    self.live.settled_without_result(&job.sweep, job.cell(), job.state == JobState::Failed);
                }
                Effect::Started { job: i, attempt, worker } => {
                    self.metrics.attempts_started.fetch_add(1, Relaxed);
                    let sweep = self.table.job(i).sweep.clone();
                    if self.watched_in_detail(&sweep) {
                        let job = self.table.job(i);
                        let event = SweepEvent::JobStarted {
                            job_key: job.key.to_string(),
                            description: job.describe(),
                            attempt_id: attempt,
                            attempt: job.attempts,
                            worker,
                        };
                        self.emit(&sweep, event);
                    }
                }
                Effect::Failed { job: i, error, attempt_no, is_final } => {
                    if !is_final {
                        self.metrics.retries.fetch_add(1, Relaxed);
                    }
                    let sweep = self.table.job(i).sweep.clone();
                    if self.watched(&sweep) {
                        let job = self.table.job(i);
                        let event = SweepEvent::JobFailed(JobFailed {
                            job_key: job.key.to_string(),
                            description: job.describe(),
                            error,
                            attempt: attempt_no,
                            is_final,
                        });
                        self.emit(&sweep, event);
                    }
                }
                Effect::CheckFinished(sweep) => {
                    finished.insert(sweep);
                }
                Effect::OpenLive(sweep) => self.open_live(&sweep),
                Effect::CloseLive(sweep) => self.live.close(&sweep),
            }
        }
        for sweep in finished {
            self.check_finished(&sweep);
        }
    }

    /// The declaration of a family as jobs refer to it ([`armada_core::Family::reference`]),
    /// or of a sweep's family as its families list it (its extensions share its metrics).
    fn declaration_of(&self, reference: &str) -> Option<&'static Declaration> {
        self.catalog.get().resolve(base_family(reference)).ok().map(|f| f.declaration())
    }

    /// Someone watches `sweep`: events are worth building. Once the last watcher has left,
    /// the channel (and its buffer) is dropped until someone watches again.
    fn watched(&mut self, sweep: &str) -> bool {
        if self.watchers.get(sweep).is_some_and(|w| w.events.receiver_count() == 0) {
            self.watchers.remove(sweep);
        }
        self.watchers.contains_key(sweep)
    }

    /// Someone watches `sweep` who wants every job's events (`JobStarted`, `JobFinished`);
    /// the others hear `Progress` instead, once a batch, and those events are not built.
    fn watched_in_detail(&mut self, sweep: &str) -> bool {
        self.watched(sweep) && Arc::strong_count(&self.watchers[sweep].in_detail) > 1
    }

    fn emit(&mut self, sweep: &str, event: SweepEvent) {
        if self.watched(sweep) {
            let _ = self.watchers[sweep].events.send(event);
        }
    }

    /// Back the store up when the policy's interval has passed since the last backup (or
    /// the start). The actor waits for it: its time is excused from every lease.
    fn back_up_if_due(&mut self, now: std::time::Instant) {
        let policy = self.config.backup;
        if !policy.enabled() || now.saturating_duration_since(self.last_backup) < policy.every {
            return;
        }
        self.last_backup = now;
        let started = Instant::now();
        match backups::take(&self.store, &self.results_dir, SystemTime::now(), policy.keep) {
            Ok(path) => {
                self.metrics.writes.succeeded(&Place::Backups);
                info!(backup = %path.display(), took = ?started.elapsed(), "store backed up");
            }
            Err(e) => {
                self.metrics.writes.failed(Place::Backups, &e.to_string(), SystemTime::now());
                warn!(error = %e, "the store could not be backed up");
            }
        }
        self.table.excuse(started.elapsed());
    }

    /// Tell the watchers of each sweep whose writes began or stopped failing (the store's
    /// concern every sweep) what fails now.
    fn announce_write_troubles(&mut self) {
        let changed = self.metrics.writes.take_changes();
        if changed.is_empty() || self.watchers.is_empty() {
            return;
        }
        let every_sweep = changed.contains(&Place::Store);
        let told: Vec<SweepId> = self
            .watchers
            .keys()
            .filter(|sweep| every_sweep || changed.contains(&Place::Parts(sweep.to_string())))
            .cloned()
            .collect();
        for sweep in told {
            let troubles = self.metrics.writes.affecting(&sweep);
            self.emit(&sweep, SweepEvent::WriteTroubles(troubles));
        }
    }

    /// Announce a sweep that has nothing queued or running, once.
    fn check_finished(&mut self, id: &str) {
        let Some(status) = self.sweeps.check_finished(id, &self.table) else { return };
        // A resolving sweep is announced once its rounds end, not at the end of each.
        if let Some(source) = self.sweeps.get(id).ok().filter(|s| !s.cancelled).and_then(|s| s.source.clone()) {
            self.judge_round(id, source);
            return;
        }
        info!(
            sweep = %id,
            done = status.n_done,
            failed = status.n_failed,
            cancelled = status.n_cancelled,
            "sweep finished"
        );
        self.emit(id, SweepEvent::SweepFinished(status));
    }

    /// (Re)open a sweep's live summaries from the state of its jobs.
    fn open_live(&mut self, id: &str) {
        self.open_live_held(id, None);
    }

    /// (Re)open a sweep's live summaries, held with `held`'s error (see `summarizer::held_at_start`).
    fn open_live_held(&mut self, id: &str, held: Option<String>) {
        let Ok(sweep) = self.sweeps.get(id) else { return };
        let family = self.declaration_of(&sweep.family);
        let cells = self.cells_of(id);
        let n_cells = cells.len() as u32;
        let generation = self.live.open(Opening {
            sweep: id.to_string(),
            sweep_dir: self.results_dir.join(id),
            metrics: family.map_or(&[], |f| f.metrics),
            axes: family.map_or(&[], |f| f.summary_axes),
            cells,
            done: self.sweeps.done(id, &self.table).map(|j| j.key.to_string()).collect(),
            held,
        });
        self.sweeps.opened_live(id, generation, n_cells);
    }

    /// The cells of a sweep with their numbers of jobs, of settled jobs and of failed ones.
    fn cells_of(&self, id: &str) -> Vec<(Cell, JobTally)> {
        let settled = |j: &Job| matches!(j.state, JobState::Done | JobState::Failed | JobState::Cancelled);
        // Counted by template first, by its number.
        let mut by_template: Vec<(Option<&Template>, JobTally)> =
            vec![(None, JobTally::default()); self.templates.len()];
        for &i in self.sweeps.jobs(id) {
            let job = self.table.job(i);
            let (template, tally) = &mut by_template[job.template.id];
            *template = Some(&job.template);
            tally.jobs += 1;
            tally.settled += usize::from(settled(job));
            tally.failed += usize::from(job.state == JobState::Failed);
        }
        let cells = by_template.into_iter().filter_map(|(t, tally)| Some((&*t?.cell, tally)));
        summarizer::cell_counts(cells)
    }
}

#[cfg(test)]
mod tests;
