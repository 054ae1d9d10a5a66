//! Results on disk: committed trajectories grouped into Parquet parts, and the summary
//! tables polars rebuilds from them.
//!
//! # Layout
//!
//! ```text
//! DIR/<sweep>/
//!   trajectories/part-<key>.parquet  many jobs per file (`write_part`), each a contiguous
//!                                    run of rows; the footer indexes them (see `part`)
//!   summary.parquet                  statistics over seeds, every step  (`summarize`)
//!   final.parquet                    statistics over seeds, last step   (`summarize`)
//!   along_<column>.parquet           statistics over seeds on the common grid of a monotone
//!                                    metric, e.g. cumulative cost (`summarize_along`; built for
//!                                    a family's `summary_axes` and by `summarize --along`)
//! ```
//!
//! Every file is written atomically: to `.<name>.<pid>.<n>.tmp` in the same directory,
//! fsynced, renamed over the final name, and the directory fsynced. A crash leaves either
//! no file or a complete one, so "a part holds the job" is the commit record of a job and
//! resuming a sweep means skipping the keys of [`stored_keys`]. Leftover `.tmp` files
//! are ignored by every reader. All parts of a sweep share one schema, so
//! `trajectories/*.parquet` reads as one table in polars, pyarrow or DuckDB.
//!
//! Files are deterministic: zstd at its default level, fixed row group sizes, no
//! timestamps or random ids in the metadata. The same jobs give byte-identical parts
//! except for the `elapsed_ms` values, and summaries depend only on the jobs, never on how
//! they are spread over parts: summarizing the same jobs gives byte-identical summaries.
//!
//! # Schemas
//!
//! Every table's columns are declared once, in [`schema`]: [`schema::TRAJECTORY`] (one row
//! per step, the family's metrics after the fixed columns, Float64 for `MetricKind::Float`
//! and Int64 for `MetricKind::Int`), [`schema::SUMMARY`] (`summary.parquet` and
//! `final.parquet`) and [`schema::ALONG_TABLE`]. Float metrics are stored as produced, NaN
//! included; an Int metric that is NaN is stored as null.
//!
//! The summaries are long ("tidy") tables: one row per group (the cell, step, metric) over
//! the seeds, for every Float64 metric (never `elapsed_ms`, never Int64 metrics). A cell
//! whose every job failed keeps its rows, one per metric, with `step` null, `n = 0` and
//! null statistics, so that a method's failures never make it vanish from a table.
//!
//! **NaN is missing**: a NaN metric value is excluded from `n` and from every statistic;
//! a group with no values has `n = 0` and null statistics. Quantiles interpolate linearly
//! (numpy's default); between two equal infinities they are that value, not NaN.
//!
//! Rows are sorted by the group columns in the order above (strings lexically).
//! `final.parquet` has the same columns, computed on each job's own last row, one group per
//! cell and metric. Every job of most families ends at the horizon; a family whose episodes
//! end early (`Declaration::ends_early`: cvs, when the budget is spent) has jobs that end at
//! different steps, and `step` is then the largest of them.

mod along;
pub mod compare;
mod error;
pub mod live;
mod part;
pub mod rounds;
pub mod schema;
mod stats;
mod summary;
mod terminal;

pub use along::{along_file, summarize_along, AlongReport};
use error::{damaged, invalid, io, not_armadas, nothing_to_summarize, Within};
pub use error::{Result, ResultsError};

pub use part::{
    encode_jobs, file_name, for_each_job, part_files, part_name, read_index, read_jobs, read_metric_docs,
    read_provenance, read_rows_at, read_specs, readable_jobs, stored_jobs, stored_keys, sweeps_with_parts,
    trajectories_dir, write_part, write_shard, Cell, PartJob, Provenance, Readable, StoredRows, WrittenPart,
    METRICS_KEY,
};
use schema::*;
pub use stats::CellJobs;
pub use summary::{
    count_cells, metrics_of, rebuild_summaries, summarize, summarize_cell, write_summaries, CellRows, CellSummary,
    Spill, SummaryReport, CELL_ROWS_HELD,
};
pub use terminal::{comparisons_table, final_table, render_final};

use polars::prelude::*;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Rows per Parquet row group. Fixed so that files do not depend on how their rows were
/// produced (see [`TableWriter`]); a writer holds one group's rows and their encoding in
/// memory (about 50 MB for summary rows), whatever the table's length.
const ROW_GROUP_ROWS: usize = 1 << 17;

/// File names of the summaries inside a sweep directory.
pub const SUMMARY_FILE: &str = "summary.parquet";
pub const FINAL_FILE: &str = "final.parquet";
/// Present in a sweep's directory while the coordinator summarizes it (see
/// `coordinator::durable::summarizer`); `armada summarize` removes it once it has written the summaries.
pub const SUMMARIZING_MARKER: &str = "armada.summarizing";

/// Distinguishes temp files of concurrent writers of the same name within one process.
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether a directory entry is an in-progress or abandoned temp file.
fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') || name.ends_with(".tmp")
}

/// Remove the temp files a killed writer left in a sweep's directory and its trajectories
/// directory (`.<name>.<pid>.<n>.tmp`); returns how many. Only the owner of the results
/// directory may call it (at start-up, holding the store's lock): a live writer's temp
/// file would go too.
pub fn remove_temp_files(sweep_dir: &Path) -> Result<usize> {
    let mut removed = 0;
    for dir in [sweep_dir.to_path_buf(), trajectories_dir(sweep_dir)] {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries {
            let entry = entry.map_err(io("listing", &dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") && entry.file_type().is_ok_and(|t| t.is_file()) {
                removed += usize::from(remove_if_present(&entry.path())?);
            }
        }
    }
    Ok(removed)
}

/// Remove `path`; false if it was already gone (a temp file listed a moment ago may have
/// been renamed into place by its writer since: what its removal wanted).
fn remove_if_present(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io("removing", path)(e)),
    }
}

/// The Parquet settings of every file armada writes: zstd, statistics, one thread.
fn parquet_writer<W: Write>(out: W) -> ParquetWriter<W> {
    ParquetWriter::new(out)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::default())
        .with_row_group_size(Some(ROW_GROUP_ROWS))
        .set_parallel(false)
}

/// Write `df` as Parquet to `path` atomically (see [`write_atomic`]): tests' legacy files.
#[cfg(test)]
fn write_parquet_atomic(path: &Path, df: &DataFrame) -> Result<()> {
    write_atomic(path, |out| write_table(df, out))
}

/// `df` as the bytes of a Parquet file, with the settings of every file armada writes.
pub fn parquet_bytes(df: &DataFrame) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    write_table(df, &mut bytes)?;
    Ok(bytes)
}

/// Write `df` as a Parquet file into `out`, with the settings of every file armada writes.
pub fn write_table(df: &DataFrame, out: impl Write) -> Result<()> {
    let mut table = TableWriter::new(out);
    table.push(df)?;
    table.finish()
}

/// A Parquet table written from frames of one schema pushed one after another, in row
/// groups of exactly [`ROW_GROUP_ROWS`] rows (the last one smaller): the file's bytes
/// depend on its rows only, not on how they were pushed, and memory holds one row group
/// whatever the table's length. A table of fewer rows is the file polars writes from
/// them in one frame.
pub(crate) struct TableWriter<W: Write> {
    out: Option<W>,
    /// Key-value metadata of the footer.
    metadata: Option<KeyValueMetadata>,
    writer: Option<polars::io::parquet::write::BatchedWriter<W>>,
    /// Rows not yet written (fewer than a row group after each push).
    pending: DataFrame,
    groups: usize,
    /// Rows pushed.
    rows: usize,
}

impl<W: Write> TableWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        TableWriter { out: Some(out), metadata: None, writer: None, pending: DataFrame::empty(), groups: 0, rows: 0 }
    }

    pub(crate) fn with_metadata(self, metadata: KeyValueMetadata) -> Self {
        TableWriter { metadata: Some(metadata), ..self }
    }

    pub(crate) fn push(&mut self, rows: &DataFrame) -> Result<()> {
        if self.writer.is_none() {
            let out = self.out.take().expect("the writer is made once");
            let writer = parquet_writer(out).with_key_value_metadata(self.metadata.take());
            self.writer = Some(writer.batched(rows.schema())?);
            self.pending = rows.clear();
        }
        self.pending.vstack_mut(rows)?;
        self.rows += rows.height();
        while self.pending.height() >= ROW_GROUP_ROWS {
            let rest = self.pending.slice(ROW_GROUP_ROWS as i64, usize::MAX);
            let group = std::mem::replace(&mut self.pending, rest).slice(0, ROW_GROUP_ROWS);
            self.write(group)?;
        }
        Ok(())
    }

    /// Rows pushed so far.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    fn write(&mut self, mut group: DataFrame) -> Result<()> {
        group.rechunk_mut();
        self.writer.as_mut().expect("made by push").write_batch(&group)?;
        self.groups += 1;
        Ok(())
    }

    /// Write the last rows and the footer. A table needs at least one (maybe empty) frame:
    /// its schema.
    pub(crate) fn finish(mut self) -> Result<()> {
        if self.writer.is_none() {
            return Err(invalid("a table needs a schema: no rows were given"));
        }
        if self.pending.height() > 0 || self.groups == 0 {
            let rows = std::mem::take(&mut self.pending);
            self.write(rows)?;
        }
        self.writer.expect("checked above").finish()?;
        Ok(())
    }
}

/// A temp file name for `name` in `dir`, unique within the machine: `.<name>.<pid>.<n>.tmp`.
fn temp_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), TMP_COUNTER.fetch_add(1, Ordering::Relaxed)))
}

/// Write a file atomically: `write` fills a temp file in the same directory, which is
/// fsynced, renamed over `path`, and the directory fsynced. The temp file is removed on
/// failure.
fn write_atomic(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(invalid(format!("output path {} has no parent directory or no UTF-8 file name", path.display())));
    };
    let tmp = temp_path(dir, name);
    let result = (|| -> Result<()> {
        let mut out =
            BufWriter::new(File::options().write(true).create_new(true).open(&tmp).map_err(io("writing", path))?);
        write(&mut out).within(|| format!("writing {}", path.display()))?;
        out.flush().map_err(io("writing", path))?;
        let file = out.into_inner().map_err(|e| e.into_error()).map_err(io("writing", path))?;
        file.sync_all().map_err(io("writing", path))?;
        drop(file);
        fs::rename(&tmp, path).map_err(io("writing", path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    // Make the rename itself durable.
    File::open(dir).and_then(|d| d.sync_all()).map_err(io("syncing directory", dir))
}

/// The bytes of a results file, to send as they are.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(io("reading", path))
}

/// Read a Parquet file's `columns` [`ROW_GROUP_ROWS`] rows at a time (a summary table's row
/// groups), handing each piece to `f`: what a reader of a table of any length holds at once.
pub fn for_each_piece<E: From<ResultsError>>(
    path: &Path,
    columns: &[&str],
    mut f: impl FnMut(&DataFrame) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let open = || File::open(path).map_err(io("opening", path));
    let metadata = ParquetReader::new(open()?).get_metadata().map_err(damaged("reading", path))?.clone();
    for start in (0..metadata.num_rows.max(1)).step_by(ROW_GROUP_ROWS) {
        let mut reader = ParquetReader::new(open()?)
            .with_slice(Some((start, ROW_GROUP_ROWS)))
            .with_columns(Some(columns.iter().map(|c| c.to_string()).collect()));
        reader.set_metadata(metadata.clone());
        f(&reader.finish().map_err(damaged("reading", path))?)?;
    }
    Ok(())
}

/// Read a whole Parquet file.
pub fn read_parquet(path: &Path) -> Result<DataFrame> {
    let file = File::open(path).map_err(io("opening", path))?;
    ParquetReader::new(file).finish().map_err(damaged("reading", path))
}

/// Frames of one schema stacked into one contiguous frame.
fn concat<'a>(frames: impl Iterator<Item = &'a DataFrame>) -> Result<DataFrame> {
    let mut out = DataFrame::empty();
    for rows in frames {
        if out.width() == 0 {
            out = rows.clone();
        } else {
            out.vstack_mut(rows)?;
        }
    }
    out.rechunk_mut();
    Ok(out)
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    use super::*;

    /// A temp file renamed into place between the listing and its removal is not an error
    /// (a killed coordinator's last writer may still be finishing as the next one starts);
    /// any other failure to remove is.
    #[test]
    fn a_temp_file_gone_before_its_removal_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".final.parquet.1.1.tmp");
        fs::write(&file, b"x").unwrap();
        assert!(remove_if_present(&file).unwrap());
        assert!(!file.exists());
        assert!(!remove_if_present(&file).unwrap());
        let not_a_file = dir.path().join(".sub.1.1.tmp");
        fs::create_dir(&not_a_file).unwrap();
        let err = remove_if_present(&not_a_file).unwrap_err().to_string();
        assert!(err.contains("removing") && err.contains(".sub.1.1.tmp"), "{err}");
    }
}
