//! `armada summarize DIR/<sweep>`: rebuild the summary tables from whatever shards exist.

use armada::results;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct SummarizeArgs {
    /// A sweep's results directory (the one holding trajectories/).
    sweep_dir: PathBuf,
    /// Show these metrics in the printed table (default: every float metric).
    #[arg(long, value_delimiter = ',')]
    metrics: Vec<String>,
    /// Also aggregate on the common grid of this monotone column (e.g. `cum_cost`), with
    /// each run carried forward onto it: writes `along_<column>.parquet`.
    #[arg(long)]
    along: Option<String>,
    /// With --along: keep grid points up to this value (e.g. the budget).
    #[arg(long, requires = "along")]
    upto: Option<f64>,
}

pub fn summarize(args: SummarizeArgs) -> anyhow::Result<ExitCode> {
    // In a coordinator's directory, take its store's lock: one writer per results directory.
    let parent = args.sweep_dir.parent().filter(|p| p.join("armada.sqlite").is_file());
    let _lock = parent.map(armada::coordinator::store::Store::open).transpose()?;
    let report = results::summarize(&args.sweep_dir, None)?;
    eprintln!(
        "wrote {} and {} from {} jobs ({} rows)",
        report.summary_path.display(),
        report.final_path.display(),
        report.n_jobs,
        report.n_rows
    );
    if let Some(column) = &args.along {
        let along = results::summarize_along(&args.sweep_dir, None, column, args.upto)?;
        eprintln!("wrote {} ({} grid points)", along.path.display(), along.n_points);
    }
    let only: Vec<&str> = args.metrics.iter().map(String::as_str).collect();
    println!("{}", results::final_table(&args.sweep_dir, &only)?);
    if !report.damaged.is_empty() {
        for part in &report.damaged {
            eprintln!("left out, unreadable: {}", part.display());
        }
        eprintln!(
            "{} damaged parts: their jobs are not in the summaries; `armada check --repair` on the data directory queues them again",
            report.damaged.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
