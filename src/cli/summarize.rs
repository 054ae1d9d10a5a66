//! `armada summarize DIR/<sweep>`: rebuild the summary tables from whatever shards exist.

use armada::coordinator::state::stored::{JobState, SpecTemplate};

use armada::coordinator::durable::store::Store;
use armada::results::{self, Cell, CellJobs};
use std::collections::{BTreeMap, BTreeSet};
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

/// Each cell's jobs and failures for good, as the coordinator's store records the sweep's.
fn stored_counts(store: &Store, sweep: &str) -> anyhow::Result<BTreeMap<Cell, CellJobs>> {
    let mut cells = Vec::new();
    for job in store.jobs()?.into_iter().filter(|j| *j.sweep_id == *sweep) {
        let spec = SpecTemplate::decode(&job.spec)
            .and_then(|(template, _)| template.to_spec())
            .map_err(|e| anyhow::anyhow!("job {} of sweep {sweep} in the store: {e}", job.key))?;
        cells.push((Cell::of_spec(&spec), job.state == JobState::Failed));
    }
    Ok(results::count_cells(cells))
}

pub fn summarize(args: SummarizeArgs) -> anyhow::Result<ExitCode> {
    // In a coordinator's directory, take its store's lock: one writer per results directory.
    let parent = args.sweep_dir.parent().filter(|p| armada::data_dir::DataDir(p).store().is_file());
    let mut store = parent.map(armada::coordinator::durable::store::Store::open).transpose()?;
    let marker = args.sweep_dir.join(results::SUMMARIZING_MARKER);
    let sweep = results::file_name(&args.sweep_dir);
    // A sweep its coordinator died summarizing: summarized here as the coordinator would
    // (its done jobs), and marked summarized, so that the next start does not try again.
    let held = match &store {
        Some(store) if marker.exists() => {
            let done: BTreeSet<String> = store.done_jobs(&sweep)?.into_iter().map(|(key, _)| key).collect();
            Some((done, store.unsettled(&sweep)? == 0))
        }
        _ => None,
    };
    // The sweep's jobs as the store records them give each cell's n_jobs and n_failed
    // (a sweep run `--in-process` has none there: the columns are then null).
    let counts = store.as_ref().map(|store| stored_counts(store, &sweep)).transpose()?.filter(|c| !c.is_empty());
    let only = held.as_ref().map(|(done, _)| done);
    let report = results::rebuild_summaries(&args.sweep_dir, only, &[], counts.as_ref())?;
    if let (Some(store), Some((_, settled))) = (&mut store, &held) {
        if *settled {
            store.set_summarized(&sweep)?;
        }
        std::fs::remove_file(&marker)?;
        eprintln!("removed {}: the coordinator summarizes this sweep again when it must", marker.display());
    }
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
