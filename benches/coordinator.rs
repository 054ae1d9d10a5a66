//! Coordinator throughput against the in-process runner, on this machine.
//!
//! * jobs per second through lease -> run -> stream -> commit, with trivial `testkit/echo`
//!   jobs of one step (two records), 4 worker processes of one slot each;
//! * trajectory rows per second ingested from the workers' streams, with a few long jobs;
//!
//! each against the in-process runner (`armada run --in-process`, 4 threads) on the same
//! sweep in the same run, as a ratio. The distributed time includes starting the embedded
//! coordinator and the 4 worker processes (`armada run`'s default path end to end).
//!
//! `cargo bench --bench coordinator` (release), or `--profile dev` for a quick figure;
//! `ARMADA_BENCH_JOBS` / `ARMADA_BENCH_ROWS` scale the two sweeps.

use armada::embedded::{run_embedded, EmbeddedConfig};
use armada::local::{run_sweep, LocalConfig};
use armada::{registry, sweep};
use std::path::PathBuf;
use std::time::Instant;

const WORKERS: usize = 4;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn testkit_sweep(name: &str, seeds: u64, horizon: u64) -> String {
    format!(
        "name = \"{name}\"\nfamily = \"testkit\"\nseeds = {seeds}\nhorizon = {horizon}\n\
         [[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n"
    )
}

/// Seconds for the in-process runner and for the embedded coordinator + workers.
fn measure(text: &str, name: &str) -> (f64, f64) {
    let registry = registry();
    let sweep = sweep::parse_sweep(text, name, &registry).expect("a valid sweep");
    let local_dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let report =
        run_sweep(&registry, &sweep, &local_dir.path().join(name), LocalConfig { n_threads: WORKERS, progress: false })
            .unwrap();
    let local = t0.elapsed().as_secs_f64();
    assert!(report.failures.is_empty());

    let dist_dir = tempfile::tempdir().unwrap();
    let config =
        EmbeddedConfig { n_workers: WORKERS, progress: false, worker_exe: PathBuf::from(env!("CARGO_BIN_EXE_armada")) };
    let t0 = Instant::now();
    let status = run_embedded(text, name, dist_dir.path(), &config).unwrap();
    let distributed = t0.elapsed().as_secs_f64();
    assert_eq!(status.n_done as usize, sweep.jobs.len());
    (local, distributed)
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a filter we do not use.
    let n_jobs = env_or("ARMADA_BENCH_JOBS", 2000);
    let (local, dist) = measure(&testkit_sweep("bench-jobs", n_jobs, 1), "bench-jobs");
    println!("coordinator throughput, {WORKERS} workers, trivial one-step jobs ({n_jobs} jobs):");
    println!(
        "  in-process {:>9.1} jobs/s   distributed {:>9.1} jobs/s   ratio distributed/in-process {:.3}",
        n_jobs as f64 / local,
        n_jobs as f64 / dist,
        local / dist
    );
    let rows = env_or("ARMADA_BENCH_ROWS", 200_000);
    let (seeds, horizon) = (8, rows / 8);
    let n_rows = seeds * (horizon + 1);
    let (local, dist) = measure(&testkit_sweep("bench-rows", seeds, horizon), "bench-rows");
    println!("trajectory rows ingested, {seeds} jobs of {} rows:", horizon + 1);
    println!(
        "  in-process {:>9.0} rows/s   distributed {:>9.0} rows/s   ratio distributed/in-process {:.3}",
        n_rows as f64 / local,
        n_rows as f64 / dist,
        local / dist
    );
}
