//! Benchmarks (paper, Experiments section and the appendix's control sets).
pub mod simulators;
pub mod synthetic;
