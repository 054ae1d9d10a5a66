//! `armada run SWEEP`: validate the sweep, run the missing jobs (by default on an embedded
//! coordinator with local worker processes; `--in-process` on a thread pool), summarize
//! this sweep's jobs, print the table.

use anyhow::Context;
use armada::{embedded, local, registry, results, sweep};
use armada_proto::v1 as pb;
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
    /// Where the embedded coordinator serves its dashboard (HTTP), or `off`; its address,
    /// with the run's token, is printed at the start.
    #[arg(long, value_parser = super::parse_dashboard, default_value = "127.0.0.1:0")]
    dashboard: super::DashboardAt,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let registry = registry();
    // Validate everything before touching the disk: a bad sweep writes nothing.
    let text = std::fs::read_to_string(&args.sweep)
        .map_err(|e| anyhow::anyhow!("{}: cannot read sweep file: {e}", args.sweep.display()))?;
    let stem = args.sweep.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
    // As cells and seeds: the embedded coordinator makes the jobs itself, so here only their
    // keys are needed (a job's spec is made only to run it in process).
    let cells = sweep::parse_sweep_cells(&text, stem, &registry, sweep::DEFAULT_MAX_JOBS)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.sweep.display()))?;
    let resolving = cells.resolve.is_some();
    if resolving && args.in_process {
        anyhow::bail!(
            "{}: resolve: a resolving sweep's rounds are run by a coordinator; run it without --in-process",
            args.sweep.display()
        );
    }
    let sweep_dir = args.out.join(&cells.name);
    let n_sweep_jobs = cells.n_jobs();
    let name = cells.name.clone();
    let n_jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let family = registry.family(&cells.family)?;
    let sweep_keys = |cells: &sweep::SweepCells| cells.keys().map(|key| key.0).collect::<BTreeSet<String>>();
    // In process, the summaries are built from the files here; the coordinator builds
    // them live, cell by cell, and has written them when the run ends.
    let Ran { keys, done_before, failures, coordinator_summary, counts, status, closing: _closing } = if args.in_process
    {
        let keys = sweep_keys(&cells);
        let done_before = stored_keys(&sweep_dir)?.intersection(&keys).count();
        // The store's lock, as a coordinator holds it: one writer per results directory.
        let _lock = armada::coordinator::durable::store::Store::open(&args.out)?;
        let config = local::LocalConfig { n_threads: n_jobs, progress };
        let sweep = cells.into_sweep();
        let report = local::run_sweep(&registry, &sweep, &sweep_dir, config)?;
        let failed: BTreeSet<&str> = report.failures.iter().map(|(job, _)| job.key.0.as_str()).collect();
        let counts =
            results::count_cells(sweep.jobs.iter().map(|j| (results::Cell::of(j), failed.contains(j.key.0.as_str()))));
        // The summaries need only the keys: a sweep's jobs (about 400 bytes each) go first.
        drop(sweep);
        let failures =
            report.failures.iter().map(|(job, error)| format!("failed: {}: {error}", job.describe())).collect();
        Ran {
            keys,
            done_before,
            failures,
            coordinator_summary: None,
            counts: Some(counts),
            status: None,
            closing: None,
        }
    } else {
        let config = embedded::EmbeddedConfig {
            n_workers: n_jobs,
            progress,
            worker_exe: std::env::current_exe()?,
            dashboard: args.dashboard.0,
        };
        // The coordinator makes the jobs from the file; the keys (to count what the parts
        // held before the run and hold after it) are made meanwhile, off the run's way.
        let stored_before = stored_keys(&sweep_dir)?;
        let (keys, outcome) = std::thread::scope(|scope| {
            let keys = scope.spawn(move || sweep_keys(&cells));
            let outcome = embedded::run_embedded(&text, stem, &args.out, &config);
            (keys.join(), outcome)
        });
        let keys = keys.map_err(|_| anyhow::anyhow!("making the sweep's job keys failed"))?;
        let outcome = outcome?;
        let failures = armada::client::failure_lines(&outcome.status, 20);
        let done_before = stored_before.intersection(&keys).count();
        Ran {
            keys,
            done_before,
            failures,
            coordinator_summary: outcome.summary,
            counts: None,
            status: Some(outcome.status),
            closing: Some(outcome.closing),
        }
    };
    let (mut done_after, mut n_other, damaged) = done_keys(&sweep_dir, &keys)?;
    let mut n_sweep_jobs = n_sweep_jobs;
    match status.filter(|_| resolving) {
        // The rounds added jobs the file does not list: the coordinator counted them.
        Some(status) => {
            (n_sweep_jobs, done_after, n_other) = (status.n_jobs as usize, status.n_done as usize, 0);
            eprintln!(
                "{}: {} jobs after its rounds, {} done, {} failed in {:.1} s",
                name,
                n_sweep_jobs,
                done_after,
                n_sweep_jobs - done_after,
                started.elapsed().as_secs_f64()
            );
        }
        None => eprintln!(
            "{}: {} jobs, {} already done, {} run, {} failed in {:.1} s",
            name,
            n_sweep_jobs,
            done_before,
            done_after - done_before,
            n_sweep_jobs - done_after,
            started.elapsed().as_secs_f64()
        ),
    }
    if !damaged.is_empty() {
        for e in &damaged {
            eprintln!("damaged: {e}");
        }
        eprintln!(
            "{} damaged parts: their jobs count as failed here; `armada check --repair {}` queues them to run again",
            damaged.len(),
            args.out.display()
        );
    }
    if done_after == 0 {
        for line in failures {
            eprintln!("{line}");
        }
        eprintln!("no job of {} finished: nothing to summarize", name);
        return Ok(ExitCode::from(1));
    }
    let (summary_path, final_path, n_summarized) = match coordinator_summary {
        Some(s) => (s.summary_path, s.final_path, s.n_shards as usize),
        None => {
            let report = results::rebuild_summaries(&sweep_dir, Some(&keys), family.summary_axes(), counts.as_ref())
                .context("building summaries")?;
            for part in &report.damaged {
                eprintln!("left out of the summaries, unreadable: {} (`armada check --repair`)", part.display());
            }
            (report.summary_path.display().to_string(), report.final_path.display().to_string(), report.n_jobs)
        }
    };
    eprintln!("wrote {summary_path} and {final_path} ({n_summarized} jobs)");
    if n_other > 0 {
        eprintln!(
            "note: {n_other} trajectories in {} are not jobs of this sweep (an edited sweep file or older code) and were left out",
            results::trajectories_dir(&sweep_dir).display()
        );
    }
    println!("{}", results::final_table(&sweep_dir, family.headline_metrics())?);
    if resolving {
        println!("{}", results::comparisons_table(&sweep_dir).context("reading the comparisons")?);
    }
    look_again(&sweep_dir, &args.out, args.in_process);
    if done_after == n_sweep_jobs {
        Ok(ExitCode::SUCCESS)
    } else {
        for line in failures {
            eprintln!("{line}");
        }
        Ok(ExitCode::from(1))
    }
}

/// Write the sweep's report and say how to look at the results again: the dashboard
/// address printed at the start dies with the run.
fn look_again(sweep_dir: &std::path::Path, out: &std::path::Path, in_process: bool) {
    match armada::report::write_report(sweep_dir, None) {
        Ok(path) => eprintln!("report: {} (one HTML file: curves and tables, offline)", path.display()),
        Err(e) => eprintln!("no report written: {e:#}"),
    }
    // An in-process run writes no store rows for its sweep: a coordinator would not list it.
    if !in_process {
        eprintln!("dashboard again: armada serve --data {} (it prints the dashboard's address)", out.display());
    }
}

/// What running the jobs left to report.
struct Ran {
    /// The sweep's job keys.
    keys: BTreeSet<String>,
    /// Of them, those in a readable part before the run.
    done_before: usize,
    failures: Vec<String>,
    /// The coordinator's summary (its files written), when it ran the jobs and some is done.
    coordinator_summary: Option<pb::GetSummaryResponse>,
    /// Jobs and failures per cell, when run in process.
    counts: Option<std::collections::BTreeMap<results::Cell, results::CellJobs>>,
    status: Option<pb::SweepStatus>,
    /// The embedded coordinator closing while the results are read; waited for when dropped.
    closing: Option<embedded::Closing>,
}

/// How many of `keys` are in a readable part in `sweep_dir`, how many other jobs are, and
/// the parts that cannot be read.
fn done_keys(
    sweep_dir: &std::path::Path,
    keys: &BTreeSet<String>,
) -> anyhow::Result<(usize, usize, Vec<results::ResultsError>)> {
    if !results::trajectories_dir(sweep_dir).is_dir() {
        return Ok((0, 0, Vec::new()));
    }
    let (stored, damaged) = results::stored_keys(sweep_dir)?;
    let done = stored.intersection(keys).count();
    Ok((done, stored.len() - done, damaged))
}

/// The keys in the sweep's readable parts (none before its first run).
fn stored_keys(sweep_dir: &std::path::Path) -> anyhow::Result<BTreeSet<String>> {
    if !results::trajectories_dir(sweep_dir).is_dir() {
        return Ok(BTreeSet::new());
    }
    Ok(results::stored_keys(sweep_dir)?.0)
}
