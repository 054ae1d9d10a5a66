//! The columns of armada's tables, declared once: their names, order, types and meanings.
//!
//! The part writer builds its frames in [`TRAJECTORY`]'s order, the summary and along
//! tables are assembled from [`CELL`], [`STATISTICS`] and [`JOB_COUNTS`], and readers, the
//! dashboard and the fetch filters name columns by these constants. The schema tables of
//! README.md and docs/results.md are [`markdown`] of these declarations: a test fails when
//! they differ. A family's metrics follow the trajectory's fixed columns; what each means is
//! in every file's footer (`armada.metrics`).

use polars::prelude::DataType;

/// A column's Parquet type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    String,
    Int64,
    Float64,
}

impl ColumnType {
    pub fn dtype(self) -> DataType {
        match self {
            ColumnType::String => DataType::String,
            ColumnType::Int64 => DataType::Int64,
            ColumnType::Float64 => DataType::Float64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ColumnType::String => "String",
            ColumnType::Int64 => "Int64",
            ColumnType::Float64 => "Float64",
        }
    }
}

/// One column of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableColumn {
    pub name: &'static str,
    pub ty: ColumnType,
    /// What a user reads in the docs' schema table.
    pub doc: &'static str,
}

const fn column(name: &'static str, ty: ColumnType, doc: &'static str) -> TableColumn {
    TableColumn { name, ty, doc }
}

pub const JOB_KEY: &str = "job_key";
pub const FAMILY: &str = "family";
pub const BENCHMARK: &str = "benchmark";
pub const BENCHMARK_PARAMS: &str = "benchmark_params";
pub const ALGORITHM: &str = "algorithm";
pub const ALGORITHM_PARAMS: &str = "algorithm_params";
pub const SEED: &str = "seed";
pub const SWEEP_SEED: &str = "sweep_seed";
pub const HORIZON: &str = "horizon";
pub const STEP: &str = "step";
pub const ELAPSED_MS: &str = "elapsed_ms";
pub const METRIC: &str = "metric";
pub const N: &str = "n";
pub const MEAN: &str = "mean";
pub const STD: &str = "std";
pub const SE: &str = "se";
pub const MEDIAN: &str = "median";
pub const Q10: &str = "q10";
pub const Q90: &str = "q90";
pub const N_JOBS: &str = "n_jobs";
pub const N_FAILED: &str = "n_failed";
pub const ALONG: &str = "along";
pub const AT: &str = "at";
pub const POINT: &str = "point";
pub const ALGORITHM_A: &str = "algorithm_a";
pub const ALGORITHM_PARAMS_A: &str = "algorithm_params_a";
pub const ALGORITHM_B: &str = "algorithm_b";
pub const ALGORITHM_PARAMS_B: &str = "algorithm_params_b";
pub const MEAN_DIFFERENCE: &str = "mean_difference";
pub const LOWER: &str = "lower";
pub const UPPER: &str = "upper";
pub const VERDICT: &str = "verdict";
pub const SEEDS_A: &str = "seeds_a";
pub const SEEDS_B: &str = "seeds_b";
pub const CONFIDENCE: &str = "confidence";
pub const TOLERANCE: &str = "tolerance";
pub const MAX_SEEDS: &str = "max_seeds";

/// The cell's text columns, in every table's order; [`HORIZON`] completes the cell.
pub const CELL_TEXT: [&str; 5] = [FAMILY, BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS];
/// The columns that name a cell, constant within a job: the group columns above `step`.
pub const CELL: [&str; 6] = [FAMILY, BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS, HORIZON];
/// The statistics over seeds of a group, in table order.
pub const STATISTICS: [&str; 7] = [N, MEAN, STD, SE, MEDIAN, Q10, Q90];
/// The cell's job counts, after the statistics in `summary.parquet` and `final.parquet`.
pub const JOB_COUNTS: [&str; 2] = [N_JOBS, N_FAILED];

const QUANTILES: &str = "median and 10 % / 90 % quantiles (linear interpolation, as numpy's default)";
const THE_CELL: &str = "the cell";

/// `trajectories/*.parquet`: one row per step; the family's metrics follow these columns.
pub const TRAJECTORY: [TableColumn; 11] = [
    column(JOB_KEY, ColumnType::String, "32 hex digits: BLAKE3 of the job's canonical spec (with defaults filled in)"),
    column(FAMILY, ColumnType::String, "family name, e.g. `lse`"),
    column(BENCHMARK, ColumnType::String, "benchmark name"),
    column(
        BENCHMARK_PARAMS,
        ColumnType::String,
        "the benchmark's parameters (with defaults filled in) as a JSON object, e.g. `{\"budget\":100.0}`",
    ),
    column(ALGORITHM, ColumnType::String, "algorithm name"),
    column(
        ALGORITHM_PARAMS,
        ColumnType::String,
        "the algorithm's parameters as JSON, e.g. `{\"beta_sqrt\":3.0,\"tie_break\":\"lowest-index\"}`: filter with \
         polars' `str.json_path_match(\"$.beta_sqrt\")` or DuckDB's `algorithm_params->>'beta_sqrt'`",
    ),
    column(SEED, ColumnType::Int64, "seed index (simulation number)"),
    column(
        SWEEP_SEED,
        ColumnType::Int64,
        "the sweep seed, a u64 stored bit for bit: values >= 2^63 read back negative (cast to UInt64 to recover them)",
    ),
    column(HORIZON, ColumnType::Int64, "acquisitions after the initial design"),
    column(
        STEP,
        ColumnType::Int64,
        "0 = after the initial point; t = after t acquisitions. Every step 0..=horizon is there, except in a family \
         whose runs may end early (`cvs`, when the budget is spent; `testkit-short`): steps 0..=last, last <= horizon",
    ),
    column(
        ELAPSED_MS,
        ColumnType::Float64,
        "wall-clock milliseconds of the step (the only column that differs between two runs of a job)",
    ),
];

/// The cell's columns in the summary tables.
const CELL_COLUMNS: [TableColumn; 6] = [
    column(FAMILY, ColumnType::String, THE_CELL),
    column(BENCHMARK, ColumnType::String, THE_CELL),
    column(BENCHMARK_PARAMS, ColumnType::String, THE_CELL),
    column(ALGORITHM, ColumnType::String, THE_CELL),
    column(ALGORITHM_PARAMS, ColumnType::String, THE_CELL),
    column(HORIZON, ColumnType::Int64, "the cell's horizon"),
];

/// A group's statistics over seeds, after its `metric` column.
const STATISTICS_COLUMNS: [TableColumn; 6] = [
    column(MEAN, ColumnType::Float64, "mean over seeds"),
    column(STD, ColumnType::Float64, "sample standard deviation (ddof = 1; null when n < 2)"),
    column(SE, ColumnType::Float64, "standard error std / sqrt(n)"),
    column(MEDIAN, ColumnType::Float64, QUANTILES),
    column(Q10, ColumnType::Float64, QUANTILES),
    column(Q90, ColumnType::Float64, QUANTILES),
];

/// `summary.parquet` (every step) and `final.parquet` (each job's last row): one row per
/// cell, step and Float64 metric, sorted by those columns.
pub const SUMMARY: [TableColumn; 17] = concat(&[
    &CELL_COLUMNS,
    &[
        column(
            STEP,
            ColumnType::Int64,
            "the step (in `final.parquet`, the cell's largest last step: each job contributes its own last row, \
             wherever its run ended)",
        ),
        column(
            METRIC,
            ColumnType::String,
            "a Float64 metric column of the trajectories (Int64 metrics and elapsed_ms are not aggregated)",
        ),
        column(
            N,
            ColumnType::Int64,
            "seeds with a value (NaN counts as missing; a run that ended before this step has none)",
        ),
    ],
    &STATISTICS_COLUMNS,
    &[
        column(
            N_JOBS,
            ColumnType::Int64,
            "the cell's jobs in the sweep (null when the table was rebuilt without the sweep's record of its jobs)",
        ),
        column(
            N_FAILED,
            ColumnType::Int64,
            "of those, jobs that failed for good: a cell whose seeds failed shows it here (`n` counts only the jobs \
             with a result), and a cell whose every job failed keeps its rows, with `step` null, `n = 0` and null \
             statistics",
        ),
    ],
]);

/// `along_<column>.parquet`: the statistics of [`SUMMARY`] on the common grid of a
/// monotone column, one row per cell, grid point and metric.
pub const ALONG_TABLE: [TableColumn; 17] = concat(&[
    &CELL_COLUMNS,
    &[
        column(ALONG, ColumnType::String, "the column the grid is on, e.g. `cum_cost`"),
        column(AT, ColumnType::Float64, "the grid value"),
        column(POINT, ColumnType::Int64, "its index in the cell's grid"),
        column(
            METRIC,
            ColumnType::String,
            "a Float64 metric column of the trajectories, or `step` (so that steps against cost are there too)",
        ),
        column(N, ColumnType::Int64, "runs with a value at the point"),
    ],
    &STATISTICS_COLUMNS,
]);

/// `comparisons.parquet` of a resolving sweep: one row per comparison of two algorithm
/// variants on one benchmark variant, as its last round left it.
pub const COMPARISONS: [TableColumn; 20] = [
    column(FAMILY, ColumnType::String, "the benchmark variant compared on"),
    column(BENCHMARK, ColumnType::String, "the benchmark variant compared on"),
    column(BENCHMARK_PARAMS, ColumnType::String, "the benchmark variant compared on"),
    column(HORIZON, ColumnType::Int64, "the benchmark variant compared on"),
    column(ALGORITHM_A, ColumnType::String, "the two algorithm variants: `a` against `b`"),
    column(ALGORITHM_PARAMS_A, ColumnType::String, "the two algorithm variants: `a` against `b`"),
    column(ALGORITHM_B, ColumnType::String, "the two algorithm variants: `a` against `b`"),
    column(ALGORITHM_PARAMS_B, ColumnType::String, "the two algorithm variants: `a` against `b`"),
    column(METRIC, ColumnType::String, "the metric compared (`[resolve]`'s `metric`)"),
    column(STEP, ColumnType::Int64, "the step it is compared at (null: each job's last)"),
    column(N, ColumnType::Int64, "seeds done in both cells: the pairs"),
    column(MEAN_DIFFERENCE, ColumnType::Float64, "the mean over the pairs of a's value minus b's"),
    column(LOWER, ColumnType::Float64, "the anytime-valid confidence interval of that mean (null below 5 pairs)"),
    column(UPPER, ColumnType::Float64, "the anytime-valid confidence interval of that mean (null below 5 pairs)"),
    column(
        VERDICT,
        ColumnType::String,
        "`a<b` or `a>b` (the interval excludes 0), `equivalent` (it lies within plus or minus the tolerance), \
         `open` (more seeds come) or `unresolved` (at `max_seeds` or the budget)",
    ),
    column(SEEDS_A, ColumnType::Int64, "seeds run in a's cell, and in b's"),
    column(SEEDS_B, ColumnType::Int64, "seeds run in a's cell, and in b's"),
    column(
        MAX_SEEDS,
        ColumnType::Int64,
        "`[resolve]`'s `max_seeds`: the intervals are planned tightest there (with the pairs, the mean, \
         the differences' standard deviation and the confidence, they are recomputable)",
    ),
    column(CONFIDENCE, ColumnType::Float64, "`[resolve]`'s confidence"),
    column(
        TOLERANCE,
        ColumnType::Float64,
        "the practical-equivalence margin applied: `[resolve]`'s tolerance (a relative one times b's mean over the pairs)",
    ),
];

/// The columns of `parts`, one after another (a table made of shared pieces, at compile
/// time: a wrong length `N` does not compile).
const fn concat<const N: usize>(parts: &[&[TableColumn]]) -> [TableColumn; N] {
    let mut out = [column("", ColumnType::String, ""); N];
    let (mut at, mut p) = (0, 0);
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[at] = parts[p][i];
            (at, i) = (at + 1, i + 1);
        }
        p += 1;
    }
    assert!(at == N, "the parts do not fill the table");
    out
}

/// The trajectory's columns that hold one value over a job's rows (all but `step` and
/// `elapsed_ms`): its spec and key.
pub fn job_columns() -> impl Iterator<Item = &'static str> {
    TRAJECTORY.iter().map(|c| c.name).filter(|name| ![STEP, ELAPSED_MS].contains(name))
}

/// Whether `name` is one of the trajectory's fixed columns (a metric may not take it).
pub fn is_fixed_column(name: &str) -> bool {
    TRAJECTORY.iter().any(|c| c.name == name)
}

/// A table's Markdown schema, as the docs print it: consecutive columns of one type and
/// meaning share a row.
pub fn markdown(table: &[TableColumn]) -> String {
    let mut out = String::from("| column | type | meaning |\n|---|---|---|\n");
    let mut rows: Vec<(Vec<&str>, ColumnType, &str)> = Vec::new();
    for c in table {
        match rows.last_mut() {
            Some((names, ty, doc)) if *ty == c.ty && *doc == c.doc => names.push(c.name),
            _ => rows.push((vec![c.name], c.ty, c.doc)),
        }
    }
    for (names, ty, doc) in rows {
        out.push_str(&format!("| {} | {} | {} |\n", names.join(", "), ty.name(), doc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(table: &[TableColumn]) -> Vec<&'static str> {
        table.iter().map(|c| c.name).collect()
    }

    /// The tables share their parts in one order: the cell, then what each adds.
    #[test]
    fn the_tables_are_made_of_the_cell_the_statistics_and_the_job_counts() {
        let trajectory = [&[JOB_KEY][..], &CELL_TEXT, &[SEED, SWEEP_SEED, HORIZON, STEP, ELAPSED_MS]].concat();
        assert_eq!(names(&TRAJECTORY), trajectory);
        assert_eq!(names(&SUMMARY), [&CELL[..], &[STEP, METRIC], &STATISTICS, &JOB_COUNTS].concat());
        assert_eq!(names(&ALONG_TABLE), [&CELL[..], &[ALONG, AT, POINT, METRIC], &STATISTICS].concat());
        assert_eq!(job_columns().collect::<Vec<_>>(), &trajectory[..9]);
        assert!(is_fixed_column("elapsed_ms") && is_fixed_column("job_key") && !is_fixed_column("regret"));
        assert!(!is_fixed_column(METRIC), "a summary column is no trajectory column");
    }

    /// Columns of one type and meaning share a row, and only consecutive ones.
    #[test]
    fn markdown_groups_consecutive_columns_of_one_type_and_meaning() {
        let table = [
            column("a", ColumnType::String, "x"),
            column("b", ColumnType::String, "x"),
            column("c", ColumnType::Int64, "x"),
            column("d", ColumnType::String, "x"),
        ];
        let expected = "| column | type | meaning |\n|---|---|---|\n| a, b | String | x |\n| c | Int64 | x |\n| d | String | x |\n";
        assert_eq!(markdown(&table), expected);
        assert_eq!(table[2].ty.dtype(), DataType::Int64);
    }

    /// The table that follows `heading` in the document at `path` (from the repository's
    /// root): its lines up to the first that is not a table row.
    fn table_after(path: &str, heading: &str) -> String {
        let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
        let at = text.find(heading).unwrap_or_else(|| panic!("{path} has no heading {heading:?}"));
        let rows: Vec<&str> =
            text[at..].lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).collect();
        rows.iter().map(|l| format!("{l}\n")).collect()
    }

    /// The Python SDK refuses the same metric names as the coordinator: its list of the
    /// trajectory's fixed columns is the declaration's.
    #[test]
    fn the_sdks_fixed_columns_are_the_declarations() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workers/python/armada_sdk/family.py");
        let text = std::fs::read_to_string(path).unwrap();
        let declared: Vec<&str> = TRAJECTORY.iter().map(|c| c.name).collect();
        let line = format!("    \"{}\".split()", declared.join(" "));
        assert!(
            text.contains(&format!("TRAJECTORY_COLUMNS = frozenset(\n{line}\n)")),
            "family.py's TRAJECTORY_COLUMNS should read\n{line}"
        );
    }

    /// The docs' schema tables are the declarations: a column added, moved or retyped here
    /// fails this test until the docs say so (the message has the table to paste).
    #[test]
    fn the_docs_schema_tables_are_the_declarations() {
        let docs = [
            ("README.md", "### Trajectories", &TRAJECTORY[..]),
            ("README.md", "### `summary.parquet` and `final.parquet`", &SUMMARY[..]),
            ("docs/results.md", "## `along_<column>.parquet`", &ALONG_TABLE[..]),
            ("docs/results.md", "## `comparisons.parquet`", &COMPARISONS[..]),
        ];
        for (path, heading, table) in docs {
            let expected = markdown(table);
            assert_eq!(table_after(path, heading), expected, "{path}, {heading}: the table should read\n{expected}");
        }
    }
}
