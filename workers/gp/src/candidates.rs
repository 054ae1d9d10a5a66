//! Posterior mean and variance on a fixed candidate set, updated in O(n*m) per observation.
//!
//! The posterior of Eq. (2.1) of the randomized-straddle paper (Inatsu et al.), kept
//! incrementally. With `L` the Cholesky factor of `C = K(X,X) + lambda I` and the
//! whitened cross-covariance `V = L^{-1} K(X, C)` (n x m, one row per observation), the posterior
//! on the candidates is `mu = V^T w`, `sigma^2_j = k(c_j, c_j) - ||V[:, j]||^2`.
//! Appending an observation with factor row `[l^T, d]` and `w_new` appends one row to `V`:
//!
//! `v_new = (k(x_new, C) - l^T V) / d`,  `mu += w_new v_new`,  `sigma^2 -= v_new^2`.
//!
//! When the new point is candidate `j`, `l = L^{-1} k(X, c_j) = V[:, j]`: no kernel solve at all.

use ndarray::{Array2, ArrayView1, ArrayView2};

use crate::chol::JitterReport;
use crate::error::GpError;
use crate::gp::Gp;
use crate::kernel::Kernel;
use crate::points::{point, Points};

/// Posterior mean and variance on a fixed candidate set, kept current in O(n*m) per observation.
#[derive(Clone, Debug)]
pub struct CandidateCache {
    gp: Gp,
    candidates: Points,
    /// `V = L^{-1} K(X, C)`, row-major n x m: row `i` is `v[i*m..(i+1)*m]`.
    v: Vec<f64>,
    /// Prior variances `k(c_j, c_j)`.
    prior_var: Vec<f64>,
    mean: Vec<f64>,
    var: Vec<f64>,
    /// Scratch for the forward-solve vector `l` (reused, no per-step allocation once grown).
    l: Vec<f64>,
}

impl CandidateCache {
    /// A cache for a GP with no data: mean 0, variance `k(c, c)`. One candidate per row; the
    /// cache keeps `candidates` as they are when row-major (no copy), else lays them out anew
    /// once (O(m d)).
    ///
    /// # Panics
    /// If `candidates.ncols() != kernel.dim()` (programmer error).
    pub fn new(kernel: Kernel, noise_var: f64, candidates: Array2<f64>) -> Self {
        assert_eq!(
            candidates.ncols(),
            kernel.dim(),
            "CandidateCache::new: candidate dimension differs from kernel dimension"
        );
        let candidates = Points::from(candidates);
        let prior_var: Vec<f64> = candidates.iter().map(|c| kernel.eval(c, c)).collect();
        Self {
            gp: Gp::new(kernel, noise_var),
            mean: vec![0.0; candidates.len()],
            var: prior_var.clone(),
            prior_var,
            candidates,
            v: Vec::new(),
            l: Vec::new(),
        }
    }

    /// A cache for an already conditioned GP (e.g. after refitting hyperparameters): builds
    /// `V = L^{-1} K(X, C)` with one blocked triangular solve, O(n^2 m). `candidates` are
    /// kept as in [`CandidateCache::new`].
    pub fn from_gp(gp: Gp, candidates: Array2<f64>) -> Result<Self, GpError> {
        if candidates.ncols() != gp.kernel().dim() {
            return Err(GpError::DimensionMismatch { expected: gp.kernel().dim(), got: candidates.ncols() });
        }
        let candidates = Points::from(candidates);
        let n = gp.n_obs();
        let m = candidates.len();
        let vm = gp.whitened_cross(&candidates.rows());
        let mut v = Vec::with_capacity(n * m);
        for i in 0..n {
            v.extend((0..m).map(|j| vm[(i, j)]));
        }
        let prior_var: Vec<f64> = candidates.iter().map(|c| gp.kernel().eval(c, c)).collect();
        let w = gp.whitened_y();
        let mut mean = vec![0.0; m];
        let mut var = prior_var.clone();
        for (i, row) in v.chunks_exact(m.max(1)).enumerate().take(n) {
            axpy_mean_var(&mut mean, &mut var, row, w[i]);
        }
        Ok(Self { gp, candidates, v, prior_var, mean, var, l: Vec::new() })
    }

    /// Observe candidate `j` with value `y`. The forward-solve vector is `l = V[:, j]`.
    pub fn observe_candidate(&mut self, j: usize, y: f64) -> Result<JitterReport, GpError> {
        let m = self.candidates.len();
        if j >= m {
            return Err(GpError::IndexOutOfRange { index: j, len: m });
        }
        let n = self.gp.n_obs();
        self.l.clear();
        self.l.extend((0..n).map(|i| self.v[i * m + j]));
        let cj = self.candidates.row(j).to_vec();
        self.gp.check_observation(&cj, y)?;
        let kxx = self.prior_var[j];
        self.push(&cj, y, kxx)
    }

    /// Observe an arbitrary point `x` with value `y` (one O(n^2) forward solve for `l`). A
    /// non-contiguous `x` is copied once (O(d)).
    pub fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64) -> Result<JitterReport, GpError> {
        let x = point(x);
        self.gp.check_observation(&x, y)?;
        self.l.clear();
        self.l.resize(self.gp.n_obs(), 0.0);
        self.gp.kernel().cross_into(&x, &self.gp.x_rows(), &mut self.l);
        self.gp.forward_solve_in_place(&mut self.l);
        let kxx = self.gp.kernel().eval(&x, &x);
        self.push(&x, y, kxx)
    }

    /// Shared tail: extend the factor with `self.l`, append `v_new` to `V`, update mean and var.
    fn push(&mut self, x: &[f64], y: f64, kxx: f64) -> Result<JitterReport, GpError> {
        let m = self.candidates.len();
        let n = self.gp.n_obs();
        let (d, w_new, report) = self.gp.push_observation(x, y, &self.l, kxx)?;
        // New row of V, computed in place at the end of the buffer:
        // v_new = (k(x, C) - sum_i l_i V_i) / d, an axpy over contiguous rows.
        self.v.resize((n + 1) * m, 0.0);
        let (old, new) = self.v.split_at_mut(n * m);
        self.gp.kernel().cross_into(x, &self.candidates.rows(), new);
        for (li, row) in self.l.iter().zip(old.chunks_exact(m.max(1))) {
            for (nv, &ov) in new.iter_mut().zip(row) {
                *nv -= li * ov;
            }
        }
        let inv_d = 1.0 / d;
        for nv in new.iter_mut() {
            *nv *= inv_d;
        }
        axpy_mean_var(&mut self.mean, &mut self.var, new, w_new);
        Ok(report)
    }

    /// Posterior means at the candidates.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Posterior variances at the candidates (clamped at 0).
    pub fn var(&self) -> &[f64] {
        &self.var
    }

    /// The candidate set, one per row (a view of the cache's own storage, no copy).
    pub fn candidates(&self) -> ArrayView2<'_, f64> {
        self.candidates.view()
    }

    /// Candidate `j` as a row of the contiguous candidate buffer (no copy, no layout check):
    /// for acquisition rules that read candidates one at a time in their inner loops.
    ///
    /// # Panics
    /// If `j` is out of range.
    pub fn candidate(&self, j: usize) -> &[f64] {
        self.candidates.row(j)
    }

    /// The underlying GP.
    pub fn gp(&self) -> &Gp {
        &self.gp
    }

    /// Number of observations.
    pub fn n_obs(&self) -> usize {
        self.gp.n_obs()
    }

    /// Posterior covariance `k(c_i, c_j) - V[:, i] . V[:, j]`, O(n).
    ///
    /// # Panics
    /// If `i` or `j` is out of range.
    pub fn cov(&self, i: usize, j: usize) -> f64 {
        let m = self.candidates.len();
        let k = self.gp.kernel().eval(self.candidates.row(i), self.candidates.row(j));
        let s: f64 = self.v.chunks_exact(m).map(|row| row[i] * row[j]).sum();
        k - s
    }

    /// `V[:, j] = L^{-1} k(X, c_j)` (a copy, O(n)).
    pub fn whitened_column(&self, j: usize) -> Vec<f64> {
        let m = self.candidates.len();
        self.v.chunks_exact(m).map(|row| row[j]).collect()
    }

    /// Same as [`Gp::log_marginal_likelihood`] of the underlying GP.
    pub fn log_marginal_likelihood(&self) -> f64 {
        self.gp.log_marginal_likelihood()
    }
}

/// `mean += w v`, `var = max(var - v^2, 0)`.
#[inline]
fn axpy_mean_var(mean: &mut [f64], var: &mut [f64], v: &[f64], w: f64) {
    for ((mu, s2), &vj) in mean.iter_mut().zip(var.iter_mut()).zip(v) {
        *mu += w * vj;
        *s2 = (*s2 - vj * vj).max(0.0);
    }
}
