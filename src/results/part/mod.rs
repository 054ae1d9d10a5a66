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

//!
//! Here: the part's cell and where a job's rows are, and listing a sweep's parts;
//! `footer` (the index, the provenance and the metrics' meanings), `read`, `write`, and
//! `legacy` (files of older armada).

mod footer;
mod legacy;
mod read;
mod write;

pub use footer::*;
use legacy::*;
pub use read::*;
pub use write::*;

use super::*;
use armada_core::{JobSpec, ValidJob};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

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

    /// The cell's text columns, in [`schema::CELL_TEXT`]'s order.
    pub fn texts(&self) -> [&str; 5] {
        [&self.family, &self.benchmark, &self.benchmark_params, &self.algorithm, &self.algorithm_params]
    }
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

#[cfg(test)]
mod tests;
