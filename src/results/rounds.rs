//! The rounds of a resolving sweep (its `[resolve]` table): after each round, every
//! comparison is judged on the seeds both its cells have ([`super::compare`]), and the
//! next round adds seeds to the cells of the comparisons still open.
//!
//! Every round's decision is a function of the sweep's cells, the seeds each was given and
//! the values its done jobs reached: nothing else is kept between rounds, so a coordinator
//! that restarts mid-rounds judges the same again.
//!
//! Rules:
//! - a round brings every cell of an open comparison to the same number of seeds (seeds
//!   `0..n`: the cells of a comparison share them, and so their common random numbers),
//!   `batch` more than the most any cell has, at most `max_seeds`;
//! - a comparison whose cells both have `max_seeds` seeds, or that is open when the budget
//!   would not cover the next round, ends unresolved;
//! - a seed whose job failed in either cell is left out of the comparison (its `n` says
//!   how many pairs it had), not replaced; a comparison of a cell none of whose jobs has a
//!   value after its first round ends unresolved (its jobs fail: more would fail too).

use super::compare::{Paired, Resolution, Verdict};
use super::schema::{self, COMPARISONS};
use super::{for_each_job, invalid, stored_jobs, write_atomic, write_table, Cell, Result};
use crate::sweep::resolve::{Better, Compare, Resolve, Variant};
use polars::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The comparisons of a resolving sweep, in its directory.
pub const COMPARISONS_FILE: &str = "comparisons.parquet";

/// One cell of a resolving sweep as a round ends: the seeds it was given (`0..seeds`) and
/// the value of the compared metric each done job reached.
#[derive(Clone, Debug, PartialEq)]
pub struct CellSoFar {
    pub cell: Cell,
    pub seeds: u64,
    pub values: BTreeMap<u64, f64>,
}

impl CellSoFar {
    fn variant(&self) -> Variant {
        Variant { algorithm: self.cell.algorithm.clone(), params: self.cell.algorithm_params.clone() }
    }

    fn mean(&self) -> Option<f64> {
        let n = self.values.len();
        (n > 0).then(|| self.values.values().sum::<f64>() / n as f64)
    }
}

/// A comparison of cell `a` with cell `b` (the mean of `a - b` over their common seeds).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub a: usize,
    pub b: usize,
    /// The paired seeds (done in both cells).
    pub n: u64,
    pub mean: f64,
    /// `None` below [`super::compare::MIN_SEEDS`] pairs.
    pub interval: Option<(f64, f64)>,
    /// The practical-equivalence margin applied (a relative tolerance times `|mean of b|`
    /// over the pairs).
    pub tolerance: f64,
    pub verdict: Verdict,
}

/// What a round ends with: its comparisons, and the seeds the next round adds to each cell
/// (none: the sweep is resolved, or stopped by its limits).
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    pub comparisons: Vec<Comparison>,
    pub add: Vec<(usize, Range<u64>)>,
    /// The next round would have passed the budget: the comparisons still open ended
    /// unresolved.
    pub over_budget: bool,
}

impl Judgement {
    pub fn jobs_added(&self) -> u64 {
        self.add.iter().map(|(_, seeds)| seeds.end - seeds.start).sum()
    }
}

/// What the sweep's rounds have spent so far: its jobs (settled or not) and the time its
/// done jobs took.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    pub jobs: u64,
    /// Job milliseconds over the jobs that reported a time.
    pub job_ms: f64,
    /// How many jobs reported one.
    pub timed: u64,
}

/// Judge a round of `cells` (every cell of the sweep, in its order) under `rule`.
pub fn judge(rule: &Resolve, cells: &[CellSoFar], spent: Spent) -> Judgement {
    let resolution = Resolution::new(rule.confidence, rule.tolerance, rule.max_seeds);
    let mut comparisons = Vec::new();
    for group in benchmark_groups(cells) {
        for (a, b) in pairs(rule, cells, &group) {
            let (mut d, mut b_sum) = (Paired::default(), 0.0);
            for (seed, x) in &cells[a].values {
                if let Some(y) = cells[b].values.get(seed) {
                    d.push(x - y);
                    b_sum += y;
                }
            }
            let tolerance = match rule.relative {
                true if d.n() > 0 => rule.tolerance * (b_sum / d.n() as f64).abs(),
                true => 0.0,
                false => rule.tolerance,
            };
            let judged = resolution.with_tolerance(tolerance);
            let (interval, verdict) = (judged.interval(&d), judged.verdict(&d));
            comparisons.push(Comparison { a, b, n: d.n(), mean: d.mean(), interval, tolerance, verdict });
        }
    }
    // The open comparisons that more seeds can still settle, and their cells: not those at
    // max_seeds, nor those of a cell that ran its first round and has no value at all (its
    // jobs fail: more seeds would fail too).
    let failing = |i: usize| cells[i].values.is_empty() && cells[i].seeds >= rule.min_seeds;
    let growable =
        |c: &Comparison| cells[c.a].seeds.min(cells[c.b].seeds) < rule.max_seeds && !failing(c.a) && !failing(c.b);
    for c in comparisons.iter_mut().filter(|c| c.verdict == Verdict::Open && !growable(c)) {
        c.verdict = Verdict::Unresolved;
    }
    let most = cells.iter().map(|c| c.seeds).max().unwrap_or(0);
    let target = (most + rule.batch).min(rule.max_seeds);
    let mut grow = vec![false; cells.len()];
    for c in comparisons.iter().filter(|c| c.verdict == Verdict::Open) {
        grow[c.a] = true;
        grow[c.b] = true;
    }
    let add: Vec<(usize, Range<u64>)> =
        (0..cells.len()).filter(|&i| grow[i] && cells[i].seeds < target).map(|i| (i, cells[i].seeds..target)).collect();
    let mut judgement = Judgement { comparisons, add, over_budget: false };
    if !within_budget(rule, spent, judgement.jobs_added()) {
        judgement.add.clear();
        judgement.over_budget = true;
        for c in judgement.comparisons.iter_mut().filter(|c| c.verdict == Verdict::Open) {
            c.verdict = Verdict::Unresolved;
        }
    }
    judgement
}

/// Whether a round of `more` jobs fits the budget: their time is estimated at the mean of
/// the jobs timed so far.
fn within_budget(rule: &Resolve, spent: Spent, more: u64) -> bool {
    let jobs_ok = rule.budget.jobs.is_none_or(|most| spent.jobs + more <= most);
    let time_ok = rule.budget.cpu_hours.is_none_or(|hours| {
        let mean_ms = if spent.timed == 0 { 0.0 } else { spent.job_ms / spent.timed as f64 };
        spent.job_ms + more as f64 * mean_ms <= hours * 3_600_000.0
    });
    jobs_ok && time_ok
}

/// The cells of each benchmark variant (benchmark, its parameters and horizon), in the
/// order the sweep first has them.
fn benchmark_groups(cells: &[CellSoFar]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index: BTreeMap<(&str, &str, i64), usize> = BTreeMap::new();
    for (i, c) in cells.iter().enumerate() {
        let key = (c.cell.benchmark.as_str(), c.cell.benchmark_params.as_str(), c.cell.horizon);
        let g = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

/// The pairs `rule` compares among one benchmark's cells.
fn pairs(rule: &Resolve, cells: &[CellSoFar], group: &[usize]) -> Vec<(usize, usize)> {
    match &rule.compare {
        Compare::AllPairs => {
            group.iter().enumerate().flat_map(|(k, &a)| group[k + 1..].iter().map(move |&b| (a, b))).collect()
        }
        Compare::Pairs(wanted) => {
            let find = |v: &Variant| group.iter().copied().find(|&i| cells[i].variant() == *v);
            wanted.iter().filter_map(|(a, b)| Some((find(a)?, find(b)?))).collect()
        }
        Compare::VsBest => {
            let better = rule.better.unwrap_or(Better::Lower);
            let mut best: Option<(usize, f64)> = None;
            for &i in group {
                let Some(m) = cells[i].mean() else { continue };
                let wins = match (best, better) {
                    (None, _) => true,
                    (Some((_, b)), Better::Lower) => m < b,
                    (Some((_, b)), Better::Higher) => m > b,
                };
                if wins {
                    best = Some((i, m));
                }
            }
            let Some((best, _)) = best else { return Vec::new() };
            group.iter().filter(|&&i| i != best).map(|&i| (i, best)).collect()
        }
    }
}

/// What a done job brings to its round: the compared metric's value (`None`: NaN, or no
/// value at the step) and the time the job took (the sum of its steps' `elapsed_ms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobValue {
    pub value: Option<f64>,
    pub ms: f64,
}

/// The [`JobValue`]s earlier rounds read, by job key with the part that holds the job: a
/// part's rows never change, so a round reads only the jobs done since the last one (a
/// sweep's trajectories are read once, not once a round).
#[derive(Debug, Default)]
pub struct ReadValues {
    /// The metric and step the values are of.
    of: Option<(String, Option<u32>)>,
    values: HashMap<String, (std::sync::Arc<PathBuf>, JobValue)>,
}

/// The [`JobValue`] of each job of `keys` that a part of `sweep_dir` holds: `metric` at
/// `step`, or at the job's last step when `step` is `None` or the job ended before it.
/// Jobs whose value `read` has from the same part are not read again; `read` keeps the
/// values of the jobs read now.
pub fn job_values(
    sweep_dir: &Path,
    metric: &str,
    step: Option<u32>,
    keys: &BTreeSet<String>,
    read: &mut ReadValues,
) -> Result<HashMap<String, JobValue>> {
    let of = Some((metric.to_string(), step));
    if read.of != of {
        *read = ReadValues { of, values: HashMap::new() };
    }
    let jobs = stored_jobs(sweep_dir, Some(keys))?;
    let unread: Vec<_> =
        jobs.iter().filter(|job| read.values.get(&job.key).is_none_or(|(part, _)| *part != job.part)).collect();
    let mut fresh: HashMap<String, JobValue> = HashMap::with_capacity(unread.len());
    for_each_job(&unread, |job, df, _first| {
        let steps = df.column(schema::STEP)?.cast(&DataType::Int64)?;
        let steps = steps.i64()?;
        let values = df
            .column(metric)
            .map_err(|_| invalid(format!("{}: no column `{metric}` in {}", job.key, job.part.display())))?
            .cast(&DataType::Float64)?;
        let values = values.f64()?;
        let ms: f64 = df.column(schema::ELAPSED_MS)?.f64()?.sum().unwrap_or(0.0);
        let entry = fresh.entry(job.key.clone()).or_insert(JobValue { value: None, ms: 0.0 });
        entry.ms += ms;
        // Rows come in step order, a job's pieces in order: the last row seen at or
        // before the step is the value.
        for (s, v) in steps.iter().zip(values.iter()) {
            match (s, step) {
                (Some(s), Some(at)) if s > i64::from(at) => break,
                (Some(_), _) => entry.value = v.filter(|x| !x.is_nan()),
                (None, _) => {}
            }
        }
        Ok(())
    })?;
    for job in unread {
        if let Some(value) = fresh.remove(&job.key) {
            read.values.insert(job.key.clone(), (job.part.clone(), value));
        }
    }
    Ok(jobs.iter().filter_map(|job| read.values.get(&job.key).map(|(_, v)| (job.key.clone(), *v))).collect())
}

/// The comparisons of a judged round as [`COMPARISONS`]' table.
pub fn comparisons_frame(rule: &Resolve, cells: &[CellSoFar], judgement: &Judgement) -> Result<DataFrame> {
    let cs = &judgement.comparisons;
    let text = |f: &dyn Fn(&Comparison) -> String| -> Vec<String> { cs.iter().map(f).collect() };
    let a = |c: &Comparison| &cells[c.a].cell;
    let b = |c: &Comparison| &cells[c.b].cell;
    let columns: Vec<Column> = vec![
        Column::new(schema::FAMILY.into(), text(&|c| a(c).family.clone())),
        Column::new(schema::BENCHMARK.into(), text(&|c| a(c).benchmark.clone())),
        Column::new(schema::BENCHMARK_PARAMS.into(), text(&|c| a(c).benchmark_params.clone())),
        Column::new(schema::HORIZON.into(), cs.iter().map(|c| a(c).horizon).collect::<Vec<i64>>()),
        Column::new(schema::ALGORITHM_A.into(), text(&|c| a(c).algorithm.clone())),
        Column::new(schema::ALGORITHM_PARAMS_A.into(), text(&|c| a(c).algorithm_params.clone())),
        Column::new(schema::ALGORITHM_B.into(), text(&|c| b(c).algorithm.clone())),
        Column::new(schema::ALGORITHM_PARAMS_B.into(), text(&|c| b(c).algorithm_params.clone())),
        Column::new(schema::METRIC.into(), text(&|_| rule.metric.clone())),
        Column::new(schema::STEP.into(), cs.iter().map(|_| rule.step.map(i64::from)).collect::<Vec<Option<i64>>>()),
        Column::new(schema::N.into(), cs.iter().map(|c| c.n as i64).collect::<Vec<i64>>()),
        Column::new(schema::MEAN_DIFFERENCE.into(), cs.iter().map(|c| c.mean).collect::<Vec<f64>>()),
        Column::new(schema::LOWER.into(), cs.iter().map(|c| c.interval.map(|i| i.0)).collect::<Vec<Option<f64>>>()),
        Column::new(schema::UPPER.into(), cs.iter().map(|c| c.interval.map(|i| i.1)).collect::<Vec<Option<f64>>>()),
        Column::new(schema::VERDICT.into(), text(&|c| c.verdict.label().to_string())),
        Column::new(schema::SEEDS_A.into(), cs.iter().map(|c| cells[c.a].seeds as i64).collect::<Vec<i64>>()),
        Column::new(schema::SEEDS_B.into(), cs.iter().map(|c| cells[c.b].seeds as i64).collect::<Vec<i64>>()),
        Column::new(schema::MAX_SEEDS.into(), cs.iter().map(|_| rule.max_seeds as i64).collect::<Vec<i64>>()),
        Column::new(schema::CONFIDENCE.into(), cs.iter().map(|_| rule.confidence).collect::<Vec<f64>>()),
        Column::new(schema::TOLERANCE.into(), cs.iter().map(|c| c.tolerance).collect::<Vec<f64>>()),
    ];
    debug_assert_eq!(columns.len(), COMPARISONS.len());
    Ok(DataFrame::new(cs.len(), columns)?)
}

/// Write the round's comparisons to `<sweep_dir>/comparisons.parquet`, atomically.
pub fn write_comparisons(
    sweep_dir: &Path,
    rule: &Resolve,
    cells: &[CellSoFar],
    judgement: &Judgement,
) -> Result<PathBuf> {
    let df = comparisons_frame(rule, cells, judgement)?;
    let path = sweep_dir.join(COMPARISONS_FILE);
    write_atomic(&path, |out| write_table(&df, out))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::resolve::Budget;

    fn rule(compare: Compare) -> Resolve {
        Resolve {
            metric: "regret".into(),
            step: None,
            better: Some(Better::Lower),
            min_seeds: 5,
            batch: 5,
            max_seeds: 20,
            confidence: 0.95,
            tolerance: 0.0,
            relative: false,
            compare,
            budget: Budget::default(),
        }
    }

    fn cell(benchmark: &str, algorithm: &str, seeds: u64, value: impl Fn(u64) -> f64) -> CellSoFar {
        let cell = Cell {
            family: "testkit".into(),
            benchmark: benchmark.into(),
            benchmark_params: "{}".into(),
            algorithm: algorithm.into(),
            algorithm_params: "{}".into(),
            horizon: 10,
        };
        CellSoFar { cell, seeds, values: (0..seeds).map(|s| (s, value(s))).collect() }
    }

    /// Noise shared by seed (the common random numbers) and a little of each cell's own.
    fn noisy(mean: f64, own: u64) -> impl Fn(u64) -> f64 {
        move |s| mean + ((s * 7919 % 13) as f64 - 6.0) + 0.01 * ((s * 31 + own) % 5) as f64
    }

    #[test]
    fn vs_best_compares_each_variant_with_the_lowest_mean_and_grows_the_open_ones() {
        // b is clearly best; a is close to it (open after 5 seeds); c clearly worse.
        let cells =
            [cell("f", "a", 5, noisy(0.002, 1)), cell("f", "b", 5, noisy(0.0, 2)), cell("f", "c", 5, noisy(9.0, 3))];
        let j = judge(&rule(Compare::VsBest), &cells, Spent::default());
        let pairs: Vec<(usize, usize, Verdict)> = j.comparisons.iter().map(|c| (c.a, c.b, c.verdict)).collect();
        assert_eq!(pairs, [(0, 1, Verdict::Open), (2, 1, Verdict::Greater)]);
        assert_eq!(j.comparisons[1].n, 5);
        assert!((j.comparisons[1].mean - 9.0).abs() < 0.05);
        // Only a and b, the open comparison's cells, get the next 5 seeds.
        assert_eq!(j.add, [(0, 5..10), (1, 5..10)]);
        assert!(!j.over_budget);
    }

    #[test]
    fn a_comparison_at_max_seeds_ends_unresolved_and_nothing_is_added() {
        let cells = [cell("f", "a", 20, noisy(0.002, 1)), cell("f", "b", 20, noisy(0.0, 2))];
        let j = judge(&rule(Compare::AllPairs), &cells, Spent::default());
        assert_eq!(j.comparisons.iter().map(|c| c.verdict).collect::<Vec<_>>(), [Verdict::Unresolved]);
        assert!(j.add.is_empty());
    }

    #[test]
    fn a_lagging_cell_is_brought_to_the_round_and_the_round_is_capped_at_max_seeds() {
        // c rejoins a comparison with 5 seeds while a has 18: both go to 20, not 23.
        let cells = [cell("f", "a", 18, noisy(0.001, 1)), cell("f", "b", 5, noisy(0.0, 2))];
        let j = judge(&rule(Compare::AllPairs), &cells, Spent::default());
        assert_eq!(j.comparisons[0].verdict, Verdict::Open);
        assert_eq!(j.add, [(0, 18..20), (1, 5..20)]);
    }

    #[test]
    fn failed_seeds_are_left_out_of_the_pairs() {
        let mut a = cell("f", "a", 8, |s| s as f64 + 1.0);
        let b = cell("f", "b", 8, |s| s as f64);
        a.values.remove(&3);
        a.values.remove(&6);
        let j = judge(&rule(Compare::AllPairs), &[a, b], Spent::default());
        let c = &j.comparisons[0];
        assert_eq!((c.n, c.mean), (6, 1.0));
        // A constant difference has no spread: the interval is the point, and it is ordered.
        assert_eq!((c.interval, c.verdict), (Some((1.0, 1.0)), Verdict::Greater));
    }

    /// A cell whose jobs all failed gets no more seeds: its comparisons end unresolved,
    /// the others go on.
    #[test]
    fn a_cell_whose_jobs_all_fail_gets_no_more_seeds() {
        let mut broken = cell("f", "a", 5, |_| 0.0);
        broken.values.clear();
        let cells = [broken, cell("f", "b", 5, noisy(0.0, 2)), cell("f", "c", 5, noisy(0.001, 3))];
        let j = judge(&rule(Compare::AllPairs), &cells, Spent::default());
        let verdicts: Vec<Verdict> = j.comparisons.iter().map(|c| c.verdict).collect();
        assert_eq!(verdicts, [Verdict::Unresolved, Verdict::Unresolved, Verdict::Open]);
        assert_eq!(j.add, [(1, 5..10), (2, 5..10)]);
    }

    #[test]
    fn benchmarks_are_compared_apart_and_pairs_pick_their_variants() {
        let cells = [
            cell("f", "a", 5, noisy(3.0, 1)),
            cell("f", "b", 5, noisy(0.0, 2)),
            cell("g", "a", 5, noisy(0.0, 3)),
            cell("g", "b", 5, noisy(3.0, 4)),
        ];
        let v = |name: &str| Variant { algorithm: name.into(), params: "{}".into() };
        let j = judge(&rule(Compare::Pairs(vec![(v("b"), v("a"))])), &cells, Spent::default());
        let got: Vec<(usize, usize, Verdict)> = j.comparisons.iter().map(|c| (c.a, c.b, c.verdict)).collect();
        assert_eq!(got, [(1, 0, Verdict::Less), (3, 2, Verdict::Greater)]);
        assert!(j.add.is_empty());
        // vs-best with higher better: a is best on f, b on g.
        let mut higher = rule(Compare::VsBest);
        higher.better = Some(Better::Higher);
        let j = judge(&higher, &cells, Spent::default());
        let got: Vec<(usize, usize)> = j.comparisons.iter().map(|c| (c.a, c.b)).collect();
        assert_eq!(got, [(1, 0), (2, 3)]);
    }

    /// A relative tolerance is a fraction of b's mean over the pairs: 2% of 100 admits a
    /// difference of 0.5 known to within its interval, 2% of 10 does not.
    #[test]
    fn a_relative_tolerance_scales_with_bs_mean() {
        let wobble = |s: u64| 0.01 * ((s * 7919 % 13) as f64 - 6.0);
        let mut r = rule(Compare::AllPairs);
        (r.tolerance, r.relative) = (0.02, true);
        for (b_mean, want) in [(100.0, Verdict::Equivalent), (10.0, Verdict::Greater)] {
            let cells = [cell("f", "a", 20, |s| b_mean + 0.5 + wobble(s)), cell("f", "b", 20, |_| b_mean)];
            let c = &judge(&r, &cells, Spent::default()).comparisons[0];
            assert_eq!(c.tolerance, 0.02 * b_mean);
            assert_eq!(c.verdict, want, "{c:?}");
        }
    }

    #[test]
    fn a_round_past_the_budget_is_not_started() {
        let cells = [cell("f", "a", 5, noisy(0.002, 1)), cell("f", "b", 5, noisy(0.0, 2))];
        let mut r = rule(Compare::AllPairs);
        r.budget.jobs = Some(19);
        // 10 jobs so far, 10 more would make 20 > 19.
        let spent = Spent { jobs: 10, job_ms: 10_000.0, timed: 10 };
        let j = judge(&r, &cells, spent);
        assert!(j.over_budget && j.add.is_empty());
        assert_eq!(j.comparisons[0].verdict, Verdict::Unresolved);
        r.budget.jobs = Some(20);
        assert_eq!(judge(&r, &cells, spent).jobs_added(), 10);
        // Time: 10 s so far at 1 s a job; 10 more make 20 s.
        r.budget = Budget { jobs: None, cpu_hours: Some(19.0 / 3600.0) };
        assert!(judge(&r, &cells, spent).over_budget);
        r.budget.cpu_hours = Some(20.0 / 3600.0);
        assert!(!judge(&r, &cells, spent).over_budget);
    }

    /// Values at the last step and at a given one, read once: a second round takes the kept
    /// value of a job whose part is unchanged, and reads again one whose part differs.
    #[test]
    fn job_values_are_read_once_per_part() {
        use crate::results::test_support::{fixture_jobs, write_fixture, STRADDLE, UCB};
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path());
        let jobs: Vec<_> = fixture_jobs().into_iter().filter(|(j, ..)| j.spec.family == "lse").collect();
        let keys: BTreeSet<String> = jobs.iter().map(|(j, ..)| j.key.0.clone()).collect();
        let mut read = ReadValues::default();
        let last = job_values(dir.path(), "regret", None, &keys, &mut read).unwrap();
        assert_eq!((last.len(), read.values.len()), (6, 6));
        for (job, ..) in &jobs {
            let seed = job.spec.seed as usize;
            let table = if job.spec.algorithm == "straddle" { STRADDLE } else { UCB };
            let got = last[&job.key.0];
            assert_eq!(got, JobValue { value: Some(table[seed][2]), ms: 3.0 * (1.0 + seed as f64) });
        }
        let key = |algorithm: &str, seed: u64| {
            jobs.iter().find(|(j, ..)| j.spec.algorithm == algorithm && j.spec.seed == seed).unwrap().0.key.0.clone()
        };
        // Kept: a changed value with the same part is what comes back.
        read.values.get_mut(&key("straddle", 0)).unwrap().1.value = Some(99.0);
        let again = job_values(dir.path(), "regret", None, &keys, &mut read).unwrap();
        assert_eq!(again[&key("straddle", 0)].value, Some(99.0));
        // Another part: read again.
        read.values.get_mut(&key("straddle", 0)).unwrap().0 = std::sync::Arc::new(PathBuf::from("elsewhere.parquet"));
        let again = job_values(dir.path(), "regret", None, &keys, &mut read).unwrap();
        assert_eq!(again[&key("straddle", 0)].value, Some(1.0));
        // Another step: everything read again; a NaN at the step is no value.
        let at1 = job_values(dir.path(), "regret", Some(1), &keys, &mut read).unwrap();
        assert_eq!(at1[&key("straddle", 2)].value, Some(7.0));
        assert_eq!(at1[&key("ucb", 1)].value, Some(3.0));
        assert_eq!(at1[&key("ucb", 2)].value, None);
        // Only the keys asked for.
        let one: BTreeSet<String> = [key("ucb", 0)].into();
        assert_eq!(job_values(dir.path(), "regret", Some(1), &one, &mut read).unwrap().len(), 1);
    }
}
