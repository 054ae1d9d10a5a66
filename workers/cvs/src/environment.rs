//! What a `cvs` benchmark owns of a job, apart from any algorithm: the problem (the objective,
//! its control sets and their mean costs, the random inputs, the budget and how its last play
//! is treated), its environment streams (the initial design, each play's random part, the
//! observation noise, the realised costs, and the Monte Carlo set offered to every algorithm),
//! the play of a control set at a point, and the family's metrics of the plays (the paper's
//! regrets and simple regret, Problem Definition and Experiments section).
//!
//! The built-in episode ([`crate::episode::CvsEpisode`]) runs its algorithms on it, and so can
//! a method written elsewhere (armada's Python bindings): the same draws, the same metrics.

use crate::algorithms::PlayStats;
use crate::problem::{Problem, N_INIT};
use crate::surrogate::full_query;
use armada_core::{JobError, JobStreams, StreamRng};
use ndarray::{aview1, Array2};

/// Quality-regret tolerance of the `quality_regret` metric (`R^f_T`, paper Problem Definition;
/// the paper does not plot it).
pub const METRIC_ALPHA: f64 = 0.1;

armada_core::choice! {
    /// How a run treats the last play (the paper's stopping rule needs the next cost, known only
    /// after paying).
    pub enum BudgetRule {
        /// the last play may overshoot the budget
        Overshoot = "overshoot",
        /// stop before a play that would overshoot it
        Strict = "strict",
    }
}

/// One job's `cvs` benchmark with its streams and the running sums of its metrics.
pub struct CvsEnvironment {
    problem: Problem,
    budget_rule: BudgetRule,
    init: StreamRng,
    inputs: StreamRng,
    noise: StreamRng,
    cost: StreamRng,
    mc: StreamRng,
    stats: PlayStats,
    best_value: f64,
    quality_regret: f64,
    cost_regret: f64,
    done: bool,
}

/// One play: the full query (the chosen set's coordinates, the rest drawn), its noisy
/// observation, its realised cost, and its value `F_i(x^i)`, the expectation over the random
/// part on the fixed evaluation set.
#[derive(Clone, Debug, PartialEq)]
pub struct Play {
    pub x: Vec<f64>,
    pub y: f64,
    pub cost: f64,
    pub value: f64,
}

impl CvsEnvironment {
    /// `problem` played through the job's environment streams.
    pub fn new(problem: Problem, budget_rule: BudgetRule, streams: &JobStreams) -> Self {
        CvsEnvironment {
            stats: PlayStats::new(problem.n_sets()),
            problem,
            budget_rule,
            init: streams.env("initial-design"),
            inputs: streams.env("random-inputs"),
            noise: streams.env("observation-noise"),
            cost: streams.env("cost-noise"),
            mc: streams.env("mc-samples"),
            best_value: f64::NAN,
            quality_regret: 0.0,
            cost_regret: 0.0,
            done: false,
        }
    }

    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Plays so far, per set and in all, and the cost spent.
    pub fn stats(&self) -> &PlayStats {
        &self.stats
    }

    /// The Monte Carlo set `S`: `n` draws of every variable from the environment
    /// stream `mc-samples`, common to every algorithm of the seed. Ask once per run.
    pub fn mc_samples(&mut self, n: usize) -> Array2<f64> {
        let samples: Vec<f64> = (0..n).flat_map(|_| self.problem.draw_inputs(&mut self.mc)).collect();
        Array2::from_shape_vec((n, self.problem.dim), samples).expect("n draws of every variable")
    }

    /// The initial design (as in both reference codes): `N_INIT` uniform points of `[0,1]^d`,
    /// each observed with noise; not plays (no cost). Ask once, first.
    pub fn initial_design(&mut self) -> Vec<(Vec<f64>, f64)> {
        (0..N_INIT)
            .map(|_| {
                let x: Vec<f64> = (0..self.problem.dim).map(|_| rand::Rng::random(&mut self.init)).collect();
                let y = self.problem.observe(aview1(&x), &mut self.noise);
                (x, y)
            })
            .collect()
    }

    /// Whether the run is over: the budget is spent, or the strict rule refused a play.
    pub fn is_done(&self) -> bool {
        self.done || self.stats.spent >= self.problem.budget
    }

    /// Play control set `set` at `x_ctrl` (its coordinates, in the set's order): the realised
    /// cost first; under the strict rule a play that would overshoot the budget is not made
    /// (`None`, and the run is over); else a fresh random part for the other coordinates, a
    /// noisy observation, and the play's value.
    pub fn play(&mut self, set: usize, x_ctrl: &[f64]) -> Result<Option<Play>, JobError> {
        if self.is_done() {
            return Err(JobError::Invalid(format!("the budget {} is spent: the run is over", self.problem.budget)));
        }
        let Some(ctrl) = self.problem.sets.get(set) else {
            return Err(JobError::Invalid(format!(
                "set {set} out of range for {} control sets",
                self.problem.n_sets()
            )));
        };
        if x_ctrl.len() != ctrl.len() {
            return Err(JobError::Invalid(format!(
                "control set {set} has {} variables; the point has {}",
                ctrl.len(),
                x_ctrl.len()
            )));
        }
        if let Some(v) = x_ctrl.iter().find(|v| !(0.0..=1.0).contains(*v)) {
            return Err(JobError::Invalid(format!("the point's coordinate {v} is outside [0, 1]")));
        }
        let cost = self.problem.realised_cost(set, &mut self.cost);
        if self.budget_rule == BudgetRule::Strict && cost > self.problem.budget - self.stats.spent {
            self.done = true;
            return Ok(None);
        }
        let x = full_query(ctrl, x_ctrl, &self.problem.draw_inputs(&mut self.inputs));
        let y = self.problem.observe(aview1(&x), &mut self.noise);
        self.stats.record(set, cost);
        let value = self.problem.expected_value(set, aview1(x_ctrl));
        self.best_value = if self.best_value.is_nan() { value } else { self.best_value.max(value) };
        self.quality_regret += (1.0 - METRIC_ALPHA) * self.problem.f_star - value;
        let target = self.problem.objective.target_set();
        self.cost_regret += (self.problem.costs[set] - self.problem.costs[target]).max(0.0);
        self.done = self.stats.spent >= self.problem.budget;
        Ok(Some(Play { x, y, cost, value }))
    }

    /// The best value of the plays so far (NaN before the first).
    pub fn best_value(&self) -> f64 {
        self.best_value
    }

    /// `f* - best_value` (NaN before the first play).
    pub fn simple_regret(&self) -> f64 {
        self.problem.f_star - self.best_value
    }

    /// The running sum of `(1 - 0.1) f* - F_i(x^i)`.
    pub fn quality_regret(&self) -> f64 {
        self.quality_regret
    }

    /// The running sum of `max(c_i - c_{i*}, 0)` over the plays, with mean costs.
    pub fn cost_regret(&self) -> f64 {
        self.cost_regret
    }
}
