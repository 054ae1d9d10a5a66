//! Benchmarks (spec §4).
pub mod simulators;
pub mod synthetic;
