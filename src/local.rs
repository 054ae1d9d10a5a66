//! The in-process runner: runs a sweep's jobs on a fixed pool of threads, one job per
//! thread at a time, and group-commits finished trajectories into Parquet parts as the
//! coordinator does (a part when [`CommitConfig`]'s linger, job or row bound is reached,
//! written by the thread that fills it).
//!
//! Resume is by key: a job already in a part is skipped. Numeric work inside a job is
//! single-threaded, so results do not depend on the number of threads. A running job's
//! records go to a spool, as a worker's do to the coordinator's (64 KiB in memory, the rest
//! in `<out>/.spool/`), so memory does not grow with a trajectory's length.

use crate::coordinator::durable::committer::CommitConfig;
use crate::coordinator::durable::spool::{RecordSchema, Spool, Spools};
use crate::results::{self, PartJob};
use crate::sweep::Sweep;
use armada_core::{run_job, JobError, MetricDef, Registry, ValidJob};
use armada_proto::ids::{AttemptId, SessionId};
use indicatif::{ProgressBar, ProgressStyle};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How the local runner runs.
#[derive(Clone, Copy, Debug)]
pub struct LocalConfig {
    /// Jobs run side by side (default: the number of cores).
    pub n_threads: usize,
    /// Draw a progress bar on a terminal.
    pub progress: bool,
}

/// What a local run did.
#[derive(Debug, Default)]
pub struct LocalReport {
    pub n_jobs: usize,
    pub n_skipped: usize,
    pub n_completed: usize,
    /// Jobs that failed, with their error; their trajectories are not written.
    pub failures: Vec<(ValidJob, String)>,
    pub seconds: f64,
}

/// Run every job of `sweep` that is not yet in a part under `sweep_dir`.
pub fn run_sweep(
    registry: &Registry,
    sweep: &Sweep,
    sweep_dir: &Path,
    config: LocalConfig,
) -> anyhow::Result<LocalReport> {
    let started = Instant::now();
    std::fs::create_dir_all(results::trajectories_dir(sweep_dir))?;
    // The caller holds the results directory's lock: temp files here are a dead writer's.
    results::remove_temp_files(sweep_dir)?;
    // A damaged part's jobs are not done: they run again, into a new part.
    let (done, damaged) = results::stored_keys(sweep_dir)?;
    for e in damaged {
        tracing::warn!(error = %e, "a damaged part is left out; its jobs run again");
    }
    let mut pending: Vec<&ValidJob> = sweep.jobs.iter().filter(|j| !done.contains(&j.key.0)).collect();
    // Seed-major order (stable within a seed): an interrupted sweep has every cell at
    // about the same number of seeds, so its partial summaries are balanced.
    pending.sort_by_key(|j| j.spec.seed);
    let mut report =
        LocalReport { n_jobs: sweep.jobs.len(), n_skipped: sweep.jobs.len() - pending.len(), ..Default::default() };
    if pending.is_empty() {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let bar = if config.progress { ProgressBar::new(pending.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} jobs ({eta} left) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let completed = AtomicUsize::new(0);
    let io_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let family = registry.family(&sweep.family)?;
    let metrics = family.metrics();
    let parts = Parts { sweep_dir, metrics, policy: CommitConfig::default(), batch: Mutex::new(Batch::default()) };
    // Emptied first: the caller holds the results directory's lock, so its files are a
    // dead run's.
    let spool_dir = crate::data_dir::DataDir(sweep_dir.parent().unwrap_or(Path::new("."))).spool();
    Spools::open(&spool_dir).map_err(|e| anyhow::anyhow!("emptying {}: {e}", spool_dir.display()))?;
    let spool_dir = Arc::new(spool_dir);
    let spool = |job: &ValidJob, i: usize| {
        let schema = RecordSchema { metrics, horizon: job.spec.horizon, ends_early: family.ends_early() };
        Spool::new(spool_dir.clone(), AttemptId(i as u64), SessionId::new("in-process"), schema)
    };
    let n_threads = config.n_threads.max(1).min(pending.len());
    std::thread::scope(|scope| {
        for _ in 0..n_threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = pending.get(i) else { break };
                if io_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                    break;
                }
                match run_one(registry, job, spool(job, i), &parts) {
                    Ok(Ok(())) => {
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(Err(job_error)) => {
                        bar.println(format!("job {} failed: {job_error}", job.describe()));
                        if let Ok(mut f) = failures.lock() {
                            f.push(((*job).clone(), job_error.to_string()));
                        }
                    }
                    Err(write_error) => {
                        if let Ok(mut e) = io_error.lock() {
                            e.get_or_insert(write_error);
                        }
                    }
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let last = parts.flush();
    if let Some(e) = io_error.into_inner().ok().flatten().or(last.err()) {
        return Err(e.context("writing a trajectory part failed; finished parts are kept, rerun to resume"));
    }
    report.n_completed = completed.into_inner();
    report.failures = failures.into_inner().unwrap_or_default();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Run one job to completion, its records into `spool`, and add it to the part being
/// gathered. The outer error is an I/O failure or records against the family's schema
/// (fatal for the run); the inner one is the job's own failure (the sweep goes on).
fn run_one(
    registry: &Registry,
    job: &ValidJob,
    mut spool: Spool,
    parts: &Parts,
) -> anyhow::Result<Result<(), JobError>> {
    let outcome = run_job(registry, job, &mut |r| match spool.append(std::slice::from_ref(&r)) {
        Ok(()) => ControlFlow::Continue(()),
        Err(_) => ControlFlow::Break(()),
    });
    if let Some(why) = spool.broken() {
        anyhow::bail!("job {}: {why}", job.describe());
    }
    if let Err(e) = outcome {
        return Ok(Err(e));
    }
    parts.add(job.clone(), spool)?;
    Ok(Ok(()))
}

/// Finished trajectories waiting to be written as one part.
#[derive(Default)]
struct Batch {
    /// Each job with its records.
    jobs: Vec<(ValidJob, Spool)>,
    rows: u64,
    started: Option<Instant>,
}

/// The part being gathered by every thread of a local run.
struct Parts<'a> {
    sweep_dir: &'a Path,
    metrics: &'static [MetricDef],
    /// When a part is full: made once (its default reads the cgroup's CPU quota, three
    /// files, which per job cost more than a trivial job).
    policy: CommitConfig,
    batch: Mutex<Batch>,
}

impl Parts<'_> {
    /// Rows of a part (its jobs' records wait in their spools until it is written).
    const MAX_ROWS: u64 = 1 << 20;

    fn add(&self, job: ValidJob, records: Spool) -> anyhow::Result<()> {
        let policy = &self.policy;
        let full = {
            let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
            batch.rows += u64::from(records.n_records());
            batch.jobs.push((job, records));
            let started = *batch.started.get_or_insert_with(Instant::now);
            let full = batch.jobs.len() >= policy.max_jobs
                || batch.rows >= policy.max_rows.min(Self::MAX_ROWS)
                || started.elapsed() >= policy.linger;
            if full {
                Some(std::mem::take(&mut *batch))
            } else {
                None
            }
        };
        match full {
            Some(batch) => self.write(batch),
            None => Ok(()),
        }
    }

    /// Write what is left.
    fn flush(&self) -> anyhow::Result<()> {
        let batch = std::mem::take(&mut *self.batch.lock().unwrap_or_else(|e| e.into_inner()));
        self.write(batch)
    }

    fn write(&self, batch: Batch) -> anyhow::Result<()> {
        if batch.jobs.is_empty() {
            return Ok(());
        }
        let jobs = batch
            .jobs
            .into_iter()
            .map(|(job, spool)| PartJob::of(&job, spool.n_records() as usize, spool.into_records()))
            .collect();
        results::write_part(self.sweep_dir, self.metrics, jobs)?;
        Ok(())
    }
}
