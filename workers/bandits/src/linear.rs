//! LinUCB (Li et al. 2010; paper Section 3) and LinTS (Agrawal & Goyal 2013): ridge regression with an
//! optimistic or a sampled index.
//!
//! Both share [`RidgeDesign`], whose statistics (`V^{-1}`, `chol V`, `theta-hat`) are independent of the
//! exploration rate `alpha`, so `alpha` may change every round at no cost.

use crate::hyper::{Hyperparameter, TheoryConstants};
use crate::linalg::{dot, RidgeDesign};
use crate::{fill_standard_normal, point, ArmScores, BottomBandit, Contexts};
use armada_math as math;
use ndarray::{ArrayView1, ArrayView2};
use rand::RngCore;

const EXPLORATION: [Hyperparameter; 1] = [Hyperparameter::on_paper_box("alpha", "exploration rate")];

/// `sigma sqrt(d ln((1 + t/lambda)/delta)) + sqrt(lambda) S`, the LinUCB theory value at 0-based round `t`
/// (paper Section 3, with `S = 1` for `||theta*||` as in the authors' code).
pub fn linucb_theory_alpha(dim: usize, round: usize, c: &TheoryConstants) -> f64 {
    c.sigma * (dim as f64 * math::ln((1.0 + round as f64 / c.lambda) / c.delta)).sqrt() + c.lambda.sqrt() * c.norm_bound
}

/// LinUCB (Li et al. 2010): `argmax_a x^T theta-hat + alpha ||x||_{V^{-1}}`.
#[derive(Clone, Debug)]
pub struct LinUcb {
    design: RidgeDesign,
    theory: TheoryConstants,
    scores: ArmScores,
}

impl LinUcb {
    pub fn new(dim: usize, theory: TheoryConstants) -> Self {
        LinUcb { design: RidgeDesign::new(dim, theory.lambda), theory, scores: ArmScores::default() }
    }
    /// The UCB index of feature `x` with exploration rate `alpha`.
    pub fn index(&self, x: &[f64], alpha: f64) -> f64 {
        dot(x, self.design.estimate()) + alpha * self.design.width_squared(x).sqrt()
    }
    pub fn design(&self) -> &RidgeDesign {
        &self.design
    }
}

impl BottomBandit for LinUcb {
    fn name(&self) -> &'static str {
        "LinUCB"
    }
    fn dim(&self) -> usize {
        self.design.dim()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        &EXPLORATION
    }
    fn theory_hyperparameters(&self, round: usize, out: &mut [f64]) {
        out[0] = linucb_theory_alpha(self.dim(), round, &self.theory);
    }
    fn intrinsic_warmup(&self) -> usize {
        0
    }
    fn rounds_observed(&self) -> usize {
        self.design.n_observed()
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], _rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        self.scores.optimistic(&arms, self.design.estimate(), &self.design, hp[0])
    }
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, _hp: &[f64], _rng: &mut dyn RngCore) {
        let x = point(x);
        let x: &[f64] = &x;
        self.design.observe(x, y);
    }
}

/// LinTS (Agrawal & Goyal 2013): `theta~ ~ N(theta-hat, alpha^2 V^{-1})`, `argmax_a x^T theta~`.
#[derive(Clone, Debug)]
pub struct LinTs {
    design: RidgeDesign,
    theory: TheoryConstants,
    sample: Vec<f64>,
    scores: ArmScores,
}

impl LinTs {
    pub fn new(dim: usize, theory: TheoryConstants) -> Self {
        LinTs {
            design: RidgeDesign::with_factor(dim, theory.lambda),
            theory,
            sample: vec![0.0; dim],
            scores: ArmScores::default(),
        }
    }
    /// Overwrites the standard normal `z` with `theta-hat + alpha L^{-T} z`, a draw of theta~.
    pub fn perturb(&self, alpha: f64, z: &mut [f64]) {
        self.design.correlate_in_place(z);
        for (zi, mi) in z.iter_mut().zip(self.design.estimate()) {
            *zi = mi + alpha * *zi;
        }
    }
    /// The parameter drawn in the last `choose`.
    pub fn last_sample(&self) -> &[f64] {
        &self.sample
    }
    pub fn design(&self) -> &RidgeDesign {
        &self.design
    }
}

impl BottomBandit for LinTs {
    fn name(&self) -> &'static str {
        "LinTS"
    }
    fn dim(&self) -> usize {
        self.design.dim()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        &EXPLORATION
    }
    /// The code's ad hoc `(sigma/5) sqrt(d ln((1 + t/lambda)/delta)) + sqrt(lambda) S` (the paper gives none).
    fn theory_hyperparameters(&self, round: usize, out: &mut [f64]) {
        let c = TheoryConstants { sigma: self.theory.sigma / 5.0, ..self.theory };
        out[0] = linucb_theory_alpha(self.dim(), round, &c);
    }
    fn intrinsic_warmup(&self) -> usize {
        0
    }
    fn rounds_observed(&self) -> usize {
        self.design.n_observed()
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        let mut sample = std::mem::take(&mut self.sample);
        fill_standard_normal(&mut sample, rng);
        self.perturb(hp[0], &mut sample);
        let arm = self.scores.greedy(&arms, &sample);
        self.sample = sample;
        arm
    }
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, _hp: &[f64], _rng: &mut dyn RngCore) {
        let x = point(x);
        let x: &[f64] = &x;
        self.design.observe(x, y);
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops mirror the formulas they check
mod tests {
    use super::*;
    use crate::contexts_view;
    use crate::linalg::tests::dense_inverse;
    use ndarray::aview1;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn paper() -> TheoryConstants {
        TheoryConstants::paper(14_000)
    }

    /// Hand-computed 2-D example: after observing (1,0)->1, (0,1)->0.5, (1,0)->0 we have V = diag(3, 2),
    /// b = (1, 0.5), theta-hat = (1/3, 1/4); the index of e1 is 1/3 + alpha/sqrt(3) and of e2 is
    /// 1/4 + alpha/sqrt(2), so the choice switches from e1 to e2 at alpha = (1/12)/(1/sqrt2 - 1/sqrt3) = 0.6425.
    #[test]
    fn linucb_index_matches_a_hand_computed_two_dimensional_example() {
        let mut b = LinUcb::new(2, paper());
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for (x, y) in [([1.0, 0.0], 1.0), ([0.0, 1.0], 0.5), ([1.0, 0.0], 0.0)] {
            b.observe(aview1(&x), y, &[1.0], &mut rng);
        }
        assert!((b.design().estimate()[0] - 1.0 / 3.0).abs() < 1e-15);
        assert!((b.design().estimate()[1] - 0.25).abs() < 1e-15);
        for alpha in [0.0, 0.5, 2.0] {
            assert!((b.index(&[1.0, 0.0], alpha) - (1.0 / 3.0 + alpha / 3f64.sqrt())).abs() < 1e-14);
            assert!((b.index(&[0.0, 1.0], alpha) - (0.25 + alpha / 2f64.sqrt())).abs() < 1e-14);
            // (0.6, 0.8): 0.6/3 + 0.8/4 + alpha sqrt(0.36/3 + 0.64/2)
            let expected = 0.2 + 0.2 + alpha * (0.12f64 + 0.32).sqrt();
            assert!((b.index(&[0.6, 0.8], alpha) - expected).abs() < 1e-14);
        }
        let arms = [1.0, 0.0, 0.0, 1.0];
        let ctx = contexts_view(&arms, 2);
        assert_eq!(b.choose(ctx, &[0.64], &mut rng), 0);
        assert_eq!(b.choose(ctx, &[0.65], &mut rng), 1);
        assert_eq!(b.rounds_observed(), 3);
    }

    /// LinTS on the same example: theta~ = theta-hat + alpha (z1/sqrt3, z2/sqrt2) for a given z; and on a
    /// non-diagonal V, the empirical covariance of theta~ is alpha^2 V^{-1} (dense inverse as reference).
    #[test]
    fn lints_samples_have_the_hand_computed_mean_and_alpha_squared_v_inverse_covariance() {
        let mut b = LinTs::new(2, paper());
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (x, y) in [([1.0, 0.0], 1.0), ([0.0, 1.0], 0.5), ([1.0, 0.0], 0.0)] {
            b.observe(aview1(&x), y, &[1.0], &mut rng);
        }
        let mut z = [0.7, -1.2];
        b.perturb(2.0, &mut z);
        assert!((z[0] - (1.0 / 3.0 + 2.0 * 0.7 / 3f64.sqrt())).abs() < 1e-14);
        assert!((z[1] - (0.25 - 2.0 * 1.2 / 2f64.sqrt())).abs() < 1e-14);

        b.observe(aview1(&[0.6, 0.8]), 1.0, &[1.0], &mut rng);
        let v_inv = dense_inverse(b.design().design(), 2);
        let alpha = 1.5;
        let n = 40_000;
        let arms = [1.0, 0.0];
        let (mut mean, mut m2) = ([0.0; 2], [0.0; 4]);
        for _ in 0..n {
            b.choose(contexts_view(&arms, 2), &[alpha], &mut rng);
            let s = b.last_sample();
            for i in 0..2 {
                mean[i] += s[i] / n as f64;
                for j in 0..2 {
                    m2[i * 2 + j] += s[i] * s[j] / n as f64;
                }
            }
        }
        for i in 0..2 {
            assert!((mean[i] - b.design().estimate()[i]).abs() < 0.02, "mean {mean:?}");
            for j in 0..2 {
                let cov = m2[i * 2 + j] - mean[i] * mean[j];
                let expected = alpha * alpha * v_inv[i * 2 + j];
                assert!((cov - expected).abs() < 0.03 * alpha * alpha * v_inv[0], "cov[{i}{j}] {cov} vs {expected}");
            }
        }
    }

    /// With alpha = 0 on noiseless linear rewards, theta-hat converges to theta*.
    #[test]
    fn linucb_estimate_converges_to_theta_star_without_exploration() {
        let theta = [0.3, -0.2, 0.1];
        let mut b = LinUcb::new(3, paper());
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        use rand::Rng;
        for _ in 0..3000 {
            let x: Vec<f64> = (0..3).map(|_| rng.random::<f64>() - 0.5).collect();
            b.observe(aview1(&x), dot(&x, &theta), &[0.0], &mut rng);
        }
        for (e, t) in b.design().estimate().iter().zip(theta) {
            assert!((e - t).abs() < 2e-3, "{e} vs {t}");
        }
    }

    #[test]
    fn theory_alphas_follow_the_spec_formulas() {
        let c = paper();
        let b = LinUcb::new(25, c);
        let mut out = [0.0];
        b.theory_hyperparameters(0, &mut out);
        // t = 0: 0.5 sqrt(25 ln 20) + 1
        assert!((out[0] - (0.5 * (25.0 * 20f64.ln()).sqrt() + 1.0)).abs() < 1e-12);
        b.theory_hyperparameters(13_999, &mut out);
        assert!((out[0] - (0.5 * (25.0 * (14_000.0f64 / 0.05).ln()).sqrt() + 1.0)).abs() < 1e-12);
        let ts = LinTs::new(25, c);
        ts.theory_hyperparameters(0, &mut out);
        assert!((out[0] - (0.1 * (25.0 * 20f64.ln()).sqrt() + 1.0)).abs() < 1e-12);
    }
}
