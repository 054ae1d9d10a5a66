//! armada: a distributed experiment orchestrator for Bayesian optimisation, active
//! learning and bandit benchmarks.
//!
//! This crate is the command line, the sweep files, the local runner and the results
//! (Parquet shards and polars summaries). Algorithms live in the family crates under
//! `workers/`, which know nothing of this crate. See ARCHITECTURE.md for the data path.

pub mod local;
pub mod results;
pub mod sweep;

use armada_core::Registry;

/// Every family this build of armada can run.
pub fn registry() -> Registry {
    Registry::new(vec![Box::new(armada_lse::LseFamily)])
}
