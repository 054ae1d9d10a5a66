//! `armada check`: a data directory's files against what its store says, and the repair of
//! what is lost without losing what is not.
//!
//! The store is checked by SQLite; each sweep's parts by their footers and job indexes (and,
//! with `full`, every row: its pages decode, and each job's steps run 0, 1, ... up to its
//! horizon); each job the store calls done by finding its rows. A damaged part is moved
//! aside to `<sweep>/damaged/`, never deleted, and the jobs the store placed in it are
//! queued again, as are done jobs whose rows are missing: a job is a pure function of its
//! key, so they re-run to the same bits. The sweeps' summary files are removed, to be
//! rebuilt when the sweep next settles. A damaged store is reported, with what to do; it is
//! not repaired here.

use crate::coordinator::store::{Store, StoreError};
use crate::results::{self, ResultsError, StoredRows};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One thing found wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The sweep it belongs to (none for the store itself).
    pub sweep: Option<String>,
    pub file: PathBuf,
    /// The jobs whose rows it loses (keys), when known.
    pub jobs: Vec<String>,
    pub what: String,
    /// What to do about it.
    pub fix: String,
    repair: Option<Repair>,
}

/// What `--repair` does for a problem.
#[derive(Clone, Debug, PartialEq)]
enum Repair {
    /// Move the part aside and queue its jobs again.
    MoveAside,
    /// Queue the jobs again.
    Requeue,
}

/// What a check looked at and found.
#[derive(Debug, Default)]
pub struct Checked {
    pub n_sweeps: usize,
    pub n_parts: usize,
    /// Done jobs whose rows were found.
    pub n_jobs: usize,
    pub problems: Vec<Problem>,
}

/// What `--repair` did.
#[derive(Debug, Default, PartialEq)]
pub struct Repaired {
    pub moved: Vec<PathBuf>,
    pub requeued: usize,
}

/// Why a directory could not be checked at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{}: no armada.sqlite here: give a coordinator's --data (or `armada run`'s --out) directory", .0.display())]
    NoStore(PathBuf),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("{action} {}: {cause}", .path.display())]
    Io { action: &'static str, path: PathBuf, cause: std::io::Error },
}

/// Check the data directory `dir` (which holds `armada.sqlite` and a directory per sweep).
/// Takes the store's lock: a directory a coordinator is running on is refused. Answers the
/// store (none when it is damaged) with what was found.
pub fn check(dir: &Path, full: bool) -> Result<(Option<Store>, Checked), CheckError> {
    let path = dir.join("armada.sqlite");
    if !path.is_file() {
        return Err(CheckError::NoStore(dir.to_path_buf()));
    }
    let mut checked = Checked::default();
    let store = match Store::open(dir) {
        Ok(store) => store,
        Err(e @ StoreError::Damaged { .. }) => {
            checked.problems.push(damaged_store(&path, e.to_string()));
            return Ok((None, checked));
        }
        Err(e) => return Err(e.into()),
    };
    let found = store.integrity(full)?;
    if found != ["ok"] {
        let what = format!("SQLite finds it damaged: {}", found.join("; "));
        checked.problems.push(damaged_store(&path, what));
        return Ok((None, checked));
    }
    for sweep in store.sweeps()? {
        checked.n_sweeps += 1;
        check_sweep(&store, &dir.join(&sweep.id), &sweep.id, full, &mut checked)?;
    }
    Ok((Some(store), checked))
}

fn damaged_store(path: &Path, what: String) -> Problem {
    Problem {
        sweep: None,
        file: path.to_path_buf(),
        jobs: Vec::new(),
        what,
        fix: "move it aside (with its -wal and -shm files) and resubmit the sweeps to a new coordinator: \
              jobs whose trajectories are on disk are found done, not run again"
            .into(),
        repair: None,
    }
}

fn check_sweep(
    store: &Store,
    sweep_dir: &Path,
    sweep: &str,
    full: bool,
    checked: &mut Checked,
) -> Result<(), CheckError> {
    let done = store.done_jobs(sweep)?;
    let mut in_part: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (key, part) in &done {
        in_part.entry(part.as_deref().unwrap_or("")).or_default().push(key.clone());
    }
    let problem = |file: &Path, jobs: Vec<String>, what: String, fix: String, repair| Problem {
        sweep: Some(sweep.to_string()),
        file: file.to_path_buf(),
        jobs,
        what,
        fix,
        repair,
    };
    // Where each job's rows are found: key -> part file name.
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    let mut damaged = BTreeSet::new();
    for path in results::part_files(sweep_dir)? {
        checked.n_parts += 1;
        let name = file_name(&path);
        let jobs_of_part = in_part.get(name.as_str()).cloned().unwrap_or_default();
        let readable = results::read_index(&path).and_then(|index| {
            if full {
                check_rows(&path, &index)?;
            }
            Ok(index)
        });
        match readable {
            Ok(index) => {
                for job in index {
                    if let Some(other) = found.insert(job.key.clone(), name.clone()) {
                        // Not repaired: either part may hold other jobs' rows too.
                        let what = format!("job {} is also in {other}", job.key);
                        let named = done.iter().find(|(k, _)| *k == job.key).and_then(|(_, p)| p.clone());
                        let fix = format!(
                            "the store places it in {}; summaries would count it twice: keep one copy",
                            named.as_deref().unwrap_or("no part")
                        );
                        checked.problems.push(problem(&path, vec![job.key], what, fix, None));
                    }
                }
            }
            Err(e) => {
                damaged.insert(name.clone());
                let fix = format!(
                    "--repair moves it to {} and queues its {} jobs again (they re-run to the same bits)",
                    sweep_dir.join("damaged").display(),
                    jobs_of_part.len()
                );
                let what = format!("unreadable: {e}");
                checked.problems.push(problem(&path, jobs_of_part, what, fix, Some(Repair::MoveAside)));
            }
        }
    }
    let mut missing = Vec::new();
    for (key, part) in &done {
        let part = part.as_deref().unwrap_or("");
        match found.get(key) {
            Some(_) => checked.n_jobs += 1,
            None if damaged.contains(part) => {}
            None => missing.push(key.clone()),
        }
    }
    if !missing.is_empty() {
        let what = format!("{} jobs are done in the store but their rows are in no readable part", missing.len());
        let fix = "--repair queues them again (they re-run to the same bits)".to_string();
        let dir = results::trajectories_dir(sweep_dir);
        checked.problems.push(problem(&dir, missing, what, fix, Some(Repair::Requeue)));
    }
    Ok(())
}

/// Every row of a part decodes, and each job's steps run 0, 1, ... up to at most its horizon.
fn check_rows(path: &Path, index: &[StoredRows]) -> Result<(), ResultsError> {
    let jobs: Vec<&StoredRows> = index.iter().collect();
    results::for_each_job(&jobs, |job, df| {
        let steps = df.column(results::STEP)?.i64()?;
        let in_order = steps.iter().enumerate().all(|(i, s)| s == Some(i as i64));
        if !in_order || job.rows as i64 > job.cell.horizon + 1 {
            let why = format!(
                "{}: job {} has {} rows whose steps do not run 0, 1, ... within its horizon {}",
                path.display(),
                job.key,
                job.rows,
                job.cell.horizon
            );
            return Err(ResultsError::Damaged { path: path.to_path_buf(), why });
        }
        Ok(())
    })
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Repair what `checked` found in `dir`: damaged parts moved to `<sweep>/damaged/`, the jobs
/// they held and the jobs whose rows are missing queued again, and the summary files of the
/// sweeps touched removed (the next coordinator rebuilds them once the jobs have re-run).
pub fn repair(store: &mut Store, dir: &Path, checked: &Checked) -> Result<Repaired, CheckError> {
    let mut repaired = Repaired::default();
    let mut touched = BTreeSet::new();
    for p in &checked.problems {
        let (Some(sweep), Some(repair)) = (&p.sweep, &p.repair) else { continue };
        if *repair == Repair::MoveAside {
            let aside = dir.join(sweep).join("damaged");
            std::fs::create_dir_all(&aside).map_err(|cause| CheckError::Io {
                action: "creating",
                path: aside.clone(),
                cause,
            })?;
            let to = free_name(&aside.join(file_name(&p.file)));
            std::fs::rename(&p.file, &to).map_err(|cause| CheckError::Io {
                action: "moving",
                path: p.file.clone(),
                cause,
            })?;
            repaired.moved.push(to);
        }
        repaired.requeued += store.requeue_lost(sweep, &p.jobs)?;
        touched.insert(sweep.clone());
    }
    for sweep in touched {
        let sweep_dir = dir.join(&sweep);
        for file in summary_files(&sweep_dir) {
            std::fs::remove_file(&file).map_err(|cause| CheckError::Io {
                action: "removing",
                path: file.clone(),
                cause,
            })?;
        }
    }
    Ok(repaired)
}

/// `path`, or `path.1`, `path.2`, ... : the first that does not exist.
fn free_name(path: &Path) -> PathBuf {
    let mut candidate = path.to_path_buf();
    let mut n = 0;
    while candidate.exists() {
        n += 1;
        candidate = PathBuf::from(format!("{}.{n}", path.display()));
    }
    candidate
}

/// A sweep's summary files: summary, final, and the tables along its axes.
fn summary_files(sweep_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sweep_dir) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = file_name(p);
            name == results::SUMMARY_FILE
                || name == results::FINAL_FILE
                || (name.starts_with("along_") && name.ends_with(".parquet"))
        })
        .collect()
}
