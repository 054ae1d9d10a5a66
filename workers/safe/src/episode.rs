//! One run (paper Algorithm 1; seeds and metrics as the authors' code): two seed points at
//! s = 0 with x uniform in `D_X`, MAP fit of both GPs, then T rounds of: bounds on the grid,
//! the rule's choice, metrics against the true functions, observation (plus noise), refit,
//! new posterior.
//!
//! Randomness: the seed points, the observation noise and the initial hyperparameter fit come
//! from environment streams (common to every algorithm of a seed); the per-round multi-start
//! draws from the algorithm's own streams.

use crate::algorithms::{AlgoState, Algorithm};
use crate::benchmarks::Benchmark;
use crate::confidence::Confidence;
use crate::environment::SafeEnvironment;
use crate::sets::RoundSets;
use crate::surrogate::{RefitMode, Surrogate};
use armada_core::{Episode, JobError, JobStreams, StreamRng};
use ndarray::{aview1, ArrayView2};

/// How a run is configured beyond its benchmark and rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunConfig {
    pub algorithm: Algorithm,
    /// Confidence multipliers (3 in the paper's experiments, Appendix B.2.2).
    pub beta_f: f64,
    pub beta_g: f64,
    /// Misspecification factor c of paper Appendix B.1 (Figure 4): the rule is given `c L_f`
    /// and `L'_g / c`.
    pub l_scale: f64,
    pub refit: RefitMode,
    /// Prior draws per hyperparameter in the multi-start screen (Trieste: 10).
    pub draws_per_param: usize,
}

armada_core::metrics! {
    /// The per-step metrics of the family.
    pub struct SafeMetrics {
        regret_inst: f64 = "r_t = f(s_*, x_*) - f(s_t, x_t) (eq. 1; NaN at step 0)",
        regret_cum: f64 = "R_t, cumulative r_t",
        regret_avg: f64 = "R_t / t",
        regret2_inst: f64 = "r'_t = f(s_*^(x_t), x_t) - f(s_t, x_t) (eq. 2)",
        regret2_cum: f64 = "R'_t",
        regret2_avg: f64 = "R'_t / t",
        regretx_inst: f64 =
            "r^X_t = max_x f(s_*^(x), x) - f(s_hat_t^(x), x) (eq. 3), s_hat from the posterior used at round t",
        regretx_cum: f64 = "R^X_t",
        regretx_avg: f64 = "R^X_t / t",
        regretx_post_inst: f64 =
            "r^X_t with s_hat from the posterior after round t (as the notebook computes it, but with std)",
        regretx_post_avg: f64 = "running mean of regretx_post_inst",
        violations_cum: f64 = "number of rounds so far with true g(s_t, x_t) > h",
        uncertified_cum: f64 = "number of rounds so far with UCB_g(s_t, x_t) > h and s_t > 0",
        certified: f64 = "|S_t|: certified-safe grid points at round t",
        active_x: f64 = "|D_X^t|: x-rows surviving elimination",
        expanders: f64 = "|G_t| (NaN for predvar)",
        maximisers: f64 = "|M_t| (NaN for predvar)",
        acquisition: f64 = "acquisition value at the chosen point",
        s: f64 = "chosen s_t",
        x1: f64 = "chosen x_t (first x-coordinate)",
        x2: f64 = "chosen x_t, second x-coordinate (synthetic-3d; NaN otherwise)",
        grid_index: Option<usize> = "flat grid index of the choice (x-major, s-minor; missing at step 0)",
        f_lengthscale_s: f64 = "fitted lengthscale of f along s after the round",
        g_lengthscale_s: f64 = "fitted lengthscale of g along s after the round",
        f_variance: f64 = "fitted kernel variance of f after the round",
        g_variance: f64 = "fitted kernel variance of g after the round",
        dx_fallbacks_cum: f64 = "rounds where elimination emptied D_X and the previous D_X was kept",
        refit_evals: f64 = "MAP objective evaluations spent refitting f and g after the round (the cost of a refit)",
    }
}

/// Running counts of what the rule did (the benchmark keeps its own metrics' sums).
#[derive(Clone, Debug, Default)]
struct Totals {
    uncertified: u32,
    fallbacks: u32,
}

/// A run of one rule on one benchmark.
pub struct SafeEpisode {
    /// The benchmark's part: the instance, its seeds and noise, the regrets.
    env: SafeEnvironment,
    config: RunConfig,
    state: AlgoState,
    f_model: Surrogate,
    g_model: Surrogate,
    conf: Confidence,
    refit_f: StreamRng,
    refit_g: StreamRng,
    totals: Totals,
}

impl SafeEpisode {
    /// Draws the seed points, observes them and fits both GPs (as the authors' code).
    pub fn new(bench: Benchmark, config: RunConfig, streams: &JobStreams) -> Result<Self, JobError> {
        let dim = 1 + bench.x_box.len();
        let model = || Surrogate::new(dim, bench.v0, bench.gp_noise_var, config.refit, config.draws_per_param);
        let mut episode = SafeEpisode {
            f_model: model(),
            g_model: model(),
            conf: Confidence::default(),
            refit_f: streams.algo("refit-f"),
            refit_g: streams.algo("refit-g"),
            state: AlgoState::default(),
            totals: Totals::default(),
            config,
            env: SafeEnvironment::new(bench, streams),
        };
        for _ in 0..2 {
            let z = episode.env.seed_point();
            let (yf, yg) = episode.env.observe_point(&z)?;
            episode.observe(&z, yf, yg);
        }
        // The first fit is common to every algorithm of the seed.
        episode.f_model.refit(&mut streams.env("initial-fit-f"))?;
        episode.g_model.refit(&mut streams.env("initial-fit-g"))?;
        episode.update_posterior()?;
        Ok(episode)
    }

    /// The observations of f so far (seeds first).
    pub fn f_data(&self) -> (ArrayView2<'_, f64>, &[f64]) {
        self.f_model.data()
    }

    /// The current hyperparameters of f's GP.
    pub fn f_kernel(&self) -> &armada_gp::Kernel {
        self.f_model.kernel()
    }

    /// The benchmark being run.
    pub fn benchmark(&self) -> &Benchmark {
        self.env.benchmark()
    }

    /// The confidence bounds the next round will use.
    pub fn confidence(&self) -> &Confidence {
        &self.conf
    }

    /// The rule's constants `(c L_f, L'_g / c)`.
    pub fn growth_constants(&self) -> (f64, f64) {
        let bench = self.env.benchmark();
        (self.config.l_scale * bench.l_f, bench.l_g / self.config.l_scale)
    }

    /// Q1-Q6 from the current posterior.
    pub fn round_sets(&self) -> RoundSets {
        let (l_f, l_g) = self.growth_constants();
        let bench = self.env.benchmark();
        RoundSets::compute(&self.conf, &bench.grid.s, bench.h, l_f, l_g)
    }

    /// Condition both GPs on the observation `(yf, yg)` at `z`.
    fn observe(&mut self, z: &[f64], yf: f64, yg: f64) {
        self.f_model.observe(aview1(z), yf);
        self.g_model.observe(aview1(z), yg);
    }

    fn update_posterior(&mut self) -> Result<(), JobError> {
        let grid = &self.env.benchmark().grid;
        let (mu_f, sd_f) = self.f_model.predict_grid(grid)?;
        let (mu_g, sd_g) = self.g_model.predict_grid(grid)?;
        self.conf = Confidence::new(&mu_f, &sd_f, &mu_g, &sd_g, self.config.beta_f, self.config.beta_g);
        Ok(())
    }

    /// One round: choose, score, observe, refit; returns the step's metrics.
    fn play(&mut self, t: u32) -> Result<SafeMetrics, JobError> {
        let (n_s, h) = (self.env.benchmark().grid.n_s(), self.env.benchmark().h);
        let sets = self.round_sets();
        let (l_f, l_g) = self.growth_constants();
        let decision = self.config.algorithm.choose(&sets, &self.conf, n_s, l_f, l_g, &mut self.state);
        let k = decision.index;
        let score = self.env.score(k, self.config.algorithm.estimates(&sets))?;
        let tot = &mut self.totals;
        tot.uncertified += u32::from(self.conf.ucb_g[k] > h && !k.is_multiple_of(n_s));
        tot.fallbacks += u32::from(decision.kept_previous_active);

        let z = self.env.benchmark().grid.points.row(k).to_vec();
        let (yf, yg) = self.env.observe(k)?;
        self.observe(&z, yf, yg);
        let refit_evals = self.f_model.refit(&mut self.refit_f)? + self.g_model.refit(&mut self.refit_g)?;
        self.update_posterior()?;
        let post = self.round_sets();
        let (rx_post, rx_post_cum) = self.env.score_after(self.config.algorithm.estimates(&post))?;

        let tot = &self.totals;
        let tf = f64::from(t);
        let count = |v: &Option<Vec<usize>>| v.as_ref().map_or(f64::NAN, |v| v.len() as f64);
        let (kf, kg) = (self.f_model.kernel(), self.g_model.kernel());
        Ok(SafeMetrics {
            regret_inst: score.regret_inst,
            regret_cum: score.regret_cum,
            regret_avg: score.regret_cum / tf,
            regret2_inst: score.regret2_inst,
            regret2_cum: score.regret2_cum,
            regret2_avg: score.regret2_cum / tf,
            regretx_inst: score.regretx_inst,
            regretx_cum: score.regretx_cum,
            regretx_avg: score.regretx_cum / tf,
            regretx_post_inst: rx_post,
            regretx_post_avg: rx_post_cum / tf,
            violations_cum: f64::from(score.violations_cum),
            uncertified_cum: f64::from(tot.uncertified),
            certified: sets.n_certified() as f64,
            active_x: decision.active_x as f64,
            expanders: count(&decision.expanders),
            maximisers: count(&decision.maximisers),
            acquisition: decision.acquisition,
            s: z[0],
            x1: z.get(1).copied().unwrap_or(f64::NAN),
            x2: z.get(2).copied().unwrap_or(f64::NAN),
            grid_index: Some(k),
            f_lengthscale_s: kf.lengthscales[0],
            g_lengthscale_s: kg.lengthscales[0],
            f_variance: kf.variance,
            g_variance: kg.variance,
            dx_fallbacks_cum: f64::from(tot.fallbacks),
            refit_evals: refit_evals as f64,
        })
    }
}

impl Episode for SafeEpisode {
    type Metrics = SafeMetrics;

    /// Step 0: the seeds only; cumulative sums are 0, everything per-round is NaN.
    fn initial(&mut self) -> Result<SafeMetrics, JobError> {
        let (kf, kg) = (self.f_model.kernel(), self.g_model.kernel());
        let nan = f64::NAN;
        Ok(SafeMetrics {
            regret_inst: nan,
            regret_cum: 0.0,
            regret_avg: nan,
            regret2_inst: nan,
            regret2_cum: 0.0,
            regret2_avg: nan,
            regretx_inst: nan,
            regretx_cum: 0.0,
            regretx_avg: nan,
            regretx_post_inst: nan,
            regretx_post_avg: nan,
            violations_cum: 0.0,
            uncertified_cum: 0.0,
            certified: nan,
            active_x: nan,
            expanders: nan,
            maximisers: nan,
            acquisition: nan,
            s: nan,
            x1: nan,
            x2: nan,
            grid_index: None,
            f_lengthscale_s: kf.lengthscales[0],
            g_lengthscale_s: kg.lengthscales[0],
            f_variance: kf.variance,
            g_variance: kg.variance,
            dx_fallbacks_cum: 0.0,
            refit_evals: nan,
        })
    }

    fn step(&mut self, step: u32) -> Result<Option<SafeMetrics>, JobError> {
        self.play(step).map(Some)
    }
}
