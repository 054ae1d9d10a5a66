//! The worker process (`armada worker`): dials the coordinator, registers, leases jobs up to
//! its slots and runs each in an attempt actor, heartbeats its leases, and reconnects with
//! backoff when the coordinator goes away.
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

use crate::auth::BearerToken;
use crate::wire::{record_to_wire, spec_from_wire};
use armada_core::{run_job, JobError, Registry, StepRecord};
use armada_proto::v1 as pb;
use pb::workers_client::WorkersClient;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::Code;
use tracing::{info, warn};

/// Records buffered between a job and its upload (backpressure beyond this).
pub const RECORD_BUFFER: usize = 256;
/// Records per uploaded batch, and the longest a partial batch waits.
pub const BATCH_RECORDS: usize = 64;
pub const BATCH_WAIT: Duration = Duration::from_millis(200);
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
}

type Client = WorkersClient<InterceptedService<Channel, BearerToken>>;

/// Run until `shutdown` turns true and the running jobs have finished. Connection losses
/// are retried with exponential backoff (100 ms doubling to 5 s) for as long as it takes.
pub async fn run_worker(
    config: WorkerConfig,
    registry: Arc<Registry>,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let token = BearerToken::new(config.token.as_deref())?;
    let mut backoff = Duration::from_millis(100);
    loop {
        if *shutdown.borrow() {
            return Ok(());
        }
        let started = Instant::now();
        match session(&config, &token, &registry, shutdown.clone()).await {
            Ok(()) => return Ok(()),
            Err(e) if matches!(e.code(), Code::Unauthenticated | Code::FailedPrecondition | Code::InvalidArgument) => {
                // A wrong token or version does not fix itself by retrying.
                return Err(anyhow::anyhow!("the coordinator refused this worker: {}", e.message()));
            }
            Err(e) => {
                if started.elapsed() > Duration::from_secs(10) {
                    backoff = Duration::from_millis(100);
                }
                warn!("coordinator {}: {}; retrying in {backoff:?}", config.coordinator, e.message());
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
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
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), tonic::Status> {
    let endpoint = crate::connect::endpoint(&config.coordinator, config.tls_ca.as_deref())
        .map_err(|e| tonic::Status::invalid_argument(format!("{e:#}")))?;
    let channel = endpoint.connect().await.map_err(|e| tonic::Status::unavailable(format!("connecting: {e}")))?;
    let mut client = WorkersClient::with_interceptor(channel, token.clone());
    let registered = client
        .register(pb::RegisterRequest {
            name: config.name.clone(),
            slots: config.slots as u32,
            version: env!("CARGO_PKG_VERSION").to_string(),
        })
        .await?
        .into_inner();
    let worker_id = registered.worker_id;
    info!("registered with {} as {worker_id} ({} slots)", config.coordinator, config.slots);
    let mut heartbeat = tokio::time::interval(Duration::from_millis(registered.heartbeat_interval_ms.max(20) as u64));
    let mut running: HashMap<u64, watch::Sender<bool>> = HashMap::new();
    let mut tasks: JoinSet<(u64, Result<Option<u32>, tonic::Status>)> = JoinSet::new();
    let mut commits: JoinSet<(u64, Result<(), tonic::Status>)> = JoinSet::new();
    let mut next_lease = tokio::time::Instant::now();
    let mut draining = *shutdown.borrow();
    let outcome = loop {
        if draining && tasks.is_empty() && commits.is_empty() {
            break Ok(());
        }
        let free = if commits.len() >= MAX_PENDING_COMMITS { 0 } else { config.slots.saturating_sub(tasks.len()) };
        tokio::select! {
            _ = heartbeat.tick() => {
                let request = pb::HeartbeatRequest { worker_id: worker_id.clone(), attempt_ids: running.keys().copied().collect() };
                match client.heartbeat(request).await {
                    Ok(reply) => {
                        for id in reply.into_inner().abandon {
                            if let Some(cancel) = running.get(&id) {
                                info!("attempt {id}: the coordinator says stop (cancelled or superseded)");
                                let _ = cancel.send(true);
                            }
                        }
                    }
                    Err(e) => break Err(e),
                }
            }
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                next_lease = tokio::time::Instant::now();
                match joined {
                    Ok((id, Ok(Some(n_records)))) => {
                        // Still heartbeated (it stays in `running`) until the commit is answered.
                        let mut client = client.clone();
                        commits.spawn(async move { (id, commit(&mut client, id, n_records).await) });
                    }
                    Ok((id, Ok(None))) => {
                        running.remove(&id);
                    }
                    Ok((id, Err(e))) => {
                        running.remove(&id);
                        break Err(e);
                    }
                    Err(e) => warn!("an attempt task ended abnormally: {e}"),
                }
            }
            Some(joined) = commits.join_next(), if !commits.is_empty() => {
                match joined {
                    Ok((id, result)) => {
                        running.remove(&id);
                        if let Err(e) = result {
                            break Err(e);
                        }
                    }
                    Err(e) => warn!("a commit task ended abnormally: {e}"),
                }
            }
            _ = shutdown.changed(), if !draining => {
                draining = true;
                info!("shutting down: no new leases; {} running job(s) will finish", tasks.len());
            }
            _ = tokio::time::sleep_until(next_lease), if !draining && free > 0 => {
                let request = pb::LeaseRequest { worker_id: worker_id.clone(), max_jobs: free as u32 };
                let reply = match client.lease(request).await {
                    Ok(r) => r.into_inner(),
                    Err(e) => break Err(e),
                };
                if reply.leases.is_empty() {
                    next_lease = tokio::time::Instant::now() + Duration::from_millis(reply.retry_after_ms.clamp(10, 5000) as u64);
                }
                for lease in reply.leases {
                    let (cancel_tx, cancel_rx) = watch::channel(false);
                    running.insert(lease.attempt_id, cancel_tx);
                    let id = lease.attempt_id;
                    let (client, registry) = (client.clone(), registry.clone());
                    tasks.spawn(async move { (id, run_attempt(client, registry, lease, cancel_rx).await) });
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
/// `Some(n_records)` when it is ready to commit; `None` when it ended otherwise (failure
/// reported, or the coordinator said the attempt is void: cancelled, superseded). Err only
/// for a lost connection.
async fn run_attempt(
    mut client: Client,
    registry: Arc<Registry>,
    lease: pb::JobLease,
    mut cancel: watch::Receiver<bool>,
) -> Result<Option<u32>, tonic::Status> {
    let attempt_id = lease.attempt_id;
    let checked = lease
        .spec
        .ok_or_else(|| "the lease has no job spec".to_string())
        .and_then(|spec| spec_from_wire(spec, "spec"))
        .and_then(|spec| registry.validate(&spec).map_err(|e| e.to_string()))
        .and_then(|job| {
            if job.key.0 == lease.job_key {
                Ok(job)
            } else {
                Err(format!(
                    "job key mismatch: the coordinator says {}, this worker computes {} (different armada builds?)",
                    lease.job_key, job.key
                ))
            }
        });
    let job = match checked {
        Ok(job) => job,
        Err(error) => return report_failure(&mut client, attempt_id, error).await.map(|()| None),
    };
    let (tx, rx) = mpsc::channel::<StepRecord>(RECORD_BUFFER);
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
    let batches = ReceiverStream::new(rx)
        .chunks_timeout(BATCH_RECORDS, BATCH_WAIT)
        .map(move |records| pb::RecordBatch { attempt_id, records: records.iter().map(record_to_wire).collect() });
    let mut upload_client = client.clone();
    let uploaded = tokio::select! {
        r = upload_client.upload_records(batches) => Some(r),
        // Dropping the upload drops the receiver, which stops the job at its next record.
        _ = cancel.wait_for(|&c| c) => None,
    };
    let outcome = work.await;
    let failed = match (outcome, uploaded) {
        (_, None) | (Ok(Err(JobError::Cancelled)), Some(Ok(_))) => return Ok(None),
        (_, Some(Err(e))) => return void_or_lost(attempt_id, e).map(|()| None),
        (Ok(Ok(run)), Some(Ok(ack))) => {
            let ack = ack.into_inner();
            if ack.n_records == run.n_records {
                return Ok(Some(run.n_records));
            }
            format!("the coordinator holds {} records of {}", ack.n_records, run.n_records)
        }
        (Ok(Err(job_error)), Some(Ok(_))) => job_error.to_string(),
        (Err(join_error), Some(Ok(_))) => join_error.to_string(),
    };
    report_failure(&mut client, attempt_id, failed).await.map(|()| None)
}

/// Ask the coordinator to commit an attempt whose records are all uploaded.
async fn commit(client: &mut Client, attempt_id: u64, n_records: u32) -> Result<(), tonic::Status> {
    match client.complete_attempt(pb::CompleteAttemptRequest { attempt_id, n_records }).await {
        Ok(reply) if !reply.get_ref().committed => {
            info!("attempt {attempt_id}: another attempt had committed the job; dropped");
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) => void_or_lost(attempt_id, e),
    }
}

async fn report_failure(client: &mut Client, attempt_id: u64, error: String) -> Result<(), tonic::Status> {
    warn!("attempt {attempt_id} failed: {error}");
    match client.fail_attempt(pb::FailAttemptRequest { attempt_id, error }).await {
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
