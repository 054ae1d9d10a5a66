//! End-to-end tests of `armada run` and `armada summarize` through the real binary.

use crate::common;

use common::{armada, assert_same_trajectory, jobs, jobs_in, part_files, read, text};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::process::Command;

const SMALL: &str = r#"
family = "lse"
seeds = 3
horizon = 15
[[benchmarks]]
name = "gp-sample-path"
[[benchmarks]]
name = "sinusoidal"
[[algorithms]]
name = "rand-straddle"
[[algorithms]]
name = "us"
params = { tie_break = "random" }
[[algorithms]]
name = "random"
"#;

#[test]
fn quick_sweep_prints_a_table_writes_summaries_and_resumes() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    let first = armada(&["run", "sweeps/lse-finite-quick.toml", "--out", out_dir]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    // The embedded coordinator's dashboard: a loopback address with the run's token.
    let stderr = text(&first.stderr);
    let dashboard = stderr.lines().find(|l| l.starts_with("dashboard: ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(dashboard.starts_with("dashboard: http://127.0.0.1:") && dashboard.contains("/?token="), "{dashboard}");
    assert_eq!(dashboard.rsplit("token=").next().unwrap().len(), 32, "{dashboard}");
    let stdout = text(&first.stdout);
    for name in
        ["gp-sample-path", "sinusoidal", "himmelblau", "random", "us", "straddle", "rand-straddle", "lse", "fscore"]
    {
        assert!(stdout.contains(name), "table lacks {name}:\n{stdout}");
    }
    let sweep_dir = out.path().join("lse-finite-quick");
    assert_eq!(jobs(&sweep_dir).len(), 3 * 5 * 5);
    let written = part_files(&sweep_dir);
    let summary = read(&sweep_dir.join("summary.parquet"));
    let final_ = read(&sweep_dir.join("final.parquet"));
    // 15 (benchmark, algorithm) cells, 51 steps each, and the float metrics of the lse family.
    let metrics = summary.column("metric").unwrap().str().unwrap().unique().unwrap().len();
    assert_eq!(summary.height(), 15 * 51 * metrics);
    assert_eq!(final_.height(), 15 * metrics);
    let n = final_.column("n").unwrap().i64().unwrap();
    assert!(n.iter().all(|v| v.unwrap() <= 5));

    let mtimes: Vec<_> = written.iter().map(|p| std::fs::metadata(p).unwrap().modified().unwrap()).collect();
    let second = armada(&["run", "sweeps/lse-finite-quick.toml", "--out", out_dir]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(text(&second.stderr).contains("75 jobs, 75 already done, 0 run, 0 failed"), "{}", text(&second.stderr));
    let again: Vec<_> =
        part_files(&sweep_dir).iter().map(|p| std::fs::metadata(p).unwrap().modified().unwrap()).collect();
    assert_eq!(mtimes, again, "a resumed run must not rewrite parts");
    // It ends by saying how to look again: a report written beside the summaries, and a
    // coordinator on the results directory, whose dashboard shows the finished sweep with
    // the family's headline metric first. Its output is plain text when not a terminal.
    let stderr = text(&second.stderr);
    let report = sweep_dir.join("report.html");
    assert!(stderr.contains(&format!("report: {} (one HTML file", report.display())), "{stderr}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("lse-finite-quick"));
    assert!(stderr.contains(&format!("dashboard again: armada serve --data {out_dir} ")), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr}");
    let coord = common::cluster::serve(out.path(), 0, &[]);
    let get = |path| -> serde_json::Value {
        let body = common::cluster::http_get(&coord.dashboard, path);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    };
    let overview = get("/api/overview");
    let sweep = &overview["sweeps"][0];
    assert_eq!((sweep["id"].as_str(), sweep["state"].as_str()), (Some("lse-finite-quick"), Some("finished")));
    assert_eq!((sweep["done"].as_u64(), sweep["n_jobs"].as_u64()), (Some(75), Some(75)));
    let curves = get("/api/sweeps/lse-finite-quick/curves");
    assert_eq!(curves["metric"], "loss", "lse's headline metric, not the first by name");
    assert_eq!((curves["metrics"][0].as_str(), curves["metrics"][1].as_str()), (Some("loss"), Some("fscore")));
    assert_eq!(curves["curves"]["metric"], "loss");
}

#[test]
fn two_runs_into_different_directories_give_identical_trajectories() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("small.toml");
    std::fs::write(&sweep, SMALL).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    // Different thread counts too: a job's trajectory depends only on its key.
    for (out, jobs) in [(&a, "1"), (&b, "2")] {
        let o = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", jobs]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let (sa, sb) = (jobs(&a.join("small")), jobs(&b.join("small")));
    assert_eq!(sa.len(), 2 * 3 * 3);
    assert_eq!(sa.keys().collect::<Vec<_>>(), sb.keys().collect::<Vec<_>>());
    for (key, df) in &sa {
        assert_same_trajectory(df, &sb[key], key);
    }
    // Common random numbers: all algorithms of a seed start from the same initial point.
    let mut initial: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    for df in sa.values() {
        let bench = df.column("benchmark").unwrap().str().unwrap().get(0).unwrap().to_string();
        let seed = df.column("seed").unwrap().i64().unwrap().get(0).unwrap();
        let idx = df.column("chosen_index").unwrap().i64().unwrap().get(0).unwrap();
        initial.entry((bench, seed)).or_default().push(idx);
    }
    assert_eq!(initial.len(), 6);
    for (cell, idx) in &initial {
        assert_eq!(idx.len(), 3);
        assert!(idx.iter().all(|&i| i == idx[0]), "{cell:?}: {idx:?}");
    }
    let distinct: std::collections::BTreeSet<i64> = initial.values().map(|v| v[0]).collect();
    assert!(distinct.len() > 1, "seeds must differ");
}

#[test]
fn bad_sweep_files_exit_nonzero_with_one_clear_message_and_write_nothing() {
    let unknown = format!("algorithms[1].name: unknown algorithm `usx` in family `lse`; allowed: {}", all_algorithms());
    let cases = [
        (SMALL.replace("\"us\"", "\"usx\""), unknown.as_str()),
        (SMALL.replace("horizon = 15", "horizon = 1.5"), "horizon: expected an integer, got float 1.5"),
        (SMALL.replace("seeds = 3\n", ""), "seeds: missing required field"),
        (
            SMALL.replace("tie_break = \"random\"", "tie_break = 1"),
            "algorithms[1].params.tie_break: expected one of: lowest-index, random, got an integer",
        ),
        (
            SMALL.replace("[[benchmarks]]\nname = \"sinusoidal\"", "[[benchmarks]\nname = \"sinusoidal\""),
            "malformed TOML",
        ),
    ];
    for (i, (body, expected)) in cases.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&sweep, body).unwrap();
        let out = dir.path().join("out");
        let o = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "case {i}");
        let stderr = text(&o.stderr);
        assert!(stderr.starts_with("error: ") && stderr.contains(expected), "case {i}: {stderr}");
        if !expected.starts_with("malformed") {
            assert_eq!(stderr.lines().count(), 1, "case {i}: one line expected:\n{stderr}");
        }
        assert!(!out.exists(), "case {i}: a bad sweep must write nothing");
    }
}

/// A sweep file's errors come together, a line each naming its field, and nothing is
/// written; `armada list` writes ranges as people do (no bound of 300 digits).
#[test]
fn a_sweep_files_errors_come_together_and_ranges_read_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let body = SMALL
        .replace("horizon = 15", "horizon = 1.5\nseed = 2")
        .replace("\"us\"", "\"usx\"")
        .replace("name = \"random\"", "name = \"random\"\nparams = { x = 1 }");
    let sweep = dir.path().join("bad.toml");
    std::fs::write(&sweep, body).unwrap();
    let out = dir.path().join("out");
    let o = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 5, "{stderr}");
    assert_eq!(lines[0], format!("error: {}: 4 errors:", sweep.display()));
    assert_eq!(
        lines[1],
        "  seed: unknown field; allowed: name, family, seeds, sweep_seed, horizon, benchmarks, algorithms, resolve"
    );
    assert_eq!(lines[2], "  horizon: expected an integer, got float 1.5");
    assert!(lines[3].starts_with("  algorithms[1].name: unknown algorithm `usx` in family `lse`"), "{stderr}");
    assert_eq!(lines[4], "  algorithms[2].params.x: unknown parameter of `random`; allowed: none");
    assert!(!out.exists());

    let list = armada(&["list"]);
    assert!(list.status.success());
    let listed = text(&list.stdout);
    assert!(listed.contains("card_x (a float >= 0, default 0)"), "{listed}");
    let longest_number = listed.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap();
    assert!(longest_number < 20, "a number of {longest_number} digits in `armada list`");
}

#[test]
fn summarize_rebuilds_from_the_parts_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("small.toml");
    let out = dir.path().join("out");
    // Two seeds first, then all three: the resumed run writes the third seed's 6 jobs into
    // parts of their own.
    for body in [SMALL.replace("seeds = 3", "seeds = 2"), SMALL.to_string()] {
        std::fs::write(&sweep, body).unwrap();
        let o = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let sweep_dir = out.join("small");
    let before = std::fs::read(sweep_dir.join("final.parquet")).unwrap();
    // Drop the third seed's parts: the summary must reflect exactly the jobs that remain.
    let third: Vec<_> = part_files(&sweep_dir)
        .into_iter()
        .filter(|p| jobs_in(p).values().all(|df| df.column("seed").unwrap().i64().unwrap().get(0) == Some(2)))
        .collect();
    assert_eq!(third.iter().map(|p| jobs_in(p).len()).sum::<usize>(), 6);
    for path in &third {
        std::fs::remove_file(path).unwrap();
    }
    std::fs::remove_file(sweep_dir.join("final.parquet")).unwrap();
    let o = armada(&["summarize", sweep_dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("from 12 jobs"), "{}", text(&o.stderr));
    let after = read(&sweep_dir.join("final.parquet"));
    let total_n: i64 = after
        .lazy()
        .filter(col("metric").eq(lit("loss")))
        .select([col("n").sum()])
        .collect()
        .unwrap()
        .column("n")
        .unwrap()
        .i64()
        .unwrap()
        .get(0)
        .unwrap();
    assert_eq!(total_n, 12);
    assert_ne!(before, std::fs::read(sweep_dir.join("final.parquet")).unwrap());
}

/// The lse family's algorithm names, in registry order, as error messages list them.
fn all_algorithms() -> String {
    armada_lse::algorithms::ALGORITHMS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
}

#[test]
fn run_summarizes_only_the_jobs_of_its_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("small.toml");
    let out = dir.path().join("out");
    std::fs::write(&sweep, SMALL).unwrap();
    let o = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Edit the sweep: drop `random`. Its 6 jobs stay on disk but must not be summarized.
    std::fs::write(&sweep, SMALL.replace("[[algorithms]]\nname = \"random\"\n", "")).unwrap();
    let o = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(stderr.contains("12 jobs, 12 already done, 0 run"), "{stderr}");
    assert!(stderr.contains("note: 6 trajectories"), "{stderr}");
    let final_ = read(&out.join("small").join("final.parquet"));
    let algorithms = final_.column("algorithm").unwrap().str().unwrap().unique().unwrap();
    assert_eq!(algorithms.len(), 2);
    assert!(algorithms.iter().all(|a| a != Some("random")));
}

/// Episodes that end early (testkit-short's `short`: seed s ends after step s mod 4) go through the
/// coordinator and its workers as they do in process: each trajectory has steps 0..=its
/// last, the per-step summaries count the jobs that reached each step, and the final table
/// has one row per cell over every job's own last record.
#[test]
fn episodes_that_end_early_run_distributed_as_in_process_and_summarize_per_cell() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("short.toml");
    std::fs::write(
        &sweep,
        "name = \"short\"\nfamily = \"testkit-short\"\nseeds = 6\nhorizon = 5\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"short\"\nparams = { last = 3 }\n",
    )
    .unwrap();
    let (distributed, local) = (dir.path().join("distributed"), dir.path().join("local"));
    for (out, extra) in [(&distributed, None), (&local, Some("--in-process"))] {
        let mut args = vec!["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"];
        args.extend(extra);
        let o = armada(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let (ours, theirs) = (jobs(&distributed.join("short")), jobs(&local.join("short")));
    assert_eq!(ours.len(), 6);
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], key);
        let seed = df.column("seed").unwrap().i64().unwrap().get(0).unwrap();
        let steps: Vec<i64> = df.column("step").unwrap().i64().unwrap().iter().map(Option::unwrap).collect();
        assert_eq!(steps, (0..=seed % 4).collect::<Vec<_>>(), "seed {seed}");
    }
    for name in ["summary.parquet", "final.parquet"] {
        let bytes = |out: &std::path::Path| std::fs::read(out.join("short").join(name)).unwrap();
        assert!(bytes(&distributed) == bytes(&local), "{name} differs");
    }
    // Seeds 0..6 end after steps 0, 1, 2, 3, 0, 1: steps 0..=3 have 6, 4, 2, 1 jobs.
    let summary = read(&distributed.join("short").join("summary.parquet"));
    let ints = |df: &DataFrame, c: &str| -> Vec<i64> {
        df.column(c).unwrap().i64().unwrap().iter().map(Option::unwrap).collect()
    };
    assert_eq!(ints(&summary, "step"), [0, 1, 2, 3]);
    assert_eq!(ints(&summary, "n"), [6, 4, 2, 1]);
    let last = read(&distributed.join("short").join("final.parquet"));
    assert_eq!((ints(&last, "step"), ints(&last, "n")), (vec![3], vec![6]));
    // value = seed + step + U(0,1) at each job's own last step: seeds 0..6 at 0, 1, 2, 3, 0, 1.
    let mean = last.column("mean").unwrap().f64().unwrap().get(0).unwrap();
    let lasts: Vec<f64> = ours
        .values()
        .map(|df| {
            let values = df.column("value").unwrap().f64().unwrap();
            values.get(values.len() - 1).unwrap()
        })
        .collect();
    assert_eq!(lasts.len(), 6);
    let expected = lasts.iter().sum::<f64>() / 6.0;
    assert!((mean - expected).abs() < 1e-12, "{mean} vs {expected}");
    let floor: f64 = [0, 2, 4, 6, 4, 6].iter().map(|&v| v as f64).sum::<f64>() / 6.0;
    assert!((floor..floor + 1.0).contains(&mean), "seed + last step + U(0, 1): {mean}");
}

/// `armada check` on copies of a finished run's directory. A truncated part and a deleted
/// part are each reported with the sweep, the file and the jobs whose rows are lost (exit
/// 1); `--repair` moves the damaged part to `<sweep>/damaged/`, queues the lost jobs again
/// and removes the summaries; the next `armada run` computes just those jobs, and every
/// trajectory and both summary files equal the undamaged run's. A damaged store is
/// reported with what to do.
#[test]
fn check_reports_lost_rows_and_repair_reruns_them_to_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("small.toml");
    std::fs::write(&sweep, SMALL).unwrap();
    let good = dir.path().join("good");
    // Two seeds, then the third: two parts at least, so that one can be lost alone.
    let two = dir.path().join("two").join("small.toml");
    std::fs::create_dir_all(two.parent().unwrap()).unwrap();
    std::fs::write(&two, SMALL.replace("seeds = 3", "seeds = 2")).unwrap();
    for file in [&two, &sweep] {
        let o = armada(&["run", file.to_str().unwrap(), "--out", good.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    assert!(part_files(&good.join("small")).len() >= 2);
    let clean = armada(&["check", good.to_str().unwrap(), "--full"]);
    assert!(clean.status.success() && text(&clean.stdout).contains("no problem found"), "{}", text(&clean.stdout));
    let copy_of_good = |name: &str| {
        let copy = dir.path().join(name);
        let cp = std::process::Command::new("cp").arg("-r").arg(&good).arg(&copy).status().unwrap();
        assert!(cp.success());
        copy
    };
    for damage in ["truncated", "deleted"] {
        let copy = copy_of_good(damage);
        let sweep_dir = copy.join("small");
        let victim = part_files(&sweep_dir).pop().unwrap();
        let lost: Vec<String> = jobs_in(&victim).into_keys().collect();
        assert!(!lost.is_empty() && lost.len() < 18, "{}", lost.len());
        if damage == "truncated" {
            let len = std::fs::metadata(&victim).unwrap().len();
            std::fs::OpenOptions::new().write(true).open(&victim).unwrap().set_len(len / 2).unwrap();
        } else {
            std::fs::remove_file(&victim).unwrap();
        }
        if damage == "truncated" {
            // Before any repair, the intact jobs are summarized and the damaged part named.
            let summarized = armada(&["summarize", sweep_dir.to_str().unwrap()]);
            let stderr = text(&summarized.stderr);
            assert_eq!(summarized.status.code(), Some(1), "{stderr}");
            assert!(stderr.contains(&format!("left out, unreadable: {}", victim.display())), "{stderr}");
            assert!(stderr.contains(&format!("wrote {}", sweep_dir.join("summary.parquet").display())), "{stderr}");
            assert!(stderr.contains(&format!("from {} jobs", 18 - lost.len())), "{stderr}");
            // A run of the sweep is not stopped by it either, and says what to do.
            let rerun = armada(&["run", sweep.to_str().unwrap(), "--out", copy.to_str().unwrap()]);
            let stderr = text(&rerun.stderr);
            assert!(stderr.contains("1 damaged parts") && stderr.contains("armada check --repair"), "{stderr}");
        }
        let checked = armada(&["check", copy.to_str().unwrap()]);
        let report = text(&checked.stdout);
        assert_eq!(checked.status.code(), Some(1), "{damage}: {report}{}", text(&checked.stderr));
        assert!(report.contains("sweep `small`") && report.contains(&lost[0]), "{damage}: {report}");
        let named = if damage == "truncated" { victim.to_str().unwrap() } else { "in no readable part" };
        assert!(report.contains(named), "{damage}: {report}");
        let repaired = armada(&["check", copy.to_str().unwrap(), "--repair"]);
        let report = text(&repaired.stdout);
        assert!(repaired.status.success(), "{damage}: {report}{}", text(&repaired.stderr));
        assert!(report.contains(&format!("queued again: {} jobs", lost.len())), "{damage}: {report}");
        let aside = sweep_dir.join("damaged").join(victim.file_name().unwrap());
        assert_eq!(aside.is_file(), damage == "truncated", "{damage}: moved aside, never deleted");
        assert!(!sweep_dir.join("final.parquet").exists(), "{damage}: stale summaries removed");
        let rerun = armada(&["run", sweep.to_str().unwrap(), "--out", copy.to_str().unwrap()]);
        let stderr = text(&rerun.stderr);
        assert!(rerun.status.success(), "{damage}: {stderr}");
        let done = 18 - lost.len();
        assert!(stderr.contains(&format!("18 jobs, {done} already done, {} run, 0 failed", lost.len())), "{stderr}");
        let (before, after) = (jobs(&good.join("small")), jobs(&sweep_dir));
        assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "{damage}");
        for (key, df) in &before {
            assert_same_trajectory(df, &after[key], key);
        }
        for file in ["summary.parquet", "final.parquet"] {
            let same =
                std::fs::read(good.join("small").join(file)).unwrap() == std::fs::read(sweep_dir.join(file)).unwrap();
            assert!(same, "{damage}: {file} differs from the undamaged run's");
        }
        assert!(armada(&["check", copy.to_str().unwrap(), "--full"]).status.success(), "{damage}: clean again");
    }
    let copy = copy_of_good("store");
    let store = copy.join("armada.sqlite");
    let _ = std::fs::remove_file(copy.join("armada.sqlite-wal"));
    std::fs::write(&store, vec![0xa5u8; 8192]).unwrap();
    let checked = armada(&["check", copy.to_str().unwrap()]);
    let report = text(&checked.stdout);
    assert_eq!(checked.status.code(), Some(1), "{report}{}", text(&checked.stderr));
    assert!(report.contains(store.to_str().unwrap()) && report.contains("damaged, SQLite cannot read it"), "{report}");
    assert!(report.contains("fix: --repair moves it to armada.damaged/"), "{report}");
}

/// README's five-minute tour, its commands as written (the cluster's on loopback with ports
/// the OS picks, not 0.0.0.0:7070): a sweep run in a fresh directory, its final table read by
/// the tour's polars snippet, its report, and the three cluster commands with a token.
#[test]
fn the_readmes_tour_runs_as_written() {
    use common::cluster::{client_env, serve, worker_args};
    let readme = std::fs::read_to_string(common::manifest_dir().join("README.md")).unwrap();
    let tour = readme.split("## A five-minute tour").nth(1).unwrap().split("\n## ").next().unwrap();
    let commands = [
        "armada report results/lse-finite-quick",
        "armada serve --data results",
        r#"armada serve --listen 0.0.0.0:7070 --data armada-data --token "$TOKEN""#,
        r#"armada worker --coordinator http://HOST:7070 --token "$TOKEN""#,
        r#"armada submit sweeps/lse-finite-quick.toml --coordinator http://HOST:7070 --token "$TOKEN""#,
    ];
    for command in commands {
        assert!(tour.contains(command), "the tour no longer says `{command}`");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("sweeps")).unwrap();
    let sweep = common::manifest_dir().join("sweeps/lse-finite-quick.toml");
    std::fs::copy(&sweep, dir.join("sweeps/lse-finite-quick.toml")).unwrap();
    let armada_in = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_armada")).args(args).current_dir(dir).output().expect("armada runs")
    };
    // The first of the two commands, then the tour's.
    let run = armada_in(&["run", "sweeps/lse-finite-quick.toml", "--quiet"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let report = armada_in(&["report", "results/lse-finite-quick"]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    assert!(dir.join("results/lse-finite-quick/report.html").is_file());

    // The polars snippet, as written, in the analysis scripts' venv.
    if let Some(python) = analysis_python() {
        let snippet = tour.split("```python\n").nth(1).unwrap().split("```").next().unwrap();
        let out = Command::new(python).args(["-c", snippet]).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let printed = text(&out.stdout);
        // 15 cells, then the straddle rows whose beta_sqrt is 3.0 (the sweep's straddle).
        assert!(printed.contains("shape: (15, 5)") && printed.contains("rand-straddle"), "{printed}");
        let filtered = printed.split("shape: ").nth(2).unwrap_or_else(|| panic!("{printed}"));
        assert!(filtered.starts_with("(3, ") && filtered.contains("straddle"), "{printed}");
    }

    // The cluster, in three commands (and a watch), with a token.
    let token = "tour-token-0123456789abcdef";
    let coord = serve(&dir.join("armada-data"), 0, &["--token", token]);
    let _worker = worker_args(&coord.url, 2, &dir.join("w.log"), &["--token", token], &[]);
    let env = [("ARMADA_TOKEN", token)];
    let submitted = client_env(&["submit", "sweeps/lse-finite-quick.toml"], &coord.url, 60, &env);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let watched = client_env(&["watch", "lse-finite-quick", "--quiet"], &coord.url, 120, &env);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(jobs(&dir.join("armada-data/lse-finite-quick")).len(), 75);
}

/// docs/results.md's snippets as written, on a real run whose one cell failed: the failed
/// cell's row in final.parquet, and each job's rows joined to its provenance. `armada run`
/// exits 1 (a job failed) and its table marks the cell.
#[test]
fn the_results_pages_snippets_run_as_written() {
    let page = std::fs::read_to_string(common::manifest_dir().join("docs/results.md")).unwrap();
    let snippet = |heading: &str| -> String {
        let section = page.split(heading).nth(1).unwrap_or_else(|| panic!("no section {heading:?}"));
        section.split("```python\n").nth(1).unwrap().split("```").next().unwrap().to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("my-sweep.toml"),
        "family = \"testkit\"\nseeds = 4\nhorizon = 3\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n\
         [[algorithms]]\nname = \"panic\"\nparams = { at = 2 }\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_armada"))
        .args(["run", "my-sweep.toml", "--quiet"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "a failed job fails the run: {}", text(&run.stderr));
    let table = text(&run.stdout);
    assert!(table.lines().any(|l| l.contains("  panic  ") && l.contains("  0/4, 4 failed  ")), "{table}");
    let Some(python) = analysis_python() else { return };
    let run_snippet = |code: &str| {
        let out = Command::new(&python).args(["-c", code]).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "{code}\n{}", text(&out.stderr));
        text(&out.stdout)
    };
    let failed = run_snippet(&snippet("## Failed jobs in the tables"));
    assert!(failed.contains("shape: (1, 5)") && failed.contains("│ panic"), "{failed}");
    let joined = run_snippet(&snippet("## Provenance of each job's rows"));
    // armada run's workers register with its own admin token, from loopback.
    assert!(
        joined.contains("shape: (1, 4)") && joined.contains("--token") && joined.contains("127.0.0.1:"),
        "{joined}"
    );
}

/// The analysis scripts' venv (None, skipping, where python3 cannot make one).
fn analysis_python() -> Option<std::path::PathBuf> {
    let usable =
        Command::new("python3").args(["-c", "import ensurepip, venv"]).output().is_ok_and(|o| o.status.success());
    if !usable {
        assert!(std::env::var("ARMADA_REQUIRE_PYTHON").as_deref() != Ok("1"), "python3 with venv is needed");
        eprintln!("SKIPPED: the tour's Python snippet (python3 -m venv is not available)");
        return None;
    }
    Some(common::python_venv("analysis", &common::manifest_dir().join("analysis/requirements.txt")))
}
