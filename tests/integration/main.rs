//! armada's integration tests: one binary (one link of polars and the workspace, not one per
//! file), a module per feature. They run the real `armada` binary, worker processes, Python
//! clients, Slurm, podman, Chromium, qemu and network namespaces; `cargo test --test
//! integration distributed::` runs one module's.

mod common;

mod analysis;
mod architecture;
mod bindings;
mod bounded_reads;
mod choices;
mod container;
mod dashboard;
mod declared;
mod distributed;
mod golden;
mod kubernetes;
mod loadgen;
mod network;
mod processors;
mod properties;
mod run_sweep;
mod sdk;
mod slurm;
mod sweep_files;
