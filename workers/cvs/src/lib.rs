//! armada-cvs: Bayesian optimisation with unknown cost-varying variable subsets (spec `specs/bocvs.md`).
