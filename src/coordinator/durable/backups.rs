//! The store's periodic online backups, `DATA/armada.backups/armada-<unix ms>.sqlite`, the
//! newest few kept. A damaged store is restored from the newest backup that SQLite finds
//! intact, and what was committed after it is recovered from the trajectory parts on disk
//! (see [`crate::check`]): a part is the commit record of its jobs.

use super::store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where the backups of the store in `data` live (a name no sweep may take).
pub fn backups_dir(data: &Path) -> PathBuf {
    crate::data_dir::DataDir(data).backups()
}

/// How often the store is backed up, and how many backups are kept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackupPolicy {
    /// Zero: never.
    pub every: Duration,
    pub keep: usize,
}

impl Default for BackupPolicy {
    fn default() -> Self {
        BackupPolicy { every: Duration::from_secs(600), keep: 3 }
    }
}

impl BackupPolicy {
    pub fn enabled(&self) -> bool {
        !self.every.is_zero() && self.keep > 0
    }
}

/// The backups in `data`, oldest first.
pub fn backups(data: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(backups_dir(data)) else { return Vec::new() };
    let mut found: Vec<(u128, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ms = name.strip_prefix("armada-")?.strip_suffix(".sqlite")?.parse().ok()?;
            Some((ms, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, path)| path).collect()
}

/// Back `store` (the one of `data`) up as of `now`, written aside and renamed into place so
/// that a backup on disk is always whole; then remove all but the newest `keep`. Answers
/// the new backup.
pub fn take(store: &Store, data: &Path, now: SystemTime, keep: usize) -> Result<PathBuf, StoreError> {
    let dir = backups_dir(data);
    std::fs::create_dir_all(&dir).map_err(|cause| StoreError::Create { path: dir.clone(), cause })?;
    let ms = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let path = dir.join(format!("armada-{ms}.sqlite"));
    let partial = dir.join(format!("armada-{ms}.sqlite.partial"));
    let _ = std::fs::remove_file(&partial);
    store.backup_to(&partial)?;
    std::fs::rename(&partial, &path).map_err(|cause| StoreError::Create { path: path.clone(), cause })?;
    let all = backups(data);
    for old in &all[..all.len().saturating_sub(keep)] {
        let _ = std::fs::remove_file(old);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::durable::store::Commit;

    /// A backup is the store as it was: a copy that opens as a store with the same sweeps,
    /// unaffected by later writes; the newest `keep` are kept, oldest removed first.
    #[test]
    fn backups_are_whole_copies_and_only_the_newest_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut store = Store::open(&data).unwrap();
        store.begin_submission("first", "testkit", 0).unwrap();
        store.commit_submission("first", 0, &Commit::of("testkit")).unwrap();
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        let one = take(&store, &data, at(1), 2).unwrap();
        store.begin_submission("second", "testkit", 0).unwrap();
        store.commit_submission("second", 0, &Commit::of("testkit")).unwrap();
        let two = take(&store, &data, at(2), 2).unwrap();
        let three = take(&store, &data, at(3), 2).unwrap();
        assert_eq!(backups(&data), vec![two.clone(), three]);
        assert!(!one.exists());
        assert_eq!(one.file_name().unwrap(), "armada-1000.sqlite");
        drop(store);
        // A backup opens as a store (elsewhere), holding what the store held then.
        let restored = tempfile::tempdir().unwrap();
        std::fs::copy(&two, restored.path().join("armada.sqlite")).unwrap();
        let copy = Store::open(restored.path()).unwrap();
        assert_eq!(copy.integrity(true).unwrap(), ["ok"]);
        let ids: Vec<String> = copy.sweeps().unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(ids, ["first", "second"]);
        assert!(!two.with_extension("sqlite-wal").exists(), "a backup is one file");
    }
}
