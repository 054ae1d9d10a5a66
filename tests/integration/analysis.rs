//! The analysis scripts (`analysis/lse.py`, `lse_fig2.py`, `cdt.py`, `safe.py`, `bocvs.py`) on
//! their papers' quick sweeps: each sweep is run by the real binary, each script on its results, in a venv
//! under the target directory with `analysis/requirements.txt` (made on first use and kept
//! while the file is unchanged). Every figure must be a PNG of the size its panels give, every
//! table a Markdown file with the sweep's rows, all in the sweep's `figures/` directory and
//! nowhere else: not in the script's working directory, not in `analysis/`. Each sweep's
//! HTML counterpart, `armada report`'s `report.html`, is checked against its final table.
//!
//! Needs `python3` with `venv` (Debian: `python3-venv`) and the package registry. Without
//! them the tests say they are skipped and pass, unless `ARMADA_REQUIRE_PYTHON=1` (as `.ci/run`
//! sets). `bocvs-fig1-quick` takes minutes, so only `ARMADA_ANALYSIS_SLOW=1` adds it;
//! `bocvs-code-setting-quick` covers every path of `bocvs.py` by default.

use crate::common;

use common::{armada, text};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

/// The venv's python, or `None` when this machine cannot make one (the test is skipped,
/// unless ARMADA_REQUIRE_PYTHON=1).
fn python() -> Option<PathBuf> {
    // Debian's python3 lacks ensurepip (so `python3 -m venv` fails) until python3-venv is in.
    let usable =
        Command::new("python3").args(["-c", "import ensurepip, venv"]).output().is_ok_and(|o| o.status.success());
    if !usable {
        assert!(
            std::env::var("ARMADA_REQUIRE_PYTHON").as_deref() != Ok("1"),
            "python3 with venv and ensurepip is needed (Debian: apt-get install python3-venv)"
        );
        eprintln!("SKIPPED: python3 -m venv is not available (Debian: python3-venv); see ARMADA_REQUIRE_PYTHON");
        return None;
    }
    let started = Instant::now();
    let python = common::python_venv("venv-analysis", &common::manifest_dir().join("analysis/requirements.txt"));
    eprintln!("venv-analysis ready in {:.1} s", started.elapsed().as_secs_f64());
    Some(python)
}

/// Runs `sweeps/<name>.toml` into `out` with the real binary; returns the sweep's directory.
fn run_quick(name: &str, out: &Path) -> PathBuf {
    let started = Instant::now();
    let run = armada(&["run", &format!("sweeps/{name}.toml"), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(run.status.success(), "armada run {name}:\n{}", text(&run.stderr));
    eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
    let dir = out.join(name);
    assert!(dir.join("final.parquet").is_file(), "{name} wrote no final.parquet");
    check_report(&dir);
    dir
}

/// `armada report`: the sweep's HTML counterpart holds a row per cell of its final table
/// and a curve per cell and metric, in one file that loads nothing from elsewhere.
fn check_report(dir: &Path) {
    let report = armada(&["report", dir.to_str().unwrap()]);
    assert!(report.status.success(), "armada report {}:\n{}", dir.display(), text(&report.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(!html.contains("src=\"") && !html.contains("href=\"http"), "{}: the report loads files", dir.display());
    let data = html.split("window.ARMADA_REPORT = ").nth(1).and_then(|r| r.split(";</script>").next()).unwrap();
    let data: serde_json::Value = serde_json::from_str(data).unwrap();
    let last = common::read(&dir.join("final.parquet"));
    let cells: BTreeSet<(String, String)> = (0..last.height())
        .map(|i| {
            let get = |c: &str| last.column(c).unwrap().str().unwrap().get(i).unwrap().to_string();
            (get("benchmark") + &get("benchmark_params"), get("algorithm") + &get("algorithm_params"))
        })
        .collect();
    let views = &data["views"];
    assert_eq!(views["final"]["rows"].as_array().unwrap().len(), cells.len(), "{}", dir.display());
    let metrics = views["metrics"].as_array().unwrap();
    assert!(!metrics.is_empty(), "{}", dir.display());
    for metric in metrics {
        let curves = &views["curves"][metric.as_str().unwrap()];
        let lines: usize =
            curves["panels"].as_array().unwrap().iter().map(|p| p["lines"].as_array().unwrap().len()).sum();
        assert_eq!(lines, cells.len(), "{}: curves of {metric}", dir.display());
    }
}

/// Every file under `dir`, with its length and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path);
            } else {
                files.insert(path, (meta.len(), meta.modified().unwrap()));
            }
        }
    }
    files
}

/// Runs `python analysis/<script> args` from an empty working directory and returns its
/// stdout. It must succeed, warn of nothing, and leave the working directory and `analysis/`
/// as they were.
fn script(python: &Path, name: &str, args: &[&Path], extra: &[&str]) -> String {
    let cwd = tempfile::tempdir().unwrap();
    let analysis = common::manifest_dir().join("analysis");
    let before = snapshot(&analysis);
    let started = Instant::now();
    let out =
        Command::new(python).arg(analysis.join(name)).args(args).args(extra).current_dir(cwd.path()).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
    // safe.py warns when a replay differs from its shard or a figure is skipped; Python
    // warns of a legend without entries and the like.
    for bad in ["warning:", "traceback", "skipped"] {
        assert!(!stderr.to_lowercase().contains(bad), "{name} says `{bad}`:\n{stderr}");
    }
    let left: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "{name} wrote into its working directory: {left:?}");
    let after = snapshot(&analysis);
    let changed: Vec<_> = before.keys().chain(after.keys()).filter(|p| before.get(*p) != after.get(*p)).collect();
    assert!(changed.is_empty(), "{name} changed files in the source tree: {changed:?}");
    stdout
}

/// Width and height of a PNG file, after checking that it is one: at least `min_bytes`, the
/// signature, an IHDR chunk first and an IEND chunk last.
fn png_size(path: &Path, min_bytes: usize) -> Result<(u32, u32), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fail = |what: &str| Err(format!("{}: {what}", path.display()));
    if bytes.len() < min_bytes.max(33) {
        return fail(&format!("{} bytes, expected at least {min_bytes}", bytes.len()));
    }
    if &bytes[..8] != b"\x89PNG\r\n\x1a\n" {
        return fail("not a PNG signature");
    }
    if &bytes[8..16] != b"\0\0\0\x0dIHDR" {
        return fail("no IHDR chunk first");
    }
    if &bytes[bytes.len() - 12..] != b"\0\0\0\0IEND\xae\x42\x60\x82" {
        return fail("no IEND chunk last (truncated?)");
    }
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    Ok((be(16), be(20)))
}

/// `dir/figures/<name>` is a PNG of `size` pixels (figure size x dpi: the number of panels).
fn check_figure(dir: &Path, name: &str, size: (u32, u32)) -> Result<(), String> {
    let path = dir.join("figures").join(name);
    let (w, h) = png_size(&path, 10_000)?;
    if w.abs_diff(size.0) > 2 || h.abs_diff(size.1) > 2 {
        return Err(format!(
            "{}: {w} x {h} pixels, expected {} x {} (a panel missing or added?)",
            path.display(),
            size.0,
            size.1
        ));
    }
    Ok(())
}

fn assert_figure(dir: &Path, name: &str, size: (u32, u32)) {
    check_figure(dir, name, size).unwrap_or_else(|e| panic!("{e}"));
}

/// `dir/figures/` holds exactly these files.
fn check_files(dir: &Path, names: &[&str]) -> Result<(), String> {
    let figures = dir.join("figures");
    let found: BTreeSet<String> = std::fs::read_dir(&figures)
        .map_err(|e| format!("{}: {e}", figures.display()))?
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let wanted: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    if found != wanted {
        return Err(format!("{} holds {found:?}, expected {wanted:?}", figures.display()));
    }
    Ok(())
}

fn assert_files(dir: &Path, names: &[&str]) {
    check_files(dir, names).unwrap_or_else(|e| panic!("{e}"));
}

/// A Markdown table: its header and its rows, cells trimmed.
#[derive(Debug)]
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// The values of one column, by header name (the first column of that name).
    fn column(&self, name: &str) -> Vec<&str> {
        let i = self.header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}: {self:?}"));
        self.rows.iter().map(|r| r[i].as_str()).collect()
    }

    /// The rows' first `n` cells.
    fn keys(&self, n: usize) -> Vec<Vec<&str>> {
        self.rows.iter().map(|r| r[..n].iter().map(String::as_str).collect()).collect()
    }
}

/// The Markdown tables of `dir/figures/<name>`, in order; none is an error.
fn read_tables(dir: &Path, name: &str) -> Result<Vec<Table>, String> {
    let path = dir.join("figures").join(name);
    let content = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cells = |line: &str| -> Vec<String> {
        line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect()
    };
    let lines: Vec<&str> = content.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let is_rule = lines[i + 1].starts_with("|-") || lines[i + 1].starts_with("|:-");
        if lines[i].starts_with('|') && is_rule {
            let header = cells(lines[i]);
            let mut rows = Vec::new();
            i += 2;
            while i < lines.len() && lines[i].starts_with('|') {
                let row = cells(lines[i]);
                if row.len() != header.len() {
                    return Err(format!("{}: a row of {} cells under {header:?}", path.display(), row.len()));
                }
                rows.push(row);
                i += 1;
            }
            found.push(Table { header, rows });
        } else {
            i += 1;
        }
    }
    if found.is_empty() {
        return Err(format!("{}: no Markdown table in:\n{content}", path.display()));
    }
    Ok(found)
}

fn tables(dir: &Path, name: &str) -> Vec<Table> {
    read_tables(dir, name).unwrap_or_else(|e| panic!("{e}"))
}

/// Every cell of these columns holds a value (the tables print "-" for a missing cell).
fn check_filled(table: &Table, columns: &[&str]) -> Result<(), String> {
    for name in columns {
        for (row, value) in table.column(name).iter().enumerate() {
            if value.is_empty() || *value == "-" {
                return Err(format!("column {name} is empty in row {row}: {table:?}"));
            }
        }
    }
    Ok(())
}

fn assert_filled(table: &Table, columns: &[&str], what: &str) {
    check_filled(table, columns).unwrap_or_else(|e| panic!("{what}: {e}"));
}

const BOTTOMS: [&str; 7] = ["LinUCB", "LinTS", "UCB-GLM", "GLM-TSL", "Laplace-TS", "GLOC", "SGD-TS"];

/// The CDT paper's 14 settings in its table order: (algorithm, env).
fn cdt_settings() -> Vec<Vec<&'static str>> {
    BOTTOMS.iter().flat_map(|b| [vec![*b, "Sim"], vec![*b, "MovieLens"]]).collect()
}

#[test]
fn lse_draws_every_figure_of_its_quick_sweeps() {
    let Some(python) = python() else { return };
    let out = tempfile::tempdir().unwrap();
    let sweeps = ["lse-fig3-quick", "lse-fig4-quick", "lse-fig5-quick", "lse-finite-quick"];
    let dirs: Vec<PathBuf> = sweeps.iter().map(|s| run_quick(s, out.path())).collect();
    let args: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let stdout = script(&python, "lse.py", &args, &[]);
    // Figure 1 is analytic (three panels); the block figures have two rows and a column per
    // benchmark (4.6 x 6.4 inches each at 120 dpi).
    let fig3 = ["gp-sample-path", "sinusoidal", "himmelblau"].as_slice();
    for (dir, block, size, benchmarks, horizon) in [
        (&dirs[0], "fig3.png", (1656, 768), fig3, "30"),
        (&dirs[1], "fig4.png", (1656, 768), ["sphere-5d", "rosenbrock-5d", "styblinski-tang-5d"].as_slice(), "20"),
        (&dirs[2], "fig5.png", (552, 768), ["carrier-lifetime"].as_slice(), "10"),
        (&dirs[3], "fig3.png", (1656, 768), fig3, "50"),
    ] {
        assert_files(dir, &["fig1.png", block, "claims.md"]);
        assert_figure(dir, "fig1.png", (1560, 432));
        assert_figure(dir, block, size);
        check_lse_claims(&tables(dir, "claims.md")[0], benchmarks, horizon);
        for name in ["fig1.png", block, "claims.md"] {
            let path = dir.join("figures").join(name);
            assert!(stdout.lines().any(|l| Path::new(l) == path), "lse.py did not print {}:\n{stdout}", path.display());
        }
    }
}

/// Figure 2 from its full sweep (300 runs of 20 steps, about a second): the figure, and the
/// table of where each method queried. The script refits every run's GP in numpy from the
/// recorded observations and must make armada's choice at every step (an independent GP and
/// acquisition; a wrong `y`, posterior or tie rule on either side parts them). The table
/// shows the paper's pattern: the small fixed beta stays at one bump, the large one covers
/// the domain, the randomized straddle lies between.
#[test]
fn lse_fig2_refits_every_choice_of_armada_in_numpy() {
    let Some(python) = python() else { return };
    let out = tempfile::tempdir().unwrap();
    let dir = run_quick("lse-fig2", out.path());
    let stdout = script(&python, "lse_fig2.py", &[dir.as_path()], &[]);
    assert_figure(&dir, "fig2.png", (1656, 720));
    assert!(stdout.contains("5700 of 5700 choices the same"), "{stdout}");
    let table = &tables(&dir, "fig2-queries.md")[0];
    let methods = ["Proposed (beta ~ chi2_2)", "Straddle, beta^1/2 = 1", "Straddle, beta^1/2 = 10"];
    assert_eq!(table.column("method"), methods);
    assert_eq!(table.column("runs"), ["100"; 3]);
    let mean = |column: &str| -> Vec<f64> {
        table.column(column).iter().map(|c| c.split(' ').next().unwrap().parse().unwrap()).collect()
    };
    let covered = mean("domain within 1 of a query");
    assert!(covered[1] < covered[0] && covered[0] < covered[2], "coverage {covered:?}");
    let both = mean("runs with queries near both bumps");
    assert!(both[1] == 0.0 && both[2] == 1.0 && both[0] > 0.5, "both bumps {both:?}");
}

/// MILE replayed by `lse_mile.py`: an independent numpy MILE, refitted from the recorded
/// observations, has armada's choice as a maximiser at every step (exactly, or tied to 1e-9
/// of a point), and the refit's loss is armada's.
#[test]
fn lse_mile_replay_finds_armadas_choice_a_maximiser_at_every_step() {
    let Some(python) = python() else { return };
    let out = tempfile::tempdir().unwrap();
    let dir = run_quick("lse-mile-check-quick", out.path());
    let stdout = script(&python, "lse_mile.py", &[dir.as_path()], &[]);
    let table = &tables(&dir, "mile-check.md")[0];
    assert_eq!(table.column("seed"), ["0", "1"]);
    for (same, tied) in table.column("choices the numpy maximiser").iter().zip(table.column("tied with it")) {
        let n: u32 = same.parse::<u32>().unwrap() + tied.parse::<u32>().unwrap();
        assert_eq!(n, 30, "{stdout}");
    }
    assert_eq!(table.column("not the maximiser"), ["0", "0"], "{stdout}");
    for diff in table.column("largest difference from numpy's r_t") {
        assert!(diff.parse::<f64>().unwrap() < 1e-12, "{stdout}");
    }
}

/// `claims.md` of one block: for every benchmark and metric, up to five checkpoints ending
/// at the horizon, and each comparison it names ahead of the proposed method by more than
/// two standard errors.
fn check_lse_claims(table: &Table, benchmarks: &[&str], horizon: &str) {
    let keys = table.keys(3);
    for bench in benchmarks {
        for metric in ["loss", "fscore"] {
            let ts: Vec<&str> = keys.iter().filter(|k| k[0] == *bench && k[1] == metric).map(|k| k[2]).collect();
            assert!((1..=5).contains(&ts.len()), "{bench} {metric}: checkpoints {ts:?}");
            assert_eq!(ts.last(), Some(&horizon), "{bench} {metric}: the last checkpoint is not the horizon");
        }
    }
    assert_filled(table, &["proposed: mean ± se", "best there"], "claims.md");
    check_gaps(table, "beats Proposed by > 2 se", "as good or better");
}

/// A claims column listing the curves more than two standard errors from the proposed
/// method, as "name (x.y se)" entries joined by ", ", or `none` when there is none.
fn check_gaps(table: &Table, column: &str, none: &str) -> Vec<String> {
    let mut names = Vec::new();
    for verdict in table.column(column) {
        if verdict == none {
            continue;
        }
        for entry in verdict.split(", ") {
            let (name, se) = entry
                .rsplit_once(" (")
                .and_then(|(name, r)| Some((name, r.strip_suffix(" se)")?.parse::<f64>().ok()?)))
                .unwrap_or_else(|| panic!("claims.md: cannot read {entry:?} in {column}"));
            // More than 2, printed to one decimal: 2.0 at least.
            assert!(se >= 2.0, "claims.md names {entry:?} in {column}, not more than 2 se away");
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn cdt_writes_every_table_and_figure_of_its_quick_sweeps() {
    let Some(python) = python() else { return };
    let out = tempfile::tempdir().unwrap();
    let run = |name: &str| run_quick(name, out.path());
    let main = run("cdt-main-quick");
    let main_arg = ["--main", main.to_str().unwrap()];
    let cdt = |dir: &Path, extra: &[&str]| script(&python, "cdt.py", &[dir], extra);

    let stdout = cdt(&main, &[]);
    assert_files(&main, &["final_regret.md", "table1.md", "fig2.png"]);
    assert!(stdout.contains(&format!("wrote {}", main.join("figures/fig2.png").display())), "{stdout}");
    // Figure 2: 7 bottoms x 2 environments, 3.3 x 3.0 inches each at 110 dpi.
    assert_figure(&main, "fig2.png", (2541, 660));
    let regret = tables(&main, "final_regret.md");
    assert_eq!(regret[0].header[..5], ["Algorithm", "Env", "n", "Theory", "CDT"]);
    assert_eq!(regret[0].keys(2), cdt_settings());
    assert_filled(&regret[0], &["Theory", "CDT", "TL/Synd.", "OP", "lowest (ours)"], "final_regret.md");
    assert!(regret[0].column("n").iter().all(|n| *n == "2"), "{:?}", regret[0]);
    // GLOC has no Theory value: its Theory cell is named a placeholder and never ranked lowest;
    // every other bottom's is a plain Theory value.
    for (row, (theory, lowest)) in
        regret[0].rows.iter().zip(regret[0].column("Theory").into_iter().zip(regret[0].column("lowest (ours)")))
    {
        let gloc = row[0] == "GLOC";
        assert_eq!(theory.ends_with("(placeholder α = 1)"), gloc, "{row:?}");
        assert!(!(gloc && lowest == "Theory"), "{row:?}");
    }
    assert_eq!(regret[1].header[0], "claim", "the ranking claims follow: {:?}", regret[1]);
    let table1 = &tables(&main, "table1.md")[0];
    assert_eq!(table1.keys(2), cdt_settings());
    assert_filled(table1, &["Theory s", "TL s", "OP s", "CDT s"], "table1.md");

    let table4 = run("cdt-table4-quick");
    cdt(&table4, &main_arg);
    assert_files(&table4, &["table4.md"]);
    let t = &tables(&table4, "table4.md")[0];
    assert_eq!(t.keys(2), cdt_settings());
    // C2 from this sweep, C1 from --main.
    assert_filled(t, &["TL C2", "OP C2", "TL C1", "OP C1"], "table4.md");

    let ablation = run("cdt-ablation-quick");
    cdt(&ablation, &main_arg);
    assert_files(&ablation, &["table5.md", "table6.md"]);
    let t5 = &tables(&ablation, "table5.md")[0];
    assert_eq!(t5.keys(2), cdt_settings());
    assert_filled(t5, &["T1=0", "T1=T^{2/(p+3)}", "diff (ours)"], "table5.md");
    let t6 = &tables(&ablation, "table6.md")[0];
    assert_eq!(t6.keys(2), cdt_settings());
    assert_filled(t6, &["k=1", "k=2", "k=3", "best k (ours)"], "table6.md");

    let yahoo = run("cdt-yahoo-quick");
    cdt(&yahoo, &[]);
    // per_seed.parquet: each job's final value, for the paired differences (and to commit).
    assert_files(&yahoo, &["table2.md", "per_seed.parquet"]);
    let t2 = &tables(&yahoo, "table2.md")[0];
    let paired = &tables(&yahoo, "table2.md")[2];
    let bottoms: Vec<Vec<&str>> =
        ["UCB-GLM", "GLM-TSL", "Laplace-TS", "GLOC", "SGD-TS"].iter().map(|b| vec![*b]).collect();
    assert_eq!(paired.keys(1), bottoms, "the paired differences, a row per bottom");
    assert_filled(paired, &["CDT - runner-up", "CDT - Theory", "TL/Syndicated - OP"], "table2.md");
    let expected: Vec<Vec<&str>> = ["UCB-GLM", "GLM-TSL", "Laplace-TS", "GLOC", "SGD-TS"]
        .iter()
        .flat_map(|b| ["Theory", "CDT", "OP", "TL/Syndicated"].map(|t| vec![*b, t]))
        .collect();
    assert_eq!(t2.keys(2), expected);
    assert_filled(t2, &["ours", "ours CTR sum"], "table2.md");
    // Every method is ranked but GLOC's placeholder Theory, named as such.
    for (row, rank) in t2.rows.iter().zip(t2.column("rank (ours)")) {
        let placeholder = row[0] == "GLOC" && row[1] == "Theory";
        assert_eq!(rank == "-", placeholder, "{row:?}");
        assert_eq!(row[3].ends_with("(placeholder α = 1)"), placeholder, "{row:?}");
    }

    let grid = run("cdt-grid-quick");
    cdt(&grid, &[]);
    assert_files(&grid, &["table3.md"]);
    let t3 = &tables(&grid, "table3.md")[0];
    let expected: Vec<Vec<&str>> = ["60", "120"]
        .iter()
        .flat_map(|k| ["LinUCB", "LinTS", "UCB-GLM", "GLOC", "GLM-TSL"].map(|b| vec![b, *k]))
        .collect();
    assert_eq!(t3.keys(2), expected);
    assert!(t3.column("values run").iter().all(|v| *v == "21 of 21"), "{t3:?}");
    assert_filled(t3, &["best value (ours)", "regret at ours", "regret at 1"], "table3.md");

    let switching = run("cdt-switching-quick");
    cdt(&switching, &[]);
    assert_files(&switching, &["switching.md", "fig4.png"]);
    // Figure 4: 2 shapes x 2 sets of constants, 5.5 x 3.8 inches each at 110 dpi.
    assert_figure(&switching, "fig4.png", (1210, 836));
    let sw = &tables(&switching, "switching.md")[0];
    let expected: Vec<Vec<&str>> = ["triangle", "sine"]
        .iter()
        .flat_map(|s| ["paper", "code"].map(move |k| (*s, k)))
        .flat_map(|(s, k)| ["Oracle", "Zooming TS-R", "Zooming"].map(|a| vec![s, k, a]))
        .collect();
    assert_eq!(sw.keys(3), expected);
    assert!(sw.column("n").iter().all(|n| *n == "2"), "{sw:?}");

    let lipcheck = run("cdt-lipcheck-quick");
    cdt(&lipcheck, &[]);
    // curve.parquet: the curve the table and figure are drawn from (to commit).
    assert_files(&lipcheck, &["fig3.md", "fig3.png", "curve.parquet"]);
    // Figure 3: LinUCB and LinTS side by side, 5.5 x 3.8 inches each at 110 dpi.
    assert_figure(&lipcheck, "fig3.png", (1210, 418));
    let f3 = &tables(&lipcheck, "fig3.md")[0];
    assert_eq!(f3.keys(2), [["LinUCB", "1"], ["LinTS", "1"]]);
    let columns = [
        "best alpha",
        "max slope between neighbours (per unit alpha)",
        "largest difference between neighbours",
        "falls between neighbours",
    ];
    assert_filled(f3, &columns, "fig3.md");

    let refcode = run("cdt-sim-refcode-quick");
    cdt(&refcode, &[]);
    assert_files(&refcode, &["refcode.md"]);
    let rc = &tables(&refcode, "refcode.md")[0];
    assert_eq!(rc.keys(2), BOTTOMS.iter().map(|b| vec![*b, "Sim"]).collect::<Vec<_>>());
    assert_filled(rc, &["refcode", "refcode-fixed", "paper CDT"], "refcode.md");
}

/// armada-safe's `trace` example (safe.py replays jobs with it), built by cargo into this
/// target directory. `--workspace` resolves features as `cargo test --workspace` does, so
/// after it only the example itself is compiled (`-p armada-safe` would rebuild dependencies
/// with fewer features).
fn trace_example() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let started = Instant::now();
    let built = Command::new(env!("CARGO"))
        .args(["build", "--workspace", "--example", "trace", "--message-format=json-render-diagnostics"])
        .arg("--target-dir")
        .arg(target)
        .current_dir(common::manifest_dir())
        .output()
        .unwrap();
    assert!(built.status.success(), "cargo build --workspace --example trace:\n{}", text(&built.stderr));
    eprintln!("trace example built in {:.1} s", started.elapsed().as_secs_f64());
    text(&built.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "trace")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the trace executable")
}

#[test]
fn safe_draws_figures_1_to_6_and_writes_its_table() {
    let Some(python) = python() else { return };
    let trace = trace_example();
    let out = tempfile::tempdir().unwrap();
    let sweeps = ["safe-fig2-quick", "safe-fig4-quick", "safe-fig5-quick", "safe-fig6-quick"];
    let dirs: Vec<PathBuf> = sweeps.iter().map(|s| run_quick(s, out.path())).collect();
    let args: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    // With --trace-bin, Figures 1 and 3 replay a job each and check the replay's actions
    // against the shard's: a mismatch prints a warning, which fails the script's check.
    let stdout = script(&python, "safe.py", &args, &["--trace-bin", trace.to_str().unwrap()]);
    // Everything in the first sweep's figures/.
    let first = &dirs[0];
    let names = ["fig1.png", "fig2.png", "fig3.png", "fig4.png", "fig5.png", "fig6.png", "final_values.md", "trend.md"];
    assert_files(first, &names);
    for name in names {
        let path = first.join("figures").join(name);
        assert!(stdout.lines().any(|l| Path::new(l) == path), "safe.py did not print {}:\n{stdout}", path.display());
    }
    for dir in &dirs[1..] {
        assert!(!dir.join("figures").exists(), "safe.py wrote into {}", dir.display());
    }
    // Figures 1 and 3: 2 algorithms x (f, g) of 2 benchmarks, 5.2 x 4.2 inches each at 120
    // dpi; Figure 2: 2 benchmarks x 3 regrets; 4: 3 panels; 5: 2 benchmarks; 6: 2 regrets.
    for (name, size) in [
        ("fig1.png", (2496, 1008)),
        ("fig2.png", (1680, 912)),
        ("fig3.png", (2496, 1008)),
        ("fig4.png", (1680, 456)),
        ("fig5.png", (1320, 456)),
        ("fig6.png", (1320, 456)),
    ] {
        assert_figure(first, name, size);
    }

    let table = &tables(first, "final_values.md")[0];
    assert_eq!(table.header[..6], ["benchmark", "grid", "algorithm", "c", "runs", "T"]);
    let got: BTreeSet<Vec<&str>> =
        table.rows.iter().map(|r| vec![r[0].as_str(), r[2].as_str(), r[3].as_str()]).collect();
    assert_eq!(got.len(), table.rows.len(), "a row twice: {table:?}");
    let mut expected = BTreeSet::new();
    for bench in ["clinical", "synthetic-2d"] {
        for case in ["M-SafeOpt (Case 1)", "M-SafeOpt (Case 2)"] {
            for c in ["0.1", "0.5", "1", "2", "5"] {
                expected.insert(vec![bench, case, c]);
            }
        }
        expected.extend([vec![bench, "SafeOpt-MC", "1"], vec![bench, "PredVar", "1"]]);
    }
    for alg in ["M-SafeOpt (Case 1)", "SafeOpt-MC", "PredVar"] {
        expected.insert(vec!["synthetic-3d", alg, "1"]);
    }
    // The pendulum's baselines are in fig5 and fig6 both: pooled, each job once.
    for alg in ["M-SafeOpt (Case 1)", "M-SafeOpt (Case 2)", "SafeOpt-MC", "PredVar"] {
        expected.insert(vec!["pendulum", alg, "1"]);
    }
    assert_eq!(got, expected);
    assert!(table.column("runs").iter().all(|n| *n == "2"), "{table:?}");
    assert!(table.column("T").iter().all(|t| *t == "10"), "{table:?}");
    assert_filled(table, &["R_T/T", "R'_T/T", "R^X_T/T", "violations", "s/run"], "final_values.md");

    // trend.md: the c = 1 cells above, each regret once, at T/5, T/2 and T (here 2, 5, 10).
    let trend = &tables(first, "trend.md")[0];
    let got: BTreeSet<Vec<&str>> = trend.keys(3).into_iter().collect();
    assert_eq!(got.len(), trend.rows.len(), "a row twice: {trend:?}");
    let nominal: BTreeSet<(&str, &str)> = expected.iter().filter(|k| k[2] == "1").map(|k| (k[0], k[1])).collect();
    let wanted: BTreeSet<Vec<&str>> =
        nominal.iter().flat_map(|(b, a)| ["R_t/t", "R'_t/t", "R^X_t/t"].map(|m| vec![*b, *a, m])).collect();
    assert_eq!(got, wanted);
    for row in &trend.rows {
        let value = |i: usize| -> f64 { row[i].parse().unwrap_or_else(|_| panic!("trend.md: {row:?}")) };
        assert_eq!(row[3], "2", "{row:?}");
        // The ratio is the value at T over the value at T/2, to the printed digits (four
        // decimals each, three for the ratio).
        let (half, end, ratio) = (value(5), value(6), value(7));
        if half > 0.0 {
            let rounding = ratio.abs() * (5e-5 / half + 5e-5 / end.abs().max(5e-5)) + 5e-4;
            assert!((ratio - end / half).abs() <= rounding, "{row:?}");
        }
    }
}

/// bocvs.py on one sweep: its two figures of `size`, its table with `labels` in every
/// setting, and its claims at fifths of `budget`; the cross-check against armada's
/// along_cum_cost.parquet must agree exactly.
fn check_bocvs(python: &Path, dir: &Path, size: (u32, u32), settings: &[[&str; 3]], labels: &[&str], budget: u32) {
    let stdout = script(python, "bocvs.py", &[dir], &[]);
    assert_files(dir, &["fig1.png", "fig2.png", "final_values.md", "claims.md"]);
    assert_figure(dir, "fig1.png", size);
    assert_figure(dir, "fig2.png", size);
    let check = stdout
        .lines()
        .find(|l| l.starts_with("cross-check of simple_regret"))
        .unwrap_or_else(|| panic!("no cross-check:\n{stdout}"));
    let points: usize = check.split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(points > 0 && check.ends_with("max |difference| 0"), "{check}");
    let table = &tables(dir, "final_values.md")[0];
    assert_eq!(table.header[..5], ["benchmark", "cost_set", "variance", "label", "runs"]);
    let mut expected = Vec::new();
    for s in settings {
        for label in labels {
            expected.push(vec![s[0], s[1], s[2], *label]);
        }
    }
    assert_eq!(table.keys(4), expected);
    assert!(table.column("runs").iter().all(|n| *n == "2"), "{table:?}");
    assert_filled(table, &["sr", "evals", "spent", "seconds"], "final_values.md");
    check_bocvs_claims(&tables(dir, "claims.md")[0], settings, labels, budget);
    for name in ["fig1.png", "fig2.png", "final_values.md", "claims.md"] {
        let path = dir.join("figures").join(name);
        assert!(stdout.lines().any(|l| Path::new(l) == path), "bocvs.py did not print {}:\n{stdout}", path.display());
    }
}

/// `claims.md`: for every setting, simple regret and the evaluation count at a fifth, two
/// fifths, ... of the budget; the proposed method's row names the other curves only, each
/// more than two standard errors away, never the same curve as ahead and behind.
fn check_bocvs_claims(table: &Table, settings: &[[&str; 3]], labels: &[&str], budget: u32) {
    let proposed = if labels.contains(&"Proposed") { "Proposed" } else { "Proposed (code)" };
    let costs: Vec<String> = (1..=5).map(|i| (i * budget / 5).to_string()).collect();
    let mut expected = Vec::new();
    for s in settings {
        for metric in ["simple_regret", "n_evals"] {
            for cost in &costs {
                expected.push(vec![s[0], s[1], s[2], metric, cost.as_str()]);
            }
        }
    }
    let mut keys = table.keys(5);
    keys.sort();
    expected.sort();
    assert_eq!(keys, expected, "claims.md rows");
    for (value, n) in table.column("proposed: mean ± se").iter().zip(table.column("best there")) {
        assert!(value.starts_with(&format!("{proposed} ")) && value.ends_with("(n=2)"), "claims.md: {value:?}");
        assert!(labels.contains(&n), "claims.md: best there {n:?}");
    }
    for column in ["ahead of it by > 2 se", "behind it by > 2 se"] {
        for name in check_gaps(table, column, "none") {
            assert!(name != proposed && labels.contains(&name.as_str()), "claims.md names {name:?} in {column}");
        }
    }
    for (ahead, behind) in table.column("ahead of it by > 2 se").iter().zip(table.column("behind it by > 2 se")) {
        for name in labels {
            let entry = format!("{name} (");
            assert!(!(ahead.contains(&entry) && behind.contains(&entry)), "{name} both ahead and behind");
        }
    }
}

#[test]
fn bocvs_draws_figures_1_and_2_and_writes_its_table() {
    let Some(python) = python() else { return };
    let out = tempfile::tempdir().unwrap();
    let dir = run_quick("bocvs-code-setting-quick", out.path());
    // One setting (code-5, variance 0.08): one panel of 4 x 3.2 inches at 120 dpi.
    check_bocvs(
        &python,
        &dir,
        (480, 384),
        &[["plant", "code-5", "0.080"]],
        &["Proposed (code)", "Proposed (code-fixed)"],
        5,
    );

    if std::env::var("ARMADA_ANALYSIS_SLOW").as_deref() == Ok("1") {
        let dir = run_quick("bocvs-fig1-quick", out.path());
        let mut settings = Vec::new();
        for bench in ["ackley6-12d", "airfoil", "hartmann6-12d", "plant"] {
            for (cost, var) in [("cheap", "0.020"), ("cheap", "0.040"), ("moderate", "0.020"), ("moderate", "0.040")] {
                settings.push([bench, cost, var]);
            }
        }
        // 4 objectives x the paper's 4 settings.
        let labels = ["ETC-50", "Proposed", "Proposed (code)", "TS-PSQ", "UCB-PSQ"];
        check_bocvs(&python, &dir, (1920, 1536), &settings, &labels, 5);
    }
}

/// One script run over committed data, and the tables it must reproduce.
struct Recompute {
    script: &'static str,
    dirs: Vec<PathBuf>,
    extra: Vec<String>,
    /// (table the script writes, the committed table under analysis/figures/).
    tables: Vec<(&'static str, &'static str)>,
}

/// The tables committed beside each paper's figures are what its script computes, byte for
/// byte, from the full runs committed with them (`analysis/figures/<paper>/data/<sweep>/`:
/// `final.parquet`, LSE's `summary.parquet`, M-SafeOpt's and BO-uCVS's trajectories): a change to a script
/// that alters a committed table fails here until the table is regenerated from the data.
#[test]
fn committed_tables_are_what_the_scripts_compute_from_the_committed_runs() {
    let Some(python) = python() else { return };
    let figures = common::manifest_dir().join("analysis/figures");
    let data = |paper: &str, sweep: &str| figures.join(paper).join("data").join(sweep);
    let run = |script, dirs, tables| Recompute { script, dirs, extra: Vec::new(), tables };
    // The CDT tables that set a sweep beside cdt-main's Theory, OP, TL and CDT cells.
    let cdt_main = data("cdt", "cdt-main").to_str().unwrap().to_string();
    let with_main = |r: Recompute| Recompute { extra: vec!["--main".into(), cdt_main.clone()], ..r };
    let safe = ["safe-fig2", "safe-fig4", "safe-fig5", "safe-fig6"].iter().map(|s| data("safe", s)).collect();
    let cases = [
        run("lse.py", vec![data("lse", "lse-fig3")], vec![("claims.md", "lse/claims-fig3.md")]),
        run("lse.py", vec![data("lse", "lse-fig4")], vec![("claims.md", "lse/claims-fig4.md")]),
        run("lse.py", vec![data("lse", "lse-fig5")], vec![("claims.md", "lse/claims-fig5.md")]),
        run("lse_fig2.py", vec![data("lse", "lse-fig2")], vec![("fig2-queries.md", "lse/fig2-queries.md")]),
        run("lse.py", vec![data("lse", "lse-fig5-rules")], vec![("claims.md", "lse/claims-fig5-rules.md")]),
        run("lse.py", vec![data("lse", "lse-fig5-gp")], vec![("claims.md", "lse/claims-fig5-gp.md")]),
        run("safe.py", safe, vec![("final_values.md", "safe/final_values.md"), ("trend.md", "safe/trend.md")]),
        run("cdt.py", vec![data("cdt", "cdt-main")], vec![("final_regret.md", "cdt/final_regret.md")]),
        run("cdt.py", vec![data("cdt", "cdt-yahoo")], vec![("table2.md", "cdt/table2.md")]),
        run("cdt.py", vec![data("cdt", "cdt-switching")], vec![("switching.md", "cdt/switching.md")]),
        Recompute {
            extra: vec!["--main".into(), data("cdt", "cdt-switching").to_str().unwrap().to_string()],
            ..run(
                "cdt.py",
                vec![data("cdt", "cdt-switching-isolate")],
                vec![("switching-isolate.md", "cdt/switching-isolate.md")],
            )
        },
        // An independent numpy M-SafeOpt beside armada's committed runs (no sweep of its own).
        run("safe_independent.py", vec![], vec![("independent.md", "safe/independent.md")]),
        run("cdt.py", vec![data("cdt", "cdt-lipcheck")], vec![("fig3.md", "cdt/fig3.md")]),
        // A resolving sweep: the script recomputes every mean and interval of its
        // comparisons.parquet from per_seed.parquet and fails if one differs.
        run("cdt.py", vec![data("cdt", "cdt-table4-resolve")], vec![("resolved.md", "cdt/resolved-table4.md")]),
        run("cdt.py", vec![data("cdt", "cdt-ablation-resolve")], vec![("resolved.md", "cdt/resolved-ablation.md")]),
        run(
            "bocvs.py",
            vec![data("bocvs", "bocvs-fig1")],
            vec![("final_values.md", "bocvs/final_values.md"), ("claims.md", "bocvs/claims.md")],
        ),
        run("cdt.py", vec![data("cdt", "cdt-grid")], vec![("table3.md", "cdt/table3.md")]),
        with_main(run("cdt.py", vec![data("cdt", "cdt-refcode-map")], vec![("refcode.md", "cdt/refcode.md")])),
        with_main(run("cdt.py", vec![data("cdt", "cdt-table4")], vec![("table4.md", "cdt/table4.md")])),
        with_main(run(
            "cdt.py",
            vec![data("cdt", "cdt-ablation")],
            vec![("table5.md", "cdt/table5.md"), ("table6.md", "cdt/table6.md")],
        )),
    ];
    for Recompute { script: name, dirs, extra, tables } in cases {
        let out = tempfile::tempdir().unwrap();
        let args: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        let mut extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        extra.extend(["--out", out.path().to_str().unwrap()]);
        script(&python, name, &args, &extra);
        for (written, committed) in tables {
            let got =
                std::fs::read_to_string(out.path().join(written)).unwrap_or_else(|e| panic!("{name}: {written}: {e}"));
            let want = std::fs::read_to_string(figures.join(committed)).unwrap();
            if let Some((i, (g, w))) =
                got.lines().zip(want.lines()).enumerate().find(|(_, (g, w))| g != w).or_else(|| {
                    let n = got.lines().count().min(want.lines().count());
                    (got != want).then(|| (n, (got.lines().nth(n).unwrap_or(""), want.lines().nth(n).unwrap_or(""))))
                })
            {
                panic!("{name} {dirs:?}: {written} differs from analysis/figures/{committed} at line {}:\n  computed:  {g}\n  committed: {w}", i + 1);
            }
        }
    }
}

/// The authors' code's per-repetition outputs behind docs/investigations.md (their series on
/// Sim, committed as `cdt_authors.py run` wrote them) give the rows the doc prints for them:
/// each of `cdt_authors.py table`'s rows of the authors' code is a line of the doc.
#[test]
fn the_authors_runs_committed_give_the_documented_rows() {
    let Some(python) = python() else { return };
    let root = common::manifest_dir();
    let mut csvs: Vec<String> = std::fs::read_dir(root.join("analysis/figures/cdt/data/authors"))
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .filter(|p| p.ends_with(".csv"))
        .collect();
    csvs.sort();
    let mut args = vec!["table", "--eff", "20", "--authors"];
    args.extend(csvs.iter().map(String::as_str));
    let table = script(&python, "cdt_authors.py", &[], &args);
    let doc = std::fs::read_to_string(root.join("docs/investigations.md")).unwrap();
    let doc_lines: std::collections::HashSet<&str> = doc.lines().collect();
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("| authors' code |")).collect();
    // LinUCB and LinTS: four tuners, all and the -eff filter (16); LinUCB's H = 3861, paper-map
    // and candidate-set series (4); SGD-TS's four tuners (4).
    assert_eq!(rows.len(), 24, "{table}");
    for row in rows {
        assert!(
            doc_lines.contains(row),
            "docs/investigations.md does not print this row of the committed runs:\n{row}"
        );
    }
}

/// `cdt_authors.py table` on rows as `cdt_authors.py run` writes them: each setting's runs
/// grouped by tuner and variant, mean and standard error (n - 1) computed by hand here, the
/// paper's value beside them, and OP over a single candidate shown as the fixed value it plays
/// (GLM-TSL's fixed values are run that way on the authors' side), and a Theory run at a fixed
/// value labelled as armada's `fixed` rows are (`fixed:1`, whatever the command line spelled).
#[test]
fn cdt_authors_table_groups_the_authors_runs_by_tuner_and_variant() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("authors.csv");
    let rows = "\
algo,tuner,rep,seed_base,H,er,T,map,final_regret,seconds,env
glmtsl,op,0,17000,14000,5.0,14000,code,500.0,1.0,sim
glmtsl,op,1,17000,14000,5.0,14000,code,510.0,1.0,sim
glmtsl,op,2,17000,14000,5.0,14000,code,530.0,1.0,sim
glmtsl,op,0,17000,14000,0.1 1 2 3 4 5,14000,code,400.0,1.0,sim
glmtsl,op,1,17000,14000,0.1 1 2 3 4 5,14000,code,420.0,1.0,sim
glmtsl,cdt,0,17000,14000,0.1 1 2 3 4 5,14000,code,300.0,1.0,sim
glmtsl,cdt,1,17000,14000,0.1 1 2 3 4 5,14000,code,310.0,1.0,sim
lints,fixed:1.0,0,17000,14000,0.1 1 2 3 4 5,14000,code,800.0,1.0,sim
lints,fixed:1.0,1,17000,14000,0.1 1 2 3 4 5,14000,code,820.0,1.0,sim
";
    std::fs::write(&csv, rows).unwrap();
    let stdout = script(&python, "cdt_authors.py", &[], &["table", "--authors", csv.to_str().unwrap()]);
    // 500, 510, 530: mean 513.33, squared deviations summing to 1400/3, se = sqrt(1400/3 / 2 / 3) = 8.82.
    for want in [
        "| cdt | authors' code | no restart (H = T) | 305.0 ± 5.0 (2) | 333.07 |",
        "| op | authors' code | C1 | 410.0 ± 10.0 (2) | 445.43 |",
        "| fixed:5 | authors' code | OP over one candidate | 513.3 ± 8.8 (3) | – |",
        // a Theory run at a fixed value, labelled as armada's `fixed` rows are
        "| fixed:1 | authors' code | – | 810.0 ± 10.0 (2) | – |",
    ] {
        assert!(stdout.lines().any(|l| l == want), "cdt_authors.py table lacks `{want}`:\n{stdout}");
    }
}

/// The checks above fail on what a broken script leaves: no file, a file that is not a PNG,
/// a truncated PNG, a figure of the wrong size, a table without rows or with empty cells.
#[test]
fn the_checks_reject_missing_and_broken_files() {
    let dir = tempfile::tempdir().unwrap();
    let figures = dir.path().join("figures");
    std::fs::create_dir(&figures).unwrap();
    assert!(check_figure(dir.path(), "fig1.png", (100, 100)).is_err(), "a missing figure passed");
    assert!(check_files(dir.path(), &["fig1.png"]).is_err(), "a missing file passed");
    assert!(read_tables(dir.path(), "table1.md").is_err(), "a missing table passed");

    // The outline of a PNG of 640 x 480 (signature, IHDR, an IDAT, IEND), past the size floor.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(640u32.to_be_bytes());
    png.extend(480u32.to_be_bytes());
    png.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    png.extend(20_000u32.to_be_bytes());
    png.extend(b"IDAT");
    png.extend(vec![0u8; 20_004]);
    png.extend(b"\0\0\0\0IEND\xae\x42\x60\x82");
    std::fs::write(figures.join("fig1.png"), &png).unwrap();
    assert_eq!(check_figure(dir.path(), "fig1.png", (640, 480)), Ok(()));
    assert_eq!(check_files(dir.path(), &["fig1.png"]), Ok(()));
    assert!(check_figure(dir.path(), "fig1.png", (1280, 480)).is_err(), "a figure of the wrong size passed");
    std::fs::write(figures.join("fig1.png"), &png[..png.len() - 12]).unwrap();
    assert!(check_figure(dir.path(), "fig1.png", (640, 480)).is_err(), "a truncated PNG passed");
    std::fs::write(figures.join("fig1.png"), &png[..2000]).unwrap();
    assert!(check_figure(dir.path(), "fig1.png", (640, 480)).is_err(), "a tiny PNG passed");
    std::fs::write(figures.join("fig1.png"), b"<svg/>".repeat(5000)).unwrap();
    assert!(check_figure(dir.path(), "fig1.png", (640, 480)).is_err(), "a file that is no PNG passed");

    std::fs::write(figures.join("table1.md"), "## Table 1\n\nno rows here\n").unwrap();
    assert!(check_files(dir.path(), &["fig1.png"]).is_err(), "an extra file passed");
    assert!(read_tables(dir.path(), "table1.md").is_err(), "a table file without a table passed");
    std::fs::write(figures.join("table1.md"), "| a | b |\n|---|---:|\n| x | 1 | 2 |\n").unwrap();
    assert!(read_tables(dir.path(), "table1.md").is_err(), "a ragged table passed");
    std::fs::write(figures.join("table1.md"), "| a | b |\n|---|---:|\n| x | - |\n").unwrap();
    let t = tables(dir.path(), "table1.md");
    assert_eq!(t[0].keys(1), [["x"]]);
    assert!(check_filled(&t[0], &["b"]).is_err(), "an empty cell passed");
    assert_eq!(check_filled(&t[0], &["a"]), Ok(()));
}

/// `rerun_diff.py` on the committed cdt-main finals against themselves (every cell
/// identical) and against a copy with one cell's mean moved by three of its combined
/// standard errors: that cell, and only it, is beyond 2, with z = 3; a mean moved in its
/// last bits counts as identical.
#[test]
fn rerun_diff_measures_moves_in_standard_errors() {
    use polars::prelude::*;
    let Some(python) = python() else { return };
    let old = common::manifest_dir().join("analysis/figures/cdt/data/cdt-main/final.parquet");
    let same = script(&python, "rerun_diff.py", &[&old, &old], &["--metric", "regret"]);
    assert!(same.contains("| movielens | 28 | 28 | 0.00 | 0.00 | 0.00 | 0 |"), "{same}");
    assert!(same.contains("| synthetic | 28 | 28 | 0.00 | 0.00 | 0.00 | 0 |"), "{same}");
    // Move the first synthetic regret cell by 3 sqrt(2) se: z = 3 exactly.
    let mut df = ParquetReader::new(std::fs::File::open(&old).unwrap()).finish().unwrap();
    let metric: Vec<bool> = df.column("metric").unwrap().str().unwrap().iter().map(|m| m == Some("regret")).collect();
    let bench: Vec<bool> =
        df.column("benchmark").unwrap().str().unwrap().iter().map(|b| b == Some("synthetic")).collect();
    let target = (0..df.height()).find(|&i| metric[i] && bench[i]).unwrap();
    let last_bits = (0..df.height()).find(|&i| metric[i] && !bench[i]).unwrap();
    let se = df.column("se").unwrap().f64().unwrap().get(target).unwrap();
    let means: Vec<Option<f64>> = df
        .column("mean")
        .unwrap()
        .f64()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, m)| match i {
            _ if i == target => m.map(|m| m + 3.0 * 2f64.sqrt() * se),
            _ if i == last_bits => m.map(|m| m * (1.0 + 4.0 * f64::EPSILON)),
            _ => m,
        })
        .collect();
    df.with_column(Column::new("mean".into(), means)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let moved = dir.path().join("final.parquet");
    ParquetWriter::new(std::fs::File::create(&moved).unwrap()).finish(&mut df).unwrap();
    let diff = script(&python, "rerun_diff.py", &[&old, dir.path()], &["--metric", "regret"]);
    assert!(diff.contains("| synthetic | 28 | 27 | 0.11 | 0.57 | 3.00 | 1 |"), "{diff}");
    assert!(diff.contains("| movielens | 28 | 28 | 0.00 | 0.00 | 0.00 | 0 |"), "{diff}");
}
