//! armada: a distributed experiment orchestrator for Bayesian optimisation, active
//! learning and bandit benchmarks.
//!
//! This crate is the command line, the sweep files, the coordinator (gRPC services,
//! scheduler, SQLite store), the in-process runner and the results (Parquet shards and
//! polars summaries). Algorithms live in the family crates under
//! `workers/`, which know nothing of this crate. See ARCHITECTURE.md for the data path.

pub mod check;
pub mod client;
pub mod coordinator;
pub mod data_dir;
pub mod embedded;
pub mod families;
pub mod loadgen;
pub mod local;
pub mod page;
pub mod report;
pub mod results;
pub mod secret;
pub mod shutdown;
pub mod sweep;
#[doc(hidden)]
pub mod testing;

pub use families::registry;
