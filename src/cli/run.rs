//! `armada run SWEEP`: validate the sweep, run the missing jobs, summarize, print the table.

use anyhow::Context;
use armada::{local, registry, results, sweep};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The sweep file (TOML).
    sweep: PathBuf,
    /// Results directory; the sweep's files go to DIR/<sweep name>/.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Jobs run side by side (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    // Validate everything before touching the disk: a bad sweep writes nothing.
    let sweep =
        sweep::load_sweep(&args.sweep, &registry).map_err(|e| anyhow::anyhow!("{}: {e}", args.sweep.display()))?;
    let sweep_dir = args.out.join(&sweep.name);
    let n_threads = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let config = local::LocalConfig { n_threads, progress: !args.quiet && std::io::stderr().is_terminal() };
    let report = local::run_sweep(&registry, &sweep, &sweep_dir, config)?;
    eprintln!(
        "{}: {} jobs, {} already done, {} run, {} failed in {:.1} s",
        sweep.name,
        report.n_jobs,
        report.n_skipped,
        report.n_completed,
        report.failures.len(),
        report.seconds
    );
    let keys: BTreeSet<String> = sweep.jobs.iter().map(|j| j.key.0.clone()).collect();
    let summary = results::summarize(&sweep_dir, Some(&keys)).context("building summaries")?;
    eprintln!(
        "wrote {} and {} ({} shards)",
        summary.summary_path.display(),
        summary.final_path.display(),
        summary.n_shards
    );
    if summary.n_left_out > 0 {
        eprintln!(
            "note: {} shards in {} are not jobs of this sweep (an edited sweep file or older code) and were left out",
            summary.n_left_out,
            results::trajectories_dir(&sweep_dir).display()
        );
    }
    let headline = registry.family(&sweep.family)?.headline_metrics();
    println!("{}", results::final_table(&sweep_dir, headline)?);
    if report.failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for (job, error) in &report.failures {
            eprintln!("failed: {}: {error}", local::describe(job));
        }
        Ok(ExitCode::from(1))
    }
}
