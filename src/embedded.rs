//! The embedded default of `armada run`: a coordinator on a loopback port with its store
//! under the results directory, N worker processes of this same binary, and a client that
//! submits the sweep and follows it to the end.
//!
//! The workers get a fresh random token (only this run can use the coordinator) and
//! `--exit-with-parent`, so even a `kill -9` of `armada run` takes them down too; Ctrl-C
//! and SIGTERM stop them directly. Everything
//! committed so far is in the store and the shards, and a second `armada run` of the same
//! sweep resumes: the store voids the attempts that were running, and done jobs are skipped.

use crate::client;
use crate::coordinator::{self, SchedulerConfig, ServeConfig};
use armada_proto::auth::TOKEN_ENV;
use armada_proto::v1 as pb;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// How an embedded run runs.
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
    /// Worker processes, one job slot each.
    pub n_workers: usize,
    pub progress: bool,
    /// The armada binary the workers run (normally this process's own executable).
    pub worker_exe: PathBuf,
    /// Where to serve the dashboard, if anywhere (its address is printed on stderr).
    pub dashboard: Option<std::net::SocketAddr>,
}

/// Kills the worker processes when dropped (on every exit path).
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What an embedded run ended with.
pub struct EmbeddedOutcome {
    pub status: pb::SweepStatus,
    /// The coordinator's summary (its files are written), when some job is done.
    pub summary: Option<pb::GetSummaryResponse>,
    /// How long the summary files took after the sweep's last job was settled.
    pub summary_wait: std::time::Duration,
    /// The coordinator, closing.
    pub closing: Closing,
}

/// The embedded coordinator's runtime shutting down on a thread of its own (its last step
/// closes the store, which syncs it), so that the caller reads the results meanwhile.
/// Dropping it waits for the end: the process never exits with the store open.
pub struct Closing(Option<std::thread::JoinHandle<()>>);

impl Drop for Closing {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// Submit the sweep text to an embedded coordinator storing under `out`, run it on
/// `config.n_workers` worker processes, and return the sweep's final status and summary.
pub fn run_embedded(
    sweep_text: &str,
    default_name: &str,
    out: &Path,
    config: &EmbeddedConfig,
) -> anyhow::Result<EmbeddedOutcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let outcome = runtime.block_on(async {
        let token = crate::secret::random_secret();
        let serve_config = ServeConfig {
            listen: "127.0.0.1:0".parse().expect("a valid address"),
            data: out.to_path_buf(),
            token: Some(token.clone()),
            tokens: vec![],
            tls: None,
            max_jobs_per_sweep: crate::sweep::DEFAULT_MAX_JOBS,
            declarations_per_token: crate::coordinator::durable::catalog::DEFAULT_DECLARATIONS_PER_TOKEN,
            dashboard: config.dashboard,
            scheduler: SchedulerConfig { only_submitted: true, ..SchedulerConfig::default() },
        };
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(coordinator::serve(
            serve_config,
            Arc::new(crate::registry()),
            move |at| {
                let _ = addr_tx.send(at);
            },
            async {
                let _ = stop_rx.await;
            },
        ));
        let at = match addr_rx.await {
            Ok(at) => at,
            // The server ended before listening: report its error.
            Err(_) => {
                return Err(server.await?.err().unwrap_or_else(|| anyhow::anyhow!("the coordinator did not start")))
            }
        };
        let url = format!("http://{}", at.grpc);
        if let Some(dashboard) = at.dashboard {
            // The token rides in the address once: the page swaps it for a cookie.
            eprintln!("dashboard: http://{dashboard}/?token={token}");
        }
        let mut workers = Workers(Vec::new());
        for _ in 0..config.n_workers.max(1) {
            let child = Command::new(&config.worker_exe)
                .args(["worker", "--coordinator", &url, "--slots", "1", "--exit-with-parent"])
                .env(TOKEN_ENV, &token)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| anyhow::anyhow!("starting a worker process ({}): {e}", config.worker_exe.display()))?;
            workers.0.push(child);
        }
        let mut sweeps = client::connect(&url, Some(&token), None).await?;
        let request = pb::SubmitSweepRequest {
            sweep: Some(pb::submit_sweep_request::Sweep::Toml(sweep_text.to_string())),
            default_name: default_name.to_string(),
        };
        let submitted = sweeps.submit_sweep(request).await.map_err(client::status_error)?.into_inner();
        let outcome = tokio::select! {
            status = client::follow(&mut sweeps, &submitted.sweep_id, config.progress) => status,
            _ = crate::shutdown::signal() => Err(anyhow::anyhow!(
                "interrupted: what was committed is kept; run the same command again to resume"
            )),
        };
        drop(workers);
        // The summary files are written as the last cell's rows are: wait for them.
        let finished = std::time::Instant::now();
        let outcome = match outcome {
            Ok(status) if status.n_done > 0 => {
                let request = pb::GetSummaryRequest { sweep_id: status.sweep_id.clone() };
                match sweeps.get_summary(request).await {
                    Ok(summary) => Ok((status, Some(summary.into_inner()), finished.elapsed())),
                    Err(e) => Err(client::status_error(e)),
                }
            }
            Ok(status) => Ok((status, None, finished.elapsed())),
            Err(e) => Err(e),
        };
        let _ = stop_tx.send(());
        server.await??;
        outcome
    });
    let (status, summary, summary_wait) = outcome?;
    let closing = std::thread::Builder::new()
        .name("armada-closing".into())
        .spawn(move || drop(runtime))
        .map_err(|e| anyhow::anyhow!("starting a thread: {e}"))?;
    Ok(EmbeddedOutcome { status, summary, summary_wait, closing: Closing(Some(closing)) })
}
