//! What the dashboard and the static report show, as JSON-ready values: a sweep's curves
//! (one metric, one line per algorithm variant, per benchmark variant), its final table, and
//! one job's trajectory. Built from the summary tables in their Parquet schema (README,
//! "Parquet schema"), whether live (the coordinator's live summaries) or read from the files,
//! so the page and the report draw the same numbers `armada summarize` writes.

use crate::results;
use crate::results::schema::{
    is_fixed_column, ALGORITHM, ALGORITHM_PARAMS, BENCHMARK, BENCHMARK_PARAMS, MEAN, METRIC, N, N_FAILED, N_JOBS, Q10,
    Q90, SE, STEP,
};
use anyhow::Context;
use polars::prelude::{Column, DataFrame};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Points per curve at most: a 90,000-step run is drawn from this many steps, evenly spaced,
/// the last step always among them.
pub const CURVE_POINTS: usize = 400;
/// Points of one job's trajectory at most.
pub const TRAJECTORY_POINTS: usize = 2_000;

/// Everything the page draws of a sweep's tables.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SweepTables {
    /// The float metrics: the family's headline metrics first (the page shows the first
    /// unless asked for another), then the rest, sorted.
    pub metrics: Vec<String>,
    #[serde(rename = "final")]
    pub final_table: Option<FinalTable>,
    /// Each metric's curves, thinned to [`CURVE_POINTS`].
    pub curves: BTreeMap<String, Curves>,
}

/// Every metric's curves and the final table, from a sweep's summary and final tables;
/// `headline` are the family's headline metrics, shown first.
pub fn sweep_tables(summary: &DataFrame, last: &DataFrame, headline: &[&str]) -> anyhow::Result<SweepTables> {
    let curves = curves_in_pieces(|f| f(summary), CURVE_POINTS)?;
    Ok(tables(curves, final_table(last)?, headline))
}

/// [`sweep_tables`] of a sweep directory's summary files: `summary.parquet` is read a piece
/// at a time, twice, and only the points shown are kept, so a table of any length is
/// drawn in bounded memory (`final.parquet` has a row per cell and metric).
pub fn sweep_tables_of(sweep_dir: &std::path::Path, headline: &[&str]) -> anyhow::Result<SweepTables> {
    let path = sweep_dir.join(results::SUMMARY_FILE);
    let curves = curves_in_pieces(|f| results::for_each_piece(&path, &CURVE_COLUMNS, f), CURVE_POINTS)?;
    let last = results::read_parquet(&sweep_dir.join(results::FINAL_FILE))?;
    Ok(tables(curves, final_table(&last)?, headline))
}

fn tables(curves: BTreeMap<String, Curves>, final_table: FinalTable, headline: &[&str]) -> SweepTables {
    let mut metrics: Vec<String> = curves.keys().cloned().collect();
    let rank = |m: &String| headline.iter().position(|h| h == m).unwrap_or(headline.len());
    metrics.sort_by_key(rank); // stable: the others stay sorted by name
    SweepTables { metrics, final_table: Some(final_table), curves }
}

/// The summary columns the curves are drawn from.
const CURVE_COLUMNS: [&str; 11] =
    [BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS, STEP, METRIC, N, MEAN, SE, Q10, Q90];

/// The curves of one metric.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Curves {
    pub metric: String,
    /// One panel per benchmark variant, in the tables' (cell) order.
    pub panels: Vec<Panel>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Panel {
    pub benchmark: String,
    pub benchmark_params: String,
    pub lines: Vec<Line>,
}

/// One algorithm variant's statistics over seeds, step by step.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Line {
    pub algorithm: String,
    pub algorithm_params: String,
    pub step: Vec<i64>,
    pub n: Vec<i64>,
    pub mean: Vec<Option<f64>>,
    pub se: Vec<Option<f64>>,
    /// Null while the cell is provisional (live, some jobs still to come).
    pub q10: Vec<Option<f64>>,
    pub q90: Vec<Option<f64>>,
}

/// The final-step table, one row per cell.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FinalTable {
    pub metrics: Vec<String>,
    pub rows: Vec<FinalRow>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FinalRow {
    pub benchmark: String,
    pub benchmark_params: String,
    pub algorithm: String,
    pub algorithm_params: String,
    /// The cell's final step.
    pub step: i64,
    /// Seeds with a value, the most over the metrics.
    pub n: i64,
    /// The cell's jobs in its sweep, and how many failed for good (null in tables
    /// written before they were recorded, or rebuilt without the sweep's jobs).
    pub n_jobs: Option<i64>,
    pub n_failed: Option<i64>,
    /// Per metric of [`FinalTable::metrics`]: mean and standard error (null when missing).
    pub mean: Vec<Option<f64>>,
    pub se: Vec<Option<f64>>,
}

/// One job's trajectory: its steps and every metric column (floats and integers alike).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Trajectory {
    pub key: String,
    pub step: Vec<i64>,
    pub columns: Vec<(String, Vec<Option<f64>>)>,
    /// Who produced it, when its part says.
    pub provenance: Option<crate::results::Provenance>,
}

/// The summary table's columns, read once.
struct Long<'a> {
    benchmark: Vec<Option<&'a str>>,
    benchmark_params: Vec<Option<&'a str>>,
    algorithm: Vec<Option<&'a str>>,
    algorithm_params: Vec<Option<&'a str>>,
    step: Vec<Option<i64>>,
    metric: Vec<Option<&'a str>>,
    n: Vec<Option<i64>>,
}

impl<'a> Long<'a> {
    fn of(df: &'a DataFrame) -> anyhow::Result<Long<'a>> {
        let text = |name: &str| -> anyhow::Result<Vec<Option<&'a str>>> {
            Ok(df.column(name).with_context(|| format!("column {name}"))?.str()?.iter().collect())
        };
        let int = |name: &str| -> anyhow::Result<Vec<Option<i64>>> {
            Ok(df.column(name).with_context(|| format!("column {name}"))?.i64()?.iter().collect())
        };
        Ok(Long {
            benchmark: text(BENCHMARK)?,
            benchmark_params: text(BENCHMARK_PARAMS)?,
            algorithm: text(ALGORITHM)?,
            algorithm_params: text(ALGORITHM_PARAMS)?,
            step: int(STEP)?,
            metric: text(METRIC)?,
            n: int(N)?,
        })
    }

    fn cell(&self, row: usize) -> [&'a str; 4] {
        let s = |c: &Vec<Option<&'a str>>| c[row].unwrap_or("");
        [s(&self.benchmark), s(&self.benchmark_params), s(&self.algorithm), s(&self.algorithm_params)]
    }
}

fn floats(df: &DataFrame, name: &str) -> anyhow::Result<Vec<Option<f64>>> {
    let column: &Column = df.column(name).with_context(|| format!("column {name}"))?;
    Ok(column.f64()?.iter().map(|v| v.filter(|v| v.is_finite())).collect())
}

/// The float metrics a summary table holds, sorted.
pub fn metrics(summary: &DataFrame) -> anyhow::Result<Vec<String>> {
    let names: std::collections::BTreeSet<&str> = summary.column(METRIC)?.str()?.iter().flatten().collect();
    Ok(names.into_iter().map(str::to_owned).collect())
}

/// The curves of `metric` from a summary table, each thinned to at most `max_points`.
#[cfg(test)]
fn curves(summary: &DataFrame, metric: &str, max_points: usize) -> anyhow::Result<Curves> {
    let mut all = curves_in_pieces(|f| f(summary), max_points)?;
    Ok(all.remove(metric).unwrap_or_else(|| Curves { metric: metric.to_string(), panels: Vec::new() }))
}

/// A piecewise reader of a summary table: it hands each piece (rows in table order) to the
/// function it is given, and can do so more than once.
type Pieces<'a> = dyn FnMut(&mut dyn FnMut(&DataFrame) -> anyhow::Result<()>) -> anyhow::Result<()> + 'a;

/// Every metric's curves, each line thinned to at most `max_points`, from a summary table
/// read in pieces twice: the first pass counts each line's points, the second keeps those
/// shown. What is held is the points shown and one piece, however long the table.
pub fn curves_in_pieces(
    mut pieces: impl FnMut(&mut dyn FnMut(&DataFrame) -> anyhow::Result<()>) -> anyhow::Result<()>,
    max_points: usize,
) -> anyhow::Result<BTreeMap<String, Curves>> {
    let pieces: &mut Pieces = &mut pieces;
    let mut index = LineIndex::default();
    let mut counts: Vec<usize> = Vec::new();
    let mut metrics = std::collections::BTreeSet::new();
    pieces(&mut |piece| {
        let long = Long::of(piece)?;
        for row in 0..piece.height() {
            let Some(metric) = long.metric[row] else { continue };
            if !metrics.contains(metric) {
                metrics.insert(metric.to_string());
            }
            // A cell with no result has rows with no step: no point of a curve.
            if long.step[row].is_none() {
                continue;
            }
            let line = index.line(long.cell(row), metric);
            counts.resize(index.lines.len(), 0);
            counts[line] += 1;
        }
        Ok(())
    })?;
    let keep: Vec<Vec<usize>> = counts.iter().map(|&n| thin(n, max_points)).collect();
    let mut lines: Vec<Line> = index
        .lines
        .iter()
        .map(|(cell, _)| Line {
            algorithm: cell[2].clone(),
            algorithm_params: cell[3].clone(),
            step: Vec::new(),
            n: Vec::new(),
            mean: Vec::new(),
            se: Vec::new(),
            q10: Vec::new(),
            q90: Vec::new(),
        })
        .collect();
    let mut seen = vec![0usize; lines.len()];
    pieces(&mut |piece| {
        let long = Long::of(piece)?;
        let (mean, se, q10, q90) = (floats(piece, MEAN)?, floats(piece, SE)?, floats(piece, Q10)?, floats(piece, Q90)?);
        for row in 0..piece.height() {
            let (Some(metric), Some(step)) = (long.metric[row], long.step[row]) else { continue };
            let l = index.line(long.cell(row), metric);
            anyhow::ensure!(l < lines.len(), "the summary table changed while it was read");
            let at = seen[l];
            seen[l] += 1;
            if keep[l].get(lines[l].step.len()) != Some(&at) {
                continue;
            }
            let line = &mut lines[l];
            line.step.push(step);
            line.n.push(long.n[row].unwrap_or(0));
            line.mean.push(mean[row]);
            line.se.push(se[row]);
            line.q10.push(q10[row]);
            line.q90.push(q90[row]);
        }
        Ok(())
    })?;
    // Panels per metric in the order of their cells' first rows, lines likewise.
    let mut curves: BTreeMap<String, Curves> =
        metrics.into_iter().map(|m| (m.clone(), Curves { metric: m, panels: Vec::new() })).collect();
    for ((cell, metric), line) in index.lines.into_iter().zip(lines) {
        let panels = &mut curves.get_mut(&metric).expect("every line's metric is listed").panels;
        let p = match panels.iter().position(|p| p.benchmark == cell[0] && p.benchmark_params == cell[1]) {
            Some(p) => p,
            None => {
                let [benchmark, benchmark_params, _, _] = cell;
                panels.push(Panel { benchmark, benchmark_params, lines: Vec::new() });
                panels.len() - 1
            }
        };
        panels[p].lines.push(line);
    }
    Ok(curves)
}

/// The lines (cell and metric) of a summary table in the order of their first rows. Rows
/// come grouped by cell, so the last cell's lines are looked up first.
#[derive(Default)]
struct LineIndex {
    lines: Vec<([String; 4], String)>,
    of: HashMap<String, usize>,
    last_cell: Option<[String; 4]>,
    last_lines: Vec<(String, usize)>,
}

impl LineIndex {
    fn line(&mut self, cell: [&str; 4], metric: &str) -> usize {
        if self.last_cell.as_ref().is_some_and(|last| last.iter().zip(cell).all(|(a, b)| a == b)) {
            if let Some(&(_, l)) = self.last_lines.iter().find(|(m, _)| m == metric) {
                return l;
            }
        } else {
            self.last_cell = Some(cell.map(str::to_string));
            self.last_lines.clear();
        }
        let key = [cell[0], cell[1], cell[2], cell[3], metric].join("\u{1f}");
        let next = self.lines.len();
        let l = *self.of.entry(key).or_insert(next);
        if l == next {
            self.lines.push((cell.map(str::to_string), metric.to_string()));
        }
        self.last_lines.push((metric.to_string(), l));
        l
    }
}

/// The final table (in the schema of `final.parquet`), one row per cell in cell order.
pub fn final_table(last: &DataFrame) -> anyhow::Result<FinalTable> {
    let long = Long::of(last)?;
    let (mean, se) = (floats(last, MEAN)?, floats(last, SE)?);
    let count = |name: &str| -> anyhow::Result<Vec<Option<i64>>> {
        match last.column(name) {
            Ok(column) => Ok(column.i64()?.iter().collect()),
            Err(_) => Ok(vec![None; last.height()]),
        }
    };
    let (n_jobs, n_failed) = (count(N_JOBS)?, count(N_FAILED)?);
    let metrics = metrics(last)?;
    let metric_index: HashMap<&str, usize> = metrics.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let mut rows: Vec<FinalRow> = Vec::new();
    let mut row_of: HashMap<[&str; 4], usize> = HashMap::new();
    for row in 0..last.height() {
        let cell = long.cell(row);
        let r = *row_of.entry(cell).or_insert_with(|| {
            rows.push(FinalRow {
                benchmark: cell[0].into(),
                benchmark_params: cell[1].into(),
                algorithm: cell[2].into(),
                algorithm_params: cell[3].into(),
                step: 0,
                n: 0,
                n_jobs: n_jobs[row],
                n_failed: n_failed[row],
                mean: vec![None; metrics.len()],
                se: vec![None; metrics.len()],
            });
            rows.len() - 1
        });
        let Some(&m) = long.metric[row].and_then(|name| metric_index.get(name)) else { continue };
        let out = &mut rows[r];
        out.step = out.step.max(long.step[row].unwrap_or(0));
        out.n = out.n.max(long.n[row].unwrap_or(0));
        out.mean[m] = mean[row];
        out.se[m] = se[row];
    }
    Ok(FinalTable { metrics, rows })
}

/// Comparisons shown at most: a sweep comparing all pairs of many variants has more.
pub const COMPARISON_ROWS: usize = 2_000;

/// One comparison of a resolving sweep (a row of `comparisons.parquet`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ComparisonRow {
    pub benchmark: String,
    pub benchmark_params: String,
    pub a: String,
    pub a_params: String,
    pub b: String,
    pub b_params: String,
    pub verdict: String,
    pub n: i64,
    pub mean_difference: f64,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

/// A resolving sweep's comparisons as its last judged round left them (at most
/// [`COMPARISON_ROWS`], open ones first), and how many there are; `None` for a sweep
/// without them.
pub fn comparisons_of(sweep_dir: &std::path::Path) -> anyhow::Result<Option<(Vec<ComparisonRow>, usize)>> {
    use crate::results::schema::{
        ALGORITHM_A, ALGORITHM_B, ALGORITHM_PARAMS_A, ALGORITHM_PARAMS_B, LOWER, MEAN_DIFFERENCE, UPPER, VERDICT,
    };
    let path = sweep_dir.join(results::rounds::COMPARISONS_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let df = results::read_parquet(&path)?;
    let text = |name: &str| -> anyhow::Result<Vec<String>> {
        Ok(df.column(name)?.str()?.iter().map(|v| v.unwrap_or_default().to_string()).collect())
    };
    let (benchmark, benchmark_params) = (text(BENCHMARK)?, text(BENCHMARK_PARAMS)?);
    let (a, a_params, b, b_params) =
        (text(ALGORITHM_A)?, text(ALGORITHM_PARAMS_A)?, text(ALGORITHM_B)?, text(ALGORITHM_PARAMS_B)?);
    let verdict = text(VERDICT)?;
    let n: Vec<Option<i64>> = df.column(N)?.i64()?.iter().collect();
    let (mean, lower, upper) = (floats(&df, MEAN_DIFFERENCE)?, floats(&df, LOWER)?, floats(&df, UPPER)?);
    let mut rows: Vec<ComparisonRow> = (0..df.height())
        .map(|i| ComparisonRow {
            benchmark: benchmark[i].clone(),
            benchmark_params: benchmark_params[i].clone(),
            a: a[i].clone(),
            a_params: a_params[i].clone(),
            b: b[i].clone(),
            b_params: b_params[i].clone(),
            verdict: verdict[i].clone(),
            n: n[i].unwrap_or(0),
            mean_difference: mean[i].unwrap_or(f64::NAN),
            lower: lower[i],
            upper: upper[i],
        })
        .collect();
    // The open ones first (a stable sort: the sweep's order within each group).
    rows.sort_by_key(|r| r.verdict != "open");
    let total = rows.len();
    rows.truncate(COMPARISON_ROWS);
    Ok(Some((rows, total)))
}

/// One job's rows (in the trajectories' schema), thinned to at most `max_points` steps.
pub fn trajectory(key: &str, rows: &DataFrame, max_points: usize) -> anyhow::Result<Trajectory> {
    let step: Vec<i64> = rows.column(STEP)?.i64()?.iter().map(|s| s.unwrap_or(0)).collect();
    let keep = thin(step.len(), max_points);
    let mut columns = Vec::new();
    for column in rows.columns() {
        let name = column.name().as_str();
        if is_fixed_column(name) {
            continue;
        }
        let values: Vec<Option<f64>> = match column.dtype() {
            polars::prelude::DataType::Float64 => column.f64()?.iter().map(|v| v.filter(|v| v.is_finite())).collect(),
            polars::prelude::DataType::Int64 => column.i64()?.iter().map(|v| v.map(|v| v as f64)).collect(),
            _ => continue,
        };
        columns.push((name.to_string(), pick(&values, &keep)));
    }
    Ok(Trajectory { key: key.to_string(), step: pick(&step, &keep), columns, provenance: None })
}

/// Indices of at most `max` of `len` points, evenly spaced, first and last included.
pub fn thin(len: usize, max: usize) -> Vec<usize> {
    if len <= max || max < 2 {
        return (0..len).collect();
    }
    let mut keep: Vec<usize> = (0..max).map(|i| i * (len - 1) / (max - 1)).collect();
    keep.dedup();
    keep
}

fn pick<T: Clone>(values: &[T], keep: &[usize]) -> Vec<T> {
    keep.iter().map(|&i| values[i].clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    /// A summary table of two algorithms on one benchmark, metric `loss` and `fscore`.
    fn summary() -> DataFrame {
        type Row<'a> = (&'a str, &'a str, i64, &'a str, i64, f64, Option<f64>, Option<f64>);
        let rows: Vec<Row> = vec![
            ("us", "{}", 0, "fscore", 3, 0.1, Some(0.01), Some(0.05)),
            ("us", "{}", 0, "loss", 3, 5.0, Some(0.5), None),
            ("us", "{}", 1, "loss", 3, 4.0, Some(0.4), None),
            ("straddle", "{beta_sqrt=3.0}", 0, "loss", 2, 6.0, None, Some(7.0)),
            ("straddle", "{beta_sqrt=3.0}", 1, "loss", 2, f64::NAN, None, Some(6.0)),
        ];
        df!(
            "family" => rows.iter().map(|_| "lse").collect::<Vec<_>>(),
            "benchmark" => rows.iter().map(|_| "sinusoidal").collect::<Vec<_>>(),
            "benchmark_params" => rows.iter().map(|_| "{}").collect::<Vec<_>>(),
            "algorithm" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            "algorithm_params" => rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            "horizon" => rows.iter().map(|_| 1i64).collect::<Vec<_>>(),
            "step" => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            "metric" => rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            "n" => rows.iter().map(|r| r.4).collect::<Vec<_>>(),
            "mean" => rows.iter().map(|r| r.5).collect::<Vec<_>>(),
            "std" => rows.iter().map(|r| r.6).collect::<Vec<_>>(),
            "se" => rows.iter().map(|r| r.6).collect::<Vec<_>>(),
            "median" => rows.iter().map(|r| Some(r.5)).collect::<Vec<_>>(),
            "q10" => rows.iter().map(|r| r.7).collect::<Vec<_>>(),
            "q90" => rows.iter().map(|r| r.7).collect::<Vec<_>>(),
        )
        .unwrap()
    }

    /// A summary table longer than a piece (two cells, two metrics, 70,001 steps each:
    /// 280,004 rows, three pieces) drawn from its file a piece at a time: each line keeps
    /// the steps `thin` picks, with their values, as drawn from the whole table at once.
    #[test]
    fn curves_of_a_long_table_read_in_pieces_keep_the_thinned_steps() {
        let steps = 70_001i64;
        let mut rows: Vec<(&str, i64, &str, f64)> = Vec::new();
        for algorithm in ["us", "straddle"] {
            for step in 0..steps {
                for metric in ["fscore", "loss"] {
                    let value = step as f64 * if metric == "loss" { 2.0 } else { 1.0 };
                    rows.push((algorithm, step, metric, value));
                }
            }
        }
        let n = rows.len();
        let text = |v: &'static str| vec![v; n];
        let mut summary = df!(
            "family" => text("lse"),
            "benchmark" => text("sinusoidal"),
            "benchmark_params" => text("{}"),
            "algorithm" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            "algorithm_params" => text("{}"),
            "horizon" => vec![steps - 1; n],
            "step" => rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            "metric" => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            "n" => vec![3i64; n],
            "mean" => rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            "std" => vec![Some(1.0); n],
            "se" => vec![Some(0.5); n],
            "median" => rows.iter().map(|r| Some(r.3)).collect::<Vec<_>>(),
            "q10" => vec![Some(0.0); n],
            "q90" => vec![Some(1.0); n],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let last = summary.filter(&summary.column("step").unwrap().i64().unwrap().equal(steps - 1)).unwrap();
        for (name, table) in [(results::SUMMARY_FILE, &mut summary), (results::FINAL_FILE, &mut last.clone())] {
            results::write_table(table, std::fs::File::create(dir.path().join(name)).unwrap()).unwrap();
        }
        let mut pieces = 0;
        results::for_each_piece(&dir.path().join(results::SUMMARY_FILE), &["step"], |_| {
            pieces += 1;
            Ok::<(), anyhow::Error>(())
        })
        .unwrap();
        assert_eq!(pieces, 3);
        let of_files = sweep_tables_of(dir.path(), &["loss"]).unwrap();
        assert_eq!(of_files, sweep_tables(&summary, &last, &["loss"]).unwrap());
        assert_eq!(of_files.metrics, vec!["loss", "fscore"]);
        let expected: Vec<i64> =
            (0..CURVE_POINTS as i64).map(|i| i * (steps - 1) / (CURVE_POINTS as i64 - 1)).collect();
        for metric in ["fscore", "loss"] {
            let panels = &of_files.curves[metric].panels;
            assert_eq!(panels.len(), 1);
            let algorithms: Vec<&str> = panels[0].lines.iter().map(|l| l.algorithm.as_str()).collect();
            assert_eq!(algorithms, ["us", "straddle"]);
            for line in &panels[0].lines {
                assert_eq!(line.step, expected);
                let scale = if metric == "loss" { 2.0 } else { 1.0 };
                let means: Vec<Option<f64>> = expected.iter().map(|&s| Some(s as f64 * scale)).collect();
                assert_eq!(line.mean, means);
            }
        }
        assert_eq!(of_files.final_table.unwrap().rows.len(), 2);
    }

    #[test]
    fn curves_group_one_metric_by_benchmark_then_algorithm_in_table_order() {
        let c = curves(&summary(), "loss", 100).unwrap();
        assert_eq!(c.panels.len(), 1);
        let lines = &c.panels[0].lines;
        assert_eq!(
            lines.iter().map(|l| (l.algorithm.as_str(), l.algorithm_params.as_str())).collect::<Vec<_>>(),
            vec![("us", "{}"), ("straddle", "{beta_sqrt=3.0}")]
        );
        assert_eq!(lines[0].step, vec![0, 1]);
        assert_eq!(lines[0].mean, vec![Some(5.0), Some(4.0)]);
        assert_eq!(lines[0].se, vec![Some(0.5), Some(0.4)]);
        // NaN is missing, as in the tables' own convention.
        assert_eq!(lines[1].mean, vec![Some(6.0), None]);
        assert_eq!(lines[1].q90, vec![Some(7.0), Some(6.0)]);
        assert_eq!(metrics(&summary()).unwrap(), vec!["fscore", "loss"]);
        // The family's headline metric comes first: the page shows it by default.
        assert_eq!(sweep_tables(&summary(), &summary(), &["loss"]).unwrap().metrics, vec!["loss", "fscore"]);
        assert_eq!(sweep_tables(&summary(), &summary(), &["regret"]).unwrap().metrics, vec!["fscore", "loss"]);
    }

    #[test]
    fn the_final_table_has_a_row_per_cell_and_a_column_per_metric() {
        let t = final_table(&summary()).unwrap();
        assert_eq!(t.metrics, vec!["fscore", "loss"]);
        assert_eq!(t.rows.len(), 2);
        let us = &t.rows[0];
        assert_eq!((us.algorithm.as_str(), us.step, us.n), ("us", 1, 3));
        // The last row of a (cell, metric) wins: the table holds one row per pair.
        assert_eq!(us.mean, vec![Some(0.1), Some(4.0)]);
        assert_eq!(t.rows[1].mean, vec![None, None]);
    }

    #[test]
    fn thinning_keeps_the_ends_and_spaces_the_rest_evenly() {
        assert_eq!(thin(5, 10), vec![0, 1, 2, 3, 4]);
        assert_eq!(thin(11, 3), vec![0, 5, 10]);
        let kept = thin(90_001, CURVE_POINTS);
        assert_eq!(kept.len(), CURVE_POINTS);
        assert_eq!((kept[0], *kept.last().unwrap()), (0, 90_000));
        assert!(kept.windows(2).all(|w| (224..=226).contains(&(w[1] - w[0]))), "{:?}", &kept[..4]);
    }

    /// The final table gives each cell's jobs and failures; a cell whose every job failed
    /// is a row with no values, and no line of a curve.
    #[test]
    fn the_final_table_counts_failures_and_a_cell_with_no_result_draws_no_curve() {
        let mut table = summary();
        table.with_column(Column::new(N_JOBS.into(), [3i64, 3, 3, 4, 4])).unwrap();
        table.with_column(Column::new(N_FAILED.into(), [0i64, 0, 0, 2, 2])).unwrap();
        let failed = df!(
            "family" => ["lse"], "benchmark" => ["sinusoidal"], "benchmark_params" => ["{}"],
            "algorithm" => ["mile"], "algorithm_params" => ["{}"], "horizon" => [1i64],
            "step" => [None::<i64>], "metric" => ["loss"], "n" => [0i64],
            "mean" => [None::<f64>], "std" => [None::<f64>], "se" => [None::<f64>],
            "median" => [None::<f64>], "q10" => [None::<f64>], "q90" => [None::<f64>],
            N_JOBS => [2i64], N_FAILED => [2i64],
        )
        .unwrap();
        table.vstack_mut(&failed).unwrap();
        let t = final_table(&table).unwrap();
        let counts: Vec<(&str, i64, Option<i64>, Option<i64>)> =
            t.rows.iter().map(|r| (r.algorithm.as_str(), r.n, r.n_jobs, r.n_failed)).collect();
        assert_eq!(
            counts,
            vec![("us", 3, Some(3), Some(0)), ("straddle", 2, Some(4), Some(2)), ("mile", 0, Some(2), Some(2))]
        );
        assert!(t.rows[2].mean.iter().all(Option::is_none));
        let lines = &curves(&table, "loss", 100).unwrap().panels[0].lines;
        assert_eq!(lines.iter().map(|l| l.algorithm.as_str()).collect::<Vec<_>>(), vec!["us", "straddle"]);
        // Tables without the columns (written before they existed) read as unknown.
        assert!(final_table(&summary()).unwrap().rows.iter().all(|r| r.n_jobs.is_none() && r.n_failed.is_none()));
    }
}
