//! How the rest of armada talks to the scheduler actor: [`SchedulerHandle`], a typed async
//! method per request (the requests are `requests/`'s, a file each). The gRPC services and
//! the dashboard call the methods; only the scheduler (and its tests) build requests.
//!
//! The handle also carries what the request paths use beside the actor, off its mailbox:
//! the spools that upload streams append records to, the live summaries that answer
//! `FetchResults` and the dashboard while a sweep runs, and the metrics.

use super::requests::cancel::Cancel;
use super::requests::complete::Complete;
use super::requests::declare::Declare;
use super::requests::delete::Delete;
use super::requests::fail::Fail;
use super::requests::heartbeat::Heartbeat;
use super::requests::jobs::Jobs;
use super::requests::lease::LeaseJobs;
use super::requests::list::List;
use super::requests::part_of::PartOf;
use super::requests::refused::Refused;
use super::requests::register::Register;
use super::requests::release::Release;
use super::requests::remove_family::RemoveFamily;
use super::requests::status::Status;
use super::requests::submit::Submit;
use super::requests::summary::Summary;
use super::requests::sweep_keys::SweepKeys;
use super::requests::watch::{Watch, Watching};
use super::requests::workers::Workers;
use super::requests::{mail, tell, Mail, Reply, Request};
use crate::coordinator::durable::catalog::Declarer;
use crate::coordinator::durable::spool::Spools;
use crate::coordinator::durable::summarizer::{self, Current, LiveSummaries, SweepSummaries};
use crate::coordinator::state::declared::Checked;
use crate::coordinator::state::job_table::Cause;
use crate::coordinator::state::jobs::{self, Submission};
use crate::coordinator::state::metrics::Metrics;
use crate::coordinator::state::replies::{
    CommandError, Declared, JobFilter, JobInfo, Leases, Registered, Registration, Submitted, SummaryInputs,
    SweepStatus, WorkerInfo,
};
use crate::coordinator::state::sweeps::FailurePage;
use armada_core::{RecordColumns, StepRecord};
use armada_proto::ids::{AttemptId, SessionId, SweepId};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The longest a heartbeat waits for the scheduler's answer (see [`SchedulerHandle::heartbeat`]).
pub const HEARTBEAT_ANSWER: Duration = Duration::from_millis(20);

/// By session, the attempts to abandon that the scheduler found for a heartbeat whose
/// caller had stopped waiting: a later heartbeat not answered in time answers with them.
pub(super) type LateAbandons = Arc<std::sync::Mutex<std::collections::HashMap<SessionId, Vec<AttemptId>>>>;

/// The scheduler's mailbox, and what the request paths use beside it. Cloned by every
/// service and the dashboard; the actor stops once the last clone is dropped.
#[derive(Clone)]
pub struct SchedulerHandle {
    mailbox: mpsc::Sender<Mail>,
    spools: Spools,
    live: LiveSummaries,
    metrics: Arc<Metrics>,
    late_abandons: LateAbandons,
}

impl SchedulerHandle {
    pub(super) fn new(
        mailbox: mpsc::Sender<Mail>,
        spools: Spools,
        live: LiveSummaries,
        metrics: Arc<Metrics>,
        late_abandons: LateAbandons,
    ) -> Self {
        SchedulerHandle { mailbox, spools, live, metrics, late_abandons }
    }

    /// Submit a sweep's jobs.
    pub async fn submit(&self, submission: Submission) -> Result<Submitted, CommandError> {
        self.call(Submit { submission }).await
    }

    /// A sweep's status now, and its events from now on: every job's (`in_detail`), or the
    /// counts after each batch of jobs done instead of `JobStarted` and `JobFinished`.
    pub async fn watch(&self, sweep: SweepId, in_detail: bool) -> Result<Watching, CommandError> {
        self.call(Watch { sweep, in_detail }).await
    }

    /// A sweep's status, with the page of its failures asked for.
    pub async fn status(&self, sweep: SweepId, failures: FailurePage) -> Result<SweepStatus, CommandError> {
        self.call(Status { sweep, failures }).await
    }

    /// Every sweep's status.
    pub async fn list(&self) -> Result<Vec<SweepStatus>, CommandError> {
        self.call(List).await
    }

    /// Cancel a sweep's queued and running jobs.
    pub async fn cancel(&self, sweep: SweepId) -> Result<SweepStatus, CommandError> {
        self.call(Cancel { sweep }).await
    }

    /// Forget a settled sweep; answers its directory and job count.
    pub async fn delete(&self, sweep: SweepId) -> Result<(PathBuf, u32), CommandError> {
        self.call(Delete { sweep }).await
    }

    /// What a sweep's summary is built from (with the done jobs' keys when asked).
    pub async fn summary_inputs(&self, sweep: SweepId, with_keys: bool) -> Result<SummaryInputs, CommandError> {
        self.call(Summary { sweep, with_keys }).await
    }

    /// Register a worker.
    pub async fn register(&self, registration: Registration) -> Result<Registered, CommandError> {
        self.call(Register { registration }).await
    }

    /// Declare a family (checked already) ahead of its workers.
    pub async fn declare(&self, declaration: Checked, declarer: Declarer) -> Result<Declared, CommandError> {
        self.call(Declare { declaration, declarer }).await
    }

    /// Forget the declarations of `name` at `version` (all, or the one of `digest`) that no
    /// stored sweep uses; the digests removed.
    pub async fn remove_family(
        &self,
        name: String,
        version: u32,
        digest: Option<String>,
    ) -> Result<Vec<String>, CommandError> {
        self.call(RemoveFamily { name, version, digest }).await
    }

    /// The registered workers.
    pub async fn workers(&self) -> Result<Vec<WorkerInfo>, CommandError> {
        self.call(Workers).await
    }

    /// The jobs of a sweep that `filter` selects, at most `limit`.
    pub async fn jobs(&self, sweep: SweepId, filter: JobFilter, limit: usize) -> Result<Vec<JobInfo>, CommandError> {
        self.call(Jobs { sweep, filter, limit }).await
    }

    /// The part file holding a done job's trajectory.
    pub async fn part_of(&self, sweep: SweepId, key: String) -> Result<Option<PathBuf>, CommandError> {
        self.call(PartOf { sweep, key }).await
    }

    /// Lease up to `max_jobs` jobs to a worker session.
    pub async fn lease(&self, session: SessionId, max_jobs: u32) -> Result<Leases, CommandError> {
        self.lease_within(session, max_jobs, Duration::ZERO).await
    }

    /// Lease up to `max_jobs` jobs to a worker session; when none can be leased now, wait
    /// up to `wait` (capped by the scheduler) for some to be queued.
    pub async fn lease_within(
        &self,
        session: SessionId,
        max_jobs: u32,
        wait: Duration,
    ) -> Result<Leases, CommandError> {
        self.call(LeaseJobs { session, max_jobs, wait }).await
    }

    /// Renew the leases of these attempts, of which the worker has `started` (the others
    /// it holds leased ahead); answers the attempts to abandon.
    ///
    /// Answered within [`HEARTBEAT_ANSWER`]: a scheduler still busy then (a round of
    /// commits, or a machine short of CPU) applies the heartbeat when it comes to it,
    /// renewing the leases from the time the heartbeat came, and keeps what it found to
    /// abandon for the session's next heartbeat that is not answered in time (an answer in
    /// time says it anyway). Lease deadlines are checked only between commands, so one
    /// queued in time is never expired by the wait.
    pub async fn heartbeat(
        &self,
        session: SessionId,
        attempts: Vec<AttemptId>,
        started: Vec<AttemptId>,
    ) -> Result<Vec<AttemptId>, CommandError> {
        let heard = tokio::time::Instant::now().into_std();
        let (reply, mut answer) = oneshot::channel();
        let command = mail(Heartbeat { session: session.clone(), attempts, started, heard }, reply);
        match self.mailbox.try_send(command) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(command)) => {
                // Delivered when there is room, and answered then or at the next heartbeat.
                let mailbox = self.mailbox.clone();
                tokio::spawn(async move { mailbox.send(command).await });
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                return Err(CommandError::unavailable("the scheduler has stopped"))
            }
        }
        let dropped = |_| CommandError::internal("the scheduler dropped the request");
        tokio::select! {
            answered = &mut answer => answered.map_err(dropped)?,
            () = tokio::time::sleep(HEARTBEAT_ANSWER) => {
                // Closed first: an answer sent from now on goes to the late abandons.
                answer.close();
                match answer.try_recv() {
                    Ok(answered) => answered,
                    Err(_) => Ok(self.late_abandons.lock().unwrap_or_else(|e| e.into_inner()).remove(&session).unwrap_or_default()),
                }
            }
        }
    }

    /// Sweep `sweep`'s jobs and keys as they stand, and its results directory.
    pub async fn sweep_keys(&self, sweep: SweepId) -> Result<(jobs::SweepKeys, PathBuf), CommandError> {
        self.call(SweepKeys { sweep }).await
    }

    /// Commit an attempt. The answer (whether its trajectory is the job's) comes once its
    /// part is durable; it is awaited apart, so that a stream can have several in flight.
    pub async fn complete(
        &self,
        session: SessionId,
        attempt: AttemptId,
        n_records: u32,
    ) -> Result<Pending<bool>, CommandError> {
        self.send_with(|reply| tell(Complete { session, commits: vec![(attempt, n_records, reply)] })).await
    }

    /// Commit attempts of one session (`(attempt, n_records)` each) in one scheduler turn;
    /// their answers as [`SchedulerHandle::complete`]'s, in order.
    pub async fn complete_many(
        &self,
        session: SessionId,
        attempts: Vec<(AttemptId, u32)>,
    ) -> Result<Vec<Pending<bool>>, CommandError> {
        let mut pending = Vec::with_capacity(attempts.len());
        let commits = attempts
            .into_iter()
            .map(|(attempt, n_records)| {
                let (tx, rx) = oneshot::channel();
                pending.push(Pending(rx));
                (attempt, n_records, tx)
            })
            .collect();
        self.mailbox
            .send(tell(Complete { session, commits }))
            .await
            .map_err(|_| CommandError::unavailable("the scheduler has stopped"))?;
        Ok(pending)
    }

    /// An attempt failed; answers whether its job will be tried again.
    pub async fn fail(
        &self,
        session: SessionId,
        attempt: AttemptId,
        error: String,
        cause: Cause,
    ) -> Result<bool, CommandError> {
        self.call(Fail { session, attempt, error, cause }).await
    }

    /// Attempts leased and never started, handed back; answers how many jobs were queued.
    pub async fn release(&self, session: SessionId, attempts: Vec<AttemptId>) -> Result<u32, CommandError> {
        self.call(Release { session, attempts }).await
    }

    /// Append an attempt's uploaded records to its spool (off the actor); answers the
    /// attempt's records so far. An error that voids the attempt is reported to the
    /// scheduler by [`Self::refused`].
    pub fn append(&self, attempt: AttemptId, session: &SessionId, records: &[StepRecord]) -> Result<u32, CommandError> {
        self.spools.append(attempt, session, records)
    }

    /// [`Self::append`] for records that arrived as columns.
    pub fn append_columns(
        &self,
        attempt: AttemptId,
        session: &SessionId,
        columns: &RecordColumns,
    ) -> Result<u32, CommandError> {
        self.spools.append_columns(attempt, session, columns)
    }

    /// The attempt's records broke its job's schema: void it.
    pub async fn refused(&self, attempt: AttemptId) -> Result<(), CommandError> {
        self.mailbox_send(tell(Refused { attempt })).await
    }

    /// A running sweep's live tables (or its written files), for `FetchResults`.
    pub async fn current(&self, sweep: &str, inputs: &SummaryInputs) -> Result<Current, CommandError> {
        summarizer::current(&self.live, sweep, inputs).await
    }

    /// A sweep's live summaries, while it has them.
    pub fn live_summaries(&self, sweep: &str) -> Option<Arc<SweepSummaries>> {
        self.live.get(sweep)
    }

    /// The counters behind `/metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Count records received on an upload stream.
    pub fn records_received(&self, n: u64) {
        self.metrics.records_received.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Send a request and wait for its answer.
    async fn call<R: Request>(&self, request: R) -> Result<R::Answer, CommandError> {
        self.send(request).await?.answer().await
    }

    /// Send mail that has no answer.
    async fn mailbox_send(&self, mail: Mail) -> Result<(), CommandError> {
        self.mailbox.send(mail).await.map_err(|_| CommandError::unavailable("the scheduler has stopped"))
    }

    /// Send a request; its answer is awaited separately (several requests in flight at once).
    pub(super) async fn send<R: Request>(&self, request: R) -> Result<Pending<R::Answer>, CommandError> {
        self.send_with(|reply| mail(request, reply)).await
    }

    /// Send a request that carries its own answer's channel (built around `reply`).
    async fn send_with<T>(&self, make: impl FnOnce(Reply<T>) -> Mail) -> Result<Pending<T>, CommandError> {
        let (tx, rx) = oneshot::channel();
        self.mailbox_send(make(tx)).await?;
        Ok(Pending(rx))
    }
}

/// The answer to a request sent with [`SchedulerHandle::send`].
pub struct Pending<T>(oneshot::Receiver<Result<T, CommandError>>);

impl<T> Pending<T> {
    pub async fn answer(self) -> Result<T, CommandError> {
        self.0.await.map_err(|_| CommandError::internal("the scheduler dropped the request"))?
    }

    /// Not answered yet (an answer found here is dropped).
    #[cfg(test)]
    pub(super) fn is_pending(&mut self) -> bool {
        matches!(self.0.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    }
}
