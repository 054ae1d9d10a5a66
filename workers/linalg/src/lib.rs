//! armada-linalg: the dense linear algebra of the job path, with the same bits on every
//! processor.
//!
//! faer chooses its kernels by processor at run time (AVX-512, AVX2 with fused
//! multiply-add, or scalar), and each choice rounds differently. armada keeps faer's matrix
//! types (`Mat`, `MatRef`, `MatMut`) for storage and views and computes with these kernels
//! instead: every sum runs in one fixed order, every multiply-add is either fused
//! ([`armada_math::fma`], correctly rounded, so the same on every processor) or not, by the
//! kernel's definition, never by the processor, and the AVX2 + FMA copy of a kernel
//! (`armada_math::avx2_dispatch!`) differs from the baseline only in how many lanes an
//! instruction holds.
//!
//! - [`matmul`]: `dst = alpha a b` or `dst += alpha a b`, any strides (transposed views too);
//! - [`weighted_gram`]: `X^T W X` of a row-major `X`, [`matmul`]'s bits without forming `W X`
//!   ([`weighted_gram_symmetric`]: from one triangle, mirrored);
//! - [`cholesky_in_place`]: the lower Cholesky factor, blocked;
//! - [`solve_lower_in_place`] and [`solve_lower_transpose_in_place`]: `L X = B` and
//!   `L^T X = B` for a lower-triangular `L`; [`LowerFactor`] the same for a factor kept for
//!   many solves;
//! - [`symmetric_eigen`]: eigenvalues and eigenvectors of a symmetric matrix (cyclic Jacobi);
//! - [`squared_norm`] and [`dot`]: sums in a fixed order.
//!
//! armada-math's `job_path` test keeps the families off faer's kernels.

mod cholesky;
mod eigen;
mod gemm;
mod gram;
mod triangular;

pub use cholesky::{cholesky_in_place, NotPositiveDefinite};
pub use eigen::symmetric_eigen;
pub use faer::{Accum, Mat, MatMut, MatRef};
pub use gemm::matmul;
pub use gram::{weighted_gram, weighted_gram_symmetric};
pub use triangular::{solve_lower_in_place, solve_lower_transpose_in_place, LowerFactor};

/// `sum x_i^2`: four partial sums over `i mod 4`, then `(s0 + s1) + (s2 + s3)`, then the
/// remainder in order. The same bits on every processor, and a vector add per four terms.
#[inline]
pub fn squared_norm(x: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let mut chunks = x.chunks_exact(4);
    for c in &mut chunks {
        for l in 0..4 {
            acc[l] += c[l] * c[l];
        }
    }
    let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for v in chunks.remainder() {
        sum += v * v;
    }
    sum
}

/// `sum x_i y_i`, in the order of [`squared_norm`].
#[inline]
pub fn dot(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "dot of lengths {} and {}", x.len(), y.len());
    let mut acc = [0.0; 4];
    let (mut xs, mut ys) = (x.chunks_exact(4), y.chunks_exact(4));
    for (a, b) in (&mut xs).zip(&mut ys) {
        for l in 0..4 {
            acc[l] += a[l] * b[l];
        }
    }
    let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (a, b) in xs.remainder().iter().zip(ys.remainder()) {
        sum += a * b;
    }
    sum
}

/// Column `j` of a column-major matrix with contiguous columns.
fn col(a: MatRef<'_, f64>, j: usize) -> &[f64] {
    a.col(j).try_as_col_major().expect("contiguous columns").as_slice()
}

#[cfg(test)]
pub(crate) mod testing {
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A matrix of uniform entries in [-1, 1).
    pub fn random(rows: usize, cols: usize, seed: u64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Mat::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0))
    }

    /// A well-conditioned symmetric positive definite matrix: `a a^T / n + I`.
    pub fn spd(n: usize, seed: u64) -> Mat<f64> {
        let a = random(n, n, seed);
        Mat::from_fn(n, n, |i, j| {
            (0..n).map(|k| a[(i, k)] * a[(j, k)]).sum::<f64>() / n as f64 + if i == j { 1.0 } else { 0.0 }
        })
    }

    /// The product by the textbook triple loop, in a different order than the kernels
    /// (so it agrees to rounding, not to the bit).
    pub fn naive_product(a: faer::MatRef<'_, f64>, b: faer::MatRef<'_, f64>) -> Mat<f64> {
        Mat::from_fn(a.nrows(), b.ncols(), |i, j| (0..a.ncols()).rev().map(|k| a[(i, k)] * b[(k, j)]).sum())
    }

    /// The largest entry of `|a - b|`, relative to the largest entry of `|b|` (at least 1).
    pub fn relative_gap(a: faer::MatRef<'_, f64>, b: faer::MatRef<'_, f64>) -> f64 {
        assert_eq!((a.nrows(), a.ncols()), (b.nrows(), b.ncols()));
        let mut gap: f64 = 0.0;
        let mut scale: f64 = 1.0;
        for j in 0..a.ncols() {
            for i in 0..a.nrows() {
                gap = gap.max((a[(i, j)] - b[(i, j)]).abs());
                scale = scale.max(b[(i, j)].abs());
            }
        }
        gap / scale
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn squared_norm_sums_in_its_documented_order() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(super::squared_norm(&x), 91.0);
        // 1e16 + 1 + ... : the order shows in the bits.
        let y = [1e8, 1.0, 0.0, 0.0, 1.0];
        assert_eq!(super::squared_norm(&y), ((1e16 + 1.0) + 0.0) + 1.0);
        assert_eq!(super::squared_norm(&[]), 0.0);
    }
}
