//! Reading parts: jobs, ranges of their rows and runs of consecutive jobs, a piece at a
//! time, and the specs a lost store is rebuilt from.

use super::*;
use std::collections::HashMap;
use std::ops::Range;

/// The spec of every job in the part at `path`, read back from its rows (the first of
/// each job's), by key, in the index's order: what `armada check --repair` rebuilds a lost
/// store from. The caller checks each spec's key against the key its rows carry.
pub fn read_specs(path: &Path) -> Result<Vec<(String, JobSpec)>> {
    let index = read_index(path)?;
    if index.is_empty() {
        return Ok(Vec::new());
    }
    let file = File::open(path).map_err(io("opening", path))?;
    let df = ParquetReader::new(file)
        .with_columns(Some(job_columns().map(str::to_owned).collect()))
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
pub(super) fn frame_cell(df: &DataFrame) -> Result<Cell> {
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
    for_each_job_in_batches(jobs, READ_BATCH_ROWS, f)
}

/// [`for_each_job`] by runs: `f` gets consecutive jobs (their indices in `jobs`) whose rows
/// follow one another in a part, their rows as one frame, and the row of the first job the
/// frame starts at (0 but for the pieces of a job longer than [`READ_BATCH_ROWS`], which
/// come alone). Jobs sorted by part and offset come in the fewest runs.
pub fn for_each_job_run(
    jobs: &[&StoredRows],
    f: impl FnMut(Range<usize>, DataFrame, usize) -> Result<()>,
) -> Result<()> {
    for_each_job_run_in_batches(jobs, READ_BATCH_ROWS, f)
}

pub(super) fn for_each_job_in_batches(
    jobs: &[&StoredRows],
    batch_rows: usize,
    mut f: impl FnMut(&StoredRows, DataFrame, usize) -> Result<()>,
) -> Result<()> {
    for_each_job_run_in_batches(jobs, batch_rows, |run, df, first| {
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

fn for_each_job_run_in_batches(
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

pub(super) fn read_rows_at_in(job: &StoredRows, rows: &[usize], batch_rows: usize) -> Result<DataFrame> {
    let mut picked: Vec<DataFrame> = Vec::new();
    let mut next = 0;
    for_each_job_in_batches(&[job], batch_rows, |_, piece, first| {
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
