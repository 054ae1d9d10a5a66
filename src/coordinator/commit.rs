//! The committer: group commit of finished attempts into trajectory parts.
//!
//! The scheduler hands each winning attempt (its spool) to this task and answers the
//! worker only once the part holding it is durable. The committer gathers attempts for up
//! to [`CommitConfig::linger`] (or until a part is full), writes one part per sweep on
//! the blocking pool, and reports back; the scheduler then records every job of the part
//! as `done` in one store transaction. A million jobs become a few thousand files, and a
//! commit costs a share of one file creation and two fsyncs instead of its own.

use crate::results::{self, PartJob};
use armada_core::{MetricDef, ValidJob};
use armada_proto::v1 as pb;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tonic::Status;
use tracing::warn;

use super::spool::Spool;

/// When a part is written.
#[derive(Clone, Copy, Debug)]
pub struct CommitConfig {
    /// The longest the first attempt of a part waits for others to join it.
    pub linger: Duration,
    /// A part is written as soon as it holds this many jobs...
    pub max_jobs: usize,
    /// ...or this many trajectory rows.
    pub max_rows: u64,
}

impl Default for CommitConfig {
    fn default() -> Self {
        CommitConfig { linger: Duration::from_millis(200), max_jobs: 8192, max_rows: 4 << 20 }
    }
}

pub type CommitReply = oneshot::Sender<Result<pb::CompleteAttemptResponse, Status>>;

/// An attempt that won its job, to be written.
pub struct Commit {
    pub sweep_dir: PathBuf,
    pub metrics: &'static [MetricDef],
    pub job: usize,
    pub attempt: u64,
    pub valid: ValidJob,
    pub spool: Spool,
    pub reply: CommitReply,
}

/// A job of a written (or failed) part, for the scheduler to settle.
pub struct Committed {
    pub job: usize,
    pub attempt: u64,
    /// The metrics of the job's last record.
    pub last: Vec<f64>,
    pub reply: CommitReply,
}

/// The outcome of one part: its file name, or why it could not be written.
pub struct PartWritten {
    pub part: Result<String, String>,
    pub jobs: Vec<Committed>,
}

/// Start the committer; `report` is called with each part's outcome, on the blocking
/// thread that wrote it (so it may block). The inbox is unbounded on purpose: it holds at
/// most one commit per running attempt, which the lease count already bounds, and the
/// scheduler must never block on it.
pub fn start(
    config: CommitConfig,
    report: impl Fn(PartWritten) + Send + Sync + 'static,
) -> mpsc::UnboundedSender<Commit> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(run(config, rx, Arc::new(report)));
    tx
}

async fn run(
    config: CommitConfig,
    mut inbox: mpsc::UnboundedReceiver<Commit>,
    report: Arc<dyn Fn(PartWritten) + Send + Sync>,
) {
    while let Some(first) = inbox.recv().await {
        let deadline = tokio::time::Instant::now() + config.linger;
        let mut rows = u64::from(first.spool.n_records());
        let mut batch = vec![first];
        while batch.len() < config.max_jobs && rows < config.max_rows {
            tokio::select! {
                next = inbox.recv() => match next {
                    Some(c) => {
                        rows += u64::from(c.spool.n_records());
                        batch.push(c);
                    }
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        let mut by_sweep: BTreeMap<PathBuf, Vec<Commit>> = BTreeMap::new();
        for c in batch {
            by_sweep.entry(c.sweep_dir.clone()).or_default().push(c);
        }
        for commits in by_sweep.into_values() {
            let report = report.clone();
            if let Err(e) = tokio::task::spawn_blocking(move || report(write(commits))).await {
                warn!("reporting a part failed: {e}");
            }
        }
    }
}

/// Write one sweep's commits as one part.
fn write(commits: Vec<Commit>) -> PartWritten {
    let (sweep_dir, metrics) = (commits[0].sweep_dir.clone(), commits[0].metrics);
    let mut jobs = Vec::with_capacity(commits.len());
    let mut parts = Vec::with_capacity(commits.len());
    for c in commits {
        jobs.push(Committed { job: c.job, attempt: c.attempt, last: c.spool.last().to_vec(), reply: c.reply });
        let n_records = c.spool.n_records() as usize;
        parts.push(PartJob { job: c.valid, n_records, records: Box::new(c.spool.into_records()) });
    }
    // A panic while writing is a failed part like any other: its jobs must not stay
    // `committing` (never leased, never expired) in the scheduler.
    let written =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| results::write_part(&sweep_dir, metrics, parts)));
    let part = match written {
        Ok(Ok(path)) => Ok(path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err("writing the part panicked".to_string()),
    };
    PartWritten { part, jobs }
}
