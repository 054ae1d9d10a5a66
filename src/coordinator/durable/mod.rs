//! What makes the coordinator's state outlive it: the SQLite store and its backups, the
//! spools that hold running attempts' records, the committer that writes trajectory parts,
//! the live summaries kept beside them, and the catalog of families declared to the store.
//! Above the state layer, below the scheduler.

pub mod backups;
pub mod catalog;
pub mod committer;
pub mod spool;
pub mod store;
pub mod summarizer;
