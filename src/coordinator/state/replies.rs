//! What the scheduler is asked and what it answers and announces, in armada's own types.
//! `service.rs` alone converts them to and from the wire's (prost) messages, so the
//! scheduler knows nothing of how the protocol encodes them (a family's declaration is
//! kept in its wire form, as data: [`Checked`]).

use super::declared::Checked;
use super::trouble::Trouble;
use armada_core::{JobSpec, MetricDef};
use armada_proto::ids::{AttemptId, SessionId, SweepId};
use armada_proto::v1 as pb;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// A worker asks to register.
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    /// The worker's own name, for messages.
    pub name: String,
    /// Jobs it runs side by side (0: not said).
    pub slots: u32,
    /// The armada version it runs.
    pub version: String,
    /// The families it runs (at least one).
    pub families: Vec<String>,
    /// Its registry's digest ([`armada_core::Registry::digest`]).
    pub build: String,
    /// The families it declares (checked already, off the scheduler).
    pub declarations: Vec<Checked>,
    /// Its host, what it runs and on which processor, for the provenance of what it commits.
    pub host: String,
    pub software: String,
    pub processor: String,
    /// What the coordinator saw of the registration, whatever the worker says: the label of
    /// the token it came with, the address it came from, and when (UNIX milliseconds).
    pub observed: Observed,
}

/// What the coordinator itself observed of a worker's registration (recorded beside what
/// the worker claims in every trajectory's provenance).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub token: String,
    pub peer: String,
    pub registered_ms: i64,
    /// Its token is an admin's, or the coordinator has none: the per-token quota of
    /// declarations does not hold it.
    pub unlimited: bool,
}

/// A declaration was accepted.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    pub digest: String,
    /// False when the same declaration was kept already.
    pub created: bool,
}

/// A registered worker session.
#[derive(Clone, Debug, PartialEq)]
pub struct Registered {
    /// The public id, `w1`, `w2`, ...
    pub worker_id: String,
    /// The secret that every later call of the worker names.
    pub session: SessionId,
    pub lease_ttl: Duration,
    pub heartbeat: Duration,
}

/// One leased attempt of a job.
#[derive(Clone, Debug, PartialEq)]
pub struct Lease {
    pub attempt_id: AttemptId,
    pub sweep_id: SweepId,
    pub job_key: String,
    pub spec: JobSpec,
    /// The attempt's number for its job, from 1.
    pub attempt: u32,
}

/// The answer to a lease request: attempts, or none and when to ask again.
#[derive(Clone, Debug, PartialEq)]
pub struct Leases {
    pub leases: Vec<Lease>,
    pub retry_after: Duration,
}

/// A submission became its sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Submitted {
    pub sweep_id: SweepId,
    pub n_jobs: u32,
    /// Jobs new to the sweep.
    pub n_added: u32,
    /// Of the sweep's jobs, those whose trajectories were on disk already.
    pub n_already_done: u32,
    /// Its declared families whose declaration changed since its last submission.
    pub revised: Vec<pb::RevisedFamily>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepState {
    Running,
    Finished,
    Cancelled,
}

impl SweepState {
    /// Every state, in declaration order (`state as usize` is its index here).
    pub const ALL: [SweepState; 3] = [SweepState::Running, SweepState::Finished, SweepState::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            SweepState::Running => "running",
            SweepState::Finished => "finished",
            SweepState::Cancelled => "cancelled",
        }
    }
}

/// A job's failure: final, or of one attempt with another to come.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFailed {
    pub job_key: String,
    pub description: String,
    pub error: String,
    pub attempt: u32,
    /// No attempt follows: the job is failed.
    pub is_final: bool,
}

/// A sweep's state and counts, with one page of its failures.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepStatus {
    pub sweep_id: SweepId,
    pub family: String,
    pub state: SweepState,
    pub n_jobs: u32,
    pub n_queued: u32,
    /// Running on a worker; `n_leased` more wait there, leased ahead.
    pub n_running: u32,
    pub n_leased: u32,
    pub n_done: u32,
    pub n_failed: u32,
    pub n_cancelled: u32,
    pub results_dir: PathBuf,
    pub failures: Vec<JobFailed>,
    /// Failed jobs beyond the page.
    pub n_failures_omitted: u32,
    /// Writes failing now that hold the sweep up: the store's, its parts'.
    pub write_troubles: Vec<Trouble>,
}

/// A registered worker, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerInfo {
    pub id: String,
    pub name: String,
    pub families: Vec<String>,
    pub slots: u32,
    /// Attempts it holds now: running, and leased ahead while jobs are short.
    pub leased: u32,
    /// Since its last request.
    pub idle: Duration,
    /// Heard from within a lease's lifetime: a worker silent for longer has lost its leases.
    pub alive: bool,
}

/// One job of a sweep, as the dashboard lists it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobInfo {
    pub key: String,
    pub seed: u64,
    pub benchmark: String,
    pub benchmark_params: String,
    pub algorithm: String,
    pub algorithm_params: String,
    pub state: &'static str,
    pub attempts: u32,
    pub error: Option<String>,
}

/// Which jobs of a sweep to list: those of one cell, or one job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobFilter {
    pub benchmark: Option<String>,
    pub benchmark_params: Option<String>,
    pub algorithm: Option<String>,
    pub algorithm_params: Option<String>,
}

/// What watchers of a sweep hear as it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum SweepEvent {
    JobStarted {
        job_key: String,
        description: String,
        attempt_id: AttemptId,
        attempt: u32,
        worker: String,
    },
    /// A job's trajectory is committed; its last record's metrics, by name.
    JobFinished {
        job_key: String,
        description: String,
        final_metrics: Vec<(String, f64)>,
    },
    JobFailed(JobFailed),
    /// Nothing is queued or running any more.
    SweepFinished(SweepStatus),
    /// Where the sweep stands, again: a resolving sweep's next round was added.
    Snapshot(SweepStatus),
    /// Writes that hold the sweep up began or stopped failing: those failing now (none:
    /// every write succeeds again).
    WriteTroubles(Vec<Trouble>),
    /// Where the sweep's jobs stand after a batch of them was done: what a watcher that
    /// asked for counts only hears instead of `JobStarted` and `JobFinished`.
    Progress(SweepCounts),
}

/// How many of a sweep's jobs are in each state ([`SweepStatus`]'s counts alone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepCounts {
    pub n_jobs: u32,
    pub n_queued: u32,
    /// Running on a worker; `n_leased` more wait there, leased ahead.
    pub n_running: u32,
    pub n_leased: u32,
    pub n_done: u32,
    pub n_failed: u32,
    pub n_cancelled: u32,
}

/// Why a command was not carried out: who must act (the kind) and the message, which
/// names the field or the thing concerned. `service.rs` maps each kind to its gRPC code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError {
    kind: ErrorKind,
    message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The named sweep, session or attempt is not here.
    NotFound,
    /// It belongs to another worker session.
    PermissionDenied,
    /// The request itself is wrong.
    InvalidArgument,
    /// Right, but not in this state (a running sweep to delete, a worker of another build).
    FailedPrecondition,
    /// The coordinator is stopping.
    Unavailable,
    /// The coordinator's own fault: its store or its disk.
    Internal,
}

impl CommandError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CommandError { kind, message: message.into() }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    pub fn failed_precondition(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::FailedPrecondition, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommandError {}

/// What the summary of a sweep is built from.
pub struct SummaryInputs {
    pub sweep_dir: PathBuf,
    /// Nothing is queued or running.
    pub finished: bool,
    pub n_done: u32,
    /// The keys of the done jobs, when asked for (FetchResults of trajectories).
    pub done_keys: BTreeSet<String>,
    pub n_failed: u32,
    /// Cells of the sweep.
    pub n_cells: u32,
    pub metrics: &'static [MetricDef],
    pub headline: &'static [&'static str],
    /// The family's [`armada_core::Family::summary_axes`].
    pub axes: &'static [&'static str],
}
