//! The client subcommands: `armada submit`, `watch`, `status`, `cancel` and `fetch`,
//! talking to a coordinator's `Sweeps` service.

use anyhow::Context;
use armada::client::{describe, failure_lines, status_error, trouble_lines, Client};
use armada_proto::auth::TOKEN_ENV;
use armada_proto::v1 as pb;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How to reach the coordinator (shared by every client subcommand).
#[derive(clap::Args, Debug, Clone)]
pub struct Remote {
    /// The coordinator's URL.
    #[arg(long, env = "ARMADA_COORDINATOR", default_value = "http://127.0.0.1:7070")]
    coordinator: String,
    /// Bearer token, if the coordinator requires one.
    #[arg(long, env = TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// CA certificate (PEM) for an https:// coordinator.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
}

impl Remote {
    pub(super) async fn client(&self) -> anyhow::Result<Client> {
        armada::client::connect(&self.coordinator, self.token.as_deref(), self.tls_ca.as_deref()).await
    }
}

pub(super) fn block_on<T>(f: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(f)
}

#[derive(clap::Args, Debug)]
pub struct SubmitArgs {
    /// The sweep file (TOML).
    sweep: PathBuf,
    #[command(flatten)]
    remote: Remote,
}

pub fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.sweep).with_context(|| format!("reading {}", args.sweep.display()))?;
    let stem = args.sweep.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep").to_string();
    block_on(async {
        let mut client = args.remote.client().await?;
        let request =
            pb::SubmitSweepRequest { sweep: Some(pb::submit_sweep_request::Sweep::Toml(text)), default_name: stem };
        let reply = client.submit_sweep(request).await.map_err(|e| armada::client::file_error(&args.sweep, e))?;
        let r = reply.into_inner();
        eprintln!("{}: {} jobs ({} new, {} already done)", r.sweep_id, r.n_jobs, r.n_added, r.n_already_done);
        for f in &r.revised {
            eprintln!("{}", revised_line(f));
        }
        println!("{}", r.sweep_id);
        Ok(ExitCode::SUCCESS)
    })
}

/// What `submit` says of a declared family whose declaration changed since the sweep's
/// last submission.
fn revised_line(f: &pb::RevisedFamily) -> String {
    let what = match f.was_version == f.version {
        true => format!("a new revision of version {} (its code changed)", f.version),
        false => format!("version {} (was {})", f.version, f.was_version),
    };
    format!(
        "  {}: {what}, digest {} (was {}): its jobs have new keys and run; those of the old declaration left the sweep",
        f.name, f.digest, f.was_digest
    )
}

#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The sweep id (its name).
    id: String,
    #[command(flatten)]
    remote: Remote,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Follow a sweep to its end, then print its final table. Exit 0 when every job is done,
/// 1 when some failed or the sweep was cancelled.
pub fn watch(args: WatchArgs) -> anyhow::Result<ExitCode> {
    block_on(async {
        let mut client = args.remote.client().await?;
        let finished =
            armada::client::follow(&mut client, &args.id, !args.quiet && std::io::stderr().is_terminal()).await?;
        print_summary(&mut client, &finished).await
    })
}

async fn print_summary(client: &mut Client, status: &pb::SweepStatus) -> anyhow::Result<ExitCode> {
    eprintln!("{}", describe(status));
    if status.n_done > 0 {
        let summary = client
            .get_summary(pb::GetSummaryRequest { sweep_id: status.sweep_id.clone() })
            .await
            .map_err(status_error)?
            .into_inner();
        eprintln!("wrote {} and {} ({} jobs)", summary.summary_path, summary.final_path, summary.n_shards);
        println!("{}", summary.table);
        if !summary.comparisons.is_empty() {
            println!("{}", summary.comparisons);
        }
    }
    for line in failure_lines(status, 20) {
        eprintln!("{line}");
    }
    let ok = status.n_failed == 0 && status.state != pb::SweepState::Cancelled as i32;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// A sweep id; every sweep when omitted.
    id: Option<String>,
    /// With an id: list this many failed jobs (at most 10,000)...
    #[arg(long, default_value_t = 20)]
    failures: u32,
    /// ...skipping this many first.
    #[arg(long, default_value_t = 0)]
    failures_from: u32,
    #[command(flatten)]
    remote: Remote,
}

pub fn status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    block_on(async {
        let mut client = args.remote.client().await?;
        let sweeps = match args.id {
            Some(id) => {
                let request = pb::GetSweepRequest {
                    sweep_id: id,
                    failures_offset: args.failures_from,
                    failures_limit: args.failures,
                };
                vec![client.get_sweep(request).await.map_err(status_error)?.into_inner()]
            }
            None => client.list_sweeps(pb::ListSweepsRequest {}).await.map_err(status_error)?.into_inner().sweeps,
        };
        if sweeps.is_empty() {
            println!("no sweeps");
        }
        // Each place once, above the sweeps (the store's trouble holds up every sweep).
        for line in trouble_lines(sweeps.iter().flat_map(|s| &s.write_troubles)) {
            println!("{line}");
        }
        for s in &sweeps {
            println!("{}", describe(s));
            for line in failure_lines(s, args.failures as usize) {
                println!("  {line}");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

#[derive(clap::Args, Debug)]
pub struct CancelArgs {
    /// The sweep id.
    id: String,
    #[command(flatten)]
    remote: Remote,
}

pub fn cancel(args: CancelArgs) -> anyhow::Result<ExitCode> {
    block_on(async {
        let mut client = args.remote.client().await?;
        let s = client.cancel_sweep(pb::CancelSweepRequest { sweep_id: args.id }).await.map_err(status_error)?;
        println!("{}", describe(s.get_ref()));
        Ok(ExitCode::SUCCESS)
    })
}

#[derive(clap::Args, Debug)]
pub struct DeleteArgs {
    /// The sweep id.
    id: String,
    /// Keep its results directory (trajectories and summaries) on the coordinator's disk.
    #[arg(long)]
    keep_results: bool,
    #[command(flatten)]
    remote: Remote,
}

pub fn delete(args: DeleteArgs) -> anyhow::Result<ExitCode> {
    block_on(async {
        let mut client = args.remote.client().await?;
        let request = pb::DeleteSweepRequest { sweep_id: args.id.clone(), keep_results: args.keep_results };
        let deleted = client.delete_sweep(request).await.map_err(status_error)?.into_inner();
        let results = if deleted.results_removed { "and its results" } else { "(its results are kept)" };
        println!("deleted {} ({} jobs) {results}", args.id, deleted.n_jobs);
        Ok(ExitCode::SUCCESS)
    })
}

/// Which results `armada fetch` asks for.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum FetchTable {
    Trajectories,
    Summary,
    Final,
    Along,
    /// A resolving sweep's comparisons.parquet.
    Comparisons,
}

#[derive(clap::Args, Debug)]
pub struct FetchArgs {
    /// The sweep id.
    id: String,
    /// Write into OUT/<sweep>/, laid out as on the coordinator (trajectories/*.parquet,
    /// summary.parquet, ...), so that `armada summarize OUT/<sweep>` works on it.
    #[arg(long, default_value = ".")]
    out: PathBuf,
    #[arg(long, value_enum, default_value = "trajectories")]
    table: FetchTable,
    /// With `--table along`: the column, e.g. cum_cost.
    #[arg(long)]
    along: Option<String>,
    /// Only this job (repeatable).
    #[arg(long = "job")]
    jobs: Vec<String>,
    /// Only the jobs of this benchmark.
    #[arg(long)]
    benchmark: Option<String>,
    /// Only the jobs of this algorithm.
    #[arg(long)]
    algorithm: Option<String>,
    #[command(flatten)]
    remote: Remote,
}

/// `armada fetch`'s files, each written to a temporary name as its chunks come and renamed
/// when complete: the table itself, or `fetched-NNNNNN.parquet` per trajectory file.
struct FetchedFiles<'a> {
    target: &'a Option<String>,
    sweep_dir: &'a Path,
    trajectories: &'a Path,
    open: Option<(BufWriter<std::fs::File>, PathBuf)>,
    n_files: usize,
    n_jobs: u64,
    n_bytes: usize,
}

impl FetchedFiles<'_> {
    fn name(&self) -> PathBuf {
        match self.target {
            Some(name) => self.sweep_dir.join(name),
            None => self.trajectories.join(format!("fetched-{:06}.parquet", self.n_files + 1)),
        }
    }

    fn current(&mut self) -> anyhow::Result<&mut (BufWriter<std::fs::File>, PathBuf)> {
        if self.open.is_none() {
            let tmp = self.name().with_extension("parquet.tmp");
            let file = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
            self.open = Some((BufWriter::new(file), tmp));
        }
        Ok(self.open.as_mut().expect("just opened"))
    }
}

impl armada::client::FileSink for FetchedFiles<'_> {
    fn write(&mut self, data: &[u8]) -> anyhow::Result<()> {
        self.n_bytes += data.len();
        let (file, tmp) = self.current()?;
        file.write_all(data).with_context(|| format!("writing {}", tmp.display()))
    }

    fn end_file(&mut self, n_jobs: u32) -> anyhow::Result<()> {
        let name = self.name();
        let (file, tmp) = self.current()?;
        file.flush().with_context(|| format!("writing {}", tmp.display()))?;
        let tmp = tmp.clone();
        self.open = None;
        std::fs::rename(&tmp, &name).with_context(|| format!("writing {}", name.display()))?;
        self.n_files += 1;
        self.n_jobs += u64::from(n_jobs);
        Ok(())
    }
}

pub fn fetch(args: FetchArgs) -> anyhow::Result<ExitCode> {
    let sweep_dir = args.out.join(&args.id);
    let (table, target) = match args.table {
        FetchTable::Trajectories => (pb::fetch_results_request::Table::Trajectories, None),
        FetchTable::Summary => (pb::fetch_results_request::Table::Summary, Some("summary.parquet".to_string())),
        FetchTable::Final => (pb::fetch_results_request::Table::Final, Some("final.parquet".to_string())),
        FetchTable::Along => {
            let column = args.along.as_deref().context("--table along needs --along COLUMN")?;
            (pb::fetch_results_request::Table::Along, Some(armada::results::along_file(column)))
        }
        FetchTable::Comparisons => {
            (pb::fetch_results_request::Table::Comparisons, Some(armada::results::rounds::COMPARISONS_FILE.to_string()))
        }
    };
    let filtered = !args.jobs.is_empty() || args.benchmark.is_some() || args.algorithm.is_some();
    if target.is_some() && filtered {
        anyhow::bail!("--job, --benchmark and --algorithm select trajectories; a summary table comes whole");
    }
    let trajectories = armada::results::trajectories_dir(&sweep_dir);
    if target.is_none() && std::fs::read_dir(&trajectories).is_ok_and(|mut d| d.next().is_some()) {
        anyhow::bail!("{} is not empty: fetch trajectories into a new directory", trajectories.display());
    }
    std::fs::create_dir_all(if target.is_none() { &trajectories } else { &sweep_dir })
        .with_context(|| format!("creating {}", sweep_dir.display()))?;
    let request = pb::FetchResultsRequest {
        sweep_id: args.id.clone(),
        table: table as i32,
        along: args.along.clone().unwrap_or_default(),
        job_keys: args.jobs.clone(),
        cells: Some(pb::CellFilter {
            benchmark: args.benchmark.clone().unwrap_or_default(),
            algorithm: args.algorithm.clone().unwrap_or_default(),
            ..Default::default()
        }),
    };
    let fetched = block_on(async {
        let mut client = args.remote.client().await?;
        let mut files = FetchedFiles {
            target: &target,
            sweep_dir: &sweep_dir,
            trajectories: &trajectories,
            open: None,
            n_files: 0,
            n_jobs: 0,
            n_bytes: 0,
        };
        let fetched = match armada::client::fetch_results(&mut client, request, &mut files).await {
            Ok(fetched) => fetched,
            Err(e) => {
                if let Some((_, tmp)) = files.open.take() {
                    let _ = std::fs::remove_file(tmp);
                }
                return Err(e);
            }
        };
        let (n_jobs, n_bytes) = (files.n_jobs, files.n_bytes);
        let n_files = fetched.n_files;
        match target {
            Some(name) => eprintln!("wrote {} ({n_bytes} bytes)", sweep_dir.join(name).display()),
            None => eprintln!("wrote {n_jobs} jobs in {n_files} files ({n_bytes} bytes) to {}", trajectories.display()),
        }
        if fetched.damaged.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        for d in &fetched.damaged {
            eprintln!("warning: the coordinator could not read part {}: {}", d.part, d.error);
        }
        let unreadable = &fetched.unreadable_jobs;
        eprintln!(
            "warning: {} done jobs were only in those parts and are missing here: {}{}",
            unreadable.len(),
            unreadable.iter().take(10).cloned().collect::<Vec<_>>().join(", "),
            if unreadable.len() > 10 { ", ..." } else { "" }
        );
        eprintln!("  (`armada check --repair` on the coordinator's data directory queues them again)");
        Ok(ExitCode::FAILURE)
    });
    if fetched.is_err() {
        // The directories made for it, if still empty (remove_dir leaves a full one alone).
        let _ = std::fs::remove_dir(&trajectories);
        let _ = std::fs::remove_dir(&sweep_dir);
    }
    fetched
}
