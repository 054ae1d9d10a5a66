//! Writing a part: its jobs' rows built a row group at a time in the trajectory schema.

use super::*;
use armada_core::{MetricDef, MetricKind, StepRecord};
use std::cmp::Ordering;

/// Rows per row group of a part: what the writer holds in memory at once. Small jobs share
/// a row group; a long one spans several.
pub const PART_ROW_GROUP_ROWS: usize = 1 << 15;

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
    seed: i64,
    sweep_seed: i64,
}

/// A value a job gives each of its rows.
enum JobValue<'a> {
    Text(&'a str),
    Int(i64),
}

impl<'a> JobValue<'a> {
    fn text(self) -> Option<&'a str> {
        match self {
            JobValue::Text(text) => Some(text),
            JobValue::Int(_) => None,
        }
    }

    fn int(self) -> Option<i64> {
        match self {
            JobValue::Int(value) => Some(value),
            JobValue::Text(_) => None,
        }
    }
}

/// The `n` rows of the fixed column `name` of `jobs`: each job's value, once per row, as
/// `kind` takes it (an error names a column the writer has no such value for).
fn repeated<'a, T: Clone>(
    jobs: &'a [(JobColumns, usize)],
    name: &str,
    n: usize,
    kind: fn(JobValue<'a>) -> Option<T>,
) -> Result<Vec<T>> {
    let mut values = Vec::with_capacity(n);
    // Where the column is among the cell's texts, looked up once for all the jobs.
    let text_at = CELL_TEXT.iter().position(|c| *c == name);
    for (job, rows) in jobs {
        let Some(value) = job.value(name, text_at).and_then(kind) else {
            return Err(invalid(format!("the writer has no value of the declared type for column {name:?}")));
        };
        values.extend(std::iter::repeat_n(value, *rows));
    }
    Ok(values)
}

impl JobColumns {
    fn of(job: &PartJob<'_>) -> Result<JobColumns> {
        let seed = i64::try_from(job.seed).map_err(|_| invalid("seed index does not fit in Int64"))?;
        // Bit-for-bit: Parquet readers have no trouble with Int64, many with UInt64.
        Ok(JobColumns { key: job.key.clone(), cell: job.cell.clone(), seed, sweep_seed: job.sweep_seed as i64 })
    }

    /// The job's value of the fixed trajectory column `name` (the cell's text at `text_at`
    /// when it is one); None for the columns that vary by row (`step`, `elapsed_ms`).
    fn value(&self, name: &str, text_at: Option<usize>) -> Option<JobValue<'_>> {
        let cell = &*self.cell;
        Some(match name {
            JOB_KEY => JobValue::Text(&self.key),
            SEED => JobValue::Int(self.seed),
            SWEEP_SEED => JobValue::Int(self.sweep_seed),
            HORIZON => JobValue::Int(cell.horizon),
            _ => JobValue::Text(cell.texts()[text_at?]),
        })
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
        let mut columns = Vec::with_capacity(TRAJECTORY.len() + self.metrics.len());
        for fixed in &TRAJECTORY {
            let name = fixed.name.into();
            let column = match (fixed.name, fixed.ty) {
                (STEP, _) => Column::new(name, std::mem::take(&mut self.steps)),
                (ELAPSED_MS, _) => Column::new(name, std::mem::take(&mut self.elapsed_ms)),
                (_, ColumnType::String) => Column::new(name, repeated(&jobs, fixed.name, n, JobValue::text)?),
                (_, ColumnType::Int64) => Column::new(name, repeated(&jobs, fixed.name, n, JobValue::int)?),
                (_, ColumnType::Float64) => {
                    return Err(invalid(format!("the writer has no value for column {:?}", fixed.name)))
                }
            };
            columns.push(column);
        }
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
pub(super) fn trajectory_frame(job: &ValidJob, metrics: &[MetricDef], records: &[StepRecord]) -> Result<DataFrame> {
    let mut group = RowGroup::new(metrics);
    group.start_job(&JobColumns::of(&PartJob::of(job, 0, std::iter::empty()))?);
    for r in records {
        group.push(r)?;
    }
    group.frame()
}

fn check_metric_names(metrics: &[MetricDef]) -> Result<()> {
    for (i, m) in metrics.iter().enumerate() {
        if is_fixed_column(m.name) {
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
