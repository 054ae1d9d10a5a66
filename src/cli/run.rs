//! `armada run SWEEP`: validate the sweep, run the missing jobs (by default on an embedded
//! coordinator with local worker processes; `--in-process` on a thread pool), summarize
//! this sweep's jobs, print the table.

use anyhow::Context;
use armada::{embedded, local, registry, results, sweep};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The sweep file (TOML).
    sweep: PathBuf,
    /// Results directory; the sweep's files go to DIR/<sweep name>/, the coordinator's
    /// store to DIR/armada.sqlite.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Jobs run side by side: worker processes, or threads with --in-process (default: the
    /// number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run the jobs on a thread pool in this process instead of coordinator + workers.
    #[arg(long)]
    in_process: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    // Validate everything before touching the disk: a bad sweep writes nothing.
    let text = std::fs::read_to_string(&args.sweep)
        .map_err(|e| anyhow::anyhow!("{}: cannot read sweep file: {e}", args.sweep.display()))?;
    let stem = args.sweep.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
    let sweep =
        sweep::parse_sweep(&text, stem, &registry).map_err(|e| anyhow::anyhow!("{}: {e}", args.sweep.display()))?;
    let sweep_dir = args.out.join(&sweep.name);
    let keys: BTreeSet<String> = sweep.jobs.iter().map(|j| j.key.0.clone()).collect();
    let n_jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let done_before = done_keys(&sweep_dir, &keys)?;
    let started = std::time::Instant::now();
    let failures: Vec<String> = if args.in_process {
        let config = local::LocalConfig { n_threads: n_jobs, progress };
        let report = local::run_sweep(&registry, &sweep, &sweep_dir, config)?;
        report.failures.iter().map(|(job, error)| format!("failed: {}: {error}", local::describe(job))).collect()
    } else {
        let config = embedded::EmbeddedConfig { n_workers: n_jobs, progress, worker_exe: std::env::current_exe()? };
        let status = embedded::run_embedded(&text, stem, &args.out, &config)?;
        armada::client::failure_lines(&status)
    };
    let done_after = done_keys(&sweep_dir, &keys)?;
    eprintln!(
        "{}: {} jobs, {} already done, {} run, {} failed in {:.1} s",
        sweep.name,
        sweep.jobs.len(),
        done_before,
        done_after - done_before,
        sweep.jobs.len() - done_after,
        started.elapsed().as_secs_f64()
    );
    let family = registry.family(&sweep.family)?;
    let summary =
        results::rebuild_summaries(&sweep_dir, Some(&keys), family.summary_axes()).context("building summaries")?;
    eprintln!(
        "wrote {} and {} ({} jobs)",
        summary.summary_path.display(),
        summary.final_path.display(),
        summary.n_jobs
    );
    if summary.n_left_out > 0 {
        eprintln!(
            "note: {} trajectories in {} are not jobs of this sweep (an edited sweep file or older code) and were left out",
            summary.n_left_out,
            results::trajectories_dir(&sweep_dir).display()
        );
    }
    println!("{}", results::final_table(&sweep_dir, family.headline_metrics())?);
    if done_after == sweep.jobs.len() {
        Ok(ExitCode::SUCCESS)
    } else {
        for line in failures {
            eprintln!("{line}");
        }
        Ok(ExitCode::from(1))
    }
}

/// How many of `keys` are in a part in `sweep_dir`.
fn done_keys(sweep_dir: &std::path::Path, keys: &BTreeSet<String>) -> anyhow::Result<usize> {
    if !results::trajectories_dir(sweep_dir).is_dir() {
        return Ok(0);
    }
    Ok(results::stored_keys(sweep_dir)?.intersection(keys).count())
}
