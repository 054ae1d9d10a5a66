//! MAP fitting of the kernel hyperparameters (Losalka & Scarlett 2024, Appendix B.2.2).
//!
//! Parameters `theta = [log v, log l_1, ..., log l_d]`; noise `lambda` fixed. Objective (maximised):
//!
//! `J(theta) = log N(y | 0, K + lambda I) + log N(log v; mu_v, s_v) + sum_i log N(log l_i; mu_l, s_l)`
//!
//! i.e. Normal log-densities of the *log* hyperparameters (a LogNormal prior on each
//! hyperparameter, expressed in the optimisation coordinates). With `C = K + lambda I`,
//! `alpha = C^{-1} y` and `W = alpha alpha^T - C^{-1}` (Rasmussen & Williams eq. 5.9):
//!
//! `dJ/dtheta_j = 1/2 sum_ab W_ab dK_ab/dtheta_j - (theta_j - mu) / s^2`,
//!
//! with `dK/dlog v = K` and `dK_ab/dlog l_i = g(r_ab) (a_i - b_i)^2 / l_i^2`
//! ([`Kernel::lengthscale_grad_factor`]).
//!
//! Multi-start as in Trieste (which the safe-BO authors' code uses): draw
//! `n_prior_draws_per_param * (d + 1)` vectors from the priors (clamped to the log-bounds),
//! also evaluate the warm start, keep the best `n_lbfgs_starts` and run bounded L-BFGS
//! ([`crate::lbfgs`]) from each; return the best.

use armada_linalg::matmul;
use armada_linalg::{solve_lower_in_place, solve_lower_transpose_in_place};
use armada_math as math;
use armada_math::dist::{Distribution, StandardNormal};
use faer::{Accum, Mat};
use ndarray::ArrayView2;
use rand::Rng;

use crate::chol::cholesky_jittered;
use crate::error::GpError;
use crate::gp::check_hyper;
use crate::kernel::{Kernel, KernelKind};
use crate::lbfgs::{minimize, LbfgsConfig};
use crate::points::Rows;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Prior on `log(theta)`: `Normal(mu, sigma)` (so `theta` is LogNormal(mu, sigma)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogNormalPrior {
    /// Mean of `log theta`.
    pub mu: f64,
    /// Standard deviation of `log theta`.
    pub sigma: f64,
}

impl LogNormalPrior {
    /// `log N(log_theta; mu, sigma)`.
    pub fn log_density(&self, log_theta: f64) -> f64 {
        let z = (log_theta - self.mu) / self.sigma;
        -0.5 * z * z - math::ln(self.sigma) - 0.5 * LN_2PI
    }

    /// `d/dlog_theta log N(log_theta; mu, sigma) = -(log_theta - mu) / sigma^2`.
    pub fn grad(&self, log_theta: f64) -> f64 {
        -(log_theta - self.mu) / (self.sigma * self.sigma)
    }

    fn check(&self, what: &str) -> Result<(), GpError> {
        if self.mu.is_finite() && self.sigma.is_finite() && self.sigma > 0.0 {
            Ok(())
        } else {
            Err(GpError::InvalidParameter(format!("{what} prior needs finite mu and sigma > 0, got {self:?}")))
        }
    }
}

/// Configuration of [`fit_map`].
#[derive(Clone, Debug)]
pub struct MapConfig {
    /// Kernel family to fit.
    pub kind: KernelKind,
    /// Prior on `log v`.
    pub variance_prior: LogNormalPrior,
    /// Prior on each `log l_i`.
    pub lengthscale_prior: LogNormalPrior,
    /// Fixed noise variance `lambda`.
    pub noise_var: f64,
    /// Prior draws per parameter for the multi-start screen (default 10).
    pub n_prior_draws_per_param: usize,
    /// L-BFGS runs from the best screened points (default 1).
    pub n_lbfgs_starts: usize,
    /// L-BFGS iteration cap per start (default 200).
    pub max_iters: usize,
    /// Bounds on each lengthscale (default `(1e-3, 1e2)`).
    pub bounds_lengthscale: (f64, f64),
    /// Bounds on the variance (default `(1e-6, 1e4)`).
    pub bounds_variance: (f64, f64),
}

impl MapConfig {
    /// Defaults: 10 draws per parameter, 1 L-BFGS start, 200 iterations,
    /// `l in [1e-3, 1e2]`, `v in [1e-6, 1e4]`.
    pub fn new(
        kind: KernelKind,
        variance_prior: LogNormalPrior,
        lengthscale_prior: LogNormalPrior,
        noise_var: f64,
    ) -> Self {
        Self {
            kind,
            variance_prior,
            lengthscale_prior,
            noise_var,
            n_prior_draws_per_param: 10,
            n_lbfgs_starts: 1,
            max_iters: 200,
            bounds_lengthscale: (1e-3, 1e2),
            bounds_variance: (1e-6, 1e4),
        }
    }

    /// Checks priors, bounds and noise once, before any work.
    pub fn validate(&self) -> Result<(), GpError> {
        self.variance_prior.check("variance")?;
        self.lengthscale_prior.check("lengthscale")?;
        for (what, (lo, hi)) in [("lengthscale", self.bounds_lengthscale), ("variance", self.bounds_variance)] {
            if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi) {
                return Err(GpError::InvalidParameter(format!(
                    "{what} bounds must satisfy 0 < lo <= hi < inf, got ({lo}, {hi})"
                )));
            }
        }
        if !(self.noise_var.is_finite() && self.noise_var >= 0.0) {
            return Err(GpError::InvalidParameter(format!(
                "noise variance must be finite and >= 0, got {}",
                self.noise_var
            )));
        }
        if self.n_lbfgs_starts == 0 {
            return Err(GpError::InvalidParameter("n_lbfgs_starts must be >= 1".into()));
        }
        Ok(())
    }

    /// Bounds on `theta = [log v, log l_1..l_d]`.
    fn log_bounds(&self, dim: usize) -> Vec<(f64, f64)> {
        let (vl, vh) = self.bounds_variance;
        let (ll, lh) = self.bounds_lengthscale;
        std::iter::once((math::ln(vl), math::ln(vh)))
            .chain(std::iter::repeat_n((math::ln(ll), math::ln(lh)), dim))
            .collect()
    }

    fn kernel_from_theta(&self, theta: &[f64]) -> Kernel {
        Kernel::with_kind(self.kind, math::exp(theta[0]), theta[1..].iter().map(|&t| math::exp(t)).collect())
    }
}

/// Result of [`fit_map`].
#[derive(Clone, Debug)]
pub struct MapFit {
    /// Kernel at the MAP estimate.
    pub kernel: Kernel,
    /// `J(theta)` at the estimate.
    pub log_posterior: f64,
    /// Objective evaluations spent (screen + L-BFGS).
    pub n_evals: usize,
    /// Whether the best L-BFGS run met its convergence test.
    pub converged: bool,
    /// Best `J` among the screened starting points (the estimate is never worse).
    pub start_log_posterior: f64,
}

/// `J(theta)` and `dJ/dtheta` for `theta = [log v, log l_1..l_d]` of `kernel` (its own `kind` is
/// used; `config` supplies the priors and the noise). If `K + lambda I` must be jittered to
/// factorise, `J` and its gradient are those of the jittered matrix. One input per row of `x`
/// (a non-standard-layout `x` is laid out anew once, O(n d)).
pub fn log_posterior_and_grad(
    x: ArrayView2<'_, f64>,
    y: &[f64],
    kernel: &Kernel,
    config: &MapConfig,
) -> Result<(f64, Vec<f64>), GpError> {
    posterior(&Rows::new(x), y, kernel, config, Want::ValueAndGrad)
}

/// `J(theta)` alone, equal bit for bit to the value of [`log_posterior_and_grad`] but several
/// times cheaper (no `C^{-1}`, no pairwise derivative sums): what the multi-start screen of
/// [`fit_map`] needs.
pub fn log_posterior(x: ArrayView2<'_, f64>, y: &[f64], kernel: &Kernel, config: &MapConfig) -> Result<f64, GpError> {
    posterior(&Rows::new(x), y, kernel, config, Want::Value).map(|(v, _)| v)
}

/// Whether the gradient is needed (the value is computed the same way either way).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Value,
    ValueAndGrad,
}

fn posterior(
    x: &Rows<'_>,
    y: &[f64],
    kernel: &Kernel,
    config: &MapConfig,
    want: Want,
) -> Result<(f64, Vec<f64>), GpError> {
    config.validate()?;
    check_data(x, y, kernel)?;
    let (lml, mut grad, _) = lml_and_grad(x, y, kernel, config.noise_var, want)?;
    let lv = math::ln(kernel.variance);
    let mut lp = lml + config.variance_prior.log_density(lv);
    grad[0] += config.variance_prior.grad(lv);
    for (g, l) in grad[1..].iter_mut().zip(&kernel.lengthscales) {
        let ll = math::ln(*l);
        lp += config.lengthscale_prior.log_density(ll);
        *g += config.lengthscale_prior.grad(ll);
    }
    Ok((lp, grad))
}

fn check_data(x: &Rows<'_>, y: &[f64], kernel: &Kernel) -> Result<(), GpError> {
    kernel.validate()?;
    crate::gp::check_data(x, y, kernel.dim())
}

/// The zero-mean log marginal likelihood `log N(y | 0, K + lambda I)`, its gradient in
/// `[log v, log l_1..l_d]`, and `alpha = (K + lambda I)^{-1} y` (whose sum is the gradient in
/// a constant prior mean subtracted from `y`). No priors: what plain type-II maximum
/// likelihood (e.g. GPyTorch's `ExactMarginalLogLikelihood`) differentiates. `x` as in
/// [`log_posterior_and_grad`].
pub fn log_marginal_likelihood_and_grad(
    x: ArrayView2<'_, f64>,
    y: &[f64],
    kernel: &Kernel,
    noise_var: f64,
) -> Result<(f64, Vec<f64>, Vec<f64>), GpError> {
    let x = Rows::new(x);
    check_data(&x, y, kernel)?;
    lml_and_grad(&x, y, kernel, noise_var, Want::ValueAndGrad)
}

/// Log marginal likelihood, its gradient in `[log v, log l_1..l_d]` and `alpha` (dense,
/// O(n^3 + n^2 d)); with `Want::Value` the gradient is left at zero and `alpha` empty.
fn lml_and_grad(
    x: &Rows<'_>,
    y: &[f64],
    kernel: &Kernel,
    noise_var: f64,
    want: Want,
) -> Result<(f64, Vec<f64>, Vec<f64>), GpError> {
    check_hyper(kernel, noise_var)?;
    let n = x.len();
    let d = kernel.dim();
    let mut grad = vec![0.0; d + 1];
    if n == 0 {
        return Ok((0.0, grad, Vec::new()));
    }
    let k = kernel.gram_rows(x);
    let mut c = k.clone();
    for i in 0..n {
        c[(i, i)] += noise_var;
    }
    let (l, _) = cholesky_jittered(c.as_ref(), kernel.variance)?;
    // alpha = L^{-T} L^{-1} y.
    let mut alpha = Mat::from_fn(n, 1, |i, _| y[i]);
    solve_lower_in_place(l.as_ref(), alpha.as_mut());
    let quad: f64 = (0..n).map(|i| alpha[(i, 0)] * alpha[(i, 0)]).sum();
    let logdet_half: f64 = (0..n).map(|i| math::ln(l[(i, i)])).sum();
    let lml = -0.5 * quad - logdet_half - 0.5 * n as f64 * LN_2PI;
    if want == Want::Value {
        return Ok((lml, grad, Vec::new()));
    }
    solve_lower_transpose_in_place(l.as_ref(), alpha.as_mut());

    // C^{-1} = L^{-T} L^{-1}.
    let mut linv = Mat::<f64>::identity(n, n);
    solve_lower_in_place(l.as_ref(), linv.as_mut());
    let mut cinv = Mat::<f64>::zeros(n, n);
    matmul(cinv.as_mut(), Accum::Replace, linv.transpose(), linv.as_ref(), 1.0);

    // 1/2 sum_ab W_ab dK_ab, using symmetry: off-diagonal pairs count twice and contribute to
    // the lengthscales; the diagonal only to log v (its distance is zero).
    let inv_l2: Vec<f64> = kernel.lengthscales.iter().map(|l| 1.0 / (l * l)).collect();
    for a in 0..n {
        let w_aa = alpha[(a, 0)] * alpha[(a, 0)] - cinv[(a, a)];
        grad[0] += 0.5 * w_aa * k[(a, a)];
        let xa = x.row(a);
        for b in 0..a {
            let w_ab = alpha[(a, 0)] * alpha[(b, 0)] - cinv[(a, b)];
            grad[0] += w_ab * k[(a, b)];
            let xb = x.row(b);
            let r2 = kernel.scaled_sq_dist(xa, xb);
            let gfac = w_ab * kernel.lengthscale_grad_factor(r2);
            for i in 0..d {
                let di = xa[i] - xb[i];
                grad[1 + i] += gfac * di * di * inv_l2[i];
            }
        }
    }
    Ok((lml, grad, (0..n).map(|a| alpha[(a, 0)]).collect()))
}

/// MAP estimate of `[log v, log l_i]` by prior-screened multi-start bounded L-BFGS.
///
/// Draws `n_prior_draws_per_param * (d+1)` vectors from the priors (`log v` first, then each
/// `log l_i`, clamped to the log-bounds), evaluates them and `warm_start` (clamped; if given),
/// runs L-BFGS from the best `n_lbfgs_starts`, and returns the best result. Points where the
/// covariance cannot be factorised are skipped; if every screened point fails, that error is
/// returned. `x` (one input per row) is laid out once, before any evaluation: a
/// non-standard-layout `x` costs one O(n d) copy per fit, not one per evaluation.
pub fn fit_map<R: Rng + ?Sized>(
    x: ArrayView2<'_, f64>,
    y: &[f64],
    config: &MapConfig,
    warm_start: Option<&Kernel>,
    rng: &mut R,
) -> Result<MapFit, GpError> {
    config.validate()?;
    let x = &Rows::new(x);
    let dim = x.dim();
    let probe = Kernel::with_kind(config.kind, 1.0, vec![1.0; dim]);
    check_data(x, y, &probe)?;
    if let Some(k) = warm_start {
        if k.dim() != dim {
            return Err(GpError::DimensionMismatch { expected: dim, got: k.dim() });
        }
        k.validate()?;
    }
    let bounds = config.log_bounds(dim);
    let clamp = |theta: &mut [f64]| {
        for (t, &(lo, hi)) in theta.iter_mut().zip(&bounds) {
            *t = t.clamp(lo, hi);
        }
    };
    let n_evals = std::cell::Cell::new(0);
    let objective = |theta: &[f64]| -> Result<(f64, Vec<f64>), GpError> {
        n_evals.set(n_evals.get() + 1);
        posterior(x, y, &config.kernel_from_theta(theta), config, Want::ValueAndGrad)
    };
    // The screen compares values only.
    let value = |theta: &[f64]| -> Result<f64, GpError> {
        n_evals.set(n_evals.get() + 1);
        posterior(x, y, &config.kernel_from_theta(theta), config, Want::Value).map(|(v, _)| v)
    };

    // Screen prior draws and the warm start.
    let n_draws = config.n_prior_draws_per_param * (dim + 1);
    let mut screened: Vec<(f64, Vec<f64>)> = Vec::with_capacity(n_draws + 1);
    let mut last_err = None;
    let mut starts: Vec<Vec<f64>> = Vec::with_capacity(n_draws + 1);
    for _ in 0..n_draws {
        let mut theta = Vec::with_capacity(dim + 1);
        let z: f64 = StandardNormal.sample(rng);
        theta.push(config.variance_prior.mu + config.variance_prior.sigma * z);
        for _ in 0..dim {
            let z: f64 = StandardNormal.sample(rng);
            theta.push(config.lengthscale_prior.mu + config.lengthscale_prior.sigma * z);
        }
        clamp(&mut theta);
        starts.push(theta);
    }
    if let Some(k) = warm_start {
        let mut theta: Vec<f64> =
            std::iter::once(math::ln(k.variance)).chain(k.lengthscales.iter().map(|&l| math::ln(l))).collect();
        clamp(&mut theta);
        starts.push(theta);
    }
    for theta in starts {
        match value(&theta) {
            Ok(v) if v.is_finite() => screened.push((v, theta)),
            Ok(_) => last_err = Some(GpError::NonFinite("log posterior")),
            Err(e) => last_err = Some(e),
        }
    }
    if screened.is_empty() {
        return Err(last_err.unwrap_or(GpError::InvalidParameter(
            "no starting points (n_prior_draws_per_param = 0 and no warm start)".into(),
        )));
    }
    // Stable sort, best first: ties keep draw order, so results are deterministic.
    screened.sort_by(|a, b| b.0.total_cmp(&a.0));
    let start_log_posterior = screened[0].0;

    let lcfg = LbfgsConfig { max_iters: config.max_iters, ..LbfgsConfig::default() };
    let mut best: Option<(f64, Vec<f64>, bool)> = None;
    for (_, theta0) in screened.iter().take(config.n_lbfgs_starts) {
        let neg = |t: &[f64]| objective(t).ok().map(|(v, g)| (-v, g.into_iter().map(|gi| -gi).collect()));
        let Some(r) = minimize(neg, theta0, Some(&bounds), &lcfg) else {
            continue;
        };
        if best.as_ref().is_none_or(|(v, _, _)| -r.f > *v) {
            best = Some((-r.f, r.x, r.converged));
        }
    }
    let (log_posterior, theta, converged) = match best {
        Some(b) => b,
        // Unreachable in practice (each start was evaluated above); fall back to the screen.
        None => (screened[0].0, screened[0].1.clone(), false),
    };
    Ok(MapFit {
        kernel: config.kernel_from_theta(&theta),
        log_posterior,
        n_evals: n_evals.get(),
        converged,
        start_log_posterior,
    })
}
