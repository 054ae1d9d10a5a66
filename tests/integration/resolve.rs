//! Sweeps that resolve their comparisons: seeds added in rounds only where a comparison is
//! open, on testkit's `normal` jobs of known means, through `armada run` and through a
//! standing coordinator killed mid-rounds.

use crate::common::cluster::{client, http_get, serve, worker, write};
use crate::common::{armada, jobs, text, wait_until};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Three variants of one benchmark: two of mean 0 (their seeds' noise shared differently)
/// and one of mean 3, compared pairwise, with a practical margin of 0.5.
fn sweep(name: &str, ms: u64) -> String {
    format!(
        r#"name = "{name}"
family = "testkit"
horizon = 1
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "normal"
params = {{ mean = 0.0, ms = {ms} }}
[[algorithms]]
name = "normal"
params = {{ mean = 0.0, shared = 0.9, ms = {ms} }}
[[algorithms]]
name = "normal"
params = {{ mean = 3.0, ms = {ms} }}
[resolve]
metric = "value"
compare = "all-pairs"
tolerance = 0.5
min_seeds = 5
batch = 5
max_seeds = 60
"#
    )
}

/// Each job's value at its last step, by (algorithm_params, seed).
fn values(sweep_dir: &Path) -> BTreeMap<(String, i64), f64> {
    let mut out = BTreeMap::new();
    for df in jobs(sweep_dir).values() {
        let last = df.height() - 1;
        let params = df.column("algorithm_params").unwrap().str().unwrap().get(last).unwrap().to_string();
        let seed = df.column("seed").unwrap().i64().unwrap().get(last).unwrap();
        let value = df.column("value").unwrap().f64().unwrap().get(last).unwrap();
        out.insert((params, seed), value);
    }
    out
}

fn strs(df: &DataFrame, name: &str) -> Vec<String> {
    df.column(name).unwrap().str().unwrap().iter().map(|v| v.unwrap().to_string()).collect()
}

fn ints(df: &DataFrame, name: &str) -> Vec<i64> {
    df.column(name).unwrap().i64().unwrap().iter().map(|v| v.unwrap()).collect()
}

fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    df.column(name).unwrap().f64().unwrap().iter().collect()
}

#[test]
fn a_resolving_sweep_adds_seeds_only_where_comparisons_are_open() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "resolving.toml", &sweep("resolving", 0));
    let out_dir = tmp.path().join("out");
    let out = armada(&["run", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sweep_dir = out_dir.join("resolving");
    let table = crate::common::read(&sweep_dir.join("comparisons.parquet"));
    let (a, b) = (strs(&table, "algorithm_params_a"), strs(&table, "algorithm_params_b"));
    let verdicts = strs(&table, "verdict");
    let (n, seeds_a, seeds_b) = (ints(&table, "n"), ints(&table, "seeds_a"), ints(&table, "seeds_b"));
    let (mean, lower, upper) = (floats(&table, "mean_difference"), floats(&table, "lower"), floats(&table, "upper"));
    assert_eq!(table.height(), 3, "{table}");
    // The pairs in the cells' order: (0, 0.9-shared), (0, 3), (0.9-shared, 3).
    let zero = r#"{"mean":0.0,"ms":0,"sd":1.0,"shared":0.5}"#;
    let zero_shared = r#"{"mean":0.0,"ms":0,"sd":1.0,"shared":0.9}"#;
    let three = r#"{"mean":3.0,"ms":0,"sd":1.0,"shared":0.5}"#;
    assert_eq!((a[0].as_str(), b[0].as_str()), (zero, zero_shared));
    assert_eq!((a[1].as_str(), b[1].as_str()), (zero, three));
    assert_eq!((a[2].as_str(), b[2].as_str()), (zero_shared, three));
    // A difference of 3 standard deviations is ordered, the right way, within two rounds.
    assert_eq!((verdicts[1].as_str(), verdicts[2].as_str()), ("a<b", "a<b"), "{table}");
    assert!(n[1] <= 10 && n[2] <= 10, "{table}");
    // Equal means are never ordered: equivalent within the margin, or unresolved at max_seeds.
    assert!(["equivalent", "unresolved"].contains(&verdicts[0].as_str()), "{table}");
    // The mean-3 cell stopped when its comparisons were settled; the others went on.
    assert!(seeds_b[1] < seeds_a[0] && seeds_b[1] == seeds_b[2], "{table}");
    assert_eq!(seeds_a[0], n[0]);

    // Every comparison recomputed from the trajectories: the pairs of seeds both cells
    // have, and their mean difference.
    let values = values(&sweep_dir);
    let seeds_of = |params: &str| values.keys().filter(|(p, _)| p == params).map(|(_, s)| *s).collect::<Vec<_>>();
    for (i, (pa, pb)) in a.iter().zip(&b).enumerate() {
        let (sa, sb) = (seeds_of(pa), seeds_of(pb));
        assert_eq!(sa, (0..seeds_a[i]).collect::<Vec<_>>(), "a cell's seeds are 0..n");
        assert_eq!(sb, (0..seeds_b[i]).collect::<Vec<_>>(), "a cell's seeds are 0..n");
        let pairs: Vec<f64> = sa
            .iter()
            .filter(|s| sb.contains(s))
            .map(|&s| values[&(pa.clone(), s)] - values[&(pb.clone(), s)])
            .collect();
        assert_eq!(pairs.len() as i64, n[i]);
        let m = pairs.iter().sum::<f64>() / pairs.len() as f64;
        assert!((m - mean[i].unwrap()).abs() < 1e-12, "comparison {i}: {m} against {:?}", mean[i]);
        let (lo, hi) = (lower[i].unwrap(), upper[i].unwrap());
        assert!(lo <= m && m <= hi && ((lo + hi) / 2.0 - m).abs() < 1e-9, "{table}");
    }
    let jobs_run: i64 = values.len() as i64;
    assert_eq!(jobs_run, seeds_a[0] + seeds_b[0] + seeds_b[1]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("resolving: {jobs_run} jobs after its rounds, {jobs_run} done")), "{stderr}");
    assert!(text(&out.stdout).contains("a<b"), "the verdicts are printed: {}", text(&out.stdout));

    // The dashboard serves the verdicts beside the final table, the open ones first.
    let coord = serve(&out_dir, 0, &[]);
    let body = http_get(&coord.dashboard, "/api/sweeps/resolving/final");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let shown: Vec<(&str, &str, &str)> = json["comparisons"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["a_params"].as_str().unwrap(), r["b_params"].as_str().unwrap(), r["verdict"].as_str().unwrap()))
        .collect();
    let written: Vec<(&str, &str, &str)> =
        (0..3).map(|i| (a[i].as_str(), b[i].as_str(), verdicts[i].as_str())).collect();
    assert_eq!((shown, json["comparisons"]["total"].as_u64()), (written, Some(3)), "{body}");
    drop(coord);
    // The offline report draws them: its table, as a headless browser renders it.
    let report = sweep_dir.join("report.html");
    match ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().find(|p| Path::new(p).exists()) {
        None => eprintln!("skipped: the report's comparisons in a browser need Chromium (Debian's `chromium`)"),
        Some(chromium) => {
            let dom = std::process::Command::new(chromium)
                .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
                .arg(format!("file://{}", report.display()))
                .output()
                .unwrap();
            let dom = text(&dom.stdout);
            let table = dom.split("id=\"comparisons\"").nth(1).and_then(|t| t.split("</table>").next()).unwrap_or("");
            let cells: Vec<&str> = table.split("<td").skip(1).collect();
            assert_eq!(cells.len(), 3 * 7, "three rows of seven cells: {table}");
            for (i, v) in verdicts.iter().enumerate() {
                let v = v.replace('<', "&lt;").replace('>', "&gt;");
                assert!(cells[i * 7 + 3].contains(&format!(">{v}<")), "row {i}: {}", cells[i * 7 + 3]);
            }
        }
    }

    // Run again: every seed is reused, and the rounds decide the same.
    let again = armada(&["run", file.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--quiet"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(crate::common::read(&sweep_dir.join("comparisons.parquet")), table);
    assert_eq!(crate::common::job_count(&sweep_dir), jobs_run as usize);
}

/// Killed in its second round, a standing coordinator resumes the rounds after its
/// restart, to the comparisons of an uninterrupted run, byte for byte.
#[test]
fn a_coordinator_killed_mid_rounds_resumes_to_the_uninterrupted_result() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "rounds.toml", &sweep("rounds", 20));
    let reference = tmp.path().join("reference");
    let out = armada(&["run", file.to_str().unwrap(), "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let data = tmp.path().join("data");
    let mut coord = serve(&data, 0, &["--lease-ttl-ms", "800"]);
    let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[]);
    let submitted = client(&["submit", file.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let sweep_dir = data.join("rounds");
    // The first round is 3 cells x 5 seeds.
    // Not while the first round's summaries are written: a coordinator killed then leaves
    // the sweep for `armada summarize` (it may have run out of memory there).
    let summarizing = sweep_dir.join(armada::results::SUMMARIZING_MARKER);
    wait_until(60, "a job of the second round, summaries written", || {
        crate::common::job_count(&sweep_dir) > 15 && !summarizing.exists()
    });
    coord.proc.kill9();
    let total = crate::common::job_count(&reference.join("rounds"));
    assert!(crate::common::job_count(&sweep_dir) < total, "the rounds ended before the kill; make the jobs slower");
    let coord = serve(&data, coord.port, &["--lease-ttl-ms", "800"]);
    let watched = client(&["watch", "rounds", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let printed = text(&watched.stdout);
    // Seen under a loaded CI when the kill fell between judging a round and storing the
    // next (the restart did not judge again; src/coordinator/scheduler/tests.rs now kills
    // at every write); should it recur, say why.
    let resumed = crate::common::job_count(&sweep_dir);
    if resumed != total {
        let log = std::fs::read_to_string(data.with_extension(format!("serve-{}.log", coord.port))).unwrap_or_default();
        panic!("the resumed rounds stopped at {resumed} of {total} jobs; watch printed:\n{printed}\nthe restarted coordinator's log:\n{log}");
    }
    assert!(printed.contains("verdict") && printed.matches("a<b").count() == 2, "the verdicts are printed: {printed}");
    let comparisons = |dir: &Path| std::fs::read(dir.join("rounds").join("comparisons.parquet")).unwrap();
    assert_eq!(comparisons(&data), comparisons(&reference));
    // A client elsewhere fetches them.
    let fetched = tmp.path().join("fetched");
    let args = ["fetch", "rounds", "--table", "comparisons", "--out", fetched.to_str().unwrap()];
    let out = client(&args, &coord.url, 30);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(comparisons(&fetched), comparisons(&reference));
}
