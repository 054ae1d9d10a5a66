//! `armada loadgen`: simulated worker sessions against a coordinator it starts, to measure
//! what one coordinator sustains (see `armada::loadgen`).

use anyhow::Context;
use armada::loadgen::{self, LoadConfig};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct LoadgenArgs {
    /// Simulated worker sessions (each a gRPC client of its own, all in this process).
    #[arg(long, default_value_t = 200)]
    sessions: usize,
    /// Job slots per session.
    #[arg(long, default_value_t = 8)]
    slots: usize,
    /// Jobs of the sweep it submits (a `testkit` sweep of this many seeds).
    #[arg(long, default_value_t = 100_000)]
    jobs: usize,
    /// Steps per job after the initial point (records per job: steps + 1; beyond 63 they
    /// are uploaded before the commit, as a worker does).
    #[arg(long, default_value_t = 10)]
    steps: u32,
    /// How long a job holds its slot, in milliseconds: `MS` or `MIN..MAX` (uniform).
    #[arg(long, default_value = "0", value_parser = parse_range)]
    job_ms: (u64, u64),
    /// The coordinator's data directory (default: a temporary one, removed after).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Pin the coordinator to this CPU and the load generator to the others (Linux).
    #[arg(long, value_name = "CPU")]
    coordinator_cpu: Option<usize>,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_range(value: &str) -> Result<(u64, u64), String> {
    let number = |v: &str| v.trim().parse::<u64>().map_err(|_| format!("`{v}` is not a whole number of milliseconds"));
    let (min, max) = match value.split_once("..") {
        Some((min, max)) => (number(min)?, number(max)?),
        None => (number(value)?, number(value)?),
    };
    if min > max {
        return Err(format!("`{value}`: the minimum is above the maximum"));
    }
    Ok((min, max))
}

pub fn loadgen(args: LoadgenArgs) -> anyhow::Result<ExitCode> {
    let temporary = match &args.data {
        Some(_) => None,
        None => Some(tempdir()?),
    };
    let data = args.data.clone().or_else(|| temporary.clone()).expect("one of them");
    let config = LoadConfig {
        sessions: args.sessions,
        slots: args.slots,
        jobs: args.jobs,
        steps: args.steps,
        job_ms: args.job_ms,
        exe: std::env::current_exe().context("finding this executable")?,
        data,
        coordinator_cpu: args.coordinator_cpu,
    };
    let report = loadgen::run(&config);
    if let Some(dir) = temporary {
        let _ = std::fs::remove_dir_all(dir);
    }
    let report = report?;
    print!("{}", loadgen::describe(&report));
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if report.exactly_once() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A new directory under the system's temporary one.
fn tempdir() -> anyhow::Result<PathBuf> {
    let dir =
        std::env::temp_dir().join(format!("armada-loadgen-{}-{}", std::process::id(), armada::secret::random_secret()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
