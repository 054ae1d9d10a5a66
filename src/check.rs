//! `armada check`: a data directory's files against what its store says, and the repair of
//! what is lost without losing what is not.
//!
//! The store is checked by SQLite; each sweep's parts by their footers and job indexes (and,
//! with `full`, every row: its pages decode, and each job's steps run 0, 1, ... up to its
//! horizon); each job the store calls done by finding its rows. A damaged part is moved
//! aside to `<sweep>/damaged/`, never deleted, and the jobs the store placed in it are
//! queued again, as are done jobs whose rows are missing: a job is a pure function of its
//! key, so they re-run to the same bits. The sweeps' summary files are removed, to be
//! rebuilt when the sweep next settles.
//!
//! A damaged (or missing) store is moved aside to `armada.damaged/` and replaced by the
//! newest backup SQLite finds intact (`armada.backups/`, see
//! [`crate::coordinator::durable::backups`]), or by an empty store; a sweep whose parts are on disk
//! but whom the store does not know (submitted after that backup, or every sweep of a lost
//! store) is rebuilt from its parts alone: each job's spec is read back from its rows and
//! kept only if this build gives it the key its rows carry. Its done jobs are then the
//! store's again; a resubmission of its sweep file queues the rest.

use crate::coordinator::durable::backups;
use crate::coordinator::durable::store::{Commit, Store, StoreError};
use crate::coordinator::state::stored::{JobState, SpecTemplate, StoredJob};
use crate::data_dir::DataDir;
use crate::results::{self, file_name, ResultsError, StoredRows};
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
    /// Move the store aside and restore the newest intact backup (see [`restore_store`]).
    RestoreStore,
    /// Rebuild the sweep's done jobs from its parts.
    Rebuild,
}

impl Checked {
    /// The store must be restored before anything else is repaired.
    pub fn store_lost(&self) -> bool {
        self.problems.iter().any(|p| p.repair == Some(Repair::RestoreStore))
    }
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
    /// Sweeps rebuilt from their parts, with their done jobs.
    pub rebuilt: Vec<(String, usize)>,
    /// Jobs found in parts but not rebuilt, each with why.
    pub not_rebuilt: Vec<String>,
}

/// What [`restore_store`] did.
#[derive(Debug, Default, PartialEq)]
pub struct Restored {
    /// The damaged store's files, where they were moved.
    pub moved: Vec<PathBuf>,
    /// The backup the store was restored from; none: it starts empty.
    pub backup: Option<PathBuf>,
    /// Backups passed over because SQLite found them damaged.
    pub damaged_backups: Vec<PathBuf>,
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
    let path = DataDir(dir).store();
    let on_disk: Vec<String> = results::sweeps_with_parts(dir)?.into_iter().map(|(name, _)| name).collect();
    let mut checked = Checked::default();
    if !path.is_file() {
        if on_disk.is_empty() {
            return Err(CheckError::NoStore(dir.to_path_buf()));
        }
        let what = format!("missing, beside {} sweep directories with trajectories", on_disk.len());
        checked.problems.push(lost_store(&path, what));
        return Ok((None, checked));
    }
    let store = match Store::open(dir) {
        Ok(store) => store,
        Err(StoreError::Damaged { cause, .. }) => {
            checked.problems.push(lost_store(&path, format!("damaged, SQLite cannot read it ({cause})")));
            return Ok((None, checked));
        }
        Err(e) => return Err(e.into()),
    };
    // A damaged page may show only as an error while it is read.
    let damaged = |e: StoreError, checked: &mut Checked| match e.naming_damage(&path) {
        StoreError::Damaged { cause, .. } => {
            checked.problems.push(lost_store(&path, format!("damaged, SQLite cannot read it ({cause})")));
            Ok(())
        }
        e => Err(CheckError::from(e)),
    };
    let found = match store.integrity(full) {
        Ok(found) => found,
        Err(e) => return damaged(e, &mut checked).map(|()| (None, checked)),
    };
    if found != ["ok"] {
        let what = format!("SQLite finds it damaged: {}", found.join("; "));
        checked.problems.push(lost_store(&path, what));
        return Ok((None, checked));
    }
    let mut known = BTreeSet::new();
    let sweeps = match store.sweeps() {
        Ok(sweeps) => sweeps,
        Err(e) => return damaged(e, &mut checked).map(|()| (None, checked)),
    };
    for sweep in sweeps {
        checked.n_sweeps += 1;
        match check_sweep(&store, &dir.join(&sweep.id), &sweep.id, full, &mut checked) {
            Err(CheckError::Store(e)) => return damaged(e, &mut checked).map(|()| (None, checked)),
            other => other?,
        }
        known.insert(sweep.id);
    }
    for sweep in on_disk.into_iter().filter(|s| !known.contains(s)) {
        let sweep_dir = dir.join(&sweep);
        let n_parts = results::part_files(&sweep_dir)?.len();
        checked.problems.push(Problem {
            sweep: Some(sweep.clone()),
            file: sweep_dir,
            jobs: Vec::new(),
            what: format!(
                "{n_parts} trajectory parts of a sweep the store does not know (the store was lost, or \
                 restored from a backup older than the sweep)"
            ),
            fix: "--repair rebuilds the sweep's done jobs from its parts; resubmit its sweep file then \
                  to queue the rest (the done jobs are not run again)"
                .into(),
            repair: Some(Repair::Rebuild),
        });
    }
    Ok((Some(store), checked))
}

/// The sweep directories of `dir` that hold trajectory parts, by name.
fn lost_store(path: &Path, what: String) -> Problem {
    Problem {
        sweep: None,
        file: path.to_path_buf(),
        jobs: Vec::new(),
        what,
        fix: "--repair moves it to armada.damaged/, restores the newest intact backup of armada.backups/ \
              (or starts an empty store), and rebuilds from the trajectories on disk every sweep that backup \
              lacks"
            .into(),
        repair: Some(Repair::RestoreStore),
    }
}

/// Move the store of `dir` (with its `-wal` and `-shm` files), if any, to `armada.damaged/`
/// and put a copy of the newest backup SQLite finds intact in its place (none: an empty
/// store). Then [`check`] again: sweeps the backup lacks are rebuilt by
/// [`repair`].
pub fn restore_store(dir: &Path) -> Result<Restored, CheckError> {
    let mut restored = Restored::default();
    let aside = DataDir(dir).damaged();
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    for (file, suffix) in DataDir(dir).store_files().into_iter().zip(DataDir::STORE_SUFFIXES) {
        if !file.exists() {
            continue;
        }
        create_dir(&aside)?;
        let to = free_name(&aside.join(format!("armada-{stamp}.sqlite{suffix}")));
        std::fs::rename(&file, &to).map_err(|cause| CheckError::Io { action: "moving", path: file.clone(), cause })?;
        restored.moved.push(to);
    }
    // Each backup is tried on a copy, opened as a store of its own directory.
    let trial = DataDir(dir).restoring();
    for backup in backups::backups(dir).into_iter().rev() {
        let _ = std::fs::remove_dir_all(&trial);
        create_dir(&trial)?;
        let copy = DataDir(&trial).store();
        std::fs::copy(&backup, &copy).map_err(|cause| CheckError::Io {
            action: "copying",
            path: backup.clone(),
            cause,
        })?;
        let intact = Store::open(&trial).is_ok_and(|s| s.integrity(true).is_ok_and(|found| found == ["ok"]));
        if !intact {
            restored.damaged_backups.push(backup);
            continue;
        }
        let target = DataDir(dir).store();
        std::fs::rename(&copy, &target).map_err(|cause| CheckError::Io { action: "restoring", path: target, cause })?;
        restored.backup = Some(backup);
        break;
    }
    let _ = std::fs::remove_dir_all(&trial);
    if restored.backup.is_none() {
        drop(Store::open(dir)?); // an empty store, for the parts to rebuild
    }
    Ok(restored)
}

fn create_dir(dir: &Path) -> Result<(), CheckError> {
    std::fs::create_dir_all(dir).map_err(|cause| CheckError::Io { action: "creating", path: dir.to_path_buf(), cause })
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
    results::for_each_job(&jobs, |job, df, first| {
        let steps = df.column(results::schema::STEP)?.i64()?;
        let in_order = steps.iter().enumerate().all(|(i, s)| s == Some((first + i) as i64));
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

/// Repair what `checked` found in `dir`: damaged parts moved to `<sweep>/damaged/`, the jobs
/// they held and the jobs whose rows are missing queued again, and the summary files of the
/// sweeps touched removed (the next coordinator rebuilds them once the jobs have re-run).
pub fn repair(store: &mut Store, dir: &Path, checked: &Checked) -> Result<Repaired, CheckError> {
    let mut repaired = Repaired::default();
    let mut touched = BTreeSet::new();
    for p in &checked.problems {
        let (Some(sweep), Some(repair)) = (&p.sweep, &p.repair) else { continue };
        if *repair == Repair::Rebuild {
            let (n, skipped) = rebuild_sweep(store, &dir.join(sweep), sweep)?;
            repaired.rebuilt.push((sweep.clone(), n));
            repaired.not_rebuilt.extend(skipped);
            continue;
        }
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

/// Rebuild sweep `sweep` of a store that does not know it from its parts in `sweep_dir`:
/// each job whose spec, read back from its rows, this build validates to the key the rows
/// carry becomes a done job in its part. Answers how many, and why the others were not.
fn rebuild_sweep(store: &mut Store, sweep_dir: &Path, sweep: &str) -> Result<(usize, Vec<String>), CheckError> {
    let registry = crate::registry();
    let mut skipped = Vec::new();
    let mut family: Option<String> = None;
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    let mut in_part: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in results::part_files(sweep_dir)? {
        let specs = match results::read_specs(&path) {
            Ok(specs) => specs,
            Err(e) => {
                skipped.push(format!("{}: unreadable ({e}); `armada check` reports it again", path.display()));
                continue;
            }
        };
        for (key, spec) in specs {
            let valid = match registry.validate(&spec) {
                Ok(valid) if valid.key.0 == key => valid,
                Ok(valid) => {
                    let why =
                        format!("its rows' spec keys to {} in this build (written by another version?)", valid.key);
                    skipped.push(format!("job {key} of {}: {why}", path.display()));
                    continue;
                }
                Err(e) => {
                    // A declared family's declaration was kept in the lost store.
                    skipped.push(format!("job {key} of {}: {e}; resubmit its sweep to run it", path.display()));
                    continue;
                }
            };
            if !seen.insert(key.clone()) {
                continue; // in two parts: `armada check` reports the duplicate
            }
            if family.get_or_insert_with(|| spec.family.clone()) != &spec.family {
                skipped.push(format!("job {key} of {}: of family {}, not the sweep's", path.display(), spec.family));
                continue;
            }
            let template = SpecTemplate::encode(&valid.spec);
            rows.push(StoredJob {
                sweep_id: sweep.into(),
                key: key.clone(),
                ord: rows.len() as i64,
                spec: SpecTemplate::with_seed(&template, valid.spec.seed),
                state: JobState::Done,
                attempts: 0,
                error: None,
            });
            in_part.entry(file_name(&path)).or_default().push(key);
        }
    }
    let Some(family) = family else { return Ok((0, skipped)) };
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let generation = store.begin_submission(sweep, &family, now_ms)?;
    store.add_jobs(sweep, generation, &rows)?;
    store.commit_submission(sweep, generation, &Commit::of(&family))?;
    for (part, keys) in &in_part {
        let jobs: Vec<(Option<(u32, u64)>, &str)> = keys.iter().map(|k| (None, k.as_str())).collect();
        store.commit_jobs(sweep, part, &jobs)?;
    }
    Ok((rows.len(), skipped))
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
