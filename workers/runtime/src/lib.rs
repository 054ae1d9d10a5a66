//! armada-worker: the worker process's runtime (attempt actors on a blocking pool, leases,
//! heartbeats, the batched record uplink), the wire conversions and the bearer token shared
//! with the coordinator, and the `testkit` family. It runs whatever registry of families
//! it is given; the binary assembles that (`src/families.rs`).
//!
//! The only crate under `workers/` that knows about tokio and gRPC; the family crates stay
//! plain synchronous Rust.

pub mod auth;
pub mod connect;
pub mod heartbeats;
pub mod processor;
pub mod testkit;
pub mod wire;
pub mod worker;

pub use worker::{run_worker, WorkerConfig};
