//! Code mode's hyperparameter refit (the authors' code's `ExactGPModel.fit`): at every
//! exploitation iteration, from the initial values (never warm-started), 10 Adam steps
//! (lr 0.1, betas 0.9 / 0.999, eps 1e-8) on `-(1/n) log p(y | theta)` over GPyTorch's *raw*
//! parameters:
//!
//! * lengthscales `ls_l = 0.01 + (1e4 - 0.01) sigmoid(r_l)` (`Interval(1e-2, 1e4)`),
//! * outputscale `s2 = softplus(r_s)`,
//! * constant mean `m0 = r_m`.
//!
//! The noise stays at `1e-4`: its raw value is `-inf` (`1e-4 + softplus(r)`), whose gradient
//! is 0. Adam moves raw parameters, so the first step changes each of them by exactly the
//! learning rate (times the sign of its gradient), whatever the gradient's size.

use armada_core::JobError;
use armada_gp::log_marginal_likelihood_and_grad;
use armada_math as math;
use ndarray::ArrayView2;

use crate::surrogate::{GpConfig, Hyper};

const LS_LOW: f64 = 0.01;
const LS_HIGH: f64 = 1e4;

/// GPyTorch's Adam settings and the reference code's number of steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    pub steps: usize,
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
}

impl Default for AdamConfig {
    fn default() -> Self {
        Self { steps: 10, lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }
}

fn sigmoid(r: f64) -> f64 {
    1.0 / (1.0 + math::exp(-r))
}

/// `ln(1 + e^r)`, without overflow for large `r`.
fn softplus(r: f64) -> f64 {
    r.max(0.0) + math::log1p(math::exp(-r.abs()))
}

/// Raw parameters `[r_1..r_d, r_s, r_m]` of `config` (all lengthscales equal, mean 0).
pub fn initial_raw(config: GpConfig, dim: usize) -> Vec<f64> {
    let p = (config.lengthscale - LS_LOW) / (LS_HIGH - LS_LOW);
    let r_ls = math::ln(p / (1.0 - p));
    let r_s = math::ln(math::expm1(config.outputscale));
    let mut raw = vec![r_ls; dim];
    raw.extend([r_s, 0.0]);
    raw
}

/// The hyperparameters a raw vector stands for.
pub fn hyper_of(raw: &[f64], noise_var: f64) -> Hyper {
    let d = raw.len() - 2;
    Hyper {
        lengthscales: raw[..d].iter().map(|&r| LS_LOW + (LS_HIGH - LS_LOW) * sigmoid(r)).collect(),
        outputscale: softplus(raw[d]),
        mean: raw[d + 1],
        noise_var,
    }
}

/// `-(1/n) log p(y | theta)` and its gradient in the raw parameters; `x` holds one input per
/// row (any layout; a non-standard one is laid out anew on each call, O(n d)).
pub fn loss_and_grad(
    x: ArrayView2<'_, f64>,
    y: &[f64],
    raw: &[f64],
    noise_var: f64,
) -> Result<(f64, Vec<f64>), JobError> {
    let d = raw.len() - 2;
    let h = hyper_of(raw, noise_var);
    let centred: Vec<f64> = y.iter().map(|v| v - h.mean).collect();
    let (lml, g, alpha) = log_marginal_likelihood_and_grad(x, &centred, &h.kernel(), noise_var)
        .map_err(|e| JobError::Numerical(format!("hyperparameter refit: {e}")))?;
    let scale = -1.0 / y.len() as f64;
    let mut grad = Vec::with_capacity(d + 2);
    // d/dr_l = d/dlog l * (1/l) * (high - low) sigmoid'(r_l).
    for l in 0..d {
        let s = sigmoid(raw[l]);
        grad.push(scale * g[1 + l] / h.lengthscales[l] * (LS_HIGH - LS_LOW) * s * (1.0 - s));
    }
    // d/dr_s = d/dlog v * (1/v) * softplus'(r_s); d/dm0 = sum (K + lambda I)^{-1} (y - m0).
    grad.push(scale * g[0] / h.outputscale * sigmoid(raw[d]));
    grad.push(scale * alpha.iter().sum::<f64>());
    Ok((scale * lml, grad))
}

/// The refit: `adam.steps` Adam updates from `config`'s values (PyTorch's update rule with
/// bias correction), returning the hyperparameters after the last update.
pub fn refit(x: ArrayView2<'_, f64>, y: &[f64], config: GpConfig, adam: AdamConfig) -> Result<Hyper, JobError> {
    Ok(hyper_of(&refit_raw(x, y, config, adam)?, config.noise_var))
}

/// [`refit`] in the raw coordinates.
fn refit_raw(x: ArrayView2<'_, f64>, y: &[f64], config: GpConfig, adam: AdamConfig) -> Result<Vec<f64>, JobError> {
    let mut raw = initial_raw(config, x.ncols());
    let mut m = vec![0.0; raw.len()];
    let mut v = vec![0.0; raw.len()];
    for step in 1..=adam.steps {
        let (_, grad) = loss_and_grad(x, y, &raw, config.noise_var)?;
        let c1 = 1.0 - adam.beta1.powi(step as i32);
        let c2 = 1.0 - adam.beta2.powi(step as i32);
        for i in 0..raw.len() {
            m[i] = adam.beta1 * m[i] + (1.0 - adam.beta1) * grad[i];
            v[i] = adam.beta2 * v[i] + (1.0 - adam.beta2) * grad[i] * grad[i];
            raw[i] -= adam.lr * (m[i] / c1) / ((v[i] / c2).sqrt() + adam.eps);
        }
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_gp::Gp;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};

    fn data(d: usize, n: usize) -> (Array2<f64>, Vec<f64>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut x = Vec::with_capacity(n * d);
        let mut y = Vec::new();
        for _ in 0..n {
            let p: Vec<f64> = (0..d).map(|_| rng.random()).collect();
            y.push(1.5 + (4.0 * p[0]).sin() + 0.3 * p[1]);
            x.extend_from_slice(&p);
        }
        (Array2::from_shape_vec((n, d), x).unwrap(), y)
    }

    /// The loss from armada-gp's own posterior (an independent code path: incremental Cholesky).
    fn reference_loss(x: ArrayView2<'_, f64>, y: &[f64], raw: &[f64]) -> f64 {
        let h = hyper_of(raw, 1e-4);
        let centred: Vec<f64> = y.iter().map(|v| v - h.mean).collect();
        let (gp, _) = Gp::fit(h.kernel(), 1e-4, x.to_owned(), centred).unwrap();
        -gp.log_marginal_likelihood() / y.len() as f64
    }

    #[test]
    fn initial_raw_values_are_gpytorchs() {
        let raw = initial_raw(GpConfig::default(), 3);
        // logit(0.19 / 9999.99) = ln 0.19 - ln 9999.80 = -10.871052.
        assert!((raw[0] - -10.871052).abs() < 1e-6, "{}", raw[0]);
        assert!((raw[3] - 0.541325).abs() < 1e-6, "{}", raw[3]);
        assert_eq!(raw[4], 0.0);
        let h = hyper_of(&raw, 1e-4);
        assert!(h.lengthscales.iter().all(|l| (l - 0.2).abs() < 1e-12));
        assert!((h.outputscale - 1.0).abs() < 1e-12);
    }

    #[test]
    fn loss_and_gradient_match_an_independent_likelihood_and_central_differences() {
        let (x, y) = data(3, 25);
        let raw = vec![-10.5, -11.0, -10.9, 0.3, 0.7];
        let (loss, grad) = loss_and_grad(x.view(), &y, &raw, 1e-4).unwrap();
        assert!((loss - reference_loss(x.view(), &y, &raw)).abs() < 1e-9 * loss.abs().max(1.0));
        for i in 0..raw.len() {
            let h = 1e-5;
            let (mut up, mut down) = (raw.clone(), raw.clone());
            up[i] += h;
            down[i] -= h;
            let fd = (reference_loss(x.view(), &y, &up) - reference_loss(x.view(), &y, &down)) / (2.0 * h);
            assert!((grad[i] - fd).abs() < 1e-5 * (1.0 + fd.abs()), "raw[{i}]: {} vs {fd}", grad[i]);
        }
    }

    #[test]
    fn one_adam_step_moves_every_raw_parameter_by_the_learning_rate_against_its_gradient() {
        let (x, y) = data(2, 15);
        let config = GpConfig::default();
        let start = initial_raw(config, 2);
        let (_, grad) = loss_and_grad(x.view(), &y, &start, config.noise_var).unwrap();
        let one = AdamConfig { steps: 1, ..AdamConfig::default() };
        let h = refit(x.view(), &y, config, one).unwrap();
        let mut expected = start.clone();
        for (r, g) in expected.iter_mut().zip(&grad) {
            *r -= 0.1 * g.signum();
        }
        let want = hyper_of(&expected, config.noise_var);
        for (a, b) in h.lengthscales.iter().zip(&want.lengthscales) {
            assert!((a - b).abs() < 1e-8 * b, "{a} vs {b}");
        }
        assert!((h.outputscale - want.outputscale).abs() < 1e-8);
        // y has mean about 2 > 0, so the mean moves up by one learning rate.
        assert!((h.mean - 0.1).abs() < 1e-8, "{}", h.mean);
    }

    #[test]
    fn ten_steps_lower_the_loss_and_keep_the_noise() {
        let (x, y) = data(3, 30);
        let config = GpConfig::default();
        let before = loss_and_grad(x.view(), &y, &initial_raw(config, 3), config.noise_var).unwrap().0;
        let raw_after = refit_raw(x.view(), &y, config, AdamConfig::default()).unwrap();
        let h = refit(x.view(), &y, config, AdamConfig::default()).unwrap();
        assert_eq!(h, hyper_of(&raw_after, config.noise_var));
        assert_eq!(h.noise_var, 1e-4);
        let after = loss_and_grad(x.view(), &y, &raw_after, config.noise_var).unwrap().0;
        assert!(after < before, "loss {before} -> {after}");
        // y has mean about 2: the mean climbs by about one learning rate per step.
        assert!(h.mean > 0.5 && h.mean < 1.5, "{}", h.mean);
    }
}
