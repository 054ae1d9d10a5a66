//! armada-lse: level-set estimation with the randomized straddle
//! (Inatsu, Takeno, Kutsukake, Takeuchi, arXiv:2408.03144).
//!
//! Given a threshold `theta`, estimate the upper set `H* = {x : f(x) >= theta}` of an
//! expensive black box from noisy queries. Every method classifies by the posterior
//! mean (`H_t = {mu_{t-1} >= theta}`) and differs only in its acquisition function.
//!
//! This crate holds the finite blocks: the 2-D benchmarks of the paper's section 5.1
//! ([`benchmarks::sinusoidal`], [`benchmarks::himmelblau`] and a fresh GP sample path
//! per seed), the stand-in for the carrier-lifetime map of section 5.3
//! ([`benchmarks::carrier_lifetime`]: exact observations, no re-observation) and the 1-D
//! toy of Figure 2 ([`benchmarks::toy_1d`]); the continuous 5-D block of section 5.2
//! ([`benchmarks::ContinuousProblem`], run by [`ContinuousEpisode`]: AF argmax over a random
//! pool, metrics on a random evaluation set; no MILE); and the algorithms Random, US,
//! Straddle, LSE, MILE and the proposed randomized straddle. It is plain synchronous Rust: run an episode
//! directly in tests.
//!
//! ```
//! use armada_core::{Family, JobSpec, Registry, run_job};
//! let registry = Registry::new(vec![Box::new(armada_lse::LseFamily)]);
//! let mut spec = JobSpec::new("lse", "sinusoidal", "rand-straddle");
//! spec.horizon = 5;
//! let job = registry.validate(&spec).unwrap();
//! let mut n = 0;
//! run_job(&registry, &job, &mut |_| { n += 1; std::ops::ControlFlow::Continue(()) }).unwrap();
//! assert_eq!(n, 6); // step 0 (the initial point) + 5 acquisitions
//! ```

pub mod algorithms;
pub mod benchmarks;
mod continuous_episode;
mod environment;
mod episode;
pub mod metrics;

pub use benchmarks::uniform_points;
pub use continuous_episode::{
    continuous_acquisition, nelder_mead_box, predict_one, ContinuousEpisode, EvalSetMean, PolishStart, Polished,
};
pub use environment::{ContinuousEnvironment, FiniteEnvironment};
pub use episode::{CandidatePosterior, FiniteEpisode, LseMetrics};

use algorithms::{Acquisition, ALGORITHMS};
use armada_core::{AnyEpisode, Declaration, Family, JobError, JobSpec, JobStreams, SpecError, ValidJob};
use benchmarks::BENCHMARKS;

/// The `lse` family as the registry sees it.
pub struct LseFamily;

const DECLARATION: Declaration = Declaration {
    name: "lse",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 5,
    doc: "level-set estimation with the randomized straddle (Inatsu et al., arXiv:2408.03144)",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: LseMetrics::DEFS,
    ends_early: false,
    headline_metrics: &["loss", "fscore"],
    summary_axes: &[],
};

impl Family for LseFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }

    /// The continuous block runs only the methods that apply to a box (Section 5.2), with
    /// consistent pool and polishing sizes.
    fn check(&self, spec: &JobSpec) -> Result<(), SpecError> {
        self.check_benchmark(spec)?;
        if let Some(problem) = benchmarks::ContinuousProblem::by_name(&spec.benchmark) {
            continuous_episode::continuous_acquisition(&spec.algorithm, &spec.algorithm_params, &problem)
                .map_err(|e| SpecError::new("algorithm", invalid_message(e)))?;
        }
        Ok(())
    }

    fn check_benchmark(&self, spec: &JobSpec) -> Result<(), SpecError> {
        if benchmarks::ContinuousProblem::by_name(&spec.benchmark).is_some() {
            let config: benchmarks::ContinuousConfig =
                spec.benchmark_params.parse().map_err(|e| SpecError::new("benchmark_params", invalid_message(e)))?;
            config.check().map_err(|e| SpecError::new("benchmark_params.polish_top_k", invalid_message(e)))?;
        }
        Ok(())
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let spec = &job.spec;
        if let Some(problem) = benchmarks::ContinuousProblem::by_name(&spec.benchmark) {
            return continuous_episode::start(job, streams, problem);
        }
        let environment = FiniteEnvironment::for_benchmark(&spec.benchmark, streams)?;
        let n = environment.problem().f.len();
        let acquisition = Acquisition::from_params(&spec.algorithm, &spec.algorithm_params, n)?;
        Ok(Box::new(FiniteEpisode::on(environment, acquisition, streams, spec.horizon)))
    }
}

/// A job error's message as a validation error says it.
fn invalid_message(e: JobError) -> String {
    match e {
        JobError::Invalid(m) => m,
        other => other.to_string(),
    }
}
