//! armada-worker: the worker process's runtime (attempt actors on a blocking pool, leases,
//! heartbeats, the batched record uplink) and the `testkit` family. What it shares with the
//! coordinator (wire conversions, the token, dialing, the lease depth) is `armada-proto`'s.
//! It runs whatever registry of families it is given; the binary assembles that
//! (`src/families.rs`).
//!
//! The only crate under `workers/` that knows about tokio and gRPC; the family crates stay
//! plain synchronous Rust.

pub mod processor;
pub mod session;
pub mod testkit;
pub mod worker;

pub use worker::{run_worker, WorkerConfig};
