//! Subcommands of `armada`, one module each.

mod check;
mod family;
mod list;
mod loadgen;
mod remote;
mod report;
mod run;
mod serve;
mod summarize;
mod worker;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// armada runs algorithm x benchmark x seed sweeps of sequential decision algorithms
/// and aggregates their trajectories into Parquet tables.
#[derive(Parser, Debug)]
#[command(name = "armada", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run every job of a sweep file locally, resume what exists, then summarize.
    Run(run::RunArgs),
    /// Rebuild summary.parquet and final.parquet of a sweep from the trajectories that exist.
    Summarize(summarize::SummarizeArgs),
    /// List the families, benchmarks, algorithms and parameters this build knows.
    List(list::ListArgs),
    /// Run a coordinator: the gRPC services, the scheduler and its store.
    Serve(serve::ServeArgs),
    /// Run a worker: lease jobs from a coordinator and run them.
    Worker(worker::WorkerArgs),
    /// Submit a sweep file to a coordinator; prints the sweep id.
    Submit(remote::SubmitArgs),
    /// Follow a sweep on a coordinator to its end, then print its final table.
    Watch(remote::WatchArgs),
    /// Show one sweep on a coordinator, or all of them.
    Status(remote::StatusArgs),
    /// Cancel a sweep on a coordinator (finished trajectories are kept).
    Cancel(remote::CancelArgs),
    /// Remove a finished or cancelled sweep from a coordinator, with its results unless
    /// --keep-results.
    Delete(remote::DeleteArgs),
    /// Download a sweep's trajectories (all, or some jobs or cells) or a summary table
    /// from a coordinator.
    Fetch(remote::FetchArgs),
    /// Declare a family to a coordinator ahead of its workers (`armada family add FILE`).
    #[command(subcommand)]
    Family(family::FamilyCommand),
    /// Write a self-contained HTML report (curves and tables) of a finished sweep's results.
    Report(report::ReportArgs),
    /// Check a data directory's store and trajectories against each other; --repair queues
    /// the jobs whose rows are lost to run again.
    Check(check::CheckArgs),
    /// Measure a coordinator: simulated worker sessions (many per process, each a real gRPC
    /// client) run a `testkit` sweep against an `armada serve` it starts; prints the rate,
    /// the coordinator's CPU per job, call latencies and memory, and checks every job was
    /// committed exactly once.
    Loadgen(loadgen::LoadgenArgs),
}

/// A `--dashboard` value: an address, or `off` (None).
#[derive(Clone, Copy, Debug)]
pub struct DashboardAt(pub Option<std::net::SocketAddr>);

pub fn parse_dashboard(value: &str) -> Result<DashboardAt, String> {
    if value == "off" {
        return Ok(DashboardAt(None));
    }
    value
        .parse()
        .map(|a| DashboardAt(Some(a)))
        .map_err(|_| format!("`{value}`: give HOST:PORT (e.g. 127.0.0.1:7071) or `off`"))
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Summarize(args) => summarize::summarize(args),
        Command::List(args) => list::list(args),
        Command::Serve(args) => serve::serve(args),
        Command::Worker(args) => worker::worker(args),
        Command::Submit(args) => remote::submit(args),
        Command::Watch(args) => remote::watch(args),
        Command::Status(args) => remote::status(args),
        Command::Cancel(args) => remote::cancel(args),
        Command::Report(args) => report::report(args),
        Command::Delete(args) => remote::delete(args),
        Command::Fetch(args) => remote::fetch(args),
        Command::Family(command) => family::family(command),
        Command::Check(args) => check::check(args),
        Command::Loadgen(args) => loadgen::loadgen(args),
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    armada::shutdown::signal().await
}
