//! The common experiment loop of the finite experiments (paper Algorithm 1, Section 5.1).
//!
//! Step 0 observes one uniformly random initial candidate (or the problem's fixed one,
//! Figure 2); step `t` chooses `x_t` from the posterior given everything observed so far,
//! observes `y_t = f(x_t) + eps_t` (or `f(x_t)` exactly, paper Section 5.3), updates the GP, and
//! records the metrics of the posterior-mean classification conditioned on all data (one row
//! per number of acquisitions). Without repeats (paper Section 5.3) observed candidates
//! are excluded from every choice.
//!
//! The posterior is the O(n N) mean/variance cache, or the O(N^2) full covariance when the
//! acquisition reads covariance rows (MILE).

use crate::algorithms::max_value::{choose_returned, max_value_loss};
use crate::algorithms::{Acquisition, Choice, PosteriorView};
use crate::benchmarks::FiniteProblem;
use crate::environment::FiniteEnvironment;
use crate::metrics::{average_loss, upper_set, Returned};
use armada_core::{Episode, JobError, JobStreams, StreamRng};
use armada_gp::{CandidateCache, CandidateCovariance, GpError, JitterReport};

armada_core::metrics! {
    /// The per-step metrics of the family.
    pub struct LseMetrics {
        loss: f64 = "average misclassification loss r_t",
        fscore: f64 = "F-score of the estimated upper set",
        beta_sqrt: f64 = "beta^1/2 used for this step's choice (NaN for step 0, random and us)",
        af_max: f64 = "maximum of the acquisition function at this step's choice (NaN for step 0 and random)",
        jitter: f64 = "total diagonal jitter the GP needed so far (0 unless a factorisation failed)",
        chosen_index: i64 = "candidate index observed at this step; continuous benchmarks: the pool index when the \
                             observed point is exactly a pool point (unpolished argmax), -1 for a polished, random or \
                             initial point",
        y: f64 = "the value observed at this step's point (with the benchmark's noise, if any): with chosen_index \
                  or the point, a trajectory holds the data the posterior was fitted to",
        max_loss: f64 = "max-value loss: the largest |f(x) - theta| over misclassified x",
        returned_step: Option<usize> =
            "rand-straddle-max, last step only: the step whose classification Algorithm 2 or 3 returns (eq. A.2)",
        returned_loss: f64 = "rand-straddle-max, last step only: average loss of the returned classification",
        returned_max_loss: f64 =
            "rand-straddle-max, last step only: max-value loss of the returned classification",
    }
}

/// The posterior an episode keeps on the candidate set.
#[derive(Clone, Debug)]
pub enum CandidatePosterior {
    /// Mean and variance only, O(n N) per observation: every rule but MILE.
    Cache(CandidateCache),
    /// Mean and the full N x N covariance, O(N^2) per observation: MILE.
    Full(CandidateCovariance),
}

impl CandidatePosterior {
    /// The cheapest posterior that `acquisition` can work with.
    pub fn for_acquisition(acquisition: &Acquisition, problem: &FiniteProblem) -> Self {
        Self::of_model(problem, acquisition.needs_covariance())
    }

    /// The prior of the problem's GP model on its candidates: the full covariance with
    /// `covariance`, else mean and variance only.
    pub fn of_model(problem: &FiniteProblem, covariance: bool) -> Self {
        let (kernel, noise, cands) = (problem.kernel.clone(), problem.noise_var, problem.candidates.clone());
        if covariance {
            CandidatePosterior::Full(CandidateCovariance::new(kernel, noise, cands))
        } else {
            CandidatePosterior::Cache(CandidateCache::new(kernel, noise, cands))
        }
    }

    pub fn mean(&self) -> &[f64] {
        match self {
            CandidatePosterior::Cache(c) => c.mean(),
            CandidatePosterior::Full(c) => c.mean(),
        }
    }

    pub fn var(&self) -> &[f64] {
        match self {
            CandidatePosterior::Cache(c) => c.var(),
            CandidatePosterior::Full(c) => c.var(),
        }
    }

    pub fn observe_candidate(&mut self, j: usize, y: f64) -> Result<JitterReport, GpError> {
        match self {
            CandidatePosterior::Cache(c) => c.observe_candidate(j, y),
            CandidatePosterior::Full(c) => c.observe_candidate(j, y),
        }
    }

    /// What the acquisition rules read.
    pub fn view(&self) -> PosteriorView<'_> {
        match self {
            CandidatePosterior::Cache(c) => PosteriorView::new(c.mean(), c.var()),
            CandidatePosterior::Full(c) => PosteriorView::full(c),
        }
    }
}

/// A running finite-set LSE job.
pub struct FiniteEpisode {
    /// The benchmark's part: the instance, its noise and initial point, the metrics.
    environment: FiniteEnvironment,
    acquisition: Acquisition,
    posterior: CandidatePosterior,
    algo_rng: StreamRng,
    mc_rng: StreamRng,
    jitter: f64,
    horizon: u32,
    /// Algorithm 2 only: the classification `mu >= theta` recorded at every step, the
    /// candidates for the returned classification.
    history: Option<Vec<Vec<bool>>>,
    /// Algorithm 2's choice, made at the last step before its observation.
    returned: Option<Returned>,
}

impl FiniteEpisode {
    /// `horizon` is the job's last step (Algorithm 2 makes its Monte-Carlo choice there).
    pub fn new(problem: FiniteProblem, acquisition: Acquisition, streams: &JobStreams, horizon: u32) -> Self {
        Self::on(FiniteEnvironment::new(problem, streams), acquisition, streams, horizon)
    }

    /// [`FiniteEpisode::new`] on an environment built already.
    pub fn on(environment: FiniteEnvironment, acquisition: Acquisition, streams: &JobStreams, horizon: u32) -> Self {
        let posterior = CandidatePosterior::for_acquisition(&acquisition, environment.problem());
        let mc_paths = match acquisition {
            Acquisition::RandomizedStraddleMax { mc_paths, .. } => Some(mc_paths),
            _ => None,
        };
        FiniteEpisode {
            environment,
            acquisition,
            posterior,
            mc_rng: streams.algo("returned-classification"),
            algo_rng: streams.algo("acquisition"),
            jitter: 0.0,
            horizon,
            history: mc_paths.map(|_| Vec::new()),
            returned: None,
        }
    }

    /// Observe candidate `index` (with noise unless the protocol says exact), update the
    /// posterior, and report the metrics of its mean's classification.
    fn observe(&mut self, choice: Choice) -> Result<LseMetrics, JobError> {
        let y = self.environment.observe(choice.index)?;
        let report =
            self.posterior.observe_candidate(choice.index, y).map_err(|e| JobError::Numerical(e.to_string()))?;
        self.jitter += report.jitter;
        let upper = upper_set(self.posterior.mean(), self.environment.problem().theta);
        let metrics = self.environment.metrics(&upper)?;
        let returned = self.returned.take();
        let values = LseMetrics {
            loss: metrics.loss,
            fscore: metrics.fscore,
            beta_sqrt: choice.beta_sqrt,
            af_max: choice.af_max,
            jitter: self.jitter,
            chosen_index: choice.index as i64,
            y,
            max_loss: metrics.max_loss,
            returned_step: returned.map(|r| r.step),
            returned_loss: returned.map_or(f64::NAN, |r| r.loss),
            returned_max_loss: returned.map_or(f64::NAN, |r| r.max_loss),
        };
        if let Some(history) = &mut self.history {
            history.push(upper);
        }
        Ok(values)
    }

    /// Algorithm 2's returned classification (Appendix A.1, Eq. (A.2)): among the classifications of
    /// steps `0..T-1` (the paper's `H_1..H_T`), the one with the least mean max-value loss
    /// over `mc_paths` joint sample paths of the posterior given `D_{T-1}` (the current one).
    fn choose_returned(&mut self, mc_paths: usize) -> Result<(), JobError> {
        let (Some(history), CandidatePosterior::Cache(cache)) = (&self.history, &self.posterior) else {
            return Ok(());
        };
        let (paths, _) = armada_gp::sample_posterior(cache.gp(), cache.candidates(), mc_paths, &mut self.mc_rng)
            .map_err(|e| JobError::Numerical(format!("sampling posterior paths for Algorithm 2: {e}")))?;
        let samples: Vec<Vec<f64>> = (0..paths.ncols()).map(|j| paths.col_as_slice(j).to_vec()).collect();
        let p = self.environment.problem();
        let (step, _) = choose_returned(history, &samples, p.theta);
        let upper = &history[step];
        self.returned = Some(Returned {
            step,
            loss: average_loss(upper, &p.f, p.theta),
            max_loss: max_value_loss(upper, &p.f, p.theta),
        });
        Ok(())
    }

    pub fn problem(&self) -> &FiniteProblem {
        self.environment.problem()
    }

    pub fn posterior(&self) -> &CandidatePosterior {
        &self.posterior
    }

    /// Which candidates have been queried so far.
    pub fn observed(&self) -> &[bool] {
        self.environment.observed()
    }
}

impl Episode for FiniteEpisode {
    type Metrics = LseMetrics;

    fn initial(&mut self) -> Result<LseMetrics, JobError> {
        let index = self.environment.initial_index()?;
        self.observe(Choice { index, beta_sqrt: f64::NAN, af_max: f64::NAN })
    }

    fn step(&mut self, step: u32) -> Result<Option<LseMetrics>, JobError> {
        if step == self.horizon {
            if let Acquisition::RandomizedStraddleMax { mc_paths, .. } = self.acquisition {
                self.choose_returned(mc_paths)?;
            }
        }
        let env = &self.environment;
        let excluded = if env.problem().protocol.allow_repeats {
            None
        } else if env.all_observed() {
            return Err(JobError::Invalid(format!(
                "step {step}: all {} candidates are observed and repeats are off",
                env.observed().len()
            )));
        } else {
            Some(env.observed())
        };
        let theta = env.problem().theta;
        let choice = self.acquisition.select_in(step, self.posterior.view(), theta, excluded, &mut self.algo_rng);
        self.observe(choice).map(Some)
    }
}
