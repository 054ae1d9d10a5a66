//! armada-cvs: Bayesian optimisation with unknown cost-varying variable subsets
//! (Hoang, Nguyen & Tran, AAAI 2025; arXiv:2412.15863).
//!
//! A learner picks a control set `I_i` of the inputs and values for them; the environment
//! draws the other inputs from truncated normals and charges a random, unknown cost. The
//! family holds the problem model ([`problem`]), the GP surrogate with factorised Monte Carlo
//! expectations over the random inputs ([`surrogate`], [`acquisition`]), the inner maximiser
//! ([`maximize`]; an iteration's sets on more threads only when asked, [`parallel`]), the benchmarks of
//! the paper's Experiments section ([`benchmarks`]), the algorithms ([`algorithms`]: the proposed method in
//! paper and code mode, UCB-PSQ, TS-PSQ, ETC, UCB-CVS) and the episode that plays them until
//! the budget is spent ([`episode`]).
//!
//! ```
//! use armada_core::{JobSpec, Registry, run_job};
//! let registry = Registry::new(vec![Box::new(armada_cvs::CvsFamily)]);
//! let mut spec = JobSpec::new("cvs", "plant", "ucb-psq");
//! spec.benchmark_params.insert("budget".into(), armada_core::ParamValue::Float(2.0));
//! spec.algorithm_params.insert("n_warmup_full".into(), armada_core::ParamValue::Int(100));
//! spec.horizon = 5;
//! let job = registry.validate(&spec).unwrap();
//! let mut rows = Vec::new();
//! run_job(&registry, &job, &mut |r| { rows.push(r); std::ops::ControlFlow::Continue(()) }).unwrap();
//! // Step 0, then two plays of the full set (cost about 1 each): the budget is spent, and the
//! // run ends before its horizon of 5.
//! assert_eq!(rows.len(), 3);
//! ```

pub mod acquisition;
pub mod algorithms;
pub mod benchmarks;
pub mod environment;
pub mod episode;
pub mod family;
pub mod maximize;
pub mod parallel;
pub mod problem;
pub mod refit;
pub mod special;
pub mod surrogate;
pub mod truncnorm;

pub use family::CvsFamily;
