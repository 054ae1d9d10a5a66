//! The worker process (`armada worker`): dials the coordinator, registers, leases jobs (one
//! per free slot, or a few per slot ahead while jobs are short) and runs each in an attempt
//! actor, heartbeats its leases, and reconnects with backoff when the coordinator goes away.
//!
//! An attempt actor runs the job's CPU work on the blocking pool (at most `slots` jobs at a
//! time, so at most `slots` busy blocking threads) and streams its records through a bounded
//! channel to the gRPC upload, batched: a slow coordinator applies backpressure to the job
//! instead of growing memory. Once its records are uploaded the slot is free: the commit,
//! which the coordinator answers only when the job's trajectory part is durable (a group
//! commit), is awaited in the background, up to [`MAX_PENDING_COMMITS`] at a time. On shutdown the worker stops leasing, lets its running jobs
//! finish and commit, and returns. When the connection is lost, running attempts are
//! abandoned (the coordinator re-queues them when their leases expire) and the worker
//! registers again.

use armada_core::{run_job, JobError, Registry, StepRecord, ValidJob};
use armada_proto::auth::BearerToken;
use armada_proto::lease::ahead_per_slot;
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
/// The most records a job of a batch keeps for its commit; a job with more stops, runs
/// again alone with its records streamed, and so do its sweep's later jobs on this worker.
pub const BATCH_JOB_RECORDS: usize = 4096;
/// Finished attempts are committed in batches: a batch is sent when it holds
/// [`COMMIT_BATCH`] attempts (or [`COMMIT_BATCH_VALUES`] inline metric values, to stay
/// well under gRPC's 4 MiB message limit), or [`COMMIT_BATCH_WAIT`] after its first finished.
pub const COMMIT_BATCH: usize = 256;
pub const COMMIT_BATCH_VALUES: usize = 256 * 1024;
pub const COMMIT_BATCH_WAIT: Duration = Duration::from_millis(20);
/// How long an idle worker lets the coordinator hold a lease that finds nothing, to answer
/// it as soon as jobs are queued: one request per this while idle, and a drain waits for it.
pub const IDLE_LEASE_WAIT_MS: u32 = 500;
/// Commits awaited at once; past this the worker leases nothing until some are answered.
/// It must cover what finishes during the coordinator's commit linger.
pub const MAX_PENDING_COMMITS: usize = 4096;

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

/// How long each sweep's jobs take on this worker: a running mean per sweep (the last
/// eight jobs weigh most). Leasing ahead follows the sweep being leased, so that after a
/// sweep of short jobs the long jobs of the next are not leased many per slot, starving
/// the other workers; a sweep not measured yet counts as long.
#[derive(Default)]
pub struct JobLengths {
    mean: HashMap<String, Duration>,
    /// Sweeps one of whose jobs had more records than a batch keeps ([`BATCH_JOB_RECORDS`]):
    /// their jobs always stream, never run in batches.
    streaming: std::collections::HashSet<String>,
}

impl JobLengths {
    /// Sweeps remembered at most (the oldest measures are dropped past it).
    const MAX_SWEEPS: usize = 1024;

    /// A job of `sweep` took `took`.
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
            n => Some(n),
        }
    }

    /// Jobs of `sweep` worth holding on `slots` slots: one per slot, and what each holds
    /// ahead.
    pub fn depth(&self, sweep: &str, slots: usize) -> usize {
        slots * (1 + self.ahead(sweep))
    }
}

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
        match session(&config, &token, &registry, shutdown.clone()).await {
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
async fn session(
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

/// A session the coordinator registered: lease, run, heartbeat until drained (Ok) or the
/// connection fails (Err, with every running attempt abandoned first).
async fn registered_session(
    config: &WorkerConfig,
    registry: &Arc<Registry>,
    mut client: Client,
    mut heartbeats: Heartbeats,
    registered: pb::RegisterResponse,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), tonic::Status> {
    let worker_id = registered.worker_id;
    // Every later request names the session; an attempt belongs to the session that leased it.
    let session: Arc<str> = registered.session.into();
    info!("registered with {} as {worker_id} ({} slots)", config.coordinator, config.slots);
    let interval = Duration::from_millis(registered.heartbeat_interval_ms.max(20) as u64);
    let mut heartbeat = armada_proto::heartbeats::ticks(interval, armada_proto::heartbeats::random_phase());
    let mut running: HashMap<u64, watch::Sender<bool>> = HashMap::new();
    let mut tasks: JoinSet<Vec<Finished>> = JoinSet::new();
    // Leased, not yet started (heartbeated all the same: they are in `running`).
    let mut backlog: VecDeque<(pb::JobLease, watch::Receiver<bool>)> = VecDeque::new();
    let mut lengths = JobLengths::default();
    // The sweep whose jobs were leased last: the next lease most likely brings more of it,
    // so it is sized for that sweep.
    let mut leasing = String::new();
    // Finished attempts waiting to be sent, and batches sent and not yet answered.
    let mut ready: Vec<(u64, ReadyToCommit)> = Vec::new();
    // Attempts that finished and wait for their commit (pruned to `running` at each heartbeat).
    let mut awaiting_commit: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut ready_since = tokio::time::Instant::now();
    let mut commits: JoinSet<Result<Vec<u64>, tonic::Status>> = JoinSet::new();
    let mut n_committing = 0;
    let mut next_lease = tokio::time::Instant::now();
    let mut draining = *shutdown.borrow();
    let outcome = loop {
        // Start what the backlog holds on the free slots (draining too: those leases are ours).
        while tasks.len() < config.slots {
            let Some((lease, cancel_rx)) = backlog.pop_front() else { break };
            let (client, registry, session) = (client.clone(), registry.clone(), session.clone());
            if let Some(n) = lengths.batch(&lease.sweep_id) {
                // This lease and the next ones of its sweep, as one batch.
                let mut batch = vec![(lease, cancel_rx)];
                while batch.len() < n && backlog.front().is_some_and(|(l, _)| l.sweep_id == batch[0].0.sweep_id) {
                    batch.push(backlog.pop_front().expect("a front"));
                }
                tasks.spawn(async move { run_batch(client, registry, &session, batch).await });
                continue;
            }
            let (id, sweep) = (lease.attempt_id, lease.sweep_id.clone());
            tasks.spawn(async move {
                let started = Instant::now();
                let outcome = run_attempt(client, registry, &session, lease, cancel_rx).await;
                vec![Finished { id, sweep, outcome, took: started.elapsed(), lease: None }]
            });
        }
        if draining && tasks.is_empty() && commits.is_empty() && ready.is_empty() {
            break Ok(());
        }
        let prefetch = lengths.depth(&leasing, config.slots) - config.slots;
        // Lease when a slot is idle, or when the backlog is down to half: one lease RPC
        // (one store transaction) then serves many short jobs.
        let wanted = if n_committing + ready.len() >= MAX_PENDING_COMMITS
            || (tasks.len() == config.slots && backlog.len() > prefetch / 2)
        {
            0
        } else {
            (config.slots + prefetch).saturating_sub(tasks.len() + backlog.len())
        };
        let ready_values: usize = ready.iter().map(|(_, r)| r.n_values()).sum();
        let send_at = match ready.len() {
            0 => None,
            n if n >= COMMIT_BATCH || ready_values >= COMMIT_BATCH_VALUES || tasks.is_empty() => {
                Some(tokio::time::Instant::now())
            }
            _ => Some(ready_since + COMMIT_BATCH_WAIT),
        };
        tokio::select! {
            _ = heartbeat.tick() => {
                // What is not waiting in the backlog has started (or finished, awaiting its commit).
                let waiting: std::collections::HashSet<u64> = backlog.iter().map(|(l, _)| l.attempt_id).collect();
                let attempt_ids: Vec<u64> = running.keys().copied().collect();
                let started_ids = attempt_ids.iter().copied().filter(|id| !waiting.contains(id)).collect();
                let request = pb::HeartbeatRequest { session: session.to_string(), attempt_ids, started_ids };
                awaiting_commit.retain(|id| running.contains_key(id));
                match heartbeats.send(&mut client, request).await {
                    Ok(reply) => {
                        for id in reply.abandon {
                            if awaiting_commit.contains(&id) {
                                // Its commit is in flight: the coordinator settled it first.
                                continue;
                            }
                            // Said once: a heartbeat answered late may repeat what an earlier one said.
                            if let Some(cancel) = running.get(&id).filter(|c| !*c.borrow()) {
                                info!("attempt {id}: the coordinator says stop (cancelled or superseded)");
                                let _ = cancel.send(true);
                            }
                            if let Some(at) = backlog.iter().position(|(l, _)| l.attempt_id == id) {
                                backlog.remove(at);
                                running.remove(&id);
                            }
                        }
                    }
                    Err(e) => break Err(e),
                }
            }
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                next_lease = tokio::time::Instant::now();
                let finished = match joined {
                    Ok(finished) => finished,
                    Err(e) => {
                        warn!("an attempt task ended abnormally: {e}");
                        continue;
                    }
                };
                let mut lost = None;
                for Finished { id, sweep, outcome, took, lease } in finished {
                    if let Some(lease) = lease {
                        // A job of a batch with more records than a commit carries: it runs
                        // again alone, streamed, and so do its sweep's next jobs.
                        info!("attempt {id}: more records than a batch keeps; it runs again alone, streamed");
                        lengths.record_streaming(&sweep);
                        let cancel_rx = running.get(&id).map(|c| c.subscribe());
                        if let Some(cancel_rx) = cancel_rx {
                            backlog.push_front((lease, cancel_rx));
                        }
                        continue;
                    }
                    if let Some(took) = measured(&outcome, took) {
                        lengths.record(&sweep, took);
                    }
                    match outcome {
                        Ok(Some(ready_job)) => {
                            // Still heartbeated (it stays in `running`) until the commit is answered.
                            if ready.is_empty() {
                                ready_since = tokio::time::Instant::now();
                            }
                            ready.push((id, ready_job));
                            awaiting_commit.insert(id);
                        }
                        Ok(None) => {
                            running.remove(&id);
                        }
                        Err(e) => {
                            running.remove(&id);
                            lost.get_or_insert(e);
                        }
                    }
                }
                if let Some(e) = lost {
                    break Err(e);
                }
            }
            // Send what finished as one batch: when it is large, when it has waited a
            // little, or right away when nothing else runs (draining, the tail of a sweep).
            _ = tokio::time::sleep_until(send_at.unwrap_or(ready_since)), if send_at.is_some() => {
                // At most COMMIT_BATCH attempts and COMMIT_BATCH_VALUES values a request (a
                // batch of jobs can finish with more): the rest goes in the next ones.
                let (mut n, mut values) = (0, 0);
                for (_, r) in ready.iter().take(COMMIT_BATCH) {
                    if n > 0 && values + r.n_values() > COMMIT_BATCH_VALUES {
                        break;
                    }
                    (n, values) = (n + 1, values + r.n_values());
                }
                n_committing += n;
                let batch: Vec<(u64, ReadyToCommit)> = ready.drain(..n).collect();
                let (mut client, session) = (client.clone(), session.clone());
                commits.spawn(async move { commit(&mut client, &session, batch).await });
            }
            Some(joined) = commits.join_next(), if !commits.is_empty() => {
                match joined {
                    Ok(Ok(settled)) => {
                        n_committing -= settled.len();
                        for id in settled {
                            running.remove(&id);
                        }
                    }
                    Ok(Err(e)) => break Err(e),
                    Err(e) => warn!("a commit task ended abnormally: {e}"),
                }
            }
            _ = shutdown.changed(), if !draining => {
                draining = true;
                info!("shutting down: no new leases; {} running job(s) will finish", tasks.len());
                // Jobs leased ahead and not started go back to the queue, uncounted: a drain
                // lasts as long as the running jobs, not the backlog.
                let ahead: Vec<u64> = backlog.drain(..).map(|(lease, _)| lease.attempt_id).collect();
                if !ahead.is_empty() {
                    for id in &ahead {
                        running.remove(id);
                    }
                    let request = pb::ReleaseAttemptsRequest { session: session.to_string(), attempt_ids: ahead };
                    match client.release_attempts(request).await {
                        Ok(reply) => info!("handed back {} job(s) leased ahead", reply.into_inner().released),
                        Err(e) => break Err(e),
                    }
                }
            }
            _ = tokio::time::sleep_until(next_lease), if !draining && wanted > 0 => {
                // Idle, it lets the coordinator hold the request until jobs come: nothing
                // else of this loop is waiting meanwhile but a drain.
                let idle = tasks.is_empty() && backlog.is_empty() && ready.is_empty() && commits.is_empty();
                let wait_ms = if idle { IDLE_LEASE_WAIT_MS } else { 0 };
                let request = pb::LeaseRequest { session: session.to_string(), max_jobs: wanted as u32, wait_ms };
                let reply = match client.lease(request).await {
                    Ok(r) => r.into_inner(),
                    Err(e) => break Err(e),
                };
                if reply.leases.is_empty() {
                    next_lease = tokio::time::Instant::now() + Duration::from_millis(reply.retry_after_ms.clamp(10, 5000) as u64);
                }
                // Jobs of a sweep not known to be short beyond one per slot go back at once
                // (uncounted): the lease was sized for the sweep leased before.
                let mut surplus = Vec::new();
                for lease in reply.leases {
                    leasing.clone_from(&lease.sweep_id);
                    if tasks.len() + backlog.len() >= lengths.depth(&lease.sweep_id, config.slots) {
                        surplus.push(lease.attempt_id);
                        continue;
                    }
                    info!("attempt {}: leased job {} of sweep {} (try {})", lease.attempt_id, lease.job_key, lease.sweep_id, lease.attempt);
                    let (cancel_tx, cancel_rx) = watch::channel(false);
                    running.insert(lease.attempt_id, cancel_tx);
                    backlog.push_back((lease, cancel_rx));
                }
                if !surplus.is_empty() {
                    let n = surplus.len();
                    let request = pb::ReleaseAttemptsRequest { session: session.to_string(), attempt_ids: surplus };
                    match client.release_attempts(request).await {
                        Ok(_) => info!("handed back {n} job(s) of a sweep whose jobs are not known to be short"),
                        Err(e) => break Err(e),
                    }
                }
            }
        }
    };
    if outcome.is_err() {
        for cancel in running.values() {
            let _ = cancel.send(true);
        }
        while tasks.join_next().await.is_some() {}
        // Their leases expire at the coordinator; a commit it already had still counts.
        commits.abort_all();
        while commits.join_next().await.is_some() {}
    }
    outcome
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
    id: u64,
    sweep: String,
    /// As [`run_attempt`] says it.
    outcome: Result<Option<ReadyToCommit>, tonic::Status>,
    took: Duration,
    /// The lease given back, to run again alone: a job of a batch with more records than
    /// [`BATCH_JOB_RECORDS`].
    lease: Option<pb::JobLease>,
}

/// How long a job took, when that tells its sweep's job length: only a job that ran to its
/// end does (one cancelled before or during its run, or refused, stops at once, and would
/// make its sweep look shorter than it is).
fn measured(outcome: &Result<Option<ReadyToCommit>, tonic::Status>, took: Duration) -> Option<Duration> {
    matches!(outcome, Ok(Some(_))).then_some(took)
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
        let (id, sweep) = (lease.attempt_id, lease.sweep_id.clone());
        let (outcome, lease) = match done {
            BatchJob::Ready(ready) => (Ok(Some(ready)), None),
            BatchJob::Cancelled => (Ok(None), None),
            BatchJob::TooManyRecords => (Ok(None), Some(lease)),
            BatchJob::Failed(error, cause) => {
                (report_failure(&mut client, session, id, error, cause).await.map(|()| None), None)
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
    use armada_proto::lease::PREFETCH_PER_SLOT;

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

    #[test]
    fn a_slot_holds_about_100_ms_of_short_jobs_ahead_and_runs_them_as_a_batch() {
        let mut lengths = JobLengths::default();
        assert_eq!((lengths.batch("s"), lengths.depth("s", 2)), (None, 2), "not measured: one a slot, streamed");
        lengths.record("s", Duration::from_millis(10));
        assert_eq!((lengths.batch("s"), lengths.depth("s", 2)), (Some(10), 22));
        lengths.record("t", Duration::from_micros(10));
        assert_eq!(lengths.batch("t"), Some(PREFETCH_PER_SLOT), "at most the prefetch depth");
        assert_eq!(lengths.depth("t", 3), 3 * (1 + PREFETCH_PER_SLOT));
        lengths.record("v", Duration::from_millis(40));
        assert_eq!((lengths.batch("v"), lengths.depth("v", 1)), (Some(2), 3), "100 ms is two 40 ms jobs");
        lengths.record("w", Duration::from_millis(200));
        assert_eq!((lengths.batch("w"), lengths.depth("w", 1)), (Some(1), 2), "short: one ahead, kept records");
        lengths.record("u", Duration::from_millis(300));
        assert_eq!((lengths.batch("u"), lengths.depth("u", 2)), (None, 2), "long: one a slot, streamed");
        lengths.record_streaming("s");
        assert_eq!((lengths.batch("s"), lengths.depth("s", 2)), (None, 22), "records beyond a batch's: streamed");
    }

    /// Only a job that ran to its end measures its sweep: the cancelled jobs of a batch
    /// (about no time each) would make a sweep of 40 ms jobs look short enough to batch 35
    /// at a time (20 of them bring the mean to 2.8 ms).
    #[test]
    fn cancelled_and_failed_jobs_do_not_measure_their_sweep() {
        let took = Duration::from_millis(40);
        let ready = ReadyToCommit { n_records: 1, records: Vec::new() };
        assert_eq!(measured(&Ok(Some(ready)), took), Some(took));
        assert_eq!(measured(&Ok(None), Duration::ZERO), None, "cancelled");
        assert_eq!(measured(&Err(tonic::Status::unavailable("lost")), Duration::ZERO), None);
        let mut lengths = JobLengths::default();
        lengths.record("s", took);
        for _ in 0..20 {
            if let Some(t) = measured(&Ok(None), Duration::ZERO) {
                lengths.record("s", t);
            }
        }
        assert_eq!(lengths.batch("s"), Some(2), "still a sweep of 40 ms jobs");
    }
}
