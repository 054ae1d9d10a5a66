//! The common experiment loop of the finite experiments (spec section 2.1).
//!
//! Step 0 observes one uniformly random initial candidate; step `t` chooses `x_t`
//! from the posterior given everything observed so far, observes `y_t = f(x_t) + eps_t`,
//! updates the GP, and records the metrics of the posterior-mean classification
//! conditioned on all data (one row per number of acquisitions, as the spec recommends).

use crate::algorithms::{Acquisition, Choice};
use crate::benchmarks::FiniteProblem;
use crate::metrics::{average_loss, upper_set_fscore};
use armada_core::{Episode, JobError, JobStreams, MetricDef, MetricKind, StreamRng};
use armada_gp::CandidateCache;
use rand::Rng;
use rand_distr::StandardNormal;

/// The per-step metrics of the family, in record order.
pub const METRICS: [MetricDef; 6] = [
    MetricDef { name: "loss", kind: MetricKind::Float, doc: "average misclassification loss r_t (spec 1.4)" },
    MetricDef { name: "fscore", kind: MetricKind::Float, doc: "F-score of the estimated upper set (spec 1.4)" },
    MetricDef {
        name: "beta_sqrt",
        kind: MetricKind::Float,
        doc: "beta^1/2 used for this step's choice (NaN for step 0, random and us)",
    },
    MetricDef {
        name: "af_max",
        kind: MetricKind::Float,
        doc: "maximum of the acquisition function at this step's choice (NaN for step 0 and random)",
    },
    MetricDef {
        name: "jitter",
        kind: MetricKind::Float,
        doc: "total diagonal jitter the GP needed so far (0 unless a factorisation failed)",
    },
    MetricDef { name: "chosen_index", kind: MetricKind::Int, doc: "candidate index observed at this step" },
];

/// A running finite-set LSE job.
pub struct FiniteEpisode {
    problem: FiniteProblem,
    acquisition: Acquisition,
    cache: CandidateCache,
    noise_rng: StreamRng,
    algo_rng: StreamRng,
    init_rng: StreamRng,
    jitter: f64,
}

impl FiniteEpisode {
    pub fn new(problem: FiniteProblem, acquisition: Acquisition, streams: &JobStreams) -> Self {
        let cache = CandidateCache::new(problem.kernel.clone(), problem.noise_var, problem.candidates.clone());
        FiniteEpisode {
            problem,
            acquisition,
            cache,
            noise_rng: streams.env("noise"),
            init_rng: streams.env("init"),
            algo_rng: streams.algo("acquisition"),
            jitter: 0.0,
        }
    }

    /// Observe candidate `index` with noise, update the posterior, and report the metrics.
    fn observe(&mut self, choice: Choice) -> Result<Vec<f64>, JobError> {
        let eps: f64 = self.noise_rng.sample(StandardNormal);
        let y = self.problem.f[choice.index] + self.problem.noise_var.sqrt() * eps;
        let report = self.cache.observe_candidate(choice.index, y).map_err(|e| JobError::Numerical(e.to_string()))?;
        self.jitter += report.jitter;
        let p = &self.problem;
        Ok(vec![
            average_loss(self.cache.mean(), &p.f, p.theta),
            upper_set_fscore(self.cache.mean(), &p.f, p.theta),
            choice.beta_sqrt,
            choice.af_max,
            self.jitter,
            choice.index as f64,
        ])
    }

    pub fn problem(&self) -> &FiniteProblem {
        &self.problem
    }

    pub fn cache(&self) -> &CandidateCache {
        &self.cache
    }
}

impl Episode for FiniteEpisode {
    fn initial(&mut self) -> Result<Vec<f64>, JobError> {
        let index = self.init_rng.random_range(0..self.problem.f.len());
        self.observe(Choice { index, beta_sqrt: f64::NAN, af_max: f64::NAN })
    }

    fn step(&mut self, step: u32) -> Result<Vec<f64>, JobError> {
        let choice =
            self.acquisition.select(step, self.cache.mean(), self.cache.var(), self.problem.theta, &mut self.algo_rng);
        self.observe(choice)
    }
}
