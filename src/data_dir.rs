//! The layout of a data directory (`armada serve --data`, `armada run --out`): the one place
//! that names the files a coordinator keeps beside its sweeps' directories.
//!
//! ```text
//! DATA/
//!   armada.sqlite, -wal, -shm    the store (SQLite, write-ahead log)
//!   armada.backups/              the store's periodic online backups
//!   armada.damaged/              damaged stores that `armada check --repair` moved aside
//!   armada.restoring/            a backup on trial during a repair (removed after)
//!   .spool/                      records of running attempts, past what memory holds
//!   <sweep>/                     a sweep's trajectories and summaries (`results`)
//! ```
//!
//! A sweep's name may not start with `armada.` or `.` (`sweep::check_name`), so none of these
//! is a sweep's directory.

use std::path::{Path, PathBuf};

/// A data directory, by its root.
#[derive(Clone, Copy, Debug)]
pub struct DataDir<'a>(pub &'a Path);

impl DataDir<'_> {
    /// The store's file name.
    pub const STORE: &'static str = "armada.sqlite";
    /// What SQLite adds to the store's name for the files it keeps beside it.
    pub const STORE_SUFFIXES: [&'static str; 3] = ["", "-wal", "-shm"];

    /// The store.
    pub fn store(self) -> PathBuf {
        self.0.join(Self::STORE)
    }

    /// The store and the files SQLite keeps beside it (its write-ahead log and shared memory).
    pub fn store_files(self) -> [PathBuf; 3] {
        Self::STORE_SUFFIXES.map(|suffix| self.0.join(format!("{}{suffix}", Self::STORE)))
    }

    /// The size of the store's file and its write-ahead log, in bytes (0 for what is missing).
    pub fn store_bytes(self) -> u64 {
        self.store_files()[..2].iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum()
    }

    /// The store's backups.
    pub fn backups(self) -> PathBuf {
        self.0.join("armada.backups")
    }

    /// Where a repair moves a damaged store.
    pub fn damaged(self) -> PathBuf {
        self.0.join("armada.damaged")
    }

    /// Where a repair tries a backup before it takes it.
    pub fn restoring(self) -> PathBuf {
        self.0.join("armada.restoring")
    }

    /// The records of running attempts that went past memory.
    pub fn spool(self) -> PathBuf {
        self.0.join(".spool")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_is_under_the_root_and_none_can_be_a_sweeps() {
        let dir = DataDir(Path::new("data"));
        let [store, wal, shm] = dir.store_files();
        assert_eq!(store, dir.store());
        assert_eq!((wal.to_str(), shm.to_str()), (Some("data/armada.sqlite-wal"), Some("data/armada.sqlite-shm")));
        for path in [dir.store(), dir.backups(), dir.damaged(), dir.restoring(), dir.spool()] {
            assert_eq!(path.parent(), Some(Path::new("data")));
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(crate::sweep::check_name(name).is_err(), "a sweep could be named {name}");
        }
    }
}
