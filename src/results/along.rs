//! `along_<column>.parquet`: statistics over seeds on a common grid of a monotone column.
//!
//! Budgeted experiments are compared at equal *spend*, not at equal step: BO with
//! cost-varying variable subsets plots simple regret against cumulative cost, and each run
//! spends in its own increments. For each cell (family, benchmark, algorithm and their
//! params, horizon) the grid is the sorted union of every run's values of the column;
//! each run's metrics are carried forward onto the grid (a point between two of its steps
//! takes the earlier step's value; a point before its first step takes its first value, as
//! Tay et al.'s plotting code does), and polars computes the same statistics as
//! `summary.parquet`.
//! `step` itself is also aggregated (as Float64), which gives "evaluations vs cost".
//!
//! Columns: [`schema::ALONG_TABLE`](super::schema::ALONG_TABLE). Rows sorted by cell, point,
//! metric.

use super::part::read_ranges;
use super::stats::{by_cell, statistics, with_names, Interner, Rows};
use super::*;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What [`summarize_along`] read and wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct AlongReport {
    pub n_jobs: usize,
    /// Grid points over all cells.
    pub n_points: usize,
    pub path: PathBuf,
}

/// The file name of the table along `column`.
pub fn along_file(column: &str) -> String {
    format!("along_{column}.parquet")
}

/// One job's trajectory, ready to be carried onto a grid.
pub(super) struct Run {
    /// The grid column, non-decreasing.
    axis: Vec<f64>,
    /// (metric id, values by step).
    metrics: Vec<(usize, Vec<Option<f64>>)>,
}

impl Run {
    /// Append the next piece of the same job read along `column` (an empty run becomes the
    /// piece); the column must not decrease from one piece to the next either.
    fn extend(&mut self, next: Run, column: &str) -> Result<()> {
        if let (Some(&last), Some(&first)) = (self.axis.last(), next.axis.first()) {
            if first < last {
                return Err(invalid(format!("column {column:?} is not non-decreasing ({last} then {first})")));
            }
        }
        if self.axis.is_empty() {
            *self = next;
            return Ok(());
        }
        self.axis.extend(next.axis);
        for ((mine, values), (theirs, more)) in self.metrics.iter_mut().zip(next.metrics) {
            debug_assert_eq!(*mine, theirs, "pieces of one job have its columns");
            values.extend(more);
        }
        Ok(())
    }
}

/// Add a piece of a job's run, from its row `first` on, to the runs of jobs read one after
/// another ([`for_each_job`]: a job's pieces come in a row).
pub(super) fn add_piece(runs: &mut Vec<Run>, run: Run, first: usize, column: &str) -> Result<()> {
    match runs.last_mut() {
        Some(earlier) if first > 0 => earlier.extend(run, column),
        _ => {
            runs.push(run);
            Ok(())
        }
    }
}

/// Rows of a job read at once by `armada summarize --along`.
const ALONG_PIECE_ROWS: usize = 1 << 15;

/// Aggregate the jobs under `trajectories/` (those in `only`, when given) on the common
/// grid of `column`, keeping grid points `<= upto` when given, and write
/// `along_<column>.parquet` atomically into `sweep_dir`.
pub fn summarize_along(
    sweep_dir: &Path,
    only: Option<&BTreeSet<String>>,
    column: &str,
    upto: Option<f64>,
) -> Result<AlongReport> {
    if is_fixed_column(column) && column != STEP {
        return Err(invalid(format!("cannot aggregate along {column:?}: it is not a metric or the step")));
    }
    let jobs = stored_jobs(sweep_dir, only)?;
    if jobs.is_empty() {
        return Err(nothing_to_summarize(&trajectories_dir(sweep_dir)));
    }
    // Each cell a window of grid points at a time, streamed into the table: memory for a
    // window and a row group, whatever the runs' lengths.
    let mut n_points = 0;
    let path = sweep_dir.join(along_file(column));
    write_atomic(&path, |out| {
        let mut table = TableWriter::new(out);
        for (cell, cell_jobs) in by_cell(&jobs) {
            let mut points = 0;
            along_windows(cell, &cell_jobs, column, ALONG_PIECE_ROWS, |rows| {
                let rows = match upto {
                    Some(upto) => rows.filter(&rows.column("at")?.as_materialized_series().lt_eq(upto)?)?,
                    None => rows.clone(),
                };
                if let Some(last) = rows.column("point")?.i64()?.max() {
                    points = points.max(last as usize + 1);
                }
                table.push(&rows)
            })?;
            n_points += points;
        }
        table.finish()
    })?;
    Ok(AlongReport { n_jobs: jobs.len(), n_points, path })
}

/// One cell's rows of the table along `column`: its runs carried onto their common grid
/// (cut at `upto`), then the statistics of every grid point. `metrics` numbers the runs'
/// metric ids.
pub(super) fn along_table(
    cell: &Cell,
    runs: &[Run],
    metrics: &Interner<String>,
    column: &str,
    upto: Option<f64>,
) -> Result<DataFrame> {
    let grid = common_grid(runs, upto);
    grid_rows(cell, runs.iter(), &grid, 0, metrics, column)
}

/// The statistics of the grid points `grid` (numbered from `first_point`) over `runs`, each
/// of which holds its rows up to the last grid point, from its last row before the first
/// one (or from its first row).
fn grid_rows<'a>(
    cell: &Cell,
    runs: impl Iterator<Item = &'a Run>,
    grid: &[f64],
    first_point: usize,
    metrics: &Interner<String>,
    column: &str,
) -> Result<DataFrame> {
    let mut rows = Rows::default();
    for run in runs {
        let at = carried_indices(&run.axis, grid);
        for (metric, values) in &run.metrics {
            for (point, &i) in at.iter().enumerate() {
                rows.push(0, (first_point + point) as i64, *metric, values[i]);
            }
        }
    }
    let (metric_names, metric_rank) = metrics.sorted();
    let stats = statistics(rows, &[0], &metric_rank)?;
    let mut table = with_names(&stats, std::slice::from_ref(cell), &metric_names)?;
    // `step` holds the grid index: name it `point`, and add the grid value beside it.
    let at: Vec<f64> =
        table.column(STEP)?.i64()?.iter().map(|point| grid[point.expect("not null") as usize - first_point]).collect();
    table.rename(STEP, POINT.into())?;
    let position = table.get_column_index(POINT).expect("renamed above");
    table.insert_column(position, Column::new(AT.into(), at))?;
    table.insert_column(position, Column::new(ALONG.into(), vec![column; table.height()]))?;
    Ok(table)
}

/// A run read a piece at a time: the rows held are those not yet carried onto the grid,
/// after the last row before the grid points still to come (its value carries forward).
struct Cursor<'a> {
    job: &'a StoredRows,
    /// Rows read so far.
    read: usize,
    held: Run,
}

impl Cursor<'_> {
    fn finished(&self) -> bool {
        self.read == self.job.rows
    }

    fn read_piece(&mut self, rows: usize, column: &str, metrics: &mut Interner<String>) -> Result<()> {
        let range = self.read..(self.read + rows).min(self.job.rows);
        self.read = range.end;
        let df = read_ranges(&[(self.job, range)])?.remove(0);
        let context = || format!("reading job {} in {}", self.job.key, self.job.part.display());
        let piece = read_run(&df, column, metrics).within(context)?;
        self.held.extend(piece, column).within(context)
    }

    /// Forget the rows before `end` but the last of them.
    fn consume_before(&mut self, end: f64) {
        let before = self.held.axis.partition_point(|&v| v < end);
        let drop = before.saturating_sub(1);
        self.held.axis.drain(..drop);
        for (_, values) in &mut self.held.metrics {
            values.drain(..drop);
        }
    }
}

/// The rows of one cell's table along `column`, a window of grid points at a time (each
/// handed to `emit`), reading each job `piece_rows` rows at a time: the same rows as
/// [`along_table`] over the whole runs, with memory for a window, whatever the runs'
/// lengths.
pub(super) fn along_windows(
    cell: &Cell,
    jobs: &[&StoredRows],
    column: &str,
    piece_rows: usize,
    mut emit: impl FnMut(&DataFrame) -> Result<()>,
) -> Result<()> {
    let mut metrics = Interner::new();
    let mut cursors: Vec<Cursor> =
        jobs.iter().map(|&job| Cursor { job, read: 0, held: Run { axis: Vec::new(), metrics: Vec::new() } }).collect();
    for cursor in &mut cursors {
        cursor.read_piece(piece_rows, column, &mut metrics)?;
    }
    let mut start = f64::NEG_INFINITY;
    let mut first_point = 0;
    loop {
        // Every run holds all its rows below `end`: the grid points up to there are complete.
        let end =
            cursors.iter().filter(|c| !c.finished()).filter_map(|c| c.held.axis.last().copied()).min_by(f64::total_cmp);
        let mut grid: Vec<f64> = cursors
            .iter()
            .flat_map(|c| c.held.axis.iter().copied())
            .filter(|&v| v >= start && end.is_none_or(|end| v < end))
            .collect();
        grid.sort_by(f64::total_cmp);
        grid.dedup();
        if !grid.is_empty() {
            emit(&grid_rows(cell, cursors.iter().map(|c| &c.held), &grid, first_point, &metrics, column)?)?;
            first_point += grid.len();
        }
        let Some(end) = end else { return Ok(()) };
        for cursor in &mut cursors {
            cursor.consume_before(end);
            // The runs that held nothing past `end` read on; the others still do.
            if !cursor.finished() && cursor.held.axis.last().is_some_and(|&last| last <= end) {
                cursor.read_piece(piece_rows, column, &mut metrics)?;
            }
        }
        start = end;
    }
}

/// The grid column and every float metric of one job (`step` included as a metric).
pub(super) fn read_run(df: &DataFrame, column: &str, metrics: &mut Interner<String>) -> Result<Run> {
    let axis_column = df
        .column(column)
        .map_err(|_| invalid(format!("no column {column:?} to aggregate along")))?
        .cast(&DataType::Float64)?;
    let axis: Vec<f64> = axis_column
        .f64()?
        .iter()
        .map(|v| v.filter(|v| v.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| invalid(format!("column {column:?} has a missing or non-finite value")))?;
    if let Some(w) = axis.windows(2).find(|w| w[1] < w[0]) {
        return Err(invalid(format!("column {column:?} is not non-decreasing ({} then {})", w[0], w[1])));
    }
    let mut out = Vec::new();
    for series in df.columns() {
        let name = series.name().as_str();
        let is_metric = name == STEP || (!is_fixed_column(name) && series.dtype() == &DataType::Float64);
        if name == column || !is_metric {
            continue;
        }
        let values = series.cast(&DataType::Float64)?.f64()?.iter().collect();
        out.push((metrics.id(&name.to_owned()), values));
    }
    Ok(Run { axis, metrics: out })
}

/// The sorted union of the runs' axis values, cut at `upto`.
fn common_grid(runs: &[Run], upto: Option<f64>) -> Vec<f64> {
    let mut grid: Vec<f64> = runs.iter().flat_map(|r| r.axis.iter().copied()).collect();
    grid.retain(|&v| upto.is_none_or(|u| v <= u));
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    grid
}

/// For each grid point, the index of the run's step whose value it takes: the last step
/// with `axis <= point`, or the first step when the point comes before all of them.
fn carried_indices(axis: &[f64], grid: &[f64]) -> Vec<usize> {
    let mut i = 0;
    grid.iter()
        .map(|&point| {
            while i + 1 < axis.len() && axis[i + 1] <= point {
                i += 1;
            }
            i
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use armada_core::{MetricDef, MetricKind, StepRecord};

    const METRICS: [MetricDef; 2] = [
        MetricDef { name: "cost", kind: MetricKind::Float, doc: "cumulative cost" },
        MetricDef { name: "regret", kind: MetricKind::Float, doc: "simple regret" },
    ];

    /// (algorithm, seed, (cost, regret) per step) of one fixture run.
    type FixtureRun = (&'static str, u64, &'static [(f64, f64)]);

    /// Two runs of one cell with (cost, regret) per step, plus a run of another algorithm.
    fn write_runs(dir: &Path) {
        let runs: [FixtureRun; 3] = [
            ("a", 0, &[(0.0, 8.0), (1.0, 4.0), (3.0, 2.0)]),
            ("a", 1, &[(0.5, 6.0), (2.0, 3.0), (2.0, 1.0), (5.0, 0.5)]),
            ("b", 0, &[(1.0, 9.0)]),
        ];
        for (algorithm, seed, steps) in runs {
            let records: Vec<_> = steps
                .iter()
                .enumerate()
                .map(|(step, &(cost, regret))| StepRecord {
                    step: step as u32,
                    elapsed_ms: 0.0,
                    values: vec![cost, regret],
                })
                .collect();
            write_shard(dir, &job("cvs", "hartmann", algorithm, seed), &METRICS, &records).unwrap();
        }
    }

    #[test]
    fn carried_indices_take_the_last_step_at_or_before_each_point() {
        let axis = [0.5, 2.0, 2.0, 5.0];
        assert_eq!(carried_indices(&axis, &[0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 6.0]), [0, 0, 0, 2, 2, 3, 3]);
        assert_eq!(carried_indices(&[1.0], &[0.0, 1.0, 2.0]), [0, 0, 0]);
    }

    #[test]
    fn statistics_on_the_common_grid_match_hand_computed_values() {
        let dir = tempfile::tempdir().unwrap();
        write_runs(dir.path());
        let report = summarize_along(dir.path(), None, "cost", Some(3.0)).unwrap();
        assert_eq!(report.n_jobs, 3);
        // Cell a: union {0, .5, 1, 2, 3, 5} cut at 3 -> 5 points; cell b: {1}.
        assert_eq!(report.n_points, 6);
        assert_eq!(report.path, dir.path().join("along_cost.parquet"));
        let df = read_parquet(&report.path).unwrap();
        assert_eq!(columns_of(&df), columns_of_table(&schema::ALONG_TABLE));
        let (algorithm, at, metric, n, mean) =
            (strs(&df, "algorithm"), floats(&df, "at"), strs(&df, "metric"), ints(&df, "n"), floats(&df, "mean"));
        let regret: Vec<(String, f64, f64)> = (0..df.height())
            .filter(|&i| metric[i] == "regret")
            .map(|i| (algorithm[i].clone(), at[i].unwrap(), mean[i].unwrap()))
            .collect();
        // Run 0 regret on the grid: 8, 8, 4, 4, 2; run 1: 6 (before its first step), 6, 6, 1, 1.
        let expected =
            [("a", 0.0, 7.0), ("a", 0.5, 7.0), ("a", 1.0, 5.0), ("a", 2.0, 2.5), ("a", 3.0, 1.5), ("b", 1.0, 9.0)];
        assert_eq!(regret.len(), expected.len(), "{regret:?}");
        for ((a, x, m), (ea, ex, em)) in regret.iter().zip(expected) {
            assert_eq!((a.as_str(), *x, *m), (ea, ex, em));
        }
        // Evaluations vs cost: run 0 steps 0,0,1,1,2 and run 1 steps 0,0,0,2,2.
        let steps: Vec<f64> = (0..df.height()).filter(|&i| metric[i] == "step").map(|i| mean[i].unwrap()).collect();
        assert_eq!(steps, [0.0, 0.0, 0.5, 1.5, 2.0, 0.0]);
        assert!(n.iter().all(|&n| n == Some(2) || n == Some(1)));
        // Std over the two runs at cost 2: regrets 4 and 1 -> sample std 3/sqrt(2).
        let std = floats(&df, "std");
        let i = (0..df.height()).find(|&i| metric[i] == "regret" && at[i] == Some(2.0)).unwrap();
        assert!((std[i].unwrap() - 3.0 / 2f64.sqrt()).abs() < 1e-12);
        assert!(!metric.iter().any(|m| m == "cost"), "the grid column is not also a metric");
    }

    /// Pieces of one run join in order: an empty run becomes the first, the column may not
    /// fall from one piece to the next, and a piece from row 0 starts a new job's run.
    #[test]
    fn pieces_of_a_run_join_and_a_fall_between_them_is_refused() {
        let run = |axis: &[f64], values: &[f64]| Run {
            axis: axis.to_vec(),
            metrics: vec![(0, values.iter().copied().map(Some).collect())],
        };
        let mut runs = Vec::new();
        add_piece(&mut runs, run(&[0.0, 1.0], &[5.0, 4.0]), 0, "cost").unwrap();
        add_piece(&mut runs, run(&[1.0, 3.0], &[3.0, 2.0]), 2, "cost").unwrap();
        add_piece(&mut runs, run(&[0.5], &[9.0]), 0, "cost").unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].axis, [0.0, 1.0, 1.0, 3.0]);
        assert_eq!(runs[0].metrics[0].1, [5.0, 4.0, 3.0, 2.0].map(Some));
        let err = add_piece(&mut runs, run(&[0.25], &[1.0]), 1, "cost").unwrap_err();
        assert!(format!("{err:#}").contains("column \"cost\" is not non-decreasing (0.5 then 0.25)"), "{err:#}");
        let mut empty = Run { axis: Vec::new(), metrics: Vec::new() };
        empty.extend(run(&[2.0], &[1.0]), "cost").unwrap();
        assert_eq!((empty.axis.len(), empty.metrics.len()), (1, 1));
    }

    #[test]
    fn bad_grid_columns_are_refused_with_the_column_named() {
        let dir = tempfile::tempdir().unwrap();
        write_runs(dir.path());
        let err = format!("{:#}", summarize_along(dir.path(), None, "nope", None).unwrap_err());
        assert!(err.contains("no column \"nope\""), "{err}");
        let err = format!("{:#}", summarize_along(dir.path(), None, "regret", None).unwrap_err());
        assert!(err.contains("\"regret\" is not non-decreasing"), "{err}");
        let err = format!("{:#}", summarize_along(dir.path(), None, "seed", None).unwrap_err());
        assert!(err.contains("not a metric"), "{err}");
        assert!(!dir.path().join("along_regret.parquet").exists());
        // Along the step, the grid is the steps themselves and the table is the summary's.
        let report = summarize_along(dir.path(), None, STEP, None).unwrap();
        assert_eq!(report.n_points, 4 + 1);
    }
}
