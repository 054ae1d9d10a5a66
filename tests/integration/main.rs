//! armada's integration tests: one binary (one link of polars and the workspace, not one per
//! file), a module per feature. They run the real `armada` binary, worker processes, Python
//! clients, Slurm, podman, Chromium and network namespaces; `cargo test --test integration
//! distributed::` runs one module's. The numerics' checks, whose runs under qemu load every
//! core for minutes, are a binary of their own (`tests/numerics/`), so that they never run
//! beside these tests' bounded waits.

mod common;

mod analysis;
mod architecture;
mod bindings;
mod bounded_reads;
mod container;
mod dashboard;
mod declared;
mod distributed;
mod kubernetes;
mod loadgen;
mod network;
mod properties;
mod resolve;
mod run_sweep;
mod sdk;
mod slurm;
mod sweep_files;
mod wheels;
