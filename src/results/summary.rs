//! `summary.parquet` and `final.parquet`: statistics over seeds, rebuilt from the
//! trajectory parts.
//!
//! Jobs of different families have different metric columns, so each job is turned
//! into long rows (step, metric, value) first, 24 bytes each. The metric column is interned
//! into integer ids numbered in sorted order, which keeps the rows small and makes sorting
//! by the ids the same as sorting by the strings; [`statistics`] then sorts the rows once
//! and computes each group's statistics in one pass, and the strings are put back on the
//! (much smaller) aggregated rows. Cells are aggregated one at a time (jobs are grouped by
//! cell from the parts' indexes first). A cell of up to [`CELL_ROWS_HELD`] rows is read a
//! million rows at a time and aggregated at once; a longer one a window of steps at a time,
//! its rows spilled to a temporary file, so that memory does not grow with the length of
//! a trajectory or the number of seeds.

use super::along::{add_piece, along_table, along_windows, read_run, Run};
use super::part::{for_each_job_run, for_each_run};
use super::stats::{by_cell, no_result_rows, statistics, with_job_counts, with_names, CellJobs, Interner, Rows};
use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// What [`summarize`] read and wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryReport {
    /// Jobs read.
    pub n_jobs: usize,
    /// Jobs present but not in the requested key set, hence not summarized.
    pub n_left_out: usize,
    /// Trajectory rows (steps) read, over all jobs.
    pub n_rows: usize,
    pub summary_path: PathBuf,
    pub final_path: PathBuf,
    /// Parts that could not be read, left out (their jobs are not in the summaries).
    pub damaged: Vec<PathBuf>,
}

/// Read the committed jobs under `trajectories/` (those whose key is in `only`, when given)
/// and write `summary.parquet` and `final.parquet` (atomically) into `sweep_dir`, and one
/// `along_<column>.parquet` per entry of `axes`. See the module docs of [`crate::results`]
/// for their schemas. Fails when there are no jobs.
///
/// `armada run` passes the keys of its sweep, so that jobs left by an edited sweep
/// file or by older code (an older version of its family) never leak into its summaries.
/// `counts`, when the sweep's jobs are known, gives each cell's `n_jobs` and `n_failed`
/// (null without), and keeps the rows of a cell whose jobs all failed.
pub fn rebuild_summaries(
    sweep_dir: &Path,
    only: Option<&BTreeSet<String>>,
    axes: &[&str],
    counts: Option<&BTreeMap<Cell, CellJobs>>,
) -> Result<SummaryReport> {
    let Readable { mut jobs, mut damaged } = readable_jobs(sweep_dir, None)?;
    if jobs.is_empty() && !damaged.is_empty() {
        // Nothing readable: say why, not that there is nothing.
        return Err(damaged.swap_remove(0));
    }
    let damaged: Vec<PathBuf> = damaged.iter().filter_map(|e| e.damaged_file().map(Path::to_path_buf)).collect();
    let n_found = jobs.len();
    if let Some(keys) = only {
        jobs.retain(|j| keys.contains(&j.key));
    }
    let n_left_out = n_found - jobs.len();
    if jobs.is_empty() {
        return Err(nothing_to_summarize(&trajectories_dir(sweep_dir)));
    }
    // One cell at a time, in cell order, so that memory holds one cell's long rows rather
    // than the whole sweep's (a 1,120-job bandit sweep is 94 million values). Within a
    // cell, jobs come in key order whatever part holds them: the files' layout never
    // changes a statistic.
    let by_cell = by_cell(&jobs);
    let mut cells = Vec::new();
    for (cell, cell_jobs) in &by_cell {
        let mut summary = summarize_cell(cell, cell_jobs, axes, sweep_dir)?;
        summary.jobs = counts.and_then(|c| c.get(*cell).copied());
        cells.push(summary);
    }
    // Cells none of whose jobs gave a result, in their place in cell order.
    let without = counts.into_iter().flatten().filter(|(cell, _)| !by_cell.contains_key(cell));
    cells.extend(without.map(|(cell, jobs)| CellSummary::without_result(cell, *jobs, axes.len())));
    cells.sort_by(|a, b| a.cell.cmp(&b.cell));
    let report = write_summaries(sweep_dir, &cells.iter().collect::<Vec<_>>(), axes)?;
    Ok(SummaryReport { n_left_out, damaged, ..report })
}

/// [`rebuild_summaries`] without along tables, and without the sweep's job counts.
pub fn summarize(sweep_dir: &Path, only: Option<&BTreeSet<String>>) -> Result<SummaryReport> {
    rebuild_summaries(sweep_dir, only, &[], None)
}

/// One cell's rows of every summary table: `summary.parquet`, `final.parquet`, and the
/// along table of each axis (in the order the axes were given). The tables of a sweep are
/// its cells' rows concatenated in cell order, so a cell's rows can be computed as soon as
/// its last job is settled (the coordinator's live summaries) and give the same bytes.
pub struct CellSummary {
    pub cell: Cell,
    pub summary: CellRows,
    pub last: DataFrame,
    pub along: Vec<CellRows>,
    /// Jobs summarized (those with a result).
    pub n_jobs: usize,
    pub n_rows: usize,
    /// The cell's jobs in its sweep and its failures, when known: its rows'
    /// `n_jobs` and `n_failed`.
    pub jobs: Option<CellJobs>,
}

impl CellSummary {
    /// A cell with no job summarized: its rows are written only when some of its jobs
    /// failed ([`no_result_rows`]), so that a cell whose every job failed keeps its rows.
    pub fn without_result(cell: &Cell, jobs: CellJobs, n_axes: usize) -> CellSummary {
        let empty = || CellRows::Held(DataFrame::empty());
        CellSummary {
            cell: cell.clone(),
            summary: empty(),
            last: DataFrame::empty(),
            along: (0..n_axes).map(|_| empty()).collect(),
            n_jobs: 0,
            n_rows: 0,
            jobs: Some(jobs),
        }
    }

    /// Whether it has rows in the summary tables: a result, or a failure to show.
    fn is_shown(&self) -> bool {
        self.n_jobs > 0 || self.jobs.is_some_and(|j| j.n_failed > 0)
    }

    /// Its rows of `summary.parquet` (`last`: of `final.parquet`) with its job counts, a
    /// chunk at a time; `metrics` are the sweep's, for a cell with no result.
    pub fn for_each_table_chunk(
        &self,
        last: bool,
        metrics: &[String],
        mut f: impl FnMut(&DataFrame) -> Result<()>,
    ) -> Result<()> {
        if self.n_jobs == 0 {
            return f(&with_job_counts(&no_result_rows(&self.cell, metrics)?, self.jobs)?);
        }
        match last {
            true => f(&with_job_counts(&self.last, self.jobs)?),
            false => self.summary.for_each_chunk(|rows| f(&with_job_counts(rows, self.jobs)?)),
        }
    }
}

/// Each cell's jobs and failures from its jobs' cells, each with whether it failed for good.
pub fn count_cells(jobs: impl IntoIterator<Item = (Cell, bool)>) -> BTreeMap<Cell, CellJobs> {
    let mut counts: BTreeMap<Cell, CellJobs> = BTreeMap::new();
    for (cell, failed) in jobs {
        let c = counts.entry(cell).or_default();
        c.n_jobs += 1;
        c.n_failed += usize::from(failed);
    }
    counts
}

/// The metrics of the cells' final rows, sorted: the rows of a cell with no result.
pub fn metrics_of(cells: &[&CellSummary]) -> Result<Vec<String>> {
    let mut metrics = BTreeSet::new();
    for cell in cells.iter().filter(|c| c.n_jobs > 0) {
        metrics.extend(cell.last.column("metric")?.str()?.iter().flatten().map(str::to_owned));
    }
    Ok(metrics.into_iter().collect())
}

/// A cell's rows of `summary.parquet` (or of an along table): in memory, or, for a cell too
/// long to hold ([`CELL_ROWS_HELD`]), in a file of their own until the table is written.
pub enum CellRows {
    Held(DataFrame),
    Spilled {
        file: Spill,
        /// Of a summary, the rows of every `stride`-th step (see [`live::live_stride`]): what
        /// live views show. Empty for an along table (live views show none).
        preview: DataFrame,
    },
}

impl CellRows {
    /// The rows a live view shows: all of them when held, else the preview.
    pub fn preview(&self) -> &DataFrame {
        match self {
            CellRows::Held(rows) => rows,
            CellRows::Spilled { preview, .. } => preview,
        }
    }

    /// Hand the rows to `f` in order, a row group at a time when spilled.
    fn for_each_chunk(&self, mut f: impl FnMut(&DataFrame) -> Result<()>) -> Result<()> {
        match self {
            CellRows::Held(rows) => f(rows),
            CellRows::Spilled { file, .. } => file.for_each_chunk(f),
        }
    }
}

/// A temporary Parquet file of summary rows beside the sweep's summaries, named as a temp
/// file (start-up removes those a killed coordinator left), removed when dropped.
pub struct Spill {
    path: PathBuf,
    rows: usize,
}

impl Spill {
    fn create(dir: &Path, write: impl FnOnce(&mut TableWriter<&mut BufWriter<File>>) -> Result<()>) -> Result<Spill> {
        let path = temp_path(dir, "cell-summary.parquet");
        let mut spill = Spill { path, rows: 0 };
        let file =
            File::options().write(true).create_new(true).open(&spill.path).map_err(io("writing", &spill.path))?;
        let mut out = BufWriter::new(file);
        let mut table = TableWriter::new(&mut out);
        write(&mut table).within(|| format!("writing {}", spill.path.display()))?;
        let rows = table.rows();
        table.finish()?;
        out.flush().map_err(io("writing", &spill.path))?;
        spill.rows = rows;
        Ok(spill)
    }

    fn for_each_chunk(&self, mut f: impl FnMut(&DataFrame) -> Result<()>) -> Result<()> {
        let open = || File::open(&self.path).map_err(io("opening", &self.path));
        let metadata = ParquetReader::new(open()?).get_metadata().map_err(damaged("reading", &self.path))?.clone();
        for start in (0..self.rows.max(1)).step_by(ROW_GROUP_ROWS) {
            let mut reader = ParquetReader::new(open()?).with_slice(Some((start, ROW_GROUP_ROWS)));
            reader.set_metadata(metadata.clone());
            f(&reader.finish().map_err(damaged("reading", &self.path))?)?;
        }
        Ok(())
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Trajectory rows of a cell (over its jobs) up to which it is summarized in one pass and
/// its summary rows held in memory; a longer cell is summarized in windows of steps
/// ([`WINDOW_ROWS`] rows each, over its jobs) and its summary rows spilled to disk.
pub const CELL_ROWS_HELD: usize = 1 << 20;

/// Trajectory rows read per window of a long cell, over its jobs: `WINDOW_ROWS / jobs`
/// steps of each, but never fewer than [`MIN_WINDOW_STEPS`] (a read decodes row groups
/// of 32,768 rows).
const WINDOW_ROWS: usize = 1 << 18;
const MIN_WINDOW_STEPS: usize = 1 << 13;

/// The summaries of one cell from its jobs, read in the order given (key order). A cell
/// longer than [`CELL_ROWS_HELD`] rows has its summary rows spilled into `spill_dir`.
pub fn summarize_cell(cell: &Cell, jobs: &[&StoredRows], axes: &[&str], spill_dir: &Path) -> Result<CellSummary> {
    summarize_cell_within(cell, jobs, axes, spill_dir, WINDOWS)
}

/// When a cell is summarized in windows, and how large they are.
#[derive(Clone, Copy)]
struct Windows {
    /// Rows of a cell summarized in one pass, at most.
    rows_held: usize,
    /// Rows of a window, over the cell's jobs.
    rows: usize,
    /// Steps of a window, at least.
    min_steps: usize,
}

const WINDOWS: Windows = Windows { rows_held: CELL_ROWS_HELD, rows: WINDOW_ROWS, min_steps: MIN_WINDOW_STEPS };

fn summarize_cell_within(
    cell: &Cell,
    jobs: &[&StoredRows],
    axes: &[&str],
    spill_dir: &Path,
    windows: Windows,
) -> Result<CellSummary> {
    let jobs: Vec<&StoredRows> = jobs.iter().copied().filter(|j| j.rows > 0).collect();
    let n_rows: usize = jobs.iter().map(|j| j.rows).sum();
    let mut long = LongRows::new(cell);
    let context = |job: &StoredRows| format!("summarizing job {} in {}", job.key, job.part.display());
    let run_context = |run: &[&StoredRows]| match run {
        [job] => context(job),
        [first, .., last] => format!("summarizing jobs {} to {} in {}", first.key, last.key, first.part.display()),
        [] => String::new(),
    };
    let (summary, along) = if n_rows <= windows.rows_held {
        let mut along_metrics = Interner::new();
        let mut runs: Vec<Vec<Run>> = axes.iter().map(|_| Vec::new()).collect();
        // Read by part: a cell's jobs lie one after another in each part, so a cell of
        // one-step jobs is a few frames, not a frame per job (the rows keep each job's
        // number in key order). Runs along an axis are taken in key order.
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        if axes.is_empty() {
            order.sort_by_key(|&i| (Arc::as_ptr(&jobs[i].part), jobs[i].offset));
        }
        let read: Vec<&StoredRows> = order.iter().map(|&i| jobs[i]).collect();
        for_each_job_run(&read, |run, df, first| {
            // A piece of a long job comes alone; several jobs come whole.
            let alone = run.len() == 1;
            let rows_of = |job: &StoredRows| if alone { df.height() } else { job.rows };
            let segments = run.clone().map(|i| (rows_of(read[i]), first + rows_of(read[i]) == read[i].rows, order[i]));
            long.add_rows(&df, segments).within(|| run_context(&read[run.clone()]))?;
            if axes.is_empty() {
                return Ok(());
            }
            let mut at = 0;
            for job in &read[run] {
                let piece = df.slice(at as i64, rows_of(job));
                at += rows_of(job);
                for (axis, runs) in axes.iter().zip(&mut runs) {
                    let run = read_run(&piece, axis, &mut along_metrics).within(|| context(job))?;
                    add_piece(runs, run, first, axis).within(|| context(job))?;
                }
            }
            Ok(())
        })?;
        let along = axes
            .iter()
            .zip(&runs)
            .map(|(axis, runs)| Ok(CellRows::Held(along_table(cell, runs, &along_metrics, axis, None)?)))
            .collect::<Result<_>>()?;
        (CellRows::Held(long.take_summary()?), along)
    } else {
        // Steps [start, start + steps) of every job at a time: a (step, metric) group is
        // whole within a window, and its values come in job order, as in one pass.
        let steps = (windows.rows / jobs.len()).max(windows.min_steps).max(1);
        let longest = jobs.iter().map(|j| j.rows).max().unwrap_or(0);
        let stride = live::live_stride(cell.horizon);
        let mut previews = Vec::new();
        let file = Spill::create(spill_dir, |table| {
            for start in (0..longest).step_by(steps) {
                // The window's jobs read by part (see above), numbered in key order.
                let mut numbered: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].rows > start).collect();
                numbered.sort_by_key(|&i| (Arc::as_ptr(&jobs[i].part), jobs[i].offset));
                let window: Vec<(&StoredRows, std::ops::Range<usize>)> =
                    numbered.iter().map(|&i| (jobs[i], start..(start + steps).min(jobs[i].rows))).collect();
                for_each_run(&window, |run, df| {
                    let mut steps = df.column(STEP)?.i64()?.iter();
                    for (job, rows) in &window[run.clone()] {
                        check_steps(job, steps.by_ref().take(rows.len()), rows.start)?;
                    }
                    let segments =
                        run.clone().map(|k| (window[k].1.len(), window[k].1.end == window[k].0.rows, numbered[k]));
                    long.add_rows(&df, segments)
                        .within(|| run_context(&window[run].iter().map(|w| w.0).collect::<Vec<_>>()))
                })?;
                let rows = long.take_summary()?;
                let on_stride: BooleanChunked =
                    rows.column(STEP)?.i64()?.iter().map(|s| s.is_some_and(|s| s % stride == 0)).collect();
                previews.push(rows.filter(&on_stride)?);
                table.push(&rows)?;
            }
            Ok(())
        })?;
        let along = axes
            .iter()
            .map(|axis| {
                let file =
                    Spill::create(spill_dir, |table| along_windows(cell, &jobs, axis, steps, |rows| table.push(rows)))?;
                Ok(CellRows::Spilled { file, preview: DataFrame::empty() })
            })
            .collect::<Result<_>>()?;
        (CellRows::Spilled { file, preview: concat(previews.iter())? }, along)
    };
    let last = long.finals()?;
    Ok(CellSummary { cell: cell.clone(), summary, last, along, n_jobs: jobs.len(), n_rows, jobs: None })
}

/// A window of a long cell is read by row; its steps must be the rows' (0, 1, ... as
/// every commit is), or a step's group would be split across windows.
fn check_steps(job: &StoredRows, steps: impl Iterator<Item = Option<i64>>, first: usize) -> Result<()> {
    if steps.enumerate().all(|(i, s)| s == Some((first + i) as i64)) {
        return Ok(());
    }
    let why = format!(
        "{}: the steps of job {} do not run 0, 1, ... (run `armada check --full`)",
        job.part.display(),
        job.key
    );
    Err(not_armadas(&job.part, why))
}

/// Concatenate the cells' rows (given in cell order) and write every summary table of a
/// sweep atomically, a row group at a time. Fails when no cell has a job. A cell with
/// failures and no result has rows in `summary.parquet` and `final.parquet` (not in the
/// along tables).
pub fn write_summaries(sweep_dir: &Path, cells: &[&CellSummary], axes: &[&str]) -> Result<SummaryReport> {
    let cells: Vec<&CellSummary> = cells.iter().copied().filter(|c| c.is_shown()).collect();
    if cells.iter().all(|c| c.n_jobs == 0) {
        return Err(nothing_to_summarize(&trajectories_dir(sweep_dir)));
    }
    let metrics = metrics_of(&cells)?;
    let summary_path = sweep_dir.join(SUMMARY_FILE);
    let final_path = sweep_dir.join(FINAL_FILE);
    // Each table is its cells' rows in order, as `each` pushes them.
    type Push<'a> = dyn FnMut(&DataFrame) -> Result<()> + 'a;
    // What the metrics mean, as the parts say: the summaries carry it on.
    let docs = read_metric_docs(sweep_dir);
    let write = |path: &Path, each: &dyn Fn(&CellSummary, &mut Push) -> Result<()>| {
        write_atomic(path, |out| {
            let mut table = TableWriter::new(out);
            if let Some(docs) = &docs {
                table =
                    table.with_metadata(KeyValueMetadata::from_static(vec![(METRICS_KEY.to_owned(), docs.clone())]));
            }
            for cell in &cells {
                each(cell, &mut |rows| table.push(rows))?;
            }
            table.finish()
        })
    };
    write(&summary_path, &|cell, push| cell.for_each_table_chunk(false, &metrics, push))?;
    write(&final_path, &|cell, push| cell.for_each_table_chunk(true, &metrics, push))?;
    for (i, axis) in axes.iter().enumerate() {
        write(&sweep_dir.join(along_file(axis)), &|cell, push| match cell.n_jobs {
            0 => Ok(()),
            _ => cell.along[i].for_each_chunk(push),
        })?;
    }
    Ok(SummaryReport {
        n_jobs: cells.iter().map(|c| c.n_jobs).sum(),
        n_left_out: 0,
        n_rows: cells.iter().map(|c| c.n_rows).sum(),
        summary_path,
        final_path,
        damaged: Vec::new(),
    })
}

/// The long rows (step, metric, value) of one cell's jobs, aggregated a window of steps at
/// a time ([`LongRows::take_summary`]), and each job's last record, aggregated once at the
/// end ([`LongRows::finals`]).
struct LongRows {
    cell: Cell,
    metrics: Interner<String>,
    /// The steps of the current window, of every job.
    all: Rows,
    /// The last step of every job (its step is set by `finals`).
    last: Rows,
    /// The largest last step of the jobs: the `step` of the cell's final rows.
    last_step: i64,
}

impl LongRows {
    fn new(cell: &Cell) -> Self {
        LongRows {
            cell: cell.clone(),
            metrics: Interner::new(),
            all: Rows::default(),
            last: Rows::default(),
            last_step: 0,
        }
    }

    /// Add the rows of consecutive jobs, one after another in `df`: `segments` gives each
    /// job's number of rows there (all of them, or a piece), whether they include its last,
    /// and its number in key order (a group's values are taken in that order, whatever
    /// order the jobs are read in). Every Float64 column that is not a fixed trajectory
    /// column is a metric; Int64 metrics are skipped.
    fn add_rows(&mut self, df: &DataFrame, segments: impl IntoIterator<Item = (usize, bool, usize)>) -> Result<()> {
        for name in TRAJECTORY.map(|c| c.name) {
            if df.column(name).is_err() {
                return Err(invalid(format!("trajectory has no column {name:?}")));
            }
        }
        if df.height() == 0 {
            return Ok(());
        }
        let steps = df
            .column(STEP)?
            .i64()?
            .iter()
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| invalid("column \"step\" has nulls"))?;
        // Each row's job's last step, when the rows end that job (else none matches), and
        // the job's number.
        let mut last_of_row = Vec::with_capacity(steps.len());
        let mut job_of_row = Vec::with_capacity(steps.len());
        for (n, ends, job) in segments {
            let at = last_of_row.len();
            let rows = steps.get(at..at + n).ok_or_else(|| invalid("more rows segmented than read"))?;
            let last_step = match rows.iter().max() {
                Some(&last) if ends => last,
                _ => i64::MIN,
            };
            if last_step != i64::MIN {
                self.last_step = self.last_step.max(last_step);
            }
            last_of_row.resize(at + n, last_step);
            job_of_row.resize(at + n, job);
        }
        if last_of_row.len() != steps.len() {
            return Err(invalid("fewer rows segmented than read"));
        }
        for column in df.columns() {
            let name = column.name().as_str();
            if is_fixed_column(name) {
                continue;
            }
            match column.dtype() {
                DataType::Float64 => {}
                DataType::Int64 => continue,
                other => {
                    return Err(invalid(format!("metric column {name:?} has type {other}, expected Float64 or Int64")))
                }
            }
            let metric = self.metrics.id(&name.to_owned());
            let rows = steps.iter().zip(&last_of_row).zip(&job_of_row);
            for (((&step, &last_step), &job), value) in rows.zip(column.f64()?.iter()) {
                self.all.push_of_job(0, step, metric, value, job);
                if step == last_step {
                    // One group per cell, whatever step each job ended at.
                    self.last.push_of_job(0, 0, metric, value, job);
                }
            }
        }
        Ok(())
    }

    /// The `summary.parquet` rows of the steps added since the last call, in the output
    /// schema; they are dropped.
    fn take_summary(&mut self) -> Result<DataFrame> {
        let rows = std::mem::take(&mut self.all);
        self.finish(rows)
    }

    /// The `final.parquet` rows of the cell.
    fn finals(mut self) -> Result<DataFrame> {
        let mut rows = std::mem::take(&mut self.last);
        rows.set_steps_by_cell(&[self.last_step]);
        self.finish(rows)
    }

    fn finish(&self, rows: Rows) -> Result<DataFrame> {
        let (metrics, metric_rank) = self.metrics.sorted();
        let stats = statistics(rows, &[0], &metric_rank)?;
        with_names(&stats, std::slice::from_ref(&self.cell), &metrics)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use std::collections::BTreeMap;

    type Row = (String, String, i64, String, i64, Option<f64>, Option<f64>, Option<f64>);

    /// (family, algorithm, step, metric, n, mean, std, se) of every row.
    fn rows(df: &DataFrame) -> Vec<Row> {
        let (family, algorithm, step, metric) =
            (strs(df, "family"), strs(df, "algorithm"), ints(df, "step"), strs(df, "metric"));
        let (n, mean, std, se) = (ints(df, "n"), floats(df, "mean"), floats(df, "std"), floats(df, "se"));
        (0..df.height())
            .map(|i| {
                let (f, a, m) = (family[i].clone(), algorithm[i].clone(), metric[i].clone());
                (f, a, step[i].unwrap(), m, n[i].unwrap(), mean[i], std[i], se[i])
            })
            .collect()
    }

    fn close(actual: Option<f64>, expected: Option<f64>) -> bool {
        match (actual, expected) {
            (Some(a), Some(e)) => (a - e).abs() <= 1e-12 * e.abs().max(1.0),
            (a, e) => a == e,
        }
    }

    fn assert_row(actual: &Row, expected: &Row) {
        let ok = actual.0 == expected.0
            && actual.1 == expected.1
            && actual.2 == expected.2
            && actual.3 == expected.3
            && actual.4 == expected.4
            && close(actual.5, expected.5)
            && close(actual.6, expected.6)
            && close(actual.7, expected.7);
        assert!(ok, "\nactual   {actual:?}\nexpected {expected:?}");
    }

    fn row(f: &str, a: &str, step: i64, m: &str, n: i64, mean: f64, std: Option<f64>) -> Row {
        let se = std.map(|s| s / (n as f64).sqrt());
        (f.into(), a.into(), step, m.into(), n, Some(mean), std, se)
    }

    #[test]
    fn summary_statistics_match_hand_computed_values() {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path());
        let report = summarize(dir.path(), None).unwrap();
        assert_eq!(report.n_jobs, 7);
        assert_eq!(report.n_rows, 6 * 3 + 2);

        let summary = read_parquet(&report.summary_path).unwrap();
        assert_eq!(columns_of(&summary), columns_of_table(&schema::SUMMARY));
        // Rebuilt from the trajectories alone: the sweep's job counts are not known.
        assert!(ints(&summary, N_JOBS).iter().chain(&ints(&summary, N_FAILED)).all(Option::is_none));
        assert!(!strs(&summary, "metric").iter().any(|m| m == "chosen" || m == "arm"));

        // Hand-computed: [10, 20, 30] has std 10; [1, 2, 4] has mean 7/3 and variance
        // ((4/3)^2 + (1/3)^2 + (5/3)^2) / 2 = 7/3; UCB step 1 is [1, 3] (a NaN dropped).
        let expected = [
            row("bandit", "thompson", 0, "reward", 1, 0.0, None),
            row("bandit", "thompson", 1, "reward", 1, 1.0, None),
            row("lse", "straddle", 0, "regret", 3, 20.0, Some(10.0)),
            row("lse", "straddle", 1, "regret", 3, 6.0, Some(1.0)),
            row("lse", "straddle", 2, "regret", 3, 7.0 / 3.0, Some((7.0f64 / 3.0).sqrt())),
            row("lse", "ucb", 0, "regret", 1, 5.0, None),
            row("lse", "ucb", 1, "regret", 2, 2.0, Some(2f64.sqrt())),
            row("lse", "ucb", 2, "regret", 3, 0.5, Some(0.0)),
        ];
        let actual = rows(&summary);
        assert_eq!(actual.len(), expected.len(), "{actual:?}");
        for (a, e) in actual.iter().zip(&expected) {
            assert_row(a, e);
        }
        // Order statistics, linear interpolation at (n - 1) q as numpy does.
        let (median, q10, q90) = (floats(&summary, "median"), floats(&summary, "q10"), floats(&summary, "q90"));
        let straddle0 = 2;
        assert_eq!((median[straddle0], q10[straddle0], q90[straddle0]), (Some(20.0), Some(12.0), Some(28.0)));
        let straddle2 = 4;
        assert!(close(median[straddle2], Some(2.0)));
        assert!(close(q10[straddle2], Some(1.2)), "{:?}", q10[straddle2]);
        assert!(close(q90[straddle2], Some(3.6)), "{:?}", q90[straddle2]);
        let ucb0 = 5;
        assert_eq!((median[ucb0], q10[ucb0], q90[ucb0]), (Some(5.0), Some(5.0), Some(5.0)));
        let ucb1 = 6;
        assert!(close(median[ucb1], Some(2.0)));
        assert!(close(q10[ucb1], Some(1.2)), "{:?}", q10[ucb1]);
        assert!(close(q90[ucb1], Some(2.8)), "{:?}", q90[ucb1]);
        assert_eq!(strs(&summary, "benchmark_params")[2], r#"{"noise_sd":0.1}"#);
        assert_eq!(strs(&summary, "algorithm_params")[2], r#"{"beta_sqrt":3.0}"#);
        assert_eq!(ints(&summary, "horizon"), vec![Some(2); 8]);

        // final.parquet: each job's last step only.
        let last = read_parquet(&report.final_path).unwrap();
        assert_eq!(last.get_column_names(), summary.get_column_names());
        let expected = [expected[1].clone(), expected[4].clone(), expected[7].clone()];
        let actual = rows(&last);
        assert_eq!(actual.len(), expected.len(), "{actual:?}");
        for (a, e) in actual.iter().zip(&expected) {
            assert_row(a, e);
        }
        assert!(close(floats(&last, "q90")[1], Some(3.6)));
    }

    /// Jobs of one cell that end at different steps (a family whose episodes end early):
    /// each step counts the jobs that reached it, and the final table has one row per
    /// metric for the cell, over every job's own last record, at the largest last step.
    #[test]
    fn jobs_of_unequal_length_summarize_per_step_and_per_own_last_record() {
        let dir = tempfile::tempdir().unwrap();
        // regret by seed: ends at step 2, 0 and 1.
        let runs: [&[f64]; 3] = [&[8.0, 4.0, 2.0], &[6.0], &[9.0, 3.0]];
        for (seed, regrets) in runs.iter().enumerate() {
            let records: Vec<armada_core::StepRecord> = regrets
                .iter()
                .enumerate()
                .map(|(step, &r)| armada_core::StepRecord { step: step as u32, elapsed_ms: 0.0, values: vec![r, 0.0] })
                .collect();
            write_shard(dir.path(), &job("lse", "sinusoidal", "straddle", seed as u64), &METRICS, &records).unwrap();
        }
        let report = summarize(dir.path(), None).unwrap();
        let summary = read_parquet(&report.summary_path).unwrap();
        assert_eq!(ints(&summary, "step"), vec![Some(0), Some(1), Some(2)]);
        assert_eq!(ints(&summary, "n"), vec![Some(3), Some(2), Some(1)]);
        assert_eq!(floats(&summary, "mean"), vec![Some(23.0 / 3.0), Some(3.5), Some(2.0)]);
        let last = read_parquet(&report.final_path).unwrap();
        assert_eq!(ints(&last, "step"), vec![Some(2)]);
        assert_eq!(ints(&last, "n"), vec![Some(3)]);
        // The last records: 2, 6 and 3.
        assert_eq!(floats(&last, "mean"), vec![Some(11.0 / 3.0)]);
        assert_eq!(floats(&last, "median"), vec![Some(3.0)]);
    }

    #[test]
    fn summarize_twice_gives_identical_files() {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path());
        let first = summarize(dir.path(), None).unwrap();
        let summary = fs::read(&first.summary_path).unwrap();
        let last = fs::read(&first.final_path).unwrap();
        let second = summarize(dir.path(), None).unwrap();
        assert_eq!(first, second);
        assert!(fs::read(&second.summary_path).unwrap() == summary);
        assert!(fs::read(&second.final_path).unwrap() == last);
        let mut names: Vec<_> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["final.parquet", "summary.parquet", "trajectories"], "no temp file left behind");
    }

    /// The same jobs one per part or all in one part (one per family) give the same bytes.
    #[test]
    fn summaries_do_not_depend_on_how_jobs_are_spread_over_parts() {
        let (spread, packed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        write_fixture(spread.path());
        let mut by_family: BTreeMap<&str, Vec<PartJob>> = BTreeMap::new();
        let jobs = fixture_jobs();
        for (job, _, records) in &jobs {
            let records = records.clone();
            let part = PartJob::of(job, records.len(), records.into_iter().map(Ok));
            by_family.entry(if job.spec.family == "lse" { "lse" } else { "bandit" }).or_default().push(part);
        }
        for (family, parts) in by_family {
            let metrics = if family == "lse" { &METRICS[..] } else { &BANDIT_METRICS[..] };
            write_part(packed.path(), metrics, parts).unwrap();
        }
        assert_eq!(part_files(packed.path()).unwrap().len(), 2);
        assert_eq!(part_files(spread.path()).unwrap().len(), 7);
        let (a, b) = (summarize(spread.path(), None).unwrap(), summarize(packed.path(), None).unwrap());
        assert_eq!((a.n_jobs, a.n_rows), (b.n_jobs, b.n_rows));
        assert!(fs::read(&a.summary_path).unwrap() == fs::read(&b.summary_path).unwrap());
        assert!(fs::read(&a.final_path).unwrap() == fs::read(&b.final_path).unwrap());
    }

    /// A cell's jobs are read part by part, not in key order, yet each group's values are
    /// summed in key order: values chosen so that any other order of the sum gives another
    /// mean (1e16 + 1 rounds back to 1e16).
    #[test]
    fn a_cells_values_are_summed_in_key_order_whatever_order_its_parts_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut jobs: Vec<armada_core::ValidJob> =
            (0..4).map(|seed| job("lse", "sinusoidal", "straddle", seed)).collect();
        jobs.sort_by(|a, b| a.key.0.cmp(&b.key.0));
        let values = [1e16, 1.0, -1e16, 1.0];
        let record = |v: f64| vec![armada_core::StepRecord { step: 0, elapsed_ms: 0.0, values: vec![v, 0.0] }];
        // Keys 1 and 3 in one part, 2 and 4 in the other: read either way, not in key order.
        for parity in 0..2 {
            let parts: Vec<PartJob> = (parity..4)
                .step_by(2)
                .map(|i| PartJob::of(&jobs[i], 1, record(values[i]).into_iter().map(Ok)))
                .collect();
            write_part(dir.path(), &METRICS, parts).unwrap();
        }
        assert_eq!(part_files(dir.path()).unwrap().len(), 2);
        let report = summarize(dir.path(), None).unwrap();
        let summary = read_parquet(&report.summary_path).unwrap();
        let metric = strs(&summary, "metric");
        let mean = floats(&summary, "mean");
        let regret = (0..summary.height()).find(|&i| metric[i] == METRICS[0].name).unwrap();
        let in_key_order = values.iter().sum::<f64>() / 4.0;
        assert_eq!(in_key_order, 0.25);
        assert_eq!(((1e16 - 1e16) + 1.0 + 1.0) / 4.0, 0.5, "part by part, the mean would differ");
        assert_eq!(mean[regret], Some(in_key_order));
        let finals = read_parquet(&report.final_path).unwrap();
        let (metric, mean) = (strs(&finals, "metric"), floats(&finals, "mean"));
        let regret = (0..finals.height()).find(|&i| metric[i] == METRICS[0].name).unwrap();
        assert_eq!(mean[regret], Some(in_key_order));
        // The same in one pass and in windows of one step.
        let mut stored = stored_jobs(dir.path(), None).unwrap();
        stored.sort_by(|a, b| a.key.cmp(&b.key));
        let refs: Vec<&StoredRows> = stored.iter().collect();
        let one_pass = Windows { rows_held: usize::MAX, ..WINDOWS };
        for windows in [one_pass, Windows { rows_held: 0, rows: 1, min_steps: 1 }] {
            let cell = summarize_cell_within(&refs[0].cell, &refs, &[], dir.path(), windows).unwrap();
            let (metric, mean) = (strs(&cell.last, "metric"), floats(&cell.last, "mean"));
            let regret = (0..cell.last.height()).find(|&i| metric[i] == METRICS[0].name).unwrap();
            assert_eq!(mean[regret], Some(in_key_order), "rows held: {}", windows.rows_held);
        }
    }

    /// A long cell is summarized in windows of steps and its rows spilled, and gives the
    /// bytes of one pass over it: jobs of unequal length (one ends early), missing values,
    /// windows that split every job, and an along table carried over the pieces.
    #[test]
    fn a_cell_summarized_in_windows_and_spilled_gives_the_bytes_of_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let lengths = [23usize, 17, 23, 5, 23];
        let mut jobs = Vec::new();
        for (seed, &n) in lengths.iter().enumerate() {
            let records: Vec<armada_core::StepRecord> = (0..n)
                .map(|step| {
                    let x = ((seed * 31 + step * 17) % 13) as f64 / 3.0;
                    let regret = if (seed + step) % 7 == 0 { f64::NAN } else { x };
                    // A non-decreasing column with repeats, to carry along.
                    let chosen = ((step + seed) / 3) as f64;
                    armada_core::StepRecord { step: step as u32, elapsed_ms: 0.0, values: vec![regret, chosen] }
                })
                .collect();
            let mut valid = job("lse", "sinusoidal", "straddle", seed as u64);
            valid.spec.horizon = 22;
            jobs.push((valid, records));
        }
        let parts: Vec<PartJob> =
            jobs.iter().map(|(j, r)| PartJob::of(j, r.len(), r.clone().into_iter().map(Ok))).collect();
        write_part(dir.path(), &METRICS, parts).unwrap();
        let stored = stored_jobs(dir.path(), None).unwrap();
        let refs: Vec<&StoredRows> = stored.iter().collect();
        let cell = stored[0].cell.clone();
        let axes = ["step", "chosen"];
        let files = |cell_summary: &CellSummary, out: &Path| {
            write_summaries(out, &[cell_summary], &axes).unwrap();
            let names = [SUMMARY_FILE, FINAL_FILE, "along_step.parquet", "along_chosen.parquet"];
            names.map(|f| fs::read(out.join(f)).unwrap())
        };
        let one_pass = Windows { rows_held: usize::MAX, ..WINDOWS };
        let one_pass = summarize_cell_within(&cell, &refs, &axes, dir.path(), one_pass).unwrap();
        assert!(matches!(one_pass.summary, CellRows::Held(_)));
        let first = tempfile::tempdir().unwrap();
        let expected = files(&one_pass, first.path());
        // 10 rows a window over 5 jobs: 2 steps of each at a time.
        let windows = Windows { rows_held: 0, rows: 10, min_steps: 1 };
        let windowed = summarize_cell_within(&cell, &refs, &axes, dir.path(), windows).unwrap();
        let CellRows::Spilled { file, preview } = &windowed.summary else { panic!("a long cell is spilled") };
        assert!(file.path.exists());
        assert_eq!((windowed.n_jobs, windowed.n_rows), (5, 91));
        let out = tempfile::tempdir().unwrap();
        for (name, (got, want)) in ["summary", "final", "along step", "along chosen"]
            .iter()
            .zip(files(&windowed, out.path()).iter().zip(&expected))
        {
            assert!(got == want, "{name}: not the bytes of one pass");
        }
        // The preview has every row of the exact table (a horizon of 22 is under LIVE_STEPS).
        let written = read_parquet(&out.path().join(SUMMARY_FILE)).unwrap();
        assert_eq!(preview, &written.drop(N_JOBS).unwrap().drop(N_FAILED).unwrap());
        let spilled = file.path.clone();
        drop(windowed);
        assert!(!spilled.exists(), "a spill is removed with its summary");
    }

    /// A window's steps are its rows: a job whose steps do not run 0, 1, ... is refused
    /// rather than summarized into split groups.
    #[test]
    fn a_window_whose_steps_are_not_its_rows_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let records: Vec<armada_core::StepRecord> = [0u32, 2, 1]
            .iter()
            .map(|&step| armada_core::StepRecord { step, elapsed_ms: 0.0, values: vec![1.0, 0.0] })
            .collect();
        write_shard(dir.path(), &job("lse", "sinusoidal", "straddle", 0), &METRICS, &records).unwrap();
        let stored = stored_jobs(dir.path(), None).unwrap();
        let windows = Windows { rows_held: 0, rows: 1, min_steps: 1 };
        let Err(err) = summarize_cell_within(&stored[0].cell, &[&stored[0]], &[], dir.path(), windows) else {
            panic!("steps 0, 2, 1 summarized");
        };
        assert!(format!("{err:#}").contains("do not run 0, 1, ..."), "{err:#}");
        assert!(matches!(err.root(), ResultsError::Damaged { .. }));
    }

    /// A table pushed in pieces is the file polars writes from one frame (under a row
    /// group), and past a row group it is cut into row groups of exactly that many rows.
    #[test]
    fn a_table_is_the_same_bytes_however_its_rows_are_pushed() {
        let frame = |n: usize| {
            let step: Vec<i64> = (0..n as i64).collect();
            let value: Vec<f64> = (0..n).map(|i| (i % 97) as f64 / 7.0).collect();
            df!("step" => step, "value" => value).unwrap()
        };
        let small = frame(5000);
        let mut polars_bytes = Vec::new();
        parquet_writer(&mut polars_bytes).finish(&mut small.clone()).unwrap();
        let pushed = |rows: &DataFrame, piece: usize| {
            let mut bytes = Vec::new();
            let mut table = TableWriter::new(&mut bytes);
            for start in (0..rows.height().max(1)).step_by(piece) {
                table.push(&rows.slice(start as i64, piece)).unwrap();
            }
            table.finish().unwrap();
            bytes
        };
        assert!(pushed(&small, 5000) == polars_bytes);
        assert!(pushed(&small, 777) == polars_bytes);
        assert!(parquet_bytes(&small).unwrap() == polars_bytes);

        let large = frame(ROW_GROUP_ROWS * 2 + 3);
        let whole = pushed(&large, large.height());
        assert!(pushed(&large, 100_003) == whole);
        let metadata = ParquetReader::new(std::io::Cursor::new(whole)).get_metadata().unwrap().clone();
        let groups: Vec<usize> = metadata.row_groups.iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, [ROW_GROUP_ROWS, ROW_GROUP_ROWS, 3]);
    }

    #[test]
    fn summarize_without_jobs_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = summarize(dir.path(), None).unwrap_err();
        assert!(format!("{err:#}").contains("nothing to summarize"), "{err:#}");
        fs::create_dir_all(trajectories_dir(dir.path())).unwrap();
        let err = summarize(dir.path(), None).unwrap_err();
        assert!(format!("{err:#}").contains("nothing to summarize"), "{err:#}");
        assert!(!dir.path().join(SUMMARY_FILE).exists());
    }
}
