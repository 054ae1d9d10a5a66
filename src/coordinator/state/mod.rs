//! What the coordinator knows, in memory and without I/O: the pure state machines (the job
//! table, the sweeps, the worker sessions, a submission on its way in, restart recovery),
//! the types they answer in, and the counters `/metrics` reads. Nothing here reads a clock
//! or touches a file: a transition takes `now` and returns the effects the scheduler carries
//! out. The lowest layer: it imports no other.

pub mod declared;
pub mod ingest;
pub mod job_table;
pub mod jobs;
pub mod metrics;
pub mod queue;
pub mod recovery;
pub mod replies;
pub mod sessions;
pub mod stored;
pub mod sweeps;
pub mod trouble;
