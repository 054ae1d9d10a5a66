//! One run (spec §3 "PLAY", §2.6, §2.7, §1.2): the initial design, then one play per step until
//! the budget is spent, with the metrics of every step.
//!
//! Budget (spec §2.7 [RESOLVED]): play while `spent < C`; the last play may overshoot. With
//! `budget_rule = strict` the realised cost is drawn before playing and the run stops without
//! playing if it exceeds the remainder. The episode ends once the budget is spent (the family
//! declares `ends_early`): `horizon` is an upper bound on the number of plays, and every row
//! after step 0 is a play.

use armada_core::{Episode, JobError, JobStreams, StreamRng};
use ndarray::{aview1, Array2};

use crate::algorithms::{Algorithm, Choice, Context, Phase, PlayStats};
use crate::problem::{Problem, N_INIT};
use crate::surrogate::{full_query, GpConfig, SetCache, SigmaMode, Surrogate};

/// Quality-regret tolerance of the `quality_regret` metric (spec §1.2, §5.3 optional extra).
pub const METRIC_ALPHA: f64 = 0.1;

armada_core::metrics! {
    /// The per-step metrics of the family.
    pub struct CvsMetrics {
        n_evals: usize = "plays so far (the iteration counter t; the initial design is not counted)",
        cum_cost: f64 = "cumulative realised cost after this step",
        simple_regret: f64 = "f* - max over plays so far of F_i(x^i) (oracle best-so-far, spec 1.2); NaN at step 0",
        best_value: f64 = "max over plays so far of F_i(x^i); NaN at step 0",
        value: f64 = "F_i(x^i) of this play: the expectation over the random part on the fixed evaluation set",
        quality_regret: f64 = "cumulative sum of (1 - 0.1) f* - F_i(x^i) (spec 1.2, alpha = 0.1, no shift)",
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

armada_core::choice! {
    /// How a run treats the last play (spec §2.7).
    pub enum BudgetRule {
        /// the last play may overshoot the budget
        Overshoot = "overshoot",
        /// stop before a play that would overshoot it
        Strict = "strict",
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
    problem: Problem,
    budget_rule: BudgetRule,
    algorithm: Box<dyn Algorithm>,
    surrogate: Surrogate,
    samples: Array2<f64>,
    caches: Vec<SetCache>,
    sigma_mode: SigmaMode,
    stats: PlayStats,
    init_rng: StreamRng,
    inputs_rng: StreamRng,
    noise_rng: StreamRng,
    cost_rng: StreamRng,
    algo_rng: StreamRng,
    best_value: f64,
    quality_regret: f64,
    cost_regret: f64,
    done: bool,
}

impl CvsEpisode {
    /// Environment streams (initial design, random parts, noise, costs, and the MC set `S`,
    /// spec §5.1) are common to every algorithm of a seed; the optimiser's and Thompson
    /// sampling's draws come from the algorithm's stream.
    pub fn new(
        problem: Problem,
        budget_rule: BudgetRule,
        algorithm: Box<dyn Algorithm>,
        mc: McConfig,
        streams: &JobStreams,
    ) -> Self {
        let mut mc_rng = streams.env("mc-samples");
        let samples: Vec<f64> = (0..mc.n_mc).flat_map(|_| problem.draw_inputs(&mut mc_rng)).collect();
        let samples = Array2::from_shape_vec((mc.n_mc, problem.dim), samples).expect("n_mc draws of every variable");
        let surrogate = Surrogate::new(GpConfig::default(), problem.dim);
        let caches = problem
            .sets
            .iter()
            .map(|c| SetCache::with_mode(problem.dim, c, mc.n_mc, mc.n_sigma, mc.sigma_mode))
            .collect();
        Self {
            stats: PlayStats::new(problem.n_sets()),
            problem,
            budget_rule,
            algorithm,
            surrogate,
            samples,
            caches,
            sigma_mode: mc.sigma_mode,
            init_rng: streams.env("initial-design"),
            inputs_rng: streams.env("random-inputs"),
            noise_rng: streams.env("observation-noise"),
            cost_rng: streams.env("cost-noise"),
            algo_rng: streams.algo("optimiser"),
            best_value: f64::NAN,
            quality_regret: 0.0,
            cost_regret: 0.0,
            done: false,
        }
    }

    pub fn stats(&self) -> &PlayStats {
        &self.stats
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    fn row(&self, choice: Option<&Choice>, value: f64, cost: f64, y: f64) -> CvsMetrics {
        let d = choice.map(|c| c.diagnostics).unwrap_or_default();
        CvsMetrics {
            n_evals: self.stats.t,
            cum_cost: self.stats.spent,
            simple_regret: self.problem.f_star - self.best_value,
            best_value: self.best_value,
            value,
            quality_regret: self.quality_regret,
            cost_regret: self.cost_regret,
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
        for _ in 0..N_INIT {
            let x: Vec<f64> = (0..self.problem.dim).map(|_| rand::Rng::random(&mut self.init_rng)).collect();
            let y = self.problem.observe(aview1(&x), &mut self.noise_rng);
            self.surrogate.add(aview1(&x), y)?;
        }
        Ok(self.row(None, f64::NAN, 0.0, f64::NAN))
    }

    fn step(&mut self, _step: u32) -> Result<Option<CvsMetrics>, JobError> {
        if self.done || self.stats.spent >= self.problem.budget {
            self.done = true;
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
            problem: &self.problem,
            post: &post,
            samples: self.samples.view(),
            caches: &self.caches,
            observed_x,
            observed_y,
            gp_noise_var: self.surrogate.config().noise_var,
            stats: &self.stats,
            rng: &mut self.algo_rng,
        };
        let choice = self.algorithm.choose(&mut ctx)?;
        let cost = self.problem.realised_cost(choice.set, &mut self.cost_rng);
        if self.budget_rule == BudgetRule::Strict && cost > self.problem.budget - self.stats.spent {
            self.done = true;
            return Ok(None);
        }
        // PLAY: a fresh random part, a noisy observation, the realised cost.
        let ctrl = &self.problem.sets[choice.set];
        let x = full_query(ctrl, &choice.x_ctrl, &self.problem.draw_inputs(&mut self.inputs_rng));
        let y = self.problem.observe(aview1(&x), &mut self.noise_rng);
        self.surrogate.add(aview1(&x), y)?;
        self.stats.record(choice.set, cost);
        let value = self.problem.expected_value(choice.set, aview1(&choice.x_ctrl));
        self.best_value = if self.best_value.is_nan() { value } else { self.best_value.max(value) };
        self.quality_regret += (1.0 - METRIC_ALPHA) * self.problem.f_star - value;
        let target = self.problem.objective.target_set();
        self.cost_regret += (self.problem.costs[choice.set] - self.problem.costs[target]).max(0.0);
        self.done = self.stats.spent >= self.problem.budget;
        Ok(Some(self.row(Some(&choice), value, cost, y)))
    }
}

/// Whether `phase` marks an exploration play (for tests and analyses).
pub fn is_explore(phase: f64) -> bool {
    phase == Phase::Explore as u8 as f64
}
