//! armada-bindings (workers/bindings) from Python: built with maturin into a venv the test
//! makes, then its own tests (numpy reimplementations of LSE methods equal to the built-in
//! ones bit for bit, the benchmarks' instances, streams and metrics, errors) and its
//! benchmark script, which must print one row per workload with the same trajectory; and
//! the guide docs/your-method.md as written: numpy methods of an extension in sweeps beside
//! the built-in ones, through a coordinator, a Rust worker and Python workers.

use crate::common;

use common::cluster::{client_with, serve_with, worker_with, write, Launcher};
use common::{assert_same_trajectory, text, wait_until, Proc};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The python of a venv with the bindings' and the SDK's test requirements, the SDK
/// installed from workers/python and the module built into it (once per run of this
/// binary, so that what is tested is this checkout's code).
fn bindings_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let crate_dir = common::manifest_dir().join("workers/bindings");
        let sdk = common::manifest_dir().join("workers/python");
        let requirements = [crate_dir.join("requirements-test.txt"), sdk.join("requirements-test.txt")];
        let python = common::python_venv_of("venv-bindings", &requirements.each_ref().map(PathBuf::as_path));
        common::install_sdk(&python);
        let venv = python.parent().unwrap().parent().unwrap();
        // Its own target directory: `cargo test` holds the workspace's while tests run, and
        // a build there would wait for it forever.
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bindings-target");
        let built = Command::new(venv.join("bin").join("maturin"))
            .arg("develop")
            .current_dir(&crate_dir)
            .env("VIRTUAL_ENV", venv)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        assert!(built.status.success(), "maturin develop in workers/bindings:\n{}", text(&built.stderr));
        python
    })
}

#[test]
fn the_bindings_pass_their_own_tests() {
    common::pytest_passes(bindings_python(), &common::manifest_dir().join("workers/bindings/tests"));
}

/// The cost benchmark runs as documented: each workload's numpy method gave the built-in's
/// trajectory, and its ratio is a number.
#[test]
fn the_cost_benchmark_prints_a_ratio_per_workload() {
    let examples = common::manifest_dir().join("workers/bindings/examples");
    let out = Command::new(bindings_python())
        .arg(examples.join("bench.py"))
        .args(["--horizon", "20", "--rounds", "1"])
        .current_dir(&examples)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 7, "{stdout}");
    for row in rows {
        assert_eq!(row.split_whitespace().nth(2), Some("yes"), "{stdout}");
        let ratio: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{row}");
    }
}

/// The fenced blocks of a guide marked `file=NAME` (```python file=a.py), as (name, text).
fn guide_files(guide: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        if let Some((_, name)) = line.strip_prefix("```").and_then(|l| l.split_once(" file=")) {
            let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
            files.push((name.trim().to_string(), body.join("\n") + "\n"));
        }
    }
    files
}

/// A sweep's jobs by (algorithm, benchmark, seed), without the columns that name the
/// algorithm or key the job.
fn jobs_by_cell(sweep: &Path) -> BTreeMap<(String, String, i64), DataFrame> {
    common::jobs(sweep)
        .into_values()
        .map(|df| {
            let text = |c: &str| df.column(c).unwrap().str().unwrap().get(0).unwrap().to_string();
            let seed = df.column("seed").unwrap().i64().unwrap().get(0).unwrap();
            let cell = (text("algorithm"), text("benchmark"), seed);
            (cell, df.drop_many(["job_key", "algorithm", "algorithm_params"]))
        })
        .collect()
}

/// docs/your-method.md as written: an extension's numpy rewrites of the paper's `random`
/// and `straddle` give the built-in trajectories bit for bit, and its LinUCB the built-in
/// LinUCB's arms and regret, each in one sweep with the built-in algorithms through a
/// coordinator, a Rust worker and Python workers; a method armada lacks has its rows in
/// the final table; each job ran on the worker of its algorithm.
#[test]
fn your_method_runs_in_a_sweep_beside_the_papers_methods() {
    the_guide_runs(bindings_python(), &Launcher::workspace());
}

/// The guide's test, with the SDK and bindings of `python` and the armada of `launcher`
/// (tests/integration/wheels.rs: all three from wheels).
pub(crate) fn the_guide_runs(python: &Path, launcher: &Launcher) {
    let guide = std::fs::read_to_string(common::manifest_dir().join("docs/your-method.md")).unwrap();
    let files = guide_files(&guide);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["my_lse.py", "my_bandit.py", "lse-vs-mine.toml", "bandits-vs-mine.toml", "compare.py"]);
    // The guide's commands, as it gives them (with free ports here).
    let url = "http://127.0.0.1:7070";
    let commands = [
        "pip install ./workers/python polars maturin".to_string(),
        "(cd workers/bindings && maturin develop)".to_string(),
        "armada serve --listen 127.0.0.1:7070 --data armada-data &".to_string(),
        format!("armada worker --coordinator {url} &"),
        format!("python -m armada_sdk.worker my_lse:EXTENSION --coordinator {url} --slots 1 &"),
        format!("python -m armada_sdk.worker my_bandit:EXTENSION --coordinator {url} --slots 1 &"),
        format!("armada submit lse-vs-mine.toml --coordinator {url}"),
        format!("armada submit bandits-vs-mine.toml --coordinator {url}"),
        format!("armada watch lse-vs-mine --coordinator {url}"),
        format!("armada watch bandits-vs-mine --coordinator {url}"),
        "python compare.py armada-data".to_string(),
    ];
    for command in &commands {
        assert!(guide.contains(command.as_str()), "the guide no longer says `{command}`");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (name, body) in &files {
        write(dir, name, body);
    }
    let coord = serve_with(launcher, &dir.join("armada-data"), 0, &[]);
    let _rust = worker_with(launcher, &coord.url, 1, &dir.join("rust.log"), &[], &[]);
    let python_worker = |extension: &str, log: &Path| {
        let child = launcher
            .command(python)
            .args(["-m", "armada_sdk.worker", extension, "--coordinator", &coord.url, "--slots", "1"])
            .current_dir(dir)
            .env("PYTHONPATH", dir)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        Proc(child)
    };
    let logs = [dir.join("lse.log"), dir.join("bandit.log")];
    let _lse = python_worker("my_lse:EXTENSION", &logs[0]);
    let _bandit = python_worker("my_bandit:EXTENSION", &logs[1]);
    let log = |i: usize| std::fs::read_to_string(&logs[i]).unwrap_or_default();
    wait_until(120, "the Python workers register", || {
        log(0).contains("registered with") && log(1).contains("registered with")
    });
    assert!(log(0).contains("family my-lse extending lse"), "{}", log(0));
    for sweep in ["lse-vs-mine.toml", "bandits-vs-mine.toml"] {
        let submitted = client_with(launcher, &["submit", dir.join(sweep).to_str().unwrap()], &coord.url, 60, &[]);
        assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    }
    for id in ["lse-vs-mine", "bandits-vs-mine"] {
        let watched = client_with(launcher, &["watch", id], &coord.url, 600, &[]);
        let table = text(&watched.stdout);
        assert!(watched.status.success(), "{table}\n{}\n{}\n{}", text(&watched.stderr), log(0), log(1));
        let ours = if id == "lse-vs-mine" {
            ["py-random", "py-straddle", "misclassification"].as_slice()
        } else {
            &["py-linucb"]
        };
        for algorithm in ours {
            assert!(table.lines().any(|l| l.contains(&format!("  {algorithm}  "))), "no row of {algorithm}:\n{table}");
        }
    }

    // `armada list` shows the extension whole: the family's benchmarks, its algorithms.
    let listed = launcher.armada().args(["list", "--coordinator", &coord.url]).output().unwrap();
    let listed = text(&listed.stdout);
    let mine = listed.split("\nfamily ").find(|f| f.starts_with("my-lse ")).unwrap_or_else(|| panic!("{listed}"));
    assert!(mine.starts_with("my-lse (version 1, extends lse, declared, digest "), "{mine}");
    assert!(mine.contains("  benchmark himmelblau: ") && mine.contains("  algorithm misclassification: "), "{mine}");
    assert!(!mine.contains("  algorithm straddle: ") && mine.contains("      loss (float): "), "{mine}");

    // compare.py, as written.
    let compared = launcher.command(python).args(["compare.py", "armada-data"]).current_dir(dir).output().unwrap();
    assert!(compared.status.success(), "{}", text(&compared.stderr));
    assert_eq!(
        text(&compared.stdout).lines().collect::<Vec<_>>(),
        [
            "py-random vs random: 6 jobs, 246 steps, the same bits in every metric",
            "py-straddle vs straddle: 6 jobs, 246 steps, the same bits in every metric",
            "py-linucb vs fixed: 2 jobs, 2002 steps, the same bits in every metric",
        ]
    );

    // The same, checked here: every LSE metric bit for bit (elapsed_ms aside)...
    let lse = jobs_by_cell(&dir.join("armada-data/lse-vs-mine"));
    assert_eq!(lse.len(), 30);
    let mut compared = 0;
    for ((algorithm, benchmark, seed), df) in &lse {
        let Some(builtin) = algorithm.strip_prefix("py-") else { continue };
        let theirs = &lse[&(builtin.to_string(), benchmark.clone(), *seed)];
        assert_same_trajectory(df, theirs, &format!("{algorithm} against {builtin} on {benchmark} seed {seed}"));
        compared += 1;
    }
    assert_eq!(compared, 12);
    // ... and not by accident: the new method chose otherwise than both.
    let chosen = |a: &str| lse[&(a.to_string(), "himmelblau".to_string(), 0)].column("chosen_index").unwrap().clone();
    assert!(!chosen("misclassification").equals_missing(&chosen("straddle")));
    assert!(!chosen("misclassification").equals_missing(&chosen("random")));
    // The bandit: the same arm every round, the regret within 1e-9 relative.
    let bandits = jobs_by_cell(&dir.join("armada-data/bandits-vs-mine"));
    for seed in [0, 1] {
        let cell = |a: &str| &bandits[&(a.to_string(), "synthetic".to_string(), seed)];
        let floats = |df: &DataFrame, c: &str| -> Vec<f64> {
            df.column(c).unwrap().f64().unwrap().into_no_null_iter().collect()
        };
        let (ours, theirs) = (cell("py-linucb"), cell("fixed"));
        // An integer metric: step 0 pulled none (null).
        let arms = |df: &DataFrame| df.column("arm").unwrap().i64().unwrap().iter().collect::<Vec<_>>();
        assert_eq!(arms(ours), arms(theirs), "seed {seed}");
        assert!(arms(ours)[0].is_none() && arms(ours)[1..].iter().all(Option::is_some) && arms(ours).len() == 1001);
        for (a, b) in floats(ours, "regret").into_iter().zip(floats(theirs, "regret")) {
            assert!((a - b).abs() <= 1e-9 * b.abs(), "seed {seed}: regret {a} against {b}");
        }
    }
    // The new method's rows are in the final table: its last loss on each benchmark over
    // the three seeds.
    let final_table = common::read(&dir.join("armada-data/lse-vs-mine/final.parquet"));
    let column = |c: &str| final_table.column(c).unwrap().as_materialized_series().clone();
    let mask = column("algorithm").equal("misclassification").unwrap() & column("metric").equal("loss").unwrap();
    let rows = final_table.filter(&mask).unwrap();
    let n = rows.column("n").unwrap().cast(&DataType::Int64).unwrap();
    assert_eq!(n.i64().unwrap().into_no_null_iter().collect::<Vec<_>>(), [3, 3], "{rows}");
    // Each job ran on the worker of its algorithm: the extension's on the Python worker,
    // under its digest; the family's on the Rust worker.
    for part in common::part_files(&dir.join("armada-data/lse-vs-mine")) {
        let rows = common::read(&part);
        let strings = |c: &str| -> Vec<String> {
            rows.column(c).unwrap().str().unwrap().iter().map(|v| v.unwrap().to_string()).collect()
        };
        let algorithm_of: BTreeMap<String, String> = strings("job_key").into_iter().zip(strings("algorithm")).collect();
        for (key, provenance) in armada::results::read_provenance(&part).unwrap() {
            let ours = ["py-random", "py-straddle", "misclassification"].contains(&algorithm_of[&key].as_str());
            assert_eq!(provenance.software.starts_with("armada-sdk "), ours, "{key}: {provenance:?}");
            assert_eq!(provenance.family_digest.is_empty(), !ours, "{key}: {provenance:?}");
        }
    }
    // The dashboard's final table and `armada report` show them beside the paper's.
    let api = format!("http://{}/api/sweeps/lse-vs-mine/final", coord.dashboard);
    let dashboard = text(&Command::new("curl").args(["-s", &api]).output().unwrap().stdout);
    assert!(dashboard.contains("misclassification") && dashboard.contains("py-straddle"), "{dashboard}");
    let report = dir.join("report.html");
    let sweep = dir.join("armada-data/lse-vs-mine");
    let written = launcher
        .armada()
        .args(["report", sweep.to_str().unwrap(), "--out", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(written.status.success(), "{}", text(&written.stderr));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("misclassification") && html.contains("py-straddle"),
        "the report lacks the extension's rows"
    );
}
