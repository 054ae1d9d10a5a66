//! The terminal view of `final.parquet`.

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Significant digits of the numbers in the table.
const SIGNIFICANT_DIGITS: i32 = 4;

/// A compact text table of `final.parquet`: one row per (benchmark, benchmark_params,
/// algorithm, algorithm_params), one column per float metric, cells `mean ± se`
/// (just `mean` when n < 2, `-` when the metric does not apply), and `n`, the most
/// seeds of any metric in the row; a cell with failed jobs says so beside it (`3/6, 3
/// failed`). Rows are sorted by benchmark, then algorithm.
///
/// Metric columns follow the shards' column order (the first shard, by key, that has
/// a metric places it). A `horizon` column is added only when the sweep mixes horizons.
/// If some jobs of a row stopped early, the cells show the jobs that got furthest.
/// A non-empty `only` keeps just those metrics (in the shards' order).
pub fn final_table(sweep_dir: &Path, only: &[&str]) -> Result<String> {
    let df = read_parquet(&sweep_dir.join(FINAL_FILE))?;
    let in_final: BTreeSet<&str> = df.column(METRIC)?.str()?.iter().flatten().collect();
    let order = metric_order(sweep_dir, in_final)?;
    render_final(&df, &order, only)
}

/// [`final_table`] of a frame in the schema of `final.parquet`, with the metric columns in
/// `order` (metrics of the frame missing from it go last, by name).
pub fn render_final(df: &DataFrame, order: &[String], only: &[&str]) -> Result<String> {
    let text = |name: &str| -> Result<Vec<String>> {
        let column = df.column(name)?.str()?;
        Ok(column.iter().map(|v| v.unwrap_or_default().to_owned()).collect())
    };
    let (benchmark, benchmark_params) = (text(BENCHMARK)?, text(BENCHMARK_PARAMS)?);
    let (algorithm, algorithm_params) = (text(ALGORITHM)?, text(ALGORITHM_PARAMS)?);
    let metric = text(METRIC)?;
    let horizon: Vec<Option<i64>> = df.column(HORIZON)?.i64()?.iter().collect();
    let n: Vec<Option<i64>> = df.column(N)?.i64()?.iter().collect();
    let mean: Vec<Option<f64>> = df.column(MEAN)?.f64()?.iter().collect();
    let se: Vec<Option<f64>> = df.column(SE)?.f64()?.iter().collect();
    // Tables written before the job counts were recorded have no such columns.
    let count = |name: &str| -> Result<Vec<Option<i64>>> {
        match df.column(name) {
            Ok(column) => Ok(column.i64()?.iter().collect()),
            Err(_) => Ok(vec![None; df.height()]),
        }
    };
    let (n_jobs, n_failed) = (count(N_JOBS)?, count(N_FAILED)?);

    type Key = (String, String, String, String, Option<i64>);
    // Sorted by benchmark, then algorithm (then the params and horizon, for ties).
    let mut rows: BTreeMap<Key, (String, BTreeMap<&str, String>)> = BTreeMap::new();
    let mut seeds: BTreeMap<Key, i64> = BTreeMap::new();
    for i in 0..df.height() {
        let key = (
            benchmark[i].clone(),
            algorithm[i].clone(),
            benchmark_params[i].clone(),
            algorithm_params[i].clone(),
            horizon[i],
        );
        let row_n = seeds.entry(key.clone()).or_default();
        *row_n = (*row_n).max(n[i].unwrap_or(0));
        let (shown_n, cells) = rows.entry(key).or_default();
        *shown_n = match (n_jobs[i], n_failed[i]) {
            (Some(jobs), Some(failed)) if failed > 0 => format!("{row_n}/{jobs}, {failed} failed"),
            _ => row_n.to_string(),
        };
        // final.parquet is sorted by step within a group: a later step overwrites.
        cells.insert(metric[i].as_str(), cell(mean[i], se[i]));
    }
    let in_final: BTreeSet<&str> = metric.iter().map(String::as_str).collect();
    let mut metrics: Vec<String> = order.iter().filter(|m| in_final.contains(m.as_str())).cloned().collect();
    metrics.extend(in_final.iter().filter(|m| !order.iter().any(|o| o == *m)).map(|m| m.to_string()));
    if !only.is_empty() {
        metrics.retain(|m| only.contains(&m.as_str()));
    }
    let show_horizon = horizon.iter().collect::<BTreeSet<_>>().len() > 1;

    let mut header = vec![BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS];
    if show_horizon {
        header.push(HORIZON);
    }
    header.push(N);
    header.extend(metrics.iter().map(String::as_str));
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for ((bench, alg, bench_params, alg_params, horizon), (row_n, cells)) in &rows {
        let mut line = vec![bench.clone(), bench_params.clone(), alg.clone(), alg_params.clone()];
        if show_horizon {
            line.push(horizon.map_or_else(|| "-".into(), |h| h.to_string()));
        }
        line.push(row_n.clone());
        line.extend(metrics.iter().map(|m| cells.get(m.as_str()).cloned().unwrap_or_else(|| "-".into())));
        lines.push(line);
    }
    // The four name columns are text, the rest numbers.
    Ok(render(&lines, 4))
}

/// A text table of a resolving sweep's `comparisons.parquet`: one row per comparison,
/// `a` and `b` each an algorithm with its parameters, the mean of `a - b` over the paired
/// seeds, its interval and the verdict.
pub fn comparisons_table(sweep_dir: &Path) -> Result<String> {
    let df = read_parquet(&sweep_dir.join(rounds::COMPARISONS_FILE))?;
    let text = |name: &str| -> Result<Vec<String>> {
        Ok(df.column(name)?.str()?.iter().map(|v| v.unwrap_or_default().to_owned()).collect())
    };
    let variant = |name: &str, params: &str| -> Result<Vec<String>> {
        let (names, params) = (text(name)?, text(params)?);
        Ok(names.into_iter().zip(params).map(|(n, p)| if p == "{}" { n } else { format!("{n} {p}") }).collect())
    };
    let (benchmark, benchmark_params) = (text(BENCHMARK)?, text(BENCHMARK_PARAMS)?);
    let (a, b) = (variant(ALGORITHM_A, ALGORITHM_PARAMS_A)?, variant(ALGORITHM_B, ALGORITHM_PARAMS_B)?);
    let verdict = text(VERDICT)?;
    let n: Vec<Option<i64>> = df.column(N)?.i64()?.iter().collect();
    let floats = |name: &str| -> Result<Vec<Option<f64>>> { Ok(df.column(name)?.f64()?.iter().collect()) };
    let (mean, lower, upper) = (floats(MEAN_DIFFERENCE)?, floats(LOWER)?, floats(UPPER)?);
    let mut lines = vec![["benchmark", "benchmark_params", "a", "b", "verdict", "n", "mean a-b", "interval"]
        .map(String::from)
        .to_vec()];
    for i in 0..df.height() {
        let interval = match (lower[i], upper[i]) {
            (Some(lo), Some(hi)) => format!("[{}, {}]", number(lo), number(hi)),
            _ => "-".into(),
        };
        lines.push(vec![
            benchmark[i].clone(),
            benchmark_params[i].clone(),
            a[i].clone(),
            b[i].clone(),
            verdict[i].clone(),
            n[i].map_or("-".into(), |n| n.to_string()),
            mean[i].map_or("-".into(), number),
            interval,
        ]);
    }
    Ok(render(&lines, 5))
}

/// `mean ± se`, `mean` alone when there is no standard error, `-` without a mean.
fn cell(mean: Option<f64>, se: Option<f64>) -> String {
    match (mean, se) {
        (Some(mean), Some(se)) => format!("{} ± {}", number(mean), number(se)),
        (Some(mean), None) => number(mean),
        (None, _) => "-".into(),
    }
}

/// About [`SIGNIFICANT_DIGITS`] significant digits: fixed point for moderate
/// magnitudes, scientific notation otherwise.
fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    if (-3..5).contains(&magnitude) {
        let decimals = (SIGNIFICANT_DIGITS - 1 - magnitude).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.prec$e}", prec = (SIGNIFICANT_DIGITS - 1) as usize)
    }
}

/// The metrics of `final.parquet` in the order their columns appear in the shards;
/// reads shard footers only until every metric is placed (those whose shards are gone
/// are not: [`render_final`] puts them last, by name).
fn metric_order(sweep_dir: &Path, in_final: BTreeSet<&str>) -> Result<Vec<String>> {
    let mut order: Vec<String> = Vec::new();
    for path in part_files(sweep_dir)? {
        if order.len() == in_final.len() {
            break;
        }
        let file = File::open(&path).map_err(io("opening", &path))?;
        // A damaged part is left out of the summaries, and of their column order.
        let Ok(schema) = ParquetReader::new(file).schema() else { continue };
        for name in schema.iter_names() {
            if in_final.contains(name.as_str()) && !order.iter().any(|m| m == name.as_str()) {
                order.push(name.to_string());
            }
        }
    }
    Ok(order)
}

/// Columns separated by two spaces, a dashed rule under the header; the first `n_text`
/// columns left-aligned, the others (numbers) right-aligned.
fn render(lines: &[Vec<String>], n_text: usize) -> String {
    let n_columns = lines[0].len();
    let width = |j: usize| lines.iter().map(|l| l[j].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n_columns).map(width).collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let mut text = String::new();
        for (j, value) in line.iter().enumerate() {
            if j > 0 {
                text.push_str("  ");
            }
            let w = widths[j];
            if j < n_text {
                let _ = write!(text, "{value:<w$}");
            } else {
                let _ = write!(text, "{value:>w$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn numbers_have_four_significant_digits() {
        assert_eq!(number(2.0 + 1.0 / 3.0), "2.333");
        assert_eq!(number(0.5), "0.5000");
        assert_eq!(number(1234.56), "1235");
        assert_eq!(number(-0.00123456), "-0.001235");
        assert_eq!(number(123456.0), "1.235e5");
        assert_eq!(number(0.0), "0");
        assert_eq!(cell(Some(1.0), None), "1.000");
        assert_eq!(cell(None, None), "-");
    }

    #[test]
    fn final_table_shows_mean_and_se_per_row() {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path());
        summarize(dir.path(), None).unwrap();
        let table = final_table(dir.path(), &[]).unwrap();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + 3, "{table}");
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(header[..5], ["benchmark", "benchmark_params", "algorithm", "algorithm_params", "n"]);
        let mut metrics = header[5..].to_vec();
        metrics.sort();
        assert_eq!(metrics, ["regret", "reward"], "{table}");
        let regret_col = header.iter().position(|&h| h == "regret").unwrap();
        assert!(lines[1].chars().all(|c| c == '-' || c == ' '));

        // Sorted by benchmark: arms < sinusoidal; then straddle < ucb.
        let cells = |line: &str| -> Vec<String> {
            // Split on runs of two or more spaces: cells themselves contain single spaces.
            line.split("  ").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
        };
        let arms = cells(lines[2]);
        assert_eq!(arms[..5], ["arms", r#"{"noise_sd":0.1}"#, "thompson", r#"{"beta_sqrt":3.0}"#, "1"]);
        assert_eq!(arms[regret_col], "-");
        assert!(arms.contains(&"1.000".to_owned()), "reward of the one seed: {arms:?}");

        // straddle, last step: [1, 2, 4]: mean 7/3, se sqrt(7/3)/sqrt(3) = sqrt(7)/3.
        let straddle = cells(lines[3]);
        assert_eq!(straddle[..5], ["sinusoidal", r#"{"noise_sd":0.1}"#, "straddle", r#"{"beta_sqrt":3.0}"#, "3"]);
        assert_eq!(straddle[regret_col], "2.333 ± 0.8819", "{table}");
        let ucb = cells(lines[4]);
        assert_eq!(ucb[2], "ucb");
        assert_eq!(ucb[regret_col], "0.5000 ± 0", "{table}");

        // `only` keeps the named metrics.
        let only = final_table(dir.path(), &["regret"]).unwrap();
        let header: Vec<&str> = only.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header[4..], ["n", "regret"], "{only}");
    }

    /// A cell with failed jobs says so beside its seeds; one whose every job failed shows
    /// its row with no values.
    #[test]
    fn final_table_marks_the_cells_with_failed_jobs() {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path());
        let jobs: Vec<Cell> = fixture_jobs().iter().map(|(job, _, _)| Cell::of(job)).collect();
        let straddle = jobs.iter().find(|c| c.algorithm == "straddle").unwrap().clone();
        let mut failed_cell = straddle.clone();
        failed_cell.algorithm = "mile".into();
        // straddle: its 3 seeds done and 3 failed; mile: its 2 jobs failed.
        let cells = jobs.into_iter().map(|c| (c, false)).chain((0..3).map(|_| (straddle.clone(), true)));
        let counts = count_cells(cells.chain((0..2).map(|_| (failed_cell.clone(), true))));
        rebuild_summaries(dir.path(), None, &[], Some(&counts)).unwrap();
        let table = final_table(dir.path(), &[]).unwrap();
        let line =
            |algorithm: &str| table.lines().find(|l| l.contains(&format!("  {algorithm}  "))).unwrap().to_owned();
        assert!(line("straddle").contains("  3/6, 3 failed  "), "{table}");
        assert!(!line("ucb").contains("failed"), "{table}");
        let mile = line("mile");
        assert!(mile.contains("  0/2, 2 failed") && mile.trim_end().ends_with('-'), "{table}");
    }

    #[test]
    fn final_table_without_summary_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(final_table(dir.path(), &[]).is_err());
    }
}
