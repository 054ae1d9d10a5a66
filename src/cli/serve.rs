//! `armada serve`: run a coordinator until Ctrl-C or SIGTERM.

use armada::coordinator::durable::backups::BackupPolicy;
use armada::coordinator::durable::committer::CommitConfig;
use armada::coordinator::{self, SchedulerConfig, ServeConfig};
use armada_proto::auth::TOKEN_ENV;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// Directory of the store (armada.sqlite) and the results (<sweep>/...).
    #[arg(long, default_value = "armada-data")]
    data: PathBuf,
    /// Require this bearer token on every request.
    #[arg(long, env = TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// More tokens, each with a role (client, worker, admin) and, for a worker token, the
    /// families it may run: a TOML file of `[[tokens]]` tables (see docs/cluster.md, "The trust model").
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// Serve TLS with this PEM certificate chain (with --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// A lease lives this long without a heartbeat (milliseconds).
    #[arg(long, default_value_t = 10_000)]
    lease_ttl_ms: u64,
    /// Attempts (failed or expired) before a job is marked failed.
    #[arg(long, default_value_t = 3)]
    max_attempts: u32,
    /// Retry a job whose own code failed (an exception, a panic) up to --max-attempts, as
    /// a lost worker's jobs are; by default it fails at once, with its error.
    #[arg(long)]
    retry_job_errors: bool,
    /// The longest a finished job waits for others to share its trajectory part
    /// (milliseconds): longer means fewer, larger files; commits are answered after it.
    #[arg(long, default_value_t = 200)]
    commit_linger_ms: u64,
    /// Trajectory parts written at once (default: the number of cores); each holds a row
    /// group of up to 32,768 rows in memory.
    #[arg(long)]
    part_writers: Option<usize>,
    /// Refuse sweeps of more jobs than this (counted before their grids are expanded).
    #[arg(long, default_value_t = armada::sweep::DEFAULT_MAX_JOBS)]
    max_jobs_per_sweep: usize,
    /// The most family declarations one token (of --tokens, other than an admin's) keeps,
    /// so that no one fills the coordinator's 256.
    #[arg(long, default_value_t = armada::coordinator::durable::catalog::DEFAULT_DECLARATIONS_PER_TOKEN)]
    max_declarations_per_token: usize,
    /// Where the dashboard and /metrics listen (HTTP), or `off`. Default: the --listen
    /// address with the next port (7071 beside the default 7070; any free port when
    /// --listen's port is 0).
    #[arg(long, value_parser = super::parse_dashboard)]
    dashboard: Option<super::DashboardAt>,
    /// Back the store up this often (seconds; 0: never), online, into
    /// <data>/armada.backups/; `armada check --repair` restores a damaged store from the
    /// newest one and the trajectories on disk.
    #[arg(long, default_value_t = 600)]
    backup_every_s: u64,
    /// Keep this many backups of the store (the newest).
    #[arg(long, default_value_t = 3)]
    backups: usize,
    /// Before serving, check the data directory as `armada check --full` does (every page
    /// of the store, every row of every part) and report what is wrong; every start
    /// already checks what is cheap (missing parts, sweeps the store does not know).
    #[arg(long)]
    check_full: bool,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.lease_ttl_ms >= 100, "--lease-ttl-ms must be at least 100");
    anyhow::ensure!(args.max_attempts >= 1, "--max-attempts must be at least 1");
    anyhow::ensure!(args.commit_linger_ms <= 60_000, "--commit-linger-ms must be at most 60000");
    anyhow::ensure!(args.part_writers.is_none_or(|n| (1..=64).contains(&n)), "--part-writers must be 1 to 64");
    if args.check_full && armada::data_dir::DataDir(&args.data).store().is_file() {
        check_before_serving(&args.data)?;
    }
    let lease_ttl = Duration::from_millis(args.lease_ttl_ms);
    let dashboard = match args.dashboard {
        Some(at) => at.0,
        None => {
            let port = if args.listen.port() == 0 { 0 } else { args.listen.port().checked_add(1).unwrap_or(0) };
            Some(SocketAddr::new(args.listen.ip(), port))
        }
    };
    let config = ServeConfig {
        listen: args.listen,
        data: args.data,
        token: args.token,
        tokens: args.tokens.as_deref().map(coordinator::surface::access::read_tokens).transpose()?.unwrap_or_default(),
        tls: args.tls_cert.zip(args.tls_key),
        max_jobs_per_sweep: args.max_jobs_per_sweep,
        declarations_per_token: args.max_declarations_per_token,
        dashboard,
        scheduler: SchedulerConfig {
            lease_ttl,
            heartbeat: lease_ttl / 4,
            max_attempts: args.max_attempts,
            retry_job_errors: args.retry_job_errors,
            only_submitted: false,
            commit: CommitConfig {
                linger: Duration::from_millis(args.commit_linger_ms),
                writers: args.part_writers.unwrap_or(CommitConfig::default().writers),
                ..CommitConfig::default()
            },
            backup: BackupPolicy { every: Duration::from_secs(args.backup_every_s), keep: args.backups },
            ..SchedulerConfig::default()
        },
    };
    let scheme = if config.tls.is_some() { "https" } else { "http" };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(coordinator::serve(
        config,
        Arc::new(armada::registry()),
        |at| {
            // The first line of stdout: tests and scripts read the port from it. Both lines
            // go in one write, and a reader that closed the pipe after the first is no
            // error worth stopping for.
            let mut lines = format!("armada coordinator listening on {scheme}://{}\n", at.grpc);
            if let Some(addr) = at.dashboard {
                lines += &format!("armada dashboard on {scheme}://{addr}/ (metrics: {scheme}://{addr}/metrics)\n");
            }
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(lines.as_bytes()).and_then(|()| stdout.flush());
        },
        super::shutdown_signal(),
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `armada check --full` of `data`, reported on stderr; serving goes on past damaged parts
/// (they stop only their own jobs) but not past a damaged store.
fn check_before_serving(data: &std::path::Path) -> anyhow::Result<()> {
    let (store, checked) = armada::check::check(data, true)?;
    drop(store); // its lock: the coordinator takes it next
    eprintln!(
        "checked {}: {} sweeps, {} parts, {} done jobs found, every row read: {} problems",
        data.display(),
        checked.n_sweeps,
        checked.n_parts,
        checked.n_jobs,
        checked.problems.len()
    );
    for p in &checked.problems {
        let sweep = p.sweep.as_deref().map_or(String::new(), |s| format!("sweep `{s}`: "));
        eprintln!("  {sweep}{}: {} (fix: {})", p.file.display(), p.what, p.fix);
    }
    anyhow::ensure!(!checked.store_lost(), "the store is damaged: run `armada check --repair {}`", data.display());
    Ok(())
}
