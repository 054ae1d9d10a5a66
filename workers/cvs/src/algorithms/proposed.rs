//! The proposed method, BO-uCVS (paper, Algorithm 1; and the authors' code).
//!
//! **Paper mode** (default; Algorithm 1 with the paper's Practical Considerations and the
//! settings of its Experiments section): round-robin exploration over all sets until `rho C` is
//! spent, recording `ucb_bar_j` (running min of each play's maximised `E[u]`) and `lcb_bar`
//! (running max of `max_j max E[l]`); then exploitation: the `alpha`-acceptable sets
//! `S1 = {j : ucb_bar_j > shift + (1 - alpha)(lcb_bar - shift)}`, the cheapest of them by the
//! clipped cost LCB (`S3`, a set: ties kept, Algorithm 1, line 25), and among those the best
//! `U_j` (line 26).
//!
//! **Code mode** (what the authors' code, `Fsoft-AIC/BO-uCVS`, executes): exploration while
//! `remaining >= 0.4 C` with 0-based `t mod m`; exploitation recomputes `Lmax` (UCB 1.96 /
//! LCB 0.3, `Lmax` max'ed with the best observation when a full set exists), feasible
//! `F = {j : U_j >= Lmax}`, the set of least unclipped cost LCB (unplayed = -inf, ties -> largest
//! index), and from `t >= t_cap` a uniformly random set optimised on the stale posterior.
//! Every exploitation iteration before the cap refits the GP's hyperparameters (10 Adam steps
//! from the initial values, [`crate::refit`]); the capped iterations use the posterior of the
//! last iteration before the cap, refit or not. `mode = "code-fixed"` keeps the fixed
//! hyperparameters throughout.

use armada_core::JobError;
use armada_math as math;
use rand::Rng;

use super::{
    argmax_first, set_bounds, set_bounds_many, set_maxima, Algorithm, Choice, Context, Diagnostics, Phase, PlayStats,
    SearchConfig,
};
use crate::maximize::Maximum;
use crate::refit::{self, AdamConfig};
use crate::surrogate::{GpConfig, Posterior, SetCache};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Paper,
    Code,
}

armada_core::choice! {
    /// When `lcb_bar` is updated during exploration (Algorithm 1, line 10).
    pub enum LcbMode {
        /// after every exploration play
        EveryStep = "every_step",
        /// once per round of exploration
        EveryRound = "every_round",
    }
}

armada_core::choice! {
    /// The `shift` of the threshold: the paper assumes `f >= 0`, "achieved by subtracting the
    /// worst value that f can achieve" (Problem Definition).
    pub enum Shift {
        /// The benchmark's known worst value (our default).
        Worst = "worst",
        /// The printed algorithm.
        Zero = "zero",
        /// Black-box alternative: the smallest observation so far.
        MinObserved = "min-observed",
    }
}

armada_core::choice! {
    /// `alpha = alpha0 0.5^floor(n_exp / h)` (repeated) or `alpha0` then `alpha0/2` after `h` (once).
    pub enum AlphaSchedule {
        /// halve alpha every d exploitation plays
        Repeated = "repeated",
        /// halve alpha once
        Once = "once",
    }
}

armada_core::choice! {
    /// `T` in the cost confidence radius `sqrt(2 ln T / T_i)` (Algorithm 1, line 23; unknown under a budget).
    pub enum CostLog {
        /// `ln t`, the current iteration (as the authors' code; our default).
        Iteration = "iteration",
        /// `ln T_hat`, `T_hat = t + (C - spent) / min_j chat_j`.
        Projected = "projected",
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProposedConfig {
    pub mode: Mode,
    pub beta: f64,
    pub alpha0: f64,
    pub explore_fraction: f64,
    pub lcb_mode: LcbMode,
    pub shift: Shift,
    pub alpha_schedule: AlphaSchedule,
    pub cost_log: CostLog,
    /// Code mode: iteration from which sets are random (0 = never).
    pub t_cap: usize,
    /// Code mode: refit the hyperparameters at every exploitation iteration (as the authors' code).
    pub refit: bool,
    pub search: SearchConfig,
}

pub struct Proposed {
    config: ProposedConfig,
    lcb_bar: f64,
    ucb_bar: Vec<f64>,
    n_exploit: usize,
    /// Code mode: the posterior of the last iteration before `t_cap`.
    stale: Option<Fitted>,
}

impl Proposed {
    pub fn new(config: ProposedConfig, n_sets: usize) -> Self {
        Self { config, lcb_bar: f64::NEG_INFINITY, ucb_bar: vec![f64::INFINITY; n_sets], n_exploit: 0, stale: None }
    }

    /// `max_j max_{x^j} E[l]` over every set.
    fn max_lower(&self, ctx: &mut Context<'_>, beta: f64) -> f64 {
        let sets: Vec<usize> = (0..ctx.problem.n_sets()).collect();
        set_bounds_many(ctx, &sets, -beta, None, &self.config.search)
            .iter()
            .map(|b| b.0.value)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    fn explore(&mut self, ctx: &mut Context<'_>) -> Choice {
        let m = ctx.problem.n_sets();
        let t = ctx.stats.t + 1;
        let set = match self.config.mode {
            Mode::Paper => (t - 1) % m,
            Mode::Code => t % m,
        };
        let beta = self.config.beta;
        let update_lcb =
            self.config.mode == Mode::Paper && (self.config.lcb_mode == LcbMode::EveryStep || t.is_multiple_of(m));
        // The set's UCB, then (if due) every set's LCB: one batch, drawn in this order.
        let (upper, lower) = ([beta], [-beta]);
        let requests: Vec<(usize, &[f64])> =
            std::iter::once((set, &upper[..])).chain((0..m).filter(|_| update_lcb).map(|j| (j, &lower[..]))).collect();
        let mut maxima = set_maxima(ctx, &requests, &self.config.search).into_iter().map(|mut v| v.remove(0));
        let best = maxima.next().expect("the explored set's UCB");
        if self.config.mode == Mode::Paper {
            self.ucb_bar[set] = self.ucb_bar[set].min(best.value);
            if update_lcb {
                let ml = maxima.map(|mx| mx.value).fold(f64::NEG_INFINITY, f64::max);
                self.lcb_bar = self.lcb_bar.max(ml);
            }
        }
        let diagnostics = Diagnostics { lcb_bar: self.lcb_bar, ..Diagnostics::default() };
        Choice { set, x_ctrl: best.x, phase: Phase::Explore, diagnostics }
    }

    fn exploit_paper(&mut self, ctx: &mut Context<'_>) -> Choice {
        let cfg = self.config;
        let m = ctx.problem.n_sets();
        let t = ctx.stats.t + 1;
        let h = ctx.problem.dim;
        let alpha = match cfg.alpha_schedule {
            AlphaSchedule::Repeated => cfg.alpha0 * 0.5f64.powi((self.n_exploit / h) as i32),
            AlphaSchedule::Once => cfg.alpha0 * if self.n_exploit < h { 1.0 } else { 0.5 },
        };
        let sets: Vec<usize> = (0..m).collect();
        let bounds: Vec<(Maximum, Maximum)> = set_bounds_many(ctx, &sets, cfg.beta, Some(cfg.beta), &cfg.search)
            .into_iter()
            .map(|(u, l)| (u, l.expect("lower bound requested")))
            .collect();
        let u: Vec<f64> = bounds.iter().map(|b| b.0.value).collect();
        let m_l = bounds.iter().map(|b| b.1.value).fold(f64::NEG_INFINITY, f64::max);
        self.lcb_bar = self.lcb_bar.max(m_l);
        for (bar, &uj) in self.ucb_bar.iter_mut().zip(&u) {
            *bar = bar.min(uj);
        }
        let shift = match cfg.shift {
            Shift::Worst => ctx.problem.objective.worst_value(),
            Shift::Zero => 0.0,
            Shift::MinObserved => ctx.observed_y.iter().copied().fold(f64::INFINITY, f64::min),
        };
        let threshold = |lcb_bar: f64| shift + (1.0 - alpha) * (lcb_bar - shift);
        let acceptable = |ucb_bar: &[f64], thr: f64| (0..m).filter(|&j| ucb_bar[j] > thr).collect::<Vec<_>>();
        let mut thr = threshold(self.lcb_bar);
        let mut s1 = acceptable(&self.ucb_bar, thr);
        if s1.is_empty() {
            // Lines 17-20: restart the intersections from this iteration's bounds.
            self.lcb_bar = m_l;
            self.ucb_bar.copy_from_slice(&u);
            thr = threshold(self.lcb_bar);
            s1 = acceptable(&self.ucb_bar, thr);
            if s1.is_empty() {
                s1 = vec![argmax_first(u.iter().copied())];
            }
        }
        let s = ctx.stats;
        let log_t = match cfg.cost_log {
            CostLog::Iteration => math::ln(t as f64),
            CostLog::Projected => {
                let cheapest = (0..m)
                    .filter(|&j| s.counts[j] > 0)
                    .map(|j| s.cost_sums[j] / s.counts[j] as f64)
                    .fold(f64::INFINITY, f64::min)
                    .max(1e-12);
                math::ln(t as f64 + (ctx.problem.budget - s.spent).max(0.0) / cheapest)
            }
        };
        let cost_lcb = clipped_cost_lcb(s, log_t);
        let (s3, set) = cheapest_then_best(&s1, &cost_lcb, &u);
        self.n_exploit += 1;
        let diagnostics =
            Diagnostics { alpha, lcb_bar: self.lcb_bar, threshold: thr, n_s1: s1.len(), n_s3: s3.len(), group: 0 };
        Choice { set, x_ctrl: bounds[set].0.x.clone(), phase: Phase::Exploit, diagnostics }
    }

    /// Code mode keeps the posterior of iteration `t_cap - 1`, whatever its phase, for the
    /// capped iterations (C5).
    fn last_before_cap(&self, t: usize) -> bool {
        self.config.mode == Mode::Code && self.config.t_cap > 0 && t + 1 == self.config.t_cap
    }

    fn exploit_code(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError> {
        let cfg = self.config;
        let t = ctx.stats.t + 1;
        if cfg.t_cap > 0 && t >= cfg.t_cap {
            // The reference code's compute cap: a random set, optimised on the stale posterior.
            let set = ctx.rng.random_range(0..ctx.problem.n_sets());
            let stale = self.stale.take().unwrap_or_else(|| Fitted::snapshot(ctx));
            let (best, _) =
                set_bounds(&mut ctx.with_posterior(&stale.post, &stale.caches), set, cfg.beta, None, &cfg.search);
            self.stale = Some(stale);
            return Ok(Choice { set, x_ctrl: best.x, phase: Phase::Exploit, diagnostics: Diagnostics::default() });
        }
        let fitted = if cfg.refit { Some(Fitted::refit(ctx)?) } else { None };
        let choice = match &fitted {
            Some(f) => self.code_rule(&mut ctx.with_posterior(&f.post, &f.caches)),
            None => self.code_rule(ctx),
        };
        if self.last_before_cap(t) {
            self.stale = Some(fitted.unwrap_or_else(|| Fitted::snapshot(ctx)));
        }
        Ok(choice)
    }

    /// C4: `Lmax`, the feasible sets `U_j >= Lmax`, the one of least unclipped cost LCB.
    fn code_rule(&self, ctx: &mut Context<'_>) -> Choice {
        let cfg = self.config;
        let m = ctx.problem.n_sets();
        let t = ctx.stats.t + 1;
        let (ucb_beta, lcb_beta) = (1.96, 0.3);
        let mut l_max = match ctx.problem.full_set() {
            Some(full) => {
                let best_y = ctx.observed_y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                set_bounds(ctx, full, -lcb_beta, None, &cfg.search).0.value.max(best_y)
            }
            None => self.max_lower(ctx, lcb_beta),
        };
        if !l_max.is_finite() {
            l_max = f64::NEG_INFINITY;
        }
        let sets: Vec<usize> = (0..m).collect();
        let maxima: Vec<Maximum> =
            set_bounds_many(ctx, &sets, ucb_beta, None, &cfg.search).into_iter().map(|b| b.0).collect();
        let s = ctx.stats;
        let cost_lcb: Vec<f64> = (0..m)
            .map(|j| match s.counts[j] {
                0 => f64::NEG_INFINITY,
                k => s.cost_sums[j] / k as f64 - (2.0 * math::ln(t as f64) / k as f64).sqrt(),
            })
            .collect();
        let feasible: Vec<usize> = (0..m).filter(|&j| maxima[j].value >= l_max).collect();
        let set = match feasible.first() {
            // Ties go to the largest index: the code keeps j when cost_j <= cost_current.
            Some(&first) => feasible.iter().copied().fold(first, |c, j| if cost_lcb[j] <= cost_lcb[c] { j } else { c }),
            None => argmax_first(maxima.iter().map(|mx| mx.value)),
        };
        let diagnostics = Diagnostics { lcb_bar: l_max, n_s1: feasible.len(), ..Diagnostics::default() };
        Choice { set, x_ctrl: maxima[set].x.clone(), phase: Phase::Exploit, diagnostics }
    }
}

/// A posterior with set caches that match it (the kernel factor over the random part depends
/// on the lengthscales).
#[derive(Clone, Debug)]
struct Fitted {
    post: Posterior,
    caches: Vec<SetCache>,
}

impl Fitted {
    /// Code mode's per-iteration refit (the authors' code's): 10 Adam steps from the initial values.
    fn refit(ctx: &Context<'_>) -> Result<Self, JobError> {
        let config = GpConfig { noise_var: ctx.gp_noise_var, ..GpConfig::default() };
        let hyper = refit::refit(ctx.observed_x, ctx.observed_y, config, AdamConfig::default())?;
        let mut post = Posterior::with_hyper(ctx.observed_x, ctx.observed_y, &hyper)?;
        if ctx.caches.iter().any(SetCache::needs_inverse) {
            post = post.with_inverse();
        }
        let caches = ctx
            .caches
            .iter()
            .map(|c| {
                let mut fresh = c.emptied();
                fresh.update(&post, ctx.samples);
                fresh
            })
            .collect();
        Ok(Self { post, caches })
    }

    /// This iteration's own posterior, kept as it is now (the caches grow with the data).
    fn snapshot(ctx: &Context<'_>) -> Self {
        Self { post: ctx.post.clone(), caches: ctx.caches.to_vec() }
    }
}

/// Line 24: `max(chat_j - sqrt(2 log T / T_j), 0)`; a never-played set gets 0.
pub fn clipped_cost_lcb(stats: &PlayStats, log_t: f64) -> Vec<f64> {
    (0..stats.counts.len())
        .map(|j| match stats.counts[j] {
            0 => 0.0,
            k => (stats.cost_sums[j] / k as f64 - (2.0 * log_t / k as f64).sqrt()).max(0.0),
        })
        .collect()
}

/// Lines 25-26: `S3`, the sets of `S1` whose cost LCB is the least (ties kept, 1e-12), and
/// the one of them with the largest `U_j` (first index on ties).
pub fn cheapest_then_best(s1: &[usize], cost_lcb: &[f64], u: &[f64]) -> (Vec<usize>, usize) {
    let min_lcb = s1.iter().map(|&j| cost_lcb[j]).fold(f64::INFINITY, f64::min);
    let s3: Vec<usize> = s1.iter().copied().filter(|&j| cost_lcb[j] <= min_lcb + 1e-12).collect();
    let set = s3[argmax_first(s3.iter().map(|&j| u[j]))];
    (s3, set)
}

impl Algorithm for Proposed {
    fn choose(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError> {
        let spent = ctx.stats.spent;
        let explore_until = self.config.explore_fraction * ctx.problem.budget;
        let exploring = match self.config.mode {
            Mode::Paper => spent < explore_until,
            Mode::Code => ctx.problem.budget - spent >= ctx.problem.budget - explore_until,
        };
        let t = ctx.stats.t + 1;
        Ok(match (exploring, self.config.mode) {
            (true, _) => {
                if self.last_before_cap(t) {
                    self.stale = Some(Fitted::snapshot(ctx));
                }
                self.explore(ctx)
            }
            (false, Mode::Paper) => {
                if self.n_exploit == 0 && self.config.lcb_mode == LcbMode::EveryRound {
                    // P8: one more lcb_bar update with the final exploration posterior.
                    let ml = self.max_lower(ctx, self.config.beta);
                    self.lcb_bar = self.lcb_bar.max(ml);
                }
                self.exploit_paper(ctx)
            }
            (false, Mode::Code) => self.exploit_code(ctx)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_lcb_ties_at_zero_are_broken_by_the_upper_bound() {
        // Algorithm 1, lines 24-26: after few plays the radius sqrt(2 ln t / T_j) exceeds the cost
        // differences, so cheap sets tie at 0 and the best U_j among them is chosen.
        let stats = PlayStats { t: 30, counts: vec![10, 10, 10], cost_sums: vec![0.1, 2.0, 10.0], spent: 12.1 };
        let log_t = (31.0f64).ln();
        let lcb = clipped_cost_lcb(&stats, log_t);
        let radius = (2.0 * log_t / 10.0).sqrt(); // 0.8287
        assert_eq!(lcb[0], 0.0);
        assert_eq!(lcb[1], 0.0);
        assert!((lcb[2] - (1.0 - radius)).abs() < 1e-15);
        let u = [1.0, 1.5, 3.0];
        let (s3, set) = cheapest_then_best(&[0, 1, 2], &lcb, &u);
        assert_eq!((s3, set), (vec![0, 1], 1));
        // Only acceptable sets compete: with S1 = {2} the expensive set is the only choice.
        assert_eq!(cheapest_then_best(&[2], &lcb, &u), (vec![2], 2));
        // An unplayed set is optimistic (LCB 0).
        let fresh = PlayStats::new(2);
        assert_eq!(clipped_cost_lcb(&fresh, 1.0), vec![0.0, 0.0]);
    }
}
