//! The client subcommands: `armada submit`, `watch`, `status` and `cancel`, talking to a
//! coordinator's `Sweeps` service.

use anyhow::Context;
use armada::client::{describe, failure_lines, status_error, Client};
use armada_proto::v1 as pb;
use armada_worker::auth::TOKEN_ENV;
use std::io::IsTerminal;
use std::path::PathBuf;
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
    async fn client(&self) -> anyhow::Result<Client> {
        armada::client::connect(&self.coordinator, self.token.as_deref(), self.tls_ca.as_deref()).await
    }
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
    }
    for line in failure_lines(status) {
        eprintln!("{line}");
    }
    let ok = status.n_failed == 0 && status.state != pb::SweepState::Cancelled as i32;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
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
