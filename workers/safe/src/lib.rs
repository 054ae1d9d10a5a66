//! armada-safe: safe Bayesian optimisation with monotonicity constraints (spec `specs/safe_mono.md`).
