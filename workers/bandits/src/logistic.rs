//! The logistic link and a warm-started, incrementally preconditioned logistic MLE (UCB-GLM, GLM-TSL,
//! SGD-TS).
//!
//! [`LogisticMle`] minimises `sum_s [ln(1 + e^{z_s}) - y_s z_s] + (ridge/2) ||theta||^2`, `z_s = x_s^T theta`,
//! over the whole history. Refitting from scratch each round is what makes the reference code slow;
//! here every fit starts from the previous solution and uses as its Newton matrix a
//! Hessian approximation `P = ridge I + sum_s mu'(x_s^T theta_(s)) x_s x_s^T` that grows by one rank-1 term
//! per observation (weights frozen at the estimate current when the sample arrived). Because the new
//! solution is close to the old one, one or two preconditioned steps reach the tolerance; when they do
//! not, `P` is rebuilt exactly at the current iterate (the plain Newton matrix). The accuracy of the
//! solution is set by the stopping rule, not by `P`. Step halving guards against overshooting
//! (Newton with step halving, at most 50 iterations, tolerance 1e-8).

use crate::linalg::{cholesky_in_place, cholesky_solve_in_place, dispatch_dot, dot};
use armada_linalg::weighted_gram_symmetric;
use armada_math as math;

/// `sigma(z) = 1/(1 + e^{-z})`, evaluated without overflow for any sign of `z`.
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + math::exp(-z))
    } else {
        let e = math::exp(z);
        e / (1.0 + e)
    }
}

/// [`sigmoid`] of `N` values, bit for bit (NaN included), without its branch: the sign of
/// `x^T theta` over a history is a coin flip the branch predictor loses about half the time.
/// Each lane selects the exponent its branch would take (`-|z|`, but `z` itself for NaN, as
/// [`sigmoid`]), then both quotients are formed and one kept. Inlined, so that its lanes fill
/// the caller's registers (AVX2 or AVX-512 in the passes' copies).
#[inline(always)]
pub fn sigmoid_n<const N: usize>(z: [f64; N]) -> [f64; N] {
    let e = math::lanes::exp_n::<N>(std::array::from_fn(|s| if z[s] >= 0.0 { -z[s] } else { z[s] }));
    std::array::from_fn(|s| {
        let (positive, negative) = (1.0 / (1.0 + e[s]), e[s] / (1.0 + e[s]));
        if z[s] >= 0.0 {
            positive
        } else {
            negative
        }
    })
}

/// `ln(1 + e^z)` without overflow.
pub fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + math::log1p(math::exp(-z))
    } else {
        math::log1p(math::exp(z))
    }
}

/// `mu'(z) = sigma(z)(1 - sigma(z))`.
pub fn sigmoid_derivative(z: f64) -> f64 {
    let s = sigmoid(z);
    s * (1.0 - s)
}

/// Sup-norm below which a step is accepted on the slope test alone (see [`LogisticMle::fit`]).
pub const SMALL_STEP: f64 = 0.05;

/// Result of one [`LogisticMle::fit`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitReport {
    /// Newton-type steps taken.
    pub iterations: usize,
    /// Whether the last step was below the tolerance.
    pub converged: bool,
    /// Euclidean norm of the gradient of the objective at the returned estimate.
    pub gradient_norm: f64,
}

/// Counters over the life of a [`LogisticMle`], to see what the warm start buys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FitCounters {
    pub fits: usize,
    pub iterations: usize,
    pub exact_hessian_rebuilds: usize,
    pub not_converged: usize,
}

/// Ridge-penalised logistic regression on a growing history, refitted warm (see the module doc).
#[derive(Clone, Debug)]
pub struct LogisticMle {
    dim: usize,
    ridge: f64,
    tolerance: f64,
    max_iterations: usize,
    features: Vec<f64>,
    labels: Vec<f64>,
    estimate: Vec<f64>,
    /// `sum_s w_s x_s x_s^T` without the ridge (row-major); see the module doc.
    curvature: Vec<f64>,
    factor: Vec<f64>,
    gradient: Vec<f64>,
    trial: Vec<f64>,
    trial_gradient: Vec<f64>,
    step: Vec<f64>,
    /// `mu'(x_s^T theta)` of every sample, the weights of the exact curvature.
    curvature_weights: Vec<f64>,
    /// `sigmoid(x_s^T theta)` of every sample, from the last gradient pass, and that `theta`:
    /// the exact curvature at the same `theta` (GLM-TSL's, every round, at the estimate the
    /// fit's last pass was made at) reuses them, the same bits without the dot products.
    probabilities: Vec<f64>,
    probabilities_at: Vec<f64>,
    /// History length at the last exact rebuild of `curvature`.
    rebuilt_at_len: usize,
    counters: FitCounters,
}

impl LogisticMle {
    /// `ridge > 0` keeps the objective strictly convex (a tiny ridge 1e-6 for the
    /// "unregularised" fits). `capacity` pre-sizes the history so rounds do not reallocate.
    pub fn new(dim: usize, ridge: f64, capacity: usize) -> Self {
        assert!(ridge > 0.0, "a positive ridge keeps the MLE finite on separable data");
        LogisticMle {
            dim,
            ridge,
            tolerance: 1e-8,
            max_iterations: 50,
            features: Vec::with_capacity(capacity * dim),
            labels: Vec::with_capacity(capacity),
            estimate: vec![0.0; dim],
            curvature: vec![0.0; dim * dim],
            factor: vec![0.0; dim * dim],
            gradient: vec![0.0; dim],
            trial: vec![0.0; dim],
            trial_gradient: vec![0.0; dim],
            step: vec![0.0; dim],
            curvature_weights: Vec::with_capacity(capacity),
            probabilities: Vec::with_capacity(capacity),
            probabilities_at: vec![0.0; dim],
            rebuilt_at_len: 0,
            counters: FitCounters::default(),
        }
    }

    /// Sets the stopping tolerance on the sup-norm of the Newton step (default 1e-8).
    pub fn with_tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance;
        self
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
    pub fn ridge(&self) -> f64 {
        self.ridge
    }
    pub fn estimate(&self) -> &[f64] {
        &self.estimate
    }
    pub fn counters(&self) -> FitCounters {
        self.counters
    }
    /// The stored history, row-major `n x d`, and its labels.
    pub fn history(&self) -> (&[f64], &[f64]) {
        (&self.features, &self.labels)
    }

    /// Appends one observation (no refit).
    pub fn push(&mut self, x: &[f64], y: f64) {
        debug_assert_eq!(x.len(), self.dim);
        self.features.extend_from_slice(x);
        self.labels.push(y);
        // `gradient` is always the exact gradient at `estimate` (the objective is a sum), so the next fit
        // needs no pass over the history before its first step.
        let z = dot(x, &self.estimate);
        let residual = sigmoid(z) - y;
        for (g, xi) in self.gradient.iter_mut().zip(x) {
            *g += residual * xi;
        }
        let w = sigmoid_derivative(z);
        for (row, xi) in self.curvature.chunks_exact_mut(self.dim).zip(x) {
            for (c, xj) in row.iter_mut().zip(x) {
                *c += w * xi * xj;
            }
        }
    }

    /// Objective value and gradient at `theta`, over the whole history. O(n d).
    fn objective_and_gradient(&self, theta: &[f64], gradient: &mut [f64]) -> f64 {
        let mut value = 0.5 * self.ridge * dot(theta, theta);
        for (g, t) in gradient.iter_mut().zip(theta) {
            *g = self.ridge * t;
        }
        for (x, &y) in self.features.chunks_exact(self.dim).zip(&self.labels) {
            let z = dot(x, theta);
            // One exponential serves both softplus(z) and sigmoid(z).
            let e = math::exp(-z.abs());
            value += z.max(0.0) + math::log1p(e) - y * z;
            let residual = if z >= 0.0 { 1.0 / (1.0 + e) } else { e / (1.0 + e) } - y;
            for (g, xi) in gradient.iter_mut().zip(x) {
                *g += residual * xi;
            }
        }
        value
    }

    /// Overwrites `out` (row-major d x d) with the exact `sum_s mu'(x_s^T theta) x_s x_s^T` at the current
    /// estimate: O(n d^2), done as one `X^T W X` product from its upper triangle, mirrored
    /// ([`weighted_gram_symmetric`]).
    pub fn exact_curvature(&mut self, out: &mut [f64]) {
        let (n, d) = (self.labels.len(), self.dim);
        self.curvature_weights.resize(n, 0.0);
        let same_theta = self.probabilities_at.iter().zip(&self.estimate).all(|(a, b)| a.to_bits() == b.to_bits());
        if self.probabilities.len() == n && same_theta {
            weights_from_probabilities(&self.probabilities, &mut self.curvature_weights);
        } else {
            curvature_weights(&self.features, &self.estimate, &mut self.curvature_weights);
        }
        weighted_gram_symmetric(&self.features, d, &self.curvature_weights, out);
    }

    /// Replaces the Newton matrix by the exact curvature `sum_s mu'(x_s^T theta-hat) x_s x_s^T` at the
    /// current estimate (O(n d^2)) and returns it (row-major, without the ridge). GLM-TSL needs exactly
    /// this matrix every round; the next fit then starts with a true Newton step.
    pub fn rebuild_curvature(&mut self) -> &[f64] {
        let mut c = std::mem::take(&mut self.curvature);
        self.exact_curvature(&mut c);
        self.curvature = c;
        self.rebuilt_at_len = self.labels.len();
        self.counters.exact_hessian_rebuilds += 1;
        &self.curvature
    }

    fn factor_newton_matrix(&mut self) {
        let d = self.dim;
        self.factor.copy_from_slice(&self.curvature);
        for i in 0..d {
            self.factor[i * d + i] += self.ridge;
        }
        // curvature is PSD and ridge > 0, so this only fails on non-finite input; the ridge alone is a safe
        // (gradient-descent) fallback.
        if cholesky_in_place(&mut self.factor, d).is_err() {
            self.factor.fill(0.0);
            for i in 0..d {
                self.factor[i * d + i] = self.ridge.sqrt();
            }
        }
    }

    /// Gradient only (no objective, so no logarithm) at `theta`. O(n d), the fit's hot loop
    /// ([`add_log_likelihood_gradient`]).
    fn gradient_at(&mut self, theta: &[f64], gradient: &mut [f64]) {
        for (g, t) in gradient.iter_mut().zip(theta) {
            *g = self.ridge * t;
        }
        self.probabilities.resize(self.labels.len(), 0.0);
        add_log_likelihood_gradient(&self.features, &self.labels, theta, gradient, &mut self.probabilities);
        self.probabilities_at.copy_from_slice(theta);
    }

    /// Refits from the current estimate. Allocation-free once the history has its capacity.
    ///
    /// The gradient at the starting point is kept up to date by [`LogisticMle::push`]. Every accepted step is followed by an exact gradient pass, and the fit stops when the Newton-type
    /// step computed from that exact gradient is below the tolerance, so "converged" is verified, never
    /// predicted. Steps with sup-norm at most [`SMALL_STEP`] are checked without the objective (which needs a
    /// logarithm per sample): the objective is convex, so along the step `phi(s) = f(theta - s p)` a slope
    /// `phi'(1) <= |phi'(0)| / 2` means the full step decreases `f` (exactly so for the local quadratic
    /// model). Larger steps, or a failed check, fall back to step halving on the objective.
    pub fn fit(&mut self) -> FitReport {
        self.counters.fits += 1;
        // Rebuilding whenever the history has grown by 10% keeps the frozen weights fresh at an amortised
        // O(d^2) per observation.
        if self.labels.len() * 10 >= self.rebuilt_at_len * 11 + 10 {
            self.rebuild_curvature();
        }
        self.factor_newton_matrix();
        let mut previous_step_size = f64::INFINITY;
        let mut gradient = std::mem::take(&mut self.gradient);
        let mut trial_gradient = std::mem::take(&mut self.trial_gradient);
        let mut converged = false;
        let mut iterations = 0;
        while iterations < self.max_iterations {
            self.step.copy_from_slice(&gradient);
            cholesky_solve_in_place(&self.factor, &mut self.step);
            let step_size = self.step.iter().fold(0.0_f64, |m, s| m.max(s.abs()));
            if step_size <= self.tolerance {
                converged = true;
                break;
            }
            iterations += 1;
            let descent = dot(&gradient, &self.step); // = -phi'(0) > 0
            let mut accepted = false;
            if step_size <= SMALL_STEP {
                for ((t, e), s) in self.trial.iter_mut().zip(&self.estimate).zip(&self.step) {
                    *t = e - s;
                }
                let trial = std::mem::take(&mut self.trial);
                self.gradient_at(&trial, &mut trial_gradient);
                self.trial = trial;
                accepted = -dot(&trial_gradient, &self.step) <= 0.5 * descent;
            }
            if !accepted {
                // Step halving until the objective does not increase (up to rounding of the O(n) sum).
                let value = self.objective_and_gradient(&self.estimate, &mut trial_gradient);
                let slack = 1e-12 * (1.0 + value.abs());
                let mut scale = 1.0;
                for _ in 0..40 {
                    for ((t, e), s) in self.trial.iter_mut().zip(&self.estimate).zip(&self.step) {
                        *t = e - scale * s;
                    }
                    if self.objective_and_gradient(&self.trial, &mut trial_gradient) <= value + slack {
                        accepted = true;
                        break;
                    }
                    scale *= 0.5;
                }
            }
            if !accepted {
                break;
            }
            std::mem::swap(&mut self.estimate, &mut self.trial);
            std::mem::swap(&mut gradient, &mut trial_gradient);
            // With a good Newton matrix each step shrinks the next by orders of magnitude; a poor
            // contraction means its frozen weights are stale, so switch to the exact Hessian (true Newton).
            if step_size > 0.05 * previous_step_size {
                self.rebuild_curvature();
                self.factor_newton_matrix();
            }
            previous_step_size = step_size;
        }
        if !converged {
            self.counters.not_converged += 1;
        }
        self.counters.iterations += iterations;
        let gradient_norm = dot(&gradient, &gradient).sqrt();
        self.gradient = gradient;
        self.trial_gradient = trial_gradient;
        FitReport { iterations, converged, gradient_norm }
    }
}

/// Samples per chunk of [`gradient_pass`]: a multiple of eight, small enough that a chunk's rows
/// (64 x 25 x 8 bytes at d = 25) stay in L1 between its first and last pass.
const GRADIENT_CHUNK: usize = 64;

dispatch_dot! {
    /// Adds `sum_s (sigmoid(x_s^T theta) - y_s) x_s` over the row-major history `features` (one
    /// row of `theta.len()` per label) to `gradient`, and writes each `sigmoid(x_s^T theta)` to
    /// `probabilities` ([`gradient_pass`]).
    fn add_log_likelihood_gradient(features: &[f64], labels: &[f64], theta: &[f64], gradient: &mut [f64], probabilities: &mut [f64]) => gradient_pass
}

dispatch_dot! {
    /// Overwrites `weights` with `mu'(x_s^T theta)` for each row `x_s` of `features`, the `W` of
    /// the exact curvature `X^T W X` ([`curvature_weights_pass`]).
    fn curvature_weights(features: &[f64], theta: &[f64], weights: &mut [f64]) => curvature_weights_pass
}

/// The pass of [`curvature_weights`], `G` rows at a time given their dot products, bit for
/// bit `sigmoid_derivative(dot(x, theta))` row by row ([`sigmoid_n`] is [`sigmoid`]'s bits).
#[inline(always)]
fn curvature_weights_pass<const G: usize>(
    features: &[f64],
    theta: &[f64],
    weights: &mut [f64],
    dot_rows: impl Fn(&[f64], &[f64]) -> [f64; G],
) {
    let d = theta.len();
    let blocks = features.chunks_exact(G * d);
    let tail = blocks.remainder();
    let mut out = weights.chunks_exact_mut(G);
    for (rows, out) in blocks.zip(&mut out) {
        for (w, p) in out.iter_mut().zip(sigmoid_n(dot_rows(rows, theta))) {
            *w = p * (1.0 - p);
        }
    }
    for (w, x) in out.into_remainder().iter_mut().zip(tail.chunks_exact(d)) {
        *w = sigmoid_derivative(dot(x, theta));
    }
}

/// The gradient pass of [`add_log_likelihood_gradient`], `G` samples at a time given their
/// dot products (bit for bit).
///
/// Samples go in chunks of [`GRADIENT_CHUNK`], each in three passes: the linear predictors `G`
/// rows at a time, then the residuals `sigmoid(z) - y` ([`sigmoid_n`]: no branch on the sign),
/// then the update, while the chunk's rows are still in L1. Each component of the gradient
/// still adds the samples' terms one by one in history order, so the result is bit for bit the
/// one-sample loop's.
#[inline(always)]
fn gradient_pass<const G: usize>(
    features: &[f64],
    labels: &[f64],
    theta: &[f64],
    gradient: &mut [f64],
    probabilities: &mut [f64],
    dot_rows: impl Fn(&[f64], &[f64]) -> [f64; G],
) {
    let d = theta.len();
    let gradient = &mut gradient[..d];
    let whole = labels.len() / G * G;
    let mut residuals = [0.0; GRADIENT_CHUNK];
    let chunks = features[..whole * d].chunks(GRADIENT_CHUNK * d).zip(labels[..whole].chunks(GRADIENT_CHUNK));
    for ((rows, y), probabilities) in chunks.zip(probabilities[..whole].chunks_mut(GRADIENT_CHUNK)) {
        let residuals = &mut residuals[..y.len()];
        for (r, block) in residuals.chunks_exact_mut(G).zip(rows.chunks_exact(G * d)) {
            r.copy_from_slice(&dot_rows(block, theta));
        }
        for ((r, y), probabilities) in
            residuals.chunks_exact_mut(G).zip(y.chunks_exact(G)).zip(probabilities.chunks_exact_mut(G))
        {
            let p = sigmoid_n::<G>(std::array::from_fn(|s| r[s]));
            probabilities.copy_from_slice(&p);
            for s in 0..G {
                r[s] = p[s] - y[s];
            }
        }
        for (r, block) in residuals.chunks_exact(G).zip(rows.chunks_exact(G * d)) {
            let x: [&[f64]; G] = std::array::from_fn(|s| &block[s * d..][..d]);
            for (j, g) in gradient.iter_mut().enumerate() {
                for s in 0..G {
                    *g += r[s] * x[s][j];
                }
            }
        }
    }
    let tail = features[whole * d..].chunks_exact(d).zip(&labels[whole..]);
    for ((x, &y), probability) in tail.zip(&mut probabilities[whole..]) {
        *probability = sigmoid(dot(x, theta));
        let residual = *probability - y;
        for (g, xi) in gradient.iter_mut().zip(x) {
            *g += residual * xi;
        }
    }
}

/// [`curvature_weights`] from each row's `sigmoid(x_s^T theta)`, as the gradient pass at that
/// `theta` left them: `mu'` is `p (1 - p)`, as [`sigmoid_derivative`] forms it.
fn weights_from_probabilities(probabilities: &[f64], weights: &mut [f64]) {
    for (w, &p) in weights.iter_mut().zip(probabilities) {
        *w = p * (1.0 - p);
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops mirror the formulas they check
mod tests {
    use super::*;
    use crate::linalg::tests::dense_inverse;
    use crate::linalg::{dot4, matvec};
    use armada_linalg::{matmul, Accum, MatMut, MatRef};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn synthetic_history(seed: u64, n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let h = 1.0 / (d as f64).sqrt();
        let theta: Vec<f64> = (0..d).map(|_| 3.0 * h * (2.0 * rng.random::<f64>() - 1.0)).collect();
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for _ in 0..n {
            let x: Vec<f64> = (0..d).map(|_| h * (2.0 * rng.random::<f64>() - 1.0)).collect();
            let p = sigmoid(dot(&x, &theta));
            ys.push(if rng.random::<f64>() < p { 1.0 } else { 0.0 });
            xs.extend(x);
        }
        (xs, ys)
    }

    /// Independent reference: plain Newton from zero with a dense inverse, run for many iterations.
    fn newton_from_scratch(xs: &[f64], ys: &[f64], d: usize, ridge: f64) -> Vec<f64> {
        let mut theta = vec![0.0; d];
        for _ in 0..100 {
            let mut g: Vec<f64> = theta.iter().map(|t| ridge * t).collect();
            let mut h = vec![0.0; d * d];
            for i in 0..d {
                h[i * d + i] = ridge;
            }
            for (x, y) in xs.chunks_exact(d).zip(ys) {
                let z: f64 = x.iter().zip(&theta).map(|(a, b)| a * b).sum();
                let p = 1.0 / (1.0 + (-z).exp());
                for i in 0..d {
                    g[i] += (p - y) * x[i];
                    for j in 0..d {
                        h[i * d + j] += p * (1.0 - p) * x[i] * x[j];
                    }
                }
            }
            let mut step = vec![0.0; d];
            matvec(&dense_inverse(&h, d), &g, &mut step);
            for (t, s) in theta.iter_mut().zip(&step) {
                *t -= s;
            }
        }
        theta
    }

    fn naive_gradient(xs: &[f64], ys: &[f64], d: usize, ridge: f64, theta: &[f64]) -> Vec<f64> {
        let mut g: Vec<f64> = theta.iter().map(|t| ridge * t).collect();
        for (x, y) in xs.chunks_exact(d).zip(ys) {
            let z: f64 = x.iter().zip(theta).map(|(a, b)| a * b).sum();
            for i in 0..d {
                g[i] += (1.0 / (1.0 + (-z).exp()) - y) * x[i];
            }
        }
        g
    }

    /// The gradient pass (eight samples at a time where AVX-512 runs, else four, AVX2 where the
    /// processor has it) gives the bits of the one-sample loop compiled for the baseline, for
    /// every length of history (so every tail of 0-7 samples) and a dimension that is not a
    /// multiple of four.
    #[test]
    fn gradient_pass_is_bit_for_bit_the_one_sample_loop() {
        // Sizes below, at and across the 64-sample chunks, with and without a tail of 1-3 samples.
        for (n, d) in [(0, 3), (1, 25), (7, 25), (64, 25), (103, 6), (9, 1), (130, 25), (259, 25), (200, 7), (77, 33)] {
            let (xs, ys) = synthetic_history(11 + n as u64, n, d);
            let theta: Vec<f64> = (0..d).map(|i| 0.3 - 0.07 * i as f64).collect();
            // Each copy's gradient and probabilities.
            let run = |pass: &dyn Fn(&mut [f64], &mut [f64])| {
                let (mut gradient, mut probabilities) = (vec![0.25; d], vec![f64::NAN; n]);
                pass(&mut gradient, &mut probabilities);
                (gradient, probabilities)
            };
            let fast = run(&|g, p| add_log_likelihood_gradient(&xs, &ys, &theta, g, p));
            // The baseline x86-64 path too (the one above runs AVX2 or AVX-512 where the processor has it).
            let portable = run(&|g, p| gradient_pass(&xs, &ys, &theta, g, p, dot4));
            // And the four-row pass compiled for AVX2 where AVX-512 took the dispatch above.
            let four = run(&|g, p| {
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    #[target_feature(enable = "avx2")]
                    fn avx2(xs: &[f64], ys: &[f64], theta: &[f64], g: &mut [f64], p: &mut [f64]) {
                        gradient_pass(xs, ys, theta, g, p, |rows, b| crate::linalg::dot4_avx2(rows, b));
                    }
                    // SAFETY: the processor has AVX2, checked just above.
                    return unsafe { avx2(&xs, &ys, &theta, g, p) };
                }
                gradient_pass(&xs, &ys, &theta, g, p, dot4)
            });
            let mut slow = vec![0.25; d];
            let mut slow_probabilities = Vec::new();
            for (x, &y) in xs.chunks_exact(d).zip(&ys) {
                slow_probabilities.push(sigmoid(dot(x, &theta)));
                let residual = sigmoid(dot(x, &theta)) - y;
                for (g, xi) in slow.iter_mut().zip(x) {
                    *g += residual * xi;
                }
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (copy, (gradient, probabilities)) in
                [("dispatched", &fast), ("baseline", &portable), ("four rows", &four)]
            {
                assert_eq!(bits(gradient), bits(&slow), "n = {n}, d = {d}, {copy}");
                assert_eq!(bits(probabilities), bits(&slow_probabilities), "n = {n}, d = {d}, {copy}");
            }
        }
    }

    /// The curvature from the probabilities the fit's last gradient pass left is the one
    /// computed afresh, to the bit; and a stale memo (another estimate, a longer history) is
    /// not used.
    #[test]
    fn curvature_from_the_last_pass_is_the_fresh_one() {
        let d = 25;
        let (xs, ys) = synthetic_history(31, 403, d);
        let mut mle = LogisticMle::new(d, 1.0, 403);
        // The product of `W X`, formed row by row from the one-row formula, and `X`.
        let fresh = |mle: &LogisticMle| {
            let weighted: Vec<f64> = mle
                .features
                .chunks_exact(d)
                .flat_map(|x| {
                    let w = sigmoid_derivative(dot(x, &mle.estimate));
                    x.iter().map(move |xi| w * xi)
                })
                .collect();
            let mut h = vec![0.0; d * d];
            let lhs = MatRef::from_row_major_slice(&weighted, mle.len(), d);
            let rhs = MatRef::from_row_major_slice(&mle.features, mle.len(), d);
            matmul(MatMut::from_column_major_slice_mut(&mut h, d, d), Accum::Replace, lhs.transpose(), rhs, 1.0);
            h
        };
        let mut reused = 0;
        for s in 0..403 {
            mle.push(&xs[s * d..(s + 1) * d], ys[s]);
            if s < 2 * d {
                continue;
            }
            let report = mle.fit();
            let memo_holds = mle.probabilities.len() == mle.len()
                && mle.probabilities_at.iter().zip(&mle.estimate).all(|(a, b)| a.to_bits() == b.to_bits());
            reused += usize::from(memo_holds && report.iterations > 0);
            let mut got = vec![0.0; d * d];
            mle.exact_curvature(&mut got);
            // exact_curvature keeps the product's (column-major) upper triangle and mirrors it;
            // so does this reference.
            let mut want = fresh(&mle);
            for j in 0..d {
                for i in 0..j {
                    want[j + i * d] = want[i + j * d];
                }
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "round {s}");
        }
        assert!(reused > 300, "the memo served {reused} of 353 fits");
    }

    /// Refitting warm after every one of 1,500 observations ends at the same point as a long Newton run
    /// from scratch, with the (independently computed) gradient ~ 0, in at most 4 steps per fit on average
    /// and with an exact Hessian in at most one fit in ten.
    #[test]
    fn warm_started_fits_match_newton_from_scratch_with_zero_gradient() {
        let (d, n) = (8, 1500);
        for ridge in [1.0, 1e-6] {
            let (xs, ys) = synthetic_history(11, n, d);
            let mut mle = LogisticMle::new(d, ridge, n);
            for s in 0..n {
                mle.push(&xs[s * d..(s + 1) * d], ys[s]);
                if s >= 2 * d {
                    let report = mle.fit();
                    assert!(report.converged, "fit {s}: {report:?}");
                }
            }
            let reference = newton_from_scratch(&xs, &ys, d, ridge);
            for (a, b) in mle.estimate().iter().zip(&reference) {
                assert!((a - b).abs() < 1e-7, "ridge {ridge}: {a} vs {b}");
            }
            let g = naive_gradient(&xs, &ys, d, ridge, mle.estimate());
            assert!(dot(&g, &g).sqrt() < 1e-6, "gradient {g:?}");
            let c = mle.counters();
            assert!(c.iterations <= 4 * c.fits, "warm start should need few steps: {c:?}");
            assert!(c.exact_hessian_rebuilds * 10 <= c.fits, "exact Hessians should be rare: {c:?}");
        }
    }

    /// The dispatched and baseline copies of the curvature weights, bit for bit the row-by-row
    /// formula, with and without a tail of 1-7 rows.
    #[test]
    fn curvature_weights_are_bit_for_bit_the_one_row_formula() {
        for (n, d) in [(0, 3), (1, 25), (7, 25), (64, 25), (103, 6), (9, 1), (13, 25), (8, 4)] {
            let (xs, _) = synthetic_history(21 + n as u64, n, d);
            let theta: Vec<f64> = (0..d).map(|i| 0.9 - 0.11 * i as f64).collect();
            let expected: Vec<u64> = xs.chunks_exact(d).map(|x| sigmoid_derivative(dot(x, &theta)).to_bits()).collect();
            let mut dispatched = vec![f64::NAN; n];
            curvature_weights(&xs, &theta, &mut dispatched);
            let mut portable = vec![f64::NAN; n];
            curvature_weights_pass(&xs, &theta, &mut portable, dot4);
            for got in [dispatched, portable] {
                assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), expected, "n = {n}, d = {d}");
            }
        }
    }

    #[test]
    fn exact_curvature_matches_a_naive_sum() {
        let d = 5;
        let (xs, ys) = synthetic_history(5, 300, d);
        let mut mle = LogisticMle::new(d, 1.0, 300);
        for s in 0..300 {
            mle.push(&xs[s * d..(s + 1) * d], ys[s]);
        }
        mle.fit();
        let mut h = vec![0.0; d * d];
        mle.exact_curvature(&mut h);
        let theta = mle.estimate().to_vec();
        for i in 0..d {
            for j in 0..d {
                assert_eq!(h[i * d + j].to_bits(), h[j * d + i].to_bits(), "({i}, {j}): exactly symmetric");
                let naive: f64 = xs
                    .chunks_exact(d)
                    .map(|x| sigmoid_derivative(x.iter().zip(&theta).map(|(a, b)| a * b).sum()) * x[i] * x[j])
                    .sum();
                assert!((h[i * d + j] - naive).abs() < 1e-12 * (1.0 + naive.abs()));
            }
        }
    }

    #[test]
    fn sigmoid_n_is_bit_for_bit_sigmoid() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let edges =
            [0.0, -0.0, 1e-300, -1e-300, 36.7, -36.7, 745.2, -745.2, 800.0, -800.0, f64::INFINITY, f64::NEG_INFINITY];
        let random = (0..400_000).map(|i| (rng.random::<f64>() - 0.5) * if i % 2 == 0 { 20.0 } else { 1500.0 });
        let values: Vec<f64> = edges.into_iter().chain(random).chain([f64::NAN; 4]).collect();
        for z in values.chunks_exact(8) {
            let eight = sigmoid_n::<8>(z.try_into().unwrap());
            let four = [sigmoid_n::<4>(z[..4].try_into().unwrap()), sigmoid_n::<4>(z[4..].try_into().unwrap())];
            for ((&b, &f), &z) in eight.iter().zip(four.as_flattened()).zip(z) {
                assert_eq!(b.to_bits(), sigmoid(z).to_bits(), "z = {z}");
                assert_eq!(f.to_bits(), sigmoid(z).to_bits(), "z = {z}");
            }
        }
    }

    #[test]
    fn link_helpers_are_stable_at_extreme_arguments() {
        assert_eq!(sigmoid(-800.0), 0.0);
        assert_eq!(sigmoid(800.0), 1.0);
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-16);
        assert!((softplus(800.0) - 800.0).abs() < 1e-12);
        assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-15);
        // kappa = mu'(1) = 0.19661..., the code's 0.196
        assert!((sigmoid_derivative(1.0) - 0.196_611_933).abs() < 1e-9);
    }
}
