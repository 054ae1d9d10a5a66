//! SGD-TS (Ding, Hsieh & Sharpnack 2021): after a random warm-up of `tau` rounds and one
//! logistic MLE on it, one projected SGD step per epoch of `tau` rounds, Polyak averaging, and a Thompson
//! sample `N(theta-bar, (2 alpha^2 / j) I)` held fixed for the whole epoch `j`.
//!
//! The algorithm acts on its hyperparameters `(alpha, eta0)` only at epoch boundaries, so a tuner should
//! run in block mode ([`BottomBandit::block_len`]): the values passed to the `choose` that opens
//! an epoch are the ones used; those of the other rounds are ignored.

use crate::glm::TINY_RIDGE;
use crate::hyper::{Hyperparameter, TheoryConstants};
use crate::linalg::dot;
use crate::logistic::{sigmoid, LogisticMle};
use crate::{fill_standard_normal, point, random_arm, ArmScores, BottomBandit, Contexts};
use armada_math as math;
use ndarray::{ArrayView1, ArrayView2};
use rand::RngCore;

const SGD_TS_HYPERPARAMETERS: [Hyperparameter; 2] = [
    Hyperparameter::on_paper_box("alpha", "exploration (posterior scale)"),
    Hyperparameter::on_paper_box("eta0", "SGD step size"),
];

/// `C` in `tau = C max(ln T, d)` (the reference code's default).
pub const EPOCH_CONSTANT: f64 = 6.0;
/// Radius of the projection ball around the warm-up MLE.
pub const PROJECTION_RADIUS: f64 = 2.0;
/// The paper's theory step size (the code's run.py uses 0.2).
pub const THEORY_ETA0: f64 = 1.0;

/// `tau = ceil(C max(ln T, d))`: 150 for d = 25 and 120 for d = 20.
pub fn epoch_length(dim: usize, horizon: usize) -> usize {
    (EPOCH_CONSTANT * math::ln(horizon as f64).max(dim as f64)).ceil() as usize
}

/// SGD-TS with the tuned covariance `2 alpha^2 / j I`.
#[derive(Clone, Debug)]
pub struct SgdTs {
    tau: usize,
    warmup_fit: LogisticMle,
    /// `theta-hat`, the warm-up MLE: centre of the projection ball.
    anchor: Vec<f64>,
    /// `theta~`, the SGD iterate.
    iterate: Vec<f64>,
    /// `theta-bar`, the Polyak average.
    average: Vec<f64>,
    /// Gradient summed over the current epoch.
    gradient: Vec<f64>,
    /// `theta_ts`, held for the epoch.
    sample: Vec<f64>,
    scores: ArmScores,
    /// Last epoch whose step and sample were taken.
    epochs_done: usize,
    n_observed: usize,
    theory: TheoryConstants,
}

impl SgdTs {
    pub fn new(dim: usize, theory: TheoryConstants) -> Self {
        Self::with_epoch_length(dim, theory, epoch_length(dim, theory.horizon))
    }
    pub fn with_epoch_length(dim: usize, theory: TheoryConstants, tau: usize) -> Self {
        assert!(tau >= 1);
        SgdTs {
            tau,
            warmup_fit: LogisticMle::new(dim, TINY_RIDGE, tau),
            anchor: vec![0.0; dim],
            iterate: vec![0.0; dim],
            average: vec![0.0; dim],
            gradient: vec![0.0; dim],
            sample: vec![0.0; dim],
            scores: ArmScores::default(),
            epochs_done: 0,
            n_observed: 0,
            theory,
        }
    }
    pub fn epoch_len(&self) -> usize {
        self.tau
    }
    pub fn anchor(&self) -> &[f64] {
        &self.anchor
    }
    pub fn iterate(&self) -> &[f64] {
        &self.iterate
    }
    pub fn average(&self) -> &[f64] {
        &self.average
    }
    /// The Thompson sample of the current epoch.
    pub fn epoch_sample(&self) -> &[f64] {
        &self.sample
    }

    /// The step, projection, averaging and sampling that open epoch `j` (at `t mod tau == 0`).
    fn start_epoch(&mut self, j: usize, alpha: f64, eta0: f64, rng: &mut dyn RngCore) {
        let step = eta0 / j as f64;
        for (t, g) in self.iterate.iter_mut().zip(&self.gradient) {
            *t -= step * g;
        }
        let offset = self.iterate.iter().zip(&self.anchor).map(|(t, a)| (t - a) * (t - a)).sum::<f64>().sqrt();
        if offset > PROJECTION_RADIUS {
            for (t, a) in self.iterate.iter_mut().zip(&self.anchor) {
                *t = a + PROJECTION_RADIUS * (*t - a) / offset;
            }
        }
        self.gradient.fill(0.0);
        let jf = j as f64;
        for (m, t) in self.average.iter_mut().zip(&self.iterate) {
            *m = ((jf - 1.0) * *m + t) / jf;
        }
        fill_standard_normal(&mut self.sample, rng);
        let sd = (2.0 * alpha * alpha / jf).sqrt();
        for (s, m) in self.sample.iter_mut().zip(&self.average) {
            *s = m + sd * *s;
        }
        self.epochs_done = j;
    }
}

impl BottomBandit for SgdTs {
    fn name(&self) -> &'static str {
        "SGD-TS"
    }
    fn dim(&self) -> usize {
        self.anchor.len()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        &SGD_TS_HYPERPARAMETERS
    }
    /// `eta0 = 1` and the `alpha` for which `2 alpha^2 / j = (2 g1^2 + 2 g2^2)/j`, i.e.
    /// `alpha = sqrt(g1^2 + g2^2)` with `g1 = sigma sqrt((d/2) ln(1 + 2 j tau/d) + 2 ln T)` and
    /// `g2 = (tau/eta0) sqrt(1 + ln j)`, `j = max(1, round / tau)` the epoch of `round`.
    fn theory_hyperparameters(&self, round: usize, out: &mut [f64]) {
        let (d, tau, t) = (self.dim() as f64, self.tau as f64, self.theory.horizon as f64);
        let j = (round / self.tau).max(1) as f64;
        let g1 = self.theory.sigma * (d / 2.0 * math::ln(1.0 + 2.0 * j * tau / d) + 2.0 * math::ln(t)).sqrt();
        let g2 = tau / THEORY_ETA0 * (1.0 + math::ln(j)).sqrt();
        out[0] = (g1 * g1 + g2 * g2).sqrt();
        out[1] = THEORY_ETA0;
    }
    fn intrinsic_warmup(&self) -> usize {
        self.tau
    }
    fn block_len(&self) -> Option<usize> {
        Some(self.tau)
    }
    fn rounds_observed(&self) -> usize {
        self.n_observed
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        if self.n_observed < self.tau {
            return random_arm(arms.n_arms(), rng);
        }
        let j = self.n_observed / self.tau;
        if self.n_observed.is_multiple_of(self.tau) && j > self.epochs_done {
            self.start_epoch(j, hp[0], hp[1], rng);
        }
        self.scores.greedy(&arms, &self.sample)
    }
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, _hp: &[f64], _rng: &mut dyn RngCore) {
        let x = point(x);
        let x: &[f64] = &x;
        self.n_observed += 1;
        if self.n_observed <= self.tau {
            self.warmup_fit.push(x, y);
            if self.n_observed == self.tau {
                self.warmup_fit.fit();
                self.anchor.copy_from_slice(self.warmup_fit.estimate());
                self.iterate.copy_from_slice(&self.anchor);
            }
            return;
        }
        let residual = sigmoid(dot(x, &self.iterate)) - y;
        for (g, xi) in self.gradient.iter_mut().zip(x) {
            *g += residual * xi;
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops mirror the formulas they check
mod tests {
    use super::*;
    use crate::contexts_view;
    use crate::linalg::norm;
    use ndarray::aview1;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn epoch_length_follows_the_spec() {
        assert_eq!(epoch_length(25, 14_000), 150);
        assert_eq!(epoch_length(20, 14_000), 120);
        assert_eq!(epoch_length(2, 14_000), 58, "ln T dominates for small d: ceil(6 * 9.547)");
        let b = SgdTs::new(25, TheoryConstants::paper(14_000));
        let mut out = [0.0; 2];
        b.theory_hyperparameters(150, &mut out);
        // j = 1: cov = 2 (g1^2 + g2^2) ≈ 45,000 (the reference code's theory formula).
        assert!((2.0 * out[0] * out[0] - 45_000.0).abs() < 500.0, "{}", 2.0 * out[0] * out[0]);
        assert_eq!(out[1], 1.0);
    }

    /// The sample is fixed within an epoch, and at each boundary: one SGD step with the epoch's summed
    /// gradient (checked against an independent recomputation), projection to radius 2 around the warm-up
    /// MLE, and the Polyak average of the iterates.
    #[test]
    fn epochs_step_project_average_and_hold_the_sample() {
        let (d, tau) = (3, 10);
        let mut b = SgdTs::with_epoch_length(d, TheoryConstants::paper(1000), tau);
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let features: Vec<f64> = (0..5 * d).map(|_| rng.random::<f64>() - 0.5).collect();
        let arms = contexts_view(&features, d);
        let (alpha, eta0) = (0.5, 5.0);
        let mut iterates: Vec<Vec<f64>> = Vec::new();
        let mut expected_iterate = vec![0.0; d];
        let mut epoch_gradient = vec![0.0; d];
        for t in 0..60 {
            let arm = b.choose(arms, &[alpha, eta0], &mut rng);
            if t >= tau {
                let j = t / tau;
                if t % tau == 0 {
                    for i in 0..d {
                        expected_iterate[i] -= eta0 / j as f64 * epoch_gradient[i];
                    }
                    let off: Vec<f64> = expected_iterate.iter().zip(b.anchor()).map(|(a, c)| a - c).collect();
                    let n = norm(&off);
                    if n > 2.0 {
                        for i in 0..d {
                            expected_iterate[i] = b.anchor()[i] + 2.0 * off[i] / n;
                        }
                    }
                    epoch_gradient.fill(0.0);
                    for i in 0..d {
                        assert!((b.iterate()[i] - expected_iterate[i]).abs() < 1e-12);
                    }
                    iterates.push(b.iterate().to_vec());
                    let avg: Vec<f64> = (0..d).map(|i| iterates.iter().map(|v| v[i]).sum::<f64>() / j as f64).collect();
                    for i in 0..d {
                        assert!((b.average()[i] - avg[i]).abs() < 1e-12);
                    }
                }
                assert!(
                    norm(&b.iterate().iter().zip(b.anchor()).map(|(a, c)| a - c).collect::<Vec<_>>()) <= 2.0 + 1e-12
                );
            }
            let sample_before = b.epoch_sample().to_vec();
            let x = arms.row(arm).to_vec();
            let y = (rng.random::<f64>() < 0.5) as u8 as f64;
            if t >= tau {
                let r = sigmoid(dot(&x, &expected_iterate)) - y;
                for i in 0..d {
                    epoch_gradient[i] += r * x[i];
                }
            }
            b.observe(aview1(&x), y, &[alpha, eta0], &mut rng);
            if t == tau - 1 {
                expected_iterate.copy_from_slice(b.anchor());
            }
            if t > tau && (t + 1) % tau != 0 {
                let arm2 = b.choose(arms, &[4.0, 0.1], &mut rng);
                assert_eq!(b.epoch_sample(), &sample_before[..], "sample fixed inside an epoch");
                assert_eq!(arm2, arm, "hyperparameters mid-epoch are ignored");
            }
        }
        assert_eq!(iterates.len(), 5);
    }
}
