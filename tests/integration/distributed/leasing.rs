//! How workers share a sweep's jobs: leasing ahead by the work a sweep's jobs hold.

use super::*;

/// Leasing ahead follows the sweep being leased, not the last job: after a sweep of short
/// jobs, the long jobs of the next are leased one per slot (the surplus of a lease sized for
/// the short sweep is handed back at once), so two 1-slot workers share them.
#[test]
fn long_jobs_after_short_ones_are_shared_between_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let quick = write(
        tmp.path(),
        "quick.toml",
        "family = \"testkit\"\nseeds = 300\nhorizon = 2\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"echo\"\n",
    );
    let long =
        write(tmp.path(), "long.toml", &SLOW_SWEEP.replace("ms = 60", "ms = 40").replace("seeds = 12", "seeds = 8"));
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let logs = [tmp.path().join("w1.log"), tmp.path().join("w2.log")];
    let _workers: Vec<Proc> = logs.iter().map(|log| worker(&coord.url, 1, log, &[])).collect();
    for (sweep, id) in [(&quick, "quick"), (&long, "slow")] {
        assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
        let watched = client(&["watch", id, "--quiet"], &coord.url, 300);
        assert!(watched.status.success(), "{}", text(&watched.stderr));
    }
    // Each worker committed some of the long jobs (each takes about 0.4 s).
    let by_worker = committed_by_worker(&data.join("slow"));
    assert_eq!(by_worker.values().sum::<usize>(), 8);
    assert!(by_worker.len() == 2 && by_worker.values().all(|&n| n >= 2), "{by_worker:?}");
}

/// Short jobs are leased ahead by the work they hold, not by the cap of 512: two 1-slot workers
/// share a sweep of 40 jobs of 30 ms to its end (each holds about 100 ms ahead). Leasing
/// 64 ahead once a job measured short, the first worker took the rest of the sweep (39 of
/// 40), and the other idled.
#[test]
fn a_sweep_of_short_jobs_is_shared_between_workers_to_its_end() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(
        tmp.path(),
        "short.toml",
        &SLOW_SWEEP
            .replace("ms = 60", "ms = 15")
            .replace("seeds = 12", "seeds = 40")
            .replace("horizon = 10", "horizon = 1"),
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let logs = [tmp.path().join("w1.log"), tmp.path().join("w2.log")];
    let _workers: Vec<Proc> = logs.iter().map(|log| worker(&coord.url, 1, log, &[])).collect();
    // Both registered first: a worker started late on a busy machine would find the sweep
    // done whatever the leasing.
    let registered = |log: &PathBuf| std::fs::read_to_string(log).unwrap_or_default().contains("registered with");
    wait_until(60, "both workers registered", || logs.iter().all(registered));
    assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    let watched = client(&["watch", "slow", "--quiet"], &coord.url, 300);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let by_worker = committed_by_worker(&data.join("slow"));
    assert_eq!(by_worker.values().sum::<usize>(), 40);
    assert!(by_worker.len() == 2 && by_worker.values().all(|&n| n >= 10), "{by_worker:?}");
}
