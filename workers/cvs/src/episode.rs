//! One run (the setting of the paper's Problem Definition): the initial design, then one play
//! per step until the budget is spent, with the metrics of every step.
//!
//! Budget: the paper stops once the remainder is below the next cost, which is known only after
//! paying; so, by default, play while `spent < C`; the last play may overshoot. With
//! `budget_rule = strict` the realised cost is drawn before playing and the run stops without
//! playing if it exceeds the remainder. The episode ends once the budget is spent (the family
//! declares `ends_early`): `horizon` is an upper bound on the number of plays, and every row
//! after step 0 is a play.

use armada_core::{Episode, JobError, JobStreams, StreamRng};
use ndarray::{aview1, Array2};

use crate::algorithms::{Algorithm, Choice, Context, Phase, PlayStats};
pub use crate::environment::{BudgetRule, CvsEnvironment, METRIC_ALPHA};
use crate::problem::Problem;
use crate::surrogate::{GpConfig, SetCache, SigmaMode, Surrogate};

armada_core::metrics! {
    /// The per-step metrics of the family.
    pub struct CvsMetrics {
        n_evals: usize = "plays so far (the iteration counter t; the initial design is not counted)",
        cum_cost: f64 = "cumulative realised cost after this step",
        simple_regret: f64 = "f* - max over plays so far of F_i(x^i) (oracle best-so-far); NaN at step 0",
        best_value: f64 = "max over plays so far of F_i(x^i); NaN at step 0",
        value: f64 = "F_i(x^i) of this play: the expectation over the random part on the fixed evaluation set",
        quality_regret: f64 = "cumulative sum of (1 - 0.1) f* - F_i(x^i) (alpha = 0.1, no shift)",
        cost_regret: f64 = "cumulative sum of max(c_i - c_{i*}, 0) with mean costs, i* the cheapest 0.1-acceptable set",
        set: usize = "1-based index of the chosen control set (0 at step 0)",
        phase: u32 = "0 single-phase method or step 0, 1 exploration, 2 exploitation / commit",
        cost: f64 = "realised cost of this play",
        y: f64 = "noisy observation of this play",
        alpha: f64 = "proposed, paper mode: tolerance alpha of this exploitation step (NaN otherwise)",
        lcb_bar: f64 = "proposed: running max of the expected LCB (code mode: Lmax); NaN otherwise",
        threshold: f64 = "proposed, paper mode: shift + (1 - alpha)(lcb_bar - shift)",
        n_s1: usize = "proposed: size of S1 (code mode: of the feasible set F)",
        n_s3: usize = "proposed, paper mode: size of S3",
        etc_group: usize = "ETC: 1-based group of this play, n_groups + 1 once committed; 0 otherwise",
    }
}

/// Sizes of the Monte Carlo sets of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McConfig {
    /// `N`, samples for `E_hat[mu]` (and Thompson samples).
    pub n_mc: usize,
    /// Samples (the first of the `N`) for `E_hat[sigma]`.
    pub n_sigma: usize,
    pub sigma_mode: SigmaMode,
}

pub struct CvsEpisode {
    /// The benchmark's part: the problem, its draws, the plays' metrics.
    env: CvsEnvironment,
    algorithm: Box<dyn Algorithm>,
    surrogate: Surrogate,
    samples: Array2<f64>,
    caches: Vec<SetCache>,
    sigma_mode: SigmaMode,
    algo_rng: StreamRng,
}

impl CvsEpisode {
    /// Environment streams (initial design, random parts, noise, costs, and the MC set `S`)
    /// are common to every algorithm of a seed; the optimiser's and Thompson
    /// sampling's draws come from the algorithm's stream.
    pub fn new(
        problem: Problem,
        budget_rule: BudgetRule,
        algorithm: Box<dyn Algorithm>,
        mc: McConfig,
        streams: &JobStreams,
    ) -> Self {
        let mut env = CvsEnvironment::new(problem, budget_rule, streams);
        let samples = env.mc_samples(mc.n_mc);
        let problem = env.problem();
        let surrogate = Surrogate::new(GpConfig::default(), problem.dim);
        let caches = problem
            .sets
            .iter()
            .map(|c| SetCache::with_mode(problem.dim, c, mc.n_mc, mc.n_sigma, mc.sigma_mode))
            .collect();
        Self {
            env,
            algorithm,
            surrogate,
            samples,
            caches,
            sigma_mode: mc.sigma_mode,
            algo_rng: streams.algo("optimiser"),
        }
    }

    pub fn stats(&self) -> &PlayStats {
        self.env.stats()
    }

    pub fn is_done(&self) -> bool {
        self.env.is_done()
    }

    fn row(&self, choice: Option<&Choice>, value: f64, cost: f64, y: f64) -> CvsMetrics {
        let d = choice.map(|c| c.diagnostics).unwrap_or_default();
        let env = &self.env;
        CvsMetrics {
            n_evals: env.stats().t,
            cum_cost: env.stats().spent,
            simple_regret: env.simple_regret(),
            best_value: env.best_value(),
            value,
            quality_regret: env.quality_regret(),
            cost_regret: env.cost_regret(),
            set: choice.map_or(0, |c| c.set + 1),
            phase: choice.map_or(0, |c| c.phase as u32),
            cost,
            y,
            alpha: d.alpha,
            lcb_bar: d.lcb_bar,
            threshold: d.threshold,
            n_s1: d.n_s1,
            n_s3: d.n_s3,
            etc_group: d.group,
        }
    }
}

impl Episode for CvsEpisode {
    type Metrics = CvsMetrics;

    fn initial(&mut self) -> Result<CvsMetrics, JobError> {
        for (x, y) in self.env.initial_design() {
            self.surrogate.add(aview1(&x), y)?;
        }
        Ok(self.row(None, f64::NAN, 0.0, f64::NAN))
    }

    fn step(&mut self, _step: u32) -> Result<Option<CvsMetrics>, JobError> {
        if self.env.is_done() {
            return Ok(None);
        }
        let mut post = self.surrogate.posterior();
        if self.sigma_mode == SigmaMode::Rms {
            post = post.with_inverse();
        }
        for cache in &mut self.caches {
            cache.update(&post, self.samples.view());
        }
        let (observed_x, observed_y) = self.surrogate.data();
        let mut ctx = Context {
            problem: self.env.problem(),
            post: &post,
            samples: self.samples.view(),
            caches: &self.caches,
            observed_x,
            observed_y,
            gp_noise_var: self.surrogate.config().noise_var,
            stats: self.env.stats(),
            rng: &mut self.algo_rng,
        };
        let choice = self.algorithm.choose(&mut ctx)?;
        // PLAY: the realised cost, a fresh random part, a noisy observation.
        let Some(play) = self.env.play(choice.set, &choice.x_ctrl)? else {
            return Ok(None);
        };
        self.surrogate.add(aview1(&play.x), play.y)?;
        Ok(Some(self.row(Some(&choice), play.value, play.cost, play.y)))
    }
}

/// Whether `phase` marks an exploration play (for tests and analyses).
pub fn is_explore(phase: f64) -> bool {
    phase == Phase::Explore as u8 as f64
}
