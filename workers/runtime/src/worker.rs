//! The worker process (`armada worker`): dials the coordinator, registers, and carries out
//! what its session's state machine ([`crate::session`]) asks: leases, tasks, heartbeats,
//! commits, releases; it reconnects with backoff when the coordinator goes away.
//!
//! A task runs its job's CPU work on the blocking pool (at most `slots` tasks at a time,
//! so at most `slots` busy blocking threads) and streams its records through a bounded
//! channel to the gRPC upload, batched: a slow coordinator applies backpressure to the job
//! instead of growing memory. Short jobs run as a batch in one task, their records kept
//! for their commits. Once its records are uploaded the slot is free: the commit, which
//! the coordinator answers only when the job's trajectory part is durable (a group
//! commit), is awaited in the background. On shutdown the worker stops leasing, lets its
//! running jobs finish and commit, and returns. When the connection is lost, running
//! attempts are stopped (the coordinator re-queues them when their leases expire) and the
//! worker registers again.

use crate::session::{Action, Event, Lease, Outcome, Ran, Session, BATCH_JOB_RECORDS};
use armada_core::{run_job, JobError, Registry, StepRecord, ValidJob};
use armada_proto::auth::BearerToken;
use armada_proto::ids::AttemptId;
use armada_proto::v1 as pb;
use armada_proto::wire::{records_to_wire, spec_from_wire};
use pb::workers_client::WorkersClient;
use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::Code;
use tracing::{info, warn};

/// Records buffered between a job and its upload (backpressure beyond this).
pub const RECORD_BUFFER: usize = 1024;
/// Records per uploaded batch, and the longest a partial batch waits.
pub const BATCH_RECORDS: usize = 1024;
/// A job that ends within this many records sends them with its commit, not on a stream.
pub const INLINE_RECORDS: usize = 64;
pub const BATCH_WAIT: Duration = Duration::from_millis(200);
/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The coordinator's URL, e.g. `http://10.0.0.5:7070`.
    pub coordinator: String,
    /// Jobs run side by side.
    pub slots: usize,
    pub token: Option<String>,
    /// The CA certificate (PEM) for an `https://` coordinator.
    pub tls_ca: Option<std::path::PathBuf>,
    /// A human name for the coordinator's messages.
    pub name: String,
    /// The host it runs on (recorded with every trajectory it commits).
    pub host: String,
}

use armada_proto::heartbeats::{Client, Heartbeats};

/// The longest wait between tries after a lost connection: a coordinator that restarts
/// is found again within it.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The longest wait between tries after a Register answered UNAVAILABLE: the coordinator
/// is up and cannot take the worker yet (its store cannot record a declaration: a full
/// disk), which seconds rarely mend.
pub const REGISTER_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// How a session ended in error: at its Register call (answered), or after (or before,
/// connecting).
struct SessionError {
    status: tonic::Status,
    at_register: bool,
}

/// The wait after `backoff` for the next try: doubled, up to the cap for how the last
/// session ended.
pub fn next_backoff(backoff: Duration, register_unavailable: bool) -> Duration {
    let cap = if register_unavailable { REGISTER_BACKOFF_MAX } else { RECONNECT_BACKOFF_MAX };
    (backoff * 2).min(cap)
}

/// Run until `shutdown` turns true and the running jobs have finished. Connection losses
/// are retried with exponential backoff (100 ms doubling to 5 s) for as long as it takes;
/// a Register answered UNAVAILABLE (the coordinator's own trouble) backs off to a minute.
pub async fn run_worker(
    config: WorkerConfig,
    registry: Arc<Registry>,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let token = BearerToken::new(config.token.as_deref())?;
    // A URL that cannot work (no scheme, no host, no CA for https) is said once, not retried.
    armada_proto::connect::endpoint(&config.coordinator, config.tls_ca.as_deref())?;
    let mut backoff = Duration::from_millis(100);
    loop {
        if *shutdown.borrow() {
            return Ok(());
        }
        let started = Instant::now();
        match run_session(&config, &token, &registry, shutdown.clone()).await {
            Ok(()) => {
                info!("drained: every leased job finished and was committed; exiting");
                return Ok(());
            }
            Err(SessionError { status: e, .. })
                if matches!(
                    e.code(),
                    Code::Unauthenticated | Code::PermissionDenied | Code::FailedPrecondition | Code::InvalidArgument
                ) =>
            {
                // A wrong token, a token of another role or a wrong version does not fix
                // itself by retrying.
                return Err(anyhow::anyhow!("the coordinator refused this worker: {}", e.message()));
            }
            Err(SessionError { status: e, at_register }) => {
                if started.elapsed() > Duration::from_secs(10) {
                    backoff = Duration::from_millis(100);
                }
                let register_unavailable = at_register && e.code() == Code::Unavailable;
                let what = if register_unavailable { "registering" } else { "retrying" };
                // A first call answered oddly is a wrong address; later, a lost connection.
                let hint = if at_register { armada_proto::connect::misdial_hint(&e) } else { None };
                let message = match hint {
                    Some(hint) => format!("{hint} ({})", e.message()),
                    None => e.message().to_string(),
                };
                warn!("coordinator {}: {message}; {what} again in {backoff:?}", config.coordinator);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => {}
                }
                backoff = next_backoff(backoff, register_unavailable);
            }
        }
    }
}

/// One registered connection: lease, run, heartbeat until drained (Ok) or the connection
/// fails (Err, with every running attempt abandoned first).
async fn run_session(
    config: &WorkerConfig,
    token: &BearerToken,
    registry: &Arc<Registry>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), SessionError> {
    let endpoint = armada_proto::connect::endpoint(&config.coordinator, config.tls_ca.as_deref())
        .map_err(|e| tonic::Status::invalid_argument(format!("{e:#}")))
        .map_err(|status| SessionError { status, at_register: false })?;
    let channel = endpoint.connect().await.map_err(|e| SessionError {
        status: tonic::Status::unavailable(format!(
            "connecting: {}",
            armada_proto::connect::explain(&config.coordinator, &e)
        )),
        at_register: false,
    })?;
    let mut client = WorkersClient::with_interceptor(channel, token.clone());
    let registered = client
        .register(pb::RegisterRequest {
            name: config.name.clone(),
            slots: config.slots as u32,
            version: env!("CARGO_PKG_VERSION").to_string(),
            families: registry.families().map(|f| f.name().to_string()).collect(),
            build: registry.digest(),
            // Its families are built into the coordinator too (the build digest says so).
            declarations: vec![],
            host: config.host.clone(),
            software: format!("armada {} (build {})", env!("CARGO_PKG_VERSION"), registry.digest()),
            processor: crate::processor::describe(),
        })
        .await
        .map_err(|status| SessionError { status, at_register: true })?
        .into_inner();
    let interval = Duration::from_millis(registered.heartbeat_interval_ms.max(20) as u64);
    let heartbeats = Heartbeats::new(&config.coordinator, config.tls_ca.as_deref(), token, interval);
    registered_session(config, registry, client, heartbeats, registered, shutdown)
        .await
        .map_err(|status| SessionError { status, at_register: false })
}

/// A session the coordinator registered: the session's state machine ([`Session`]) says
/// what to do; [`Io`] does it (leases, heartbeats and releases answered inline, tasks and
/// commits awaited in the background) and this loop feeds back what comes of it, until
/// drained (Ok) or the connection fails (Err, with every running attempt stopped first).
async fn registered_session(
    config: &WorkerConfig,
    registry: &Arc<Registry>,
    client: Client,
    heartbeats: Heartbeats,
    registered: pb::RegisterResponse,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), tonic::Status> {
    info!("registered with {} as {} ({} slots)", config.coordinator, registered.worker_id, config.slots);
    let interval = Duration::from_millis(registered.heartbeat_interval_ms.max(20) as u64);
    let mut heartbeat = armada_proto::heartbeats::ticks(interval, armada_proto::heartbeats::random_phase());
    let epoch = tokio::time::Instant::now();
    let mut draining = *shutdown.borrow();
    let mut machine = Session::<pb::JobLease>::new(config.slots, draining);
    let mut io = Io::new(client, heartbeats, registry.clone(), registered.session.into());
    let mut events = VecDeque::from([Event::Wake]);
    let lost = 'session: loop {
        while let Some(event) = events.pop_front() {
            for action in machine.handle(epoch.elapsed(), event) {
                match io.perform(action).await {
                    Ok(Done::Next(then)) => events.extend(then),
                    Ok(Done::Drained) => return Ok(()),
                    Err(e) => break 'session e,
                }
            }
        }
        let wake = machine.wake_at().map(|at| epoch + at);
        tokio::select! {
            _ = heartbeat.tick() => events.push_back(Event::HeartbeatDue),
            Some(joined) = io.tasks.join_next_with_id(), if !io.tasks.is_empty() => {
                let (ended, lost) = io.task_ended(joined);
                events.push_back(ended);
                if let Some(e) = lost {
                    break 'session e;
                }
            }
            Some(joined) = io.commits.join_next_with_id(), if !io.commits.is_empty() => {
                match io.commit_answered(joined) {
                    Ok(committed) => events.push_back(committed),
                    Err(e) => break 'session e,
                }
            }
            Some(joined) = io.leasing.join_next(), if !io.leasing.is_empty() => {
                match lease_answered(joined) {
                    Ok(leased) => events.push_back(leased),
                    Err(e) => break 'session e,
                }
            }
            // Seen once no lease is in flight: a drain releases what the worker holds, and
            // the jobs a lease still brings would be held by a worker gone.
            _ = shutdown.changed(), if !draining && io.leasing.is_empty() => {
                draining = true;
                info!("shutting down: no new leases; {} running task(s) will finish", machine.n_tasks());
                events.push_back(Event::Drain);
            }
            _ = tokio::time::sleep_until(wake.unwrap_or(epoch)), if wake.is_some() => events.push_back(Event::Wake),
        }
    };
    // Register again or exit: `run_worker` does either, as the shutdown says.
    io.abandon(machine.handle(epoch.elapsed(), Event::Lost)).await;
    Err(lost)
}

/// What came of an action: the event it answers with, if any; or the session is drained.
enum Done {
    Next(Option<Event<pb::JobLease>>),
    Drained,
}

/// What carries out a session's actions: the connection, the tasks running jobs, the
/// commits in flight, and what each needs to find again.
struct Io {
    client: Client,
    heartbeats: Heartbeats,
    registry: Arc<Registry>,
    /// Every request names the session; an attempt belongs to the session that leased it.
    session: Arc<str>,
    cancels: HashMap<AttemptId, watch::Sender<bool>>,
    /// Finished attempts' records, until their commit is sent.
    ready: HashMap<AttemptId, ReadyToCommit>,
    tasks: JoinSet<Vec<Finished>>,
    commits: JoinSet<Result<Vec<u64>, tonic::Status>>,
    /// The lease request in flight (the session asks for one at a time): answered in the
    /// loop, so that tasks end and the next start while it travels through a busy
    /// coordinator, instead of the slot waiting for it.
    leasing: JoinSet<Result<pb::LeaseResponse, tonic::Status>>,
    /// The attempts of each task and commit in flight (told to the session if one panics).
    in_flight: HashMap<tokio::task::Id, Vec<AttemptId>>,
}

impl Io {
    fn new(client: Client, heartbeats: Heartbeats, registry: Arc<Registry>, session: Arc<str>) -> Io {
        Io {
            client,
            heartbeats,
            registry,
            session,
            cancels: HashMap::new(),
            ready: HashMap::new(),
            tasks: JoinSet::new(),
            commits: JoinSet::new(),
            leasing: JoinSet::new(),
            in_flight: HashMap::new(),
        }
    }

    /// Carry out `action`; Err only for a lost connection.
    async fn perform(&mut self, action: Action<pb::JobLease>) -> Result<Done, tonic::Status> {
        // Requests name the session (a copy only for those that are sent inline here).
        let session = || self.session.to_string();
        let then = match action {
            Action::Lease { max_jobs, wait_ms } => {
                let request = pb::LeaseRequest { session: session(), max_jobs: max_jobs as u32, wait_ms };
                let mut client = self.client.clone();
                self.leasing.spawn(async move { Ok(client.lease(request).await?.into_inner()) });
                None
            }
            Action::Start { jobs, batched } => {
                self.start(jobs, batched);
                None
            }
            Action::Heartbeat { attempts, started } => {
                let attempt_ids = attempts.iter().map(|a| a.0).collect();
                let started_ids = started.iter().map(|a| a.0).collect();
                let request = pb::HeartbeatRequest { session: session(), attempt_ids, started_ids };
                let reply = self.heartbeats.send(&mut self.client, request).await?;
                Some(Event::HeartbeatAnswered { abandon: AttemptId::all(reply.abandon) })
            }
            Action::Cancel(ids) => {
                for id in ids {
                    info!("attempt {id}: the coordinator says stop (cancelled or superseded)");
                    self.cancel(id);
                }
                None
            }
            Action::Commit(ids) => {
                let batch: Vec<(u64, ReadyToCommit)> =
                    ids.iter().filter_map(|id| Some((id.0, self.ready.remove(id)?))).collect();
                let (mut client, session) = (self.client.clone(), self.session.clone());
                let task = self.commits.spawn(async move { commit(&mut client, &session, batch).await });
                self.in_flight.insert(task.id(), ids);
                None
            }
            Action::Release(ids) => {
                let request =
                    pb::ReleaseAttemptsRequest { session: session(), attempt_ids: ids.iter().map(|a| a.0).collect() };
                let released = self.client.release_attempts(request).await?.into_inner().released;
                info!("handed back {released} job(s) not started");
                None
            }
            Action::Drained => return Ok(Done::Drained),
            // Only a lost session asks these ([`Io::abandon`]).
            Action::Register | Action::Exit => None,
        };
        Ok(Done::Next(then))
    }

    /// Run `jobs` as one task: alone, records streamed, or as a batch, records kept.
    fn start(&mut self, jobs: Vec<Lease<pb::JobLease>>, batched: bool) {
        let ids: Vec<AttemptId> = jobs.iter().map(|j| j.attempt).collect();
        let mut leases = Vec::with_capacity(jobs.len());
        for Lease { attempt, job, .. } in jobs {
            info!("attempt {attempt}: leased job {} of sweep {} (try {})", job.job_key, job.sweep_id, job.attempt);
            let (cancel_tx, cancel_rx) = watch::channel(false);
            self.cancels.insert(attempt, cancel_tx);
            leases.push((job, cancel_rx));
        }
        let (client, registry, session) = (self.client.clone(), self.registry.clone(), self.session.clone());
        let task = if batched {
            self.tasks.spawn(async move { run_batch(client, registry, &session, leases).await })
        } else {
            let (lease, cancel_rx) = leases.pop().expect("a task runs a job");
            let (id, sweep) = (AttemptId(lease.attempt_id), lease.sweep_id.clone());
            self.tasks.spawn(async move {
                let started = Instant::now();
                let outcome = run_attempt(client, registry, &session, lease, cancel_rx).await;
                vec![Finished { id, sweep, outcome, took: started.elapsed(), lease: None }]
            })
        };
        self.in_flight.insert(task.id(), ids);
    }

    fn cancel(&self, id: AttemptId) {
        if let Some(cancel) = self.cancels.get(&id) {
            let _ = cancel.send(true);
        }
    }

    /// A task ended: what its jobs came to, and the connection's error if one was lost.
    fn task_ended(
        &mut self,
        joined: Result<(tokio::task::Id, Vec<Finished>), tokio::task::JoinError>,
    ) -> (Event<pb::JobLease>, Option<tonic::Status>) {
        let (ran, lost) = match joined {
            Ok((task, finished)) => {
                self.in_flight.remove(&task);
                ran_of(finished, &mut self.ready)
            }
            Err(e) => {
                // Not a job's panic (run_job catches those): the attempts end unsettled and
                // the coordinator runs them again when their leases expire.
                warn!("an attempt task ended abnormally: {e}");
                let ids = self.in_flight.remove(&e.id()).unwrap_or_default();
                let ended = |attempt| Ran { attempt, outcome: Outcome::Ended, took: Duration::ZERO };
                (ids.into_iter().map(ended).collect(), None)
            }
        };
        for r in &ran {
            self.cancels.remove(&r.attempt);
        }
        (Event::TaskEnded(ran), lost)
    }

    /// A commit batch was answered (Err: the connection was lost).
    fn commit_answered(
        &mut self,
        joined: Result<(tokio::task::Id, Result<Vec<u64>, tonic::Status>), tokio::task::JoinError>,
    ) -> Result<Event<pb::JobLease>, tonic::Status> {
        let task = match &joined {
            Ok((task, _)) => *task,
            Err(e) => e.id(),
        };
        let ids = self.in_flight.remove(&task).unwrap_or_default();
        match joined {
            Ok((_, answered)) => {
                answered?;
            }
            // Settled as far as this worker can tell: the coordinator has them or runs
            // them again.
            Err(e) => warn!("a commit task ended abnormally: {e}"),
        }
        Ok(Event::Committed(ids))
    }

    /// The session is lost: stop what `actions` say, wait for the tasks to end, drop the
    /// commits in flight (their leases expire at the coordinator; a commit it already had
    /// still counts).
    async fn abandon(&mut self, actions: Vec<Action<pb::JobLease>>) {
        for action in actions {
            if let Action::Cancel(ids) = action {
                ids.into_iter().for_each(|id| self.cancel(id));
            }
        }
        while self.tasks.join_next().await.is_some() {}
        // A lease answered now would be for a session gone: its jobs' leases expire.
        self.leasing.abort_all();
        self.commits.abort_all();
        while self.commits.join_next().await.is_some() {}
    }
}

/// The lease in flight was answered (Err: the connection was lost).
fn lease_answered(
    joined: Result<Result<pb::LeaseResponse, tonic::Status>, tokio::task::JoinError>,
) -> Result<Event<pb::JobLease>, tonic::Status> {
    let reply = joined.map_err(|e| tonic::Status::internal(format!("a lease request ended abnormally: {e}")))??;
    let lease = |l: pb::JobLease| Lease { attempt: AttemptId(l.attempt_id), sweep: l.sweep_id.clone(), job: l };
    let leases = reply.leases.into_iter().map(lease).collect();
    Ok(Event::Leased { leases, retry_after_ms: reply.retry_after_ms })
}

/// What a task's jobs came to, as the session weighs them: the records of those ready are
/// kept in `ready` for their commit; the connection's error, if one was lost on the way.
fn ran_of(
    finished: Vec<Finished>,
    ready: &mut HashMap<AttemptId, ReadyToCommit>,
) -> (Vec<Ran<pb::JobLease>>, Option<tonic::Status>) {
    let mut lost = None;
    let ran = finished
        .into_iter()
        .map(|Finished { id, sweep, outcome, took, lease }| {
            let outcome = match (lease, outcome) {
                (Some(lease), _) => {
                    info!(
                        "attempt {id}: more records than a batch keeps; it runs again alone, streamed (sweep {sweep})"
                    );
                    Outcome::RunAgainAlone(lease)
                }
                (None, Ok(Some(r))) => {
                    let n_values = r.n_values();
                    ready.insert(id, r);
                    Outcome::Ready { n_values }
                }
                (None, Ok(None)) => Outcome::Ended,
                (None, Err(e)) => {
                    lost.get_or_insert(e);
                    Outcome::Ended
                }
            };
            Ran { attempt: id, outcome, took }
        })
        .collect();
    (ran, lost)
}

/// Run one leased attempt: the job on the blocking pool, its records uploaded as they come.
/// `Some` when it is ready to commit; `None` when it ended otherwise (failure
/// reported, or the coordinator said the attempt is void: cancelled, superseded). Err only
/// for a lost connection.
async fn run_attempt(
    mut client: Client,
    registry: Arc<Registry>,
    session: &str,
    lease: pb::JobLease,
    mut cancel: watch::Receiver<bool>,
) -> Result<Option<ReadyToCommit>, tonic::Status> {
    let attempt_id = lease.attempt_id;
    let job = match checked_job(&registry, lease.spec, &lease.job_key) {
        Ok(job) => job,
        Err(error) => {
            return report_failure(&mut client, session, attempt_id, error, Cause::Worker).await.map(|()| None)
        }
    };
    let (tx, mut rx) = mpsc::channel::<StepRecord>(RECORD_BUFFER);
    let stop = cancel.clone();
    let work = tokio::task::spawn_blocking(move || {
        run_job(&registry, &job, &mut |record| {
            if *stop.borrow() || tx.blocking_send(record).is_err() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
    });
    // The first batch: a job that ends within it sends its records with the commit, and
    // never opens an upload stream (one RPC fewer per short job).
    let mut head = Vec::new();
    let wait = tokio::time::sleep(BATCH_WAIT);
    tokio::pin!(wait);
    let ended = loop {
        tokio::select! {
            record = rx.recv() => match record {
                Some(r) => {
                    head.push(r);
                    if head.len() == INLINE_RECORDS {
                        break Some(false);
                    }
                }
                None => break Some(true),
            },
            _ = &mut wait => break Some(false),
            _ = cancel.wait_for(|&c| c) => break None,
        }
    };
    let Some(ended) = ended else {
        // Dropping the receiver stops the job at its next record.
        drop(rx);
        let _ = work.await;
        return Ok(None);
    };
    let uploaded = if ended {
        Some(Ok(head.len() as u32))
    } else {
        let record_batch = move |records: Vec<StepRecord>, session: String| {
            let (records, columns) = records_to_wire(&records);
            pb::RecordBatch { attempt_id, records, session, columns }
        };
        let first = record_batch(std::mem::take(&mut head), session.to_string());
        let owned = session.to_string();
        let rest = ReceiverStream::new(rx)
            .chunks_timeout(BATCH_RECORDS, BATCH_WAIT)
            .map(move |records| record_batch(records, owned.clone()));
        let batches = tokio_stream::once(first).chain(rest);
        let mut upload_client = client.clone();
        tokio::select! {
            r = upload_client.upload_records(batches) => Some(r.map(|ack| ack.into_inner().n_records)),
            // Dropping the upload drops the receiver, which stops the job at its next record.
            _ = cancel.wait_for(|&c| c) => None,
        }
    };
    let outcome = work.await;
    let failed = match (outcome, uploaded) {
        (_, None) | (Ok(Err(JobError::Cancelled)), Some(Ok(_))) => return Ok(None),
        (_, Some(Err(e))) => return void_or_lost(attempt_id, e).map(|()| None),
        (Ok(Ok(run)), Some(Ok(n_held))) => {
            if n_held == run.n_records {
                return Ok(Some(ReadyToCommit { n_records: run.n_records, records: head }));
            }
            (format!("the coordinator holds {n_held} records of {}", run.n_records), Cause::Worker)
        }
        (Ok(Err(job_error)), Some(Ok(_))) => (job_error.to_string(), cause_of(&job_error)),
        (Err(join_error), Some(Ok(_))) => (join_error.to_string(), Cause::Worker),
    };
    report_failure(&mut client, session, attempt_id, failed.0, failed.1).await.map(|()| None)
}

/// What became of a leased attempt's job.
struct Finished {
    id: AttemptId,
    sweep: String,
    /// As [`run_attempt`] says it.
    outcome: Result<Option<ReadyToCommit>, tonic::Status>,
    took: Duration,
    /// The lease given back, to run again alone: a job of a batch with more records than
    /// [`BATCH_JOB_RECORDS`].
    lease: Option<pb::JobLease>,
}

/// What one job of a batch came to, on the blocking thread.
enum BatchJob {
    Ready(ReadyToCommit),
    Failed(String, Cause),
    Cancelled,
    TooManyRecords,
}

/// Run short jobs of one sweep one after the other in one call on the blocking pool, each
/// job's records kept for its commit. A job cancelled before its turn does not run; a job
/// with more than [`BATCH_JOB_RECORDS`] records stops and is handed back to run streamed.
async fn run_batch(
    mut client: Client,
    registry: Arc<Registry>,
    session: &str,
    batch: Vec<(pb::JobLease, watch::Receiver<bool>)>,
) -> Vec<Finished> {
    let (leases, cancels): (Vec<pb::JobLease>, Vec<watch::Receiver<bool>>) = batch.into_iter().unzip();
    info!("running {} job(s) of sweep {} as one batch", leases.len(), leases[0].sweep_id);
    let specs: Vec<Option<pb::JobSpec>> = leases.iter().map(|l| l.spec.clone()).collect();
    let keys: Vec<String> = leases.iter().map(|l| l.job_key.clone()).collect();
    let ran = tokio::task::spawn_blocking(move || {
        specs
            .into_iter()
            .zip(keys)
            .zip(cancels)
            .map(|((spec, key), cancel)| {
                let started = Instant::now();
                if *cancel.borrow() {
                    return (BatchJob::Cancelled, started.elapsed());
                }
                let job = match checked_job(&registry, spec, &key) {
                    Ok(job) => job,
                    Err(error) => return (BatchJob::Failed(error, Cause::Worker), started.elapsed()),
                };
                let mut records = Vec::new();
                let mut too_many = false;
                let outcome = run_job(&registry, &job, &mut |record| {
                    too_many = records.len() == BATCH_JOB_RECORDS;
                    if too_many || *cancel.borrow() {
                        return ControlFlow::Break(());
                    }
                    records.push(record);
                    ControlFlow::Continue(())
                });
                let done = match outcome {
                    _ if too_many => BatchJob::TooManyRecords,
                    Ok(run) => BatchJob::Ready(ReadyToCommit { n_records: run.n_records, records }),
                    Err(JobError::Cancelled) => BatchJob::Cancelled,
                    Err(e) => BatchJob::Failed(e.to_string(), cause_of(&e)),
                };
                (done, started.elapsed())
            })
            .collect::<Vec<_>>()
    })
    .await;
    let ran = match ran {
        Ok(ran) => ran,
        // run_job catches a family's panics: this is the pool itself failing.
        Err(e) => leases
            .iter()
            .map(|_| (BatchJob::Failed(format!("the batch's thread failed: {e}"), Cause::Worker), Duration::ZERO))
            .collect(),
    };
    let mut finished = Vec::with_capacity(leases.len());
    for (lease, (done, took)) in leases.into_iter().zip(ran) {
        let (id, sweep) = (AttemptId(lease.attempt_id), lease.sweep_id.clone());
        let (outcome, lease) = match done {
            BatchJob::Ready(ready) => (Ok(Some(ready)), None),
            BatchJob::Cancelled => (Ok(None), None),
            BatchJob::TooManyRecords => (Ok(None), Some(lease)),
            BatchJob::Failed(error, cause) => {
                (report_failure(&mut client, session, id.0, error, cause).await.map(|()| None), None)
            }
        };
        finished.push(Finished { id, sweep, outcome, took, lease });
    }
    finished
}

/// The leased job, checked: its spec parses and validates, and its key is the one the
/// coordinator gave (else the two run different armada builds).
fn checked_job(registry: &Registry, spec: Option<pb::JobSpec>, job_key: &str) -> Result<ValidJob, String> {
    let spec = spec.ok_or_else(|| "the lease has no job spec".to_string())?;
    let job = registry.validate(&spec_from_wire(spec, "spec")?).map_err(|e| e.to_string())?;
    if job.key.0 == job_key {
        Ok(job)
    } else {
        Err(format!(
            "job key mismatch: the coordinator says {job_key}, this worker computes {} (different armada builds?)",
            job.key
        ))
    }
}

/// An attempt whose job finished: every record is uploaded, or waits in `records`.
struct ReadyToCommit {
    n_records: u32,
    /// Records to send with the commit (a job that ended within its first batch, or ran
    /// in a batch of jobs).
    records: Vec<StepRecord>,
}

impl ReadyToCommit {
    /// The values its commit carries (a record's step and time count as two).
    fn n_values(&self) -> usize {
        self.records.iter().map(|r| r.values.len() + 2).sum()
    }
}

/// Ask the coordinator to commit a batch of attempts; returns their ids once all are
/// settled. Err only for a lost connection.
async fn commit(
    client: &mut Client,
    session: &str,
    batch: Vec<(u64, ReadyToCommit)>,
) -> Result<Vec<u64>, tonic::Status> {
    let ids: Vec<u64> = batch.iter().map(|(id, _)| *id).collect();
    let attempts = batch
        .into_iter()
        .map(|(attempt_id, ready)| {
            let (records, columns) = records_to_wire(&ready.records);
            // The batch names the session once.
            pb::CompleteAttemptRequest {
                attempt_id,
                n_records: ready.n_records,
                records,
                columns,
                session: String::new(),
            }
        })
        .collect();
    let request = pb::CompleteAttemptsRequest { attempts, session: session.to_string() };
    let reply = client.complete_attempts(request).await?.into_inner();
    for outcome in reply.outcomes {
        let id = outcome.attempt_id;
        if Code::from(outcome.code) == Code::Unavailable {
            // The coordinator could not write it (a full disk, say) and runs the job again:
            // its trouble, not this session's.
            warn!("attempt {id}: {}", outcome.message);
        } else if outcome.code != 0 {
            void_or_lost(id, tonic::Status::new(Code::from(outcome.code), outcome.message))?;
        } else if !outcome.committed {
            info!("attempt {id}: another attempt had committed the job; dropped");
        }
    }
    Ok(ids)
}

/// Why an attempt failed, as the coordinator weighs it (a job's own error fails it at once).
type Cause = pb::FailureCause;

/// A job's error is its own (deterministic given its key), except missing data, which
/// another worker may have.
fn cause_of(error: &JobError) -> Cause {
    match error {
        JobError::MissingData(_) => Cause::Worker,
        _ => Cause::Job,
    }
}

async fn report_failure(
    client: &mut Client,
    session: &str,
    attempt_id: u64,
    error: String,
    cause: Cause,
) -> Result<(), tonic::Status> {
    warn!("attempt {attempt_id} failed: {error}");
    let request = pb::FailAttemptRequest { attempt_id, error, session: session.to_string(), cause: cause as i32 };
    match client.fail_attempt(request).await {
        Ok(_) => Ok(()),
        Err(e) => void_or_lost(attempt_id, e),
    }
}

/// A coordinator answer about an attempt: void (it no longer holds its job) is fine,
/// anything else means the connection is in trouble.
fn void_or_lost(attempt_id: u64, e: tonic::Status) -> Result<(), tonic::Status> {
    match e.code() {
        Code::NotFound | Code::FailedPrecondition | Code::InvalidArgument => {
            info!("attempt {attempt_id} dropped by the coordinator: {}", e.message());
            Ok(())
        }
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a lost connection the worker tries again within 5 s; after a Register
    /// answered UNAVAILABLE (a coordinator that cannot record its declaration), the waits
    /// grow to a minute instead of a try every 5 s.
    #[test]
    fn a_register_answered_unavailable_backs_off_to_a_minute() {
        let waits = |register_unavailable| {
            let mut backoff = Duration::from_millis(100);
            (0..12)
                .map(|_| {
                    backoff = next_backoff(backoff, register_unavailable);
                    backoff.as_millis()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(waits(false), [200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000, 5000, 5000, 5000]);
        assert_eq!(waits(true), [200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000, 60000, 60000]);
    }
}
