//! GLOC (Jun et al. 2017): a logistic bandit driven by an online learner. Online Newton
//! Step (ONS, learning parameter `kappa`) predicts `z_s = x_s^T theta_s`; ridge regression of those
//! predictions on the features gives `theta-hat`; arms are chosen by `x^T theta-hat + alpha ||x||_{V^{-1}}`.
//!
//! ONS keeps its iterate in the ball `||theta|| <= S` by the projection in the `A`-norm,
//! `argmin_{||th|| <= S} (th - theta')^T A (th - theta')`. The reference code approximates it with 1000
//! steps of projected gradient descent; here it is solved exactly as a trust-region subproblem
//! (`th = (A + mu I)^{-1} A theta'` with the secular equation `||th(mu)|| = S` solved by Newton's method on
//! `1/||th(mu)||`, Moré & Sorensen 1983), which is the same minimiser to 1e-12.

use crate::hyper::{Hyperparameter, TheoryConstants};
use crate::linalg::RidgeDesign;
use crate::linalg::{cholesky_in_place, dot, matvec, norm, solve_lower_in_place, solve_lower_transpose_in_place};
use crate::logistic::sigmoid;
use crate::{point, ArmScores, BottomBandit, Contexts};
use ndarray::{ArrayView1, ArrayView2};
use rand::RngCore;

const GLOC_HYPERPARAMETERS: [Hyperparameter; 2] = [
    Hyperparameter::on_paper_box("alpha", "exploration rate (UCB multiplier)"),
    Hyperparameter::on_paper_box("kappa", "ONS learning parameter"),
];

/// `A_0 = eps I` of ONS (the reference code's `eps`).
pub const ONS_EPSILON: f64 = 1.0;
/// Default exploration rate. NOT a theory value: neither the paper nor the code gives one for GLOC;
/// 1 is a placeholder inside the search box.
pub const DEFAULT_ALPHA: f64 = 1.0;

/// Which prediction feeds the ridge regression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnsPrediction {
    /// `z = x^T theta_{t+1}`, after the ONS step (the reference code).
    AfterStep,
    /// `z = x^T theta_t`, before the ONS step (Jun et al. 2017).
    BeforeStep,
}

/// Exact projection onto `{||th|| <= radius}` in the norm of an SPD matrix `A`, with its own scratch.
#[derive(Clone, Debug)]
pub struct NormBallProjector {
    shifted: Vec<f64>,
    target_image: Vec<f64>,
    candidate: Vec<f64>,
    work: Vec<f64>,
}

impl NormBallProjector {
    pub fn new(dim: usize) -> Self {
        NormBallProjector {
            shifted: vec![0.0; dim * dim],
            target_image: vec![0.0; dim],
            candidate: vec![0.0; dim],
            work: vec![0.0; dim],
        }
    }

    /// Overwrites `point` with `argmin_{||th|| <= radius} (th - point)^T A (th - point)` (row-major `a`).
    /// Returns the multiplier `mu >= 0` of the KKT condition `A (point_old - th) = mu th` (0 if inside).
    pub fn project(&mut self, a: &[f64], radius: f64, point: &mut [f64]) -> f64 {
        let d = point.len();
        if norm(point) <= radius {
            return 0.0;
        }
        matvec(a, point, &mut self.target_image);
        let mut mu = 0.0;
        for _ in 0..100 {
            self.shifted.copy_from_slice(a);
            for i in 0..d {
                self.shifted[i * d + i] += mu;
            }
            if cholesky_in_place(&mut self.shifted, d).is_err() {
                break;
            }
            self.candidate.copy_from_slice(&self.target_image);
            solve_lower_in_place(&self.shifted, &mut self.candidate);
            solve_lower_transpose_in_place(&self.shifted, &mut self.candidate);
            let length = norm(&self.candidate);
            if (length - radius).abs() <= 1e-12 * radius {
                break;
            }
            // d(1/length)/dmu = (th^T (A + mu I)^{-1} th) / length^3; q = L^{-1} th gives the numerator.
            self.work.copy_from_slice(&self.candidate);
            solve_lower_in_place(&self.shifted, &mut self.work);
            let curvature = dot(&self.work, &self.work);
            mu += (length * length / curvature) * (length - radius) / radius;
            mu = mu.max(0.0);
        }
        let length = norm(&self.candidate);
        for (p, c) in point.iter_mut().zip(&self.candidate) {
            *p = c * radius / length;
        }
        mu
    }
}

/// GLOC with ONS (Jun et al. 2017).
#[derive(Clone, Debug)]
pub struct Gloc {
    /// `A = eps I + sum x x^T` of ONS (its inverse gives the ONS direction).
    ons_design: RidgeDesign,
    /// `V = lambda I + sum x x^T` and `theta-hat = V^{-1} sum z x`.
    regression: RidgeDesign,
    ons_iterate: Vec<f64>,
    direction: Vec<f64>,
    projector: NormBallProjector,
    prediction: OnsPrediction,
    theory: TheoryConstants,
    projections: usize,
    scores: ArmScores,
}

impl Gloc {
    pub fn new(dim: usize, theory: TheoryConstants) -> Self {
        Self::with_prediction(dim, theory, OnsPrediction::AfterStep)
    }
    pub fn with_prediction(dim: usize, theory: TheoryConstants, prediction: OnsPrediction) -> Self {
        Gloc {
            ons_design: RidgeDesign::new(dim, ONS_EPSILON),
            regression: RidgeDesign::new(dim, theory.lambda),
            ons_iterate: vec![0.0; dim],
            direction: vec![0.0; dim],
            projector: NormBallProjector::new(dim),
            prediction,
            theory,
            projections: 0,
            scores: ArmScores::default(),
        }
    }
    pub fn ons_iterate(&self) -> &[f64] {
        &self.ons_iterate
    }
    pub fn estimate(&self) -> &[f64] {
        self.regression.estimate()
    }
    /// Observations whose ONS step left the ball and had to be projected.
    pub fn projections(&self) -> usize {
        self.projections
    }
    pub fn index(&self, x: &[f64], alpha: f64) -> f64 {
        dot(x, self.regression.estimate()) + alpha * self.regression.width_squared(x).sqrt()
    }
}

impl BottomBandit for Gloc {
    fn name(&self) -> &'static str {
        "GLOC"
    }
    fn dim(&self) -> usize {
        self.ons_iterate.len()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        &GLOC_HYPERPARAMETERS
    }
    /// `[DEFAULT_ALPHA, kappa = 0.196]`: kappa's theory value `inf mu'`; alpha has no published theory value.
    fn theory_hyperparameters(&self, _round: usize, out: &mut [f64]) {
        out[0] = DEFAULT_ALPHA;
        out[1] = self.theory.kappa;
    }
    fn intrinsic_warmup(&self) -> usize {
        0
    }
    fn rounds_observed(&self) -> usize {
        self.regression.n_observed()
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], _rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        self.scores.optimistic(&arms, self.regression.estimate(), &self.regression, hp[0])
    }
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, hp: &[f64], _rng: &mut dyn RngCore) {
        let x = point(x);
        let x: &[f64] = &x;
        let kappa = hp[1];
        let before = dot(x, &self.ons_iterate);
        let loss_slope = sigmoid(before) - y;
        self.ons_design.observe(x, 0.0);
        self.ons_design.apply_inverse(x, &mut self.direction);
        for (t, u) in self.ons_iterate.iter_mut().zip(&self.direction) {
            *t -= loss_slope / kappa * u;
        }
        if self.projector.project(self.ons_design.design(), self.theory.norm_bound, &mut self.ons_iterate) > 0.0 {
            self.projections += 1;
        }
        let z = match self.prediction {
            OnsPrediction::AfterStep => dot(x, &self.ons_iterate),
            OnsPrediction::BeforeStep => before,
        };
        self.regression.observe(x, z);
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops mirror the formulas they check
mod tests {
    use super::*;
    use ndarray::aview1;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Hand-computed first step: theta = 0, x = e1, y = 1, kappa = 0.5 gives g = -0.5, A = diag(2, 1),
    /// theta' = (0.5, 0) (inside the unit ball), z = 0.5, V = diag(2, 1), theta-hat = (0.25, 0).
    #[test]
    fn first_ons_step_matches_hand_computation() {
        let mut b = Gloc::new(2, TheoryConstants::paper(10));
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        b.observe(aview1(&[1.0, 0.0]), 1.0, &[1.0, 0.5], &mut rng);
        assert!((b.ons_iterate()[0] - 0.5).abs() < 1e-15 && b.ons_iterate()[1] == 0.0);
        assert!((b.estimate()[0] - 0.25).abs() < 1e-15 && b.estimate()[1] == 0.0);
        // alpha = 2: index of e2 is 0 + 2 * sqrt(1/1) = 2; of e1 is 0.25 + 2 sqrt(1/2).
        assert!((b.index(&[1.0, 0.0], 2.0) - (0.25 + 2.0 * 0.5f64.sqrt())).abs() < 1e-15);
        assert!((b.index(&[0.0, 1.0], 2.0) - 2.0).abs() < 1e-15);
        let mut before = Gloc::with_prediction(2, TheoryConstants::paper(10), OnsPrediction::BeforeStep);
        before.observe(aview1(&[1.0, 0.0]), 1.0, &[1.0, 0.5], &mut rng);
        assert_eq!(before.estimate(), &[0.0, 0.0], "pre-step prediction x^T theta_0 = 0");
    }

    /// The A-norm projection satisfies the KKT conditions (on the sphere, A (p - th) = mu th with mu > 0)
    /// and beats 20,000 random feasible points on the objective.
    #[test]
    fn a_norm_projection_is_the_constrained_minimiser() {
        let d = 4;
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let g: Vec<f64> = (0..d * d).map(|_| rng.random::<f64>() - 0.5).collect();
        let mut a = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                a[i * d + j] =
                    (0..d).map(|k| 3.0 * g[i * d + k] * g[j * d + k]).sum::<f64>() + if i == j { 0.2 } else { 0.0 };
            }
        }
        let point = [1.5, -2.0, 0.7, 1.1];
        let mut th = point;
        let mu = NormBallProjector::new(d).project(&a, 1.0, &mut th);
        assert!(mu > 0.0);
        assert!((norm(&th) - 1.0).abs() < 1e-12);
        let diff: Vec<f64> = point.iter().zip(&th).map(|(p, t)| p - t).collect();
        let mut residual = vec![0.0; d];
        matvec(&a, &diff, &mut residual);
        for i in 0..d {
            assert!((residual[i] - mu * th[i]).abs() < 1e-9 * (1.0 + mu), "KKT {i}: {residual:?} vs {mu} {th:?}");
        }
        let objective = |t: &[f64]| {
            let e: Vec<f64> = t.iter().zip(&point).map(|(a, b)| a - b).collect();
            let mut ae = vec![0.0; d];
            matvec(&a, &e, &mut ae);
            dot(&e, &ae)
        };
        let best = objective(&th);
        for _ in 0..20_000 {
            let mut u: Vec<f64> = (0..d).map(|_| 2.0 * rng.random::<f64>() - 1.0).collect();
            let n = norm(&u);
            let r = rng.random::<f64>().min(1.0) / n.max(1.0);
            u.iter_mut().for_each(|v| *v *= r);
            assert!(objective(&u) >= best - 1e-12);
        }
        let mut inside = [0.1, 0.2, 0.0, 0.0];
        assert_eq!(NormBallProjector::new(d).project(&a, 1.0, &mut inside), 0.0);
        assert_eq!(inside, [0.1, 0.2, 0.0, 0.0]);
    }

    /// The ONS iterate never leaves the ball ||theta|| <= S, even with an aggressive kappa.
    #[test]
    fn ons_iterate_stays_in_the_norm_ball() {
        let d = 5;
        let mut b = Gloc::new(d, TheoryConstants::paper(1000));
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for t in 0..500 {
            let x: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            b.observe(aview1(&x), (t % 3 == 0) as u8 as f64, &[1.0, 0.1], &mut rng);
            assert!(norm(b.ons_iterate()) <= 1.0 + 1e-12);
        }
        assert!(b.projections() > 0, "the test should exercise the projection");
    }
}
