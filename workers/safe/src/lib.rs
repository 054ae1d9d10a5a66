//! armada-safe: safe Bayesian optimisation with monotonicity constraints, M-SafeOpt
//! (Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with
//! Monotonicity Constraints", AISTATS 2024).
//!
//! Actions `(s, x)` on a grid, with the safety function g increasing in the scalar s; f is
//! maximised subject to `g <= h`. Independent GPs for f and g (Matern 5/2 ARD, MAP
//! hyperparameters refitted every round, paper Appendix B.2.2), two seed points at s = 0
//! (as the authors' code).
//!
//! * [`benchmarks`]: clinical trial, synthetic 2-D and 3-D, the reconstructed pendulum (paper
//!   Section 5, Appendix B);
//! * [`sets`]: the per-round quantities Q1-Q6 (our labels for paper Section 3, (12)-(22));
//! * [`algorithms`]: M-SafeOpt Cases 1, 2, 3a, 3b, SafeOpt-MC (modified), PredVar (paper
//!   Section 3, Appendix B.2.2);
//! * [`regret`]: `r_t`, `r'_t`, `r^X_t` on the grid (paper Eqs. (1)-(3));
//! * [`SafeEnvironment`]: what the benchmark owns of a job (seeds, noise, regrets), apart
//!   from the rule;
//! * [`surrogate`]: the GPs, MAP refits ([`surrogate::RefitMode`]) and the grid posterior;
//! * [`episode`]: one run and its metrics ([`SafeMetrics`]); [`SafeFamily`]: the registry entry.
//!
//! Metrics per step: `regret_*` (R_t), `regret2_*` (R'_t), `regretx_*` (R^X_t; `_inst`,
//! `_cum`, `_avg` = running mean), `regretx_post_*` (R^X from the post-round posterior, as the
//! notebook), `violations_cum` (true g > h), `uncertified_cum`, the set sizes `certified`,
//! `active_x`, `expanders`, `maximisers`, the action (`s`, `x1`, `x2`, `grid_index`), fitted
//! hyperparameters and `refit_evals`. The `trace` example replays any job (e.g. to draw the
//! discovered boundary of Figures 1 and 3); the `runs` bench times every rule.
//!
//! ```
//! use armada_core::{JobSpec, Registry, run_job};
//! let registry = Registry::new(vec![Box::new(armada_safe::SafeFamily)]);
//! let mut spec = JobSpec::new("safe", "clinical", "msafeopt-case1");
//! spec.benchmark_params.insert("grid".into(), armada_core::ParamValue::Int(20));
//! spec.horizon = 3;
//! let job = registry.validate(&spec).unwrap();
//! let mut n = 0;
//! run_job(&registry, &job, &mut |_| { n += 1; std::ops::ControlFlow::Continue(()) }).unwrap();
//! assert_eq!(n, 4); // step 0 (the seeds) + 3 acquisitions
//! ```

pub mod algorithms;
pub mod benchmarks;
pub mod confidence;
mod environment;
pub mod episode;
mod family;
mod fastexp;
pub mod grid;
pub mod regret;
pub mod sets;
pub mod surrogate;

pub use environment::{RoundScore, SafeEnvironment};
pub use episode::{RunConfig, SafeEpisode, SafeMetrics};
pub use family::{run_config, SafeFamily};
