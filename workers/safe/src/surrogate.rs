//! One independent GP surrogate (for f or for g) with MAP hyperparameters refitted after
//! every observation (paper eqs. 7-9, App. B.2.2): Matern 5/2 ARD over `(s, x)`, zero mean,
//! fixed likelihood variance, LogNormal priors `LogNormal(ln v0, 1)` on the variance and
//! `LogNormal(ln 0.2, 1)` on each lengthscale, initial values `v0` and 0.2.
//!
//! The refit is armada-gp's [`fit_map`] (analytic gradients, bounded L-BFGS). [`RefitMode`]
//! chooses its starts: Trieste's prior-screened multi-start (the reference), a warm start from
//! the previous round's estimate only (fast), or no refit at all.

use crate::grid::Grid;
use armada_core::JobError;
use armada_gp::points::point;
use armada_gp::{fit_map, Gp, Kernel, KernelKind, LogNormalPrior, MapConfig, Points, Rows};
use armada_linalg::solve_lower_in_place;
use armada_math as math;
use faer::Mat;
use ndarray::{ArrayView1, ArrayView2, Axis};
use rand::Rng;

/// Initial lengthscale and prior median (paper App. B.2.2).
pub const LENGTHSCALE0: f64 = 0.2;
/// Candidates predicted per block: bounds the `n x block` whitened cross-covariance.
const PREDICT_BLOCK: usize = 4096;

armada_core::choice! {
    /// How hyperparameters are refitted each round.
    pub enum RefitMode {
        /// Trieste 1.2.0: `10 x #params` prior draws plus the current values, L-BFGS from the best.
        Multistart = "multistart",
        /// L-BFGS from the previous round's estimate only (the first fit is a multi-start).
        Warm = "warm",
        /// Keep the initial hyperparameters (makes the comparison degenerate: the certified set
        /// stays small and every rule picks the same boundary points).
        Fixed = "fixed",
    }
}

/// Data and hyperparameters of one GP.
#[derive(Clone, Debug)]
pub struct Surrogate {
    /// The observed inputs, growing by one row per observation.
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
            LogNormalPrior { mu: math::ln(v0), sigma: 1.0 },
            LogNormalPrior { mu: math::ln(LENGTHSCALE0), sigma: 1.0 },
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

    /// Adds one observation (no refit) at the input `z = (s, x)`.
    pub fn observe(&mut self, z: ArrayView1<'_, f64>, y: f64) {
        self.x.push(&point(z));
        self.y.push(y);
    }

    /// The current hyperparameters.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The observed inputs (one per row, a view of the surrogate's storage) and values.
    pub fn data(&self) -> (ArrayView2<'_, f64>, &[f64]) {
        (self.x.view(), &self.y)
    }

    /// Refits the hyperparameters by MAP according to the mode; returns the number of
    /// objective evaluations spent (screen + L-BFGS).
    pub fn refit<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<usize, JobError> {
        let mut config = self.config.clone();
        match self.mode {
            RefitMode::Fixed => return Ok(0),
            RefitMode::Warm if self.n_fits > 0 => config.n_prior_draws_per_param = 0,
            RefitMode::Warm | RefitMode::Multistart => {}
        }
        let fit = fit_map(self.x.view(), &self.y, &config, Some(&self.kernel), rng)
            .map_err(|e| JobError::Numerical(format!("MAP refit: {e}")))?;
        self.kernel = fit.kernel;
        self.n_fits += 1;
        Ok(fit.n_evals)
    }

    fn factor(&self) -> Result<Gp, JobError> {
        Gp::fit(self.kernel.clone(), self.config.noise_var, self.x.clone().into_array(), self.y.clone())
            .map(|(gp, _)| gp)
            .map_err(|e| JobError::Numerical(format!("GP factorisation: {e}")))
    }

    /// Posterior mean and standard deviation (latent, noise not added) at every candidate of
    /// `grid`, in flat order; the same values as [`Surrogate::predict`] on `grid.points`.
    ///
    /// Faster on a grid (this is most of a run's time): the scaled squared distance from
    /// observation `o` to candidate `(x_i, s_j)` is `ds2[j][o] + dx2[i][o]`, so the
    /// per-dimension work is done once per axis value, and each covariance column is one
    /// contiguous loop of `fastexp::matern52` that the compiler vectorises.
    pub fn predict_grid(&self, grid: &Grid) -> Result<(Vec<f64>, Vec<f64>), JobError> {
        if self.kernel.kind != KernelKind::Matern52 {
            return self.predict(grid.points.view());
        }
        let gp = self.factor()?;
        let n = self.x.len();
        let inv_l: Vec<f64> = self.kernel.lengthscales.iter().map(|l| 1.0 / l).collect();
        let ds2: Vec<Vec<f64>> =
            grid.s.iter().map(|s| self.x.iter().map(|z| ((s - z[0]) * inv_l[0]).powi(2)).collect()).collect();
        let dx2: Vec<Vec<f64>> = Rows::new(grid.x.view())
            .iter()
            .map(|xi| {
                self.x
                    .iter()
                    .map(|z| xi.iter().zip(&z[1..]).zip(&inv_l[1..]).map(|((a, b), il)| ((a - b) * il).powi(2)).sum())
                    .collect()
            })
            .collect();
        let l = gp.cholesky_factor();
        let w = gp.whitened_y();
        let variance = self.kernel.variance;
        let n_s = grid.n_s();
        let rows_per_block = (PREDICT_BLOCK / n_s).max(1);
        let mut mean = Vec::with_capacity(grid.len());
        let mut sd = Vec::with_capacity(grid.len());
        for i0 in (0..grid.n_x()).step_by(rows_per_block) {
            let i1 = (i0 + rows_per_block).min(grid.n_x());
            let mut v = Mat::<f64>::zeros(n, (i1 - i0) * n_s);
            for c in 0..v.ncols() {
                let (a, b) = (&dx2[i0 + c / n_s], &ds2[c % n_s]);
                let col = v.col_mut(c).try_as_col_major_mut().expect("a fresh Mat is column-major");
                for ((k, a), b) in col.as_slice_mut().iter_mut().zip(a).zip(b) {
                    *k = crate::fastexp::matern52(variance, a + b);
                }
            }
            solve_lower_in_place(l.as_ref(), v.as_mut());
            for c in 0..v.ncols() {
                let (mut m, mut q) = (0.0, 0.0);
                for (o, &voc) in v.col(c).iter().enumerate() {
                    m += voc * w[o];
                    q += voc * voc;
                }
                mean.push(m);
                sd.push((self.kernel.variance - q).max(0.0).sqrt());
            }
        }
        if mean.iter().chain(&sd).any(|v| !v.is_finite()) {
            return Err(JobError::Numerical("non-finite GP prediction".into()));
        }
        Ok((mean, sd))
    }

    /// Posterior mean and standard deviation (latent, noise not added) at every point, one
    /// per row of `points`, predicted in blocks of rows (views, no copy; a non-standard-layout
    /// `points` is laid out anew block by block, O(n d) in all).
    pub fn predict(&self, points: ArrayView2<'_, f64>) -> Result<(Vec<f64>, Vec<f64>), JobError> {
        let gp = self.factor()?;
        let mut mean = Vec::with_capacity(points.nrows());
        let mut sd = Vec::with_capacity(points.nrows());
        for block in points.axis_chunks_iter(Axis(0), PREDICT_BLOCK) {
            let (m, v) = gp.predict(block);
            mean.extend(m);
            sd.extend(v.into_iter().map(f64::sqrt));
        }
        if mean.iter().chain(&sd).any(|v| !v.is_finite()) {
            return Err(JobError::Numerical("non-finite GP prediction".into()));
        }
        Ok((mean, sd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::aview1;

    #[test]
    fn grid_prediction_equals_pointwise_prediction() {
        let grid = Grid::new(7, &[(0.0, 2.0, 4), (-1.0, 1.0, 3)]);
        let mut model = Surrogate::new(3, 1.5, 1e-5, RefitMode::Fixed, 0);
        model.kernel = Kernel::matern52(1.5, vec![0.3, 0.7, 0.4]);
        for (k, z) in [[0.1, 0.3, -0.2], [0.5, 1.9, 0.8], [0.9, 1.0, 0.0], [0.0, 0.7, 0.5]].iter().enumerate() {
            model.observe(aview1(z), (k as f64 * 1.3).sin());
        }
        let (m1, s1) = model.predict_grid(&grid).unwrap();
        let (m2, s2) = model.predict(grid.points.view()).unwrap();
        assert_eq!(m1.len(), grid.len());
        for k in 0..grid.len() {
            assert!((m1[k] - m2[k]).abs() < 1e-12 && (s1[k] - s2[k]).abs() < 1e-9, "{k}");
        }
    }
}
