//! One independent GP surrogate (for f or for g) with MAP hyperparameters refitted after
//! every observation (spec 2.1, 2.4): Matern 5/2 ARD over `(s, x)`, zero mean, fixed
//! likelihood variance, LogNormal priors `LogNormal(ln v0, 1)` on the variance and
//! `LogNormal(ln 0.2, 1)` on each lengthscale, initial values `v0` and 0.2.
//!
//! The refit is armada-gp's [`fit_map`] (analytic gradients, bounded L-BFGS). [`RefitMode`]
//! chooses its starts: Trieste's prior-screened multi-start (the reference), a warm start from
//! the previous round's estimate only (fast), or no refit at all.

use armada_core::JobError;
use armada_gp::{fit_map, Gp, Kernel, KernelKind, LogNormalPrior, MapConfig, Points};
use rand::Rng;

/// Initial lengthscale and prior median (spec 2.4).
pub const LENGTHSCALE0: f64 = 0.2;
/// Candidates predicted per block: bounds the `n x block` whitened cross-covariance.
const PREDICT_BLOCK: usize = 4096;

/// How hyperparameters are refitted each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefitMode {
    /// Trieste 1.2.0: `10 x #params` prior draws plus the current values, L-BFGS from the best.
    Multistart,
    /// L-BFGS from the previous round's estimate only (the first fit is a multi-start).
    Warm,
    /// Keep the initial hyperparameters (spec gotcha 14: makes the comparison degenerate).
    Fixed,
}

/// Data and hyperparameters of one GP.
#[derive(Clone, Debug)]
pub struct Surrogate {
    x: Points,
    y: Vec<f64>,
    kernel: Kernel,
    config: MapConfig,
    mode: RefitMode,
    n_fits: usize,
}

impl Surrogate {
    /// An empty surrogate over inputs of dimension `dim` (s plus x).
    pub fn new(dim: usize, v0: f64, noise_var: f64, mode: RefitMode, draws_per_param: usize) -> Self {
        let mut config = MapConfig::new(
            KernelKind::Matern52,
            LogNormalPrior { mu: v0.ln(), sigma: 1.0 },
            LogNormalPrior { mu: LENGTHSCALE0.ln(), sigma: 1.0 },
            noise_var,
        );
        config.n_prior_draws_per_param = draws_per_param;
        Surrogate {
            x: Points::new(dim),
            y: Vec::new(),
            kernel: Kernel::matern52(v0, vec![LENGTHSCALE0; dim]),
            config,
            mode,
            n_fits: 0,
        }
    }

    /// Adds one observation (no refit).
    pub fn observe(&mut self, z: &[f64], y: f64) {
        self.x.push(z);
        self.y.push(y);
    }

    /// The current hyperparameters.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The observed inputs and values.
    pub fn data(&self) -> (&Points, &[f64]) {
        (&self.x, &self.y)
    }

    /// Refits the hyperparameters by MAP according to the mode.
    pub fn refit<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<(), JobError> {
        let mut config = self.config.clone();
        match self.mode {
            RefitMode::Fixed => return Ok(()),
            RefitMode::Warm if self.n_fits > 0 => config.n_prior_draws_per_param = 0,
            RefitMode::Warm | RefitMode::Multistart => {}
        }
        let fit = fit_map(&self.x, &self.y, &config, Some(&self.kernel), rng)
            .map_err(|e| JobError::Numerical(format!("MAP refit: {e}")))?;
        self.kernel = fit.kernel;
        self.n_fits += 1;
        Ok(())
    }

    /// Posterior mean and standard deviation (latent, noise not added) at every point.
    pub fn predict(&self, points: &Points) -> Result<(Vec<f64>, Vec<f64>), JobError> {
        let (gp, _) = Gp::fit(self.kernel.clone(), self.config.noise_var, self.x.clone(), self.y.clone())
            .map_err(|e| JobError::Numerical(format!("GP factorisation: {e}")))?;
        let dim = points.dim();
        let mut mean = Vec::with_capacity(points.len());
        let mut sd = Vec::with_capacity(points.len());
        for block in points.as_slice().chunks(PREDICT_BLOCK * dim) {
            let (m, v) = gp.predict(&Points::from_rows(dim, block.to_vec()));
            mean.extend(m);
            sd.extend(v.into_iter().map(f64::sqrt));
        }
        if mean.iter().chain(&sd).any(|v| !v.is_finite()) {
            return Err(JobError::Numerical("non-finite GP prediction".into()));
        }
        Ok((mean, sd))
    }
}
