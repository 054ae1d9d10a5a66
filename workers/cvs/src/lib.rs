//! armada-cvs: Bayesian optimisation with unknown cost-varying variable subsets (spec `specs/bocvs.md`).

pub mod benchmarks;
pub mod special;
pub mod surrogate;
pub mod truncnorm;
