//! The distributed system with real processes on 127.0.0.1: a coordinator (`armada serve`
//! on a port the OS picks), worker processes, and the CLI clients. Every wait is bounded.

mod common;

use common::cluster::{client, client_env, http_get, serve, worker, worker_args, write, BIN};
use common::{armada, assert_same_trajectory, job_count, jobs, text, wait_until, Proc};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Every committed job holds steps 0..=horizon exactly once, in order.
fn assert_each_step_once(sweep_dir: &Path, horizon: i64) {
    for (key, df) in jobs(sweep_dir) {
        let steps: Vec<i64> = df.column("step").unwrap().i64().unwrap().into_no_null_iter().collect();
        assert_eq!(steps, (0..=horizon).collect::<Vec<_>>(), "{key}");
    }
}

const LSE_SWEEP: &str = r#"
name = "dist-lse"
family = "lse"
seeds = 3
horizon = 12
[[benchmarks]]
name = "sinusoidal"
[[benchmarks]]
name = "himmelblau"
[[algorithms]]
name = "rand-straddle"
[[algorithms]]
name = "us"
params = { tie_break = "random" }
[[algorithms]]
name = "lse"
"#;

#[test]
fn two_workers_give_the_in_process_runners_trajectories() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "dist-lse.toml", LSE_SWEEP);
    let local_out = tmp.path().join("local");
    let local = armada(&["run", sweep.to_str().unwrap(), "--out", local_out.to_str().unwrap(), "--quiet"]);
    assert!(local.status.success(), "{}", text(&local.stderr));

    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let _w1 = worker(&coord.url, 2, &tmp.path().join("w1.log"), &[]);
    let _w2 = worker(&coord.url, 1, &tmp.path().join("w2.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    assert_eq!(text(&submitted.stdout).trim(), "dist-lse");
    let watched = client(&["watch", "dist-lse", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    // The final table is printed, as by `armada run`.
    assert!(text(&watched.stdout).contains("rand-straddle"), "{}", text(&watched.stdout));

    let (ours, theirs) = (jobs(&data.join("dist-lse")), jobs(&local_out.join("dist-lse")));
    assert_eq!(ours.len(), 18);
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], key);
    }
    // Summaries exclude elapsed_ms, so the final tables are byte-identical.
    let final_of = |dir: &Path| std::fs::read(dir.join("dist-lse").join("final.parquet")).unwrap();
    assert_eq!(final_of(&data), final_of(&local_out));
    // Both workers took part.
    let took = |log: &str| std::fs::read_to_string(tmp.path().join(log)).unwrap().contains("registered");
    assert!(took("w1.log") && took("w2.log"));

    // Over the wire: every trajectory, bit for bit (elapsed_ms too: the same bytes), and
    // summaries rebuilt from the fetched files alone equal the coordinator's.
    let fetched = tmp.path().join("fetched");
    let out = client(&["fetch", "dist-lse", "--out", fetched.to_str().unwrap()], &coord.url, 60);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wrote 18 jobs"), "{}", text(&out.stderr));
    let copied = jobs(&fetched.join("dist-lse"));
    assert_eq!(copied.keys().collect::<Vec<_>>(), ours.keys().collect::<Vec<_>>());
    for (key, df) in &copied {
        assert!(df.equals_missing(&ours[key]), "{key}");
    }
    let again = armada(&["summarize", fetched.join("dist-lse").to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let final_path = |dir: &Path| dir.join("dist-lse").join("final.parquet");
    common::assert_rebuilt_summary(&final_path(&fetched), &final_path(&data));
    // Some jobs only: the cells of one algorithm, re-encoded from the parts.
    let some = tmp.path().join("some");
    let out = client(&["fetch", "dist-lse", "--out", some.to_str().unwrap(), "--algorithm", "lse"], &coord.url, 60);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lse_jobs = jobs(&some.join("dist-lse"));
    let expected: Vec<&String> = ours
        .iter()
        .filter(|(_, df)| df.column("algorithm").unwrap().str().unwrap().get(0) == Some("lse"))
        .map(|(key, _)| key)
        .collect();
    assert_eq!(expected.len(), 6);
    assert_eq!(lse_jobs.keys().collect::<Vec<_>>(), expected);
    for (key, df) in &lse_jobs {
        assert!(df.equals_missing(&ours[key]), "{key}");
    }
    // A summary table: its bytes.
    let out = client(&["fetch", "dist-lse", "--out", some.to_str().unwrap(), "--table", "final"], &coord.url, 60);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(final_of(&some), final_of(&data));
    // Refusals name the field.
    let out = client(&["fetch", "nope", "--out", some.to_str().unwrap()], &coord.url, 60);
    assert!(!out.status.success() && text(&out.stderr).contains("no sweep `nope`"), "{}", text(&out.stderr));
    let out = client(
        &["fetch", "dist-lse", "--out", some.to_str().unwrap(), "--table", "along", "--along", "x"],
        &coord.url,
        60,
    );
    assert!(text(&out.stderr).contains("table: sweep `dist-lse` has no along_x.parquet"), "{}", text(&out.stderr));
    // A filter that matches nothing says so, with what the sweep has, exits non-zero and
    // leaves no empty directory behind; a filter on a summary table is refused.
    let none = tmp.path().join("none");
    let out = client(&["fetch", "dist-lse", "--out", none.to_str().unwrap(), "--algorithm", "mil"], &coord.url, 60);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let names = |column: &str| {
        let set: std::collections::BTreeSet<String> =
            ours.values().map(|df| df.column(column).unwrap().str().unwrap().get(0).unwrap().to_string()).collect();
        set.into_iter().collect::<Vec<_>>().join(", ")
    };
    let expected = format!(
        "error: no finished job of sweep `dist-lse` matches algorithm `mil` (its benchmarks: {}; its algorithms: {}) (NotFound)",
        names("benchmark"),
        names("algorithm")
    );
    assert_eq!(text(&out.stderr).trim_end(), expected);
    assert!(!none.join("dist-lse").exists(), "an empty fetch leaves its directories behind");
    let out = client(&["fetch", "dist-lse", "--out", none.to_str().unwrap(), "--job", "nope"], &coord.url, 60);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("matches job `nope` (its benchmarks:"), "{}", text(&out.stderr));
    let out = client(
        &["fetch", "dist-lse", "--out", none.to_str().unwrap(), "--table", "final", "--algorithm", "lse"],
        &coord.url,
        60,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a summary table comes whole"), "{}", text(&out.stderr));
}

const TWO_CELLS: &str = r#"
name = "two-cells"
family = "testkit"
seeds = 6
horizon = 8
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = [40, 50] }
"#;

/// While a sweep runs, its summary tables come from the live summaries: every row has
/// the n of the jobs committed so far, and rows without quantiles belong to cells that
/// still have jobs to run. Once it has finished, the files are there as soon as the watch
/// ends, and a rebuild from the trajectories alone gives the same bytes.
#[test]
fn live_summaries_fill_in_while_the_sweep_runs_and_end_as_a_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "two-cells.toml", TWO_CELLS);
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let sweep_dir = data.join("two-cells");
    wait_until(60, "three committed jobs", || job_count(&sweep_dir) >= 3);
    let mid = tmp.path().join("mid");
    let out = client(&["fetch", "two-cells", "--out", mid.to_str().unwrap(), "--table", "final"], &coord.url, 30);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = common::read(&mid.join("two-cells").join("final.parquet"));
    let ns: Vec<i64> = table.column("n").unwrap().i64().unwrap().into_no_null_iter().collect();
    let medians: Vec<Option<f64>> = table.column("median").unwrap().f64().unwrap().iter().collect();
    assert!(!ns.is_empty() && ns.iter().all(|&n| (1..=6).contains(&n)), "{ns:?}");
    let n_done_then: i64 = ns.iter().sum();
    assert!(n_done_then >= 3, "{ns:?}");
    for (n, median) in ns.iter().zip(&medians) {
        // Quantiles come with a cell's exact rows, which come once its six jobs are done.
        assert_eq!(median.is_some(), *n == 6, "n {n}, median {median:?}");
    }
    assert!(n_done_then < 12, "the sweep finished before the fetch; make the jobs slower");
    assert!(!sweep_dir.join("final.parquet").exists(), "no summary file while jobs run");

    let watched = client(&["watch", "two-cells", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let summary = std::fs::read(sweep_dir.join("summary.parquet")).unwrap();
    let fetched = tmp.path().join("end");
    let out = client(&["fetch", "two-cells", "--out", fetched.to_str().unwrap(), "--table", "summary"], &coord.url, 30);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(fetched.join("two-cells").join("summary.parquet")).unwrap() == summary);
    // The trajectories alone, summarized elsewhere: the same rows, but for the job counts
    // (unknown there); summarized in the coordinator's directory, the same bytes.
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(copy.join("trajectories")).unwrap();
    for part in common::part_files(&sweep_dir) {
        std::fs::copy(&part, copy.join("trajectories").join(part.file_name().unwrap())).unwrap();
    }
    let rebuilt = armada(&["summarize", copy.to_str().unwrap()]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));
    for table in ["summary.parquet", "final.parquet"] {
        common::assert_rebuilt_summary(&copy.join(table), &sweep_dir.join(table));
    }

    // Done with it: delete the sweep and its results.
    let deleted = client(&["delete", "two-cells"], &coord.url, 30);
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    assert_eq!(text(&deleted.stdout).trim(), "deleted two-cells (12 jobs) and its results");
    assert!(!sweep_dir.exists());
    let status = client(&["status"], &coord.url, 30);
    assert_eq!(text(&status.stdout).trim(), "no sweeps");
}

/// A Python with analysis/requirements-grpc.txt: a venv under the target directory, made
/// from the package registry on first use and kept while the requirements are unchanged.
fn python_with_grpc() -> PathBuf {
    common::python_venv("venv-grpc", &common::manifest_dir().join("analysis/requirements-grpc.txt"))
}

const SLOW_SWEEP: &str = r#"
name = "slow"
family = "testkit"
seeds = 12
horizon = 10
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = 60 }
"#;

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
fn bad_sweeps_are_refused_naming_the_field_and_nothing_is_queued() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--max-jobs-per-sweep", "1000"]);
    // One algorithm with 8 unknown parameters of 10 values each: 10^8 variants unexpanded.
    let huge_grid: String = (0..8).map(|i| format!("p{i} = [0,1,2,3,4,5,6,7,8,9], ")).collect();
    let huge_grid = format!(
        "family = \"lse\"\nseeds = 1\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n[[algorithms]]\nname = \"straddle\"\nparams = {{ {} }}\n",
        huge_grid.trim_end_matches(", ")
    );
    let testkit = |head: &str| {
        format!("{head}family = \"testkit\"\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n")
    };
    let (journal, long_name, too_many) = (
        testkit("name = \"armada.sqlite-journal\"\nseeds = 1\n"),
        testkit(&format!("name = \"{}\"\nseeds = 1\n", "n".repeat(300))),
        testkit("seeds = 1001\n"),
    );
    let cases = [
        ("huge-grid", huge_grid.as_str(), "algorithms[0].params.p0: unknown parameter of `straddle`"),
        ("journal", journal.as_str(), "name: `armada.sqlite-journal` is not a usable sweep name"),
        ("long-name", long_name.as_str(), "name: `nnnn"),
        ("too-many", too_many.as_str(), "= 1001 jobs, over the limit of 1000 jobs per sweep"),
        ("unknown-algo", "family = \"lse\"\nseeds = 1\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n[[algorithms]]\nname = \"straddle\"\n[[algorithms]]\nname = \"usx\"\n", "algorithms[1].name: unknown algorithm `usx`"),
        ("bad-param", "family = \"lse\"\nseeds = 1\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n[[algorithms]]\nname = \"straddle\"\nparams = { beta_sqrt = \"three\" }\n", "algorithms[0].params.beta_sqrt"),
        ("malformed", "family = \"lse\"\nseeds = [1, \n", "malformed TOML"),
    ];
    for (name, body, needle) in cases {
        let path = write(tmp.path(), &format!("{name}.toml"), body);
        let out = client(&["submit", path.to_str().unwrap()], &coord.url, 30);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(err.contains("InvalidArgument"), "{name}: {err}");
    }
    let status = client(&["status"], &coord.url, 30);
    assert_eq!(text(&status.stdout).trim(), "no sweeps");
    // The coordinator is still serving after the bad requests, and wrote nothing for them.
    assert!(status.status.success());
    let mut entries: Vec<String> =
        std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    entries.sort();
    entries.retain(|e| !e.starts_with("armada.sqlite") && e != ".spool");
    assert!(entries.is_empty(), "{entries:?}");
}

#[test]
fn with_a_token_requests_without_it_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--token", "s3cret-token"]);
    let refused = client(&["status"], &coord.url, 30);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("Unauthenticated"), "{}", text(&refused.stderr));
    let wrong = client(&["status", "--token", "guess"], &coord.url, 30);
    assert!(text(&wrong.stderr).contains("Unauthenticated"), "{}", text(&wrong.stderr));
    let ok = client_env(&["status"], &coord.url, 30, &[("ARMADA_TOKEN", "s3cret-token")]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout).trim(), "no sweeps");
    // A worker without the token gives up with a clear message instead of retrying forever.
    let mut w = worker(&coord.url, 1, &tmp.path().join("w.log"), &[]);
    assert!(!w.wait(30).success());
    let log = std::fs::read_to_string(tmp.path().join("w.log")).unwrap();
    assert!(log.contains("missing or wrong token"), "{log}");
}

#[test]
fn cancel_stops_the_sweeps_jobs_on_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    // Two jobs of about 60 s each: cancel must stop them long before.
    let sweep = write(
        tmp.path(),
        "long.toml",
        "name = \"long\"\nfamily = \"testkit\"\nseeds = 2\nhorizon = 600\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"slow\"\nparams = { ms = 100 }\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--lease-ttl-ms", "800"]);
    let log = tmp.path().join("w.log");
    let _w = worker(&coord.url, 2, &log, &[]);
    assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    wait_until(30, "both jobs running", || {
        text(&client(&["status", "long"], &coord.url, 30).stdout).contains("2 running")
    });
    let cancelled = client(&["cancel", "long"], &coord.url, 30);
    assert!(text(&cancelled.stdout).contains("cancelled, 2 jobs: 0 done, 0 running, 0 queued, 0 failed, 2 cancelled"));
    // Each job stops at the heartbeat that says so, or at its next upload, refused (which
    // of the two comes first depends on the heartbeat's phase and the machine's load).
    let stopped_attempts = || {
        let log = std::fs::read_to_string(&log).unwrap();
        let stops =
            log.lines().filter(|l| l.contains("the coordinator says stop") || l.contains("dropped by the coordinator"));
        let ids: std::collections::BTreeSet<String> =
            stops.filter_map(|l| l.split("attempt ").nth(1)?.split([':', ' ']).next().map(str::to_string)).collect();
        ids.len()
    };
    let stopped = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        stopped_attempts() == 2
    });
    assert!(stopped, "the worker stops both jobs: {}", std::fs::read_to_string(&log).unwrap());
    // The slots are free again: a small sweep runs right away on the same worker.
    let quick = write(
        tmp.path(),
        "quick.toml",
        "name = \"quick\"\nfamily = \"testkit\"\nseeds = 2\nhorizon = 3\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    assert!(client(&["submit", quick.to_str().unwrap()], &coord.url, 30).status.success());
    let watched = client(&["watch", "quick", "--quiet"], &coord.url, 30);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&data.join("long")), 0);
    let watched = client(&["watch", "long", "--quiet"], &coord.url, 30);
    assert_eq!(watched.status.code(), Some(1), "a cancelled sweep is not a success");
}

/// (algorithm, step, n, n_jobs, n_failed) of each row of a summary table.
type CountRow = (String, Option<i64>, Option<i64>, Option<i64>, Option<i64>);

fn count_rows(path: &Path) -> Vec<CountRow> {
    let df = common::read(path);
    let ints = |name: &str| -> Vec<Option<i64>> { df.column(name).unwrap().i64().unwrap().iter().collect() };
    let algorithm: Vec<String> =
        df.column("algorithm").unwrap().str().unwrap().iter().map(|a| a.unwrap().to_string()).collect();
    let (step, n, n_jobs, n_failed) = (ints("step"), ints("n"), ints("n_jobs"), ints("n_failed"));
    (0..df.height()).map(|i| (algorithm[i].clone(), step[i], n[i], n_jobs[i], n_failed[i])).collect()
}

/// A job whose own code panics fails at its first attempt (a lost worker's job is retried;
/// `--retry-job-errors` retries a job's own errors too), and its failure is in every table:
/// `n_jobs` and `n_failed` on each row of both summary files, the failed cell's rows kept
/// with `n = 0`, and the terminal table's marker.
#[test]
fn a_panicking_job_fails_at_its_first_attempt_and_every_table_counts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(
        tmp.path(),
        "mixed.toml",
        "name = \"mixed\"\nfamily = \"testkit\"\nseeds = 4\nhorizon = 5\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n[[algorithms]]\nname = \"panic\"\nparams = { at = 2 }\n",
    );
    for (extra, attempts) in [(None, "1 attempt"), (Some("--retry-job-errors"), "2 attempts")] {
        let data = tmp.path().join(format!("data-{attempts}").replace(' ', "-"));
        let mut args = vec!["--max-attempts", "2"];
        args.extend(extra);
        let coord = serve(&data, 0, &args);
        let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[]);
        assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
        let watched = client(&["watch", "mixed", "--quiet"], &coord.url, 60);
        assert_eq!(watched.status.code(), Some(1), "{}", text(&watched.stderr));
        let status = text(&client(&["status", "mixed"], &coord.url, 30).stdout);
        assert!(status.contains("8 jobs: 4 done, 0 running, 0 queued, 4 failed"), "{status}");
        let said = format!("after {attempts}: job panicked: testkit: panic at step 2 on purpose");
        assert_eq!(status.matches(&said).count(), 4, "{status}");
        assert_eq!(job_count(&data.join("mixed")), 4);
        assert_each_step_once(&data.join("mixed"), 5);
        // The terminal table marks the cell; its seeds' values are missing.
        let table = text(&watched.stdout);
        let line =
            |algorithm: &str| table.lines().find(|l| l.contains(&format!("  {algorithm}  "))).unwrap_or_default();
        assert!(line("panic").contains("  0/4, 4 failed  ") && line("panic").trim_end().ends_with('-'), "{table}");
        assert!(!line("echo").contains("failed"), "{table}");
        for file in ["summary.parquet", "final.parquet"] {
            let rows = count_rows(&data.join("mixed").join(file));
            let (panic, echo): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.0 == "panic");
            assert_eq!(panic, vec![&("panic".to_string(), None, Some(0), Some(4), Some(4))], "{file}");
            assert!(
                !echo.is_empty() && echo.iter().all(|r| (r.2, r.3, r.4) == (Some(4), Some(4), Some(0))),
                "{file}: {echo:?}"
            );
        }
    }
}

/// Beside what a worker says of itself, each trajectory's provenance records what the
/// coordinator saw: the label of the token the worker registered with, the address it came
/// from, and when. The Rust worker takes its host name from the operating system (not from
/// `HOSTNAME`, which a shell does not export) and its name from `--name`.
#[test]
fn provenance_records_the_token_peer_and_time_the_coordinator_saw() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = write(
        tmp.path(),
        "tokens.toml",
        "[[tokens]]\nname = \"gpu-pool\"\nsecret = \"worker-token-0123456789\"\nrole = \"worker\"\n\
         [[tokens]]\nsecret = \"client-token-0123456789\"\nrole = \"client\"\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--tokens", tokens.to_str().unwrap()]);
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let env = [("ARMADA_TOKEN", "worker-token-0123456789"), ("HOSTNAME", "not-this-host")];
    let _w = worker_args(&coord.url, 1, &tmp.path().join("w.log"), &["--name", "bench-node-7"], &env);
    let sweep = write(
        tmp.path(),
        "p.toml",
        "name = \"p\"\nfamily = \"testkit\"\nseeds = 3\nhorizon = 2\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    let as_client = [("ARMADA_TOKEN", "client-token-0123456789")];
    assert!(client_env(&["submit", sweep.to_str().unwrap()], &coord.url, 30, &as_client).status.success());
    assert!(client_env(&["watch", "p", "--quiet"], &coord.url, 60, &as_client).status.success());
    let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let mut seen = 0;
    for part in common::part_files(&data.join("p")) {
        let provenance = armada::results::read_provenance(&part).unwrap();
        for (key, p) in provenance {
            assert_eq!(
                (p.token.as_str(), p.name.as_str(), p.host.as_str()),
                ("gpu-pool", "bench-node-7", host.as_str()),
                "{key}"
            );
            assert!(p.peer.starts_with("127.0.0.1:") && p.peer.len() > "127.0.0.1:".len(), "{key}: {}", p.peer);
            assert!(
                (before..=after).contains(&p.registered_ms),
                "{key}: {} not in [{before}, {after}]",
                p.registered_ms
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 3);
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
        done_at_sigterm = job_count(&data.join("three"));
        status.contains("1 running")
    });
    w.sigterm();
    assert!(w.wait(30).success(), "a draining worker exits 0");
    let status = text(&client(&["status", "three"], &coord.url, 30).stdout);
    // The running job finished and committed; nothing new was leased.
    let done = done_at_sigterm + 1;
    assert!(done < 3, "the sweep was nearly over before SIGTERM; make the jobs slower");
    assert!(status.contains(&format!("3 jobs: {done} done, 0 running, {} queued", 3 - done)), "{status}");
    assert_eq!(job_count(&data.join("three")), done);
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

/// A client in another language, generated from the .proto files: health, reflection,
/// submit, watch and summary through Python grpcio (analysis/requirements-grpc.txt).
#[test]
fn a_python_grpc_client_submits_and_watches_a_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(
        tmp.path(),
        "py.toml",
        "name = \"py\"\nfamily = \"testkit\"\nseeds = 5\nhorizon = 4\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--token", "py-token"]);
    let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[("ARMADA_TOKEN", "py-token")]);
    let out = Command::new(python_with_grpc())
        .arg(common::manifest_dir().join("analysis/grpc_client.py"))
        .args(["--coordinator", &coord.url, "--token", "py-token", sweep.to_str().unwrap()])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["health"], "SERVING");
    let services: Vec<&str> = report["services"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(services.contains(&"armada.v1.Sweeps") && services.contains(&"armada.v1.Workers"), "{services:?}");
    assert_eq!((report["sweep_id"].as_str(), report["n_jobs"].as_u64()), (Some("py"), Some(5)));
    assert_eq!(report["events"]["job_finished"], 5);
    assert_eq!(report["events"]["sweep_finished"], 1);
    assert_eq!((report["n_done"].as_u64(), report["n_failed"].as_u64()), (Some(5), Some(0)));
    // The summary bytes it received are the coordinator's final.parquet.
    let on_disk = std::fs::read(data.join("py").join("final.parquet")).unwrap();
    let digest = Command::new("sha256sum").arg(data.join("py").join("final.parquet")).output().unwrap();
    assert!(!on_disk.is_empty());
    assert_eq!(text(&digest.stdout).split_whitespace().next(), report["final_parquet_sha256"].as_str());
    // Read over the wire into polars: the same final table, every trajectory, one job alone.
    assert_eq!(report["fetched_final_sha256"], report["final_parquet_sha256"]);
    let traj = &report["trajectories"];
    assert_eq!((traj["rows"].as_u64(), traj["jobs"].as_u64()), (Some(25), Some(5)), "5 jobs of steps 0..=4");
    assert_eq!(traj["step_sum"].as_u64(), Some(5 * (1 + 2 + 3 + 4)));
    let columns: Vec<&str> = traj["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(&columns[..3], ["job_key", "family", "benchmark"]);
    let one = &report["one_job"];
    assert_eq!(one["rows"].as_u64(), Some(5));
    assert_eq!(one["keys"].as_array().unwrap(), &vec![one["key"].clone()]);
}

#[test]
fn tls_serves_https_to_clients_that_trust_the_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = common::manifest_dir().join("tests/fixtures/tls");
    let (cert, key) = (fixtures.join("cert.pem"), fixtures.join("key.pem"));
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    assert!(coord.url.starts_with("https://"), "{}", coord.url);
    let ca = cert.to_str().unwrap();
    let _w = worker_args(&coord.url, 1, &tmp.path().join("w.log"), &["--tls-ca", ca], &[]);
    let sweep = write(
        tmp.path(),
        "tls.toml",
        "name = \"tls\"\nfamily = \"testkit\"\nseeds = 3\nhorizon = 2\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    // Without the CA the client refuses to talk; with it, everything works.
    let refused = client(&["status"], &coord.url, 30);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--tls-ca"), "{}", text(&refused.stderr));
    let plain = client(&["status"], &coord.url.replace("https://", "http://"), 30);
    assert_eq!(plain.status.code(), Some(2), "plain HTTP/2 to a TLS port must fail");
    assert!(client(&["submit", sweep.to_str().unwrap(), "--tls-ca", ca], &coord.url, 30).status.success());
    let watched = client(&["watch", "tls", "--quiet", "--tls-ca", ca], &coord.url, 60);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&data.join("tls")), 3);
    // Its heartbeats go on their own connection, TLS over the prefix, within an interval.
    let log = tmp.path().join("w.log");
    let heard = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        std::fs::read_to_string(&log).unwrap_or_default().contains("heartbeats go on a connection of their own")
    });
    assert!(heard, "{}", std::fs::read_to_string(&log).unwrap_or_default());
    // The dashboard is HTTPS with the same certificate, and nothing in the clear.
    let curl = |url: &str| {
        Command::new("curl").args(["-sS", "--max-time", "20", "--cacert", ca, url]).output().expect("curl runs")
    };
    let metrics = curl(&format!("https://{}/metrics", coord.dashboard));
    assert!(metrics.status.success(), "{}", text(&metrics.stderr));
    assert!(text(&metrics.stdout).contains("armada_jobs{state=\"done\"} 3"), "{}", text(&metrics.stdout));
    let plain = curl(&format!("http://{}/metrics", coord.dashboard));
    assert!(
        !plain.status.success() || !text(&plain.stdout).contains("armada_jobs"),
        "the dashboard answered in the clear"
    );
}

/// A wrong address says what is wrong with it, naming it: nothing listening, no scheme,
/// a scheme that is not http(s), the dashboard's HTTP port, TLS spoken to a plain port and
/// plain HTTP/2 to a TLS one, a CA that did not sign the certificate. A worker refuses a
/// URL that cannot work at once, and logs each retry of one that may, with its target and
/// cause, in plain text when its log is a file.
#[test]
fn a_wrong_address_is_named_with_its_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = format!("http://127.0.0.1:{free}");
    let plain = serve(&tmp.path().join("plain"), 0, &[]);
    let fixtures = common::manifest_dir().join("tests/fixtures/tls");
    let (cert, key) = (fixtures.join("cert.pem"), fixtures.join("key.pem"));
    let tls =
        serve(&tmp.path().join("tls"), 0, &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    let (ca, other_ca) = (cert.to_str().unwrap(), fixtures.join("net-cert.pem"));
    let dashboard = format!("http://{}", plain.dashboard);
    let https_plain = plain.url.replace("http://", "https://");
    let http_tls = tls.url.replace("https://", "http://");
    let no_scheme = format!("127.0.0.1:{}", plain.port);
    let cases: Vec<(&str, Vec<&str>, String)> = vec![
        (
            &refused,
            vec![],
            format!("error: connecting to {refused}: connection refused: nothing listens at 127.0.0.1:{free}"),
        ),
        (
            &no_scheme,
            vec![],
            format!("error: coordinator URL `{no_scheme}` has no scheme: write http://{no_scheme} (or https://"),
        ),
        ("ftp://127.0.0.1:1", vec![], "the scheme must be http:// or https://, not ftp://".into()),
        (&dashboard, vec![], "error: the server answered plain HTTP, not gRPC: is this the dashboard's port?".into()),
        (
            &https_plain,
            vec!["--tls-ca", ca],
            format!("error: connecting to {https_plain}: TLS handshake failed (received corrupt message"),
        ),
        (
            &tls.url,
            vec!["--tls-ca", other_ca.to_str().unwrap()],
            format!("error: connecting to {}: TLS handshake failed (invalid peer certificate: UnknownIssuer)", tls.url),
        ),
        (&http_tls, vec![], "if the coordinator serves TLS, use https:// with --tls-ca".into()),
    ];
    for (url, extra, expected) in &cases {
        let mut args = vec!["status"];
        args.extend(extra);
        let out = client(&args, url, 30);
        assert_eq!(out.status.code(), Some(2), "{url}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(expected.as_str()), "{url}: expected {expected:?} in {}", text(&out.stderr));
    }
    // Every client command at the dashboard's port says so; none blames the file it sends.
    let sweep = write(tmp.path(), "x.toml", "family = \"testkit\"\nseeds = 1\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n");
    let fetched = tmp.path().join("fetched");
    let fetched = fetched.to_str().unwrap();
    for args in [
        vec!["submit", sweep.to_str().unwrap()],
        vec!["list"],
        vec!["watch", "x"],
        vec!["fetch", "x", "--out", fetched],
    ] {
        let out = client(&args, &dashboard, 30);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("is this the dashboard's port?") && !stderr.contains("x.toml"), "{args:?}: {stderr}");
    }
    // A worker: a URL without a scheme is refused at once; a refused one retried, said each time.
    let bad = Command::new(BIN).args(["worker", "--coordinator", &no_scheme]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("has no scheme: write http://"), "{}", text(&bad.stderr));
    let log = tmp.path().join("w.log");
    let retrying = worker(&refused, 1, &log, &[]);
    let said = format!("coordinator {refused}: connecting: connection refused: nothing listens at 127.0.0.1:{free}");
    wait_until(30, "two retries logged", || std::fs::read_to_string(&log).unwrap().matches(&said).count() >= 2);
    drop(retrying);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("retrying again in"), "{logged}");
    assert!(!logged.contains('\x1b'), "colour codes in a log file:\n{logged}");
}

#[test]
fn a_second_coordinator_on_the_same_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let _first = serve(&data, 0, &[]);
    let second = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data", data.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(2));
    let err = text(&second.stderr);
    assert!(err.contains("in use by another coordinator"), "{err}");
    // Likewise an `armada run` into that directory.
    let sweep = write(
        tmp.path(),
        "t.toml",
        "family = \"testkit\"\nseeds = 1\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    let run = armada(&["run", sweep.to_str().unwrap(), "--out", data.to_str().unwrap(), "--quiet"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("in use by another coordinator"), "{}", text(&run.stderr));
    // `--in-process` writes the same files, so it takes the same lock; so does `summarize`.
    let run = armada(&["run", sweep.to_str().unwrap(), "--out", data.to_str().unwrap(), "--quiet", "--in-process"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("in use by another coordinator"), "{}", text(&run.stderr));
    assert!(!data.join("t").exists(), "nothing written");
    std::fs::create_dir_all(data.join("t").join("trajectories")).unwrap();
    let summarized = armada(&["summarize", data.join("t").to_str().unwrap()]);
    assert_eq!(summarized.status.code(), Some(2));
    assert!(text(&summarized.stderr).contains("in use by another coordinator"), "{}", text(&summarized.stderr));
}

const CHAOS_SWEEP: &str = r#"
name = "chaos"
family = "testkit"
seeds = 16
horizon = 6
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = [15, 25] }
"#;

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

const ROGUE_SWEEP: &str = r#"
name = "rogue"
family = "testkit"
seeds = 3
horizon = 8
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = 500 }
"#;

/// A rogue client (Python, from the .proto alone) registers its own session, and cannot
/// complete, fail, renew or upload into the attempt an honest worker holds (PERMISSION_DENIED),
/// nor register with another build; the job it leases itself and feeds records that skip
/// step 0 is refused naming the step, voided, and run again by the honest worker. The sweep
/// ends as an uninterrupted run.
#[test]
fn a_rogue_session_cannot_touch_another_workers_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "rogue.toml", ROGUE_SWEEP);
    let reference = tmp.path().join("reference");
    let python = python_with_grpc();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let _honest = worker(&coord.url, 1, &tmp.path().join("w.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    // Attempt ids start at 1: the honest worker's first lease is the victim.
    wait_until(30, "the honest worker's first job", || {
        text(&client(&["status", "rogue"], &coord.url, 30).stdout).contains("1 running")
    });
    let out = Command::new(&python)
        .arg(common::manifest_dir().join("tests/support/rogue_worker.py"))
        .args([coord.url.as_str(), "1"])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = |what: &str| report[what].as_str().unwrap_or_default().to_string();
    for what in ["complete", "fail", "heartbeat", "upload"] {
        assert!(
            said(what).starts_with("PERMISSION_DENIED: attempt 1 is not held by this worker session"),
            "{what}: {}",
            said(what)
        );
    }
    assert!(said("wrong_build").starts_with("FAILED_PRECONDITION: build:"), "{}", said("wrong_build"));
    assert_eq!(report["leased"], 1);
    assert!(said("own_upload").starts_with("INVALID_ARGUMENT"), "{}", said("own_upload"));
    assert!(said("own_upload").contains("step 5 arrived where step 0 was due"), "{}", said("own_upload"));

    let watched = client(&["watch", "rogue", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let status = text(&client(&["status", "rogue"], &coord.url, 30).stdout);
    assert!(status.contains("3 jobs: 3 done"), "{status}");
    let out =
        armada(&["run", sweep.to_str().unwrap(), "--out", reference.to_str().unwrap(), "--quiet", "--in-process"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (ours, theirs) = (jobs(&data.join("rogue")), jobs(&reference.join("rogue")));
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], key);
    }
}

/// A part the coordinator cannot write (a file where one sweep's trajectories directory
/// should be) is the coordinator's trouble, not the worker's: the worker keeps its one
/// session, the other sweep completes meanwhile, no job fails or is charged an attempt,
/// and once the way is clear the blocked sweep completes too, every step once.
#[test]
fn a_part_the_coordinator_cannot_write_costs_the_worker_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let body = |name: &str, seeds: u32| {
        format!("name = \"{name}\"\nfamily = \"testkit\"\nseeds = {seeds}\nhorizon = 5\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n")
    };
    let blocked = write(tmp.path(), "blocked.toml", &body("blocked", 3));
    let healthy = write(tmp.path(), "healthy.toml", &body("healthy", 6));
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--max-attempts", "2"]);
    for sweep in [&blocked, &healthy] {
        assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    }
    std::fs::create_dir_all(data.join("blocked")).unwrap();
    std::fs::write(data.join("blocked").join("trajectories"), b"in the way").unwrap();
    let log = tmp.path().join("w.log");
    let _w = worker(&coord.url, 1, &log, &[]);
    let watched = client(&["watch", "healthy", "--quiet"], &coord.url, 60);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    // Meanwhile the blocked sweep's commits were refused as the coordinator's failure.
    wait_until(30, "a refused commit in the worker's log", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("could not write the trajectory"))
    });
    let status = text(&client(&["status", "blocked"], &coord.url, 30).stdout);
    assert!(status.contains("3 jobs: 0 done") && status.contains(", 0 failed"), "{status}");
    assert!(status.contains("writes failing: the trajectory parts of sweep blocked: "), "{status}");
    std::fs::remove_file(data.join("blocked").join("trajectories")).unwrap();
    let watched = client(&["watch", "blocked", "--quiet"], &coord.url, 60);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    for (sweep, n) in [("blocked", 3), ("healthy", 6)] {
        assert_eq!(job_count(&data.join(sweep)), n);
        assert_each_step_once(&data.join(sweep), 5);
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.matches("registered with").count(), 1, "one session throughout:\n{log}");
}

/// A tmpfs of `size` mounted at `dir` for the life of the value (unmounted when dropped);
/// `None` when this machine does not let the test mount one (not root), which fails the
/// test under `ARMADA_REQUIRE_MOUNT=1` (as `.ci/run` sets).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", dir.to_str().unwrap()])
            .stderr(Stdio::piped())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs(dir.to_path_buf())),
            other => {
                let why = other.map_or_else(|e| e.to_string(), |o| text(&o.stderr));
                assert!(
                    std::env::var("ARMADA_REQUIRE_MOUNT").as_deref() != Ok("1"),
                    "cannot mount a tmpfs ({why}) and ARMADA_REQUIRE_MOUNT=1"
                );
                eprintln!("SKIPPED: cannot mount a tmpfs here ({why}); run as root, see ARMADA_REQUIRE_MOUNT");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The value of one sample of a Prometheus page.
fn sample(page: &str, name: &str) -> f64 {
    let line = page.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '));
    line.unwrap_or_else(|| panic!("no {name} in\n{page}")).rsplit(' ').next().unwrap().parse().unwrap()
}

/// The coordinator's disk fills up mid-sweep (a 4 MB tmpfs, filled by another file): the
/// trouble shows in `armada status`, on the dashboard and in /metrics while it lasts; the
/// worker keeps its one session instead of registering again every few seconds; and once
/// space is freed the sweep completes by itself, every trajectory and both summary tables
/// the same bits as an uninterrupted run's, and the trouble is gone from every view.
#[test]
fn a_full_disk_is_shown_waited_out_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&tmp.path().join("disk"), "4m") else { return };
    let sweep = write(
        tmp.path(),
        "full.toml",
        &SLOW_SWEEP.replace("slow\"\nfamily", "full\"\nfamily").replace("seeds = 12", "seeds = 24"),
    );
    let reference = tmp.path().join("reference");
    let out = armada(&["run", sweep.to_str().unwrap(), "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let data = disk.0.join("data");
    let coord = serve(&data, 0, &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let log = tmp.path().join("w.log");
    let _w = worker(&coord.url, 2, &log, &[]);
    let sweep_dir = data.join("full");
    wait_until(30, "a first committed job", || job_count(&sweep_dir) >= 1);

    // Fill the disk to its last byte, so that no part fits until the filler goes.
    let filler = disk.0.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        for chunk in [64 << 10, 4 << 10, 1] {
            while f.write_all(&vec![0u8; chunk]).is_ok() {}
        }
        let _ = f.sync_all();
    }
    let status = || text(&client(&["status", "full"], &coord.url, 30).stdout);
    wait_until(60, "writes failing in `armada status`", || status().contains("writes failing: "));
    let shown = status();
    assert!(!shown.contains("24 done"), "the sweep finished before the disk filled; make the jobs slower");
    let metrics = http_get(&coord.dashboard, "/metrics");
    let failing = sample(&metrics, "armada_writes_failing{place=\"store\"}")
        + sample(&metrics, "armada_writes_failing{place=\"parts\"}");
    assert!(failing >= 1.0, "{metrics}");
    assert!(sample(&metrics, "armada_last_write_failure_timestamp_seconds") > 1e9);
    let overview = http_get(&coord.dashboard, "/api/overview");
    assert!(overview.contains("\"write_troubles\":[{"), "the dashboard's banner: {overview}");
    // Full for a while: the worker waits, keeping its session.
    std::thread::sleep(Duration::from_secs(6));
    assert!(status().contains("writes failing: "), "still full");

    std::fs::remove_file(&filler).unwrap();
    let watched = client(&["watch", "full", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let shown = status();
    assert!(shown.contains("24 jobs: 24 done") && !shown.contains("writes failing"), "{shown}");
    let metrics = http_get(&coord.dashboard, "/metrics");
    assert_eq!(sample(&metrics, "armada_writes_failing{place=\"store\"}"), 0.0, "{metrics}");
    assert_eq!(sample(&metrics, "armada_writes_failing{place=\"parts\"}"), 0.0, "{metrics}");
    let failures = sample(&metrics, "armada_write_failures_total{place=\"store\"}")
        + sample(&metrics, "armada_write_failures_total{place=\"parts\"}");
    assert!(failures >= 1.0, "{metrics}");
    assert!(http_get(&coord.dashboard, "/api/overview").contains("\"write_troubles\":[]"));

    let (got, want) = (jobs(&sweep_dir), jobs(&reference.join("full")));
    assert_eq!(got.len(), 24);
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    for (key, df) in &got {
        assert_same_trajectory(df, &want[key], key);
    }
    assert_each_step_once(&sweep_dir, 10);
    for table in ["summary.parquet", "final.parquet"] {
        let read = |dir: &Path| std::fs::read(dir.join("full").join(table)).unwrap();
        assert!(read(&data) == read(&reference), "{table} differs from the uninterrupted run's");
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.matches("registered with").count(), 1, "one session throughout:\n{log}");
}

/// A coordinator whose log cannot be written (stderr is /dev/full, as on a full disk)
/// keeps serving: a sweep logged at every step runs to its end and is answered.
#[test]
fn a_log_that_cannot_be_written_does_not_stop_the_coordinator() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let data = tmp.path().join("data");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data", data.to_str().unwrap(), "--dashboard", "127.0.0.1:0"])
        .env("ARMADA_LOG", "debug")
        .env_remove("ARMADA_TOKEN")
        .stdout(Stdio::piped())
        .stderr(full)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _coord = Proc(child);
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.contains("://127.0.0.1:"), "coordinator did not start: {line:?}");
    let _w = worker(&url, 2, &tmp.path().join("w.log"), &[]);
    let sweep = echo_sweep(tmp.path(), "logged", 6);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let watched = client(&["watch", "logged", "--quiet"], &url, 60);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let shown = text(&client(&["status", "logged"], &url, 30).stdout);
    assert!(shown.contains("6 jobs: 6 done"), "{shown}");
}

/// A testkit sweep `name` of `seeds` trivial jobs, as a file in `dir`.
fn echo_sweep(dir: &Path, name: &str, seeds: u32) -> PathBuf {
    let body = format!(
        "name = \"{name}\"\nfamily = \"testkit\"\nseeds = {seeds}\nhorizon = 5\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n"
    );
    write(dir, &format!("{name}.toml"), &body)
}

/// Run `sweeps` to completion on a coordinator of `data` started with `args`, with a worker;
/// then stop it with SIGTERM.
fn run_on_coordinator(data: &Path, args: &[&str], sweeps: &[&Path], log: &Path) {
    let mut coord = serve(data, 0, args);
    let _w = worker(&coord.url, 2, log, &[]);
    for sweep in sweeps {
        let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
        assert!(submitted.status.success(), "{}", text(&submitted.stderr));
        let name = sweep.file_stem().unwrap().to_str().unwrap();
        let watched = client(&["watch", name, "--quiet"], &coord.url, 60);
        assert!(watched.status.success(), "{}", text(&watched.stderr));
    }
    coord.proc.sigterm();
    assert!(coord.proc.wait(30).success());
}

/// The store lost four ways: cut to half, 8 KB of garbage written over its pages at offset
/// 4096 (its header intact: the damage shows only as pages are read), cut to nothing (it
/// then opens as an empty store), and deleted with its backups. Each time `armada serve`
/// refuses a damaged store naming the file and the way out, `armada check` says so and
/// `--repair` restores the newest backup (which holds sweep a, not b, submitted after it)
/// or starts an empty store, and rebuilds from the parts what the store lacks: a coordinator
/// on the repaired directory then finds every job of both sweeps done (resubmitted, with no
/// worker to run anything, both finish), and their summaries are the same bytes as before.
#[test]
fn a_lost_store_is_restored_from_its_backup_and_rebuilt_from_the_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (echo_sweep(tmp.path(), "a", 4), echo_sweep(tmp.path(), "b", 5));
    let good = tmp.path().join("good");
    let log = tmp.path().join("w.log");
    let backups = |data: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(data.join("armada.backups")) else { return Vec::new() };
        let mut found: Vec<PathBuf> =
            entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sqlite")).collect();
        found.sort();
        found
    };
    // Sweep a, then backups every second until one is newer than a's end.
    {
        let mut coord = serve(&good, 0, &["--backup-every-s", "1"]);
        let _w = worker(&coord.url, 2, &log, &[]);
        assert!(client(&["submit", a.to_str().unwrap()], &coord.url, 30).status.success());
        assert!(client(&["watch", "a", "--quiet"], &coord.url, 60).status.success());
        let finished = std::time::SystemTime::now();
        wait_until(20, "a backup taken after sweep a finished", || {
            backups(&good).last().is_some_and(|p| std::fs::metadata(p).unwrap().modified().unwrap() > finished)
        });
        coord.proc.sigterm();
        assert!(coord.proc.wait(30).success());
    }
    assert!(backups(&good).len() <= 3, "only the newest three are kept");
    // Sweep b after the last backup.
    run_on_coordinator(&good, &["--backup-every-s", "0"], &[&b], &log);
    let summaries = |data: &Path| -> Vec<Vec<u8>> {
        let files = ["a/summary.parquet", "a/final.parquet", "b/summary.parquet", "b/final.parquet"];
        files.iter().map(|f| std::fs::read(data.join(f)).unwrap()).collect()
    };
    let before = summaries(&good);

    for damage in ["cut to half", "garbage", "emptied", "lost with its backups"] {
        let copy = tmp.path().join(damage.replace(' ', "-"));
        assert!(Command::new("cp").arg("-r").arg(&good).arg(&copy).status().unwrap().success());
        let store = copy.join("armada.sqlite");
        for side in ["armada.sqlite-wal", "armada.sqlite-shm"] {
            let _ = std::fs::remove_file(copy.join(side));
        }
        let damaged = damage == "cut to half" || damage == "garbage";
        match damage {
            "cut to half" => {
                let len = std::fs::metadata(&store).unwrap().len();
                std::fs::OpenOptions::new().write(true).open(&store).unwrap().set_len(len / 2).unwrap();
            }
            "garbage" => {
                use std::io::{Seek, SeekFrom, Write};
                let mut file = std::fs::OpenOptions::new().write(true).open(&store).unwrap();
                file.seek(SeekFrom::Start(4096)).unwrap();
                file.write_all(&[0xa5; 8192]).unwrap();
            }
            "emptied" => std::fs::OpenOptions::new().write(true).open(&store).unwrap().set_len(0).unwrap(),
            _ => {
                std::fs::remove_file(&store).unwrap();
                std::fs::remove_dir_all(copy.join("armada.backups")).unwrap();
            }
        }
        if damaged {
            let refused = Command::new(BIN)
                .args(["serve", "--listen", "127.0.0.1:0", "--dashboard", "off", "--data", copy.to_str().unwrap()])
                .output()
                .unwrap();
            let stderr = text(&refused.stderr);
            assert!(!refused.status.success(), "{stderr}");
            let named = format!("{} is damaged", store.display());
            assert!(stderr.contains(&named) && stderr.contains("armada check --repair"), "{damage}: {stderr}");
        }
        let checked = armada(&["check", copy.to_str().unwrap()]);
        let report = text(&checked.stdout);
        assert_eq!(checked.status.code(), Some(1), "{damage}: {report}{}", text(&checked.stderr));
        let found = match damage {
            "cut to half" | "garbage" => "damaged, SQLite cannot read it",
            "emptied" => "sweep `b`: ",
            _ => "missing, beside 2 sweep directories",
        };
        assert!(report.contains(found), "{damage}: {report}");

        let repaired = armada(&["check", copy.to_str().unwrap(), "--repair"]);
        let report = text(&repaired.stdout);
        assert!(repaired.status.success(), "{damage}: {report}{}", text(&repaired.stderr));
        let rebuilt_a = report.contains("rebuilt sweep `a` from its parts: 4 done jobs");
        assert!(report.contains("rebuilt sweep `b` from its parts: 5 done jobs"), "{damage}: {report}");
        match damage {
            "cut to half" | "garbage" => {
                let newest = backups(&copy).pop().unwrap();
                assert!(report.contains(&format!("restored the store from {}", newest.display())), "{report}");
                assert!(!rebuilt_a, "a is in the backup: {report}");
                let aside = std::fs::read_dir(copy.join("armada.damaged")).unwrap().count();
                assert_eq!(aside, 1, "the damaged store moved aside, never deleted");
            }
            "emptied" => assert!(rebuilt_a && !report.contains("restored the store"), "{report}"),
            _ => assert!(rebuilt_a && report.contains("no intact backup: starting an empty store"), "{report}"),
        }
        assert!(report.contains("repaired: no problem left"), "{damage}: {report}");
        assert!(armada(&["check", copy.to_str().unwrap(), "--full"]).status.success(), "{damage}: clean");

        // No worker: both sweeps finish on resubmission only if every job is done already.
        let mut coord = serve(&copy, 0, &[]);
        for sweep in [&a, &b] {
            let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
            assert!(submitted.status.success(), "{damage}: {}", text(&submitted.stderr));
            let name = sweep.file_stem().unwrap().to_str().unwrap();
            let watched = client(&["watch", name, "--quiet"], &coord.url, 30);
            assert!(watched.status.success(), "{damage}: {}", text(&watched.stderr));
        }
        let status = text(&client(&["status"], &coord.url, 30).stdout);
        assert!(status.contains("4 jobs: 4 done") && status.contains("5 jobs: 5 done"), "{damage}: {status}");
        coord.proc.sigterm();
        assert!(coord.proc.wait(30).success());
        assert!(summaries(&copy) == before, "{damage}: the summaries changed");
    }
}

/// A coordinator that died summarizing a sweep (out of memory, say) leaves a marker in its
/// directory; the next one does not try again (which would take it down again at every
/// start) but serves every other sweep, says which one is held and what to do, and
/// `armada summarize` then writes the same summaries the coordinator would have, after
/// which the coordinator serves them.
#[test]
fn a_sweep_whose_summarizing_killed_the_coordinator_is_held_not_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (echo_sweep(tmp.path(), "a", 4), echo_sweep(tmp.path(), "b", 3));
    let data = tmp.path().join("data");
    run_on_coordinator(&data, &[], &[&a, &b], &tmp.path().join("w.log"));
    let summary_of_a = std::fs::read(data.join("a/summary.parquet")).unwrap();
    // What a coordinator killed inside the summarizer leaves: the marker, and no files.
    for file in ["summary.parquet", "final.parquet"] {
        std::fs::remove_file(data.join("a").join(file)).unwrap();
    }
    let marker = data.join("a/armada.summarizing");
    std::fs::write(&marker, b"").unwrap();

    let mut coord = serve(&data, 0, &[]);
    let held = client(&["watch", "a"], &coord.url, 30);
    let stderr = text(&held.stderr);
    assert!(!held.status.success(), "{stderr}");
    assert!(stderr.contains("stopped while summarizing this sweep") && stderr.contains("armada summarize"), "{stderr}");
    let served = client(&["watch", "b"], &coord.url, 30);
    assert!(served.status.success(), "the other sweep is served: {}", text(&served.stderr));
    assert!(marker.exists(), "held, not retried");
    coord.proc.sigterm();
    assert!(coord.proc.wait(30).success());
    let log = std::fs::read_to_string(data.with_extension("serve-0.log")).unwrap();
    assert!(log.contains("stopped while summarizing this sweep"), "{log}");

    let summarized = armada(&["summarize", data.join("a").to_str().unwrap()]);
    assert!(summarized.status.success(), "{}", text(&summarized.stderr));
    assert!(!marker.exists());
    assert!(std::fs::read(data.join("a/summary.parquet")).unwrap() == summary_of_a, "the coordinator's summary");
    let coord = serve(&data, 0, &[]);
    let served = client(&["watch", "a"], &coord.url, 30);
    assert!(served.status.success(), "{}", text(&served.stderr));
}

/// `armada serve --check-full` reads every row before serving: a part cut short is
/// reported with its sweep and the fix, and the coordinator serves all the same (the part
/// stops only its own jobs); a store written over is refused with the way out.
#[test]
fn serve_check_full_reports_damage_before_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let a = echo_sweep(tmp.path(), "a", 4);
    let data = tmp.path().join("data");
    run_on_coordinator(&data, &[], &[&a], &tmp.path().join("w.log"));
    let part = common::part_files(&data.join("a")).pop().unwrap();
    let len = std::fs::metadata(&part).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&part).unwrap().set_len(len / 2).unwrap();
    let coord = serve(&data, 0, &["--check-full"]);
    let status = text(&client(&["status", "a"], &coord.url, 30).stdout);
    assert!(status.contains("a: finished"), "it serves: {status}");
    drop(coord);
    let log = std::fs::read_to_string(data.with_extension("serve-0.log")).unwrap();
    assert!(log.contains("every row read: 1 problems"), "{log}");
    assert!(log.contains(&format!("sweep `a`: {}", part.display())) && log.contains("--repair moves it"), "{log}");

    std::fs::write(data.join("armada.sqlite"), vec![0xa5u8; 8192]).unwrap();
    let refused = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--dashboard",
            "off",
            "--check-full",
            "--data",
            data.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = text(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("armada check --repair"), "{stderr}");
}

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

/// How many of a sweep's jobs each worker committed (by the provenance in its parts).
fn committed_by_worker(sweep_dir: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut by_worker = std::collections::BTreeMap::<String, usize>::new();
    for part in common::part_files(sweep_dir) {
        for provenance in armada::results::read_provenance(&part).unwrap().into_values() {
            *by_worker.entry(provenance.worker).or_default() += 1;
        }
    }
    by_worker
}

/// Short jobs are leased ahead by the work they hold, not by the 64: two 1-slot workers
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

/// A cell longer than the coordinator summarizes in one pass (two jobs of 1,500,000 steps:
/// 3 million rows, where holding a cell took about 350 bytes a step, 1 GB) is summarized in
/// windows and spilled: the coordinator's peak memory stays a fraction of that, its
/// summaries are the bytes `armada summarize` writes from the same parts, no temporary file
/// is left, a fetched summary is the file, and the dashboard shows a job thinned.
#[test]
fn a_long_cell_is_summarized_in_bounded_memory_to_the_bytes_of_a_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "name = \"long\"\nfamily = \"testkit\"\nseeds = 2\nhorizon = 1500000\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n";
    let sweep = write(tmp.path(), "long.toml", body);
    let data = tmp.path().join("data");
    let mut coord = serve(&data, 0, &[]);
    let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let watched = client(&["watch", "long", "--quiet"], &coord.url, 300);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let sweep_dir = data.join("long");
    wait_until(120, "the summaries", || sweep_dir.join("summary.parquet").exists());

    let status = std::fs::read_to_string(format!("/proc/{}/status", coord.proc.0.id())).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(peak_kb < 400_000, "the coordinator's peak memory was {peak_kb} kB");
    let mut names: Vec<String> =
        std::fs::read_dir(&sweep_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["final.parquet", "summary.parquet", "trajectories"], "no spill left behind");

    let fetched = tmp.path().join("fetched");
    let out = client(&["fetch", "long", "--table", "summary", "--out", fetched.to_str().unwrap()], &coord.url, 120);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = std::fs::read(sweep_dir.join("summary.parquet")).unwrap();
    assert!(summary.len() > 4 << 20, "several fetch chunks: {} bytes", summary.len());
    assert!(std::fs::read(fetched.join("long").join("summary.parquet")).unwrap() == summary, "fetched summary");

    let part = common::part_files(&sweep_dir).remove(0);
    let key = part.file_stem().unwrap().to_str().unwrap().strip_prefix("part-").unwrap().to_owned();
    let page = http_get(&coord.dashboard, &format!("/api/sweeps/long/jobs/{key}"));
    let shown: serde_json::Value = serde_json::from_str(&page).unwrap();
    let steps: Vec<i64> = shown["step"].as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect();
    assert_eq!((steps.len(), steps[0], steps[steps.len() - 1]), (2000, 0, 1_500_000));
    coord.proc.sigterm();
    assert!(coord.proc.wait(30).success());

    let copy = tmp.path().join("copy").join("long");
    std::fs::create_dir_all(copy.join("trajectories")).unwrap();
    for part in common::part_files(&sweep_dir) {
        std::fs::copy(&part, copy.join("trajectories").join(part.file_name().unwrap())).unwrap();
    }
    let rebuilt = armada(&["summarize", copy.to_str().unwrap()]);
    assert!(rebuilt.status.success(), "{}", text(&rebuilt.stderr));
    for table in ["summary.parquet", "final.parquet"] {
        common::assert_rebuilt_summary(&copy.join(table), &sweep_dir.join(table));
    }
    // In the coordinator's directory `armada summarize` takes the counts from its store:
    // the coordinator's bytes.
    let before: Vec<Vec<u8>> =
        ["summary.parquet", "final.parquet"].iter().map(|t| std::fs::read(sweep_dir.join(t)).unwrap()).collect();
    let again = armada(&["summarize", sweep_dir.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    for (table, bytes) in ["summary.parquet", "final.parquet"].iter().zip(&before) {
        assert!(&std::fs::read(sweep_dir.join(table)).unwrap() == bytes, "{table} differs from the store's rebuild");
    }
}

/// Short jobs of a sweep run in batches on the worker (one call on the blocking pool for
/// many jobs, their records carried by their commits), long ones alone; a short job with
/// more records than a batch keeps runs again alone, streamed. Whichever way each job
/// ran, the trajectories are the in-process runner's and the final tables its bytes.
#[test]
fn batched_short_jobs_beside_long_ones_give_the_in_process_runners_trajectories() {
    let tmp = tempfile::tempdir().unwrap();
    // Three in four jobs take under 5 ms, one in four 120 ms (two steps of 60 ms).
    let mixed = write(
        tmp.path(),
        "mixed.toml",
        "name = \"mixed\"\nfamily = \"testkit\"\nseeds = 25\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"slow\"\nparams = { ms = [0, 1, 2, 60] }\n",
    );
    // Short jobs of 4,001 records each: a batch of them commits more values than one
    // request may carry (gRPC's 4 MiB), so its commits go in several.
    let long_batch = write(
        tmp.path(),
        "long-batch.toml",
        "name = \"long-batch\"\nfamily = \"testkit\"\nseeds = 48\nhorizon = 4000\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"echo\"\n",
    );
    // Short jobs of 5,001 records each, more than a batch keeps.
    let many = write(
        tmp.path(),
        "many.toml",
        "name = \"many\"\nfamily = \"testkit\"\nseeds = 8\nhorizon = 5000\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"echo\"\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let log = tmp.path().join("w.log");
    let _worker = worker(&coord.url, 2, &log, &[]);
    for (sweep, id) in [(&mixed, "mixed"), (&long_batch, "long-batch"), (&many, "many")] {
        assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
        let watched = client(&["watch", id, "--quiet"], &coord.url, 300);
        assert!(watched.status.success(), "{}", text(&watched.stderr));
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("job(s) of sweep mixed as one batch"), "no batch ran:\n{log}");
    assert!(log.contains("job(s) of sweep long-batch as one batch"), "no batch of long-batch ran:\n{log}");
    assert!(log.contains("more records than a batch keeps"), "no job of `many` fell back to streaming:\n{log}");
    for (sweep, id, n) in [(&mixed, "mixed", 100), (&long_batch, "long-batch", 48), (&many, "many", 8)] {
        let local = tmp.path().join("local");
        let out = armada(&["run", sweep.to_str().unwrap(), "--out", local.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let (ours, theirs) = (jobs(&data.join(id)), jobs(&local.join(id)));
        assert_eq!(ours.len(), n);
        assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
        for (key, df) in &ours {
            assert_same_trajectory(df, &theirs[key], key);
        }
        let final_of = |dir: &Path| std::fs::read(dir.join(id).join("final.parquet")).unwrap();
        assert_eq!(final_of(&data), final_of(&local), "{id}");
    }
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

/// A damaged part stops nothing but its own jobs: `armada fetch` writes every readable job,
/// names the part and the jobs only it held, and exits 1; the dashboard's view of such a job
/// names its part, and a summary table is fetched as ever. Tried with a part cut in half,
/// cut to nothing, with a scribbled footer, and with a Parquet file that is not an armada
/// part beside the sweep's.
#[test]
fn fetch_names_a_damaged_part_and_its_jobs_and_sends_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let _w = worker(&coord.url, 1, &tmp.path().join("w.log"), &[]);
    // Two submissions: two parts at least.
    for seeds in [3, 6] {
        let sweep = echo_sweep(tmp.path(), "damage", seeds);
        let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
        assert!(submitted.status.success(), "{}", text(&submitted.stderr));
        let watched = client(&["watch", "damage", "--quiet"], &coord.url, 60);
        assert!(watched.status.success(), "{}", text(&watched.stderr));
    }
    let sweep_dir = data.join("damage");
    let all = jobs(&sweep_dir);
    assert_eq!(all.len(), 6);
    let parts = common::part_files(&sweep_dir);
    assert!(parts.len() >= 2, "{parts:?}");
    let victim = parts[0].clone();
    let lost: Vec<String> = common::jobs_in(&victim).into_keys().collect();
    let intact = std::fs::read(&victim).unwrap();
    let name = victim.file_name().unwrap().to_str().unwrap().to_string();
    type Damage = Box<dyn Fn(&[u8]) -> Vec<u8>>;
    let damages: [(&str, Damage); 3] = [
        ("cut in half", Box::new(|b: &[u8]| b[..b.len() / 2].to_vec())),
        ("cut to nothing", Box::new(|_: &[u8]| Vec::new())),
        (
            "scribbled footer",
            Box::new(|b: &[u8]| {
                let mut b = b.to_vec();
                let n = b.len();
                b[n - 40..n - 4].fill(0x5a);
                b
            }),
        ),
    ];
    for (i, (what, damage)) in damages.iter().enumerate() {
        std::fs::write(&victim, damage(&intact)).unwrap();
        let out_dir = tmp.path().join(format!("fetched-{i}"));
        let out = client(&["fetch", "damage", "--out", out_dir.to_str().unwrap()], &coord.url, 60);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(&format!("warning: the coordinator could not read part {name}: ")), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "warning: {} done jobs were only in those parts and are missing here: ",
                lost.len()
            )),
            "{what}: {stderr}"
        );
        assert!(lost.iter().all(|k| stderr.contains(k.as_str())), "{what}: {stderr}");
        let fetched = jobs(&out_dir.join("damage"));
        let expected: Vec<&String> = all.keys().filter(|k| !lost.contains(k)).collect();
        assert_eq!(fetched.keys().collect::<Vec<_>>(), expected, "{what}");
        for (key, df) in &fetched {
            assert!(df.equals_missing(&all[key]), "{what}: {key}");
        }
        // A filter on the readable jobs only: they come, the damage is still named.
        let one = expected[0].clone();
        let out_dir = tmp.path().join(format!("one-{i}"));
        let out = client(&["fetch", "damage", "--out", out_dir.to_str().unwrap(), "--job", &one], &coord.url, 60);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("warning: 0 done jobs were only in those parts"), "{}", text(&out.stderr));
        assert_eq!(jobs(&out_dir.join("damage")).into_keys().collect::<Vec<_>>(), vec![one.clone()]);
        // The dashboard: a lost job's view names its part; the others show as ever.
        let view = http_get(&coord.dashboard, &format!("/api/sweeps/damage/jobs/{}", lost[0]));
        assert!(view.contains(&name), "{what}: {view}");
        let view = http_get(&coord.dashboard, &format!("/api/sweeps/damage/jobs/{one}"));
        assert!(view.starts_with('{') && view.contains("\"provenance\""), "{what}: {view}");
        // A summary table does not read parts.
        let out_dir = tmp.path().join(format!("final-{i}"));
        let out = client(&["fetch", "damage", "--out", out_dir.to_str().unwrap(), "--table", "final"], &coord.url, 60);
        assert!(out.status.success(), "{what}: {}", text(&out.stderr));
        let table = |dir: &Path| std::fs::read(dir.join("damage/final.parquet")).unwrap();
        assert_eq!(table(&out_dir), table(&data));
    }
    // A Parquet file that is not an armada part, beside intact parts.
    std::fs::write(&victim, &intact).unwrap();
    let mut foreign = polars::df!("x" => [1.0, 2.0]).unwrap();
    let file = std::fs::File::create(sweep_dir.join("trajectories/foreign.parquet")).unwrap();
    polars::prelude::ParquetWriter::new(file).finish(&mut foreign).unwrap();
    let out_dir = tmp.path().join("fetched-foreign");
    let out = client(&["fetch", "damage", "--out", out_dir.to_str().unwrap()], &coord.url, 60);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("could not read part foreign.parquet: "), "{stderr}");
    assert!(stderr.contains("warning: 0 done jobs were only in those parts"), "{stderr}");
    assert_eq!(jobs(&out_dir.join("damage")).len(), 6);
}
