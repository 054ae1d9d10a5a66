//! `summary.parquet` and `final.parquet`: statistics over seeds, rebuilt from the
//! trajectory parts.
//!
//! Jobs of different families have different metric columns, so each job is turned
//! into long rows (cell, step, metric, value) first, 24 bytes each. The cell and metric
//! columns are interned (per aggregation, that is per cell) into integer ids numbered in
//! sorted order, which keeps the rows small and
//! makes sorting by the ids the same as sorting by the strings; [`statistics`] then sorts
//! the rows once and computes each group's statistics in one pass, and the strings are put
//! back on the (much smaller) aggregated rows. Cells are aggregated one at a time (jobs are
//! grouped by cell from the parts' indexes first, and read about a million rows at a
//! time), so memory is bounded by the largest cell's long rows, not the sweep: 10 million
//! values (100 seeds x 100,000 steps) take about 450 MB.

use super::along::{along_table, read_run, Run};
use super::part::for_each_job;
use super::stats::{by_cell, statistics, with_names, Interner, Rows};
use super::*;
use std::collections::BTreeSet;
use std::path::PathBuf;

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
pub fn rebuild_summaries(sweep_dir: &Path, only: Option<&BTreeSet<String>>, axes: &[&str]) -> Result<SummaryReport> {
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
    let cells = by_cell(&jobs)
        .into_iter()
        .map(|(cell, cell_jobs)| summarize_cell(cell, &cell_jobs, axes))
        .collect::<Result<Vec<_>>>()?;
    let report = write_summaries(sweep_dir, &cells.iter().collect::<Vec<_>>(), axes)?;
    Ok(SummaryReport { n_left_out, damaged, ..report })
}

/// [`rebuild_summaries`] without along tables.
pub fn summarize(sweep_dir: &Path, only: Option<&BTreeSet<String>>) -> Result<SummaryReport> {
    rebuild_summaries(sweep_dir, only, &[])
}

/// One cell's rows of every summary table: `summary.parquet`, `final.parquet`, and the
/// along table of each axis (in the order the axes were given). The tables of a sweep are
/// its cells' rows concatenated in cell order, so a cell's rows can be computed as soon as
/// its last job is settled (the coordinator's live summaries) and give the same bytes.
pub struct CellSummary {
    pub summary: DataFrame,
    pub last: DataFrame,
    pub along: Vec<DataFrame>,
    pub n_jobs: usize,
    pub n_rows: usize,
}

/// The summaries of one cell from its jobs, read in the order given (key order).
pub fn summarize_cell(cell: &Cell, jobs: &[&StoredRows], axes: &[&str]) -> Result<CellSummary> {
    let jobs: Vec<&StoredRows> = jobs.iter().copied().filter(|j| j.rows > 0).collect();
    let mut long = LongRows::new();
    let mut along_metrics = Interner::new();
    let mut runs: Vec<Vec<Run>> = axes.iter().map(|_| Vec::new()).collect();
    let mut n_rows = 0;
    for_each_job(&jobs, |job, df| {
        n_rows += df.height();
        let context = || format!("summarizing job {} in {}", job.key, job.part.display());
        long.add_job(cell, &df).within(context)?;
        for (axis, runs) in axes.iter().zip(&mut runs) {
            runs.push(read_run(&df, axis, &mut along_metrics).within(context)?);
        }
        Ok(())
    })?;
    let (summary, last) = long.aggregate()?;
    let along = axes
        .iter()
        .zip(&runs)
        .map(|(axis, runs)| along_table(cell, runs, &along_metrics, axis, None))
        .collect::<Result<_>>()?;
    Ok(CellSummary { summary, last, along, n_jobs: jobs.len(), n_rows })
}

/// Concatenate the cells' rows (given in cell order) and write every summary table of a
/// sweep atomically. Fails when no cell has a job.
pub fn write_summaries(sweep_dir: &Path, cells: &[&CellSummary], axes: &[&str]) -> Result<SummaryReport> {
    let cells: Vec<&CellSummary> = cells.iter().copied().filter(|c| c.n_jobs > 0).collect();
    if cells.is_empty() {
        return Err(nothing_to_summarize(&trajectories_dir(sweep_dir)));
    }
    let summary_path = sweep_dir.join(SUMMARY_FILE);
    let final_path = sweep_dir.join(FINAL_FILE);
    write_parquet_atomic(&summary_path, &mut concat(cells.iter().map(|c| &c.summary))?)?;
    write_parquet_atomic(&final_path, &mut concat(cells.iter().map(|c| &c.last))?)?;
    for (i, axis) in axes.iter().enumerate() {
        write_parquet_atomic(&sweep_dir.join(along_file(axis)), &mut concat(cells.iter().map(|c| &c.along[i]))?)?;
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

struct LongRows {
    cells: Interner<Cell>,
    metrics: Interner<String>,
    /// Every step of every job.
    all: Rows,
    /// The last step of every job, grouped by cell (its step is set by `aggregate`).
    last: Rows,
    /// By cell id, the largest last step of its jobs: the `step` of its final rows.
    last_step: Vec<i64>,
}

impl LongRows {
    fn new() -> Self {
        LongRows {
            cells: Interner::new(),
            metrics: Interner::new(),
            all: Rows::default(),
            last: Rows::default(),
            last_step: Vec::new(),
        }
    }

    /// Add one job's rows: every Float64 column that is not a fixed trajectory column
    /// is a metric; Int64 metrics are skipped.
    fn add_job(&mut self, cell: &Cell, df: &DataFrame) -> Result<()> {
        for name in SHARD_FIXED_COLUMNS {
            if df.column(name).is_err() {
                return Err(invalid(format!("trajectory has no column {name:?}")));
            }
        }
        if df.height() == 0 {
            return Ok(());
        }
        let cell = self.cells.id(cell);
        let steps = df
            .column(STEP)?
            .i64()?
            .iter()
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| invalid("column \"step\" has nulls"))?;
        let last_step = steps.iter().copied().max().unwrap_or_default();
        if self.last_step.len() <= cell {
            self.last_step.resize(cell + 1, 0);
        }
        self.last_step[cell] = self.last_step[cell].max(last_step);
        for column in df.columns() {
            let name = column.name().as_str();
            if SHARD_FIXED_COLUMNS.contains(&name) {
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
            for (&step, value) in steps.iter().zip(column.f64()?.iter()) {
                self.all.push(cell, step, metric, value);
                if step == last_step {
                    // One group per cell, whatever step each job ended at.
                    self.last.push(cell, 0, metric, value);
                }
            }
        }
        Ok(())
    }

    /// `(summary, final)` frames in the output schema.
    fn aggregate(mut self) -> Result<(DataFrame, DataFrame)> {
        self.last.set_steps_by_cell(&self.last_step);
        let (cells, cell_rank) = self.cells.sorted();
        let (metrics, metric_rank) = self.metrics.sorted();
        let finish = |rows: Rows| -> Result<DataFrame> {
            let stats = statistics(rows, &cell_rank, &metric_rank)?;
            with_names(&stats, &cells, &metrics)
        };
        Ok((finish(self.all)?, finish(self.last)?))
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
        let names: Vec<_> = summary.get_column_names().iter().map(|n| n.to_string()).collect();
        let expected_names = [
            "family",
            "benchmark",
            "benchmark_params",
            "algorithm",
            "algorithm_params",
            "horizon",
            "step",
            "metric",
            "n",
            "mean",
            "std",
            "se",
            "median",
            "q10",
            "q90",
        ];
        assert_eq!(names, expected_names);
        for (name, dtype) in summary.schema().iter() {
            let expected = match name.as_str() {
                "horizon" | "step" | "n" => DataType::Int64,
                "mean" | "std" | "se" | "median" | "q10" | "q90" => DataType::Float64,
                _ => DataType::String,
            };
            assert_eq!(dtype, &expected, "{name}");
        }
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
        assert_eq!(strs(&summary, "benchmark_params")[2], "{noise_sd=0.1}");
        assert_eq!(strs(&summary, "algorithm_params")[2], "{beta_sqrt=3.0}");
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
            let part = PartJob {
                job: job.clone(),
                provenance: None,
                n_records: records.len(),
                records: Box::new(records.into_iter().map(Ok)),
            };
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
