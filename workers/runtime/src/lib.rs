//! armada-worker: the worker process's runtime (attempt actors on a blocking pool, leases,
//! heartbeats, the batched record uplink), the wire conversions and the bearer token shared
//! with the coordinator, and the registry of every family this build can run.
//!
//! The only crate under `workers/` that knows about tokio and gRPC; the family crates stay
//! plain synchronous Rust.

pub mod auth;
pub mod connect;
pub mod testkit;
pub mod wire;
pub mod worker;

pub use worker::{run_worker, WorkerConfig};

use armada_core::Registry;

/// Every family this build of armada can run (coordinator and workers must agree).
pub fn registry() -> Registry {
    Registry::new(vec![
        Box::new(armada_lse::LseFamily),
        Box::new(armada_bandits::BanditsFamily),
        Box::new(armada_bandits::LipschitzFamily),
        Box::new(armada_bandits::LipschitzCheckFamily),
        Box::new(armada_safe::SafeFamily),
        Box::new(armada_cvs::CvsFamily),
        Box::new(testkit::TestkitFamily),
    ])
}
