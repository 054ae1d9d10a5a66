//! Subcommands of `armada`, one module each.

mod list;
mod run;
mod summarize;

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
    /// Rebuild summary.parquet and final.parquet of a sweep from the shards that exist.
    Summarize(summarize::SummarizeArgs),
    /// List the families, benchmarks, algorithms and parameters this build knows.
    List(list::ListArgs),
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Summarize(args) => summarize::summarize(args),
        Command::List(args) => list::list(args),
    }
}
