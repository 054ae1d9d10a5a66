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
    /// (they re-run to the same bits) and remove the summaries they were in; restore a
    /// damaged or missing store from its newest intact backup, and rebuild the sweeps it
    /// lacks from their trajectories.
    #[arg(long)]
    repair: bool,
}

pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let (store, checked) = check::check(&args.dir, args.full)?;
    report(&args, &checked);
    if checked.problems.is_empty() {
        println!("no problem found");
        return Ok(ExitCode::SUCCESS);
    }
    if !args.repair {
        println!("{} problems", checked.problems.len());
        return Ok(ExitCode::from(1));
    }
    let (mut store, checked) = match store {
        Some(store) if !checked.store_lost() => (store, checked),
        _ => {
            // The store first: what else is wrong is only known against the restored one.
            let restored = check::restore_store(&args.dir)?;
            for moved in &restored.moved {
                println!("moved aside: {}", moved.display());
            }
            for damaged in &restored.damaged_backups {
                println!("passed over a damaged backup: {}", damaged.display());
            }
            match &restored.backup {
                Some(backup) => println!("restored the store from {}", backup.display()),
                None => println!("no intact backup: starting an empty store"),
            }
            let (store, checked) = check::check(&args.dir, args.full)?;
            report(&args, &checked);
            let store = store.ok_or_else(|| anyhow::anyhow!("the restored store is damaged too"))?;
            (store, checked)
        }
    };
    let repaired = check::repair(&mut store, &args.dir, &checked)?;
    drop(store); // its lock, for the check below
    for moved in &repaired.moved {
        println!("moved aside: {}", moved.display());
    }
    for (sweep, n) in &repaired.rebuilt {
        println!(
            "rebuilt sweep `{sweep}` from its parts: {n} done jobs; resubmit its sweep file to queue the rest \
             (the done jobs are not run again)"
        );
    }
    for why in &repaired.not_rebuilt {
        println!("  not rebuilt: {why}");
    }
    if repaired.requeued > 0 {
        println!(
            "queued again: {} jobs; run or resubmit their sweeps to compute them (the same bits as before)",
            repaired.requeued
        );
    }
    let (_, after) = check::check(&args.dir, args.full)?;
    let left = after.problems.len();
    if left > 0 {
        report(&args, &after);
        println!("{left} problems left that --repair does not fix");
        return Ok(ExitCode::from(1));
    }
    println!("repaired: no problem left");
    Ok(ExitCode::SUCCESS)
}

/// What a check found, a few lines per problem.
fn report(args: &CheckArgs, checked: &Checked) {
    let Checked { n_sweeps, n_parts, n_jobs, problems } = checked;
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
}
