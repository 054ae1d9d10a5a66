//! What a finite LSE benchmark owns of a job, apart from any algorithm: the instance (the
//! candidates, the true `f`, the threshold, the GP model the paper fixes, the protocol), its
//! environment streams (the initial candidate, the observation noise; a sampled `f` is drawn
//! when the instance is built), the observation of a queried candidate, and the family's
//! metrics of a classification.
//!
//! The built-in episode ([`crate::FiniteEpisode`]) runs its acquisition rules on it, and so
//! can a method written elsewhere (armada's Python bindings): the same instance, the same
//! noise, the same metrics, so both are compared on common random numbers.

use crate::benchmarks::FiniteProblem;
use crate::metrics::ClassificationMetrics;
use armada_core::{JobError, JobStreams, StreamRng};
use armada_math::dist::StandardNormal;
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
