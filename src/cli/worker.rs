//! `armada worker`: lease and run jobs for a coordinator until Ctrl-C or SIGTERM, then
//! finish the running jobs and exit 0.

use armada_proto::auth::TOKEN_ENV;
use armada_worker::{run_worker, WorkerConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The coordinator's URL.
    #[arg(long, env = "ARMADA_COORDINATOR", default_value = "http://127.0.0.1:7070")]
    coordinator: String,
    /// Jobs run side by side (default: the number of cores).
    #[arg(long)]
    slots: Option<usize>,
    /// Bearer token, if the coordinator requires one.
    #[arg(long, env = TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// CA certificate (PEM) for an https:// coordinator.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// A name for the coordinator's messages and the dashboard (default: HOST:PID).
    #[arg(long)]
    name: Option<String>,
    /// Exit when the parent process does (workers started by `armada run`).
    #[arg(long, hide = true)]
    exit_with_parent: bool,
}

/// Resolves when the parent process is gone (never, unless `enabled` on unix).
async fn watch_parent(enabled: bool) {
    #[cfg(unix)]
    if enabled {
        let parent = std::os::unix::process::parent_id();
        while std::os::unix::process::parent_id() == parent {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        return;
    }
    let _ = enabled;
    std::future::pending::<()>().await
}

/// The machine's host name as the operating system has it (`HOSTNAME` is a variable bash
/// sets but does not export, so a worker started from a script would not see it).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..len]) {
        Ok(name) if ok && !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}

pub fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let slots = args.slots.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    if let Some(name) = &args.name {
        // The coordinator keeps at most 256 characters of it; say so here, not in a retry loop.
        anyhow::ensure!(!name.is_empty() && name.chars().count() <= 256, "--name: give 1 to 256 characters");
    }
    let host = host_name();
    let config = WorkerConfig {
        coordinator: args.coordinator,
        slots,
        token: args.token,
        tls_ca: args.tls_ca,
        name: args.name.unwrap_or_else(|| format!("{host}:{}", std::process::id())),
        host,
    };
    // Job work runs on the blocking pool, at most `slots` jobs at a time.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(slots)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let orphaned = watch_parent(args.exit_with_parent);
        tokio::spawn(async move {
            tokio::select! {
                _ = super::shutdown_signal() => {}
                _ = orphaned => {}
            }
            let _ = tx.send(true);
        });
        run_worker(config, Arc::new(armada::registry()), rx).await
    })?;
    Ok(ExitCode::SUCCESS)
}
