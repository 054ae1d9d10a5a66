//! Cholesky factorisation with jitter escalation, and the growable packed lower factor used for
//! O(n^2) appends.
//!
//! Jitter rule: jitter is added only when a factorisation fails. It starts at
//! `1e-10 * v` (`v` = kernel variance) and grows x10 per attempt, for at most
//! [`JITTER_MAX_ATTEMPTS`] attempts, after which [`GpError::NotPositiveDefinite`] is returned.
//!
//! A factorisation "fails" when a pivot `d_i^2` is not above the rounding floor
//! `n * eps * c_max` (`c_max` the largest diagonal entry): below it, `d_i^2` is indistinguishable
//! from the rounding error of the `n`-term sum it is computed from, so a bare positivity
//! test would accept numerical noise as a pivot.

use armada_linalg::cholesky_in_place;
use faer::{Mat, MatRef};

use crate::error::GpError;

/// First jitter, relative to the kernel variance.
pub(crate) const JITTER_START_REL: f64 = 1e-10;
/// Maximum number of jittered attempts (last jitter `1e-10 * 10^11 * v = 10 v`).
pub(crate) const JITTER_MAX_ATTEMPTS: u32 = 12;

/// Regularisation applied to make a factorisation succeed.
///
/// `jitter == 0.0` and `attempts == 0` mean none was needed. Otherwise `jitter` is the diagonal
/// amount that made the factorisation succeed and `attempts` how many jittered tries it took.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JitterReport {
    /// Diagonal jitter added (0.0 when none was needed).
    pub jitter: f64,
    /// Number of jittered attempts (0 when none was needed).
    pub attempts: u32,
}

impl JitterReport {
    /// Whether any jitter was added.
    pub fn jittered(&self) -> bool {
        self.attempts > 0
    }
}

/// Pivot floor `n * eps * scale`: a pivot at or below it is rounding noise.
#[inline]
pub(crate) fn pivot_floor(n: usize, scale: f64) -> f64 {
    n.max(1) as f64 * f64::EPSILON * scale
}

/// Jitter for one new pivot: 0 when `pivot` clears `floor`, else the first of the
/// escalating values `1e-10 v, 1e-9 v, ...` that does (shared by every O(n^2) update).
pub(crate) fn pivot_jitter(pivot: f64, floor: f64, variance: f64) -> Result<JitterReport, GpError> {
    let mut report = JitterReport::default();
    while pivot + report.jitter <= floor {
        if report.attempts == JITTER_MAX_ATTEMPTS {
            return Err(GpError::NotPositiveDefinite { attempts: report.attempts, jitter: report.jitter });
        }
        report.attempts += 1;
        report.jitter = next_jitter(report.jitter, variance);
    }
    Ok(report)
}

/// Next jitter in the escalation `1e-10 v, 1e-9 v, ...`.
#[inline]
pub(crate) fn next_jitter(jitter: f64, variance: f64) -> f64 {
    if jitter == 0.0 {
        JITTER_START_REL * variance
    } else {
        jitter * 10.0
    }
}

/// Lower Cholesky factor `L` (upper triangle zeroed) of `a + jitter I`, escalating the jitter
/// only if the unjittered factorisation fails. `variance` scales the jitter.
pub(crate) fn cholesky_jittered(a: MatRef<'_, f64>, variance: f64) -> Result<(Mat<f64>, JitterReport), GpError> {
    let n = a.nrows();
    debug_assert_eq!(n, a.ncols());
    let c_max = (0..n).map(|i| a[(i, i)]).fold(0.0_f64, f64::max);
    if !c_max.is_finite() || !a.is_all_finite() {
        return Err(GpError::NonFinite("covariance matrix"));
    }
    let floor = pivot_floor(n, c_max);
    let mut report = JitterReport::default();
    loop {
        let mut l = a.to_owned();
        for i in 0..n {
            l[(i, i)] += report.jitter;
        }
        let ok = cholesky_in_place(l.as_mut()).is_ok()
            && (0..n).all(|i| {
                let d = l[(i, i)];
                d.is_finite() && d * d > floor
            });
        if ok {
            for j in 1..n {
                for i in 0..j {
                    l[(i, j)] = 0.0;
                }
            }
            return Ok((l, report));
        }
        if report.attempts == JITTER_MAX_ATTEMPTS {
            return Err(GpError::NotPositiveDefinite { attempts: report.attempts, jitter: report.jitter });
        }
        report.attempts += 1;
        report.jitter = next_jitter(report.jitter, variance);
    }
}

/// Lower-triangular `n x n` factor stored packed by rows: row `i` holds `L[i, 0..=i]` at
/// `data[i(i+1)/2 ..]`. Appending a row is an amortised O(n) push, never a copy of the factor.
#[derive(Clone, Debug, Default)]
pub(crate) struct PackedLower {
    data: Vec<f64>,
    n: usize,
}

impl PackedLower {
    /// Packs the lower triangle of a square faer matrix.
    pub(crate) fn from_mat(l: MatRef<'_, f64>) -> Self {
        let n = l.nrows();
        let mut data = Vec::with_capacity(n * (n + 1) / 2);
        for i in 0..n {
            data.extend((0..=i).map(|j| l[(i, j)]));
        }
        Self { data, n }
    }

    /// Row `i`: `L[i, 0..=i]`.
    #[inline]
    pub(crate) fn row(&self, i: usize) -> &[f64] {
        let start = i * (i + 1) / 2;
        &self.data[start..start + i + 1]
    }

    /// `L[i, i]`.
    #[inline]
    pub(crate) fn diag(&self, i: usize) -> f64 {
        self.data[i * (i + 1) / 2 + i]
    }

    /// Appends the row `[l^T, d]`.
    pub(crate) fn push_row(&mut self, l: &[f64], d: f64) {
        debug_assert_eq!(l.len(), self.n);
        self.data.extend_from_slice(l);
        self.data.push(d);
        self.n += 1;
    }

    /// Forward substitution `L^{-1} b` in place, O(n^2): `z_i = (b_i - L[i,..i] . z[..i]) / L_ii`.
    pub(crate) fn forward_solve_in_place(&self, b: &mut [f64]) {
        debug_assert_eq!(b.len(), self.n);
        for i in 0..self.n {
            let row = self.row(i);
            let s = dot(&row[..i], &b[..i]);
            b[i] = (b[i] - s) / row[i];
        }
    }

    /// Backward substitution `L^{-T} b` in place, O(n^2), column-oriented over the packed rows:
    /// once `z_i = b_i / L_ii` is final, `b[..i] -= z_i L[i, ..i]`.
    pub(crate) fn backward_solve_in_place(&self, b: &mut [f64]) {
        debug_assert_eq!(b.len(), self.n);
        for i in (0..self.n).rev() {
            let row = self.row(i);
            b[i] /= row[i];
            let zi = b[i];
            for (bj, &lij) in b[..i].iter_mut().zip(&row[..i]) {
                *bj -= zi * lij;
            }
        }
    }

    /// Dense `n x n` copy (upper triangle zero), for blocked multi-right-hand-side solves.
    pub(crate) fn to_mat(&self) -> Mat<f64> {
        let mut m = Mat::zeros(self.n, self.n);
        for i in 0..self.n {
            for (j, &v) in self.row(i).iter().enumerate() {
                m[(i, j)] = v;
            }
        }
        m
    }
}

/// Plain dot product.
#[inline]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
