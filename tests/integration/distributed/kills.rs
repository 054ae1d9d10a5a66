//! Processes killed, paused and stopped mid-sweep (workers, the coordinator, `armada run`):
//! nothing committed is lost or duplicated.

use super::*;

#[test]
fn a_worker_killed_mid_sweep_loses_nothing_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "slow.toml", SLOW_SWEEP);
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--lease-ttl-ms", "800"]);
    let mut doomed = worker(&coord.url, 2, &tmp.path().join("doomed.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    // Kill it while it holds leases, after it has committed something.
    let sweep_dir = data.join("slow");
    wait_until(30, "a first committed job", || job_count(&sweep_dir) >= 1);
    doomed.kill9();
    let before = job_count(&sweep_dir);
    assert!(before < 12, "the sweep finished before the kill; make the jobs slower");
    let _survivor = worker(&coord.url, 2, &tmp.path().join("survivor.log"), &[]);
    let watched = client(&["watch", "slow", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&sweep_dir), 12);
    assert_each_step_once(&sweep_dir, 10);
    let status = client(&["status", "slow"], &coord.url, 30);
    assert!(text(&status.stdout).contains("12 jobs: 12 done"), "{}", text(&status.stdout));
}

#[test]
fn a_coordinator_killed_mid_sweep_resumes_to_the_uninterrupted_result() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "slow.toml", SLOW_SWEEP);
    // The uninterrupted reference.
    let reference = tmp.path().join("reference");
    let out = armada(&["run", sweep.to_str().unwrap(), "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let data = tmp.path().join("data");
    let mut coord = serve(&data, 0, &["--lease-ttl-ms", "800"]);
    let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let sweep_dir = data.join("slow");
    wait_until(30, "a first committed job", || job_count(&sweep_dir) >= 1);
    coord.proc.kill9();
    assert!(job_count(&sweep_dir) < 12, "the sweep finished before the kill; make the jobs slower");
    // Same port: the worker keeps dialing the same URL and registers again.
    let coord = serve(&data, coord.port, &["--lease-ttl-ms", "800"]);
    let watched = client(&["watch", "slow", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&sweep_dir), 12);
    assert_each_step_once(&sweep_dir, 10);
    let final_of = |dir: &Path| std::fs::read(dir.join("slow").join("final.parquet")).unwrap();
    assert_eq!(final_of(&data), final_of(&reference));
}

#[test]
fn sigterm_lets_a_worker_finish_its_job_and_exit_0() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(
        tmp.path(),
        "three.toml",
        "name = \"three\"\nfamily = \"testkit\"\nseeds = 3\nhorizon = 15\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"slow\"\nparams = { ms = 100 }\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let mut w = worker(&coord.url, 1, &tmp.path().join("w.log"), &[]);
    assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    // Each job takes about 1.6 s; SIGTERM arrives while one runs (the first, unless the
    // machine is very busy).
    let mut done_at_sigterm = 0;
    wait_until(30, "a job running", || {
        let status = text(&client(&["status", "three"], &coord.url, 30).stdout);
        done_at_sigterm = count_of(&status, "done");
        status.contains("1 running")
    });
    w.sigterm();
    assert!(w.wait(30).success(), "a draining worker exits 0");
    let status = text(&client(&["status", "three"], &coord.url, 30).stdout);
    let (done, queued) = (count_of(&status, "done"), count_of(&status, "queued"));
    // The running job finished and committed. A job may have ended and the next been leased
    // between the status read and the signal (a commit lingers before its part is written),
    // so "finished" is at least one more done; but nothing was leased after SIGTERM, so a job
    // stays queued.
    assert!(done > done_at_sigterm, "the running job finished: {status}");
    assert!(queued >= 1, "the sweep was nearly over before SIGTERM, or a job was leased after it: {status}");
    assert!(status.contains(&format!("3 jobs: {done} done, 0 running, {queued} queued")), "{status}");
    assert_eq!(done + queued, 3, "{status}");
    assert_eq!(job_count(&data.join("three")), done);
}

/// The count a status line gives `what` (`done`, `queued`...): "3 jobs: 1 done, ...".
fn count_of(status: &str, what: &str) -> usize {
    let counts = status.split("jobs: ").nth(1).unwrap_or_else(|| panic!("no counts in {status:?}"));
    counts
        .split(", ")
        .find_map(|c| c.strip_suffix(what).or_else(|| c.split_once(&format!(" {what}")).map(|(n, _)| n)))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {what} count in {status:?}"))
}

#[test]
fn an_interrupted_embedded_run_resumes_and_its_workers_exit() {
    let tmp = tempfile::tempdir().unwrap();
    // 8 jobs of about 1.6 s on 2 workers: the interrupt lands mid-sweep even on a busy machine.
    let sweep =
        write(tmp.path(), "slow.toml", &SLOW_SWEEP.replace("seeds = 12", "seeds = 8").replace("ms = 60", "ms = 150"));
    let out = tmp.path().join("out");
    let run = || {
        Command::new(BIN)
            .args(["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "2", "--quiet"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = Proc(run());
    let sweep_dir = out.join("slow");
    wait_until(60, "a first committed job", || job_count(&sweep_dir) >= 1);
    let children = Command::new("pgrep").args(["-P", &first.0.id().to_string()]).output().unwrap();
    let workers: Vec<String> = text(&children.stdout).split_whitespace().map(str::to_string).collect();
    assert_eq!(workers.len(), 2, "two worker processes");
    assert!(Command::new("kill").args(["-INT", &first.0.id().to_string()]).status().unwrap().success());
    let interrupted = first.wait(30);
    let done_before = job_count(&sweep_dir);
    assert!(done_before < 8, "the sweep finished before the interrupt; make the jobs slower");
    assert!(!interrupted.success(), "an interrupted run does not report success");
    // Orphaned workers notice and exit.
    wait_until(30, "the orphaned workers to exit", || {
        workers.iter().all(|pid| !Path::new(&format!("/proc/{pid}")).exists())
    });
    let second = run().wait_with_output().unwrap();
    let stderr = text(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert_eq!(job_count(&sweep_dir), 8);
    // At least the shards present at the interrupt were not run again.
    let already: usize = stderr.split(" already done").next().unwrap().rsplit(", ").next().unwrap().parse().unwrap();
    assert!(already >= done_before, "{stderr}");
    assert!(stderr.contains(&format!("{} run, 0 failed", 8 - already)), "{stderr}");
    assert_each_step_once(&sweep_dir, 10);
}

/// Chaos: for several rounds, at a random moment, kill -9 a random worker or the
/// coordinator (which restarts on the same port and data), while the sweep runs. In the end
/// every job has exactly one trajectory, equal to an uninterrupted run's in every column
/// but elapsed_ms, and the summaries are byte-identical. The schedule comes from a seed,
/// printed on failure (`ARMADA_CHAOS_SEED=<seed>` replays it, up to timing).
#[test]
fn random_kills_of_workers_and_the_coordinator_lose_nothing_and_duplicate_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "chaos.toml", CHAOS_SWEEP);
    let reference = tmp.path().join("reference");
    let out = armada(&["run", sweep.to_str().unwrap(), "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // ARMADA_CHAOS_SEED replays a schedule.
    let seed = std::env::var("ARMADA_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    }) | 1;
    let mut state = seed;
    let mut random = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let data = tmp.path().join("data");
    // Each kill can expire the lease of a job the victim held: more attempts than rounds,
    // so that no job can run out of them (that a job fails after max-attempts expiries is
    // tested elsewhere).
    let lease = ["--lease-ttl-ms", "600", "--max-attempts", "8"];
    let mut coord = serve(&data, 0, &lease);
    let port = coord.port;
    let mut workers: Vec<Proc> =
        (0..2).map(|i| worker(&coord.url, 2, &tmp.path().join(format!("w{i}.log")), &[])).collect();
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let sweep_dir = data.join("chaos");
    let mut kills = Vec::new();
    for round in 0..6 {
        std::thread::sleep(Duration::from_millis(100 + random(400)));
        if job_count(&sweep_dir) == 32 {
            break;
        }
        if random(3) == 0 {
            coord.proc.kill9();
            coord = serve(&data, port, &lease);
            kills.push(format!("round {round}: coordinator"));
        } else {
            let i = random(workers.len() as u64) as usize;
            workers[i].kill9();
            workers[i] = worker(&coord.url, 2, &tmp.path().join(format!("w{i}-{round}.log")), &[]);
            kills.push(format!("round {round}: worker {i}"));
        }
    }
    let watched = client(&["watch", "chaos", "--quiet"], &coord.url, 180);
    assert!(watched.status.success(), "seed {seed}, {kills:?}: {}", text(&watched.stderr));
    let (ours, theirs) = (jobs(&sweep_dir), jobs(&reference.join("chaos")));
    assert_eq!(ours.len(), 32, "seed {seed}, {kills:?}");
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "seed {seed}, {kills:?}");
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], &format!("seed {seed}, {kills:?}, job {key}"));
    }
    for table in ["summary.parquet", "final.parquet"] {
        let (a, b) = (
            std::fs::read(sweep_dir.join(table)).unwrap(),
            std::fs::read(reference.join("chaos").join(table)).unwrap(),
        );
        assert!(a == b, "seed {seed}, {kills:?}: {table} differs");
    }
    eprintln!("chaos seed {seed}: {kills:?}");
}

/// A worker paused (SIGSTOP) past its lease on the job's last try: the job fails, but when
/// the worker resumes it is not told to abandon the work, finishes it, and its result
/// commits (no other attempt did), so the job ends done, every step once.
#[test]
fn a_paused_worker_finishes_its_last_try_and_the_result_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let body = SLOW_SWEEP.replace("slow\"\nfamily", "paused\"\nfamily").replace("seeds = 12", "seeds = 1");
    let sweep = write(tmp.path(), "paused.toml", &body);
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--lease-ttl-ms", "800", "--max-attempts", "1"]);
    let log = tmp.path().join("w.log");
    let w = worker(&coord.url, 1, &log, &[]);
    assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    wait_until(30, "the job leased", || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("leased job")));
    let signal =
        |sig: &str| assert!(Command::new("kill").args([sig, &w.0.id().to_string()]).status().unwrap().success());
    let status = || text(&client(&["status", "paused"], &coord.url, 30).stdout);
    // Paused once its heartbeat said the job started: a lease that expires before that is
    // not charged (the job would be queued again, not failed).
    wait_until(30, "the job started", || {
        let s = status();
        s.contains("1 running") && !s.contains("leased ahead")
    });
    signal("-STOP");
    wait_until(30, "the job failed by its lease", || status().contains("1 failed"));
    signal("-CONT");
    wait_until(30, "the late result committed", || status().contains("1 jobs: 1 done"));
    assert_each_step_once(&data.join("paused"), 10);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("dropped by the coordinator") && !log.contains("abandon"), "{log}");
}

/// A worker killed in the middle of a batch: the jobs of the batch it never reported are
/// leased again after their leases expire, those it committed are not run again into the
/// results; every job ends in the results once, with every step once.
#[test]
fn a_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // About 10 ms a job: batches of about 25.
    let body = SLOW_SWEEP
        .replace("seeds = 12", "seeds = 300")
        .replace("horizon = 10", "horizon = 1")
        .replace("ms = 60", "ms = 5");
    let sweep = write(tmp.path(), "slow.toml", &body);
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--lease-ttl-ms", "800"]);
    let doomed_log = tmp.path().join("doomed.log");
    let mut doomed = worker(&coord.url, 2, &doomed_log, &[]);
    assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    let sweep_dir = data.join("slow");
    wait_until(60, "a batch under way after a first commit", || {
        job_count(&sweep_dir) >= 1 && std::fs::read_to_string(&doomed_log).unwrap_or_default().contains("as one batch")
    });
    doomed.kill9();
    let before = job_count(&sweep_dir);
    assert!(before < 300, "the sweep finished before the kill; make the jobs slower");
    let _survivor = worker(&coord.url, 2, &tmp.path().join("survivor.log"), &[]);
    let watched = client(&["watch", "slow", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&sweep_dir), 300);
    assert_each_step_once(&sweep_dir, 1);
    let status = client(&["status", "slow"], &coord.url, 30);
    assert!(text(&status.stdout).contains("300 jobs: 300 done"), "{}", text(&status.stdout));
}
