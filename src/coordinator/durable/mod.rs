//! What makes the coordinator's state outlive it: the SQLite store and its backups, the
//! spools that hold running attempts' records, the committer that writes trajectory parts,
//! the live summaries kept beside them, the catalog of families declared to the store, and
//! the judging of a resolving sweep's rounds.
//! Above the state layer, below the scheduler.

pub mod backups;
pub mod catalog;
pub mod committer;
pub mod job_chunks;
pub mod rounds;
pub mod spool;
pub mod store;
pub mod summarizer;
