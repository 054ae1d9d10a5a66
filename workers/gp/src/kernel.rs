//! Stationary covariance functions with ARD lengthscales and an output scale.
//!
//! With the scaled distance `r^2 = sum_i (a_i - b_i)^2 / l_i^2` and output variance `v`:
//!
//! * squared exponential: `k = v exp(-r^2 / 2)`
//! * Matern 3/2:          `k = v (1 + sqrt3 r) exp(-sqrt3 r)`
//! * Matern 5/2:          `k = v (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)`
//!
//! Every kind satisfies `dk / d log l_i = g(r) (a_i - b_i)^2 / l_i^2` for a radial factor `g`
//! ([`Kernel::lengthscale_grad_factor`]), which is what MAP fitting differentiates.

use armada_math as math;
use faer::Mat;
use ndarray::ArrayView2;

use crate::error::GpError;
use crate::points::Rows;

const SQRT3: f64 = 1.732_050_807_568_877_2;
const SQRT5: f64 = 2.236_067_977_499_79;

/// Which stationary covariance function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// `v exp(-r^2/2)` (RBF).
    SquaredExponential,
    /// `v (1 + sqrt3 r) exp(-sqrt3 r)`.
    Matern32,
    /// `v (1 + sqrt5 r + 5r^2/3) exp(-sqrt5 r)`.
    Matern52,
}

/// A stationary ARD kernel: kind, output variance `v` and one lengthscale per input dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Functional form.
    pub kind: KernelKind,
    /// Output variance `v = k(x, x)`.
    pub variance: f64,
    /// ARD lengthscales `l_1..l_d`.
    pub lengthscales: Vec<f64>,
}

impl Kernel {
    /// `v exp(-0.5 sum_i (a_i - b_i)^2 / l_i^2)`.
    pub fn squared_exponential(variance: f64, lengthscales: Vec<f64>) -> Self {
        Self { kind: KernelKind::SquaredExponential, variance, lengthscales }
    }

    /// The LSE paper's convention `k = v exp(-||x - x'||^2 / L)`: isotropic, lengthscale
    /// `ell = sqrt(L/2)` in every one of `dim` dims (since `r^2/2 = ||x-x'||^2 / (2 ell^2)`).
    pub fn squared_exponential_paper_l(variance: f64, l_div: f64, dim: usize) -> Self {
        Self::squared_exponential(variance, vec![(l_div / 2.0).sqrt(); dim])
    }

    /// `v (1 + sqrt3 r) exp(-sqrt3 r)`.
    pub fn matern32(variance: f64, lengthscales: Vec<f64>) -> Self {
        Self { kind: KernelKind::Matern32, variance, lengthscales }
    }

    /// `v (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)`.
    pub fn matern52(variance: f64, lengthscales: Vec<f64>) -> Self {
        Self { kind: KernelKind::Matern52, variance, lengthscales }
    }

    /// A kernel of `kind` with the given hyperparameters.
    pub fn with_kind(kind: KernelKind, variance: f64, lengthscales: Vec<f64>) -> Self {
        Self { kind, variance, lengthscales }
    }

    /// Input dimension (number of lengthscales).
    pub fn dim(&self) -> usize {
        self.lengthscales.len()
    }

    /// Checks `v > 0`, every `l_i > 0`, all finite, and `dim > 0`.
    pub fn validate(&self) -> Result<(), GpError> {
        if self.lengthscales.is_empty() {
            return Err(GpError::InvalidParameter("kernel has no lengthscales".into()));
        }
        if !(self.variance.is_finite() && self.variance > 0.0) {
            return Err(GpError::InvalidParameter(format!(
                "kernel variance must be finite and > 0, got {}",
                self.variance
            )));
        }
        if let Some(l) = self.lengthscales.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
            return Err(GpError::InvalidParameter(format!("lengthscales must be finite and > 0, got {l}")));
        }
        Ok(())
    }

    /// Scaled squared distance `r^2 = sum_i (a_i - b_i)^2 / l_i^2`.
    #[inline]
    pub fn scaled_sq_dist(&self, a: &[f64], b: &[f64]) -> f64 {
        debug_assert_eq!(a.len(), self.dim());
        debug_assert_eq!(b.len(), self.dim());
        a.iter()
            .zip(b)
            .zip(&self.lengthscales)
            .map(|((ai, bi), l)| {
                let z = (ai - bi) / l;
                z * z
            })
            .sum()
    }

    /// `k(r^2)` for this kind and variance.
    #[inline]
    pub fn k_of_r2(&self, r2: f64) -> f64 {
        let v = self.variance;
        match self.kind {
            KernelKind::SquaredExponential => v * math::exp(-0.5 * r2),
            KernelKind::Matern32 => {
                let s = SQRT3 * r2.sqrt();
                v * (1.0 + s) * math::exp(-s)
            }
            KernelKind::Matern52 => {
                let r = r2.sqrt();
                let s = SQRT5 * r;
                v * (1.0 + s + 5.0 / 3.0 * r2) * math::exp(-s)
            }
        }
    }

    /// The radial factor `g(r)` with `dk / d log l_i = g(r) (a_i - b_i)^2 / l_i^2`:
    ///
    /// * SE: `g = k` (from `d(-r^2/2)/d log l_i = (a_i-b_i)^2/l_i^2`);
    /// * Matern 3/2: `g = 3 v exp(-sqrt3 r)`;
    /// * Matern 5/2: `g = (5/3) v (1 + sqrt5 r) exp(-sqrt5 r)`.
    ///
    /// For the Matern kinds this is `-(dk/dr)/r`, which stays finite at `r = 0`.
    #[inline]
    pub fn lengthscale_grad_factor(&self, r2: f64) -> f64 {
        let v = self.variance;
        match self.kind {
            KernelKind::SquaredExponential => self.k_of_r2(r2),
            KernelKind::Matern32 => 3.0 * v * math::exp(-SQRT3 * r2.sqrt()),
            KernelKind::Matern52 => {
                let s = SQRT5 * r2.sqrt();
                5.0 / 3.0 * v * (1.0 + s) * math::exp(-s)
            }
        }
    }

    /// `k(a, b)`. Slices must both have length `self.dim()` (checked in debug builds).
    ///
    /// Two `&[f64]` rather than ndarray views on purpose: this is the inner-loop primitive
    /// (called O(n m) times per posterior), fed rows of a buffer laid out once
    /// ([`crate::points::Rows`]), with no layout check per call.
    #[inline]
    pub fn eval(&self, a: &[f64], b: &[f64]) -> f64 {
        self.k_of_r2(self.scaled_sq_dist(a, b))
    }

    /// Gram matrix `K_ij = k(x_i, x_j)` (n x n, exactly symmetric), one point per row of `x`
    /// (a non-standard-layout `x` is laid out anew once, O(n d)).
    ///
    /// # Panics
    /// If `x.ncols() != self.dim()` (programmer error).
    pub fn gram(&self, x: ArrayView2<'_, f64>) -> Mat<f64> {
        assert_eq!(x.ncols(), self.dim(), "Kernel::gram: wrong dimension");
        self.gram_rows(&Rows::new(x))
    }

    /// [`Kernel::gram`] on rows already laid out.
    pub(crate) fn gram_rows(&self, x: &Rows<'_>) -> Mat<f64> {
        let n = x.len();
        let mut k = Mat::zeros(n, n);
        for j in 0..n {
            k[(j, j)] = self.variance;
            for i in j + 1..n {
                let kij = self.eval(x.row(i), x.row(j));
                k[(i, j)] = kij;
                k[(j, i)] = kij;
            }
        }
        k
    }

    /// Cross-covariance `K_ij = k(a_i, b_j)` (|a| x |b|), one point per row (a
    /// non-standard-layout input is laid out anew once, O(n d)).
    ///
    /// # Panics
    /// If either input has not `self.dim()` columns (programmer error).
    pub fn cross(&self, a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Mat<f64> {
        assert_eq!(a.ncols(), self.dim(), "Kernel::cross: wrong dimension");
        assert_eq!(b.ncols(), self.dim(), "Kernel::cross: wrong dimension");
        self.cross_rows(&Rows::new(a), &Rows::new(b))
    }

    /// [`Kernel::cross`] on rows already laid out.
    pub(crate) fn cross_rows(&self, a: &Rows<'_>, b: &Rows<'_>) -> Mat<f64> {
        Mat::from_fn(a.len(), b.len(), |i, j| self.eval(a.row(i), b.row(j)))
    }

    /// `out[j] = k(x, b_j)` into a caller-provided buffer (no allocation).
    pub(crate) fn cross_into(&self, x: &[f64], b: &Rows<'_>, out: &mut [f64]) {
        self.eval_rows_into(x, b.iter(), out);
    }

    /// `out[j] = k(x, b_j)` for the `j`-th of `rows`, bit for bit [`Kernel::eval`]: the
    /// squared exponential's `exp`s in vector lanes ([`math::lanes::exp_in_place`], the same
    /// bits as [`math::exp`]), the Matern kernels' one at a time.
    ///
    /// # Panics
    /// If `rows` and `out` differ in length (programmer error).
    pub fn eval_rows_into<'b>(&self, x: &[f64], rows: impl ExactSizeIterator<Item = &'b [f64]>, out: &mut [f64]) {
        assert_eq!(rows.len(), out.len(), "Kernel::eval_rows_into: {} rows into {} values", rows.len(), out.len());
        match self.kind {
            KernelKind::SquaredExponential => {
                // k_of_r2's operations in its order: -0.5 r^2, its exp, times the variance.
                for (o, b) in out.iter_mut().zip(rows) {
                    *o = -0.5 * self.scaled_sq_dist(x, b);
                }
                math::lanes::exp_in_place(out);
                let v = self.variance;
                out.iter_mut().for_each(|o| *o *= v);
            }
            // Their factor in front of the exp needs `r` again after it: left one at a time.
            KernelKind::Matern32 | KernelKind::Matern52 => {
                for (o, b) in out.iter_mut().zip(rows) {
                    *o = self.eval(x, b);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Every kind, to the bit [`Kernel::eval`] one point at a time: rows near `x` and far from
    /// it (where `exp` underflows), an odd count (the lanes' tail), and none.
    #[test]
    fn rows_into_is_eval_to_the_bit() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let dim = 5;
        let lengthscales: Vec<f64> = (0..dim).map(|i| 0.2 + 0.3 * i as f64).collect();
        let kernels = [
            Kernel::squared_exponential(1.7, lengthscales.clone()),
            Kernel::matern32(0.4, lengthscales.clone()),
            Kernel::matern52(2.5, lengthscales),
        ];
        let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>()).collect();
        for n in [0, 1, 7, 1003] {
            let rows: Vec<f64> = (0..n * dim)
                .map(|p| x[p % dim] + (rng.random::<f64>() - 0.5) * 10f64.powi(2 * (p % 4) as i32 - 2))
                .collect();
            for kernel in &kernels {
                let mut out = vec![f64::NAN; n];
                kernel.eval_rows_into(&x, rows.chunks_exact(dim), &mut out);
                for (j, (got, b)) in out.iter().zip(rows.chunks_exact(dim)).enumerate() {
                    assert_eq!(got.to_bits(), kernel.eval(&x, b).to_bits(), "{:?}, n {n}, row {j}", kernel.kind);
                }
                assert!(n < 1000 || out.contains(&0.0), "the far rows reach exp's underflow");
            }
        }
    }
}
