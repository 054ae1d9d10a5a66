//! Test doubles shared by the tuner tests: a bottom bandit whose best hyperparameter is known by
//! construction, so that a tuner's convergence can be checked against an independent answer; and running a
//! job of this crate's families through the registry.

use crate::hyper::Hyperparameter;
use crate::linalg::dot;
use crate::{argmax_by, random_arm, BottomBandit, Contexts};
use armada_core::{run_job, Registry, ValidJob};
use ndarray::{ArrayView1, ArrayView2};
use rand::{Rng, RngCore};
use std::ops::ControlFlow;

static ONE_KNOB: [Hyperparameter; 1] = [Hyperparameter::on_paper_box("alpha", "probability of a random arm")];
static TWO_KNOBS: [Hyperparameter; 2] = [
    Hyperparameter::on_paper_box("alpha", "probability of a random arm"),
    Hyperparameter::on_paper_box("beta", "probability of a random arm"),
];

/// Epsilon-greedy around the TRUE best arm (it is given `theta*`): with probability
/// `eps = mean_i |v_i - target_i|` (`v` the hyperparameters in unit coordinates) it plays a uniformly random
/// arm, otherwise the best one. The expected reward is therefore `best - eps * (best - average)`, a
/// Lipschitz function of the hyperparameters maximised exactly at `target` (a corner of the box).
pub(crate) struct ExplorationProbe {
    theta: Vec<f64>,
    target: Vec<f64>,
    observed: usize,
}

impl ExplorationProbe {
    pub(crate) fn new(theta: &[f64], target: &[f64]) -> Self {
        assert!(target.len() == 1 || target.len() == 2);
        ExplorationProbe { theta: theta.to_vec(), target: target.to_vec(), observed: 0 }
    }
    /// The best hyperparameter values on the paper box.
    pub(crate) fn best_values(&self) -> Vec<f64> {
        self.hyperparameters().iter().zip(&self.target).map(|(h, t)| h.from_unit(*t)).collect()
    }
}

impl BottomBandit for ExplorationProbe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn dim(&self) -> usize {
        self.theta.len()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        if self.target.len() == 1 {
            &ONE_KNOB
        } else {
            &TWO_KNOBS
        }
    }
    fn theory_hyperparameters(&self, _round: usize, out: &mut [f64]) {
        out.fill(2.55);
    }
    fn intrinsic_warmup(&self) -> usize {
        0
    }
    fn rounds_observed(&self) -> usize {
        self.observed
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        let space = self.hyperparameters();
        let eps = space.iter().zip(hp).zip(&self.target).map(|((h, v), t)| (h.to_unit(*v) - t).abs()).sum::<f64>()
            / space.len() as f64;
        if rng.random::<f64>() < eps {
            random_arm(arms.n_arms(), rng)
        } else {
            argmax_by(arms.n_arms(), |a| dot(arms.arm(a), &self.theta))
        }
    }
    fn observe(&mut self, _x: ArrayView1<'_, f64>, _y: f64, _hp: &[f64], _rng: &mut dyn RngCore) {
        self.observed += 1;
    }
}

/// Every family of this crate, as the workers register them.
pub(crate) fn registry() -> Registry {
    Registry::new(vec![
        Box::new(crate::BanditsFamily),
        Box::new(crate::LipschitzFamily),
        Box::new(crate::LipschitzCheckFamily),
    ])
}

/// Runs a validated job through the registry and returns every step's metric values.
pub(crate) fn records(job: &ValidJob) -> Vec<Vec<f64>> {
    let mut rows = Vec::new();
    run_job(&registry(), job, &mut |r| {
        rows.push(r.values);
        ControlFlow::Continue(())
    })
    .unwrap();
    rows
}
