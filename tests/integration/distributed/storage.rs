//! The data directory under trouble: a second coordinator, an unwritable part, a full disk,
//! an unwritable log, a lost store, a summary that killed the coordinator, `--check-full`.

use super::*;

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
