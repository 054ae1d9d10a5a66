//! `armada check DIR`: a data directory's store and trajectories checked against each
//! other, and with `--repair` what is lost queued to run again.

use armada::check::{self, Checked};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// A coordinator's --data directory (or `armada run`'s --out): the one holding
    /// armada.sqlite. Refused while a coordinator runs on it.
    dir: PathBuf,
    /// Read every row of every part, not only the footers and job indexes.
    #[arg(long)]
    full: bool,
    /// Move damaged parts to <sweep>/damaged/, queue the jobs whose rows are lost again
    /// (they re-run to the same bits) and remove the summaries they were in.
    #[arg(long)]
    repair: bool,
}

pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let (store, checked) = check::check(&args.dir, args.full)?;
    let Checked { n_sweeps, n_parts, n_jobs, problems } = &checked;
    println!(
        "{}: {n_sweeps} sweeps, {n_parts} parts, {n_jobs} done jobs found{}",
        args.dir.display(),
        if args.full { ", every row read" } else { "" }
    );
    for p in problems {
        let sweep = p.sweep.as_deref().map_or(String::new(), |s| format!("sweep `{s}`: "));
        println!("{sweep}{}: {}", p.file.display(), p.what);
        if !p.jobs.is_empty() {
            let shown: Vec<&str> = p.jobs.iter().take(5).map(String::as_str).collect();
            let more = p.jobs.len().saturating_sub(shown.len());
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            println!("  jobs: {}{more}", shown.join(", "));
        }
        println!("  fix: {}", p.fix);
    }
    if problems.is_empty() {
        println!("no problem found");
        return Ok(ExitCode::SUCCESS);
    }
    let (true, Some(mut store)) = (args.repair, store) else {
        println!("{} problems", problems.len());
        return Ok(ExitCode::from(1));
    };
    let repaired = check::repair(&mut store, &args.dir, &checked)?;
    drop(store); // its lock, for the check below
    for moved in &repaired.moved {
        println!("moved aside: {}", moved.display());
    }
    println!(
        "queued again: {} jobs; run or resubmit their sweeps to compute them (the same bits as before)",
        repaired.requeued
    );
    let (_, after) = check::check(&args.dir, args.full)?;
    let left = after.problems.len();
    if left > 0 {
        println!("{left} problems left that --repair does not fix");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
