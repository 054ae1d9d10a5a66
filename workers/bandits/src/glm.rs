//! UCB-GLM (Li, Lu & Zhou 2017) and GLM-TSL (Kveton et al. 2020): logistic bandits that refit the MLE on the whole
//! history every round.
//!
//! The refit is the warm-started [`LogisticMle`], so a round costs a few O(n d) passes instead of a fit
//! from scratch. GLM-TSL additionally needs the Hessian `H = lambda I + sum mu'(x^T theta-bar) x x^T` at
//! the new estimate every round: that O(n d^2) product is the cost centre of the whole crate.
//! Neither the MLE nor `H` depends on the exploration hyperparameter, which only scales the index.

use crate::hyper::{Hyperparameter, TheoryConstants};
use crate::linalg::{cholesky_in_place, dot, solve_lower_transpose_in_place, RidgeDesign};
use crate::logistic::LogisticMle;
use crate::{fill_standard_normal, point, random_arm, ArmScores, BottomBandit, Contexts};
use armada_math as math;
use ndarray::{ArrayView1, ArrayView2};
use rand::RngCore;

const UCB_GLM_HYPERPARAMETERS: [Hyperparameter; 1] = [Hyperparameter::on_paper_box("alpha", "exploration rate")];
const GLM_TSL_HYPERPARAMETERS: [Hyperparameter; 1] = [Hyperparameter::on_paper_box("a", "posterior scale")];

/// Ridge of the "unregularised" MLE fits: it keeps the fit finite on separable data.
pub const TINY_RIDGE: f64 = 1e-6;
/// UCB-GLM's random warm-up of the baselines in the code (the code's CDT uses 90).
pub const UCB_GLM_WARMUP: usize = 30;
/// GLM-TSL's random warm-up (the reference code's, for every tuner).
pub const GLM_TSL_WARMUP: usize = 150;

/// UCB-GLM (Li, Lu & Zhou 2017): `argmax_a x^T theta-hat + alpha ||x||_{V^{-1}}` with the ridge-penalised
/// (`lambda/2 ||theta||^2`, sklearn `C = 1`) logistic MLE `theta-hat` and `V = lambda I + sum x x^T`
/// including the warm-up pulls.
#[derive(Clone, Debug)]
pub struct UcbGlm {
    mle: LogisticMle,
    design: RidgeDesign,
    theory: TheoryConstants,
    warmup: usize,
    scores: ArmScores,
}

impl UcbGlm {
    pub fn new(dim: usize, theory: TheoryConstants) -> Self {
        Self::with_warmup(dim, theory, UCB_GLM_WARMUP)
    }
    pub fn with_warmup(dim: usize, theory: TheoryConstants, warmup: usize) -> Self {
        UcbGlm {
            mle: LogisticMle::new(dim, theory.lambda, theory.horizon),
            design: RidgeDesign::new(dim, theory.lambda),
            theory,
            warmup,
            scores: ArmScores::default(),
        }
    }
    pub fn mle(&self) -> &LogisticMle {
        &self.mle
    }
    pub fn index(&self, x: &[f64], alpha: f64) -> f64 {
        dot(x, self.mle.estimate()) + alpha * self.design.width_squared(x).sqrt()
    }
}

impl BottomBandit for UcbGlm {
    fn name(&self) -> &'static str {
        "UCB-GLM"
    }
    fn dim(&self) -> usize {
        self.design.dim()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        &UCB_GLM_HYPERPARAMETERS
    }
    /// Constant `(sigma/kappa) sqrt((d/2) ln(1 + 2T/d) + ln(1/delta))` (24.3 for d = 25, T = 14000).
    fn theory_hyperparameters(&self, _round: usize, out: &mut [f64]) {
        let c = &self.theory;
        let d = self.dim() as f64;
        out[0] =
            c.sigma / c.kappa * (d / 2.0 * math::ln(1.0 + 2.0 * c.horizon as f64 / d) + math::ln(1.0 / c.delta)).sqrt();
    }
    fn intrinsic_warmup(&self) -> usize {
        self.warmup
    }
    fn rounds_observed(&self) -> usize {
        self.mle.len()
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        if self.mle.len() < self.warmup {
            return random_arm(arms.n_arms(), rng);
        }
        self.scores.optimistic(&arms, self.mle.estimate(), &self.design, hp[0])
    }
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, _hp: &[f64], _rng: &mut dyn RngCore) {
        let x = point(x);
        let x: &[f64] = &x;
        self.design.observe(x, 0.0);
        self.mle.push(x, y);
        if self.mle.len() >= self.warmup {
            self.mle.fit();
        }
    }
}

/// GLM-TSL (Kveton et al. 2020): `theta~ ~ N(theta-bar, a^2 H^{-1})` around the (tiny-ridge) logistic MLE,
/// `argmax_a x^T theta~`.
#[derive(Clone, Debug)]
pub struct GlmTsl {
    mle: LogisticMle,
    theory: TheoryConstants,
    warmup: usize,
    /// Lower Cholesky factor of `H` at the latest fit (row-major).
    hessian_factor: Vec<f64>,
    scratch_factor: Vec<f64>,
    sample: Vec<f64>,
    scores: ArmScores,
    numerical_failures: usize,
}

impl GlmTsl {
    pub fn new(dim: usize, theory: TheoryConstants) -> Self {
        Self::with_warmup(dim, theory, GLM_TSL_WARMUP)
    }
    pub fn with_warmup(dim: usize, theory: TheoryConstants, warmup: usize) -> Self {
        let mut hessian_factor = vec![0.0; dim * dim];
        for i in 0..dim {
            hessian_factor[i * dim + i] = theory.lambda.sqrt();
        }
        GlmTsl {
            mle: LogisticMle::new(dim, TINY_RIDGE, theory.horizon),
            theory,
            warmup,
            hessian_factor,
            scratch_factor: vec![0.0; dim * dim],
            sample: vec![0.0; dim],
            scores: ArmScores::default(),
            numerical_failures: 0,
        }
    }
    pub fn mle(&self) -> &LogisticMle {
        &self.mle
    }
    /// Cholesky factor `L` of the current `H = L L^T`.
    pub fn hessian_factor(&self) -> &[f64] {
        &self.hessian_factor
    }
    /// Rounds where `H` could not be factored (non-finite estimate); the previous `H` was kept (a guard
    /// where the reference code aborts the run).
    pub fn numerical_failures(&self) -> usize {
        self.numerical_failures
    }
    pub fn last_sample(&self) -> &[f64] {
        &self.sample
    }
}

impl BottomBandit for GlmTsl {
    fn name(&self) -> &'static str {
        "GLM-TSL"
    }
    fn dim(&self) -> usize {
        self.sample.len()
    }
    fn hyperparameters(&self) -> &'static [Hyperparameter] {
        &GLM_TSL_HYPERPARAMETERS
    }
    /// Constant `2.5 sqrt(d ln(T/d) + 2 ln T)` (33.3 for d = 25, T = 14000).
    fn theory_hyperparameters(&self, _round: usize, out: &mut [f64]) {
        let (d, t) = (self.dim() as f64, self.theory.horizon as f64);
        out[0] = 2.5 * (d * math::ln(t / d) + 2.0 * math::ln(t)).sqrt();
    }
    fn intrinsic_warmup(&self) -> usize {
        self.warmup
    }
    fn rounds_observed(&self) -> usize {
        self.mle.len()
    }
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hp: &[f64], rng: &mut dyn RngCore) -> usize {
        let arms = Contexts::new(arms);
        if self.mle.len() < self.warmup {
            return random_arm(arms.n_arms(), rng);
        }
        fill_standard_normal(&mut self.sample, rng);
        solve_lower_transpose_in_place(&self.hessian_factor, &mut self.sample);
        for (s, m) in self.sample.iter_mut().zip(self.mle.estimate()) {
            *s = m + hp[0] * *s;
        }
        self.scores.greedy(&arms, &self.sample)
    }
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, _hp: &[f64], _rng: &mut dyn RngCore) {
        let x = point(x);
        let x: &[f64] = &x;
        self.mle.push(x, y);
        if self.mle.len() < self.warmup {
            return;
        }
        self.mle.fit();
        let d = self.dim();
        // Factor into the scratch buffer so a failure keeps the previous H.
        self.scratch_factor.copy_from_slice(self.mle.rebuild_curvature());
        for i in 0..d {
            self.scratch_factor[i * d + i] += self.theory.lambda;
        }
        if cholesky_in_place(&mut self.scratch_factor, d).is_ok() {
            std::mem::swap(&mut self.hessian_factor, &mut self.scratch_factor);
        } else {
            self.numerical_failures += 1;
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops mirror the formulas they check
mod tests {
    use super::*;
    use crate::contexts_view;
    use crate::logistic::sigmoid;
    use ndarray::aview1;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn feed(bandit: &mut dyn BottomBandit, n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let d = bandit.dim();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let theta: Vec<f64> = (0..d).map(|i| if i % 2 == 0 { 0.8 } else { -0.5 }).collect();
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let x: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            let y = if rng.random::<f64>() < sigmoid(dot(&x, &theta)) { 1.0 } else { 0.0 };
            bandit.observe(aview1(&x), y, &[1.0], &mut rng);
            xs.extend(x);
            ys.push(y);
        }
        (xs, ys)
    }

    /// UCB-GLM's estimate is the lambda-penalised MLE: its gradient, recomputed naively, vanishes; its
    /// width is the ridge design's.
    #[test]
    fn ucb_glm_estimate_zeroes_the_penalised_gradient() {
        let mut b = UcbGlm::new(4, TheoryConstants::paper(1000));
        let (xs, ys) = feed(&mut b, 400, 3);
        let theta = b.mle().estimate().to_vec();
        let mut g: Vec<f64> = theta.iter().map(|t| 1.0 * t).collect();
        for (x, y) in xs.chunks_exact(4).zip(&ys) {
            let r = sigmoid(dot(x, &theta)) - y;
            for i in 0..4 {
                g[i] += r * x[i];
            }
        }
        assert!(dot(&g, &g).sqrt() < 1e-7, "{g:?}");
        let x = [0.1, -0.2, 0.3, 0.0];
        let width = b.design.width_squared(&x).sqrt();
        assert!((b.index(&x, 2.0) - (dot(&x, &theta) + 2.0 * width)).abs() < 1e-14);
        let mut out = [0.0];
        UcbGlm::new(25, TheoryConstants::paper(14_000)).theory_hyperparameters(0, &mut out);
        assert!((out[0] - 24.3).abs() < 0.05, "expected 24.3, got {}", out[0]);
    }

    /// GLM-TSL's H factor reproduces lambda I + sum mu'(x^T theta-bar) x x^T computed naively at the final
    /// estimate, and the theory value is the reference code's 33.3.
    #[test]
    fn glm_tsl_hessian_is_rebuilt_at_the_current_mle() {
        let d = 4;
        let mut b = GlmTsl::new(d, TheoryConstants::paper(1000));
        let (xs, _) = feed(&mut b, 300, 4);
        let theta = b.mle().estimate().to_vec();
        let l = b.hessian_factor();
        for i in 0..d {
            for j in 0..d {
                let llt: f64 = (0..d).map(|k| l[i * d + k] * l[j * d + k]).sum();
                let naive: f64 = xs
                    .chunks_exact(d)
                    .map(|x| {
                        let p = sigmoid(dot(x, &theta));
                        p * (1.0 - p) * x[i] * x[j]
                    })
                    .sum::<f64>()
                    + if i == j { 1.0 } else { 0.0 };
                assert!((llt - naive).abs() < 1e-10 * naive.abs().max(1.0), "H[{i}{j}] {llt} vs {naive}");
            }
        }
        assert_eq!(b.numerical_failures(), 0);
        let mut out = [0.0];
        GlmTsl::new(25, TheoryConstants::paper(14_000)).theory_hyperparameters(0, &mut out);
        assert!((out[0] - 33.3).abs() < 0.05, "expected 33.3, got {}", out[0]);
    }

    /// Both play uniformly at random during their intrinsic warm-up, whatever the hyperparameter.
    #[test]
    fn warmup_rounds_are_uniformly_random() {
        let features: Vec<f64> = (0..4 * 2).map(|i| i as f64).collect();
        let arms = contexts_view(&features, 2);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut counts = [0usize; 4];
        let mut b = GlmTsl::new(2, TheoryConstants::paper(100));
        for _ in 0..4000 {
            counts[b.choose(arms, &[1.0], &mut rng)] += 1;
        }
        assert!(counts.iter().all(|&c| (850..1150).contains(&c)), "{counts:?}");
        assert_eq!(b.intrinsic_warmup(), 150);
        assert_eq!(UcbGlm::new(2, TheoryConstants::paper(100)).intrinsic_warmup(), 30);
    }
}
