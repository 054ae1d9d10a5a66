//! Statistics over seeds: long rows (cell, step, metric, value) grouped by their ids, and
//! the columns `n`, `mean`, `std`, `se`, `median`, `q10` and `q90` of each group, in plain
//! Rust (see [`statistics`]); the summary and along tables are built from them.

use super::schema::{CELL_TEXT, HORIZON, JOB_COUNTS, MEAN, MEDIAN, METRIC, N, Q10, Q90, SE, STATISTICS, STD, STEP};
use super::{Cell, Result, StoredRows};
use polars::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// Non-empty jobs grouped by cell, in cell order; each group keeps the jobs' (key) order.
pub(super) fn by_cell(jobs: &[StoredRows]) -> BTreeMap<&Cell, Vec<&StoredRows>> {
    let mut cells: BTreeMap<&Cell, Vec<&StoredRows>> = BTreeMap::new();
    for job in jobs.iter().filter(|j| j.rows > 0) {
        cells.entry(&*job.cell).or_default().push(job);
    }
    cells
}

/// Values numbered in order of first appearance.
pub(super) struct Interner<T> {
    values: Vec<T>,
    ids: HashMap<T, usize>,
}

impl<T: Clone + Eq + Hash + Ord> Interner<T> {
    pub(super) fn new() -> Self {
        Interner { values: Vec::new(), ids: HashMap::new() }
    }

    pub(super) fn id(&mut self, value: &T) -> usize {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        self.values.push(value.clone());
        self.ids.insert(value.clone(), self.values.len() - 1);
        self.values.len() - 1
    }

    /// The values sorted, and for each id its position in that order.
    pub(super) fn sorted(&self) -> (Vec<T>, Vec<i64>) {
        let mut order: Vec<usize> = (0..self.values.len()).collect();
        order.sort_by(|&a, &b| self.values[a].cmp(&self.values[b]));
        let mut rank = vec![0; order.len()];
        for (pos, &id) in order.iter().enumerate() {
            rank[id] = pos as i64;
        }
        (order.iter().map(|&id| self.values[id].clone()).collect(), rank)
    }
}

/// Long rows (cell id, step, metric id, value), 24 bytes each; a missing value (null or
/// NaN) is stored as NaN.
#[derive(Default)]
pub(super) struct Rows {
    cell: Vec<u32>,
    step: Vec<i64>,
    metric: Vec<u32>,
    value: Vec<f64>,
    /// Each row's job, numbered in key order, when rows are pushed by [`Rows::push_of_job`]
    /// (jobs read in another order): a group's values are then taken in this order.
    job: Vec<u32>,
}

impl Rows {
    pub(super) fn push(&mut self, cell: usize, step: i64, metric: usize, value: Option<f64>) {
        self.cell.push(cell as u32);
        self.step.push(step);
        self.metric.push(metric as u32);
        // NaN is missing: it counts neither in n nor in any statistic.
        self.value.push(value.unwrap_or(f64::NAN));
    }

    /// [`Rows::push`] for job number `job` (in key order); every row of these rows must be
    /// pushed so.
    pub(super) fn push_of_job(&mut self, cell: usize, step: i64, metric: usize, value: Option<f64>, job: usize) {
        self.push(cell, step, metric, value);
        self.job.push(job as u32);
    }

    /// Give every row the step of its cell, `steps[cell]`.
    pub(super) fn set_steps_by_cell(&mut self, steps: &[i64]) {
        for (step, &cell) in self.step.iter_mut().zip(&self.cell) {
            *step = steps[cell as usize];
        }
    }
}

/// Statistics per (cell, step, metric), sorted by those ids, which are ranks: columns
/// `cell`, `step`, `metric`, `n`, `mean`, `std`, `se`, `median`, `q10`, `q90`.
///
/// One sort of the row indices and one pass over the groups, in plain Rust: a group's
/// values are summed in row order (so in job-key order), and its order statistics come
/// from sorting that group alone. Memory is the rows plus 4 bytes each, where polars'
/// group-by over millions of small groups took about 430 bytes a value.
pub(super) fn statistics(rows: Rows, cell_rank: &[i64], metric_rank: &[i64]) -> Result<DataFrame> {
    debug_assert!(rows.job.is_empty() || rows.job.len() == rows.value.len(), "every row or none pushed with its job");
    let key = |i: usize| (cell_rank[rows.cell[i] as usize], rows.step[i], metric_rank[rows.metric[i] as usize]);
    let mut order: Vec<u32> = (0..rows.value.len() as u32).collect();
    // Stable: within a group, values keep their row order, or their jobs' order.
    if rows.job.is_empty() {
        order.sort_by_key(|&i| key(i as usize));
    } else {
        order.sort_by_key(|&i| (key(i as usize), rows.job[i as usize]));
    }
    let mut out = Stats::default();
    let mut values = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let group = key(order[start] as usize);
        let mut end = start;
        values.clear();
        while end < order.len() && key(order[end] as usize) == group {
            let v = rows.value[order[end] as usize];
            if !v.is_nan() {
                values.push(v);
            }
            end += 1;
        }
        out.push(group, &mut values);
        start = end;
    }
    out.into_frame()
}

/// The statistics columns being built.
#[derive(Default)]
pub(super) struct Stats {
    cell: Vec<i64>,
    step: Vec<i64>,
    metric: Vec<i64>,
    n: Vec<i64>,
    mean: Vec<Option<f64>>,
    std: Vec<Option<f64>>,
    se: Vec<Option<f64>>,
    median: Vec<Option<f64>>,
    q10: Vec<Option<f64>>,
    q90: Vec<Option<f64>>,
}

impl Stats {
    /// One group's statistics from its present values (reordered in place).
    fn push(&mut self, (cell, step, metric): (i64, i64, i64), values: &mut [f64]) {
        let n = values.len();
        let mean = (n > 0).then(|| values.iter().sum::<f64>() / n as f64);
        // Sample standard deviation (ddof = 1), null below two values.
        let std = mean.filter(|_| n >= 2).map(|m| {
            let squares: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
            (squares / (n - 1) as f64).sqrt()
        });
        values.sort_by(f64::total_cmp);
        let quantiles = [0.5, 0.1, 0.9].map(|q| quantile(values, q));
        self.push_row((cell, step, metric), n, mean, std, quantiles);
    }

    /// One group's provisional statistics from running moments: no order statistics.
    pub(super) fn push_moments(&mut self, group: (i64, i64, i64), n: usize, mean: f64, m2: f64) {
        let mean = (n > 0).then_some(mean);
        let std = mean.filter(|_| n >= 2).map(|_| (m2.max(0.0) / (n - 1) as f64).sqrt());
        self.push_row(group, n, mean, std, [None; 3]);
    }

    /// A row; `se` follows from `std`, the quantiles are (median, q10, q90).
    fn push_row(
        &mut self,
        (cell, step, metric): (i64, i64, i64),
        n: usize,
        mean: Option<f64>,
        std: Option<f64>,
        [median, q10, q90]: [Option<f64>; 3],
    ) {
        self.cell.push(cell);
        self.step.push(step);
        self.metric.push(metric);
        self.n.push(n as i64);
        self.mean.push(mean);
        self.std.push(std);
        self.se.push(std.map(|s| s / (n as f64).sqrt()));
        self.median.push(median);
        self.q10.push(q10);
        self.q90.push(q90);
    }

    pub(super) fn into_frame(self) -> Result<DataFrame> {
        let height = self.n.len();
        let statistics = [
            Column::new(N.into(), self.n),
            Column::new(MEAN.into(), self.mean),
            Column::new(STD.into(), self.std),
            Column::new(SE.into(), self.se),
            Column::new(MEDIAN.into(), self.median),
            Column::new(Q10.into(), self.q10),
            Column::new(Q90.into(), self.q90),
        ];
        debug_assert!(statistics.iter().map(|c| c.name().as_str()).eq(STATISTICS));
        let ids = [
            Column::new(CELL_ID.into(), self.cell),
            Column::new(STEP.into(), self.step),
            Column::new(METRIC.into(), self.metric),
        ];
        Ok(DataFrame::new(height, ids.into_iter().chain(statistics).collect())?)
    }
}

/// The column of a cell's id in [`statistics`]' frame, before [`with_names`] replaces it.
const CELL_ID: &str = "cell";

/// The `q` quantile of sorted values, interpolating linearly between the two closest
/// ranks (numpy's default): position q (n - 1).
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let position = q * last as f64;
    let (lo, hi) = (position.floor() as usize, position.ceil() as usize);
    if sorted[lo] == sorted[hi] {
        // On a rank, or between equal values: nothing to interpolate (inf - inf is NaN).
        return Some(sorted[lo]);
    }
    Some(sorted[lo] + (position - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Replace the cell and metric ids by their columns, in the output column order:
/// [`schema::CELL`](super::schema::CELL), `step`, `metric`, the statistics.
pub(super) fn with_names(stats: &DataFrame, cells: &[Cell], metrics: &[String]) -> Result<DataFrame> {
    let cell_of = |id: Option<i64>| -> &Cell { &cells[id.expect("group keys are not null") as usize] };
    let cell_ids = stats.column(CELL_ID)?.i64()?;
    let mut columns: Vec<Column> = CELL_TEXT
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let values: Vec<&str> = cell_ids.iter().map(|id| cell_of(id).texts()[c]).collect();
            Column::new((*name).into(), values)
        })
        .collect();
    let horizon: Vec<i64> = cell_ids.iter().map(|id| cell_of(id).horizon).collect();
    let metric: Vec<&str> = stats
        .column(METRIC)?
        .i64()?
        .iter()
        .map(|id| metrics[id.expect("group keys are not null") as usize].as_str())
        .collect();
    columns.extend([
        Column::new(HORIZON.into(), horizon),
        stats.column(STEP)?.clone(),
        Column::new(METRIC.into(), metric),
    ]);
    for name in STATISTICS {
        columns.push(stats.column(name)?.clone());
    }
    Ok(DataFrame::new(stats.height(), columns)?)
}

/// The rows of a cell none of whose jobs gave a result: one per metric (sorted), with no
/// step, `n = 0` and null statistics, in [`with_names`]' schema.
pub(super) fn no_result_rows(cell: &Cell, metrics: &[String]) -> Result<DataFrame> {
    let k = metrics.len();
    let mut columns: Vec<Column> =
        CELL_TEXT.iter().zip(cell.texts()).map(|(name, value)| Column::new((*name).into(), vec![value; k])).collect();
    columns.extend([
        Column::new(HORIZON.into(), vec![cell.horizon; k]),
        Column::new(STEP.into(), vec![None::<i64>; k]),
        Column::new(METRIC.into(), metrics.to_vec()),
        Column::new(N.into(), vec![0i64; k]),
    ]);
    for name in &STATISTICS[1..] {
        columns.push(Column::new((*name).into(), vec![None::<f64>; k]));
    }
    Ok(DataFrame::new(k, columns)?)
}

/// How many jobs a cell has in its sweep and how many of them failed for good: the
/// `n_jobs` and `n_failed` columns of every row of `summary.parquet` and `final.parquet`,
/// so that a method whose hard seeds fail is not summarized as if it had only easy ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellJobs {
    pub n_jobs: usize,
    pub n_failed: usize,
}

/// `rows` of one cell with its job counts as the last two columns (null when not known:
/// summaries rebuilt from the trajectories alone, with no record of the sweep's jobs).
pub(super) fn with_job_counts(rows: &DataFrame, jobs: Option<CellJobs>) -> Result<DataFrame> {
    let k = rows.height();
    let count = |f: fn(CellJobs) -> usize| jobs.map(|j| f(j) as i64);
    let mut out = rows.clone();
    let [n_jobs, n_failed] = JOB_COUNTS;
    out.with_column(Column::new(n_jobs.into(), vec![count(|j| j.n_jobs); k]))?;
    out.with_column(Column::new(n_failed.into(), vec![count(|j| j.n_failed); k]))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    /// Groups with no value, with infinities, and out of order: sorted by rank, n = 0 with
    /// null statistics, ranks hit exactly are not interpolated.
    #[test]
    fn statistics_of_edge_groups() {
        let mut rows = Rows::default();
        // cell 0 has rank 1, cell 1 rank 0: output starts with cell 1.
        rows.push(0, 0, 0, Some(f64::INFINITY));
        rows.push(0, 0, 0, Some(1.0));
        rows.push(0, 0, 0, Some(f64::INFINITY));
        rows.push(1, 3, 0, None);
        rows.push(1, 3, 0, Some(f64::NAN));
        let stats = statistics(rows, &[1, 0], &[0]).unwrap();
        assert_eq!(ints(&stats, "cell"), vec![Some(0), Some(1)]);
        assert_eq!(ints(&stats, "step"), vec![Some(3), Some(0)]);
        assert_eq!(ints(&stats, "n"), vec![Some(0), Some(3)]);
        for name in ["mean", "std", "se", "median", "q10", "q90"] {
            assert_eq!(floats(&stats, name)[0], None, "{name} of an empty group");
        }
        // [1, inf, inf]: median and q90 are inf (q90 between two infinities), q10 interpolates.
        assert_eq!(floats(&stats, "median")[1], Some(f64::INFINITY));
        assert_eq!(floats(&stats, "q90")[1], Some(f64::INFINITY));
        assert_eq!(floats(&stats, "mean")[1], Some(f64::INFINITY));
        assert_eq!(floats(&stats, "q10")[1], Some(f64::INFINITY), "1 + 0.2 (inf - 1)");
    }
}
