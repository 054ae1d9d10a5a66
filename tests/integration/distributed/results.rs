//! What a distributed run leaves: the in-process runner's trajectories, live summaries that end
//! as a rebuild, failures in every table, provenance, long cells in bounded memory, fetches.

use super::*;

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
