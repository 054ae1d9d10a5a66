//! The scheduler: one actor that owns the job table. Every request of either service
//! becomes a [`Command`] on its mailbox, so state changes happen one at a time, in order,
//! and each is written to the [`Store`] before it is answered.
//!
//! Job lifecycle: `queued` -> (lease) `running` -> (commit) `done`; a failed or expired
//! attempt re-queues the job until it has had `max_attempts`, then it is `failed` with its
//! last error; `cancel` makes queued and running jobs `cancelled`. The first attempt to
//! commit wins: a later commit of the same job is answered `committed = false`, and any
//! attempt whose job is no longer running it is told to stop at its next heartbeat.
//!
//! The decisions are made by pure state machines: the jobs' ([`super::table`]), the sweeps'
//! ([`super::sweeps`]) and the worker sessions' ([`super::sessions`]). This actor is their
//! executor: it reads the clock once per command and passes it in, and it carries out each
//! transition's effects (the store's writes, spools, commits, live summaries, watchers)
//! before it answers.
//!
//! Records do not pass through here: upload streams write into the attempt's [`Spool`]
//! directly. The scheduler opens a spool at lease time, hands the winner's to the
//! committer at commit time, and marks the job `done` when the committer reports its part
//! durable (see [`super::commit`]).

use super::catalog::{Catalog, Decision};
use super::commit::{self, Commit, CommitConfig, PartWritten};
use super::declared::Checked;
use super::handle::{Command, Reply, SchedulerHandle};
use super::ingest::{Ingest, Step};
use super::jobs::{Job, Key, Submission, Template, Templates};
use super::live::{self, LiveSummaries, Opening};
use super::metrics::Metrics;
use super::recovery::{Recovery, StoreFix};
use super::replies::{
    CommandError, Declared, JobFailed, Lease, Leases, Registered, Registration, Submitted, SummaryInputs, SweepEvent,
    SweepStatus,
};
use super::sessions::Sessions;
use super::spool::{RecordSchema, Spools};
use super::store::{AttemptOutcome, JobState, Store, StoredJob};
use super::sweeps::{FailurePage, Sweeps};
use super::table::{CommitStart, Effect, JobTable, Policy};
use crate::results;
use crate::results::Cell;
use armada_core::{Declaration, MetricDef};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, mpsc, oneshot};
// Tokio's clock, not the system's: lease deadlines follow it, so tests pause and advance
// time instead of sleeping.
use tokio::time::Instant;
use tracing::{info, warn};

/// Timing and retry policy.
#[derive(Clone, Copy, Debug)]
pub struct SchedulerConfig {
    /// A lease lives this long without a heartbeat.
    pub lease_ttl: Duration,
    /// Workers are asked to heartbeat this often.
    pub heartbeat: Duration,
    /// Attempts (failed or expired) before a job is marked failed.
    pub max_attempts: u32,
    /// Lease only the jobs of sweeps submitted to this coordinator, not the queued jobs of
    /// sweeps found in the store (`armada run`, which runs exactly its own sweep).
    pub only_submitted: bool,
    /// How commits are grouped into trajectory parts.
    pub commit: CommitConfig,
    /// A worker not heard from this long, and holding no live lease, is forgotten: a
    /// coordinator that outlives many workers does not keep them all. One that comes back
    /// registers again (a late commit of an expired attempt still counts).
    pub forget_worker_after: Duration,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            lease_ttl: Duration::from_secs(10),
            heartbeat: Duration::from_millis(2500),
            max_attempts: 3,
            only_submitted: false,
            commit: CommitConfig::default(),
            forget_worker_after: Duration::from_secs(600),
        }
    }
}

/// The longest error message kept for a job, in bytes: what a worker reports is clipped.
pub const MAX_ERROR_BYTES: usize = 4096;

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

/// Commands waiting for the actor. Callers wait when it is full (back-pressure on the
/// services), and the actor takes a command in microseconds, so a thousand is room for
/// every worker's heartbeat and commit of a large cluster at once without a wait.
const MAILBOX_CAPACITY: usize = 1024;

/// Events kept for a sweep's watchers: room for a burst (a large sweep's jobs settling
/// together); a watcher that falls further behind is sent a fresh snapshot instead.
const WATCH_EVENTS: usize = 4096;

/// A worker that found nothing to lease asks again after this long.
const NOTHING_TO_LEASE_RETRY: Duration = Duration::from_millis(200);

/// Jobs of a submission written to the store per transaction, or added to the job table,
/// per turn: a few milliseconds here, so a command arriving meanwhile hardly waits.
const STORE_CHUNK: usize = 4096;

/// A submission that added this many jobs gives the memory it no longer needs (its
/// parsed jobs, their keys and rows) back to the system.
const TRIM_AFTER: usize = 100_000;

/// Give freed heap memory back to the system. glibc keeps what a large submission freed
/// (hundreds of bytes a job) mapped otherwise, so a coordinator's RSS would stay at its peak.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of glibc's heaps to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A submission being stored (see [`Ingest`]), with what its answer needs.
struct Storing {
    ingest: Ingest,
    /// Its generation in the store.
    generation: i64,
    started: Instant,
    reply: Reply<Submitted>,
}

pub struct Scheduler {
    /// The families known, built in and declared.
    catalog: Arc<Catalog>,
    store: Store,
    results_dir: PathBuf,
    config: SchedulerConfig,
    /// The jobs, their queue and their leased attempts.
    table: JobTable,
    /// The sweeps: their jobs and flags.
    sweeps: Sweeps,
    /// Each watched sweep's events, made by the first watch and dropped with the last
    /// watcher: an unwatched sweep holds no buffer.
    watchers: HashMap<String, broadcast::Sender<SweepEvent>>,
    /// The submission being stored, a chunk at a time between other commands, and those
    /// waiting for it.
    storing: Option<Storing>,
    waiting: VecDeque<(Submission, Reply<Submitted>)>,
    /// The jobs' shared templates.
    templates: Templates,
    /// Registered workers by session credential.
    workers: Sessions,
    spools: Spools,
    live: LiveSummaries,
    committer: mpsc::UnboundedSender<Commit>,
    metrics: Arc<Metrics>,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn internal(e: anyhow::Error) -> CommandError {
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
    ) -> anyhow::Result<SchedulerHandle> {
        let abandoned = store.abandon_submissions()?;
        if abandoned > 0 {
            info!(
                jobs = abandoned,
                "dropped the jobs of a submission the previous coordinator had not finished storing"
            );
        }
        let voided = store.void_running()?;
        if voided > 0 {
            info!(jobs = voided, "jobs running when the previous coordinator stopped are queued again");
        }
        let (tx, rx) = mpsc::channel(MAILBOX_CAPACITY);
        let spools = Spools::open(&results_dir.join(".spool"))?;
        // The committer reports through a weak handle, so that the actor stops, and closes its
        // store, once every outside handle is dropped.
        let mailbox = tx.downgrade();
        let live = LiveSummaries::start(move |sweep, generation| {
            if let Some(mailbox) = mailbox.upgrade() {
                let _ = mailbox.blocking_send(Command::Summarized { sweep: sweep.to_string(), generation });
            }
        });
        let metrics = Arc::new(Metrics::default());
        let mailbox = tx.downgrade();
        let committer = commit::start(config.commit, live.clone(), metrics.clone(), move |written| {
            if let Some(mailbox) = mailbox.upgrade() {
                let _ = mailbox.blocking_send(Command::PartWritten(written));
            }
        });
        let mut s = Scheduler {
            catalog,
            store,
            sweeps: Sweeps::new(results_dir.clone()),
            results_dir,
            config,
            table: JobTable::new(Policy { lease_ttl: config.lease_ttl, max_attempts: config.max_attempts }),
            watchers: HashMap::new(),
            storing: None,
            waiting: VecDeque::new(),
            templates: Templates::default(),
            workers: Sessions::default(),
            spools: spools.clone(),
            live: live.clone(),
            committer,
            metrics: metrics.clone(),
        };
        for declaration in s.store.families()? {
            if let Err(e) = s.catalog.load(&declaration) {
                warn!(error = %e, "the store keeps a declaration no longer accepted; its sweeps' jobs cannot run");
            }
        }
        for sweep in s.store.sweeps()? {
            s.sweeps.load(&sweep.id, sweep.family, sweep.cancelled, sweep.summarized);
        }
        for id in s.sweeps.ids() {
            let removed = results::remove_temp_files(&s.results_dir.join(id))?;
            if removed > 0 {
                info!(sweep = %id, files = removed, "removed temp files left by an interrupted write");
            }
        }
        let unrecorded = s.unrecorded_parts()?;
        let registry = s.catalog.get();
        let mut recovery = Recovery::new(&registry);
        for stored in s.store.jobs()? {
            s.load_job(stored, &unrecorded, &mut recovery)?;
        }
        let ids: Vec<String> = s.sweeps.ids().cloned().collect();
        for id in ids {
            let files =
                s.sweeps.counts(&id, &s.table).done == 0 || s.results_dir.join(&id).join(results::FINAL_FILE).is_file();
            // Summaries cut short by the previous coordinator's end (or removed since) are
            // rebuilt; those of a running sweep are live again.
            if s.sweeps.loaded(&id, &s.table, files) {
                s.open_live(&id);
            } else {
                let n_cells = s.cells_of(&id).len() as u32;
                s.sweeps.set_cells(&id, n_cells);
            }
        }
        let next_attempt = s.store.max_attempt_id()?;
        info!(sweeps = s.sweeps.len(), jobs = s.table.len(), next_attempt, "scheduler loaded the store");
        // The stored rows read to load the jobs are gone.
        release_free_memory();
        tokio::spawn(s.run(rx));
        Ok(SchedulerHandle::new(tx, spools, live, metrics))
    }

    /// Jobs in parts the store does not know: written, then the coordinator died before
    /// recording them. `(sweep, key)` -> part file name.
    fn unrecorded_parts(&self) -> anyhow::Result<HashMap<(String, String), String>> {
        let mut found = HashMap::new();
        for sweep in self.sweeps.ids() {
            let known = self.store.parts(sweep)?;
            for path in results::part_files(&self.results_dir.join(sweep))? {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if known.contains(&name) {
                    continue;
                }
                for job in results::read_index(&path)? {
                    found.insert((sweep.clone(), job.key), name.clone());
                }
            }
        }
        Ok(found)
    }

    /// Load one stored job (see [`Recovery::load`]), writing the store's correction first.
    fn load_job(
        &mut self,
        stored: StoredJob,
        unrecorded: &HashMap<(String, String), String>,
        recovery: &mut Recovery,
    ) -> anyhow::Result<()> {
        let reference = self.sweeps.get(&stored.sweep_id).map(|s| s.family.clone()).unwrap_or_default();
        let part = unrecorded.get(&(stored.sweep_id.clone(), stored.key.clone())).map(String::as_str);
        let loaded = recovery.load(&stored, &reference, part, &mut self.templates);
        match &loaded.fix {
            Some(StoreFix::Committed { part }) => {
                self.store.commit_jobs(&stored.sweep_id, part, &[(None, stored.key.as_str())])?
            }
            Some(StoreFix::Failed { error }) => {
                self.store.set_job_state(&stored.sweep_id, &stored.key, JobState::Failed, Some(error))?
            }
            None => {}
        }
        let Some(sweep) = self.sweeps.id_of(&stored.sweep_id) else { return Ok(()) };
        let state = loaded.state;
        let mut job = Job::new(sweep, loaded.template, loaded.seed, loaded.key, state);
        job.attempts = stored.attempts;
        job.error = loaded.error.map(Into::into);
        let i = self.table.push(job);
        self.sweeps.load_job(i, &self.table);
        if state == JobState::Queued && !self.config.only_submitted {
            self.table.enqueue(i, false);
        }
        Ok(())
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Command>) {
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
                    self.forget_idle_workers(now);
                }
                _ = tokio::task::yield_now(), if self.storing.is_some() => {
                    let started = Instant::now();
                    self.store_chunk();
                    self.table.excuse(started.elapsed());
                }
            }
        }
    }

    /// Carry out one command, at `now` (the clock is read once, by the caller).
    fn handle(&mut self, command: Command, now: std::time::Instant) {
        if let Some(session) = command.session() {
            self.workers.touch(session, now);
        }
        match command {
            Command::Submit { submission, reply } => self.submit(submission, reply),
            Command::Watch { sweep, reply } => {
                let answer = self.status(&sweep).map(|s| {
                    let events = self.watchers.entry(sweep).or_insert_with(|| broadcast::channel(WATCH_EVENTS).0);
                    (s, events.subscribe())
                });
                let _ = reply.send(answer);
            }
            Command::Status { sweep, failures, reply } => {
                let _ = reply.send(self.sweeps.status(&sweep, failures, &self.table));
            }
            Command::List { reply } => {
                // Counts only: failures page per sweep (Status), so that a list of many
                // sweeps with many failures stays small.
                let counts = FailurePage { offset: 0, limit: 0 };
                let _ = reply.send(self.sweeps.ids().map(|id| self.sweeps.status(id, counts, &self.table)).collect());
            }
            Command::Cancel { sweep, reply } => {
                let _ = reply.send(self.cancel(&sweep));
            }
            Command::Delete { sweep, reply } => {
                let _ = reply.send(self.delete(&sweep));
            }
            Command::Summary { sweep, with_keys, reply } => {
                let _ = reply.send(self.summary_inputs(&sweep, with_keys));
            }
            Command::Register { registration, reply } => {
                let _ = reply.send(self.register(registration, now));
            }
            Command::Declare { declaration, reply } => {
                let _ = reply.send(self.declare(declaration));
            }
            Command::Workers { reply } => {
                let _ =
                    reply.send(Ok(self.workers.infos(&self.table.attempts_by_session(), now, self.config.lease_ttl)));
            }
            Command::Jobs { sweep, filter, limit, reply } => {
                let _ = reply.send(self.sweeps.job_infos(&sweep, &self.table, &filter, limit));
            }
            Command::PartOf { sweep, key, reply } => {
                let _ = reply.send(self.part_of(&sweep, &key));
            }
            Command::Lease { session, max_jobs, reply } => {
                let _ = reply.send(self.lease(&session, max_jobs, now));
            }
            Command::Heartbeat { session, attempts, reply } => {
                let _ = reply.send(self.heartbeat(&session, attempts, now));
            }
            Command::Complete { session, attempt, n_records, reply } => {
                self.complete(&session, attempt, n_records, reply)
            }
            Command::Fail { session, attempt, error, reply } => {
                let _ = reply.send(self.fail(&session, attempt, error));
            }
            Command::Release { session, attempts, reply } => {
                let _ = reply.send(self.release(&session, attempts));
            }
            Command::Refused { attempt } => self.refused(attempt),
            Command::PartWritten(written) => self.part_written(written),
            Command::Summarized { sweep, generation } => self.summarized(&sweep, generation),
        }
    }

    /// Start storing a submission, or queue it behind the one being stored.
    fn submit(&mut self, submission: Submission, reply: Reply<Submitted>) {
        if self.storing.is_some() {
            self.waiting.push_back((submission, reply));
            return;
        }
        match self.begin_storing(submission) {
            Ok(storing) => self.storing = Some(Storing { reply, ..storing }),
            Err(e) => {
                let _ = reply.send(Err(e));
                self.next_submission();
            }
        }
    }

    /// What a submission adds to its sweep (jobs whose keys it does not know yet, `done`
    /// when their trajectories are on disk already) and drops from it (jobs of the previous
    /// submission that this one does not contain). The store gets the new jobs in chunks
    /// ([`Self::store_chunk`]); nothing changes in memory until they are all stored.
    fn begin_storing(&mut self, submission: Submission) -> Result<Storing, CommandError> {
        let Submission { name, family, templates, jobs, keys, by_key } = submission;
        // A resubmission: what the sweep has is not added again, and what it has that the
        // submission does not is dropped.
        let plan = self.sweeps.plan(&name, &family, &keys, &self.table)?;
        let on_disk = results::stored_keys(&self.results_dir.join(&name)).map_err(internal)?;
        let on_disk = on_disk.iter().filter_map(|k| Key::parse(k)).collect();
        let templates: Vec<Arc<Template>> =
            templates.into_iter().map(|spec| self.templates.shared(spec, &family)).collect();
        let generation = self.store.begin_submission(&name, &family, now_ms()).map_err(internal)?;
        let ingest = Ingest::new(name, family, templates, jobs, by_key, plan, on_disk, self.table.len());
        Ok(Storing { ingest, generation, started: Instant::now(), reply: oneshot::channel().0 })
    }

    /// One step of the submission being stored: the next chunk of its jobs into the store,
    /// or (once all are) into the job table; then its commit, which makes it the sweep.
    fn store_chunk(&mut self) {
        let Some(storing) = self.storing.as_mut() else { return };
        let name = storing.ingest.name.as_str();
        let sweep: Arc<str> = self.sweeps.id_of(name).unwrap_or_else(|| name.into());
        let step = storing.ingest.step(&mut self.table, &sweep, STORE_CHUNK);
        let name = storing.ingest.name.as_str();
        let committing = matches!(step, Step::Commit(_));
        let result = match step {
            Step::Write(rows) => self.store.add_jobs(name, storing.generation, &rows),
            Step::Added => Ok(()),
            Step::Commit(removed) => self.store.commit_submission(name, storing.generation, &removed),
        };
        if let Err(e) = result {
            // Nothing of it counts: its rows are dropped, its jobs were in no sweep.
            let storing = self.storing.take().expect("checked");
            self.table.truncate(storing.ingest.first);
            if let Err(e) = self.store.abandon_submissions() {
                warn!(error = %format!("{e:#}"), "store error");
            }
            let _ = storing.reply.send(Err(internal(e)));
            self.next_submission();
        } else if committing {
            let storing = self.storing.take().expect("checked");
            self.finish_storing(storing);
            self.next_submission();
        }
    }

    fn next_submission(&mut self) {
        while self.storing.is_none() {
            let Some((submission, reply)) = self.waiting.pop_front() else { return };
            self.submit(submission, reply);
        }
    }

    /// A submission is committed in the store and its jobs are in the job table: make it
    /// the sweep (drop what it dropped, queue its jobs and the sweep's failed and
    /// cancelled ones again), then answer.
    fn finish_storing(&mut self, storing: Storing) {
        let Storing { ingest, started, reply, .. } = storing;
        let stored = started.elapsed();
        let n_added = ingest.n_added(&self.table) as u32;
        let (name, family, removed, first) = (&ingest.name, &ingest.family, ingest.removed(), ingest.first);
        let effects = self.sweeps.submitted(name, family, removed, first, &mut self.table, self.config.only_submitted);
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
        let _ = reply.send(Ok(Submitted { sweep_id: ingest.name, n_jobs, n_added, n_already_done: counts.done }));
        if n_added as usize >= TRIM_AFTER {
            release_free_memory();
        }
    }

    fn status(&self, id: &str) -> Result<SweepStatus, CommandError> {
        self.sweeps.status(id, FailurePage::default(), &self.table)
    }

    fn cancel(&mut self, id: &str) -> Result<SweepStatus, CommandError> {
        self.sweeps.get(id)?;
        self.store.cancel(id).map_err(internal)?;
        let effects = self.sweeps.cancel(id, &mut self.table)?;
        info!(sweep = %id, "sweep cancelled");
        self.apply(effects);
        self.status(id)
    }

    /// Forget a sweep with nothing queued or running: its jobs, attempts and live
    /// summaries, here and in the store (its results are the caller's to remove).
    fn delete(&mut self, id: &str) -> Result<(PathBuf, u32), CommandError> {
        self.sweeps.deletable(id, self.storing.as_ref().map(|s| s.ingest.name.as_str()), &self.table)?;
        self.store.delete_sweep(id).map_err(internal)?;
        let (effects, n_jobs) = self.sweeps.delete(id, &mut self.table)?;
        self.watchers.remove(id);
        self.apply(effects);
        info!(sweep = %id, jobs = n_jobs, "sweep deleted");
        Ok((self.results_dir.join(id), n_jobs))
    }

    fn summary_inputs(&self, id: &str, with_keys: bool) -> Result<SummaryInputs, CommandError> {
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
    fn declare(&mut self, declaration: Checked) -> Result<Declared, CommandError> {
        match self.catalog.decide(declaration)? {
            Decision::Known { digest } => Ok(Declared { digest, created: false }),
            Decision::New(checked) => {
                let Checked { info, digest } = &*checked;
                let encoded = prost::Message::encode_to_vec(info);
                self.store.add_family(&info.name, info.version, digest, &encoded).map_err(internal)?;
                info!(family = %info.name, version = info.version, %digest, "family declared");
                let declared = Declared { digest: digest.clone(), created: true };
                self.catalog.add(*checked);
                Ok(declared)
            }
        }
    }

    fn register(
        &mut self,
        mut registration: Registration,
        now: std::time::Instant,
    ) -> Result<Registered, CommandError> {
        // The families it declares are kept first: a session runs only what is kept.
        let mut declared = HashMap::new();
        for (i, declaration) in std::mem::take(&mut registration.declarations).into_iter().enumerate() {
            let name = declaration.info.name.clone();
            let Declared { digest, .. } = self
                .declare(declaration)
                .map_err(|e| CommandError::new(e.kind(), format!("declarations[{i}]: {}", e.message())))?;
            declared.insert(name.clone(), format!("{name}+{digest}"));
        }
        let session: Arc<str> = crate::secret::random_secret().into();
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
            session: session.to_string(),
            lease_ttl: self.config.lease_ttl,
            heartbeat: self.config.heartbeat,
        })
    }

    fn part_of(&self, sweep: &str, key: &str) -> Result<Option<PathBuf>, CommandError> {
        self.sweeps.get(sweep)?;
        let part = self.store.part_of(sweep, key).map_err(internal)?;
        Ok(part.map(|p| results::trajectories_dir(&self.results_dir.join(sweep)).join(p)))
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
                    let (sweep, key) = (job.sweep.clone(), job.key.to_string());
                    // Logged, not answered: the store then still says `running`, and a
                    // restart voids (queues again) every attempt it finds running.
                    if let Err(e) = self.store.end_attempt(attempt, outcome, (&sweep, &key), state, error.as_deref()) {
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
                    self.live.settled_without_result(&job.sweep, job.cell());
                }
                Effect::Started { job: i, attempt, worker } => {
                    self.metrics.attempts_started.fetch_add(1, Relaxed);
                    let sweep = self.table.job(i).sweep.clone();
                    if self.watched(&sweep) {
                        let job = self.table.job(i);
                        let event = SweepEvent::JobStarted {
                            job_key: job.key.to_string(),
                            description: job.valid().describe(),
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
                            description: job.valid().describe(),
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

    fn lease(&mut self, session: &str, max_jobs: u32, now: std::time::Instant) -> Result<Leases, CommandError> {
        let (session, worker) = self.workers.get(session)?;
        let (worker_id, families) = (worker.id.clone(), worker.families.clone());
        let picked = self.table.pick(&families, max_jobs);
        if picked.is_empty() {
            return Ok(Leases { leases: Vec::new(), retry_after: NOTHING_TO_LEASE_RETRY });
        }
        let keys: Vec<(Arc<str>, String)> =
            picked.iter().map(|&i| (self.table.job(i).sweep.clone(), self.table.job(i).key.to_string())).collect();
        let ttl_ms = self.config.lease_ttl.as_millis() as i64;
        let ids = match self.store.start_attempts(&keys, &worker_id, now_ms(), now_ms() + ttl_ms) {
            Ok(ids) => ids,
            Err(e) => {
                self.table.unpick(&picked);
                return Err(internal(e));
            }
        };
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

    fn heartbeat(
        &mut self,
        session: &str,
        attempts: Vec<u64>,
        now: std::time::Instant,
    ) -> Result<Vec<u64>, CommandError> {
        self.workers.get(session)?;
        // Lease deadlines live in memory only: a restart voids every running attempt anyway,
        // so a heartbeat never waits on the store.
        self.table.heartbeat(session, attempts, now)
    }

    fn complete(&mut self, session: &str, attempt: u64, n_records: u32, reply: Reply<bool>) {
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
        let provenance = self.workers.provenance(session, attempt, job.family());
        let commit = Commit {
            provenance,
            sweep: job.sweep.to_string(),
            sweep_dir: self.results_dir.join(&*job.sweep),
            metrics: self.metrics_of(job.family()),
            job: i,
            attempt,
            valid: job.valid(),
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

    fn metrics_of(&self, family: &str) -> &'static [MetricDef] {
        self.declaration_of(family).map_or(&[], |f| f.metrics)
    }

    /// The declaration of a family as sweeps and jobs refer to it ([`armada_core::Family::reference`]).
    fn declaration_of(&self, reference: &str) -> Option<&'static Declaration> {
        self.catalog.get().resolve(reference).ok().map(|f| f.declaration())
    }

    /// A part was written (or not): its jobs are done, in one store transaction, or each
    /// goes back to the queue.
    fn part_written(&mut self, written: PartWritten) {
        let PartWritten { part, jobs } = written;
        let committed: Vec<(usize, u64)> = jobs.iter().map(|c| (c.job, c.attempt)).collect();
        let recorded = part.and_then(|part| {
            let Some(first) = jobs.first() else { return Ok(()) };
            let sweep = self.table.job(first.job).sweep.clone();
            let keys: Vec<String> = jobs.iter().map(|c| self.table.job(c.job).key.to_string()).collect();
            let done: Vec<(Option<u64>, &str)> =
                jobs.iter().zip(&keys).map(|(c, k)| (Some(c.attempt), k.as_str())).collect();
            self.store.commit_jobs(&sweep, &part, &done).map_err(|e| format!("recording part {part}: {e:#}"))
        });
        if let Err(e) = recorded {
            warn!(jobs = jobs.len(), error = %e, "committing failed; the jobs are queued again");
            let (effects, reopen) = self.table.commit_failed(&committed, &e);
            self.apply(effects);
            for c in jobs {
                let _ = c.reply.send(Err(CommandError::internal(format!("writing the trajectory: {e}"))));
            }
            for sweep in reopen {
                self.open_live(&sweep);
            }
            return;
        }
        let (effects, reopen) = self.table.committed(&committed);
        for c in jobs {
            let job = self.table.job(c.job);
            let sweep = job.sweep.clone();
            if let Some(location) = c.location {
                self.live.committed(&sweep, location);
            }
            if self.watched(&sweep) {
                let job = self.table.job(c.job);
                let final_metrics = self
                    .metrics_of(job.family())
                    .iter()
                    .zip(c.last)
                    .map(|(m, value)| (m.name.to_string(), value))
                    .collect();
                let event = SweepEvent::JobFinished {
                    job_key: job.key.to_string(),
                    description: job.valid().describe(),
                    final_metrics,
                };
                self.emit(&sweep, event);
            }
            let _ = c.reply.send(Ok(true));
            self.metrics.attempt_ended(AttemptOutcome::Committed);
            self.metrics.commit_answered(c.asked.elapsed());
        }
        for sweep in reopen {
            self.open_live(&sweep);
        }
        self.apply(effects);
    }

    fn fail(&mut self, session: &str, attempt: u64, error: String) -> Result<bool, CommandError> {
        let worker = self.workers.get(session).map_or_else(|_| "a gone worker".to_string(), |(_, w)| w.id.clone());
        let (retry, effects) = self.table.fail(session, attempt, clip(error), &worker)?;
        self.apply(effects);
        Ok(retry)
    }

    /// Attempts a worker leased and never started: each job current with it is queued
    /// again, first, with the attempt uncounted.
    fn release(&mut self, session: &str, attempts: Vec<u64>) -> Result<u32, CommandError> {
        self.workers.get(session)?;
        let mut released = 0;
        for (id, i) in self.table.releasable(session, &attempts)? {
            let job = self.table.job(i);
            let (sweep, key) = (job.sweep.clone(), job.key.to_string());
            self.store.release_attempt(id, (&sweep, &key)).map_err(internal)?;
            let effects = self.table.release(id, i);
            self.apply(effects);
            self.metrics.attempt_ended(AttemptOutcome::Released);
            released += 1;
        }
        Ok(released)
    }

    /// Records of the upload stream broke the schema: the attempt is void (its spool knows
    /// why), and its job queued again.
    fn refused(&mut self, attempt: u64) {
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
    fn expire_leases(&mut self, now: std::time::Instant) {
        let workers = &self.workers;
        let effects = self.table.expire(now, |session| workers.describe(session, "?"));
        let expired = effects.iter().filter(|e| matches!(e, Effect::EndAttempt { .. })).count();
        self.metrics.leases_expired.fetch_add(expired as u64, Relaxed);
        self.apply(effects);
    }

    /// Workers silent for `forget_worker_after` and holding nothing are dropped.
    fn forget_idle_workers(&mut self, now: std::time::Instant) {
        let Some(cutoff) = now.checked_sub(self.config.forget_worker_after) else { return };
        if !self.workers.any_idle_since(cutoff) {
            return;
        }
        let holding = self.table.sessions_holding(now);
        for worker in self.workers.forget_idle(cutoff, |session| holding.contains(session)) {
            info!(%worker, silent_for = ?self.config.forget_worker_after, "worker forgotten");
        }
    }

    /// Someone watches `sweep`: events are worth building. Once the last watcher has left,
    /// the channel (and its buffer) is dropped until someone watches again.
    fn watched(&mut self, sweep: &str) -> bool {
        if self.watchers.get(sweep).is_some_and(|tx| tx.receiver_count() == 0) {
            self.watchers.remove(sweep);
        }
        self.watchers.contains_key(sweep)
    }

    fn emit(&mut self, sweep: &str, event: SweepEvent) {
        if self.watched(sweep) {
            let _ = self.watchers[sweep].send(event);
        }
    }

    /// Announce a sweep that has nothing queued or running, once.
    fn check_finished(&mut self, id: &str) {
        let Some(status) = self.sweeps.check_finished(id, &self.table) else { return };
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
        });
        self.sweeps.opened_live(id, generation, n_cells);
    }

    /// The cells of a sweep with their numbers of jobs and of settled jobs.
    fn cells_of(&self, id: &str) -> Vec<(Cell, usize, usize)> {
        let settled = |j: &Job| matches!(j.state, JobState::Done | JobState::Failed | JobState::Cancelled);
        // Counted by template first, by its number.
        let mut by_template: Vec<(Option<&Template>, usize, usize)> = vec![(None, 0, 0); self.templates.len()];
        for &i in self.sweeps.jobs(id) {
            let job = self.table.job(i);
            let counts = &mut by_template[job.template.id];
            counts.0 = Some(&job.template);
            counts.1 += 1;
            counts.2 += usize::from(settled(job));
        }
        let cells = by_template.into_iter().filter_map(|(t, n, settled)| Some((&t?.cell, n, settled)));
        live::cell_counts(cells)
    }

    /// The live summaries of a sweep wrote its files: the store remembers it, unless a
    /// resubmission started newer ones.
    fn summarized(&mut self, id: &str, generation: u64) {
        if self.sweeps.summarized(id, generation) {
            if let Err(e) = self.store.set_summarized(id) {
                warn!(error = %format!("{e:#}"), "store error");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::replies::ErrorKind;
    use super::*;
    use crate::coordinator::replies::WorkerInfo;
    use crate::coordinator::store::SpecTemplate;
    use crate::coordinator::table::MAX_VOIDED;
    use crate::results::Provenance;
    use armada_core::{JobSpec, StepRecord, ValidJob};
    use polars::prelude::{ParquetReader, SerReader};

    fn job(seed: u64) -> ValidJob {
        let mut spec = JobSpec::new("testkit", "constant", "echo");
        spec.seed = seed;
        spec.horizon = 2;
        crate::registry().validate(&spec).unwrap()
    }

    fn records(v: f64) -> Vec<StepRecord> {
        (0..3).map(|step| StepRecord { step, elapsed_ms: 0.0, values: vec![v + step as f64] }).collect()
    }

    async fn start(dir: &std::path::Path, lease_ttl: Duration) -> SchedulerHandle {
        start_with(dir, SchedulerConfig { lease_ttl, ..SchedulerConfig::default() })
    }

    /// A scheduler on `dir` with `config`, committing after a 5 ms linger.
    fn start_with(dir: &std::path::Path, config: SchedulerConfig) -> SchedulerHandle {
        let commit = CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() };
        let config = SchedulerConfig { commit, ..config };
        Scheduler::start(
            Arc::new(Catalog::new(crate::registry())),
            Store::open(dir).unwrap(),
            dir.to_path_buf(),
            config,
        )
        .unwrap()
    }

    fn registration(families: &[&str]) -> Registration {
        Registration {
            name: "test".into(),
            slots: 1,
            version: env!("CARGO_PKG_VERSION").to_string(),
            families: families.iter().map(|f| f.to_string()).collect(),
            build: crate::registry().digest(),
            declarations: vec![],
            host: "test-host".into(),
            software: "test".into(),
            processor: "test-processor".into(),
        }
    }

    /// Register a testkit worker; its session credential.
    async fn register(s: &SchedulerHandle) -> String {
        let registration = registration(&["testkit"]);
        s.call(|reply| Command::Register { registration, reply }).await.unwrap().session
    }

    async fn lease(s: &SchedulerHandle, session: &str) -> Vec<Lease> {
        let session = session.to_string();
        s.call(|reply| Command::Lease { session, max_jobs: 8, reply }).await.unwrap().leases
    }

    async fn upload_and_complete(s: &SchedulerHandle, session: &str, attempt: u64, v: f64) -> Result<bool, ErrorKind> {
        upload_and_complete_records(s, session, attempt, &records(v)).await
    }

    async fn upload_and_complete_records(
        s: &SchedulerHandle,
        session: &str,
        attempt: u64,
        records: &[StepRecord],
    ) -> Result<bool, ErrorKind> {
        match s.append(attempt, session, records) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::InvalidArgument => {}
            Err(e) => return Err(e.kind()),
        }
        let (session, n_records) = (session.to_string(), records.len() as u32);
        s.call(|reply| Command::Complete { session, attempt, n_records, reply }).await.map_err(|e| e.kind())
    }

    async fn status(s: &SchedulerHandle) -> SweepStatus {
        s.call(|reply| Command::Status { sweep: "t".into(), failures: FailurePage::default(), reply }).await.unwrap()
    }

    /// Leases, expiry and the first-commit rule, both ways round. Time is paused: it moves
    /// only when every task waits, so the leases expire exactly when the test says.
    #[tokio::test(start_paused = true)]
    async fn an_expired_attempt_is_requeued_and_the_first_commit_wins() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_secs(10)).await;
        let submitted = s
            .call(|reply| Command::Submit {
                submission: Submission::new("t".into(), "testkit".into(), vec![job(0), job(1)]),
                reply,
            })
            .await
            .unwrap();
        assert_eq!((submitted.n_jobs, submitted.n_added, submitted.n_already_done), (2, 2, 0));
        let (a, b) = (register(&s).await, register(&s).await);
        let first = lease(&s, &a).await;
        assert_eq!(first.len(), 2);
        assert!(lease(&s, &b).await.is_empty(), "nothing left to lease");
        // A stops heartbeating: both leases expire and the jobs are queued for attempt 2.
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(status(&s).await.n_queued, 2);
        let second = lease(&s, &b).await;
        assert_eq!(second.len(), 2);
        assert!(second.iter().all(|l| l.attempt == 2));
        let job0 = |ls: &[Lease]| ls.iter().find(|l| l.spec.seed == 0).unwrap().attempt_id;
        let job1 = |ls: &[Lease]| ls.iter().find(|l| l.spec.seed == 1).unwrap().attempt_id;
        // Job 0: the new attempt commits first; the late one is dropped.
        assert_eq!(upload_and_complete(&s, &b, job0(&second), 10.0).await, Ok(true));
        assert_eq!(upload_and_complete(&s, &a, job0(&first), 20.0).await, Err(ErrorKind::NotFound), "dropped");
        // Job 1: the expired attempt commits first (nobody had); the live one is told to stop.
        assert_eq!(upload_and_complete(&s, &a, job1(&first), 30.0).await, Ok(true));
        let hb = s
            .call(|reply| Command::Heartbeat { session: b.clone(), attempts: vec![job1(&second)], reply })
            .await
            .unwrap();
        assert_eq!(hb, vec![job1(&second)]);
        assert_eq!(upload_and_complete(&s, &b, job1(&second), 40.0).await, Err(ErrorKind::NotFound));
        let st = status(&s).await;
        assert_eq!((st.n_done, st.n_queued, st.n_running, st.n_failed), (2, 0, 0, 0));
        // Exactly the winners' records are on disk.
        let sweep_dir = dir.path().join("t");
        let first_values = |key: &armada_core::JobKey| {
            let jobs = results::stored_jobs(&sweep_dir, None).unwrap();
            let stored = jobs.iter().find(|j| j.key == key.0).expect("the job is in a part");
            let df = results::read_jobs(&[stored]).unwrap().remove(0);
            df.column("value").unwrap().f64().unwrap().get(0).unwrap()
        };
        assert_eq!(first_values(&job(0).key), 10.0);
        assert_eq!(first_values(&job(1).key), 30.0);
    }

    /// A lease lives `lease_ttl` after its lease or its last heartbeat, and no longer (the
    /// scheduler looks every 100 ms): heartbeats keep a job running for a virtual hour;
    /// without them it is queued again between ttl and ttl + 100 ms, as attempt 2.
    #[tokio::test(start_paused = true)]
    async fn a_lease_lives_its_ttl_after_the_last_heartbeat() {
        let dir = tempfile::tempdir().unwrap();
        let ttl = Duration::from_secs(10);
        let s = start(dir.path(), ttl).await;
        submit(&s, vec![job(0)]).await;
        let w = register(&s).await;
        let id = lease(&s, &w).await[0].attempt_id;
        let heartbeat = || {
            let (s, session) = (s.clone(), w.clone());
            async move { s.call(|reply| Command::Heartbeat { session, attempts: vec![id], reply }).await.unwrap() }
        };
        for _ in 0..360 {
            tokio::time::sleep(ttl - Duration::from_millis(150)).await;
            assert!(heartbeat().await.is_empty(), "renewed, not abandoned");
        }
        assert_eq!(status(&s).await.n_running, 1);
        tokio::time::sleep(ttl - Duration::from_millis(50)).await;
        assert_eq!(status(&s).await.n_running, 1, "{:?} before its deadline", Duration::from_millis(50));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let st = status(&s).await;
        assert_eq!((st.n_running, st.n_queued), (0, 1), "expired");
        // Its late heartbeat renews nothing: the job is queued and the attempt may still
        // commit first, so it is not told to abandon either.
        assert!(heartbeat().await.is_empty());
        let again = lease(&s, &w).await;
        assert_eq!((again[0].attempt, again[0].spec.seed), (2, 0));
        assert_eq!(heartbeat().await, Vec::<u64>::new(), "superseded, not settled");
    }

    /// A part that cannot be written fails the commit: the job is queued again, nothing is
    /// marked done, and the next attempt commits once the disk allows it.
    #[tokio::test]
    async fn a_failed_part_write_requeues_the_job_and_a_later_attempt_commits() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        s.call(|reply| Command::Submit {
            submission: Submission::new("t".into(), "testkit".into(), vec![job(0)]),
            reply,
        })
        .await
        .unwrap();
        // A file where the trajectories directory should be.
        let sweep_dir = dir.path().join("t");
        std::fs::create_dir_all(&sweep_dir).unwrap();
        std::fs::write(sweep_dir.join("trajectories"), b"in the way").unwrap();
        let w = register(&s).await;
        let first = lease(&s, &w).await;
        assert_eq!(upload_and_complete(&s, &w, first[0].attempt_id, 1.0).await, Err(ErrorKind::Internal));
        let st = status(&s).await;
        assert_eq!((st.n_done, st.n_queued, st.n_running), (0, 1, 0));
        std::fs::remove_file(sweep_dir.join("trajectories")).unwrap();
        let second = lease(&s, &w).await;
        assert_eq!(second[0].attempt, 2);
        assert_eq!(upload_and_complete(&s, &w, second[0].attempt_id, 2.0).await, Ok(true));
        assert_eq!(status(&s).await.n_done, 1);
        let stored = results::stored_jobs(&sweep_dir, None).unwrap();
        assert_eq!(stored.len(), 1);
        let df = results::read_jobs(&[&stored[0]]).unwrap().remove(0);
        assert_eq!(df.column("value").unwrap().f64().unwrap().get(0), Some(2.0), "the second attempt's records");
    }

    /// A part written just before a crash, not yet recorded in the store, marks its job
    /// done at the next start, and is recorded then.
    #[tokio::test]
    async fn a_part_the_store_does_not_know_marks_its_jobs_done_at_start() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            let jobs = vec![job(0), job(1)];
            s.call(|reply| Command::Submit { submission: Submission::new("t".into(), "testkit".into(), jobs), reply })
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let metrics = crate::registry().family("testkit").unwrap().metrics();
        results::write_shard(&dir.path().join("t"), &job(1), metrics, &records(5.0)).unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let st = status(&s).await;
        assert_eq!((st.n_done, st.n_queued), (1, 1));
        let w = register(&s).await;
        let leases = lease(&s, &w).await;
        assert_eq!(leases.iter().map(|l| l.spec.seed).collect::<Vec<_>>(), vec![0]);
        drop(s);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.parts("t").unwrap().len(), 1, "recorded, so the next start does not read it again");
    }

    /// The summary files are written when the last job commits, and the store remembers
    /// it: a restart leaves them alone, unless they are gone, when it writes them again.
    #[tokio::test]
    async fn summaries_are_written_with_the_last_commit_and_rebuilt_at_start_only_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        let final_file = dir.path().join("t").join(results::FINAL_FILE);
        let written = {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            let jobs = vec![job(0), job(1)];
            s.call(|reply| Command::Submit { submission: Submission::new("t".into(), "testkit".into(), jobs), reply })
                .await
                .unwrap();
            let w = register(&s).await;
            for l in lease(&s, &w).await {
                assert_eq!(upload_and_complete(&s, &w, l.attempt_id, l.spec.seed as f64).await, Ok(true));
            }
            // The live summaries exist until their files are written.
            if let Some(entry) = s.live_summaries("t") {
                assert_eq!(entry.written().await, Ok(true));
            }
            assert!(final_file.is_file());
            std::fs::read(&final_file).unwrap()
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(Store::open(dir.path()).unwrap().sweeps().unwrap()[0].summarized);
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            assert!(s.live_summaries("t").is_none(), "finished and summarized: nothing to redo");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::remove_file(&final_file).unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let entry = s.live_summaries("t").expect("its summaries are rebuilt");
        assert_eq!(entry.written().await, Ok(true));
        assert!(std::fs::read(&final_file).unwrap() == written);
    }

    async fn submit(s: &SchedulerHandle, jobs: Vec<ValidJob>) {
        s.call(|reply| Command::Submit { submission: Submission::new("t".into(), "testkit".into(), jobs), reply })
            .await
            .unwrap();
    }

    /// Every call about an attempt names the session that leased it; another session's
    /// upload, commit, fail or heartbeat is PERMISSION_DENIED and changes nothing.
    #[tokio::test]
    async fn another_session_cannot_upload_commit_fail_or_renew_an_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, vec![job(0)]).await;
        let (a, b) = (register(&s).await, register(&s).await);
        assert_ne!(a, b);
        let id = lease(&s, &a).await[0].attempt_id;
        let denied = ErrorKind::PermissionDenied;
        assert_eq!(s.append(id, &b, &records(9.0)).unwrap_err().kind(), denied);
        assert_eq!(upload_and_complete(&s, &b, id, 9.0).await, Err(denied));
        let (session, error) = (b.clone(), "forged".to_string());
        let failed = s.call(|reply| Command::Fail { session, attempt: id, error, reply }).await;
        assert_eq!(failed.unwrap_err().kind(), denied);
        let session = b.clone();
        let renewed = s.call(|reply| Command::Heartbeat { session, attempts: vec![id], reply }).await;
        assert_eq!(renewed.unwrap_err().kind(), denied);
        let unknown = s.call(|reply| Command::Lease { session: "nope".into(), max_jobs: 1, reply }).await;
        assert_eq!(unknown.unwrap_err().kind(), ErrorKind::NotFound);
        let st = status(&s).await;
        assert_eq!((st.n_running, st.n_done, st.n_failed), (1, 0, 0), "nothing changed");
        assert_eq!(upload_and_complete(&s, &a, id, 1.0).await, Ok(true));
    }

    /// A draining worker hands back jobs it leased ahead: they are queued again, first,
    /// and their next attempt is numbered as if the lease had not happened; another
    /// session cannot release them, and a finished attempt is skipped.
    #[tokio::test]
    async fn released_attempts_requeue_their_jobs_uncounted() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, vec![job(0), job(1), job(2)]).await;
        let (a, b) = (register(&s).await, register(&s).await);
        let leases = lease(&s, &a).await;
        assert_eq!(leases.len(), 3);
        let ids: Vec<u64> = leases.iter().map(|l| l.attempt_id).collect();
        let release = |session: &str, attempts: Vec<u64>| {
            let session = session.to_string();
            s.call(move |reply| Command::Release { session, attempts, reply })
        };
        let refused = release(&b, vec![ids[1]]).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::PermissionDenied);
        assert_eq!(upload_and_complete(&s, &a, ids[0], 1.0).await, Ok(true));
        assert_eq!(release(&a, vec![ids[0], ids[1], ids[2]]).await.unwrap(), 2, "the committed one is skipped");
        let st = status(&s).await;
        assert_eq!((st.n_done, st.n_queued, st.n_running), (1, 2, 0));
        let again = lease(&s, &b).await;
        let mut seeds: Vec<u64> = again.iter().map(|l| l.spec.seed).collect();
        seeds.sort();
        assert_eq!(seeds, vec![1, 2]);
        assert!(again.iter().all(|l| l.attempt == 1), "a released lease is not an attempt");
        drop(s);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let stored = Store::open(dir.path()).unwrap().jobs().unwrap();
        assert!(stored.iter().all(|j| j.attempts <= 1), "the store counts the same");
    }

    /// Records that break the schema, or a commit without the last steps, void the
    /// attempt: the job is queued again and the attempt does not count, until it has been
    /// voided MAX_VOIDED times.
    #[tokio::test]
    async fn records_that_break_the_schema_void_the_attempt_without_counting_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, vec![job(0)]).await;
        let w = register(&s).await;
        let bad = |steps: &[u32]| -> Vec<StepRecord> {
            steps.iter().map(|&step| StepRecord { step, elapsed_ms: 0.0, values: vec![1.0] }).collect()
        };
        // Steps out of order, then a trajectory without its last step (horizon 2: 0..=2).
        for records in [bad(&[0, 0, 1]), bad(&[0, 1])] {
            let l = lease(&s, &w).await;
            assert_eq!(l[0].attempt, 1, "a voided attempt does not count");
            let outcome = upload_and_complete_records(&s, &w, l[0].attempt_id, &records).await;
            assert_eq!(outcome, Err(ErrorKind::InvalidArgument));
            assert_eq!(status(&s).await.n_queued, 1);
        }
        // Through the upload stream: the service voids the attempt as the records arrive.
        let l = lease(&s, &w).await;
        assert!(s.append(l[0].attempt_id, &w, &bad(&[1])).is_err());
        s.refused(l[0].attempt_id).await.unwrap();
        assert_eq!(status(&s).await.n_queued, 1);
        // Voided again and again: the job fails, with the reason.
        for _ in 3..MAX_VOIDED {
            let l = lease(&s, &w).await;
            assert_eq!(
                upload_and_complete_records(&s, &w, l[0].attempt_id, &bad(&[5])).await,
                Err(ErrorKind::InvalidArgument)
            );
        }
        let st = status(&s).await;
        assert_eq!((st.n_queued, st.n_failed), (0, 1));
        let error = &st.failures[0].error;
        assert!(error.contains("step 5 is past the horizon 2") && error.contains("refused 10 times"), "{error}");
    }

    /// A worker is leased only jobs of the families it registered; registration checks
    /// the build digest and the families.
    #[tokio::test]
    async fn workers_get_only_their_families_and_registration_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, vec![job(0), job(1)]).await;
        let registration_lse = registration(&["lse"]);
        let lse_only =
            s.call(|reply| Command::Register { registration: registration_lse, reply }).await.unwrap().session;
        assert!(lease(&s, &lse_only).await.is_empty());
        let w = register(&s).await;
        assert_eq!(lease(&s, &w).await.len(), 2);
        let refused = |registration: Registration| {
            let s = s.clone();
            async move { s.call(|reply| Command::Register { registration, reply }).await.unwrap_err() }
        };
        let e = refused(Registration { build: "0123".into(), ..registration(&["testkit"]) }).await;
        assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
        assert!(e.message().starts_with("build: the worker's families digest to `0123`"), "{}", e.message());
        let e = refused(registration(&[])).await;
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::InvalidArgument, "families: name the families this worker runs")
        );
        let e = refused(registration(&["testkit", "nope"])).await;
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("families[1]: unknown family `nope`"), "{}", e.message());
    }

    /// A declared family's jobs go only to sessions that declared that very digest; a
    /// worker cannot run a declared family without declaring it; the declaration and the
    /// sweep's jobs, keyed by its digest, survive a restart.
    #[tokio::test]
    async fn declared_families_are_leased_by_digest_and_survive_a_restart() {
        use crate::coordinator::declared;
        let dir = tempfile::tempdir().unwrap();
        let catalog = || Arc::new(Catalog::new(crate::registry()));
        let declaration = |version: u32| {
            let mut info = declared::family_info(crate::registry().family("testkit").unwrap());
            (info.name, info.version) = ("mybo".into(), version);
            declared::check(info, &crate::registry()).unwrap()
        };
        let config = SchedulerConfig {
            commit: CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() },
            ..SchedulerConfig::default()
        };
        let first = catalog();
        let s = Scheduler::start(first.clone(), Store::open(dir.path()).unwrap(), dir.path().into(), config).unwrap();
        let v1 = declaration(1);
        let declaration_v1 = v1.clone();
        let declared = s.call(|reply| Command::Declare { declaration: declaration_v1, reply }).await.unwrap();
        assert!(declared.created);
        let reference = format!("mybo+{}", declared.digest);
        let jobs: Vec<ValidJob> = (0..2)
            .map(|seed| {
                let mut spec = JobSpec::new("mybo", "constant", "echo");
                (spec.seed, spec.horizon) = (seed, 2);
                first.get().validate(&spec).unwrap()
            })
            .collect();
        assert_ne!(jobs[0].key, job(0).key, "the digest salts the key");
        let keys: BTreeSet<String> = jobs.iter().map(|j| j.key.0.clone()).collect();
        let submission = Submission::new("mine".into(), reference.clone(), jobs);
        s.call(|reply| Command::Submit { submission, reply }).await.unwrap();
        let with = |families: &[&str], declarations: Vec<declared::Checked>| Registration {
            declarations,
            build: String::new(),
            version: String::new(),
            ..registration(families)
        };
        let register_as = |registration: Registration| {
            let s = s.clone();
            async move { s.call(|reply| Command::Register { registration, reply }).await }
        };
        // Built-in workers and workers of another version of the family get none of them.
        let builtin = register(&s).await;
        assert!(lease(&s, &builtin).await.is_empty());
        let v2 = register_as(with(&["mybo"], vec![declaration(2)])).await.unwrap().session;
        assert!(lease(&s, &v2).await.is_empty());
        // Naming it without declaring it is refused; a worker of declared families only
        // needs neither armada's version nor its build.
        let e = register_as(with(&["mybo"], vec![])).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("families[0]: `mybo` is a declared family"), "{}", e.message());
        let mut changed = v1.clone();
        changed.info.doc = "another doc".into();
        let changed = declared::check(changed.info, &crate::registry()).unwrap();
        let e = register_as(with(&["mybo"], vec![changed])).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
        assert!(
            e.message().starts_with("declarations[0]: family `mybo` version 1 is declared already"),
            "{}",
            e.message()
        );
        let mine = register_as(with(&["mybo"], vec![v1.clone()])).await.unwrap().session;
        let leased = lease(&s, &mine).await;
        assert_eq!(leased.iter().map(|l| l.job_key.clone()).collect::<BTreeSet<_>>(), keys);
        // Its trajectory records who produced it, under which declaration.
        assert_eq!(upload_and_complete(&s, &mine, leased[0].attempt_id, 1.0).await, Ok(true));
        let parts = results::part_files(&dir.path().join("mine")).unwrap();
        let provenance = results::read_provenance(&parts[0]).unwrap();
        let expected = Provenance {
            worker: "w3".into(),
            name: "test".into(),
            host: "test-host".into(),
            software: "test".into(),
            processor: "test-processor".into(),
            attempt_id: leased[0].attempt_id,
            family_digest: declared.digest.clone(),
        };
        assert_eq!(provenance.into_iter().collect::<Vec<_>>(), vec![(leased[0].job_key.clone(), expected)]);
        let keys: BTreeSet<String> = keys.into_iter().filter(|k| *k != leased[0].job_key).collect();
        // Restart on the same store with a catalog of the built-in families only.
        drop(s);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let second = catalog();
        let s = Scheduler::start(second.clone(), Store::open(dir.path()).unwrap(), dir.path().into(), config).unwrap();
        assert_eq!(second.get().resolve(&reference).unwrap().version(), 1);
        let again = s.call(|reply| Command::Register { registration: with(&["mybo"], vec![v1]), reply }).await;
        let leased = lease(&s, &again.unwrap().session).await;
        assert_eq!(leased.iter().map(|l| l.job_key.clone()).collect::<BTreeSet<_>>(), keys, "queued again, same keys");
    }

    /// A worker silent for `forget_worker_after` is dropped from the list once it holds no
    /// lease, and must register again; one that keeps heartbeating stays, and so does a
    /// silent one while it still holds a lease.
    #[tokio::test(start_paused = true)]
    async fn silent_workers_holding_nothing_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let config = SchedulerConfig {
            lease_ttl: Duration::from_secs(100),
            forget_worker_after: Duration::from_secs(30),
            ..SchedulerConfig::default()
        };
        let s = start_with(dir.path(), config);
        submit(&s, vec![job(0)]).await;
        let (holder, idle, live) = (register(&s).await, register(&s).await, register(&s).await);
        assert_eq!(lease(&s, &holder).await.len(), 1);
        let heartbeat = |session: &str| {
            let (s, session) = (s.clone(), session.to_string());
            async move { s.call(|reply| Command::Heartbeat { session, attempts: vec![], reply }).await }
        };
        let listed = || async { s.call(|reply| Command::Workers { reply }).await.unwrap() };
        let ids = |workers: Vec<WorkerInfo>| workers.into_iter().map(|w| w.id).collect::<Vec<_>>();
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            heartbeat(&live).await.unwrap();
        }
        // 40 s on: `idle` is gone, `holder` still holds its lease (100 s), `live` spoke.
        assert_eq!(ids(listed().await), ["w1", "w3"]);
        let e = heartbeat(&idle).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("register again"), "{}", e.message());
        // The lease expires at 100 s; 30 s later the holder, silent since 0 s, is gone too.
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            heartbeat(&live).await.unwrap();
        }
        assert_eq!(ids(listed().await), ["w3"]);
        assert_eq!(status(&s).await.n_queued, 1, "the expired lease's job is queued again");
        // A forgotten worker that comes back registers under a new id.
        let back = register(&s).await;
        assert_eq!(lease(&s, &back).await.len(), 1);
        assert_eq!(ids(listed().await), ["w3", "w4"]);
    }

    /// A status lists a page of the failures (100 by default) and says how many it left
    /// out; an error a worker reports is clipped to MAX_ERROR_BYTES.
    #[tokio::test]
    async fn statuses_page_their_failures_and_clip_long_errors() {
        let dir = tempfile::tempdir().unwrap();
        let s = start_with(dir.path(), SchedulerConfig { max_attempts: 1, ..SchedulerConfig::default() });
        submit(&s, (0..150).map(job).collect()).await;
        let w = register(&s).await;
        let long = "é".repeat(MAX_ERROR_BYTES); // 2 bytes each
        loop {
            let session = w.clone();
            let leases = s.call(|reply| Command::Lease { session, max_jobs: 64, reply }).await.unwrap().leases;
            if leases.is_empty() {
                break;
            }
            for l in leases {
                let (session, error) = (w.clone(), long.clone());
                s.call(|reply| Command::Fail { session, attempt: l.attempt_id, error, reply }).await.unwrap();
            }
        }
        let st = status(&s).await;
        assert_eq!((st.n_failed, st.failures.len(), st.n_failures_omitted), (150, 100, 50));
        let error = &st.failures[0].error;
        assert!(error.len() <= MAX_ERROR_BYTES + 40, "{}", error.len());
        assert!(
            error.ends_with(&format!(" ... ({} more bytes)", 2 * MAX_ERROR_BYTES - MAX_ERROR_BYTES)),
            "{}",
            &error[error.len() - 40..]
        );
        let failures = FailurePage { offset: 120, limit: 100 };
        let page = s.call(|reply| Command::Status { sweep: "t".into(), failures, reply }).await.unwrap();
        assert_eq!((page.failures.len(), page.n_failures_omitted), (30, 120));
        assert_eq!(page.failures[0].job_key, job(120).key.0, "in job order");
        // A list of every sweep carries counts, not failures: its size does not grow with them.
        let listed = s.call(|reply| Command::List { reply }).await.unwrap();
        assert_eq!((listed[0].n_failed, listed[0].failures.len(), listed[0].n_failures_omitted), (150, 0, 150));
    }

    /// Temp files a killed writer left in a sweep's directories are removed at start-up;
    /// other files stay.
    #[tokio::test]
    async fn leftover_temp_files_are_removed_at_start() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            submit(&s, vec![job(0)]).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sweep_dir = dir.path().join("t");
        let trajectories = results::trajectories_dir(&sweep_dir);
        std::fs::create_dir_all(&trajectories).unwrap();
        let temp = [sweep_dir.join(".summary.parquet.77.0.tmp"), trajectories.join(".part-ab.parquet.77.1.tmp")];
        for path in &temp {
            std::fs::write(path, b"half a file").unwrap();
        }
        std::fs::write(sweep_dir.join("notes.txt"), b"mine").unwrap();
        let _s = start(dir.path(), Duration::from_secs(60)).await;
        assert!(temp.iter().all(|p| !p.exists()));
        assert!(sweep_dir.join("notes.txt").exists());
    }

    /// A finished sweep can be deleted (not a running one): it is gone from the scheduler
    /// and the store, and its name can be used afresh.
    #[tokio::test]
    async fn a_settled_sweep_is_deleted_from_the_store_and_a_running_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            submit(&s, vec![job(0), job(1)]).await;
            let refused = s.call(|reply| Command::Delete { sweep: "t".into(), reply }).await.unwrap_err();
            assert_eq!(refused.kind(), ErrorKind::FailedPrecondition);
            let w = register(&s).await;
            for l in lease(&s, &w).await {
                assert_eq!(upload_and_complete(&s, &w, l.attempt_id, 1.0).await, Ok(true));
            }
            let (sweep_dir, n_jobs) = s.call(|reply| Command::Delete { sweep: "t".into(), reply }).await.unwrap();
            assert_eq!((sweep_dir, n_jobs), (dir.path().join("t"), 2));
            let gone = s.call(|reply| Command::Status { sweep: "t".into(), failures: FailurePage::default(), reply });
            assert_eq!(gone.await.unwrap_err().kind(), ErrorKind::NotFound);
            let missing = s.call(|reply| Command::Delete { sweep: "t".into(), reply }).await.unwrap_err();
            assert_eq!(missing.kind(), ErrorKind::NotFound);
            assert!(s.live_summaries("t").is_none());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let store = Store::open(dir.path()).unwrap();
        assert!(store.sweeps().unwrap().is_empty() && store.jobs().unwrap().is_empty());
        assert_eq!(store.max_attempt_id().unwrap(), 0, "its attempts are gone too");
        drop(store);
        // The same name again: a new sweep, whose jobs are found done on disk (results kept).
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let jobs = vec![job(0), job(1)];
        let again = s
            .call(|reply| Command::Submit { submission: Submission::new("t".into(), "testkit".into(), jobs), reply })
            .await
            .unwrap();
        assert_eq!((again.n_added, again.n_already_done), (2, 2));
    }

    /// The README's promise: a late result commits if no other attempt did, even when the
    /// job failed meanwhile because that attempt was its last; the sweep's summaries then
    /// include it.
    #[tokio::test(start_paused = true)]
    async fn a_late_result_on_the_last_attempt_commits_when_nothing_else_did() {
        let dir = tempfile::tempdir().unwrap();
        let config =
            SchedulerConfig { lease_ttl: Duration::from_secs(10), max_attempts: 1, ..SchedulerConfig::default() };
        let s = start_with(dir.path(), config);
        submit(&s, vec![job(0)]).await;
        let w = register(&s).await;
        let id = lease(&s, &w).await[0].attempt_id;
        tokio::time::sleep(Duration::from_secs(11)).await;
        let st = status(&s).await;
        assert_eq!((st.n_failed, st.n_running), (1, 0), "its only attempt expired");
        assert!(st.failures[0].error.contains("lease expired"));
        assert_eq!(upload_and_complete(&s, &w, id, 4.0).await, Ok(true));
        let st = status(&s).await;
        assert_eq!((st.n_done, st.n_failed), (1, 0));
        if let Some(entry) = s.live_summaries("t") {
            assert_eq!(entry.written().await, Ok(true));
        }
        let summary = dir.path().join("t").join(results::SUMMARY_FILE);
        let rows = ParquetReader::new(std::fs::File::open(&summary).unwrap()).finish().unwrap();
        let n: Vec<Option<i64>> = rows.column("n").unwrap().i64().unwrap().iter().collect();
        assert_eq!(n, vec![Some(1); 3], "the revived job is in the summaries");
    }

    /// A large sweep is stored a chunk at a time, answering other commands in between:
    /// heartbeats sent while it is stored are answered before it is, and keep their lease.
    #[tokio::test]
    async fn heartbeats_are_answered_while_a_large_sweep_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let s = start(dir.path(), Duration::from_millis(400)).await;
        submit(&s, vec![job(0)]).await;
        let w = register(&s).await;
        let id = lease(&s, &w).await[0].attempt_id;
        let jobs: Vec<ValidJob> = (1..60_001).map(job).collect();
        let submission = Submission::new("big".into(), "testkit".into(), jobs);
        let mut submitted = s.send(|reply| Command::Submit { submission, reply }).await.unwrap();
        let mut answered_meanwhile = 0;
        while submitted.is_pending() {
            let session = w.clone();
            let renewed = s.call(|reply| Command::Heartbeat { session, attempts: vec![id], reply }).await.unwrap();
            assert!(renewed.is_empty());
            answered_meanwhile += usize::from(submitted.is_pending());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(answered_meanwhile > 0, "no heartbeat was answered while the sweep was stored");
        assert_eq!(status(&s).await.n_running, 1);
        assert_eq!(upload_and_complete(&s, &w, id, 1.0).await, Ok(true));
        let big = s.call(|reply| Command::Status { sweep: "big".into(), failures: FailurePage::default(), reply });
        assert_eq!(big.await.unwrap().n_queued, 60_000);
    }

    /// A resubmission larger than a store chunk keeps the jobs it shares with the sweep,
    /// adds the others, drops the ones it lacks and queues cancelled jobs again; the store
    /// holds exactly that, in run order, after a restart.
    #[tokio::test]
    async fn a_resubmission_adds_drops_and_requeues_and_the_store_agrees() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = |range: std::ops::Range<u64>| range.map(job).collect::<Vec<_>>();
        async fn resubmit(s: &SchedulerHandle, jobs: Vec<ValidJob>) -> Result<Submitted, CommandError> {
            let submission = Submission::new("t".into(), "testkit".into(), jobs);
            s.call(|reply| Command::Submit { submission, reply }).await
        }
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            let first = resubmit(&s, seeds(0..5000)).await.unwrap();
            assert_eq!((first.n_jobs, first.n_added), (5000, 5000));
            let cancelled = s.call(|reply| Command::Cancel { sweep: "t".into(), reply }).await.unwrap();
            assert_eq!(cancelled.n_cancelled, 5000);
            let again = resubmit(&s, seeds(2000..7000)).await.unwrap();
            assert_eq!((again.n_jobs, again.n_added, again.n_already_done), (5000, 2000, 0));
            let st = status(&s).await;
            assert_eq!((st.n_queued, st.n_cancelled), (5000, 0));
            let w = register(&s).await;
            let first_seeds: Vec<u64> = lease(&s, &w).await.iter().map(|l| l.spec.seed).collect();
            assert_eq!(first_seeds, (2000..2008).collect::<Vec<_>>(), "kept jobs first, in run order");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let store = Store::open(dir.path()).unwrap();
        let stored: Vec<(u64, String)> =
            store.jobs().unwrap().into_iter().map(|j| (SpecTemplate::decode(&j.spec).unwrap().1, j.key)).collect();
        let expected: Vec<(u64, String)> = seeds(2000..7000).into_iter().map(|j| (j.spec.seed, j.key.0)).collect();
        assert!(stored == expected, "the store holds the resubmitted jobs, in run order, each under its key");
        drop(store);
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let st = status(&s).await;
        assert_eq!((st.n_jobs, st.n_queued, st.n_running), (5000, 5000, 0), "the leased jobs are queued again");
    }

    /// A restarted scheduler finds the sweep, voids the running attempt and re-queues its job.
    #[tokio::test]
    async fn a_restart_requeues_running_jobs_and_keeps_done_ones() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            s.call(|reply| Command::Submit {
                submission: Submission::new("t".into(), "testkit".into(), vec![job(0), job(1)]),
                reply,
            })
            .await
            .unwrap();
            let w = register(&s).await;
            let leases = lease(&s, &w).await;
            assert_eq!(upload_and_complete(&s, &w, leases[0].attempt_id, 1.0).await, Ok(true));
            // leases[1] is running when this scheduler goes away, as if killed; the next opens its store.
        }
        // The dropped handle stops the actor, which closes (and unlocks) the store.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let st = status(&s).await;
        assert_eq!((st.n_done, st.n_queued, st.n_running), (1, 1, 0));
        let w = register(&s).await;
        let leases = lease(&s, &w).await;
        assert_eq!(leases.len(), 1);
        assert_eq!(leases[0].attempt, 2, "the voided attempt counts");
        // Attempt ids never repeat across restarts.
        assert!(leases[0].attempt_id > 2);
    }

    /// `armada run`'s coordinator runs its own sweep only, leaving other sweeps' queued jobs
    /// in the store untouched; a second coordinator cannot open a store that is in use.
    #[tokio::test]
    async fn an_embedded_coordinator_leases_only_submitted_sweeps_and_the_store_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let submit = |s: &SchedulerHandle, name: &str, jobs: Vec<ValidJob>| {
            let (s, name) = (s.clone(), name.to_string());
            async move {
                s.call(|reply| Command::Submit { submission: Submission::new(name, "testkit".into(), jobs), reply })
                    .await
                    .unwrap()
            }
        };
        {
            let s = start(dir.path(), Duration::from_secs(60)).await;
            submit(&s, "a", vec![job(0), job(1)]).await;
            // While this coordinator lives, nobody else opens its store.
            let err = Store::open(dir.path()).err().expect("the store is locked").to_string();
            assert!(err.contains("in use by another coordinator"), "{err}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let config = SchedulerConfig { only_submitted: true, ..SchedulerConfig::default() };
        let s = Scheduler::start(
            Arc::new(Catalog::new(crate::registry())),
            Store::open(dir.path()).unwrap(),
            dir.path().into(),
            config,
        )
        .unwrap();
        submit(&s, "b", vec![job(5)]).await;
        let w = register(&s).await;
        let leases = lease(&s, &w).await;
        assert_eq!(leases.iter().map(|l| l.sweep_id.as_str()).collect::<Vec<_>>(), vec!["b"]);
        // Sweep a is still there, queued; resubmitting it runs it.
        let st = s
            .call(|reply| Command::Status { sweep: "a".into(), failures: FailurePage::default(), reply })
            .await
            .unwrap();
        assert_eq!((st.n_queued, st.n_running), (2, 0));
        submit(&s, "a", vec![job(0), job(1)]).await;
        assert_eq!(lease(&s, &w).await.len(), 2);
    }

    /// The history the crash test kills at every write: two submissions, a commit, a failure,
    /// a release, another commit. True when every step was answered without an error.
    async fn crash_history(s: &SchedulerHandle) -> bool {
        let sweep = |name: &str, seeds: std::ops::Range<u64>| {
            Submission::new(name.into(), "testkit".into(), seeds.map(job).collect())
        };
        let mut ok = s.submit(sweep("a", 0..4)).await.is_ok();
        let Ok(registered) = s.register(registration(&["testkit"])).await else { return false };
        let session = registered.session;
        let leases = s.lease(session.clone(), 3).await.map(|l| l.leases).unwrap_or_default();
        ok &= leases.len() == 3;
        for (i, l) in leases.iter().enumerate() {
            ok &= match i {
                0 => upload_and_complete(s, &session, l.attempt_id, 1.0).await == Ok(true),
                1 => s.fail(session.clone(), l.attempt_id, "boom".into()).await.is_ok(),
                _ => s.release(session.clone(), vec![l.attempt_id]).await.is_ok(),
            };
        }
        ok &= s.submit(sweep("b", 10..13)).await.is_ok();
        let leases = s.lease(session.clone(), 1).await.map(|l| l.leases).unwrap_or_default();
        for l in &leases {
            ok &= upload_and_complete(s, &session, l.attempt_id, 2.0).await == Ok(true);
        }
        ok && leases.len() == 1
    }

    /// A coordinator killed between any two of its store writes (every later write refused,
    /// as if the process had stopped there), then started again on what it left: each
    /// submission is there whole or not at all, no trajectory the dead one wrote is run again
    /// (a part it did not live to record marks its jobs done), and once the new coordinator
    /// has run what is left, every job of a sweep is done, its trajectory in exactly one part.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_coordinator_killed_between_any_two_store_writes_recovers() {
        let expected: [(&str, std::ops::Range<u64>); 2] = [("a", 0..4), ("b", 10..13)];
        let commit = CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() };
        let config = SchedulerConfig { commit, ..SchedulerConfig::default() };
        let (mut crash_after, mut present) = (0, [0; 2]);
        loop {
            let dir = tempfile::tempdir().unwrap();
            let mut store = Store::open(dir.path()).unwrap();
            store.crash_after(crash_after);
            let catalog = Arc::new(Catalog::new(crate::registry()));
            let whole = match Scheduler::start(catalog.clone(), store, dir.path().to_path_buf(), config) {
                Ok(s) => crash_history(&s).await,
                Err(_) => false,
            };
            // The old actor stops, and unlocks its store, once its handles are gone.
            let mut reopened = Store::open(dir.path());
            for _ in 0..500 {
                if reopened.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                reopened = Store::open(dir.path());
            }
            let keys_in_parts = |name: &str| -> Vec<String> {
                let mut keys = Vec::new();
                for part in results::part_files(&dir.path().join(name)).unwrap() {
                    keys.extend(results::read_index(&part).unwrap().into_iter().map(|j| j.key));
                }
                keys.sort();
                keys
            };
            // What the dead coordinator left on disk is never run again.
            let left: BTreeSet<String> = expected.iter().flat_map(|(name, _)| keys_in_parts(name)).collect();
            let s = Scheduler::start(catalog, reopened.unwrap(), dir.path().to_path_buf(), config).unwrap();
            let session = register(&s).await;
            loop {
                let leases = lease(&s, &session).await;
                if leases.is_empty() {
                    break;
                }
                for l in leases {
                    assert!(!left.contains(&l.job_key), "crash after {crash_after} writes: {} ran again", l.job_key);
                    assert_eq!(upload_and_complete(&s, &session, l.attempt_id, 3.0).await, Ok(true));
                }
            }
            for (n, (name, seeds)) in expected.iter().enumerate() {
                let context = format!("crash after {crash_after} writes, sweep {name}");
                let Ok(st) = s.status(name.to_string(), FailurePage::default()).await else { continue };
                present[n] += 1;
                let n_jobs = seeds.clone().count() as u32;
                assert_eq!((st.n_jobs, st.n_done, st.n_failed), (n_jobs, n_jobs, 0), "{context}: whole and done");
                let in_parts = keys_in_parts(name);
                let mut keys: Vec<String> = seeds.clone().map(|seed| job(seed).key.to_string()).collect();
                keys.sort();
                assert_eq!(in_parts, keys, "{context}: each job in exactly one part");
            }
            drop(s);
            if whole {
                break;
            }
            crash_after += 1;
        }
        // The history made that many writes; each sweep was lost to an early crash and kept
        // after a later one.
        assert!(crash_after >= 10, "only {crash_after} writes: is the crash hook in place?");
        assert!(present.iter().all(|&p| p > 0 && p <= crash_after), "{present:?} of {}", crash_after + 1);
    }
}
