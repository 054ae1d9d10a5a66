//! A registered worker session as a state machine without I/O: events in (a lease
//! answered, a heartbeat due or answered, a task ended, a commit answered, a drain, the
//! connection lost, time passing), actions out (lease, start, heartbeat, cancel, commit,
//! release, drained, register again, exit). The worker's loop (`worker.rs`) performs the
//! actions and feeds back what comes of them; the Python SDK's worker
//! (`armada_sdk/session.py`) is the same machine, and `workers/session_cases.json`, a
//! table of histories with the actions each step must give, is run against both.
//!
//! Invariants, checked over random histories by the property test below:
//! - at most `slots` tasks run; a task is one job, or a batch of one sweep's short jobs;
//! - every attempt held is in exactly one phase: waiting (leased ahead), running, ready
//!   (finished, its commit not sent), committing; a heartbeat names every attempt held and
//!   says which have started;
//! - an attempt is started once (again only when a batch hands it back to run alone), is
//!   committed only after its job finished, and only once; released only while it waits;
//!   cancelled only while running, and once;
//! - nothing is leased while draining or while a lease is unanswered; drained is said once,
//!   when draining and nothing is held.

use armada_proto::ids::AttemptId;
use armada_proto::lease::ahead_per_slot;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

/// The most records a job of a batch keeps for its commit; a job with more stops, runs
/// again alone with its records streamed, and so do its sweep's later jobs on this worker.
pub const BATCH_JOB_RECORDS: usize = 4096;
/// Finished attempts are committed in batches: a batch is sent when it holds
/// [`COMMIT_BATCH`] attempts (or [`COMMIT_BATCH_VALUES`] inline metric values, to stay
/// well under gRPC's 4 MiB message limit), or [`COMMIT_BATCH_WAIT`] after its first
/// finished, or at once when no task runs (draining, the tail of a sweep).
pub const COMMIT_BATCH: usize = 256;
pub const COMMIT_BATCH_VALUES: usize = 256 * 1024;
pub const COMMIT_BATCH_WAIT: Duration = Duration::from_millis(20);
/// How long an idle worker lets the coordinator hold a lease that finds nothing, to answer
/// it as soon as jobs are queued: one request per this while idle, and a drain waits for it.
pub const IDLE_LEASE_WAIT_MS: u32 = 500;
/// Commits awaited at once; past this the worker leases nothing until some are answered.
/// It must cover what finishes during the coordinator's commit linger.
pub const MAX_PENDING_COMMITS: usize = 4096;

/// A job the coordinator leased: its attempt, its sweep, and what the worker runs (`J`:
/// the lease itself in the worker, nothing in the tests).
#[derive(Clone, Debug, PartialEq)]
pub struct Lease<J> {
    pub attempt: AttemptId,
    pub sweep: String,
    pub job: J,
}

/// What became of one job of a task.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<J> {
    /// It ran to its end; its commit carries `n_values` inline values (a record's step and
    /// time count as two).
    Ready { n_values: usize },
    /// It failed (reported), was cancelled, or the coordinator said its attempt is void.
    Ended,
    /// A job of a batch with more records than [`BATCH_JOB_RECORDS`]: handed back to run
    /// again alone, streamed.
    RunAgainAlone(J),
}

/// One job of an ended task, and how long it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Ran<J> {
    pub attempt: AttemptId,
    pub outcome: Outcome<J>,
    pub took: Duration,
}

/// What happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<J> {
    /// Time passed (a wake-up asked for by [`Session::wake_at`]).
    Wake,
    /// The coordinator answered a lease: these jobs, or none and when to ask again.
    Leased { leases: Vec<Lease<J>>, retry_after_ms: u32 },
    /// A heartbeat is due (the loop keeps the interval, with a phase of its own).
    HeartbeatDue,
    /// The coordinator answered a heartbeat: these attempts are void (cancelled, or their
    /// job no longer held by this session).
    HeartbeatAnswered { abandon: Vec<AttemptId> },
    /// A task ended: every job it ran.
    TaskEnded(Vec<Ran<J>>),
    /// The coordinator answered a commit batch: these attempts are settled.
    Committed(Vec<AttemptId>),
    /// Shut down: stop leasing, hand back what has not started, finish the rest.
    Drain,
    /// The connection failed, or the coordinator no longer knows the session.
    Lost,
}

/// What the loop must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action<J> {
    /// Ask for at most `max_jobs` jobs; the coordinator may hold the request `wait_ms`
    /// when it has none.
    Lease { max_jobs: usize, wait_ms: u32 },
    /// Run these jobs as one task on one slot: alone, or `batched` (one sweep's short jobs
    /// one after the other, each one's records kept for its commit).
    Start { jobs: Vec<Lease<J>>, batched: bool },
    /// Heartbeat every attempt held, saying which have started.
    Heartbeat { attempts: Vec<AttemptId>, started: Vec<AttemptId> },
    /// Stop these running jobs.
    Cancel(Vec<AttemptId>),
    /// Commit these finished attempts, as one request.
    Commit(Vec<AttemptId>),
    /// Hand these unstarted attempts back to the coordinator's queue.
    Release(Vec<AttemptId>),
    /// Every leased job finished and was committed: the session ends.
    Drained,
    /// The session is gone: register a new one (its jobs are the coordinator's again).
    Register,
    /// The session is gone while draining: exit (the leases held expire).
    Exit,
}

/// How long each sweep's jobs take on this worker: a running mean per sweep (the last
/// eight jobs weigh most). Leasing ahead follows the sweep being leased, so that after a
/// sweep of short jobs the long jobs of the next are not leased many per slot, starving
/// the other workers; a sweep not measured yet counts as long.
#[derive(Default)]
pub struct JobLengths {
    mean: HashMap<String, Duration>,
    /// Sweeps one of whose jobs had more records than a batch keeps ([`BATCH_JOB_RECORDS`]):
    /// their jobs always stream, never run in batches.
    streaming: HashSet<String>,
}

impl JobLengths {
    /// Sweeps remembered at most (the oldest measures are dropped past it).
    const MAX_SWEEPS: usize = 1024;

    /// A job of `sweep` ran to its end in `took`.
    pub fn record(&mut self, sweep: &str, took: Duration) {
        if !self.mean.contains_key(sweep) && self.mean.len() >= Self::MAX_SWEEPS {
            self.mean.clear();
            self.streaming.clear();
        }
        let mean = self.mean.entry(sweep.to_string()).or_insert(took);
        *mean = (*mean * 7 + took) / 8;
    }

    /// A job of `sweep` had more records than [`BATCH_JOB_RECORDS`].
    pub fn record_streaming(&mut self, sweep: &str) {
        self.streaming.insert(sweep.to_string());
    }

    /// How many of `sweep`'s jobs a slot holds leased ahead (none until one is measured).
    fn ahead(&self, sweep: &str) -> usize {
        self.mean.get(sweep).map_or(0, |&mean| ahead_per_slot(mean))
    }

    /// How many of `sweep`'s jobs to run as one batch, their records kept for their
    /// commits: what a slot holds ahead, when they are short and their records fit a
    /// commit. `None`: one at a time, records streamed (a long job, or one not yet measured).
    pub fn batch(&self, sweep: &str) -> Option<usize> {
        match self.ahead(sweep) {
            0 => None,
            _ if self.streaming.contains(sweep) => None,
            n => Some(n.min(armada_proto::lease::BATCH_MOST)),
        }
    }

    /// Jobs of `sweep` worth holding on `slots` slots: one per slot, and what each holds
    /// ahead.
    pub fn depth(&self, sweep: &str, slots: usize) -> usize {
        slots * (1 + self.ahead(sweep))
    }
}

/// Where a held attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Leased ahead, in the backlog.
    Waiting,
    /// In a task; `cancelled` once the coordinator said stop.
    Running { cancelled: bool },
    /// Finished, its commit not sent yet.
    Ready,
    /// Its commit sent, not answered yet.
    Committing,
}

struct Held<J> {
    sweep: String,
    phase: Phase,
    /// The job, while it waits for a slot.
    job: Option<J>,
}

/// One registered session's state. Time is what the loop says it is: `now`, measured
/// from any fixed instant (the session's start).
pub struct Session<J> {
    slots: usize,
    held: BTreeMap<AttemptId, Held<J>>,
    /// The waiting attempts, in the order they start.
    backlog: VecDeque<AttemptId>,
    /// Tasks running (a batch counts once).
    tasks: usize,
    lengths: JobLengths,
    /// The sweep whose jobs were leased last: the next lease most likely brings more of
    /// it, so it is sized for that sweep.
    leasing: String,
    /// Finished attempts whose commit is not sent, with their inline values, in order.
    ready: Vec<(AttemptId, usize)>,
    /// When the first of `ready` finished.
    ready_since: Duration,
    committing: usize,
    next_lease: Duration,
    lease_unanswered: bool,
    draining: bool,
    /// Drained or gone: no more actions.
    over: bool,
}

impl<J> Session<J> {
    /// A session of `slots` slots (at least one), draining from the start when the worker
    /// was told to shut down before it registered.
    pub fn new(slots: usize, draining: bool) -> Session<J> {
        Session {
            slots: slots.max(1),
            held: BTreeMap::new(),
            backlog: VecDeque::new(),
            tasks: 0,
            lengths: JobLengths::default(),
            leasing: String::new(),
            ready: Vec::new(),
            ready_since: Duration::ZERO,
            committing: 0,
            next_lease: Duration::ZERO,
            lease_unanswered: false,
            draining,
            over: false,
        }
    }

    /// Attempts held (leased, not yet settled).
    pub fn n_held(&self) -> usize {
        self.held.len()
    }

    /// Tasks running.
    pub fn n_tasks(&self) -> usize {
        self.tasks
    }

    /// What `event`, at `now`, comes to: the actions it asks for, then what is due.
    pub fn handle(&mut self, now: Duration, event: Event<J>) -> Vec<Action<J>> {
        if self.over {
            return Vec::new();
        }
        let mut actions = Vec::new();
        match event {
            Event::Wake => {}
            Event::Leased { leases, retry_after_ms } => self.leased(now, leases, retry_after_ms, &mut actions),
            Event::HeartbeatDue => actions.push(self.heartbeat()),
            Event::HeartbeatAnswered { abandon } => self.abandon(abandon, &mut actions),
            Event::TaskEnded(ran) => self.task_ended(now, ran),
            Event::Committed(ids) => {
                for id in ids {
                    if self.held.get(&id).is_some_and(|h| h.phase == Phase::Committing) {
                        self.held.remove(&id);
                        self.committing -= 1;
                    }
                }
            }
            Event::Drain => {
                self.draining = true;
                // Jobs leased ahead go back to the queue, uncounted: a drain lasts as long
                // as the running jobs, not the backlog.
                let ahead: Vec<AttemptId> = self.backlog.drain(..).collect();
                for id in &ahead {
                    self.held.remove(id);
                }
                if !ahead.is_empty() {
                    actions.push(Action::Release(ahead));
                }
            }
            Event::Lost => {
                // Every attempt held is abandoned: the coordinator queues the jobs again when
                // their leases expire (a commit it already had still counts).
                let running = self.running();
                if !running.is_empty() {
                    actions.push(Action::Cancel(running));
                }
                actions.push(if self.draining { Action::Exit } else { Action::Register });
                self.over = true;
                return actions;
            }
        }
        self.due(now, &mut actions);
        actions
    }

    /// When the session next has something to do without an event (a commit batch to send,
    /// a lease to ask for), if ever.
    pub fn wake_at(&self) -> Option<Duration> {
        if self.over {
            return None;
        }
        let commit = (!self.ready.is_empty()).then(|| self.ready_since + COMMIT_BATCH_WAIT);
        let lease = (self.may_lease() && self.wanted() > 0).then_some(self.next_lease);
        commit.into_iter().chain(lease).min()
    }

    fn leased(&mut self, now: Duration, leases: Vec<Lease<J>>, retry_after_ms: u32, actions: &mut Vec<Action<J>>) {
        self.lease_unanswered = false;
        if leases.is_empty() {
            self.next_lease = now + Duration::from_millis(u64::from(retry_after_ms.clamp(10, 5000)));
        }
        // Jobs of a sweep not known to be short beyond one per slot go back at once
        // (uncounted): the lease was sized for the sweep leased before.
        let mut surplus = Vec::new();
        for lease in leases {
            self.leasing.clone_from(&lease.sweep);
            if self.draining || self.tasks + self.backlog.len() >= self.lengths.depth(&lease.sweep, self.slots) {
                surplus.push(lease.attempt);
                continue;
            }
            if self.held.contains_key(&lease.attempt) {
                continue; // a lease answered twice names it once
            }
            self.backlog.push_back(lease.attempt);
            self.held.insert(lease.attempt, Held { sweep: lease.sweep, phase: Phase::Waiting, job: Some(lease.job) });
        }
        if !surplus.is_empty() {
            actions.push(Action::Release(surplus));
        }
    }

    fn heartbeat(&self) -> Action<J> {
        let attempts: Vec<AttemptId> = self.held.keys().copied().collect();
        let started = self.held.iter().filter(|(_, h)| h.phase != Phase::Waiting).map(|(&id, _)| id).collect();
        Action::Heartbeat { attempts, started }
    }

    fn abandon(&mut self, abandon: Vec<AttemptId>, actions: &mut Vec<Action<J>>) {
        let mut cancel = Vec::new();
        for id in abandon {
            let Some(held) = self.held.get_mut(&id) else { continue };
            match held.phase {
                // Its commit is due or in flight: the coordinator settles it with the commit.
                Phase::Ready | Phase::Committing => {}
                Phase::Waiting => {
                    self.held.remove(&id);
                    self.backlog.retain(|&w| w != id);
                }
                // Said once: a heartbeat answered late may repeat what an earlier one said.
                Phase::Running { cancelled: true } => {}
                Phase::Running { cancelled: false } => {
                    held.phase = Phase::Running { cancelled: true };
                    cancel.push(id);
                }
            }
        }
        if !cancel.is_empty() {
            actions.push(Action::Cancel(cancel));
        }
    }

    fn task_ended(&mut self, now: Duration, ran: Vec<Ran<J>>) {
        let running = |r: &Ran<J>| self.held.get(&r.attempt).is_some_and(|h| matches!(h.phase, Phase::Running { .. }));
        if !ran.iter().any(running) {
            return; // not a task of this session's
        }
        self.tasks -= 1;
        // A slot is free: lease now if leasing waited.
        self.next_lease = now;
        let mut again = Vec::new();
        for Ran { attempt, outcome, took } in ran {
            let Some(held) = self.held.get_mut(&attempt) else { continue };
            if !matches!(held.phase, Phase::Running { .. }) {
                continue;
            }
            match outcome {
                Outcome::Ready { n_values } => {
                    // Only a job that ran to its end measures its sweep (one cancelled or
                    // refused stops at once, and would make its sweep look shorter).
                    self.lengths.record(&held.sweep, took);
                    held.phase = Phase::Ready;
                    if self.ready.is_empty() {
                        self.ready_since = now;
                    }
                    self.ready.push((attempt, n_values));
                }
                Outcome::Ended => {
                    self.held.remove(&attempt);
                }
                Outcome::RunAgainAlone(job) => {
                    self.lengths.record_streaming(&held.sweep);
                    if held.phase == (Phase::Running { cancelled: true }) {
                        self.held.remove(&attempt);
                    } else {
                        held.phase = Phase::Waiting;
                        held.job = Some(job);
                        again.push(attempt);
                    }
                }
            }
        }
        // First in the backlog, in their order.
        for id in again.into_iter().rev() {
            self.backlog.push_front(id);
        }
    }

    /// What is due at `now`: tasks to start on free slots, drained, a commit batch, a lease.
    fn due(&mut self, now: Duration, actions: &mut Vec<Action<J>>) {
        // Start what the backlog holds on the free slots (draining too: those leases are ours).
        while self.tasks < self.slots {
            let Some(first) = self.backlog.pop_front() else { break };
            let sweep = self.held[&first].sweep.clone();
            let batch = self.lengths.batch(&sweep);
            let mut ids = vec![first];
            while ids.len() < batch.unwrap_or(1) && self.backlog.front().is_some_and(|id| self.held[id].sweep == sweep)
            {
                ids.extend(self.backlog.pop_front());
            }
            let jobs = ids
                .into_iter()
                .map(|attempt| {
                    let held = self.held.get_mut(&attempt).expect("a waiting attempt is held");
                    held.phase = Phase::Running { cancelled: false };
                    let job = held.job.take().expect("a waiting attempt has its job");
                    Lease { attempt, sweep: sweep.clone(), job }
                })
                .collect();
            self.tasks += 1;
            actions.push(Action::Start { jobs, batched: batch.is_some() });
        }
        if self.draining && self.held.is_empty() {
            self.over = true;
            actions.push(Action::Drained);
            return;
        }
        self.commit_due(now, actions);
        if self.may_lease() && now >= self.next_lease {
            let wanted = self.wanted();
            if wanted > 0 {
                // Idle, it lets the coordinator hold the request until jobs come.
                let idle = self.held.is_empty();
                let wait_ms = if idle { IDLE_LEASE_WAIT_MS } else { 0 };
                self.lease_unanswered = true;
                actions.push(Action::Lease { max_jobs: wanted, wait_ms });
            }
        }
    }

    /// Send what finished as batches: when large, when the first has waited
    /// [`COMMIT_BATCH_WAIT`], or at once when no task runs.
    fn commit_due(&mut self, now: Duration, actions: &mut Vec<Action<J>>) {
        while !self.ready.is_empty() {
            let values: usize = self.ready.iter().map(|&(_, v)| v).sum();
            let due = self.ready.len() >= COMMIT_BATCH
                || values >= COMMIT_BATCH_VALUES
                || self.tasks == 0
                || now >= self.ready_since + COMMIT_BATCH_WAIT;
            if !due {
                return;
            }
            // At most COMMIT_BATCH attempts and COMMIT_BATCH_VALUES values a request: the
            // rest goes in the next ones.
            let (mut n, mut sent) = (0, 0);
            for &(_, v) in self.ready.iter().take(COMMIT_BATCH) {
                if n > 0 && sent + v > COMMIT_BATCH_VALUES {
                    break;
                }
                (n, sent) = (n + 1, sent + v);
            }
            let ids: Vec<AttemptId> = self.ready.drain(..n).map(|(id, _)| id).collect();
            for id in &ids {
                self.held.get_mut(id).expect("a ready attempt is held").phase = Phase::Committing;
            }
            self.committing += ids.len();
            actions.push(Action::Commit(ids));
        }
    }

    fn may_lease(&self) -> bool {
        !self.draining && !self.lease_unanswered
    }

    /// Jobs worth asking for: one per slot and what the slots hold ahead of the sweep leased
    /// last, less what is held; none while the backlog is more than half full with every
    /// slot busy (one lease then serves many short jobs), nor while too many commits wait.
    fn wanted(&self) -> usize {
        let prefetch = self.lengths.depth(&self.leasing, self.slots) - self.slots;
        if self.committing + self.ready.len() >= MAX_PENDING_COMMITS
            || (self.tasks == self.slots && self.backlog.len() > prefetch / 2)
        {
            return 0;
        }
        (self.slots + prefetch).saturating_sub(self.tasks + self.backlog.len())
    }

    /// Attempts in a running task not yet told to stop.
    fn running(&self) -> Vec<AttemptId> {
        let running = |h: &&Held<J>| h.phase == Phase::Running { cancelled: false };
        self.held.iter().filter(|(_, h)| running(h)).map(|(&id, _)| id).collect()
    }
}

#[cfg(test)]
mod tests;
