//! What an LSE benchmark owns of a job, apart from any algorithm: the instance (the
//! candidates or the box, the true `f`, the threshold, the GP model the paper fixes, the
//! protocol), its environment streams (the initial point, the observation noise; a sampled
//! `f`, the continuous block's pool and evaluation set, drawn when the instance is built),
//! the observation of a queried point, and the family's metrics of a classification.
//!
//! The built-in episodes ([`crate::FiniteEpisode`], [`crate::ContinuousEpisode`]) run their
//! acquisition rules on it, and so can a method written elsewhere (armada's Python bindings):
//! the same instance, the same noise, the same metrics, so both are compared on common
//! random numbers.

use crate::benchmarks::{uniform, uniform_points, ContinuousConfig, ContinuousProblem, FiniteProblem};
use crate::metrics::ClassificationMetrics;
use armada_core::{JobError, JobStreams, StreamRng};
use armada_gp::Rows;
use armada_math::dist::StandardNormal;
use ndarray::{Array2, ArrayView2};
use rand::Rng;

/// One job's finite benchmark: its instance, its environment streams, and the protocol
/// kept (no candidate observed twice when repeats are off).
pub struct FiniteEnvironment {
    problem: FiniteProblem,
    /// The observation noise, one standard normal per noisy observation.
    noise: StreamRng,
    /// The initial candidate, when the protocol fixes none.
    init: StreamRng,
    /// `observed[i]`: candidate `i` has been observed.
    observed: Vec<bool>,
    n_observed: usize,
}

impl FiniteEnvironment {
    /// The instance of the finite benchmark `benchmark` for a job with these streams.
    pub fn for_benchmark(benchmark: &str, streams: &JobStreams) -> Result<Self, JobError> {
        Ok(Self::new(FiniteProblem::for_benchmark(benchmark, streams)?, streams))
    }

    /// `problem` observed through the job's environment streams `noise` and `init`.
    pub fn new(problem: FiniteProblem, streams: &JobStreams) -> Self {
        let n = problem.f.len();
        FiniteEnvironment {
            problem,
            noise: streams.env("noise"),
            init: streams.env("init"),
            observed: vec![false; n],
            n_observed: 0,
        }
    }

    pub fn problem(&self) -> &FiniteProblem {
        &self.problem
    }

    /// Step 0's candidate: the protocol's fixed one, or a uniform draw from the `init`
    /// stream. Call it once, before any other observation.
    pub fn initial_index(&mut self) -> Result<usize, JobError> {
        let n = self.problem.f.len();
        match self.problem.protocol.initial_index {
            Some(i) if i < n => Ok(i),
            Some(i) => Err(JobError::Invalid(format!("initial index {i} out of range for {n} candidates"))),
            None => Ok(self.init.random_range(0..n)),
        }
    }

    /// Which candidates have been observed so far.
    pub fn observed(&self) -> &[bool] {
        &self.observed
    }

    /// Whether every candidate has been observed (then a protocol without repeats allows
    /// no further observation).
    pub fn all_observed(&self) -> bool {
        self.n_observed == self.observed.len()
    }

    /// The observation of candidate `index`: `f(x) + eps`, `eps ~ N(0, noise_var)` from the
    /// `noise` stream, or `f(x)` exactly when the protocol says so. A candidate out of range,
    /// or observed before when repeats are off, is refused.
    pub fn observe(&mut self, index: usize) -> Result<f64, JobError> {
        let n = self.problem.f.len();
        if index >= n {
            return Err(JobError::Invalid(format!("candidate {index} out of range for {n} candidates")));
        }
        if self.observed[index] && !self.problem.protocol.allow_repeats {
            return Err(JobError::Invalid(format!(
                "candidate {index} is observed already and this benchmark's protocol allows no repeats"
            )));
        }
        let fx = self.problem.f[index];
        let y = if self.problem.protocol.noisy_observations {
            let eps: f64 = self.noise.sample(StandardNormal);
            fx + self.problem.noise_var.sqrt() * eps
        } else {
            fx
        };
        self.n_observed += usize::from(!self.observed[index]);
        self.observed[index] = true;
        Ok(y)
    }

    /// The family's metrics of the classification `upper[i]` (candidate `i` estimated in
    /// the upper set), against the true `f`.
    pub fn metrics(&self, upper: &[bool]) -> Result<ClassificationMetrics, JobError> {
        let n = self.problem.f.len();
        if upper.len() != n {
            return Err(JobError::Invalid(format!(
                "a classification of {} candidates; the benchmark has {n}",
                upper.len()
            )));
        }
        Ok(ClassificationMetrics::of(upper, &self.problem.f, self.problem.theta))
    }
}

/// One job's continuous LSE benchmark (the 5-D box block): the box and its `f`, the pool of
/// candidates offered to every algorithm (environment stream `pool`), the evaluation set the
/// metrics are measured on (stream `evalset`) with `f` on it, and the noise.
pub struct ContinuousEnvironment {
    problem: ContinuousProblem,
    config: ContinuousConfig,
    pool: Array2<f64>,
    eval: Array2<f64>,
    /// The noise-free `f` on the evaluation set.
    eval_f: Vec<f64>,
    noise: StreamRng,
    init: StreamRng,
}

impl ContinuousEnvironment {
    /// Draws the pool and the evaluation set and evaluates `f` on the latter.
    pub fn new(problem: ContinuousProblem, config: ContinuousConfig, streams: &JobStreams) -> Self {
        let (d, lo, hi) = (problem.dim, problem.lo, problem.hi);
        let pool = uniform_points(config.pool_size, d, lo, hi, &mut streams.env("pool"));
        let eval = uniform_points(config.eval_points, d, lo, hi, &mut streams.env("evalset"));
        let eval_f = Rows::new(eval.view()).iter().map(problem.f).collect();
        ContinuousEnvironment {
            problem,
            config,
            pool,
            eval,
            eval_f,
            noise: streams.env("noise"),
            init: streams.env("init"),
        }
    }

    pub fn problem(&self) -> &ContinuousProblem {
        &self.problem
    }

    pub fn config(&self) -> &ContinuousConfig {
        &self.config
    }

    /// The candidate pool `P`, one point per row: every algorithm of the seed gets the same.
    pub fn pool_points(&self) -> ArrayView2<'_, f64> {
        self.pool.view()
    }

    /// The evaluation set `X~`, one point per row.
    pub fn eval_points(&self) -> ArrayView2<'_, f64> {
        self.eval.view()
    }

    /// The noise-free `f` on `X~`.
    pub fn eval_f(&self) -> &[f64] {
        &self.eval_f
    }

    /// Step 0's point: uniform in the box, from the `init` stream. Call it once, first.
    pub fn initial_point(&mut self) -> Vec<f64> {
        let p = &self.problem;
        (0..p.dim).map(|_| uniform(p.lo, p.hi, &mut self.init)).collect()
    }

    /// The observation `f(x) + eps`, `eps ~ N(0, noise_var)` from the `noise` stream, of a
    /// point of the box.
    pub fn observe(&mut self, x: &[f64]) -> Result<f64, JobError> {
        let p = &self.problem;
        if x.len() != p.dim {
            return Err(JobError::Invalid(format!("a point of {} coordinates in a {}-D box", x.len(), p.dim)));
        }
        if let Some(v) = x.iter().find(|v| !(p.lo..=p.hi).contains(*v)) {
            return Err(JobError::Invalid(format!("coordinate {v} is outside the box [{}, {}]", p.lo, p.hi)));
        }
        let eps: f64 = self.noise.sample(StandardNormal);
        Ok((p.f)(x) + p.noise_var.sqrt() * eps)
    }

    /// Whether step `step` of a run of `horizon` steps reports the metrics (every
    /// `metrics_every`-th step and the last; NaN elsewhere, to spare the evaluation set).
    pub fn metrics_due(&self, step: u32, horizon: u32) -> bool {
        step.is_multiple_of(self.config.metrics_every) || step == horizon
    }

    /// The family's metrics of the classification `upper[i]` of the evaluation set's point `i`.
    pub fn metrics(&self, upper: &[bool]) -> Result<ClassificationMetrics, JobError> {
        let n = self.eval_f.len();
        if upper.len() != n {
            return Err(JobError::Invalid(format!(
                "a classification of {} points; the evaluation set has {n}",
                upper.len()
            )));
        }
        Ok(ClassificationMetrics::of(upper, &self.eval_f, self.problem.theta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::Protocol;
    use armada_core::JobSpec;

    fn streams() -> JobStreams {
        JobStreams::new(&JobSpec::new("lse", "himmelblau", "random"))
    }

    /// Noisy observations are `f + sqrt(noise_var) * z` with `z` the `noise` stream's
    /// standard normals in order, whatever candidate is asked.
    #[test]
    fn observations_add_the_noise_streams_normals_in_order() {
        let mut env = FiniteEnvironment::for_benchmark("himmelblau", &streams()).unwrap();
        let mut noise = streams().env("noise");
        let sd = env.problem().noise_var.sqrt();
        for index in [7, 7, 2499, 0] {
            let z: f64 = noise.sample(StandardNormal);
            assert_eq!(env.observe(index).unwrap(), env.problem().f[index] + sd * z);
        }
        assert!(env.observe(2500).is_err());
        let i = env.initial_index().unwrap();
        assert_eq!(i, streams().env("init").random_range(0..2500));
    }

    /// Without repeats, a second observation of a candidate is refused; exact observations
    /// are `f` itself.
    #[test]
    fn the_protocol_is_kept() {
        let mut problem = crate::benchmarks::himmelblau();
        problem.protocol = Protocol::NOISE_FREE_NO_REPEAT;
        let mut env = FiniteEnvironment::new(problem, &streams());
        assert_eq!(env.observe(3).unwrap(), env.problem().f[3]);
        assert!(env.observe(3).unwrap_err().to_string().contains("no repeats"));
        assert!(env.observed()[3] && !env.all_observed());
        assert!(env.metrics(&[true; 3]).is_err());
        let truth: Vec<bool> = env.problem().f.iter().map(|&v| v >= env.problem().theta).collect();
        let m = env.metrics(&truth).unwrap();
        assert_eq!((m.loss, m.fscore, m.max_loss), (0.0, 1.0, 0.0));
    }
}
