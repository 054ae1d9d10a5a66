//! The in-process runner: runs a sweep's jobs on a fixed pool of threads, one job per
//! thread at a time, and writes each finished trajectory as an atomic Parquet shard.
//!
//! Resume is by key: a job whose shard exists is skipped. Numeric work inside a job is
//! single-threaded, so results do not depend on the number of threads.

use crate::results;
use crate::sweep::Sweep;
use armada_core::{run_job, JobError, Registry, ValidJob};
use indicatif::{ProgressBar, ProgressStyle};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
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
    /// Jobs that failed, with their error; their shards are not written.
    pub failures: Vec<(ValidJob, String)>,
    pub seconds: f64,
}

/// Run every job of `sweep` whose shard is missing under `sweep_dir`.
pub fn run_sweep(
    registry: &Registry,
    sweep: &Sweep,
    sweep_dir: &Path,
    config: LocalConfig,
) -> anyhow::Result<LocalReport> {
    let started = Instant::now();
    std::fs::create_dir_all(results::trajectories_dir(sweep_dir))?;
    let done = results::read_shard_keys(sweep_dir)?;
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
    let n_threads = config.n_threads.max(1).min(pending.len());
    std::thread::scope(|scope| {
        for _ in 0..n_threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = pending.get(i) else { break };
                if io_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                    break;
                }
                match run_one(registry, job, sweep_dir) {
                    Ok(Ok(())) => {
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(Err(job_error)) => {
                        bar.println(format!("job {} failed: {job_error}", describe(job)));
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
    if let Some(e) = io_error.into_inner().ok().flatten() {
        return Err(e.context("writing a trajectory shard failed; finished shards are kept, rerun to resume"));
    }
    report.n_completed = completed.into_inner();
    report.failures = failures.into_inner().unwrap_or_default();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Run one job to completion and write its shard. The outer error is an I/O failure
/// (fatal for the run); the inner one is the job's own failure (the sweep goes on).
fn run_one(registry: &Registry, job: &ValidJob, sweep_dir: &Path) -> anyhow::Result<Result<(), JobError>> {
    let family = registry.family(&job.spec.family)?;
    let mut records = Vec::with_capacity(job.spec.horizon as usize + 1);
    let outcome = run_job(registry, job, &mut |r| {
        records.push(r);
        ControlFlow::Continue(())
    });
    if let Err(e) = outcome {
        return Ok(Err(e));
    }
    results::write_shard(sweep_dir, job, family.metrics(), &records)?;
    Ok(Ok(()))
}

/// A short human description of a job for messages.
pub fn describe(job: &ValidJob) -> String {
    let s = &job.spec;
    format!(
        "{}/{}{} x {}{} seed {} ({})",
        s.family, s.benchmark, s.benchmark_params, s.algorithm, s.algorithm_params, s.seed, job.key
    )
}
