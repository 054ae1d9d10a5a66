//! The client subcommands: `armada submit`, `watch`, `status` and `cancel`, talking to a
//! coordinator's `Sweeps` service.

use anyhow::Context;
use armada_proto::v1 as pb;
use armada_worker::auth::{BearerToken, TOKEN_ENV};
use indicatif::{ProgressBar, ProgressStyle};
use pb::sweeps_client::SweepsClient;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

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

type Client = SweepsClient<InterceptedService<Channel, BearerToken>>;

impl Remote {
    async fn client(&self) -> anyhow::Result<Client> {
        let channel = armada_worker::connect::connect(&self.coordinator, self.tls_ca.as_deref()).await?;
        Ok(SweepsClient::with_interceptor(channel, BearerToken::new(self.token.as_deref())?))
    }
}

/// A gRPC status as a one-line error.
fn status_error(e: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{} ({:?})", e.message(), e.code())
}

fn block_on<T>(f: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
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
        let reply = client
            .submit_sweep(request)
            .await
            .map_err(|e| anyhow::anyhow!("{}: {} ({:?})", args.sweep.display(), e.message(), e.code()))?;
        let r = reply.into_inner();
        eprintln!("{}: {} jobs ({} new, {} already done)", r.sweep_id, r.n_jobs, r.n_added, r.n_already_done);
        println!("{}", r.sweep_id);
        Ok(ExitCode::SUCCESS)
    })
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
        let finished = follow(&mut client, &args.id, !args.quiet && std::io::stderr().is_terminal()).await?;
        print_summary(&mut client, &finished).await
    })
}

/// Stream a sweep's events with a progress bar until it finishes; returns its last status.
pub async fn follow(client: &mut Client, id: &str, progress: bool) -> anyhow::Result<pb::SweepStatus> {
    use pb::sweep_event::Event;
    let mut events = client
        .watch_sweep(pb::WatchSweepRequest { sweep_id: id.to_string() })
        .await
        .map_err(status_error)?
        .into_inner();
    let bar = if progress { ProgressBar::new(0) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} jobs ({eta} left) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let settled = |s: &pb::SweepStatus| u64::from(s.n_done + s.n_failed + s.n_cancelled);
    while let Some(event) = events.message().await.map_err(status_error)? {
        match event.event {
            Some(Event::Snapshot(s)) => {
                bar.set_length(u64::from(s.n_jobs));
                bar.set_position(settled(&s));
            }
            Some(Event::JobFinished(_)) => bar.inc(1),
            Some(Event::JobFailed(f)) => {
                let verdict = if f.r#final { "failed" } else { "will retry" };
                bar.println(format!("job {} attempt {} {verdict}: {}", f.description, f.attempt, f.error));
                if f.r#final {
                    bar.inc(1);
                }
            }
            Some(Event::JobStarted(_)) | None => {}
            Some(Event::SweepFinished(s)) => {
                bar.finish_and_clear();
                return Ok(s);
            }
        }
    }
    bar.finish_and_clear();
    anyhow::bail!("the coordinator closed the watch of `{id}` before the sweep finished")
}

async fn print_summary(client: &mut Client, status: &pb::SweepStatus) -> anyhow::Result<ExitCode> {
    eprintln!("{}", describe(status));
    if status.n_done > 0 {
        let summary = client
            .get_summary(pb::GetSummaryRequest { sweep_id: status.sweep_id.clone() })
            .await
            .map_err(status_error)?
            .into_inner();
        eprintln!("wrote {} and {} ({} shards)", summary.summary_path, summary.final_path, summary.n_shards);
        println!("{}", summary.table);
    }
    for line in failure_lines(status) {
        eprintln!("{line}");
    }
    let ok = status.n_failed == 0 && status.state != pb::SweepState::Cancelled as i32;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn describe(s: &pb::SweepStatus) -> String {
    let state = pb::SweepState::try_from(s.state).map_or("unknown", |st| match st {
        pb::SweepState::Running => "running",
        pb::SweepState::Finished => "finished",
        pb::SweepState::Cancelled => "cancelled",
        pb::SweepState::Unspecified => "unknown",
    });
    format!(
        "{}: {state}, {} jobs: {} done, {} running, {} queued, {} failed, {} cancelled ({})",
        s.sweep_id, s.n_jobs, s.n_done, s.n_running, s.n_queued, s.n_failed, s.n_cancelled, s.results_dir
    )
}

/// One line per failed job, at most 20, then how many more.
fn failure_lines(s: &pb::SweepStatus) -> Vec<String> {
    const SHOWN: usize = 20;
    let mut lines: Vec<String> = s
        .failures
        .iter()
        .take(SHOWN)
        .map(|f| format!("failed: {} after {} attempts: {}", f.description, f.attempt, f.error))
        .collect();
    if s.failures.len() > SHOWN {
        lines.push(format!("... and {} more failed jobs", s.failures.len() - SHOWN));
    }
    lines
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// A sweep id; every sweep when omitted.
    id: Option<String>,
    #[command(flatten)]
    remote: Remote,
}

pub fn status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    block_on(async {
        let mut client = args.remote.client().await?;
        let sweeps = match args.id {
            Some(id) => {
                vec![client.get_sweep(pb::GetSweepRequest { sweep_id: id }).await.map_err(status_error)?.into_inner()]
            }
            None => client.list_sweeps(pb::ListSweepsRequest {}).await.map_err(status_error)?.into_inner().sweeps,
        };
        if sweeps.is_empty() {
            println!("no sweeps");
        }
        for s in &sweeps {
            println!("{}", describe(s));
            for line in failure_lines(s) {
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
