//! Trajectory parts: many committed jobs per Parquet file.
//!
//! A part holds the trajectories of a batch of jobs of one sweep, each job a contiguous
//! run of rows, sorted by (cell, job key), in row groups of at most [`PART_ROW_GROUP_ROWS`]
//! rows. Its footer carries the part's index under the key-value metadata entry
//! [`INDEX_KEY`]: every job's key, cell, first row and row count, so that listing a sweep's
//! jobs reads footers only. A part is named after the smallest key it holds,
//! `part-<key>.parquet`; a job is in exactly one part (first commit wins), so names never
//! collide. Files written by older armada (`<key>.parquet`, one job, no index) are read as
//! parts of one job.

use super::*;
use armada_core::{JobSpec, MetricDef, MetricKind, StepRecord, ValidJob};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

/// Rows per row group of a part: what the writer holds in memory at once. Small jobs share
/// a row group; a long one spans several.
pub const PART_ROW_GROUP_ROWS: usize = 1 << 15;

/// The footer metadata key of a part's index.
pub const INDEX_KEY: &str = "armada.jobs";

/// The footer metadata key of who produced each job of a part: a JSON object from job key
/// to [`Provenance`] (DuckDB: `parquet_kv_metadata`; polars: `read_parquet_metadata`).
pub const PROVENANCE_KEY: &str = "armada.provenance";

/// The footer metadata key of what the family's metrics mean: a JSON object from metric
/// name to `{"kind": "float" | "integer", "doc": ...}`, in parts and in the summary tables,
/// so that a file says what its columns are without `armada list`.
pub const METRICS_KEY: &str = "armada.metrics";

/// [`METRICS_KEY`]'s value for `metrics`.
fn metrics_json(metrics: &[MetricDef]) -> String {
    let entries: serde_json::Map<String, serde_json::Value> = metrics
        .iter()
        .map(|m| {
            let kind = match m.kind {
                MetricKind::Float => "float",
                MetricKind::Int => "integer",
            };
            (m.name.to_string(), serde_json::json!({ "kind": kind, "doc": m.doc }))
        })
        .collect();
    serde_json::Value::Object(entries).to_string()
}

/// The metrics' meanings as a sweep's parts record them ([`METRICS_KEY`]), from the first
/// part that has them (None for parts written before they did, or no parts).
pub fn read_metric_docs(sweep_dir: &Path) -> Option<String> {
    part_files(sweep_dir).ok()?.iter().find_map(|path| {
        let metadata = ParquetReader::new(File::open(path).ok()?).get_metadata().ok()?.clone();
        let kv = metadata.key_value_metadata().as_ref()?;
        kv.iter().find(|e| e.key == METRICS_KEY).and_then(|e| e.value.clone())
    })
}

/// Who produced a committed trajectory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The worker session as the coordinator names it (`w3`), and as it named itself.
    pub worker: String,
    pub name: String,
    pub host: String,
    /// What the worker runs, as it said: armada's version and build, or an SDK's version.
    pub software: String,
    /// Its processor's model and x86-64 feature level, as it said (empty in parts written
    /// before workers said it).
    #[serde(default)]
    pub processor: String,
    /// The attempt that committed it.
    pub attempt_id: u64,
    /// The digest of the family's declaration, for a declared family (empty for a built-in
    /// one: the coordinator's build decides it).
    pub family_digest: String,
    /// The digest of the code that computed it, as the worker's SDK computed it at
    /// registration (empty for a built-in family, and for parts written before it was
    /// recorded).
    #[serde(default)]
    pub code: String,
    /// What the coordinator observed, not what the worker said (empty or 0 in parts written
    /// before it was recorded): the label of the token the worker registered with (its
    /// `name` in `--tokens`, `--token` for the single admin token, `none` on a coordinator
    /// without tokens), the address the registration came from, and when (UNIX ms).
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub peer: String,
    #[serde(default)]
    pub registered_ms: i64,
}

/// The group columns above step: constant within a job.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Cell {
    pub family: String,
    pub benchmark: String,
    pub benchmark_params: String,
    pub algorithm: String,
    pub algorithm_params: String,
    pub horizon: i64,
}

impl Cell {
    pub fn of(job: &ValidJob) -> Cell {
        Cell::of_spec(&job.spec)
    }

    pub fn of_spec(spec: &JobSpec) -> Cell {
        Cell {
            family: spec.family.clone(),
            benchmark: spec.benchmark.clone(),
            benchmark_params: spec.benchmark_params.to_json(),
            algorithm: spec.algorithm.clone(),
            algorithm_params: spec.algorithm_params.to_json(),
            horizon: i64::from(spec.horizon),
        }
    }

    /// This cell with its parameters as JSON, whichever form its part wrote them in (parts
    /// written before armada stored JSON hold the canonical text `{a=1,b="x"}`): a cell
    /// reads the same from old parts and new, so their jobs summarize together.
    fn with_json_params(mut self) -> Cell {
        self.benchmark_params = params_json(&self.benchmark_params);
        self.algorithm_params = params_json(&self.algorithm_params);
        self
    }
}

/// Stored parameter text as JSON (text that does not read as parameters is kept as it is).
fn params_json(text: &str) -> String {
    if text.starts_with("{\"") {
        return text.to_string();
    }
    text.parse::<armada_core::Params>().map_or_else(|_| text.to_string(), |p| p.to_json())
}

/// Where one committed job's rows are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRows {
    pub key: String,
    /// Shared by the jobs of a cell in a part (a sweep of a million seeds has one cell).
    pub cell: Arc<Cell>,
    pub part: Arc<PathBuf>,
    /// First row of the job in its part.
    pub offset: usize,
    pub rows: usize,
}

/// A part's index as stored in its footer: cells once, then (key, cell, offset, rows) per job.
#[derive(Serialize, Deserialize)]
struct PartIndex {
    cells: Vec<Cell>,
    jobs: Vec<(String, usize, usize, usize)>,
}

/// The last component of `path` as text (a part's or a sweep's name); empty for none.
pub fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `<sweep_dir>/trajectories`: where the parts live.
pub fn trajectories_dir(sweep_dir: &Path) -> PathBuf {
    sweep_dir.join("trajectories")
}

/// The file name of a part whose smallest job key is `key`.
pub fn part_name(first_key: &str) -> String {
    format!("part-{first_key}.parquet")
}

/// The Parquet files under `trajectories/`, sorted by name; temp files are ignored and a
/// missing directory means none.
pub fn part_files(sweep_dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = trajectories_dir(sweep_dir);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("listing", &dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io("listing", &dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_temp_name(name)
            && name.ends_with(".parquet")
            && entry.file_type().map_err(io("listing", &dir))?.is_file()
        {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// The sweeps of a results directory that hold trajectory parts: each directory named as a
/// sweep may be, with its number of parts, sorted by name. A missing directory holds none.
pub fn sweeps_with_parts(results_dir: &Path) -> Result<Vec<(String, usize)>> {
    let entries = match fs::read_dir(results_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("listing", results_dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io("listing", results_dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if crate::sweep::check_name(&name).is_err() || !entry.path().is_dir() {
            continue;
        }
        let parts = part_files(&entry.path())?.len();
        if parts > 0 {
            found.push((name, parts));
        }
    }
    found.sort();
    Ok(found)
}

/// Every committed job of a sweep (whose key is in `only`, when given), sorted by key,
/// from the parts' footers. A key found in two files is an error: it cannot happen with
/// one writer per results directory, and summaries would count it twice. So is a damaged
/// part: see [`readable_jobs`] for the jobs of the parts that can be read.
pub fn stored_jobs(sweep_dir: &Path, only: Option<&BTreeSet<String>>) -> Result<Vec<StoredRows>> {
    let Readable { jobs, mut damaged } = readable_jobs(sweep_dir, only)?;
    match damaged.is_empty() {
        true => Ok(jobs),
        false => Err(damaged.swap_remove(0)),
    }
}

/// The jobs of a sweep's readable parts, and why each other part cannot be read.
pub struct Readable {
    /// Sorted by key.
    pub jobs: Vec<StoredRows>,
    /// One [`ResultsError::Damaged`] per part whose footer or index cannot be read.
    pub damaged: Vec<ResultsError>,
}

/// [`stored_jobs`] of the parts that can be read: one damaged part stops nothing but its
/// own jobs (a resubmission, a summary of the rest, the live summaries), and is reported.
pub fn readable_jobs(sweep_dir: &Path, only: Option<&BTreeSet<String>>) -> Result<Readable> {
    let (mut jobs, mut damaged) = (Vec::new(), Vec::new());
    for path in part_files(sweep_dir)? {
        let mut found = match read_index(&path) {
            Ok(found) => found,
            Err(e @ ResultsError::Damaged { .. }) => {
                damaged.push(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(keys) = only {
            found.retain(|j| keys.contains(&j.key));
        }
        jobs.extend(found);
    }
    jobs.sort_by(|a, b| a.key.cmp(&b.key));
    if let Some(w) = jobs.windows(2).find(|w| w[0].key == w[1].key) {
        let why = format!("job {} is stored twice, in {} and {}", w[0].key, w[0].part.display(), w[1].part.display());
        return Err(not_armadas(&w[1].part, why));
    }
    Ok(Readable { jobs, damaged })
}

/// The keys of every committed job of a sweep's readable parts, and the damaged parts.
pub fn stored_keys(sweep_dir: &Path) -> Result<(BTreeSet<String>, Vec<ResultsError>)> {
    let Readable { jobs, damaged } = readable_jobs(sweep_dir, None)?;
    Ok((jobs.into_iter().map(|j| j.key).collect(), damaged))
}

/// The jobs in one part file, from its footer.
pub fn read_index(path: &Path) -> Result<Vec<StoredRows>> {
    let file = File::open(path).map_err(io("opening", path))?;
    let mut reader = ParquetReader::new(file);
    let metadata = reader.get_metadata().map_err(damaged("reading the footer of", path))?;
    let index = metadata
        .key_value_metadata()
        .as_ref()
        .and_then(|kv| kv.iter().find(|e| e.key == INDEX_KEY))
        .and_then(|e| e.value.clone());
    let n_rows = metadata.num_rows;
    let part = Arc::new(path.to_path_buf());
    let Some(index) = index else { return legacy_index(path, part, n_rows) };
    let index: PartIndex = serde_json::from_str(&index).map_err(damaged("reading the job index of", path))?;
    if let Some((key, _, offset, rows)) = index.jobs.iter().find(|(_, _, offset, rows)| offset + rows > n_rows) {
        let why =
            format!("{}: job {key} (rows {offset}..{}) lies past the end of the file", path.display(), offset + rows);
        return Err(not_armadas(path, why));
    }
    index.locations(path)
}

/// Who produced each job of one part, from its footer (empty for a part written in
/// process, or by an armada older than provenance).
pub fn read_provenance(path: &Path) -> Result<BTreeMap<String, Provenance>> {
    let file = File::open(path).map_err(io("opening", path))?;
    let metadata = ParquetReader::new(file).get_metadata().map_err(damaged("reading the footer of", path))?.clone();
    let entry = metadata
        .key_value_metadata()
        .as_ref()
        .and_then(|kv| kv.iter().find(|e| e.key == PROVENANCE_KEY))
        .and_then(|e| e.value.clone());
    match entry {
        None => Ok(BTreeMap::new()),
        Some(json) => serde_json::from_str(&json).map_err(damaged("reading the provenance of", path)),
    }
}

/// A file of one job without an index (older armada): its key is the file stem and its
/// cell is in its first row. Every row must be that job's: a part that lost its index
/// (rewritten by another tool) is refused, never read as one job.
fn legacy_index(path: &Path, part: Arc<PathBuf>, n_rows: usize) -> Result<Vec<StoredRows>> {
    let key = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
    if !(key.len() == 32 && key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))) {
        let why = format!(
            "{}: its footer has no job index ({INDEX_KEY:?}), so armada cannot tell whose rows are whose \
             (a part rewritten by another tool loses it); put back the part armada wrote, or move this \
             file out of trajectories/ to summarize the other jobs",
            path.display()
        );
        return Err(not_armadas(path, why));
    }
    if n_rows == 0 {
        return Ok(Vec::new());
    }
    let file = File::open(path).map_err(io("opening", path))?;
    let columns = [JOB_KEY, FAMILY, BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS, HORIZON];
    let df = ParquetReader::new(file)
        .with_columns(Some(columns.iter().map(|c| c.to_string()).collect()))
        .finish()
        .map_err(damaged("reading", path))?;
    let keys = df.column(JOB_KEY).and_then(|c| c.str().cloned()).map_err(damaged("reading", path))?;
    if let Some(other) = keys.iter().find(|k| *k != Some(key.as_str())) {
        let why = format!(
            "{}: a file of one job without a job index, but it holds rows of job {} besides its own; \
             armada does not read it (move it out of trajectories/ to summarize the other jobs)",
            path.display(),
            other.unwrap_or("null")
        );
        return Err(not_armadas(path, why));
    }
    let cell = frame_cell(&df).map_err(damaged("reading", path))?;
    Ok(vec![StoredRows { key, cell: Arc::new(cell), part, offset: 0, rows: n_rows }])
}

/// The spec of every job in the part at `path`, read back from its rows (the first of
/// each job's), by key, in the index's order: what `armada check --repair` rebuilds a lost
/// store from. The caller checks each spec's key against the key its rows carry.
pub fn read_specs(path: &Path) -> Result<Vec<(String, JobSpec)>> {
    let index = read_index(path)?;
    if index.is_empty() {
        return Ok(Vec::new());
    }
    let file = File::open(path).map_err(io("opening", path))?;
    let columns =
        [JOB_KEY, FAMILY, BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS, SEED, SWEEP_SEED, HORIZON];
    let df = ParquetReader::new(file)
        .with_columns(Some(columns.iter().map(|c| c.to_string()).collect()))
        .finish()
        .map_err(damaged("reading", path))?;
    let spec_at = |row: usize| -> Result<(String, JobSpec)> {
        let text = |name: &str| -> Result<String> {
            let value = df.column(name)?.str()?.get(row);
            Ok(value.ok_or_else(|| invalid(format!("row {row}: column {name:?} is null")))?.to_owned())
        };
        let int = |name: &str| -> Result<i64> {
            df.column(name)?.i64()?.get(row).ok_or_else(|| invalid(format!("row {row}: column {name:?} is null")))
        };
        let params = |name: &str| -> Result<armada_core::Params> {
            text(name)?.parse().map_err(|e| invalid(format!("row {row}: column {name:?}: {e}")))
        };
        let spec = JobSpec {
            family: text(FAMILY)?,
            benchmark: text(BENCHMARK)?,
            benchmark_params: params(BENCHMARK_PARAMS)?,
            algorithm: text(ALGORITHM)?,
            algorithm_params: params(ALGORITHM_PARAMS)?,
            seed: u64::try_from(int(SEED)?).map_err(|_| invalid(format!("row {row}: a negative seed")))?,
            horizon: u32::try_from(int(HORIZON)?).map_err(|_| invalid(format!("row {row}: a horizon out of range")))?,
            // Stored as the Int64 of its bits.
            sweep_seed: int(SWEEP_SEED)? as u64,
        };
        Ok((text(JOB_KEY)?, spec))
    };
    index
        .iter()
        .map(|job| {
            let (key, spec) = spec_at(job.offset)?;
            if key != job.key {
                let why = format!("{}: row {} holds job {key}, its index says {}", path.display(), job.offset, job.key);
                return Err(not_armadas(path, why));
            }
            Ok((key, spec))
        })
        .collect::<Result<_>>()
        .within(|| format!("reading the job specs of {}", path.display()))
}

/// The cell of a non-empty trajectory frame, from its first row.
fn frame_cell(df: &DataFrame) -> Result<Cell> {
    let text = |name: &str| -> Result<String> {
        let value = df.column(name)?.str()?.get(0);
        Ok(value.ok_or_else(|| invalid(format!("column {name:?} is null")))?.to_owned())
    };
    let cell = Cell {
        family: text(FAMILY)?,
        benchmark: text(BENCHMARK)?,
        benchmark_params: text(BENCHMARK_PARAMS)?,
        algorithm: text(ALGORITHM)?,
        algorithm_params: text(ALGORITHM_PARAMS)?,
        horizon: df.column(HORIZON)?.i64()?.get(0).ok_or_else(|| invalid("column \"horizon\" is null"))?,
    };
    Ok(cell.with_json_params())
}

/// The rows of `jobs`, one frame per job, in the order given. Each part is read once,
/// from its first to its last wanted row.
pub fn read_jobs(jobs: &[&StoredRows]) -> Result<Vec<DataFrame>> {
    read_ranges(&jobs.iter().map(|&j| (j, 0..j.rows)).collect::<Vec<_>>())
}

/// Rows of jobs: for each `(job, rows)`, that range of the job's rows (row `i` of a job is
/// its step `i`), one frame each in the order given. Ranges of a part that are close
/// (within a row group of each other) are read together; farther ones apart, so that a
/// window of many long jobs reads only the window.
pub fn read_ranges(ranges: &[(&StoredRows, Range<usize>)]) -> Result<Vec<DataFrame>> {
    let mut frames = Vec::with_capacity(ranges.len());
    for_each_range(ranges, |_, df| {
        frames.push(df);
        Ok(())
    })?;
    Ok(frames)
}

/// [`read_ranges`], each range's frame handed to `f` with its index as soon as it is cut:
/// a frame per job costs a few kilobytes, so a batch of short jobs keeps only the spans it
/// read, not a frame for each of its jobs at once.
pub fn for_each_range(
    ranges: &[(&StoredRows, Range<usize>)],
    mut f: impl FnMut(usize, DataFrame) -> Result<()>,
) -> Result<()> {
    for_each_run(ranges, |run, df| {
        let mut at = 0;
        for i in run {
            let n = ranges[i].1.len();
            f(i, df.slice(at as i64, n))?;
            at += n;
        }
        Ok(())
    })
}

/// [`for_each_range`] by runs: `f` gets the indices of consecutive ranges whose rows follow
/// one another in one part (a cell's jobs do, sorted by key), and their rows as one frame.
/// A million one-step jobs are then a few frames, not a million.
pub fn for_each_run(
    ranges: &[(&StoredRows, Range<usize>)],
    mut f: impl FnMut(Range<usize>, DataFrame) -> Result<()>,
) -> Result<()> {
    // Each range's part as an index into `parts`; consecutive ranges mostly share one, so
    // a path is compared (and hashed) only where the part changes.
    let mut parts: Vec<&Path> = Vec::new();
    let mut part_of: Vec<usize> = Vec::with_capacity(ranges.len());
    let mut slots: HashMap<&Path, usize> = HashMap::new();
    for (i, (job, rows)) in ranges.iter().enumerate() {
        if rows.end > job.rows || rows.start > rows.end {
            return Err(invalid(format!("rows {rows:?} of job {} which has {}", job.key, job.rows)));
        }
        let same = i > 0 && Arc::ptr_eq(&ranges[i - 1].0.part, &job.part);
        let slot = if same {
            part_of[i - 1]
        } else {
            *slots.entry(job.part.as_path()).or_insert_with(|| {
                parts.push(job.part.as_path());
                parts.len() - 1
            })
        };
        part_of.push(slot);
    }
    // Per part, the spans to read: (start, end) in the part's rows, sorted; ranges close to
    // each other (within a row group) are read together.
    let mut wanted: Vec<Vec<(usize, usize)>> = vec![Vec::new(); parts.len()];
    for ((job, rows), &slot) in ranges.iter().zip(&part_of) {
        wanted[slot].push((job.offset + rows.start, job.offset + rows.end));
    }
    let mut spans: Vec<Vec<(usize, DataFrame)>> = Vec::with_capacity(parts.len());
    for (&path, mut ranges) in parts.iter().zip(wanted) {
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 + PART_ROW_GROUP_ROWS => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let file = File::open(path).map_err(io("opening", path))?;
        let mut reader = ParquetReader::new(file);
        let metadata = reader.get_metadata().map_err(damaged("reading the footer of", path))?.clone();
        let mut frames = Vec::with_capacity(merged.len());
        for (start, end) in merged {
            let file = File::open(path).map_err(io("opening", path))?;
            let mut reader = ParquetReader::new(file).with_slice(Some((start, end - start)));
            reader.set_metadata(metadata.clone());
            let df = reader.finish().map_err(damaged("reading", path))?;
            if df.height() != end - start {
                let why = format!("{}: expected {} rows, read {}", path.display(), end - start, df.height());
                return Err(not_armadas(path, why));
            }
            frames.push((start, df));
        }
        spans.push(frames);
    }
    // A run of ranges being gathered: where it starts in `ranges`, its part and span,
    // its first row in the part, and its rows so far.
    struct Run {
        first: usize,
        slot: usize,
        span: usize,
        start: usize,
        rows: usize,
    }
    let cut = |run: &Run| {
        let (span_start, df) = &spans[run.slot][run.span];
        df.slice((run.start - span_start) as i64, run.rows)
    };
    let mut run: Option<Run> = None;
    for (i, (job, rows)) in ranges.iter().enumerate() {
        let (slot, start) = (part_of[i], job.offset + rows.start);
        if let Some(r) = &mut run {
            let (span_start, df) = &spans[r.slot][r.span];
            if r.slot == slot && start == r.start + r.rows && start + rows.len() <= span_start + df.height() {
                r.rows += rows.len();
                continue;
            }
        }
        if let Some(done) = run.take() {
            f(done.first..i, cut(&done))?;
        }
        // The span holding this range: the last one starting at or before it.
        let span = spans[slot].partition_point(|(span_start, _)| *span_start <= start) - 1;
        run = Some(Run { first: i, slot, span, start, rows: rows.len() });
    }
    if let Some(done) = run {
        f(done.first..ranges.len(), cut(&done))?;
    }
    Ok(())
}

/// Rows read at once by [`for_each_job`].
pub const READ_BATCH_ROWS: usize = 1 << 20;

/// Hand each of `jobs` to `f`, in the order given, as `(job, rows, first)`: its rows from
/// row `first` on, all of them for a job of at most [`READ_BATCH_ROWS`] rows, else in
/// pieces of that many, in order (the last piece ends at `job.rows`). Short jobs are read
/// together, about [`READ_BATCH_ROWS`] rows at a time, so that memory holds a batch, never
/// a cell or a long job.
pub fn for_each_job(jobs: &[&StoredRows], f: impl FnMut(&StoredRows, DataFrame, usize) -> Result<()>) -> Result<()> {
    for_each_piece(jobs, READ_BATCH_ROWS, f)
}

/// [`for_each_job`] by runs: `f` gets consecutive jobs (their indices in `jobs`) whose rows
/// follow one another in a part, their rows as one frame, and the row of the first job the
/// frame starts at (0 but for the pieces of a job longer than [`READ_BATCH_ROWS`], which
/// come alone). Jobs sorted by part and offset come in the fewest runs.
pub fn for_each_job_run(
    jobs: &[&StoredRows],
    f: impl FnMut(Range<usize>, DataFrame, usize) -> Result<()>,
) -> Result<()> {
    for_each_piece_run(jobs, READ_BATCH_ROWS, f)
}

fn for_each_piece(
    jobs: &[&StoredRows],
    batch_rows: usize,
    mut f: impl FnMut(&StoredRows, DataFrame, usize) -> Result<()>,
) -> Result<()> {
    for_each_piece_run(jobs, batch_rows, |run, df, first| {
        if run.len() == 1 {
            return f(jobs[run.start], df, first);
        }
        let mut at = 0;
        for job in &jobs[run] {
            f(job, df.slice(at as i64, job.rows), 0)?;
            at += job.rows;
        }
        Ok(())
    })
}

fn for_each_piece_run(
    jobs: &[&StoredRows],
    batch_rows: usize,
    mut f: impl FnMut(Range<usize>, DataFrame, usize) -> Result<()>,
) -> Result<()> {
    let mut start = 0;
    while start < jobs.len() {
        if jobs[start].rows > batch_rows {
            let job = jobs[start];
            for first in (0..job.rows).step_by(batch_rows) {
                let rows = first..(first + batch_rows).min(job.rows);
                let piece = read_ranges(&[(job, rows)])?.remove(0);
                f(start..start + 1, piece, first)?;
            }
            start += 1;
            continue;
        }
        let mut end = start + 1;
        let mut rows = jobs[start].rows;
        while end < jobs.len() && rows + jobs[end].rows <= batch_rows {
            rows += jobs[end].rows;
            end += 1;
        }
        let batch: Vec<_> = jobs[start..end].iter().map(|&j| (j, 0..j.rows)).collect();
        for_each_run(&batch, |run, df| f(start + run.start..start + run.end, df, 0))?;
        start = end;
    }
    Ok(())
}

/// The rows of `job` at the given row indices (sorted), read a piece at a time: a thinned
/// view of a trajectory of any length.
pub fn read_rows_at(job: &StoredRows, rows: &[usize]) -> Result<DataFrame> {
    read_rows_at_in(job, rows, READ_BATCH_ROWS)
}

fn read_rows_at_in(job: &StoredRows, rows: &[usize], batch_rows: usize) -> Result<DataFrame> {
    let mut picked: Vec<DataFrame> = Vec::new();
    let mut next = 0;
    for_each_piece(&[job], batch_rows, |_, piece, first| {
        let end = first + piece.height();
        let mut indices = Vec::new();
        while next < rows.len() && rows[next] < end {
            indices.push((rows[next] - first) as IdxSize);
            next += 1;
        }
        picked.push(piece.take(&IdxCa::from_vec("rows".into(), indices))?);
        Ok(())
    })?;
    super::concat(picked.iter())
}

/// Write the rows of `jobs` into `out` as one Parquet file, with a part index in its
/// footer (so a client that saves it beside others has a readable sweep), a piece at a
/// time. Jobs are sorted by (cell, key), as in a part.
pub fn encode_jobs(jobs: &[&StoredRows], out: impl Write) -> Result<()> {
    let mut jobs = jobs.to_vec();
    jobs.sort_by(|a, b| (&a.cell, &a.key).cmp(&(&b.cell, &b.key)));
    if jobs.is_empty() {
        return Err(invalid("no jobs to encode"));
    }
    let index = PartIndex::of(jobs.iter().map(|j| (j.key.clone(), &*j.cell, j.rows)));
    let metadata = KeyValueMetadata::from_static(vec![(INDEX_KEY.to_owned(), index.to_json())]);
    let mut table = TableWriter::new(out).with_metadata(metadata);
    for_each_job(&jobs, |_, rows, _| table.push(&rows))?;
    table.finish()
}

/// One job's trajectory, ready to be written into a part.
pub struct PartJob<'a> {
    /// Its key (32 hex digits).
    pub key: String,
    /// Its cell: the part's jobs of one cell share it, so they are grouped without
    /// comparing their texts.
    pub cell: Arc<Cell>,
    pub seed: u64,
    pub sweep_seed: u64,
    /// Who produced it (none when run in process): the worker's record, shared by the
    /// jobs it committed (its own `attempt_id` is not used), and the attempt of this one.
    pub provenance: Option<(Arc<Provenance>, u64)>,
    pub n_records: usize,
    /// Yields exactly `n_records` records, in step order.
    pub records: Box<dyn Iterator<Item = Result<StepRecord>> + Send + 'a>,
}

impl<'a> PartJob<'a> {
    /// `job`'s trajectory from `records`, with no provenance.
    pub fn of(
        job: &ValidJob,
        n_records: usize,
        records: impl Iterator<Item = Result<StepRecord>> + Send + 'a,
    ) -> PartJob<'a> {
        PartJob {
            key: job.key.0.clone(),
            cell: Arc::new(Cell::of(job)),
            seed: job.spec.seed,
            sweep_seed: job.spec.sweep_seed,
            provenance: None,
            n_records,
            records: Box::new(records),
        }
    }
}

/// A part just written: its path, and where each of its jobs is in it.
#[derive(Clone, Debug)]
pub struct WrittenPart {
    pub path: PathBuf,
    pub jobs: Vec<StoredRows>,
}

/// Write `jobs` (of one sweep, hence one family with `metrics`) as one part, atomically.
/// Rows are built and written one row group at a time, so memory is bounded by
/// [`PART_ROW_GROUP_ROWS`] whatever the trajectories' lengths.
pub fn write_part(sweep_dir: &Path, metrics: &[MetricDef], jobs: Vec<PartJob<'_>>) -> Result<WrittenPart> {
    if jobs.is_empty() {
        return Err(invalid("a part needs at least one job"));
    }
    check_metric_names(metrics)?;
    // In order of cell, then key. A part's jobs of one cell share its `Arc`: comparing two
    // of them skips the cell's text.
    let mut jobs = jobs;
    jobs.sort_by(|a, b| {
        let cells = if Arc::ptr_eq(&a.cell, &b.cell) { Ordering::Equal } else { a.cell.cmp(&b.cell) };
        cells.then_with(|| a.key.cmp(&b.key))
    });
    let first_key = jobs.iter().map(|j| j.key.as_str()).min().expect("not empty").to_owned();
    let index = PartIndex::of(jobs.iter().map(|j| (j.key.clone(), &*j.cell, j.n_records)));
    let dir = trajectories_dir(sweep_dir);
    if !dir.is_dir() {
        let new_sweep_dir = !sweep_dir.is_dir();
        fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
        // Make the new directories' own entries durable, not just the files in them: the
        // store marks jobs done only once the part is, and a crash must not lose the
        // sweep's directory (or its trajectories directory) under it.
        let sync = |d: &Path| File::open(d).and_then(|d| d.sync_all()).map_err(io("syncing", d));
        sync(sweep_dir)?;
        if new_sweep_dir {
            if let Some(parent) = sweep_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync(parent)?;
            }
        }
    }
    let path = dir.join(part_name(&first_key));
    write_atomic(&path, |out| {
        let schema = RowGroup::new(metrics).frame()?.schema().clone();
        let mut entries =
            vec![(INDEX_KEY.to_owned(), index.to_json()), (METRICS_KEY.to_owned(), metrics_json(metrics))];
        if let Some(provenance) = provenance_json(&jobs) {
            entries.push((PROVENANCE_KEY.to_owned(), provenance));
        }
        let metadata = KeyValueMetadata::from_static(entries);
        let mut writer = parquet_writer(out).with_key_value_metadata(Some(metadata)).batched(&schema)?;
        let mut group = RowGroup::new(metrics);
        for job in jobs.iter_mut() {
            let columns = JobColumns::of(job).within(|| format!("building job {}", job.key))?;
            group.start_job(&columns);
            let mut n_read = 0;
            while let Some(record) =
                job.records.next().transpose().within(|| format!("reading the records of job {}", job.key))?
            {
                n_read += 1;
                group.push(&record).within(|| format!("building job {}", job.key))?;
                if group.rows() == PART_ROW_GROUP_ROWS {
                    group.write(&mut writer)?;
                    group.start_job(&columns);
                }
            }
            if n_read != job.n_records {
                let (key, n) = (&job.key, job.n_records);
                return Err(invalid(format!("job {key}: {n_read} records where {n} were announced")));
            }
        }
        group.write(&mut writer)?;
        writer.finish()?;
        Ok(())
    })?;
    let jobs = index.locations(&path)?;
    Ok(WrittenPart { path, jobs })
}

/// [`PROVENANCE_KEY`]'s value for `jobs` (None when none has provenance): the bytes
/// serde_json gives for the map from job key to record, but each worker's record is
/// serialized once per part around its attempt id, not once per job (a part of short jobs
/// holds thousands of jobs from a few workers).
fn provenance_json(jobs: &[PartJob<'_>]) -> Option<String> {
    let mut records: Vec<(&str, &Arc<Provenance>, u64)> =
        jobs.iter().filter_map(|j| j.provenance.as_ref().map(|(p, attempt)| (j.key.as_str(), p, *attempt))).collect();
    if records.is_empty() {
        return None;
    }
    records.sort_unstable_by_key(|(key, ..)| *key);
    // Per worker record, its JSON before and after the attempt id.
    let mut halves: HashMap<*const Provenance, (String, String)> = HashMap::new();
    let mut out = String::with_capacity(64 * records.len());
    out.push('{');
    for (i, (key, record, attempt)) in records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if key.bytes().all(|b| b.is_ascii_alphanumeric()) {
            out.extend(['"'].into_iter().chain(key.chars()).chain(['"']));
        } else {
            out.push_str(&serde_json::to_string(key).expect("a key serializes"));
        }
        out.push(':');
        let (before, after) = halves.entry(Arc::as_ptr(record)).or_insert_with(|| {
            let json = serde_json::to_string(&Provenance { attempt_id: 0, ..Provenance::clone(record) })
                .expect("provenance serializes");
            // A field name: never inside a string value, whose quotes are escaped.
            const ID: &str = ",\"attempt_id\":0";
            let at = json.find(ID).expect("the record has an attempt id") + ID.len() - 1;
            (json[..at].to_string(), json[at + 1..].to_string())
        });
        out.push_str(before);
        out.push_str(&attempt.to_string());
        out.push_str(after);
    }
    out.push('}');
    Some(out)
}

/// Write one job as a part of its own.
pub fn write_shard(sweep_dir: &Path, job: &ValidJob, metrics: &[MetricDef], records: &[StepRecord]) -> Result<PathBuf> {
    let part = PartJob::of(job, records.len(), records.iter().cloned().map(Ok));
    Ok(write_part(sweep_dir, metrics, vec![part])?.path)
}

/// The rows of the row group being built, column by column: each record appends to plain
/// vectors and the frame is made once per row group (a frame per job, stacked, cost more
/// than short jobs themselves).
struct RowGroup<'m> {
    metrics: &'m [MetricDef],
    /// The jobs whose rows the group holds, each with its count of rows, in order.
    jobs: Vec<(JobColumns, usize)>,
    steps: Vec<i64>,
    elapsed_ms: Vec<f64>,
    floats: Vec<Vec<f64>>,
    ints: Vec<Vec<Option<i64>>>,
}

/// A job's identifying columns, which repeat one value over its rows.
#[derive(Clone)]
struct JobColumns {
    key: String,
    cell: Arc<Cell>,
    ints: [i64; 3],
}

impl JobColumns {
    const TEXT: [&'static str; 6] = [JOB_KEY, FAMILY, BENCHMARK, BENCHMARK_PARAMS, ALGORITHM, ALGORITHM_PARAMS];
    const INTS: [&'static str; 3] = [SEED, SWEEP_SEED, HORIZON];

    fn of(job: &PartJob<'_>) -> Result<JobColumns> {
        let seed = i64::try_from(job.seed).map_err(|_| invalid("seed index does not fit in Int64"))?;
        // Bit-for-bit: Parquet readers have no trouble with Int64, many with UInt64.
        Ok(JobColumns {
            key: job.key.clone(),
            cell: job.cell.clone(),
            ints: [seed, job.sweep_seed as i64, job.cell.horizon],
        })
    }

    /// The value of the text column `TEXT[c]`.
    fn text(&self, c: usize) -> &str {
        let cell = &*self.cell;
        [&self.key, &cell.family, &cell.benchmark, &cell.benchmark_params, &cell.algorithm, &cell.algorithm_params][c]
    }
}

impl<'m> RowGroup<'m> {
    fn new(metrics: &'m [MetricDef]) -> Self {
        let n_of = |kind| metrics.iter().filter(|m| m.kind == kind).count();
        RowGroup {
            metrics,
            jobs: Vec::new(),
            steps: Vec::new(),
            elapsed_ms: Vec::new(),
            floats: vec![Vec::new(); n_of(MetricKind::Float)],
            ints: vec![Vec::new(); n_of(MetricKind::Int)],
        }
    }

    fn rows(&self) -> usize {
        self.steps.len()
    }

    /// The rows pushed next are those of the job of `columns`.
    fn start_job(&mut self, columns: &JobColumns) {
        self.jobs.push((columns.clone(), 0));
    }

    fn push(&mut self, r: &StepRecord) -> Result<()> {
        if r.values.len() != self.metrics.len() {
            let (step, n) = (r.step, r.values.len());
            return Err(invalid(format!("step {step} has {n} values for {} metrics", self.metrics.len())));
        }
        let (mut f, mut i) = (0, 0);
        for (m, &v) in self.metrics.iter().zip(&r.values) {
            match m.kind {
                MetricKind::Float => {
                    self.floats[f].push(v);
                    f += 1;
                }
                MetricKind::Int => {
                    let value = int_value(v).within(|| format!("metric {} at step {}", m.name, r.step));
                    self.ints[i].push(value?);
                    i += 1;
                }
            }
        }
        self.steps.push(i64::from(r.step));
        self.elapsed_ms.push(r.elapsed_ms);
        self.jobs.last_mut().expect("a job was started").1 += 1;
        Ok(())
    }

    /// The rows as a frame in the trajectory schema (see the module docs of
    /// [`crate::results`]), emptying the group.
    fn frame(&mut self) -> Result<DataFrame> {
        let n = self.rows();
        let jobs = std::mem::take(&mut self.jobs);
        let mut columns = Vec::with_capacity(JobColumns::TEXT.len() + JobColumns::INTS.len() + 2 + self.metrics.len());
        for (c, name) in JobColumns::TEXT.iter().enumerate() {
            let values: Vec<&str> =
                jobs.iter().flat_map(|(job, rows)| std::iter::repeat_n(job.text(c), *rows)).collect();
            columns.push(Column::new((*name).into(), values));
        }
        for (c, name) in JobColumns::INTS.iter().enumerate() {
            let values: Vec<i64> =
                jobs.iter().flat_map(|(job, rows)| std::iter::repeat_n(job.ints[c], *rows)).collect();
            columns.push(Column::new((*name).into(), values));
        }
        columns.push(Column::new(STEP.into(), std::mem::take(&mut self.steps)));
        columns.push(Column::new(ELAPSED_MS.into(), std::mem::take(&mut self.elapsed_ms)));
        let (mut floats, mut ints) = (self.floats.iter_mut(), self.ints.iter_mut());
        for m in self.metrics {
            columns.push(match m.kind {
                MetricKind::Float => Column::new(m.name.into(), std::mem::take(floats.next().expect("a float column"))),
                MetricKind::Int => Column::new(m.name.into(), std::mem::take(ints.next().expect("an int column"))),
            });
        }
        Ok(DataFrame::new(n, columns)?)
    }

    /// Write what was built as one row group (nothing if empty).
    fn write<W: Write>(&mut self, writer: &mut polars::io::parquet::write::BatchedWriter<W>) -> Result<()> {
        if self.rows() > 0 {
            writer.write_batch(&self.frame()?)?;
        }
        self.jobs.clear();
        Ok(())
    }
}

/// One job's rows in the trajectory schema, as one frame.
#[cfg(test)]
fn trajectory_frame(job: &ValidJob, metrics: &[MetricDef], records: &[StepRecord]) -> Result<DataFrame> {
    let mut group = RowGroup::new(metrics);
    group.start_job(&JobColumns::of(&PartJob::of(job, 0, std::iter::empty()))?);
    for r in records {
        group.push(r)?;
    }
    group.frame()
}

impl PartIndex {
    /// The index of (key, cell, rows) laid out in this order, sorted by cell.
    fn of<'c>(jobs: impl Iterator<Item = (String, &'c Cell, usize)>) -> PartIndex {
        let mut index = PartIndex { cells: Vec::new(), jobs: Vec::new() };
        let mut offset = 0;
        for (key, cell, rows) in jobs {
            // Sorted by cell: a job's cell is the last one seen or a new one.
            if index.cells.last() != Some(cell) {
                index.cells.push(cell.clone());
            }
            index.jobs.push((key, index.cells.len() - 1, offset, rows));
            offset += rows;
        }
        index
    }

    /// Where each job of the part at `path` is.
    fn locations(&self, path: &Path) -> Result<Vec<StoredRows>> {
        let part = Arc::new(path.to_path_buf());
        let cells: Vec<Arc<Cell>> = self.cells.iter().cloned().map(|c| Arc::new(c.with_json_params())).collect();
        let mut jobs = Vec::with_capacity(self.jobs.len());
        for (key, cell, offset, rows) in &self.jobs {
            let Some(cell) = cells.get(*cell).cloned() else {
                return Err(not_armadas(path, format!("{}: bad cell index", path.display())));
            };
            jobs.push(StoredRows { key: key.clone(), cell, part: part.clone(), offset: *offset, rows: *rows });
        }
        Ok(jobs)
    }

    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an index serializes")
    }
}

fn check_metric_names(metrics: &[MetricDef]) -> Result<()> {
    for (i, m) in metrics.iter().enumerate() {
        if SHARD_FIXED_COLUMNS.contains(&m.name) {
            return Err(invalid(format!("metric name {:?} clashes with a shard column", m.name)));
        }
        if metrics[..i].iter().any(|other| other.name == m.name) {
            return Err(invalid(format!("metric name {:?} appears twice", m.name)));
        }
    }
    Ok(())
}

/// An Int metric value: NaN is missing, anything else must be an exact integer.
pub fn int_value(v: f64) -> Result<Option<i64>> {
    if v.is_nan() {
        return Ok(None);
    }
    // 2^63 is exactly representable; every f64 below it in magnitude that has no
    // fractional part converts exactly.
    if v.fract() != 0.0 || v.abs() >= 9_223_372_036_854_775_808.0 {
        return Err(invalid(format!("integer metric has non-integer value {v}")));
    }
    Ok(Some(v as i64))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn records(n: u32, offset: f64) -> Vec<StepRecord> {
        (0..n)
            .map(|step| StepRecord {
                step,
                elapsed_ms: 0.125,
                values: vec![offset + 1.0 / f64::from(step + 1), f64::from(step % 7)],
            })
            .collect()
    }

    fn part_job(job: &ValidJob, records: &[StepRecord]) -> PartJob<'static> {
        let owned = records.to_vec();
        PartJob::of(job, owned.len(), owned.into_iter().map(Ok))
    }

    /// A part's provenance is the bytes serde_json gives for the key -> record map, each
    /// worker's record written once around its attempt ids: workers with the same session
    /// and other fields, names that look like JSON, jobs without provenance left out.
    #[test]
    fn provenance_is_serde_jsons_map_with_each_workers_record_written_once() {
        let record = |worker: &str, name: &str, attempt_id: u64, code: &str| Provenance {
            worker: worker.into(),
            name: name.into(),
            host: "h\"ost\\,\"attempt_id\":0".into(),
            software: "armada 0.1 (abc)".into(),
            processor: "x86-64-v3".into(),
            attempt_id,
            family_digest: String::new(),
            code: code.into(),
            token: "lab".into(),
            peer: "127.0.0.1:5".into(),
            registered_ms: 1_700_000_000_000,
        };
        // Workers' records as the coordinator shares them (one per worker and family),
        // and one record twice, unshared.
        let shared = [
            record("w1", "a", 0, ""),
            record("w1", "a", 0, "c0de"),
            record("w2", "b\u{e9}\n", 0, ""),
            record("w3", "c", 0, ""),
        ]
        .map(Arc::new);
        let jobs: Vec<PartJob<'static>> = (0..40u64)
            .map(|seed| {
                let mut part = part_job(&job("lse", "sinusoidal", "straddle", seed), &records(1, 0.0));
                part.provenance = match seed % 5 {
                    0 => None,
                    1 => Some((shared[0].clone(), 1000 + seed)),
                    2 => Some((shared[1].clone(), 2000 + seed)),
                    3 => Some((shared[2].clone(), u64::MAX - seed)),
                    _ if seed % 2 == 0 => Some((Arc::new(record("w3", "c", 7, "")), 0)),
                    _ => Some((shared[3].clone(), 0)),
                };
                part
            })
            .collect();
        let records: Vec<(&str, Provenance)> = jobs
            .iter()
            .filter_map(|j| {
                let (record, attempt_id) = j.provenance.as_ref()?;
                Some((j.key.as_str(), Provenance { attempt_id: *attempt_id, ..Provenance::clone(record) }))
            })
            .collect();
        let map: BTreeMap<&str, &Provenance> = records.iter().map(|(key, p)| (*key, p)).collect();
        assert_eq!(map.len(), 32);
        assert_eq!(provenance_json(&jobs).unwrap(), serde_json::to_string(&map).unwrap());
        assert_eq!(provenance_json(&jobs[..1]), None, "seed 0 has none");
    }

    #[test]
    fn a_job_round_trips_schema_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let job = job("lse", "sinusoidal", "straddle", 3);
        let records = vec![
            StepRecord { step: 0, elapsed_ms: 1.5, values: vec![0.25, 2.0] },
            StepRecord { step: 1, elapsed_ms: 2.5, values: vec![f64::NAN, -7.0] },
            StepRecord { step: 2, elapsed_ms: 0.0, values: vec![-1e300, f64::NAN] },
        ];
        let path = write_shard(dir.path(), &job, &METRICS, &records).unwrap();
        assert_eq!(path, trajectories_dir(dir.path()).join(format!("part-{}.parquet", job.key)));

        let df = read_parquet(&path).unwrap();
        let schema: Vec<(String, DataType)> =
            df.columns().iter().map(|c| (c.name().to_string(), c.dtype().clone())).collect();
        let expected: Vec<(String, DataType)> = [
            ("job_key", DataType::String),
            ("family", DataType::String),
            ("benchmark", DataType::String),
            ("benchmark_params", DataType::String),
            ("algorithm", DataType::String),
            ("algorithm_params", DataType::String),
            ("seed", DataType::Int64),
            ("sweep_seed", DataType::Int64),
            ("horizon", DataType::Int64),
            ("step", DataType::Int64),
            ("elapsed_ms", DataType::Float64),
            ("regret", DataType::Float64),
            ("chosen", DataType::Int64),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_owned(), t))
        .collect();
        assert_eq!(schema, expected);
        assert_eq!(df.height(), 3);

        let s = |name: &str| strs(&df, name);
        assert_eq!(s("job_key"), vec![job.key.0.clone(); 3]);
        assert_eq!(s("family"), vec!["lse"; 3]);
        assert_eq!(s("benchmark"), vec!["sinusoidal"; 3]);
        assert_eq!(s("benchmark_params"), vec![r#"{"noise_sd":0.1}"#; 3]);
        assert_eq!(s("algorithm"), vec!["straddle"; 3]);
        assert_eq!(s("algorithm_params"), vec![r#"{"beta_sqrt":3.0}"#; 3]);
        assert_eq!(ints(&df, "seed"), vec![Some(3); 3]);
        // u64 stored bit-for-bit.
        assert_eq!(ints(&df, "sweep_seed"), vec![Some(u64::MAX as i64); 3]);
        assert_eq!(ints(&df, "horizon"), vec![Some(2); 3]);
        assert_eq!(ints(&df, "step"), vec![Some(0), Some(1), Some(2)]);
        assert_eq!(floats(&df, "elapsed_ms"), vec![Some(1.5), Some(2.5), Some(0.0)]);
        let regret = floats(&df, "regret");
        assert_eq!(regret[0], Some(0.25));
        assert!(regret[1].unwrap().is_nan(), "NaN is stored as NaN in trajectories");
        assert_eq!(regret[2], Some(-1e300));
        assert_eq!(ints(&df, "chosen"), vec![Some(2), Some(-7), None]);

        let names: Vec<_> = fs::read_dir(trajectories_dir(dir.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![format!("part-{}.parquet", job.key)], "no temp file left behind");
        assert_eq!(stored_keys(dir.path()).unwrap().0, BTreeSet::from([job.key.0.clone()]));
    }

    /// Many jobs of several cells in one part: sorted by (cell, key), indexed in the footer,
    /// each read back alone equal to what was written; a long job spans several row groups.
    #[test]
    fn a_part_indexes_its_jobs_and_each_reads_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let long = PART_ROW_GROUP_ROWS as u32 * 2 + 17;
        let mut written = Vec::new();
        for (algorithm, seed, n) in [("ucb", 0, 3), ("straddle", 1, long), ("straddle", 0, 5), ("ucb", 1, 0)] {
            let job = job("lse", "sinusoidal", algorithm, seed);
            written.push((job, records(n, seed as f64)));
        }
        let parts: Vec<_> = written.iter().map(|(job, r)| part_job(job, r)).collect();
        let path = write_part(dir.path(), &METRICS, parts).unwrap().path;
        let first = written.iter().map(|(j, _)| j.key.0.clone()).min().unwrap();
        assert_eq!(path.file_name().unwrap().to_str().unwrap(), part_name(&first));

        let index = read_index(&path).unwrap();
        // Cell order (straddle before ucb), then key order within a cell; offsets contiguous.
        let cells: Vec<&str> = index.iter().map(|j| j.cell.algorithm.as_str()).collect();
        assert_eq!(cells, ["straddle", "straddle", "ucb", "ucb"]);
        assert!(index[0].key < index[1].key && index[2].key < index[3].key);
        let mut offset = 0;
        for j in &index {
            assert_eq!(j.offset, offset);
            offset += j.rows;
        }
        assert_eq!(offset, read_parquet(&path).unwrap().height());

        let stored = stored_jobs(dir.path(), None).unwrap();
        assert_eq!(stored.len(), 4);
        for (job, records) in &written {
            let found = stored.iter().find(|s| s.key == job.key.0).unwrap();
            assert_eq!(*found.cell, Cell::of(job));
            assert_eq!(found.rows, records.len());
            let df = read_jobs(&[found]).unwrap().remove(0);
            assert_eq!(df.height(), records.len());
            let steps: Vec<Option<i64>> = records.iter().map(|r| Some(i64::from(r.step))).collect();
            assert_eq!(ints(&df, "step"), steps);
            let regret: Vec<Option<f64>> = records.iter().map(|r| Some(r.values[0])).collect();
            assert_eq!(floats(&df, "regret"), regret);
            assert!(strs(&df, "job_key").iter().all(|k| *k == job.key.0));
        }
        // Several jobs of one cell are read with one slice, each still its own.
        let straddle: Vec<&StoredRows> = stored.iter().filter(|s| s.cell.algorithm == "straddle").collect();
        let frames = read_jobs(&straddle).unwrap();
        assert_eq!(frames.iter().map(DataFrame::height).collect::<Vec<_>>(), vec![straddle[0].rows, straddle[1].rows]);
        // Only the requested keys.
        let only = BTreeSet::from([written[0].0.key.0.clone()]);
        assert_eq!(stored_jobs(dir.path(), Some(&only)).unwrap().len(), 1);
    }

    /// A long job comes in pieces (in order, the last ending at its last row), short ones
    /// whole; the pieces are the job's rows, and ranges and picked rows read back the same.
    #[test]
    fn long_jobs_are_read_in_pieces_and_ranges_read_back_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let lengths = [10u32, 3, 25];
        let jobs: Vec<(ValidJob, Vec<StepRecord>)> = lengths
            .iter()
            .enumerate()
            .map(|(seed, &n)| (job("lse", "sinusoidal", "straddle", seed as u64), records(n, seed as f64 * 100.0)))
            .collect();
        write_part(dir.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap();
        let mut stored = stored_jobs(dir.path(), None).unwrap();
        // In the order of `lengths` (a part keeps key order).
        stored.sort_by_key(|j| lengths.iter().position(|&n| n as usize == j.rows));
        let refs: Vec<&StoredRows> = stored.iter().collect();
        let whole = read_jobs(&refs).unwrap();
        let mut calls = Vec::new();
        let mut pieces: Vec<Vec<DataFrame>> = vec![Vec::new(); refs.len()];
        for_each_piece(&refs, 8, |job, df, first| {
            let i = refs.iter().position(|j| j.key == job.key).unwrap();
            calls.push((i, first, df.height()));
            pieces[i].push(df);
            Ok(())
        })
        .unwrap();
        let n = |i: usize| stored[i].rows;
        assert_eq!([n(0), n(1), n(2)], [10, 3, 25]);
        assert_eq!(calls, [(0, 0, 8), (0, 8, 2), (1, 0, 3), (2, 0, 8), (2, 8, 8), (2, 16, 8), (2, 24, 1)]);
        for (i, frames) in pieces.iter().enumerate() {
            assert_eq!(concat(frames.iter()).unwrap(), whole[i], "job {i}");
        }
        // A window of every job, and rows picked across pieces.
        let window: Vec<(&StoredRows, Range<usize>)> = refs.iter().map(|&j| (j, 2..3.min(j.rows))).collect();
        for ((_, rows), (df, full)) in window.iter().zip(read_ranges(&window).unwrap().iter().zip(&whole)) {
            assert_eq!(df, &full.slice(rows.start as i64, rows.len()));
        }
        let picked = read_rows_at_in(&stored[2], &[0, 7, 8, 20, 24], 8).unwrap();
        let steps: Vec<Option<i64>> = picked.column(STEP).unwrap().i64().unwrap().iter().collect();
        assert_eq!(steps, [0, 7, 8, 20, 24].map(Some));
        let err = read_ranges(&[(&stored[1], 0..4)]).unwrap_err();
        assert!(format!("{err:#}").contains("rows 0..4 of job"), "{err:#}");
    }

    /// Runs are the longest stretches of ranges that follow one another in one part: two
    /// parts of sorted whole jobs are two runs, a gap or a step back starts another, and
    /// every run's frame is its ranges' rows, in order.
    #[test]
    fn ranges_that_follow_one_another_in_a_part_come_as_one_run() {
        let dir = tempfile::tempdir().unwrap();
        for (first, lengths) in [(0u64, [4u32, 2, 5]), (10, [2, 3, 2])] {
            let jobs: Vec<(ValidJob, Vec<StepRecord>)> = (0..3)
                .map(|i| (job("lse", "sinusoidal", "straddle", first + i), records(lengths[i as usize], i as f64)))
                .collect();
            write_part(dir.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap();
        }
        let mut stored = stored_jobs(dir.path(), None).unwrap();
        stored.sort_by(|a, b| (&*a.part, a.offset).cmp(&(&*b.part, b.offset)));
        assert_eq!(stored.len(), 6);
        let runs_of = |ranges: &[(&StoredRows, Range<usize>)]| {
            let mut runs = Vec::new();
            for_each_run(ranges, |run, df| {
                runs.push((run, df));
                Ok(())
            })
            .unwrap();
            let frames = read_ranges(ranges).unwrap();
            let joined: Vec<DataFrame> = runs.iter().map(|(_, df)| df.clone()).collect();
            assert_eq!(concat(joined.iter()).unwrap(), concat(frames.iter()).unwrap());
            runs.into_iter().map(|(run, _)| run).collect::<Vec<_>>()
        };
        let whole: Vec<(&StoredRows, Range<usize>)> = stored.iter().map(|j| (j, 0..j.rows)).collect();
        assert_eq!(runs_of(&whole), [0..3, 3..6]);
        // The second job's tail is left out: the third starts a run of its own.
        let gap = [whole[0].clone(), (&stored[1], 0..1), whole[2].clone()];
        assert_eq!(runs_of(&gap), [0..2, 2..3]);
        // Back to the first job, then to the other part and back.
        let mixed = [whole[0].clone(), whole[1].clone(), whole[0].clone(), whole[3].clone(), whole[2].clone()];
        assert_eq!(runs_of(&mixed), [0..2, 2..3, 3..4, 4..5]);
        // A job's tail, an empty range and the next job's head join; an empty range
        // elsewhere stands alone.
        let inner = [(&stored[0], 1..stored[0].rows), (&stored[1], 0..0), (&stored[1], 0..1), (&stored[4], 1..1)];
        assert_eq!(runs_of(&inner), [0..3, 3..4]);
    }

    #[test]
    fn repeat_writes_are_byte_identical_whatever_the_job_order() {
        let jobs: Vec<_> =
            (0..4).map(|seed| (job("lse", "sinusoidal", "straddle", seed), records(50, seed as f64))).collect();
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let pa = write_part(a.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap().path;
        let pb = write_part(b.path(), &METRICS, jobs.iter().rev().map(|(j, r)| part_job(j, r)).collect()).unwrap().path;
        let (ba, bb) = (fs::read(&pa).unwrap(), fs::read(pb).unwrap());
        assert!(!ba.is_empty());
        assert!(ba == bb, "two writes of the same jobs differ");
    }

    #[test]
    fn listing_ignores_temp_files_and_reads_files_without_an_index_as_one_job() {
        let dir = tempfile::tempdir().unwrap();
        assert!(stored_keys(dir.path()).unwrap().0.is_empty(), "missing dir = no jobs");
        let traj = trajectories_dir(dir.path());
        fs::create_dir_all(&traj).unwrap();
        for name in [".abc.parquet.1.0.tmp", "notes.txt"] {
            fs::write(traj.join(name), b"x").unwrap();
        }
        // A file of older armada: one job named by its file stem, no index.
        let job = job("lse", "sinusoidal", "straddle", 0);
        let df = trajectory_frame(&job, &METRICS, &records(4, 0.0)).unwrap();
        write_parquet_atomic(&traj.join(format!("{}.parquet", job.key)), &df).unwrap();
        let stored = stored_jobs(dir.path(), None).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!((stored[0].key.as_str(), stored[0].offset, stored[0].rows), (job.key.0.as_str(), 0, 4));
        assert_eq!(*stored[0].cell, Cell::of(&job));
        // The same job in a part too: stored twice is an error, never a double count.
        write_shard(dir.path(), &job, &METRICS, &records(4, 0.0)).unwrap();
        let err = stored_jobs(dir.path(), None).unwrap_err();
        assert!(format!("{err:#}").contains("is stored twice"), "{err:#}");
    }

    /// Parameters are stored as JSON; a file written before that (the canonical text
    /// `{noise_sd=0.1}` in its rows) reads as the same cell, and its job summarizes with the
    /// new parts' jobs of that cell, not apart.
    #[test]
    fn parts_written_before_json_params_read_as_the_same_cell() {
        let dir = tempfile::tempdir().unwrap();
        let traj = trajectories_dir(dir.path());
        fs::create_dir_all(&traj).unwrap();
        let old = job("lse", "sinusoidal", "straddle", 0);
        let mut df = trajectory_frame(&old, &METRICS, &records(4, 0.0)).unwrap();
        assert_eq!(strs(&df, "benchmark_params")[0], r#"{"noise_sd":0.1}"#);
        for (column, text) in [("benchmark_params", "{noise_sd=0.1}"), ("algorithm_params", "{beta_sqrt=3.0}")] {
            df.with_column(Column::new(column.into(), vec![text; 4])).unwrap();
        }
        write_parquet_atomic(&traj.join(format!("{}.parquet", old.key)), &df).unwrap();
        let new = job("lse", "sinusoidal", "straddle", 1);
        write_shard(dir.path(), &new, &METRICS, &records(4, 1.0)).unwrap();
        let stored = stored_jobs(dir.path(), None).unwrap();
        assert_eq!(stored.len(), 2);
        assert!(stored.iter().all(|j| *j.cell == Cell::of(&new)), "{stored:?}");
        assert_eq!(stored[0].cell.algorithm_params, r#"{"beta_sqrt":3.0}"#);
        // Its spec reads back from the old text, the same spec (so the same key).
        let specs = read_specs(&traj.join(format!("{}.parquet", old.key))).unwrap();
        assert_eq!((specs[0].0.as_str(), &specs[0].1), (old.key.0.as_str(), &old.spec));
        let report = crate::results::summarize(dir.path(), None).unwrap();
        assert_eq!(report.n_jobs, 2);
        let last = read_parquet(&report.final_path).unwrap();
        let n = last.column("n").unwrap().i64().unwrap();
        assert!(n.iter().all(|n| n == Some(2)), "one cell of two seeds: {last}");
        assert!(strs(&last, "algorithm_params").iter().all(|p| p == r#"{"beta_sqrt":3.0}"#));
    }

    /// A part's footer, and the summary tables made from it, say what each metric is
    /// (`armada.metrics`), as `armada list` would.
    #[test]
    fn parts_and_summaries_say_what_their_metrics_mean() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_metric_docs(dir.path()), None);
        write_shard(dir.path(), &job("lse", "sinusoidal", "straddle", 0), &METRICS, &records(4, 0.0)).unwrap();
        let docs: serde_json::Value = serde_json::from_str(&read_metric_docs(dir.path()).unwrap()).unwrap();
        let expected: serde_json::Map<String, serde_json::Value> = METRICS
            .iter()
            .map(|m| {
                let kind = if m.kind == MetricKind::Float { "float" } else { "integer" };
                (m.name.to_string(), serde_json::json!({ "kind": kind, "doc": m.doc }))
            })
            .collect();
        assert_eq!(docs, serde_json::Value::Object(expected));
        let report = crate::results::summarize(dir.path(), None).unwrap();
        for table in [&report.summary_path, &report.final_path] {
            let mut reader = ParquetReader::new(File::open(table).unwrap());
            let metadata = reader.get_metadata().unwrap();
            let kv = metadata.key_value_metadata().as_ref().unwrap();
            let entry = kv.iter().find(|e| e.key == METRICS_KEY).and_then(|e| e.value.clone()).unwrap();
            assert_eq!(serde_json::from_str::<serde_json::Value>(&entry).unwrap(), docs, "{}", table.display());
        }
    }

    /// A part rewritten by another tool (polars writes no `armada.jobs` footer) is refused
    /// naming the file, never read as one job; so is a one-job file holding other rows.
    #[test]
    fn a_part_without_its_index_is_refused_not_merged_into_one_job() {
        let dir = tempfile::tempdir().unwrap();
        let jobs: Vec<_> = (0..3).map(|seed| (job("lse", "sinusoidal", "straddle", seed), records(4, 0.0))).collect();
        let path = write_part(dir.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap().path;
        assert_eq!(stored_jobs(dir.path(), None).unwrap().len(), 3);
        let df = read_parquet(&path).unwrap();
        write_parquet_atomic(&path, &df).unwrap();
        let err = stored_jobs(dir.path(), None).unwrap_err();
        assert!(matches!(err.root(), ResultsError::Damaged { path: p, .. } if *p == path), "{err:?}");
        let err = format!("{err:#}");
        assert!(err.contains(&path.display().to_string()) && err.contains("has no job index"), "{err}");
        // Summaries leave it out and say so; alone, it is what they fail on.
        let err = crate::results::summarize(dir.path(), None).unwrap_err();
        assert_eq!(err.damaged_file(), Some(path.as_path()), "{err}");
        let other = job("lse", "sinusoidal", "straddle", 10);
        let other_part = write_shard(dir.path(), &other, &METRICS, &records(4, 0.0)).unwrap();
        let report = crate::results::summarize(dir.path(), None).unwrap();
        assert_eq!((report.n_jobs, report.damaged.clone()), (1, vec![path.clone()]));
        let readable = readable_jobs(dir.path(), None).unwrap();
        assert_eq!(readable.jobs.iter().map(|j| j.key.as_str()).collect::<Vec<_>>(), [other.key.0.as_str()]);
        assert_eq!(readable.damaged.len(), 1);
        fs::remove_file(&other_part).unwrap();
        // Renamed as an older armada's one-job file, the other jobs' rows still show.
        fs::remove_file(&path).unwrap();
        let legacy = trajectories_dir(dir.path()).join(format!("{}.parquet", jobs[0].0.key));
        write_parquet_atomic(&legacy, &df).unwrap();
        let err = format!("{:#}", stored_jobs(dir.path(), None).unwrap_err());
        assert!(err.contains("holds rows of job") && err.contains(&legacy.display().to_string()), "{err}");
    }

    #[test]
    fn bad_records_are_rejected_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let job = job("lse", "sinusoidal", "straddle", 0);
        let short = [StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0] }];
        assert!(write_shard(dir.path(), &job, &METRICS, &short).is_err());
        let fractional = [StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0, 0.5] }];
        let err = write_shard(dir.path(), &job, &METRICS, &fractional).unwrap_err();
        assert!(matches!(err.root(), ResultsError::Invalid(_)), "{err:?}");
        assert!(format!("{err:#}").contains("non-integer"), "{err:#}");
        // A source that yields fewer records than announced.
        let lying = PartJob::of(&job, 3, records(2, 0.0).into_iter().map(Ok));
        let err = write_part(dir.path(), &METRICS, vec![lying]).unwrap_err();
        assert!(format!("{err:#}").contains("2 records where 3 were announced"), "{err:#}");
        assert!(stored_keys(dir.path()).unwrap().0.is_empty());
        assert_eq!(fs::read_dir(trajectories_dir(dir.path())).unwrap().count(), 0, "no temp file left behind");
    }
}
