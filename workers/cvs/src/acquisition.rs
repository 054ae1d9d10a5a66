//! Per-set optimisation of expected confidence bounds and Thompson samples (Monte Carlo
//! expectations over the random partial query), shared by every algorithm.
//!
//! `optimise_set` maximises `x^j -> E_hat[mu + beta sigma]` for one or more `beta` (the upper and
//! the lower bound of a set share the posterior moments of one warm-up batch). `TsExpectation`
//! averages a random-Fourier-feature sample path over the MC samples in O(D) per point:
//! with `a_k = omega_k^I . x^I` and `b_nk = omega_k^Ibar . s_n`,
//! `mean_n cos(a_k + b_nk) = cos a_k Cbar_k - sin a_k Sbar_k` (and likewise for `sin`).

use armada_core::StreamRng;
use armada_gp::{RandomFourierFeatures, Rows};
use armada_math::lanes;
use ndarray::{Array2, ArrayView2};

use crate::maximize::{draw_seeds, maximize, maximize_from, uniform_points, Ascent, MaximizeConfig, Maximum};
use crate::surrogate::{Posterior, SetCache, SetExpectation};

/// Maximise `E_hat[mu + beta sigma]` over set `ctrl` for each `beta`, sharing the warm-up.
pub fn optimise_set(
    post: &Posterior,
    ctrl: &[usize],
    cache: &SetCache,
    betas: &[f64],
    config: MaximizeConfig,
    rng: &mut StreamRng,
) -> Vec<Maximum> {
    let draws = SetDraws::draw(rng, config, ctrl.len(), betas.len());
    optimise_set_drawn(post, ctrl, cache, betas, config, &draws)
}

/// The random draws of one [`optimise_set`] call, in the order it makes them: the warm-up
/// points, then each `beta`'s restart seeds. Drawn first, they let the sets of an iteration
/// be optimised on other threads with the numbers of a sequential run.
pub struct SetDraws {
    warm: Array2<f64>,
    seeds: Vec<Vec<f64>>,
}

impl SetDraws {
    pub fn draw(rng: &mut StreamRng, config: MaximizeConfig, dim: usize, n_betas: usize) -> Self {
        let warm = uniform_points(rng, config.n_warmup.max(1), dim);
        let seeds = (0..n_betas).map(|_| draw_seeds(rng, config.n_iter, dim)).collect();
        Self { warm, seeds }
    }
}

/// [`optimise_set`] with its draws made beforehand.
pub fn optimise_set_drawn(
    post: &Posterior,
    ctrl: &[usize],
    cache: &SetCache,
    betas: &[f64],
    config: MaximizeConfig,
    draws: &SetDraws,
) -> Vec<Maximum> {
    let mut e = SetExpectation::new(post, ctrl, cache);
    let dim = e.dim();
    let warm = &draws.warm;
    let n_warm = config.n_warmup.max(1);
    let (mut mu, mut sigma) = (vec![0.0; n_warm], vec![0.0; n_warm]);
    e.moments_many(warm.view(), &mut mu, &mut sigma);
    let mut bound = Bound { e, beta: 0.0, dmu: vec![0.0; dim], dsigma: vec![0.0; dim] };
    betas
        .iter()
        .zip(&draws.seeds)
        .map(|(&beta, seeds)| {
            let values: Vec<f64> = mu.iter().zip(&sigma).map(|(m, s)| m + beta * s).collect();
            bound.beta = beta;
            maximize_from(seeds, warm.view(), &values, &mut bound)
        })
        .collect()
}

/// `E_hat[mu + beta sigma]` of one set as the maximiser climbs it: the gradient's second
/// triangular solve only at the points L-BFGS accepts.
struct Bound<'p> {
    e: SetExpectation<'p>,
    beta: f64,
    dmu: Vec<f64>,
    dsigma: Vec<f64>,
}

impl Ascent for Bound<'_> {
    fn value(&mut self, x: &[f64]) -> f64 {
        let (m, s) = self.e.moments(x);
        m + self.beta * s
    }

    fn gradient(&mut self, grad: &mut [f64]) {
        self.e.gradient(&mut self.dmu, &mut self.dsigma);
        for (k, g) in grad.iter_mut().enumerate() {
            *g = self.dmu[k] + self.beta * self.dsigma[k];
        }
    }
}

/// `E_hat[g([x^I, X^Ibar])]` for an RFF sample path `g = phi^T theta`.
pub struct TsExpectation<'a> {
    rff: &'a RandomFourierFeatures,
    theta: &'a [f64],
    ctrl: Vec<usize>,
    /// `mean_n cos(b_nk)`, `mean_n sin(b_nk)` (1 and 0 for a full set).
    cbar: Vec<f64>,
    sbar: Vec<f64>,
}

impl<'a> TsExpectation<'a> {
    /// The expectation over `samples`, one sample of every variable per row (laid out once:
    /// a row-major view is read in place, any other is copied, O(n_mc d)).
    pub fn new(rff: &'a RandomFourierFeatures, theta: &'a [f64], ctrl: &[usize], samples: ArrayView2<'_, f64>) -> Self {
        let samples = Rows::new(samples);
        let samples = samples.as_slice();
        let d = rff.dim();
        let random: Vec<usize> = (0..d).filter(|l| !ctrl.contains(l)).collect();
        let n_freq = rff.n_frequencies();
        let (mut cbar, mut sbar) = (vec![1.0; n_freq], vec![0.0; n_freq]);
        if !random.is_empty() {
            let n_mc = samples.len() / d;
            for k in 0..n_freq {
                let w = rff.frequency(k);
                let (mut c, mut s) = (0.0, 0.0);
                let phase = |n: usize| random.iter().map(|&l| w[l] * samples[n * d + l]).sum::<f64>();
                lanes::sin_cos_each(n_mc, phase, |_, sb, cb| {
                    c += cb;
                    s += sb;
                });
                cbar[k] = c / n_mc as f64;
                sbar[k] = s / n_mc as f64;
            }
        }
        Self { rff, theta, ctrl: ctrl.to_vec(), cbar, sbar }
    }

    pub fn dim(&self) -> usize {
        self.ctrl.len()
    }

    /// Value and (if `grad` is non-empty) gradient at the controlled values `xc`.
    pub fn value_grad(&self, xc: &[f64], grad: &mut [f64]) -> f64 {
        let n_freq = self.rff.n_frequencies();
        let scale = self.rff.scale();
        grad.fill(0.0);
        let mut g = 0.0;
        let phase = |k: usize| {
            let w = self.rff.frequency(k);
            self.ctrl.iter().zip(xc).map(|(&l, x)| w[l] * x).sum::<f64>()
        };
        lanes::sin_cos_each(n_freq, phase, |k, sa, ca| {
            let (tc, ts) = (self.theta[k], self.theta[n_freq + k]);
            // E cos(a + b) = cos a Cbar - sin a Sbar;  E sin(a + b) = sin a Cbar + cos a Sbar.
            g += tc * (ca * self.cbar[k] - sa * self.sbar[k]) + ts * (sa * self.cbar[k] + ca * self.sbar[k]);
            if !grad.is_empty() {
                let dg = tc * (-sa * self.cbar[k] - ca * self.sbar[k]) + ts * (ca * self.cbar[k] - sa * self.sbar[k]);
                let w = self.rff.frequency(k);
                for (gk, &l) in grad.iter_mut().zip(&self.ctrl) {
                    *gk += scale * dg * w[l];
                }
            }
        });
        scale * g
    }

    /// Maximise over `[0,1]^{|I|}` (warm-up, then multi-start L-BFGS; [`crate::maximize`]).
    pub fn maximise(&self, config: MaximizeConfig, rng: &mut StreamRng) -> Maximum {
        let dim = self.dim();
        let n_warm = config.n_warmup.max(1);
        let warm = uniform_points(rng, n_warm, dim);
        let values: Vec<f64> = Rows::new(warm.view()).iter().map(|x| self.value_grad(x, &mut [])).collect();
        maximize(rng, warm.view(), &values, config.n_iter, |x, grad| self.value_grad(x, grad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_gp::Kernel;
    use rand::{Rng, SeedableRng};

    #[test]
    fn ts_expectation_equals_the_brute_force_average() {
        let mut rng = StreamRng::seed_from_u64(9);
        let kernel = Kernel::squared_exponential(1.0, vec![0.2; 4]);
        let rff = RandomFourierFeatures::sample(&kernel, 64, &mut rng).unwrap();
        let theta: Vec<f64> = (0..rff.n_features()).map(|_| rng.random::<f64>() - 0.5).collect();
        let samples: Vec<f64> = (0..50 * 4).map(|_| rng.random()).collect();
        let ctrl = [0, 2];
        let e = TsExpectation::new(&rff, &theta, &ctrl, ArrayView2::from_shape((50, 4), &samples).unwrap());
        let xc = [0.3, 0.7];
        let mut phi = vec![0.0; rff.n_features()];
        let brute = samples
            .chunks(4)
            .map(|s| {
                let z = crate::surrogate::full_query(&ctrl, &xc, s);
                rff.features_into(&z, &mut phi);
                phi.iter().zip(&theta).map(|(p, t)| p * t).sum::<f64>()
            })
            .sum::<f64>()
            / 50.0;
        let mut grad = [0.0; 2];
        assert!((e.value_grad(&xc, &mut grad) - brute).abs() < 1e-12);
        let h = 1e-6;
        let fd = (e.value_grad(&[0.3 + h, 0.7], &mut []) - e.value_grad(&[0.3 - h, 0.7], &mut [])) / (2.0 * h);
        assert!((grad[0] - fd).abs() < 1e-5 * (1.0 + fd.abs()));
    }
}
