//! Exact GP regression with zero prior mean and fixed noise, held as a growable Cholesky factor.
//!
//! Model: `f ~ GP(0, k)`, `y_i = f(x_i) + eps_i`, `eps_i ~ N(0, lambda)`. With
//! `C = K(X, X) + lambda I (+ jitter)` and its lower factor `C = L L^T`, we keep `w = L^{-1} y`.
//! For query points `Q`, with `V = L^{-1} K(X, Q)`:
//!
//! * posterior mean      `mu(Q)      = V^T w`
//! * posterior covariance `Sigma(Q)  = K(Q, Q) - V^T V`
//! * log marginal likelihood `log p(y) = -1/2 w^T w - sum_i log L_ii - n/2 log 2 pi`.
//!
//! Appending `(x, y)` extends the factor by one row (Rasmussen & Williams, A.4):
//! `l = L^{-1} k(X, x)`, `d = sqrt(k(x, x) + lambda - l^T l)`, `w_new = (y - l^T w) / d`.

use armada_linalg::matmul;
use armada_linalg::solve_lower_in_place;
use armada_math as math;
use faer::{Accum, Mat};
use ndarray::{Array2, ArrayView1, ArrayView2};

use crate::chol::{cholesky_jittered, dot, pivot_floor, pivot_jitter, JitterReport, PackedLower};
use crate::error::GpError;
use crate::kernel::Kernel;
use crate::points::{point, Points, Rows};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Exact GP regression with zero prior mean and a fixed noise variance, held as the lower
/// Cholesky factor `L` of `K + noise*I` (+ any reported jitter).
#[derive(Clone, Debug)]
pub struct Gp {
    kernel: Kernel,
    noise_var: f64,
    x: Points,
    y: Vec<f64>,
    /// Lower factor `L` of `C = K + lambda I + diag(jitter)`.
    chol: PackedLower,
    /// `w = L^{-1} y`.
    w: Vec<f64>,
    /// Jitter added to each observation's diagonal entry of `C`.
    jitter: Vec<f64>,
}

impl Gp {
    /// A GP with no data. Hyperparameters are validated on the first `fit`/`append`.
    pub fn new(kernel: Kernel, noise_var: f64) -> Self {
        let dim = kernel.dim().max(1);
        Self {
            kernel,
            noise_var,
            x: Points::new(dim),
            y: Vec::new(),
            chol: PackedLower::default(),
            w: Vec::new(),
            jitter: Vec::new(),
        }
    }

    /// Conditions on `(x, y)` (one point per row of `x`) with a full O(n^3) factorisation of
    /// `K + lambda I` (faer, sequential). If the factorisation fails, jitter is added to the
    /// whole diagonal and reported.
    ///
    /// The GP keeps `x`: a row-major `x` is kept as it is (no copy), any other layout is laid
    /// out anew once (O(n d)).
    pub fn fit(kernel: Kernel, noise_var: f64, x: Array2<f64>, y: Vec<f64>) -> Result<(Self, JitterReport), GpError> {
        check_hyper(&kernel, noise_var)?;
        if x.ncols() != kernel.dim() {
            return Err(GpError::DimensionMismatch { expected: kernel.dim(), got: x.ncols() });
        }
        let x = Points::from(x);
        check_data(&x.rows(), &y, kernel.dim())?;
        let n = x.len();
        let mut c = kernel.gram_rows(&x.rows());
        for i in 0..n {
            c[(i, i)] += noise_var;
        }
        let (l, report) = cholesky_jittered(c.as_ref(), kernel.variance)?;
        let chol = PackedLower::from_mat(l.as_ref());
        let mut w = y.clone();
        chol.forward_solve_in_place(&mut w);
        let gp = Self { kernel, noise_var, x, y, chol, w, jitter: vec![report.jitter; n] };
        Ok((gp, report))
    }

    /// O(n^2) conditioning on one more observation: extends `L` by the row `[l^T, d]` with
    /// `l = L^{-1} k(X, x)` and `d = sqrt(k(x,x) + lambda - l^T l)`, and `w` by `(y - l^T w)/d`.
    ///
    /// If the new pivot `d^2` fails (see [`Gp::push_observation`]), jitter is added to this
    /// observation's diagonal entry only. A non-contiguous `x` is copied once (O(d)).
    pub fn append(&mut self, x: ArrayView1<'_, f64>, y: f64) -> Result<JitterReport, GpError> {
        let x = point(x);
        self.check_observation(&x, y)?;
        let mut l = vec![0.0; self.n_obs()];
        self.kernel.cross_into(&x, &self.x.rows(), &mut l);
        self.chol.forward_solve_in_place(&mut l);
        let kxx = self.kernel.eval(&x, &x);
        self.push_observation(&x, y, &l, kxx).map(|(_, _, r)| r)
    }

    /// Validates hyperparameters and one observation before any work.
    pub(crate) fn check_observation(&self, x: &[f64], y: f64) -> Result<(), GpError> {
        check_hyper(&self.kernel, self.noise_var)?;
        if x.len() != self.kernel.dim() {
            return Err(GpError::DimensionMismatch { expected: self.kernel.dim(), got: x.len() });
        }
        if !x.iter().all(|v| v.is_finite()) {
            return Err(GpError::NonFinite("x"));
        }
        if !y.is_finite() {
            return Err(GpError::NonFinite("y"));
        }
        Ok(())
    }

    /// Appends the factor row `[l^T, d]` given the forward-solve vector `l = L^{-1} k(X, x)` and
    /// `kxx = k(x, x)`. Returns `(d, w_new, report)`.
    ///
    /// Failed pivot: `d^2 = k(x,x) + lambda - l^T l <= (n+1) eps (k(x,x) + lambda)`, i.e. the new
    /// Schur complement is lost in the rounding error of `l^T l`. Then jitter (escalated as in
    /// [`crate::chol`]) is added to this observation's diagonal entry only. That is exactly
    /// equivalent to a slightly larger noise variance on this one observation, so the factor stays
    /// an exact Cholesky factor of a (documented) covariance, the update stays O(n^2), and every
    /// `V = L^{-1} K(X, C)` built from the factor stays valid.
    pub(crate) fn push_observation(
        &mut self,
        x: &[f64],
        y: f64,
        l: &[f64],
        kxx: f64,
    ) -> Result<(f64, f64, JitterReport), GpError> {
        let c = kxx + self.noise_var;
        let d2 = c - dot(l, l);
        if !d2.is_finite() {
            return Err(GpError::NonFinite("new Cholesky pivot"));
        }
        let floor = pivot_floor(self.n_obs() + 1, c);
        let report = pivot_jitter(d2, floor, self.kernel.variance)?;
        let d = (d2 + report.jitter).sqrt();
        let w_new = (y - dot(l, &self.w)) / d;
        self.chol.push_row(l, d);
        self.w.push(w_new);
        self.x.push(x);
        self.y.push(y);
        self.jitter.push(report.jitter);
        Ok((d, w_new, report))
    }

    /// Number of observations `n`.
    pub fn n_obs(&self) -> usize {
        self.y.len()
    }

    /// The covariance function.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The fixed noise variance `lambda`.
    pub fn noise_var(&self) -> f64 {
        self.noise_var
    }

    /// Observed inputs, one per row (a view of the GP's own storage, no copy).
    pub fn x(&self) -> ArrayView2<'_, f64> {
        self.x.view()
    }

    /// Observed inputs as rows (borrowed).
    pub(crate) fn x_rows(&self) -> Rows<'_> {
        self.x.rows()
    }

    /// Observed outputs.
    pub fn y(&self) -> &[f64] {
        &self.y
    }

    /// Sum over observations of the jitter added to their diagonal entries of `C`
    /// (0.0 if the model is exactly `K + lambda I`).
    pub fn total_jitter(&self) -> f64 {
        self.jitter.iter().sum()
    }

    /// Jitter added to each observation's diagonal entry of `C` (effective extra noise).
    pub fn jitter(&self) -> &[f64] {
        &self.jitter
    }

    /// `w = L^{-1} y`.
    pub fn whitened_y(&self) -> &[f64] {
        &self.w
    }

    /// Lower Cholesky factor `L` of `C` as a dense matrix (a copy).
    pub fn cholesky_factor(&self) -> Mat<f64> {
        self.chol.to_mat()
    }

    /// `L^{-1} b` in O(n^2).
    pub fn forward_solve(&self, b: &[f64]) -> Result<Vec<f64>, GpError> {
        if b.len() != self.n_obs() {
            return Err(GpError::LengthMismatch { expected: self.n_obs(), got: b.len() });
        }
        let mut z = b.to_vec();
        self.chol.forward_solve_in_place(&mut z);
        Ok(z)
    }

    /// `L^{-1} b` in place; `b.len()` must equal `n_obs()`.
    pub(crate) fn forward_solve_in_place(&self, b: &mut [f64]) {
        self.chol.forward_solve_in_place(b);
    }

    /// `V = L^{-1} K(X, Q)` (n x |Q|), by a blocked sequential triangular solve.
    pub(crate) fn whitened_cross(&self, xq: &Rows<'_>) -> Mat<f64> {
        let mut v = self.kernel.cross_rows(&self.x.rows(), xq);
        if self.n_obs() > 0 {
            let l = self.chol.to_mat();
            solve_lower_in_place(l.as_ref(), v.as_mut());
        }
        v
    }

    /// Posterior mean `V^T w` and variance `k(q,q) - ||V_q||^2` (clamped at 0) at each query
    /// (a row of `xq`; a non-standard-layout `xq` is laid out anew once, O(|Q| d)).
    ///
    /// # Panics
    /// If `xq.ncols() != self.kernel().dim()` (programmer error).
    pub fn predict(&self, xq: ArrayView2<'_, f64>) -> (Vec<f64>, Vec<f64>) {
        assert_eq!(xq.ncols(), self.kernel.dim(), "Gp::predict: wrong dimension");
        self.predict_rows(&Rows::new(xq))
    }

    /// [`Gp::predict`] on rows already laid out.
    pub(crate) fn predict_rows(&self, xq: &Rows<'_>) -> (Vec<f64>, Vec<f64>) {
        let v = self.whitened_cross(xq);
        let mut mean = Vec::with_capacity(xq.len());
        let mut var = Vec::with_capacity(xq.len());
        for (j, q) in xq.iter().enumerate() {
            let col = v.col(j);
            let (mut m, mut s) = (0.0, 0.0);
            for (i, &vij) in col.iter().enumerate() {
                m += vij * self.w[i];
                s += vij * vij;
            }
            mean.push(m);
            var.push((self.kernel.eval(q, q) - s).max(0.0));
        }
        (mean, var)
    }

    /// Posterior mean only, `k(q, X) C^{-1} y`, in O(n^2 + n |Q|) (no triangular solve per
    /// query, unlike [`Gp::predict`]): for large query sets when the variance is not needed.
    ///
    /// # Panics
    /// If `xq.ncols() != self.kernel().dim()` (programmer error).
    pub fn predict_mean(&self, xq: ArrayView2<'_, f64>) -> Vec<f64> {
        assert_eq!(xq.ncols(), self.kernel.dim(), "Gp::predict_mean: wrong dimension");
        let xq = Rows::new(xq);
        let mut alpha = self.w.clone();
        self.chol.backward_solve_in_place(&mut alpha);
        xq.iter().map(|q| self.x.iter().zip(&alpha).map(|(xi, a)| a * self.kernel.eval(xi, q)).sum()).collect()
    }

    /// Posterior covariance `K(Q, Q) - V^T V` (|Q| x |Q|).
    ///
    /// # Panics
    /// If `xq.ncols() != self.kernel().dim()` (programmer error).
    pub fn posterior_cov(&self, xq: ArrayView2<'_, f64>) -> Mat<f64> {
        assert_eq!(xq.ncols(), self.kernel.dim(), "Gp::posterior_cov: wrong dimension");
        self.posterior_cov_rows(&Rows::new(xq))
    }

    /// [`Gp::posterior_cov`] on rows already laid out.
    pub(crate) fn posterior_cov_rows(&self, xq: &Rows<'_>) -> Mat<f64> {
        let mut cov = self.kernel.gram_rows(xq);
        if self.n_obs() > 0 {
            let v = self.whitened_cross(xq);
            matmul(cov.as_mut(), Accum::Add, v.transpose(), v.as_ref(), -1.0);
        }
        cov
    }

    /// `log p(y) = -1/2 y^T C^{-1} y - sum_i log L_ii - n/2 log 2 pi`, with `y^T C^{-1} y = w^T w`.
    pub fn log_marginal_likelihood(&self) -> f64 {
        let n = self.n_obs();
        let logdet_half: f64 = (0..n).map(|i| math::ln(self.chol.diag(i))).sum();
        -0.5 * dot(&self.w, &self.w) - logdet_half - 0.5 * n as f64 * LN_2PI
    }
}

/// Kernel hyperparameters valid and noise finite and `>= 0`.
pub(crate) fn check_hyper(kernel: &Kernel, noise_var: f64) -> Result<(), GpError> {
    kernel.validate()?;
    if !(noise_var.is_finite() && noise_var >= 0.0) {
        return Err(GpError::InvalidParameter(format!("noise variance must be finite and >= 0, got {noise_var}")));
    }
    Ok(())
}

/// Training inputs of the kernel's dimension, one finite value per finite input.
pub(crate) fn check_data(x: &Rows<'_>, y: &[f64], dim: usize) -> Result<(), GpError> {
    if x.dim() != dim {
        return Err(GpError::DimensionMismatch { expected: dim, got: x.dim() });
    }
    if y.len() != x.len() {
        return Err(GpError::LengthMismatch { expected: x.len(), got: y.len() });
    }
    if !x.all_finite() {
        return Err(GpError::NonFinite("x"));
    }
    if !y.iter().all(|v| v.is_finite()) {
        return Err(GpError::NonFinite("y"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::aview1;

    fn rows(dim: usize, data: Vec<f64>) -> Array2<f64> {
        Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
    }

    #[test]
    fn factor_reconstructs_covariance() {
        let kernel = Kernel::matern52(1.3, vec![0.4, 0.7]);
        let x = rows(2, (0..20).map(|i| (i as f64 * 0.37).sin()).collect());
        let y: Vec<f64> = (0..10).map(|i| i as f64 * 0.1).collect();
        let (gp, rep) = Gp::fit(kernel.clone(), 0.01, x.clone(), y).unwrap();
        assert_eq!(rep, JitterReport::default());
        assert_eq!(gp.cholesky_factor().nrows(), 10);
        let l = gp.cholesky_factor();
        let llt = &l * l.transpose();
        let mut c = kernel.gram(x.view());
        for i in 0..10 {
            c[(i, i)] += 0.01;
        }
        for i in 0..10 {
            for j in 0..10 {
                assert!((llt[(i, j)] - c[(i, j)]).abs() <= 10.0 * f64::EPSILON * 1.31);
            }
        }
    }

    #[test]
    fn predict_mean_equals_the_mean_of_predict() {
        // Two routes: k(q, X) (L^{-T} w) by back substitution here, (L^{-1} k(X, q)) . w by a
        // blocked forward solve in predict; the latter is checked against scikit-learn in tests/.
        let kernel = Kernel::squared_exponential(2.0, vec![0.5, 1.5, 0.8]);
        let x = rows(3, (0..90).map(|i| (i as f64 * 0.731).sin() * 2.0).collect());
        let y: Vec<f64> = (0..30).map(|i| (i as f64 * 0.3).cos()).collect();
        let (mut gp, _) = Gp::fit(kernel, 0.05, x, y).unwrap();
        gp.append(aview1(&[0.1, -0.2, 0.3]), 0.7).unwrap();
        let q = rows(3, (0..600).map(|i| (i as f64 * 0.377).cos() * 2.5).collect());
        let (want, _) = gp.predict(q.view());
        let got = gp.predict_mean(q.view());
        let scale = want.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.1);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-10 * scale, "{g} vs {w}");
        }
        assert_eq!(Gp::new(Kernel::matern32(1.0, vec![1.0; 3]), 0.1).predict_mean(q.view()), vec![0.0; 200]);
    }
}
