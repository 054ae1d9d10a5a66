//! Live summaries: a sweep's statistics kept up to date as its jobs commit.
//!
//! Each cell goes through two tiers:
//!
//! * **provisional**, while some of its jobs are still queued or running: running moments
//!   (count, mean and sum of squared deviations, merged as in Chan et al.) per (step,
//!   metric) and per (last step, metric) of the jobs committed so far. They cost the size
//!   of the cell's summary rows, whatever the number of jobs, and are fed from the records
//!   as the committer writes them, so a mid-sweep table reads nothing. Their rows have the
//!   exact `n`, a `mean`, `std` and `se` that may differ from the exact ones in the last
//!   bits (another summation order), and null quantiles.
//! * **exact**, once every job of the cell is settled (done, failed or cancelled): the
//!   cell's rows computed once from its jobs' trajectories by [`summarize_cell`], the code
//!   `armada summarize` runs. When every cell is exact, the sweep's summary files are those
//!   rows concatenated in cell order: byte-identical to a rebuild from the files given the
//!   same job counts.
//!
//! Sweeps list their jobs seed-major, so cells complete one after another over the sweep's
//! last round of seeds, and the summary files are written as the last cell's rows are.

use super::stats::{no_result_rows, with_job_counts, with_names, CellJobs, Stats};
use super::*;
use armada_core::{MetricDef, MetricKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Running moments of one group's present (non-NaN) values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    n: u64,
    mean: f64,
    /// Sum of squared deviations from the mean.
    m2: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    fn merge(&mut self, other: &Moments) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        self.mean += delta * other.n as f64 / n as f64;
        self.m2 += other.m2 + delta * delta * (self.n as f64 * other.n as f64 / n as f64);
        self.n = n;
    }
}

/// The float metrics of a family: the only ones summarized.
#[derive(Clone, Debug)]
pub struct FloatMetrics {
    /// Position of each float metric in a record's values.
    index: Vec<usize>,
    names: Vec<String>,
}

impl FloatMetrics {
    pub fn of(metrics: &[MetricDef]) -> FloatMetrics {
        let floats: Vec<(usize, &MetricDef)> =
            metrics.iter().enumerate().filter(|(_, m)| m.kind == MetricKind::Float).collect();
        FloatMetrics {
            index: floats.iter().map(|(i, _)| *i).collect(),
            names: floats.iter().map(|(_, m)| m.name.to_owned()).collect(),
        }
    }

    /// A record's float metric values, in order, into `out`.
    pub fn select(&self, values: &[f64], out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.index.iter().map(|&i| values.get(i).copied().unwrap_or(f64::NAN)));
    }
}

/// Moments of groups numbered 0, 1, ... (the steps), laid out flat: per group, how many
/// jobs have a row there, and `width` metrics' moments. 8 + 24 `width` bytes a step.
#[derive(Clone, Debug, Default, PartialEq)]
struct Groups {
    width: usize,
    rows: Vec<u64>,
    moments: Vec<Moments>,
}

impl Groups {
    fn grow(&mut self, width: usize, len: usize) {
        if self.rows.is_empty() {
            self.width = width;
        }
        if self.rows.len() < len {
            self.rows.resize(len, 0);
            self.moments.resize(len * self.width, Moments::default());
        }
    }

    fn add(&mut self, group: usize, values: &[f64]) {
        self.grow(values.len(), group + 1);
        self.rows[group] += 1;
        for (m, &v) in self.moments[group * self.width..][..self.width].iter_mut().zip(values) {
            m.add(v);
        }
    }

    fn merge(&mut self, other: &Groups) {
        if other.rows.is_empty() {
            return;
        }
        self.grow(other.width, other.rows.len());
        for (mine, theirs) in self.rows.iter_mut().zip(&other.rows) {
            *mine += theirs;
        }
        for (mine, theirs) in self.moments.iter_mut().zip(&other.moments) {
            mine.merge(theirs);
        }
    }

    /// The groups with rows: (group, its metrics' moments).
    fn present(&self) -> impl Iterator<Item = (usize, &[Moments])> {
        let width = self.width;
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, &rows)| rows > 0)
            .map(move |(g, _)| (g, &self.moments[g * width..(g + 1) * width]))
    }
}

/// Steps of a cell that live views show at most: a longer cell shows every
/// [`live_stride`]-th step (its files have every step).
pub const LIVE_STEPS: i64 = 4096;

/// Every how many steps a live view of a cell of `horizon` shows one (steps 0, stride,
/// 2 stride, ...): 1 up to [`LIVE_STEPS`] steps, so that the memory of live summaries does
/// not grow with the horizon.
pub fn live_stride(horizon: i64) -> i64 {
    ((horizon + 1) as u64).div_ceil(LIVE_STEPS as u64).max(1) as i64
}

/// Running moments of some jobs of one cell: every `stride`-th step, and each job's last
/// step.
#[derive(Clone, Debug, PartialEq)]
pub struct CellMoments {
    stride: u32,
    /// Group `g` is step `g * stride`.
    steps: Groups,
    /// The jobs' last records, one group whatever step each ended at.
    last: Groups,
    /// The largest of those steps: the `step` of the cell's final rows.
    last_step: u32,
}

impl CellMoments {
    /// No jobs yet, of a cell of `horizon`: about [`LIVE_STEPS`] steps' moments at most.
    pub fn of(horizon: i64) -> CellMoments {
        let stride = u32::try_from(live_stride(horizon)).unwrap_or(u32::MAX);
        CellMoments { stride, steps: Groups::default(), last: Groups::default(), last_step: 0 }
    }

    /// One record of a job: its float metric values ([`FloatMetrics::select`]).
    pub fn add_step(&mut self, step: u32, floats: &[f64]) {
        if step.is_multiple_of(self.stride) {
            self.steps.add((step / self.stride) as usize, floats);
        }
    }

    /// A job's last record, as [`CellMoments::add_step`].
    pub fn add_last(&mut self, step: u32, floats: &[f64]) {
        self.last.add(0, floats);
        self.last_step = self.last_step.max(step);
    }

    /// Add `other`'s moments, of the same cell (hence the same stride).
    pub fn merge(&mut self, other: &CellMoments) {
        debug_assert_eq!(self.stride, other.stride, "moments of one cell");
        self.steps.merge(&other.steps);
        self.last.merge(&other.last);
        self.last_step = self.last_step.max(other.last_step);
    }

    /// Add rows of one job as read back from a part (all of them, or a piece; `ends` when
    /// they include its last).
    pub fn add_rows(&mut self, floats: &FloatMetrics, df: &DataFrame, ends: bool) -> Result<()> {
        let steps: Vec<u32> = df
            .column(STEP)?
            .i64()?
            .iter()
            .map(|s| s.and_then(|s| u32::try_from(s).ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| invalid("column \"step\" has a null or out-of-range value"))?;
        let mut columns = Vec::with_capacity(floats.names.len());
        for name in &floats.names {
            columns.push(df.column(name)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect::<Vec<f64>>());
        }
        let mut values = vec![0.0; columns.len()];
        for (row, &step) in steps.iter().enumerate() {
            for (v, column) in values.iter_mut().zip(&columns) {
                *v = column[row];
            }
            self.add_step(step, &values);
            if ends && row + 1 == steps.len() {
                self.add_last(step, &values);
            }
        }
        Ok(())
    }

    /// Provisional `(summary, final)` rows of `cell`, in the output schema.
    fn frames(&self, cell: &Cell, floats: &FloatMetrics) -> Result<(DataFrame, DataFrame)> {
        let mut order: Vec<usize> = (0..floats.names.len()).collect();
        order.sort_by(|&a, &b| floats.names[a].cmp(&floats.names[b]));
        let sorted: Vec<String> = order.iter().map(|&i| floats.names[i].clone()).collect();
        let table = |groups: &mut dyn Iterator<Item = (i64, &[Moments])>| -> Result<DataFrame> {
            let mut stats = Stats::default();
            for (step, metrics) in groups {
                for (rank, &i) in order.iter().enumerate() {
                    let m = metrics.get(i).copied().unwrap_or_default();
                    stats.push_moments((0, step, rank as i64), m.n as usize, m.mean, m.m2);
                }
            }
            with_names(&stats.into_frame()?, std::slice::from_ref(cell), &sorted)
        };
        let stride = i64::from(self.stride);
        let summary = table(&mut self.steps.present().map(|(g, m)| (g as i64 * stride, m)))?;
        let last = table(&mut self.last.present().map(|(_, m)| (i64::from(self.last_step), m)))?;
        Ok((summary, last))
    }
}

/// A cell whose jobs are all settled, to be summarized exactly: its committed jobs in key
/// order.
pub struct CellWork {
    pub cell: Cell,
    pub jobs: Vec<StoredRows>,
}

/// A cell's jobs in its sweep: how many, how many are settled (done, failed or
/// cancelled), and how many of those failed for good.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobTally {
    pub jobs: usize,
    pub settled: usize,
    pub failed: usize,
}

struct LiveCell {
    /// The sweep's jobs in this cell, as they settle.
    tally: JobTally,
    /// Where the done ones are (dropped once the cell is exact).
    jobs: Located,
    moments: CellMoments,
    /// Handed out as [`CellWork`].
    summarizing: bool,
    exact: Option<CellSummary>,
}

/// Where a cell's done jobs are, in the order they were told; a job told twice is where
/// it was told last. Kept in a list, not a map: a commit appends, and the key order is
/// made once, when the cell is summarized.
#[derive(Default)]
struct Located(Vec<StoredRows>);

impl Located {
    fn insert(&mut self, job: StoredRows) {
        self.0.push(job);
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In key order, each key once (where it was told last).
    fn in_key_order(mut jobs: Vec<StoredRows>) -> Vec<StoredRows> {
        // Stable: of equal keys the last told stays last, and is the one kept.
        jobs.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out: Vec<StoredRows> = Vec::with_capacity(jobs.len());
        for job in jobs {
            match out.last_mut() {
                Some(last) if last.key == job.key => *last = job,
                _ => out.push(job),
            }
        }
        out
    }

    fn take(&mut self) -> Vec<StoredRows> {
        Located::in_key_order(std::mem::take(&mut self.0))
    }

    fn to_vec(&self) -> Vec<StoredRows> {
        Located::in_key_order(self.0.clone())
    }
}

impl LiveCell {
    fn is_complete(&self) -> bool {
        self.tally.settled >= self.tally.jobs
    }

    fn counts(&self) -> CellJobs {
        CellJobs { n_jobs: self.tally.jobs, n_failed: self.tally.failed }
    }
}

/// The live summaries of one sweep.
pub struct LiveSweep {
    floats: FloatMetrics,
    cells: BTreeMap<Cell, LiveCell>,
    /// The done jobs' locations are known (see [`LiveSweep::seed`]).
    seeded: bool,
}

impl LiveSweep {
    /// A sweep whose cells hold these jobs; the locations of the jobs already done come
    /// later, by [`LiveSweep::seed`]. Until then no cell is summarized.
    pub fn new(metrics: &[MetricDef], cells: impl IntoIterator<Item = (Cell, JobTally)>) -> LiveSweep {
        let cells = cells
            .into_iter()
            .map(|(cell, tally)| {
                let live = LiveCell {
                    tally,
                    jobs: Located::default(),
                    moments: CellMoments::of(cell.horizon),
                    summarizing: false,
                    exact: None,
                };
                (cell, live)
            })
            .collect();
        LiveSweep { floats: FloatMetrics::of(metrics), cells, seeded: false }
    }

    pub fn floats(&self) -> &FloatMetrics {
        &self.floats
    }

    /// The locations of the jobs that were done when the sweep was created.
    pub fn seed(&mut self, jobs: Vec<StoredRows>) {
        for job in jobs {
            if let Some(cell) = self.cells.get_mut(&job.cell) {
                cell.jobs.insert(job);
            }
        }
        self.seeded = true;
    }

    /// Cells that are not complete and have done jobs: what seeding must read to fill in
    /// their moments.
    pub fn incomplete_jobs(&self) -> Vec<(Cell, Vec<StoredRows>)> {
        self.cells
            .iter()
            .filter(|(_, c)| !c.is_complete() && !c.jobs.is_empty())
            .map(|(cell, c)| (cell.clone(), c.jobs.to_vec()))
            .collect()
    }

    /// Jobs were committed at `locations`. Returns whether a cell of theirs is now
    /// complete.
    pub fn committed(&mut self, mut locations: Vec<StoredRows>) -> bool {
        // A part's jobs of one cell share its `Arc`: one lookup of the cell for each run.
        locations.sort_unstable_by_key(|l| Arc::as_ptr(&l.cell));
        let mut complete = false;
        let mut locations = locations.into_iter().peekable();
        while let Some(first) = locations.next() {
            let shared = Arc::as_ptr(&first.cell);
            let cell = self.cells.get_mut(&first.cell);
            let run = std::iter::once(first)
                .chain(std::iter::from_fn(|| locations.next_if(|l| Arc::as_ptr(&l.cell) == shared)));
            let Some(cell) = cell else {
                run.for_each(drop);
                continue;
            };
            for location in run {
                cell.tally.settled += 1;
                cell.jobs.insert(location);
            }
            complete |= cell.is_complete();
        }
        complete
    }

    /// A job of `cell` failed for good (`failed`) or was cancelled. Returns whether the
    /// cell is now complete.
    pub fn settled_without_result(&mut self, cell: &Cell, failed: bool) -> bool {
        let Some(cell) = self.cells.get_mut(cell) else { return false };
        cell.tally.settled += 1;
        cell.tally.failed += usize::from(failed);
        cell.is_complete()
    }

    /// Add the moments of newly committed jobs of `cell` (ignored once it is exact).
    pub fn add_moments(&mut self, cell: &Cell, moments: &CellMoments) {
        if let Some(cell) = self.cells.get_mut(cell) {
            if cell.exact.is_none() {
                cell.moments.merge(moments);
            }
        }
    }

    /// Complete cells not yet handed out, now marked as being summarized.
    pub fn take_complete(&mut self) -> Vec<CellWork> {
        if !self.seeded {
            return Vec::new();
        }
        let mut work = Vec::new();
        for (cell, live) in &mut self.cells {
            if live.is_complete() && !live.summarizing {
                live.summarizing = true;
                work.push(CellWork { cell: cell.clone(), jobs: live.jobs.take() });
            }
        }
        work
    }

    /// The exact rows of a cell, with its job counts; its moments are dropped.
    pub fn set_exact(&mut self, cell: &Cell, mut summary: CellSummary) {
        if let Some(live) = self.cells.get_mut(cell) {
            summary.jobs = Some(live.counts());
            live.exact = Some(summary);
            live.moments = CellMoments::of(cell.horizon);
        }
    }

    /// Every cell has its exact rows: the sweep's summary files can be written.
    pub fn is_exact(&self) -> bool {
        self.cells.values().all(|c| c.exact.is_some())
    }

    /// Cells with exact rows, and all cells.
    pub fn progress(&self) -> (usize, usize) {
        (self.cells.values().filter(|c| c.exact.is_some()).count(), self.cells.len())
    }

    /// The exact rows of every cell, in cell order (when [`LiveSweep::is_exact`]).
    pub fn exact_cells(&self) -> Vec<&CellSummary> {
        self.cells.values().filter_map(|c| c.exact.as_ref()).collect()
    }

    /// The current `(summary, final)` tables: exact rows for complete cells, provisional
    /// ones for the others, in cell order; `None` while no job is done.
    /// Every row carries its cell's job counts (of a provisional cell, its failures so far);
    /// a cell with failures and no result has its rows with no step and `n = 0`.
    pub fn tables(&self) -> Result<Option<(DataFrame, DataFrame)>> {
        let mut summaries = Vec::new();
        let mut lasts = Vec::new();
        let mut sorted = self.floats.names.clone();
        sorted.sort();
        let mut any_result = false;
        for (cell, live) in &self.cells {
            let counts = Some(live.counts());
            let (summary, last) = match &live.exact {
                Some(exact) if exact.n_jobs > 0 => (exact.summary.preview().clone(), exact.last.clone()),
                _ => live.moments.frames(cell, &self.floats)?,
            };
            if summary.height() > 0 {
                summaries.push(with_job_counts(&summary, counts)?);
                lasts.push(with_job_counts(&last, counts)?);
                any_result = true;
            } else if live.tally.failed > 0 {
                let rows = with_job_counts(&no_result_rows(cell, &sorted)?, counts)?;
                summaries.push(rows.clone());
                lasts.push(rows);
            }
        }
        if !any_result {
            return Ok(None);
        }
        Ok(Some((concat(summaries.iter())?, concat(lasts.iter())?)))
    }
}

/// Tallies of jobs (of a job, or of a group of jobs) summed by cell, in cell order, for
/// [`LiveSweep::new`].
pub fn cell_counts<'a>(jobs: impl IntoIterator<Item = (&'a Cell, JobTally)>) -> Vec<(Cell, JobTally)> {
    // Hashed, then sorted once: a sweep has millions of jobs and few cells.
    let mut counts: HashMap<&Cell, JobTally> = HashMap::new();
    for (cell, tally) in jobs {
        let c = counts.entry(cell).or_default();
        c.jobs += tally.jobs;
        c.settled += tally.settled;
        c.failed += tally.failed;
    }
    let mut cells: Vec<_> = counts.into_iter().map(|(cell, tally)| (cell.clone(), tally)).collect();
    cells.sort_by(|a, b| a.0.cmp(&b.0));
    cells
}

/// The stored jobs of `sweep_dir` among `done` (those a seeding must locate).
pub fn locate(sweep_dir: &Path, done: &BTreeSet<String>) -> Result<Vec<StoredRows>> {
    if done.is_empty() || !trajectories_dir(sweep_dir).is_dir() {
        return Ok(Vec::new());
    }
    let Readable { jobs, damaged } = readable_jobs(sweep_dir, Some(done))?;
    for e in damaged {
        tracing::warn!(error = %e, "a damaged part is left out of the live summaries: run `armada check`");
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use armada_core::{StepRecord, ValidJob};

    #[test]
    fn moments_merged_in_pieces_equal_one_pass_and_skip_nan() {
        // [1, 2, 4, 8]: mean 3.75, sum of squared deviations 28.75.
        let mut whole = Moments::default();
        for x in [1.0, 2.0, f64::NAN, 4.0, 8.0] {
            whole.add(x);
        }
        assert_eq!(whole.n, 4);
        assert!((whole.mean - 3.75).abs() < 1e-15 && (whole.m2 - 28.75).abs() < 1e-12, "{whole:?}");
        let (mut a, mut b) = (Moments::default(), Moments::default());
        a.add(1.0);
        a.add(2.0);
        b.add(4.0);
        b.add(8.0);
        a.merge(&b);
        a.merge(&Moments::default());
        assert_eq!(a.n, 4);
        assert!((a.mean - 3.75).abs() < 1e-15 && (a.m2 - 28.75).abs() < 1e-12, "{a:?}");
    }

    /// Three cells x five seeds with NaNs and a job that stops early (seed 1 of `random`,
    /// so that the provisional rows of the first seeds cover jobs of unequal length), as
    /// (job, records).
    fn sweep_jobs() -> Vec<(ValidJob, Vec<StepRecord>)> {
        let mut jobs = Vec::new();
        for (a, algorithm) in ["straddle", "ucb", "random"].iter().enumerate() {
            for seed in 0..5u64 {
                let steps = if a == 2 && seed == 1 { 2 } else { 3 };
                let records = (0..steps)
                    .map(|step| {
                        let x = ((seed * 7 + step * 3 + a as u64 * 11) % 13) as f64 / 3.0 - 1.5;
                        let regret = if seed == 1 && step == 1 { f64::NAN } else { x };
                        StepRecord { step: step as u32, elapsed_ms: 0.5, values: vec![regret, step as f64] }
                    })
                    .collect();
                jobs.push((job("lse", "sinusoidal", algorithm, seed), records));
            }
        }
        jobs
    }

    fn moments_of(horizon: i64, records: &[StepRecord]) -> CellMoments {
        let floats = FloatMetrics::of(&METRICS);
        let (mut m, mut values) = (CellMoments::of(horizon), Vec::new());
        for r in records {
            floats.select(&r.values, &mut values);
            m.add_step(r.step, &values);
        }
        let last = records.last().unwrap();
        floats.select(&last.values, &mut values);
        m.add_last(last.step, &values);
        m
    }

    /// Write a job as a part of its own; where it is.
    fn store(dir: &Path, (job, records): &(ValidJob, Vec<StepRecord>)) -> StoredRows {
        read_index(&write_shard(dir, job, &METRICS, records).unwrap()).unwrap().remove(0)
    }

    /// Commit `jobs` (one part each) into a live sweep, as the coordinator does.
    fn commit(live: &mut LiveSweep, dir: &Path, jobs: &[(ValidJob, Vec<StepRecord>)]) {
        for job in jobs {
            let location = store(dir, job);
            live.add_moments(&location.cell, &moments_of(location.cell.horizon, &job.1));
            live.committed(vec![location]);
        }
    }

    fn new_live(jobs: &[(ValidJob, Vec<StepRecord>)]) -> LiveSweep {
        let cells: Vec<Cell> = jobs.iter().map(|(j, _)| Cell::of(j)).collect();
        let one = JobTally { jobs: 1, settled: 0, failed: 0 };
        let mut live = LiveSweep::new(&METRICS, cell_counts(cells.iter().map(|c| (c, one))));
        live.seed(Vec::new());
        live
    }

    /// Each cell's jobs and failures, as a sweep of `jobs` of which `failed` failed.
    fn counts_of(jobs: &[(ValidJob, Vec<StepRecord>)], failed: &[usize]) -> BTreeMap<Cell, CellJobs> {
        let mut counts: BTreeMap<Cell, CellJobs> = BTreeMap::new();
        for (i, (job, _)) in jobs.iter().enumerate() {
            let c = counts.entry(Cell::of(job)).or_default();
            c.n_jobs += 1;
            c.n_failed += usize::from(failed.contains(&i));
        }
        counts
    }

    /// A long cell's moments keep every stride-th step only (at most LIVE_STEPS of them,
    /// whatever its horizon), each with the moments of exactly those steps' values.
    #[test]
    fn the_moments_of_a_long_cell_keep_every_stride_th_step() {
        assert_eq!([live_stride(0), live_stride(4095), live_stride(4096), live_stride(100_000_000)], [1, 1, 2, 24_415]);
        let horizon = 9000;
        let stride = live_stride(horizon);
        assert_eq!(stride, 3);
        let value = |seed: u32, step: u32| f64::from((seed * 5 + step * 7) % 11);
        let runs = |seed: u32| -> Vec<StepRecord> {
            (0..=horizon as u32)
                .map(|step| StepRecord { step, elapsed_ms: 0.0, values: vec![value(seed, step), 0.0] })
                .collect()
        };
        let mut moments = moments_of(horizon, &runs(0));
        moments.merge(&moments_of(horizon, &runs(1)));
        assert!(moments.steps.rows.len() as i64 <= LIVE_STEPS);
        let mut cell = Cell::of(&job("lse", "sinusoidal", "straddle", 0));
        cell.horizon = horizon;
        let (summary, last) = moments.frames(&cell, &FloatMetrics::of(&METRICS)).unwrap();
        let steps: Vec<i64> = ints(&summary, "step").into_iter().map(Option::unwrap).collect();
        assert_eq!(steps, (0..=horizon).step_by(stride as usize).collect::<Vec<_>>());
        for (&step, mean) in steps.iter().zip(floats(&summary, "mean")) {
            let expected = (value(0, step as u32) + value(1, step as u32)) / 2.0;
            assert_eq!(mean, Some(expected), "step {step}");
        }
        assert_eq!(ints(&summary, "n"), vec![Some(2); steps.len()]);
        assert_eq!(ints(&last, "step"), [Some(horizon)]);
        assert_eq!(floats(&last, "mean"), [Some((value(0, 9000) + value(1, 9000)) / 2.0)]);
    }

    /// Provisional rows have a rebuild's groups and `n`, its mean/std/se to rounding, and
    /// no quantiles; once every cell is exact, the files are a rebuild's, byte for byte.
    #[test]
    fn provisional_rows_match_a_rebuild_of_the_same_jobs_and_exact_ones_are_byte_identical() {
        let jobs = sweep_jobs();
        let (live_dir, check_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut live = new_live(&jobs);
        // Seeds 0..3 of every cell: nothing is complete yet.
        let (early, late): (Vec<_>, Vec<_>) = jobs.iter().cloned().partition(|(j, _)| j.spec.seed < 3);
        commit(&mut live, live_dir.path(), &early);
        assert!(live.take_complete().is_empty());
        let (summary, last) = live.tables().unwrap().unwrap();
        for job in &early {
            store(check_dir.path(), job);
        }
        let rebuilt = rebuild_summaries(check_dir.path(), None, &[], None).unwrap();
        for (provisional, path) in [(&summary, &rebuilt.summary_path), (&last, &rebuilt.final_path)] {
            let exact = read_parquet(path).unwrap();
            assert_eq!(provisional.height(), exact.height());
            for name in ["family", "benchmark", "algorithm", "metric"] {
                assert_eq!(strs(provisional, name), strs(&exact, name), "{name}");
            }
            assert_eq!(ints(provisional, "step"), ints(&exact, "step"));
            assert_eq!(ints(provisional, "n"), ints(&exact, "n"));
            for name in ["mean", "std", "se"] {
                for (p, e) in floats(provisional, name).iter().zip(floats(&exact, name)) {
                    let close = match (p, e) {
                        (Some(p), Some(e)) => (p - e).abs() <= 1e-12 * e.abs().max(1.0),
                        (p, e) => *p == e,
                    };
                    assert!(close, "{name}: provisional {p:?}, exact {e:?}");
                }
            }
            for name in ["median", "q10", "q90"] {
                assert!(floats(provisional, name).iter().all(Option::is_none), "{name} is provisional");
            }
        }

        // The rest: every cell completes, is summarized once, and the files equal a rebuild.
        commit(&mut live, live_dir.path(), &late);
        let work = live.take_complete();
        assert_eq!(work.len(), 3);
        assert!(live.take_complete().is_empty(), "a cell is handed out once");
        for cell in work {
            assert_eq!(cell.jobs.len(), 5);
            assert!(cell.jobs.windows(2).all(|w| w[0].key < w[1].key), "jobs in key order");
            let refs: Vec<&StoredRows> = cell.jobs.iter().collect();
            let exact = summarize_cell(&cell.cell, &refs, &[], live_dir.path()).unwrap();
            live.set_exact(&cell.cell, exact);
        }
        assert!(live.is_exact());
        assert_eq!(live.progress(), (3, 3));
        write_summaries(live_dir.path(), &live.exact_cells(), &[]).unwrap();
        let summary = fs::read(live_dir.path().join(SUMMARY_FILE)).unwrap();
        let last = fs::read(live_dir.path().join(FINAL_FILE)).unwrap();
        rebuild_summaries(live_dir.path(), None, &[], Some(&counts_of(&jobs, &[]))).unwrap();
        assert!(summary == fs::read(live_dir.path().join(SUMMARY_FILE)).unwrap());
        assert!(last == fs::read(live_dir.path().join(FINAL_FILE)).unwrap());
        // A mid-sweep reader gets the exact rows of a complete cell.
        let (table, _) = live.tables().unwrap().unwrap();
        assert_eq!(table, read_parquet(&live_dir.path().join(SUMMARY_FILE)).unwrap());
    }

    /// Located jobs come out in key order, each key once, where it was told last.
    #[test]
    fn located_jobs_are_in_key_order_and_the_last_told_place_wins() {
        let cell = Arc::new(Cell::of(&job("lse", "sinusoidal", "straddle", 0)));
        let at = |key: &str, offset: usize| StoredRows {
            key: key.into(),
            cell: cell.clone(),
            part: Arc::new(PathBuf::from(format!("p{offset}"))),
            offset,
            rows: 1,
        };
        let mut located = Located::default();
        for (key, offset) in [("c", 0), ("a", 1), ("b", 2), ("a", 3), ("c", 4), ("a", 5)] {
            located.insert(at(key, offset));
        }
        let places = |jobs: Vec<StoredRows>| jobs.into_iter().map(|j| (j.key, j.offset)).collect::<Vec<_>>();
        let expected = vec![("a".to_string(), 5), ("b".to_string(), 2), ("c".to_string(), 4)];
        assert_eq!(places(located.to_vec()), expected);
        assert_eq!(places(located.take()), expected);
        assert!(located.is_empty());
    }

    /// A cell completes when its last job is settled, whether done, failed or cancelled,
    /// and only once the done jobs' locations are known.
    #[test]
    fn a_cell_completes_when_every_job_is_settled_and_the_sweep_is_seeded() {
        let jobs = sweep_jobs();
        let dir = tempfile::tempdir().unwrap();
        let cell = Cell::of(&jobs[0].0);
        // Of the first cell's five jobs, two were done before (found on disk) and one failed.
        let settled_before = |i: usize| i < 3;
        let cells: Vec<Cell> = jobs.iter().map(|(j, _)| Cell::of(j)).collect();
        let mut live = LiveSweep::new(
            &METRICS,
            cell_counts(cells.iter().enumerate().map(|(i, c)| {
                (c, JobTally { jobs: 1, settled: usize::from(settled_before(i)), failed: usize::from(i == 2) })
            })),
        );
        let before: Vec<StoredRows> = jobs[..2].iter().map(|j| store(dir.path(), j)).collect();
        assert!(!live.committed(vec![store(dir.path(), &jobs[3])]), "4 of 5 settled");
        assert!(live.settled_without_result(&cell, false), "5 of 5 settled (the last one cancelled)");
        assert!(live.take_complete().is_empty(), "not seeded: the two done jobs are not located yet");
        live.seed(before);
        let work = live.take_complete();
        assert_eq!(work.len(), 1);
        assert_eq!(work[0].cell, cell);
        let keys: BTreeSet<&str> = work[0].jobs.iter().map(|j| j.key.as_str()).collect();
        let expected: BTreeSet<&str> = [0, 1, 3].iter().map(|&i| jobs[i].0.key.0.as_str()).collect();
        assert_eq!(keys, expected);
        assert!(!live.is_exact(), "the other cells are not complete");
    }

    /// Every row counts its cell's jobs and failures, live and in the files; a cell whose
    /// every job failed keeps its rows (no step, n = 0, null statistics), and the files are
    /// a rebuild's given the same counts, byte for byte.
    #[test]
    fn failed_jobs_are_counted_in_every_row_and_a_cell_that_only_failed_keeps_its_rows() {
        let jobs = sweep_jobs();
        let dir = tempfile::tempdir().unwrap();
        // Cell 0 (`straddle`) all done; cell 1 (`ucb`) seeds 3 and 4 failed; cell 2
        // (`random`) every seed failed.
        let failed: Vec<usize> = vec![8, 9, 10, 11, 12, 13, 14];
        let mut live = new_live(&jobs);
        for (i, job) in jobs.iter().enumerate() {
            if failed.contains(&i) {
                live.settled_without_result(&Cell::of(&job.0), true);
            } else {
                commit(&mut live, dir.path(), std::slice::from_ref(job));
            }
        }
        let (summary, last) = live.tables().unwrap().unwrap();
        for cell in live.take_complete() {
            let refs: Vec<&StoredRows> = cell.jobs.iter().collect();
            live.set_exact(&cell.cell, summarize_cell(&cell.cell, &refs, &[], dir.path()).unwrap());
        }
        write_summaries(dir.path(), &live.exact_cells(), &[]).unwrap();
        let written = read_parquet(&dir.path().join(FINAL_FILE)).unwrap();
        // (algorithm, metric, step, n, mean, n_jobs, n_failed)
        type Row = (String, String, Option<i64>, Option<i64>, Option<f64>, Option<i64>, Option<i64>);
        let rows = |df: &DataFrame| -> Vec<Row> {
            let (a, m, step, n) = (strs(df, "algorithm"), strs(df, "metric"), ints(df, "step"), ints(df, "n"));
            let (mean, n_jobs, n_failed) = (floats(df, "mean"), ints(df, N_JOBS), ints(df, N_FAILED));
            (0..df.height())
                .map(|i| (a[i].clone(), m[i].clone(), step[i], n[i], mean[i], n_jobs[i], n_failed[i]))
                .collect()
        };
        let final_rows = rows(&written);
        let random: Vec<&Row> = final_rows.iter().filter(|r| r.0 == "random").collect();
        let n_floats = FloatMetrics::of(&METRICS).names.len();
        assert_eq!(random.len(), n_floats, "one row per float metric: {final_rows:?}");
        for r in &random {
            assert_eq!((r.2, r.3, r.4, r.5, r.6), (None, Some(0), None, Some(5), Some(5)), "{r:?}");
        }
        for r in final_rows.iter().filter(|r| r.0 == "ucb") {
            assert_eq!((r.5, r.6), (Some(5), Some(2)), "{r:?}");
            assert!(r.3 <= Some(3), "three seeds at most: {r:?}");
        }
        for r in final_rows.iter().filter(|r| r.0 == "straddle") {
            assert_eq!((r.5, r.6), (Some(5), Some(0)), "{r:?}");
        }
        // The live tables said the same before the cells were exact.
        let live_rows = rows(&last);
        assert_eq!(
            live_rows.iter().map(|r| (&r.0, &r.1, r.5, r.6)).collect::<Vec<_>>(),
            final_rows.iter().map(|r| (&r.0, &r.1, r.5, r.6)).collect::<Vec<_>>()
        );
        let summary_random = rows(&summary).into_iter().filter(|r| r.0 == "random").count();
        assert_eq!(summary_random, n_floats, "the summary keeps the failed cell's rows too");
        let files = |dir: &Path| (fs::read(dir.join(SUMMARY_FILE)).unwrap(), fs::read(dir.join(FINAL_FILE)).unwrap());
        let before = files(dir.path());
        rebuild_summaries(dir.path(), None, &[], Some(&counts_of(&jobs, &failed))).unwrap();
        assert!(before == files(dir.path()), "a rebuild with the same counts writes the same bytes");
        // Without the counts, a rebuild knows neither: null, and no row for the failed cell.
        rebuild_summaries(dir.path(), None, &[], None).unwrap();
        let unknown = rows(&read_parquet(&dir.path().join(FINAL_FILE)).unwrap());
        assert!(unknown.iter().all(|r| r.0 != "random" && r.5.is_none() && r.6.is_none()), "{unknown:?}");
    }
}
