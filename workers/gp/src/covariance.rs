//! Posterior mean and the full posterior covariance on a fixed candidate set, kept current by
//! exact rank-1 downdates (the sequential form of the posterior, Eq. (2.1) of Inatsu et al.).
//!
//! Observing candidate `j` with value `y`, with `c = C[:, j]` (the posterior covariance of every
//! candidate with `f(c_j)`) and the predictive variance `s = C[j, j] + lambda`:
//!
//! `mu += c (y - mu_j) / s`,  `C -= c c^T / s`.
//!
//! This is O(N^2) per observation and needs N^2 doubles (N = 2,500: 50 MB; N = 6,586: 347 MB),
//! against O(N n) for [`crate::CandidateCache`], which keeps only the variances. It exists for
//! acquisition rules that read whole covariance rows, such as MILE (Zanette et al. 2019).

use ndarray::{Array2, ArrayView2};

use crate::chol::{pivot_floor, pivot_jitter, JitterReport};
use crate::error::GpError;
use crate::gp::check_hyper;
use crate::kernel::Kernel;
use crate::points::Points;

/// Posterior mean, variance and full covariance on a fixed set of `N` candidates.
///
/// The covariance is stored row-major and kept exactly symmetric, so row `j` is also column `j`
/// and [`CandidateCovariance::cov_row`] is contiguous.
#[derive(Clone, Debug)]
pub struct CandidateCovariance {
    kernel: Kernel,
    noise_var: f64,
    candidates: Points,
    /// Posterior covariance `C`, row-major `N x N`.
    cov: Vec<f64>,
    mean: Vec<f64>,
    /// The diagonal of `C`, kept as its own vector so `var()` is a slice.
    var: Vec<f64>,
    /// Prior variances `k(c_j, c_j)` (scale of the pivot rounding floor).
    prior_var: Vec<f64>,
    n_obs: usize,
    /// Sum of the jitter added to observations whose pivot `s` was lost in rounding.
    total_jitter: f64,
    /// Scratch: the column `c`, then `c / sqrt(s)` (the update overwrites row `j` while reading it).
    col: Vec<f64>,
}

impl CandidateCovariance {
    /// The prior on the candidates: mean 0, covariance `K(C, C)` (O(N^2) kernel evaluations).
    /// One candidate per row, kept as they are when row-major (no copy), else laid out anew
    /// once (O(N d)).
    ///
    /// # Panics
    /// If `candidates.ncols() != kernel.dim()` (programmer error).
    pub fn new(kernel: Kernel, noise_var: f64, candidates: Array2<f64>) -> Self {
        assert_eq!(
            candidates.ncols(),
            kernel.dim(),
            "CandidateCovariance::new: candidate dimension differs from kernel dimension"
        );
        let candidates = Points::from(candidates);
        let n = candidates.len();
        let mut cov = vec![0.0; n * n];
        // Fill the lower triangle once and mirror it: exact symmetry, half the kernel calls.
        for i in 0..n {
            for j in 0..=i {
                let k = kernel.eval(candidates.row(i), candidates.row(j));
                cov[i * n + j] = k;
                cov[j * n + i] = k;
            }
        }
        let prior_var: Vec<f64> = (0..n).map(|i| cov[i * n + i]).collect();
        Self {
            kernel,
            noise_var,
            candidates,
            cov,
            mean: vec![0.0; n],
            var: prior_var.clone(),
            prior_var,
            n_obs: 0,
            total_jitter: 0.0,
            col: Vec::with_capacity(n),
        }
    }

    /// Observe candidate `j` with value `y` by the exact rank-1 downdate of the module docs.
    ///
    /// If the predictive variance `s = C[j, j] + lambda` is lost in rounding (at or below
    /// `n eps (k(c_j, c_j) + lambda)`, e.g. a noise-free repeat), jitter is added to this
    /// observation's noise only, escalated as in [`crate::Gp::append`], and reported.
    pub fn observe_candidate(&mut self, j: usize, y: f64) -> Result<JitterReport, GpError> {
        let n = self.candidates.len();
        if j >= n {
            return Err(GpError::IndexOutOfRange { index: j, len: n });
        }
        check_hyper(&self.kernel, self.noise_var)?;
        if !y.is_finite() {
            return Err(GpError::NonFinite("y"));
        }
        let s0 = self.cov[j * n + j] + self.noise_var;
        if !s0.is_finite() {
            return Err(GpError::NonFinite("predictive variance"));
        }
        let floor = pivot_floor(self.n_obs + 1, self.prior_var[j] + self.noise_var);
        let report = pivot_jitter(s0, floor, self.kernel.variance)?;
        let s = s0 + report.jitter;

        self.col.clear();
        self.col.extend_from_slice(&self.cov[j * n..(j + 1) * n]);
        let gain = (y - self.mean[j]) / s;
        for (mu, &ci) in self.mean.iter_mut().zip(&self.col) {
            *mu += ci * gain;
        }
        // With g = c / sqrt(s), C -= g g^T: entry (i, k) subtracts g_i g_k and (k, i) subtracts
        // g_k g_i, the same product, so C stays exactly symmetric. Row-wise over contiguous
        // memory; the diagonal is clamped at 0 (a variance cannot be negative).
        let inv_sqrt_s = 1.0 / s.sqrt();
        for g in self.col.iter_mut() {
            *g *= inv_sqrt_s;
        }
        for (i, row) in self.cov.chunks_exact_mut(n.max(1)).enumerate() {
            let gi = self.col[i];
            for (cik, &gk) in row.iter_mut().zip(&self.col) {
                *cik -= gi * gk;
            }
            let d = row[i].max(0.0);
            row[i] = d;
            self.var[i] = d;
        }
        self.n_obs += 1;
        self.total_jitter += report.jitter;
        Ok(report)
    }

    /// Posterior means at the candidates.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Posterior variances at the candidates (the diagonal of `C`, clamped at 0).
    pub fn var(&self) -> &[f64] {
        &self.var
    }

    /// Row `j` of the posterior covariance: `Cov(f(c_j), f(c_k))` for every `k` (contiguous).
    ///
    /// # Panics
    /// If `j` is out of range.
    pub fn cov_row(&self, j: usize) -> &[f64] {
        let n = self.candidates.len();
        &self.cov[j * n..(j + 1) * n]
    }

    /// Posterior covariance of candidates `i` and `j`.
    ///
    /// # Panics
    /// If `i` or `j` is out of range.
    pub fn cov(&self, i: usize, j: usize) -> f64 {
        self.cov_row(i)[j]
    }

    /// Number of observations.
    pub fn n_obs(&self) -> usize {
        self.n_obs
    }

    /// Number of candidates `N`.
    pub fn len(&self) -> usize {
        self.candidates.len()
    }

    /// Whether the candidate set is empty.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// The candidate set, one per row (a view of this object's own storage, no copy).
    pub fn candidates(&self) -> ArrayView2<'_, f64> {
        self.candidates.view()
    }

    /// The covariance function.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The fixed noise variance `lambda`.
    pub fn noise_var(&self) -> f64 {
        self.noise_var
    }

    /// Total jitter added to observations' noise so far (0.0 unless a pivot was lost).
    pub fn total_jitter(&self) -> f64 {
        self.total_jitter
    }
}
