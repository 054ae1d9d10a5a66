//! The committer: group commit of finished attempts into trajectory parts.
//!
//! The scheduler hands each winning attempt (its spool) to this task and answers the
//! worker only once the part holding it is durable. The committer gathers attempts for up
//! to [`CommitConfig::linger`] (or until a part is full), writes one part per sweep on
//! the blocking pool, and reports back; the scheduler then records every job of the part
//! as `done` in one store transaction. A million jobs become a few thousand files, and a
//! commit costs a share of one file creation and two fsyncs instead of its own.

use super::super::state::jobs::{JobIndex, Key, Template};
use super::super::state::replies::CommandError;
use crate::results::live::{CellMoments, FloatMetrics};
use crate::results::{self, Cell, PartJob, Provenance, StoredRows};
use armada_core::MetricDef;
use armada_proto::ids::{AttemptId, SweepId};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

use super::super::state::metrics::Metrics;
use super::spool::Spool;
use super::summarizer::LiveSummaries;
use std::sync::atomic::Ordering::Relaxed;

/// When a part is written.
#[derive(Clone, Copy, Debug)]
pub struct CommitConfig {
    /// The longest the first attempt of a part waits for others to join it.
    pub linger: Duration,
    /// A part is written as soon as it holds this many jobs (2,048: small enough that a
    /// sweep's parts are written while its jobs still run, not all after its last one;
    /// large enough that a million jobs make about 500 files)...
    pub max_jobs: usize,
    /// ...or this many trajectory rows.
    pub max_rows: u64,
    /// Parts written side by side: more ingest faster, each holding a row group in memory.
    pub writers: usize,
}

impl Default for CommitConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        CommitConfig { linger: Duration::from_millis(200), max_jobs: 2048, max_rows: 4 << 20, writers: cores }
    }
}

/// Answers a commit: whether the attempt's trajectory is its job's.
pub type CommitReply = oneshot::Sender<Result<bool, CommandError>>;

/// An attempt that won its job, to be written.
pub struct Commit {
    /// No other job of the sweep is queued or running: write the part now, not after the
    /// linger (a sweep's last jobs, or a small sweep's only ones, are not kept waiting).
    pub last_of_sweep: bool,
    pub sweep: SweepId,
    /// Where the sweeps' directories are (the part goes to `<results_dir>/<sweep>`).
    pub results_dir: Arc<PathBuf>,
    pub metrics: &'static [MetricDef],
    pub job: JobIndex,
    pub attempt: AttemptId,
    /// The job: its cell's template, seed and key.
    pub template: Arc<Template>,
    pub seed: u64,
    pub key: Key,
    /// Who produced it: the committing worker session's record.
    pub provenance: Option<Arc<Provenance>>,
    pub spool: Spool,
    /// When the attempt asked to commit (for the commit latency metric).
    pub asked: std::time::Instant,
    pub reply: CommitReply,
}

/// A job of a written (or failed) part, for the scheduler to settle.
pub struct Committed {
    pub job: JobIndex,
    pub attempt: AttemptId,
    /// The metrics of the job's last record.
    pub last: Vec<f64>,
    /// Where its rows are, once the part is written.
    pub location: Option<StoredRows>,
    pub asked: std::time::Instant,
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
    live: LiveSummaries,
    metrics: Arc<Metrics>,
    report: impl Fn(PartWritten) + Send + Sync + 'static,
) -> mpsc::UnboundedSender<Commit> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(run(config, rx, live, metrics, Arc::new(report)));
    tx
}

async fn run(
    config: CommitConfig,
    mut inbox: mpsc::UnboundedReceiver<Commit>,
    live: LiveSummaries,
    metrics: Arc<Metrics>,
    report: Arc<dyn Fn(PartWritten) + Send + Sync>,
) {
    let writers = Arc::new(tokio::sync::Semaphore::new(config.writers.max(1)));
    while let Some(first) = inbox.recv().await {
        let deadline = tokio::time::Instant::now() + config.linger;
        let mut rows = u64::from(first.spool.n_records());
        let mut last = first.last_of_sweep;
        let mut batch = vec![first];
        while !last && batch.len() < config.max_jobs && rows < config.max_rows {
            tokio::select! {
                next = inbox.recv() => match next {
                    Some(c) => {
                        rows += u64::from(c.spool.n_records());
                        last = c.last_of_sweep;
                        batch.push(c);
                    }
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        let mut by_sweep: BTreeMap<SweepId, Vec<Commit>> = BTreeMap::new();
        for c in batch {
            by_sweep.entry(c.sweep.clone()).or_default().push(c);
        }
        for commits in by_sweep.into_values() {
            let (report, live, metrics) = (report.clone(), live.clone(), metrics.clone());
            // Parts are written side by side (one per core by default): a single writer
            // caps ingestion at one core's worth of Parquet encoding.
            let Ok(permit) = writers.clone().acquire_owned().await else { return };
            tokio::task::spawn_blocking(move || {
                report(write(commits, &live, &metrics));
                drop(permit);
            });
        }
    }
}

/// Write one sweep's commits as one part, and add their moments to its live summaries.
fn write(commits: Vec<Commit>, live: &LiveSummaries, counters: &Metrics) -> PartWritten {
    let (sweep, metrics) = (commits[0].sweep.clone(), commits[0].metrics);
    let sweep_dir = commits[0].results_dir.join(&*sweep);
    let floats = FloatMetrics::of(metrics);
    // The moments of each cell of the part, fed as the records stream into the part (by
    // the cell's template: the jobs of a cell share it).
    let mut cells: HashMap<*const Cell, (Arc<Cell>, Mutex<CellMoments>)> = HashMap::new();
    for c in &commits {
        let cell = &c.template.cell;
        cells.entry(Arc::as_ptr(cell)).or_insert_with(|| (cell.clone(), Mutex::new(CellMoments::of(cell.horizon))));
    }
    let mut jobs = Vec::with_capacity(commits.len());
    let mut keys = Vec::with_capacity(commits.len());
    let mut parts = Vec::with_capacity(commits.len());
    for c in commits {
        keys.push(c.key);
        let moments = &cells[&Arc::as_ptr(&c.template.cell)].1;
        if let Some(step) = c.spool.last_step() {
            let mut values = Vec::new();
            floats.select(c.spool.last(), &mut values);
            lock(moments).add_last(step, &values);
        }
        jobs.push(Committed {
            job: c.job,
            attempt: c.attempt,
            last: c.spool.last().to_vec(),
            location: None,
            asked: c.asked,
            reply: c.reply,
        });
        let n_records = c.spool.n_records() as usize;
        let (floats, mut values) = (&floats, Vec::new());
        let records = c.spool.into_records().inspect(move |record| {
            if let Ok(r) = record {
                floats.select(&r.values, &mut values);
                lock(moments).add_step(r.step, &values);
            }
        });
        parts.push(PartJob {
            key: c.key.to_string(),
            cell: c.template.cell.clone(),
            seed: c.seed,
            sweep_seed: c.template.spec.sweep_seed,
            provenance: c.provenance.map(|p| (p, c.attempt.0)),
            n_records,
            records: Box::new(records),
        });
    }
    // A panic while writing is a failed part like any other: its jobs must not stay
    // `committing` (never leased, never expired) in the scheduler.
    let written =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| results::write_part(&sweep_dir, metrics, parts)));
    let part = match written {
        Ok(Ok(written)) => {
            let moments: Vec<(Arc<Cell>, CellMoments)> = cells
                .into_values()
                .map(|(cell, m)| (cell, m.into_inner().unwrap_or_else(|e| e.into_inner())))
                .collect();
            live.add_moments(&sweep, &moments);
            counters.parts_written.fetch_add(1, Relaxed);
            counters.jobs_committed.fetch_add(jobs.len() as u64, Relaxed);
            counters.rows_committed.fetch_add(written.jobs.iter().map(|j| j.rows as u64).sum(), Relaxed);
            let mut by_key: HashMap<Key, StoredRows> =
                written.jobs.into_iter().filter_map(|j| Some((Key::parse(&j.key)?, j))).collect();
            for (job, key) in jobs.iter_mut().zip(&keys) {
                job.location = by_key.remove(key);
            }
            Ok(results::file_name(&written.path))
        }
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err("writing the part panicked".to_string()),
    };
    if part.is_err() {
        counters.parts_failed.fetch_add(1, Relaxed);
    }
    PartWritten { part, jobs }
}

fn lock(moments: &Mutex<CellMoments>) -> std::sync::MutexGuard<'_, CellMoments> {
    moments.lock().unwrap_or_else(|e| e.into_inner())
}
