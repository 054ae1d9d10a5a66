//! The two gRPC services on top of the scheduler: `Sweeps` for clients, `Workers` for
//! worker processes. Handlers validate and translate; every state change is the
//! scheduler's. Slow work (parsing a large sweep, building summaries) runs off the
//! scheduler, on the blocking pool.

use super::super::durable::catalog::{Catalog, Declarer};
use super::super::durable::summarizer::Current;
use super::super::scheduler::handle::{Pending, SchedulerHandle};
use super::super::state::declared;
use super::super::state::job_table::Cause;
use super::super::state::jobs::Submission;
use super::super::state::replies::{
    CommandError, Declared, ErrorKind, JobFailed, Lease, Leases, Observed, Registered, Registration, Submitted,
    SweepEvent, SweepState, SweepStatus,
};
use super::super::state::sweeps::FailurePage;
use super::super::state::trouble::Trouble;
use super::access::Grant;
use super::credentials::Sealer;
use super::fetch;
use crate::{results, sweep};
use armada_core::{Registry, SpecError, ValidJob};
use armada_proto::ids::{AttemptId, SessionId, SweepId};
use armada_proto::v1 as pb;
use armada_proto::wire::{self, Arrived};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};
use tracing::info;

/// Messages of a WatchSweep stream waiting for the client: a snapshot and a burst of
/// events; when it is full the stream's task waits, and the scheduler's broadcast keeps
/// the events meanwhile.
const WATCH_STREAM_CAPACITY: usize = 256;

/// FetchResults chunks (1 MiB each) read ahead of the client: enough to keep the network
/// busy, few enough that a slow client holds a few MiB, not a whole table.
const FETCH_CHUNKS_AHEAD: usize = 4;

/// Both services share the scheduler's handle and the families known.
#[derive(Clone)]
pub struct Coordinator {
    pub scheduler: SchedulerHandle,
    pub catalog: Arc<Catalog>,
    /// The most jobs a submitted sweep may have.
    pub max_jobs: usize,
    /// Binds each worker session's credential to the token that registered it.
    pub sealer: Arc<Sealer>,
}

/// What the call's token allows, and its label (`Gate` put it there; open without one).
fn grant_of<T>(request: &Request<T>) -> Grant {
    request.extensions().get::<Grant>().cloned().unwrap_or_default()
}

fn invalid(e: SpecError) -> Status {
    Status::invalid_argument(e.to_string())
}

impl Coordinator {
    /// A submitted sweep as validated jobs, with its family's reference
    /// ([`armada_core::Family::reference`]); nothing reaches the scheduler unless every job is valid.
    fn parse(&self, request: pb::SubmitSweepRequest) -> Result<Parsed, Status> {
        let registry = self.catalog.get();
        let reference = |name: &str| registry.family(name).map(|f| f.reference()).map_err(invalid);
        let default_name = if request.default_name.is_empty() { "sweep" } else { request.default_name.as_str() };
        match request.sweep {
            None => Err(Status::invalid_argument("sweep: give either `toml` or `structured`")),
            Some(pb::submit_sweep_request::Sweep::Toml(text)) => {
                let s = sweep::parse_sweep_cells(&text, default_name, &registry, self.max_jobs).map_err(invalid)?;
                let family = reference(&s.family)?;
                // A resolving sweep keeps its file: its rounds are made from it.
                let source = s.resolve.is_some().then(|| Arc::<str>::from(text.as_str()));
                Ok(Parsed { name: s.name.clone(), family, jobs: Box::new(s.into_jobs()), source })
            }
            Some(pb::submit_sweep_request::Sweep::Structured(s)) => {
                sweep::check_name(&s.name).map_err(|e| invalid(e.within("structured")))?;
                if s.jobs.is_empty() {
                    return Err(Status::invalid_argument("structured.jobs: a sweep needs at least one job"));
                }
                if s.jobs.len() > self.max_jobs {
                    return Err(Status::invalid_argument(format!(
                        "structured.jobs: {} jobs, over the limit of {} jobs per sweep",
                        s.jobs.len(),
                        self.max_jobs
                    )));
                }
                let mut jobs = Vec::with_capacity(s.jobs.len());
                for (i, spec) in s.jobs.into_iter().enumerate() {
                    let field = format!("structured.jobs[{i}]");
                    let spec = wire::spec_from_wire(spec, &field).map_err(Status::invalid_argument)?;
                    let job = registry.validate(&spec).map_err(|e| invalid(e.within(&field)))?;
                    if let Some(first) = jobs.first().map(|j: &ValidJob| &j.spec.family) {
                        if *first != job.spec.family {
                            return Err(Status::invalid_argument(format!(
                                "{field}.family: every job of a sweep has the same family; the first has `{first}`"
                            )));
                        }
                    }
                    jobs.push(job);
                }
                let family = reference(&jobs[0].spec.family)?;
                Ok(Parsed { name: s.name, family, jobs: Box::new(jobs.into_iter()), source: None })
            }
        }
    }
}

/// A submission's jobs, taken one at a time.
type Jobs = Box<dyn Iterator<Item = ValidJob> + Send>;

/// A submitted sweep, validated: its name, its family's reference, its jobs, and a
/// resolving sweep's file.
struct Parsed {
    name: String,
    family: String,
    jobs: Jobs,
    source: Option<Arc<str>>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::SweepEvent, Status>> + Send>>;
type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::ResultChunk, Status>> + Send>>;

#[tonic::async_trait]
impl pb::sweeps_server::Sweeps for Coordinator {
    async fn submit_sweep(
        &self,
        request: Request<pb::SubmitSweepRequest>,
    ) -> Result<Response<pb::SubmitSweepResponse>, Status> {
        let this = self.clone();
        let started = std::time::Instant::now();
        let submission = tokio::task::spawn_blocking(move || {
            let Parsed { name, family, jobs, source } = this.parse(request.into_inner())?;
            let registry = this.catalog.get();
            let mut submission = Submission::with_extensions(name, family, jobs, &registry).map_err(invalid)?;
            submission.source = source;
            Ok::<_, Status>(submission)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))??;
        // A resubmission's plan grows with the sweep: worked out here, not in the scheduler.
        let (sweep, dir) = self.scheduler.sweep_keys(SweepId::from(submission.name.clone())).await?;
        let submission = tokio::task::spawn_blocking(move || submission.prepare(sweep, &dir))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::internal(format!("{e:#}")))?;
        let parsed = started.elapsed();
        let reply = self.scheduler.submit(submission).await?;
        info!(
            sweep = %reply.sweep_id,
            jobs = reply.n_jobs,
            validated = ?parsed,
            stored_and_queued = ?(started.elapsed() - parsed),
            "sweep submitted"
        );
        let Submitted { sweep_id, n_jobs, n_added, n_already_done, revised } = reply;
        Ok(Response::new(pb::SubmitSweepResponse {
            sweep_id: sweep_id.to_string(),
            n_jobs,
            n_added,
            n_already_done,
            revised,
        }))
    }

    type WatchSweepStream = EventStream;

    async fn watch_sweep(
        &self,
        request: Request<pb::WatchSweepRequest>,
    ) -> Result<Response<Self::WatchSweepStream>, Status> {
        let pb::WatchSweepRequest { sweep_id: sweep, counts_only } = request.into_inner();
        let watching = self.scheduler.watch(SweepId::from(sweep.clone()), !counts_only).await?;
        let (snapshot, mut events, in_detail) = (watching.status, watching.events, watching.in_detail);
        let (tx, rx) = mpsc::channel(WATCH_STREAM_CAPACITY);
        let scheduler = self.scheduler.clone();
        tokio::spawn(async move {
            use pb::sweep_event::Event;
            // Held while this watcher is: the scheduler builds every job's events for it.
            let _in_detail = in_detail;
            let over = snapshot.state != SweepState::Running;
            let snapshot = sweep_status(snapshot);
            let first = pb::SweepEvent { event: Some(Event::Snapshot(snapshot.clone())) };
            if tx.send(Ok(first)).await.is_err() {
                return;
            }
            if over {
                let _ = tx.send(Ok(pb::SweepEvent { event: Some(Event::SweepFinished(snapshot)) })).await;
                return;
            }
            loop {
                let event = match events.recv().await {
                    Ok(e) if !heard_by(&e, counts_only) => continue,
                    Ok(e) => sweep_event(e),
                    // A slow watcher missed events: send where things stand instead.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let failures = FailurePage::default();
                        match scheduler.status(SweepId::from(sweep.clone()), failures).await {
                            Ok(s) => pb::SweepEvent { event: Some(Event::Snapshot(sweep_status(s))) },
                            Err(_) => return,
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let last = matches!(event.event, Some(Event::SweepFinished(_)));
                if tx.send(Ok(event)).await.is_err() || last {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn get_sweep(&self, request: Request<pb::GetSweepRequest>) -> Result<Response<pb::SweepStatus>, Status> {
        let r = request.into_inner();
        let limit = match r.failures_limit as usize {
            0 => FailurePage::DEFAULT_LIMIT,
            n if n > FailurePage::MAX_LIMIT => {
                return Err(Status::invalid_argument(format!(
                    "failures_limit: {n} is over the most a page lists, {}",
                    FailurePage::MAX_LIMIT
                )))
            }
            n => n,
        };
        let failures = FailurePage { offset: r.failures_offset as usize, limit };
        let status = self.scheduler.status(SweepId::from(r.sweep_id), failures).await?;
        Ok(Response::new(sweep_status(status)))
    }

    async fn list_sweeps(
        &self,
        _request: Request<pb::ListSweepsRequest>,
    ) -> Result<Response<pb::ListSweepsResponse>, Status> {
        let sweeps = self.scheduler.list().await?;
        Ok(Response::new(pb::ListSweepsResponse { sweeps: sweeps.into_iter().map(sweep_status).collect() }))
    }

    async fn cancel_sweep(
        &self,
        request: Request<pb::CancelSweepRequest>,
    ) -> Result<Response<pb::SweepStatus>, Status> {
        let sweep = request.into_inner().sweep_id;
        Ok(Response::new(sweep_status(self.scheduler.cancel(SweepId::from(sweep)).await?)))
    }

    async fn server_info(
        &self,
        _request: Request<pb::ServerInfoRequest>,
    ) -> Result<Response<pb::ServerInfoResponse>, Status> {
        Ok(Response::new(server_info(&self.catalog.get())))
    }

    async fn delete_sweep(
        &self,
        request: Request<pb::DeleteSweepRequest>,
    ) -> Result<Response<pb::DeleteSweepResponse>, Status> {
        let r = request.into_inner();
        let sweep = r.sweep_id;
        let (dir, n_jobs) = self.scheduler.delete(SweepId::from(sweep)).await?;
        let mut results_removed = false;
        if !r.keep_results && dir.exists() {
            tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| Status::internal(format!("the sweep is deleted, but removing its results failed: {e}")))?;
            results_removed = true;
        }
        Ok(Response::new(pb::DeleteSweepResponse { n_jobs, results_removed }))
    }

    async fn get_summary(
        &self,
        request: Request<pb::GetSummaryRequest>,
    ) -> Result<Response<pb::GetSummaryResponse>, Status> {
        let sweep = request.into_inner().sweep_id;
        let inputs = self.scheduler.summary_inputs(SweepId::from(sweep.clone()), false).await?;
        let current = self.scheduler.current(&sweep, &inputs).await?;
        if let Current::Nothing = current {
            return Err(Status::failed_precondition(format!("sweep `{sweep}` has no finished job yet")));
        }
        let n_shards = inputs.n_done;
        let answer = tokio::task::spawn_blocking(move || -> results::Result<pb::GetSummaryResponse> {
            let order: Vec<String> = inputs.metrics.iter().map(|m| m.name.to_string()).collect();
            let comparisons = match inputs.sweep_dir.join(results::rounds::COMPARISONS_FILE).is_file() {
                true => results::comparisons_table(&inputs.sweep_dir)?,
                false => String::new(),
            };
            Ok(match current {
                Current::Nothing => unreachable!("answered above"),
                Current::Live { last, n_cells, n_exact, .. } => pb::GetSummaryResponse {
                    table: results::render_final(&last, &order, inputs.headline)?,
                    n_shards,
                    n_failed: inputs.n_failed,
                    summary_path: String::new(),
                    final_path: String::new(),
                    final_parquet: results::parquet_bytes(&last)?,
                    provisional: true,
                    n_cells,
                    n_cells_exact: n_exact,
                    comparisons,
                },
                Current::Files { n_cells } => {
                    let summary_path = inputs.sweep_dir.join(results::SUMMARY_FILE);
                    let final_path = inputs.sweep_dir.join(results::FINAL_FILE);
                    pb::GetSummaryResponse {
                        table: results::final_table(&inputs.sweep_dir, inputs.headline)?,
                        n_shards,
                        n_failed: inputs.n_failed,
                        summary_path: summary_path.display().to_string(),
                        final_path: final_path.display().to_string(),
                        final_parquet: results::read_bytes(&final_path)?,
                        provisional: false,
                        n_cells,
                        n_cells_exact: n_cells,
                        comparisons,
                    }
                }
            })
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(|e| Status::internal(format!("reading the summary: {e:#}")))?;
        Ok(Response::new(answer))
    }

    type FetchResultsStream = ChunkStream;

    async fn fetch_results(
        &self,
        request: Request<pb::FetchResultsRequest>,
    ) -> Result<Response<Self::FetchResultsStream>, Status> {
        let request = request.into_inner();
        let sweep = request.sweep_id.clone();
        let table = fetch::check(&request)?;
        let with_keys = matches!(table, fetch::Wanted::Trajectories);
        let inputs = self.scheduler.summary_inputs(SweepId::from(sweep.clone()), with_keys).await?;
        let source = match table {
            fetch::Wanted::Trajectories => fetch::Source::Trajectories,
            // Written after each judged round: the file, while the sweep runs too.
            fetch::Wanted::Summary(which @ fetch::SummaryTable::Comparisons) => {
                fetch::Source::File(inputs.sweep_dir.join(which.file_name()))
            }
            fetch::Wanted::Summary(which) => match self.scheduler.current(&sweep, &inputs).await? {
                Current::Live { summary, last, .. } => match which {
                    fetch::SummaryTable::Summary => fetch::Source::Frame(summary),
                    fetch::SummaryTable::Final => fetch::Source::Frame(last),
                    fetch::SummaryTable::Along(_) | fetch::SummaryTable::Comparisons => {
                        return Err(Status::failed_precondition(format!(
                            "along: sweep `{sweep}` is running; its along tables are written when it finishes"
                        )))
                    }
                },
                Current::Files { .. } => fetch::Source::File(inputs.sweep_dir.join(which.file_name())),
                Current::Nothing => {
                    return Err(Status::failed_precondition(format!("sweep `{sweep}` has no finished job yet")))
                }
            },
        };
        if let fetch::Source::File(path) = &source {
            if !path.is_file() {
                return Err(Status::failed_precondition(format!(
                    "table: sweep `{sweep}` has no {}",
                    results::file_name(path)
                )));
            }
        }
        let (tx, rx) = mpsc::channel(FETCH_CHUNKS_AHEAD);
        tokio::task::spawn_blocking(move || fetch::send(source, &request, &inputs.sweep_dir, &inputs.done_keys, &tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn declare_family(
        &self,
        request: Request<pb::DeclareFamilyRequest>,
    ) -> Result<Response<pb::DeclareFamilyResponse>, Status> {
        let grant = grant_of(&request);
        let declaration = request
            .into_inner()
            .declaration
            .ok_or_else(|| Status::invalid_argument("declaration: give the family's declaration"))?;
        let declaration = self
            .catalog
            .check(declaration)
            .map_err(|e| Status::invalid_argument(format!("declaration.{}", e.message())))?;
        let declarer = Declarer { token: grant.token_label().to_string(), unlimited: grant.is_admin() };
        let Declared { digest, created } = self.scheduler.declare(declaration, declarer).await?;
        Ok(Response::new(pb::DeclareFamilyResponse { digest, created }))
    }

    async fn describe_family(
        &self,
        request: Request<pb::DescribeFamilyRequest>,
    ) -> Result<Response<pb::FamilyInfo>, Status> {
        let pb::DescribeFamilyRequest { name, version, digest } = request.into_inner();
        let registry = self.catalog.get();
        let family = match (version, digest.as_str()) {
            (0, "") => registry.family(&name).ok(),
            (_, "") => registry.families().filter(|f| f.name() == name && f.version() == version).last(),
            (_, digest) => registry.resolve(&format!("{name}+{digest}")).ok(),
        };
        let Some(family) = family.filter(|f| version == 0 || f.version() == version) else {
            let kept: Vec<String> = registry
                .families()
                .filter(|f| f.name() == name)
                .map(|f| format!("version {} (digest {})", f.version(), f.declared_digest().unwrap_or("built in")))
                .collect();
            let known = if kept.is_empty() { "none".to_string() } else { kept.join(", ") };
            return Err(Status::not_found(format!(
                "no such declaration of family `{name}`; this coordinator knows of it: {known}"
            )));
        };
        Ok(Response::new(declared::family_info(family)))
    }

    async fn remove_family(
        &self,
        request: Request<pb::RemoveFamilyRequest>,
    ) -> Result<Response<pb::RemoveFamilyResponse>, Status> {
        if !grant_of(&request).is_admin() {
            return Err(Status::permission_denied("removing a declaration takes an admin token"));
        }
        let pb::RemoveFamilyRequest { name, version, digest } = request.into_inner();
        let digest = Some(digest).filter(|d| !d.is_empty());
        let removed = self.scheduler.remove_family(name, version, digest).await?;
        Ok(Response::new(pb::RemoveFamilyResponse { removed }))
    }
}

/// The longest `name`, `host` or `software` a worker may register with.
const MAX_WORKER_FIELD: usize = 256;
/// The most slots a worker may declare (they sum into /metrics' slot gauge).
const MAX_SLOTS: u32 = 4096;

/// Declared families ServerInfo gives whole, in bytes; beyond, they are abridged.
pub const SERVER_INFO_DECLARED_BYTES: usize = 2 << 20;

/// The coordinator's version, build and family schemas, as ServerInfo answers them: the
/// built-in families whole, the declared ones whole up to [`SERVER_INFO_DECLARED_BYTES`]
/// of them and abridged beyond (DescribeFamily gives one whole).
pub fn server_info(registry: &Registry) -> pb::ServerInfoResponse {
    use prost::Message;
    let mut whole = 0;
    let families = registry
        .families()
        .map(|f| {
            let info = declared::family_info(f);
            if f.declared_digest().is_none() {
                return info;
            }
            whole += info.encoded_len();
            match whole <= SERVER_INFO_DECLARED_BYTES {
                true => info,
                false => declared::abridged(info),
            }
        })
        .collect();
    pb::ServerInfoResponse {
        version: env!("CARGO_PKG_VERSION").to_string(),
        build: registry.digest(),
        key_salt: armada_core::key_salt(2),
        stream_salt: armada_core::STREAM_SALT.to_string(),
        families,
    }
}

impl Coordinator {
    /// One attempt's commit: its inline records into the spool, then the scheduler's
    /// decision, to be awaited.
    async fn complete(&self, session: SessionId, r: pb::CompleteAttemptRequest) -> Result<Pending<bool>, Status> {
        let (attempt, n_records) = (AttemptId(r.attempt_id), r.n_records);
        self.append_inline(&session, attempt, r.records, r.columns)?;
        Ok(self.scheduler.complete(session, attempt, n_records).await?)
    }

    /// Commits of one session sent as one scheduler command; their answers to await go to
    /// `pending` (or, if the scheduler is gone, its error for each).
    async fn complete_group(
        &self,
        session: SessionId,
        attempts: Vec<(AttemptId, u32)>,
        pending: &mut Vec<(AttemptId, Result<Pending<bool>, Status>)>,
    ) {
        if attempts.is_empty() {
            return;
        }
        let ids: Vec<AttemptId> = attempts.iter().map(|(id, _)| *id).collect();
        match self.scheduler.complete_many(session, attempts).await {
            Ok(answers) => pending.extend(ids.into_iter().zip(answers.into_iter().map(Ok))),
            Err(e) => pending.extend(ids.into_iter().map(|id| (id, Err(Status::from(e.clone()))))),
        }
    }

    /// Records a commit carries into its attempt's spool.
    fn append_inline(
        &self,
        session: &SessionId,
        attempt: AttemptId,
        records: Vec<pb::StepRecord>,
        columns: Option<pb::RecordColumns>,
    ) -> Result<(), Status> {
        let records = Arrived::from_wire(records, columns).map_err(Status::invalid_argument)?;
        if records.is_empty() {
            return Ok(());
        }
        match self.append(attempt, session, &records) {
            // A record that breaks the schema breaks the spool: the commit is then refused
            // with the reason, and the attempt voided.
            Ok(_) => self.records_received(records.len()),
            Err(e) if e.kind() == ErrorKind::InvalidArgument => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Records that arrived for `attempt` into its spool; how many it holds now.
    fn append(&self, attempt: AttemptId, session: &SessionId, records: &Arrived) -> Result<u32, CommandError> {
        match records {
            Arrived::Rows(rows) => self.scheduler.append(attempt, session, rows),
            Arrived::Columns(columns) => self.scheduler.append_columns(attempt, session, columns),
        }
    }

    fn records_received(&self, n: usize) {
        self.scheduler.records_received(n as u64);
    }
}

#[tonic::async_trait]
impl pb::workers_server::Workers for Coordinator {
    async fn register(&self, request: Request<pb::RegisterRequest>) -> Result<Response<pb::RegisterResponse>, Status> {
        let grant = grant_of(&request);
        // What the coordinator sees of this registration, whatever the worker claims.
        let observed = Observed {
            token: grant.token_label().to_string(),
            peer: request.remote_addr().map_or_else(|| "unknown".to_string(), |a| a.to_string()),
            registered_ms: super::super::scheduler::now_ms(),
            unlimited: grant.is_admin(),
        };
        let pb::RegisterRequest { name, slots, version, families, build, declarations, host, software, processor } =
            request.into_inner();
        for (field, value) in [("name", &name), ("host", &host), ("software", &software), ("processor", &processor)] {
            // Kept with the session and recorded with every trajectory the worker commits:
            // bounded, like every field that sizes what the coordinator keeps.
            if value.chars().count() > MAX_WORKER_FIELD {
                return Err(Status::invalid_argument(format!(
                    "{field}: {} characters, over {MAX_WORKER_FIELD}",
                    value.chars().count()
                )));
            }
        }
        if slots > MAX_SLOTS {
            return Err(Status::invalid_argument(format!("slots: {slots}, over {MAX_SLOTS}")));
        }
        for (i, family) in families.iter().enumerate() {
            grant.check(family, &format!("families[{i}]"))?;
        }
        for (i, declaration) in declarations.iter().enumerate() {
            grant.check(&declaration.name, &format!("declarations[{i}].name"))?;
        }
        let declarations = declarations
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                self.catalog
                    .check(d)
                    .map_err(|e| Status::invalid_argument(format!("declarations[{i}].{}", e.message())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // A declared family is this very declaration; a built-in one, this build's.
        let references: Vec<String> = families
            .iter()
            .map(|name| match declarations.iter().find(|d| d.info.name == *name) {
                Some(d) => format!("{name}+{}", d.digest),
                None => name.clone(),
            })
            .collect();
        let registration =
            Registration { name, slots, version, families, build, declarations, host, software, processor, observed };
        let Registered { worker_id, session, lease_ttl, heartbeat } = self.scheduler.register(registration).await?;
        // Registered: every family it names is known now.
        let registry = self.catalog.get();
        let known: Vec<_> = references.iter().filter_map(|r| registry.resolve(r).ok()).collect();
        Ok(Response::new(pb::RegisterResponse {
            worker_id,
            lease_ttl_ms: lease_ttl.as_millis() as u32,
            heartbeat_interval_ms: heartbeat.as_millis() as u32,
            session: self.sealer.seal(session.as_str(), grant.token_label()),
            key_salts: known.iter().map(|f| (f.name().to_string(), f.key_salt())).collect(),
            families: known.iter().map(|f| declared::family_info(*f)).collect(),
        }))
    }

    async fn lease(&self, request: Request<pb::LeaseRequest>) -> Result<Response<pb::LeaseResponse>, Status> {
        let grant = grant_of(&request);
        let r = request.into_inner();
        let session = self.sealer.open(&r.session, grant.token_label())?;
        let Leases { leases, retry_after } =
            self.scheduler.lease_within(session, r.max_jobs, Duration::from_millis(r.wait_ms.into())).await?;
        Ok(Response::new(pb::LeaseResponse {
            leases: leases.into_iter().map(job_lease).collect(),
            retry_after_ms: retry_after.as_millis() as u32,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let grant = grant_of(&request);
        let r = request.into_inner();
        let session = self.sealer.open(&r.session, grant.token_label())?;
        let abandon =
            self.scheduler.heartbeat(session, AttemptId::all(r.attempt_ids), AttemptId::all(r.started_ids)).await?;
        Ok(Response::new(pb::HeartbeatResponse { abandon: abandon.into_iter().map(|a| a.0).collect() }))
    }

    async fn upload_records(
        &self,
        request: Request<Streaming<pb::RecordBatch>>,
    ) -> Result<Response<pb::UploadAck>, Status> {
        let grant = grant_of(&request);
        let mut stream = request.into_inner();
        let mut n_records = 0;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let session = self.sealer.open(&batch.session, grant.token_label())?;
            let records = Arrived::from_wire(batch.records, batch.columns).map_err(Status::invalid_argument)?;
            // Straight into the attempt's spool: record batches never wait on the scheduler.
            match self.append(AttemptId(batch.attempt_id), &session, &records) {
                Ok(n) => {
                    n_records = n;
                    self.records_received(records.len());
                }
                Err(e) => {
                    if e.kind() == ErrorKind::InvalidArgument {
                        // The records broke the job's schema: void the attempt now.
                        let attempt = AttemptId(batch.attempt_id);
                        let _ = self.scheduler.refused(attempt).await;
                    }
                    return Err(e.into());
                }
            }
        }
        Ok(Response::new(pb::UploadAck { n_records }))
    }

    async fn complete_attempt(
        &self,
        request: Request<pb::CompleteAttemptRequest>,
    ) -> Result<Response<pb::CompleteAttemptResponse>, Status> {
        let grant = grant_of(&request);
        let r = request.into_inner();
        let session = self.sealer.open(&r.session, grant.token_label())?;
        let committed = self.complete(session, r).await?.answer().await?;
        Ok(Response::new(pb::CompleteAttemptResponse { committed }))
    }

    async fn complete_attempts(
        &self,
        request: Request<pb::CompleteAttemptsRequest>,
    ) -> Result<Response<pb::CompleteAttemptsResponse>, Status> {
        // Every commit goes to the scheduler before any answer is awaited (they share a
        // part), those of one session in one command.
        let mut pending = Vec::new();
        let grant = grant_of(&request);
        let request = request.into_inner();
        let batch_session = self.sealer.open(&request.session, grant.token_label());
        let mut group: (SessionId, Vec<(AttemptId, u32)>) = (SessionId::new(""), Vec::new());
        for r in request.attempts {
            let session = match r.session.is_empty() {
                true => batch_session.clone(),
                false => self.sealer.open(&r.session, grant.token_label()),
            };
            let session = match session {
                Ok(session) => session,
                Err(e) => {
                    pending.push((AttemptId(r.attempt_id), Err(e)));
                    continue;
                }
            };
            if session != group.0 {
                let (before, attempts) = std::mem::replace(&mut group, (session, Vec::new()));
                self.complete_group(before, attempts, &mut pending).await;
            }
            let (attempt_id, n_records) = (AttemptId(r.attempt_id), r.n_records);
            match self.append_inline(&group.0, attempt_id, r.records, r.columns) {
                Ok(()) => group.1.push((attempt_id, n_records)),
                Err(e) => pending.push((attempt_id, Err(e))),
            }
        }
        let (session, attempts) = group;
        self.complete_group(session, attempts, &mut pending).await;
        let mut outcomes = Vec::with_capacity(pending.len());
        for (attempt_id, answer) in pending {
            let answer = match answer {
                Ok(reply) => reply.answer().await.map_err(Status::from),
                Err(e) => Err(e),
            };
            outcomes.push(match answer {
                Ok(committed) => {
                    pb::AttemptOutcome { attempt_id: attempt_id.0, committed, code: 0, message: String::new() }
                }
                Err(e) => pb::AttemptOutcome {
                    attempt_id: attempt_id.0,
                    committed: false,
                    code: e.code() as i32,
                    message: e.message().to_string(),
                },
            });
        }
        Ok(Response::new(pb::CompleteAttemptsResponse { outcomes }))
    }

    async fn fail_attempt(
        &self,
        request: Request<pb::FailAttemptRequest>,
    ) -> Result<Response<pb::FailAttemptResponse>, Status> {
        let grant = grant_of(&request);
        let r = request.into_inner();
        let session = self.sealer.open(&r.session, grant.token_label())?;
        let cause = match r.cause() {
            pb::FailureCause::Job => Cause::Job,
            pb::FailureCause::Worker | pb::FailureCause::Unspecified => Cause::Worker,
        };
        let will_retry = self.scheduler.fail(session, AttemptId(r.attempt_id), r.error, cause).await?;
        Ok(Response::new(pb::FailAttemptResponse { will_retry }))
    }

    async fn release_attempts(
        &self,
        request: Request<pb::ReleaseAttemptsRequest>,
    ) -> Result<Response<pb::ReleaseAttemptsResponse>, Status> {
        let grant = grant_of(&request);
        let r = request.into_inner();
        let session = self.sealer.open(&r.session, grant.token_label())?;
        let released = self.scheduler.release(session, AttemptId::all(r.attempt_ids)).await?;
        Ok(Response::new(pb::ReleaseAttemptsResponse { released }))
    }
}

/// The one mapping of a command's refusal to its gRPC status.
impl From<CommandError> for Status {
    fn from(e: CommandError) -> Status {
        let code = match e.kind() {
            ErrorKind::NotFound => tonic::Code::NotFound,
            ErrorKind::PermissionDenied => tonic::Code::PermissionDenied,
            ErrorKind::InvalidArgument => tonic::Code::InvalidArgument,
            ErrorKind::FailedPrecondition => tonic::Code::FailedPrecondition,
            ErrorKind::Unavailable => tonic::Code::Unavailable,
            ErrorKind::Internal => tonic::Code::Internal,
        };
        Status::new(code, e.message())
    }
}

/// The wire's status of a sweep.
fn sweep_status(s: SweepStatus) -> pb::SweepStatus {
    let state = match s.state {
        SweepState::Running => pb::SweepState::Running,
        SweepState::Finished => pb::SweepState::Finished,
        SweepState::Cancelled => pb::SweepState::Cancelled,
    };
    pb::SweepStatus {
        sweep_id: s.sweep_id.to_string(),
        family: s.family,
        state: state as i32,
        n_jobs: s.n_jobs,
        n_queued: s.n_queued,
        n_running: s.n_running,
        n_leased: s.n_leased,
        n_done: s.n_done,
        n_failed: s.n_failed,
        n_cancelled: s.n_cancelled,
        results_dir: s.results_dir.display().to_string(),
        failures: s.failures.into_iter().map(job_failed).collect(),
        n_failures_omitted: s.n_failures_omitted,
        write_troubles: s.write_troubles.into_iter().map(write_trouble).collect(),
    }
}

fn write_trouble(t: Trouble) -> pb::WriteTrouble {
    let unix_ms =
        |at: std::time::SystemTime| at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    pb::WriteTrouble {
        place: t.place.to_string(),
        error: t.error,
        since_unix_ms: unix_ms(t.since),
        last_unix_ms: unix_ms(t.last),
        failures: t.failures,
    }
}

fn job_failed(f: JobFailed) -> pb::JobFailed {
    pb::JobFailed {
        job_key: f.job_key,
        description: f.description,
        error: f.error,
        attempt: f.attempt,
        r#final: f.is_final,
    }
}

fn job_lease(l: Lease) -> pb::JobLease {
    pb::JobLease {
        attempt_id: l.attempt_id.0,
        sweep_id: l.sweep_id.to_string(),
        job_key: l.job_key,
        spec: Some(wire::spec_to_wire(&l.spec)),
        attempt: l.attempt,
    }
}

/// Whether a watcher hears `event`: one watching in detail hears every job's events, one
/// that asked for counts only hears `Progress` instead (the others' events are built for
/// the others).
fn heard_by(event: &SweepEvent, counts_only: bool) -> bool {
    match event {
        SweepEvent::JobStarted { .. } | SweepEvent::JobFinished { .. } => !counts_only,
        SweepEvent::Progress(_) => counts_only,
        SweepEvent::JobFailed(_)
        | SweepEvent::SweepFinished(_)
        | SweepEvent::Snapshot(_)
        | SweepEvent::WriteTroubles(_) => true,
    }
}

fn sweep_event(e: SweepEvent) -> pb::SweepEvent {
    use pb::sweep_event::Event;
    let event = match e {
        SweepEvent::JobStarted { job_key, description, attempt_id, attempt, worker } => {
            Event::JobStarted(pb::JobStarted { job_key, description, attempt_id: attempt_id.0, attempt, worker })
        }
        SweepEvent::JobFinished { job_key, description, final_metrics } => Event::JobFinished(pb::JobFinished {
            job_key,
            description,
            final_metrics: final_metrics.into_iter().map(|(name, value)| pb::MetricValue { name, value }).collect(),
        }),
        SweepEvent::JobFailed(f) => Event::JobFailed(job_failed(f)),
        SweepEvent::SweepFinished(s) => Event::SweepFinished(sweep_status(s)),
        SweepEvent::Snapshot(s) => Event::Snapshot(sweep_status(s)),
        SweepEvent::WriteTroubles(troubles) => {
            Event::WriteTroubles(pb::WriteTroubles { troubles: troubles.into_iter().map(write_trouble).collect() })
        }
        SweepEvent::Progress(c) => Event::Progress(pb::SweepCounts {
            n_jobs: c.n_jobs,
            n_queued: c.n_queued,
            n_running: c.n_running,
            n_done: c.n_done,
            n_failed: c.n_failed,
            n_cancelled: c.n_cancelled,
            n_leased: c.n_leased,
        }),
    };
    pb::SweepEvent { event: Some(event) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest declaration the rules allow: 64 parameters whose docs take 4,000
    /// characters each, about 256 KiB.
    fn maximal(name: &str) -> pb::FamilyInfo {
        let mut info = declared::family_info(crate::registry().family("testkit").unwrap());
        info.name = name.into();
        let doc = "d".repeat(4000);
        let template =
            info.algorithms[0].params.first().cloned().unwrap_or_else(|| info.algorithms[1].params[0].clone());
        info.algorithms[0].params =
            (0..64).map(|i| pb::ParamInfo { name: format!("p{i}"), doc: doc.clone(), ..template.clone() }).collect();
        info
    }

    /// With 256 maximal declarations ServerInfo stays under 4 MiB, the default limit of
    /// gRPC clients: declared families beyond 2 MiB of them come abridged, and each is
    /// whole as DescribeFamily gives it.
    #[test]
    fn server_info_stays_under_4_mib_whatever_is_declared() {
        use prost::Message;
        let catalog = Catalog::new(crate::registry());
        let declarer = Declarer::unlimited("test");
        for i in 0..declared::MAX_DECLARATIONS {
            let checked = catalog.check(maximal(&format!("big{i}"))).unwrap();
            assert!(checked.info.encoded_len() > 250 * 1024, "{}", checked.info.encoded_len());
            let Ok(crate::coordinator::durable::catalog::Decision::New(checked)) = catalog.decide(checked, &declarer)
            else {
                panic!("new")
            };
            catalog.add(*checked, "test");
        }
        let registry = catalog.get();
        let info = server_info(&registry);
        let size = info.encoded_len();
        assert!(size < 4 << 20, "ServerInfo takes {size} bytes");
        assert_eq!(info.families.len(), registry.families().count());
        let abridged: Vec<&pb::FamilyInfo> = info.families.iter().filter(|f| f.abridged).collect();
        assert_eq!(abridged.len(), declared::MAX_DECLARATIONS - 8, "8 whole ones fit in 2 MiB");
        for f in &abridged {
            assert!(f.algorithms.is_empty() && f.metrics.is_empty() && f.declared && !f.digest.is_empty());
            let whole = declared::family_info(registry.resolve(&format!("{}+{}", f.name, f.digest)).unwrap());
            assert_eq!(whole.algorithms[0].params.len(), 64);
            assert_eq!(declared::abridged(whole), **f);
        }
        assert!(info.families.iter().filter(|f| !f.declared).all(|f| !f.abridged), "built-in ones whole");
    }

    /// Removing a declaration frees its place but not the memory of its `'static` form: a
    /// process takes at most 64 MiB of declarations, removed ones included.
    #[test]
    fn declared_and_removed_declarations_are_bounded_in_bytes_per_process() {
        use prost::Message;
        let catalog = Catalog::new(crate::registry());
        let declarer = Declarer::unlimited("test");
        let size = catalog.check(maximal("big")).unwrap().info.encoded_len();
        let mut taken = 0;
        let refused = loop {
            let checked = catalog.check(maximal("big")).unwrap();
            match catalog.decide(checked, &declarer) {
                Ok(crate::coordinator::durable::catalog::Decision::New(checked)) => {
                    let digest = checked.digest.clone();
                    catalog.add(*checked, "test");
                    catalog.remove("big", &[digest]);
                    taken += 1;
                }
                Ok(_) => panic!("a removed declaration is new again"),
                Err(e) => break e,
            }
        };
        assert_eq!(taken, (64 << 20) / size);
        assert!(refused.message().contains("64 MiB of declarations since it started"), "{}", refused.message());
        assert!(catalog.get().family("big").is_err());
    }

    /// ServerInfo carries what a worker in another language needs: the build it must
    /// match, the key salt, and each family's parameter and metric schemas.
    #[test]
    fn server_info_describes_the_families() {
        let registry = crate::registry();
        let info = server_info(&registry);
        assert_eq!(info.build, registry.digest());
        assert_eq!(info.stream_salt, "armada-job-v2");
        // Each family's key salt is its version's, and keys computed from it are the
        // registry's (a worker in another language follows the same text).
        for f in &info.families {
            assert_eq!(f.key_salt, format!("armada-job-v{}", f.version), "{}", f.name);
        }
        let cvs = info.families.iter().find(|f| f.name == "cvs").unwrap();
        assert_eq!(cvs.version, 6, "bumped for the code mode's Adam refit, for ending runs early, for numerics with the same bits on every processor, then for fused multiply-adds");
        assert!(cvs.ends_early);
        assert!(!info.families.iter().find(|f| f.name == "lse").unwrap().ends_early);
        let names: Vec<&str> = info.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, registry.families().map(|f| f.name()).collect::<Vec<_>>());
        let testkit = info.families.iter().find(|f| f.name == "testkit").unwrap();
        assert_eq!(testkit.metrics.len(), 1);
        assert_eq!(
            (testkit.metrics[0].name.as_str(), testkit.metrics[0].kind),
            ("value", pb::metric_info::Kind::Float as i32)
        );
        let slow = testkit.algorithms.iter().find(|a| a.name == "slow").unwrap();
        let ms = &slow.params[0];
        assert_eq!(
            (ms.name.as_str(), ms.kind, ms.min, ms.max),
            ("ms", pb::param_info::Kind::Int as i32, 0.0, 60_000.0)
        );
        assert_eq!(ms.default.as_ref().and_then(|d| d.kind.clone()), Some(pb::param_value::Kind::Int(100)));
        // Every Int metric of every family is declared as such.
        for f in registry.families() {
            let wire = info.families.iter().find(|w| w.name == f.name()).unwrap();
            for (m, w) in f.metrics().iter().zip(&wire.metrics) {
                let int = m.kind == armada_core::MetricKind::Int;
                assert_eq!(w.kind == pb::metric_info::Kind::Int as i32, int, "{}.{}", f.name(), m.name);
            }
        }
    }

    /// A counts-only watcher hears the counts and not the jobs' events, one in detail the
    /// reverse; both hear failures, troubles and the sweep's end.
    #[test]
    fn each_watcher_hears_the_jobs_events_or_the_counts() {
        use crate::coordinator::state::replies::SweepCounts;
        let started = SweepEvent::JobStarted {
            job_key: "k".into(),
            description: "d".into(),
            attempt_id: armada_proto::ids::AttemptId(1),
            attempt: 1,
            worker: "w1".into(),
        };
        let finished = SweepEvent::JobFinished { job_key: "k".into(), description: "d".into(), final_metrics: vec![] };
        let progress = SweepEvent::Progress(SweepCounts { n_jobs: 2, n_done: 1, ..SweepCounts::default() });
        let troubles = SweepEvent::WriteTroubles(vec![]);
        let heard = |counts_only| [&started, &finished, &progress, &troubles].map(|e| heard_by(e, counts_only));
        assert_eq!(heard(true), [false, false, true, true]);
        assert_eq!(heard(false), [true, true, false, true]);
        assert_eq!(
            sweep_event(progress).event,
            Some(pb::sweep_event::Event::Progress(pb::SweepCounts { n_jobs: 2, n_done: 1, ..Default::default() }))
        );
    }
}
