//! The weighted Gram matrix `X^T W X` of a row-major history, in [`matmul`]'s order.
//!
//! A logistic model's exact curvature is `sum_k w_k x_k x_k^T` over every observation, rebuilt
//! at each new estimate. Formed by [`matmul`] of `(W X)^T` and `X`, it writes `W X` and packs
//! both operands before the first multiply-add, which at `d = 25` cost more than the products.
//! Here the products are taken from the rows as they lie: the same terms, fused the same way,
//! summed in the same order, so the same bits.
//!
//! [`matmul`]: crate::matmul

use crate::gemm::KC;
use armada_math::fma;

/// `dst[i + j d] = sum_k (w_k x[k d + i]) x[k d + j]` (column-major `d x d`) for the row-major
/// `n x d` matrix `x`, `n = w.len()`: bit for bit [`matmul`](crate::matmul) of `(W X)^T` and
/// `X` into a column-major `dst` with `Accum::Replace` and `alpha = 1`. Each entry sums its
/// terms by fused multiply-adds in blocks of `KC` = 256 rows, each block's sum from zero, the
/// blocks' sums added to the entry in order.
pub fn weighted_gram(x: &[f64], d: usize, w: &[f64], dst: &mut [f64]) {
    gram::<false>(x, d, w, dst);
}

/// The symmetric `X^T W X` from one triangle: each entry `(i, j)` with `i <= j` is
/// [`weighted_gram`]'s, bit for bit, and the entry `(j, i)` is a copy of it, so the result is
/// exactly symmetric for about half the multiply-adds. ([`weighted_gram`]'s `(j, i)` rounds
/// `(w_k x_kj) x_ki`, which can differ from `(w_k x_ki) x_kj` in the last bit.)
pub fn weighted_gram_symmetric(x: &[f64], d: usize, w: &[f64], dst: &mut [f64]) {
    gram::<true>(x, d, w, dst);
    for j in 0..d {
        for i in 0..j {
            dst[j + i * d] = dst[i + j * d];
        }
    }
}

/// [`weighted_gram`], or with `UPPER` only the entries `i <= j` (and whatever else their tiles
/// cover; the others are left at zero).
fn gram<const UPPER: bool>(x: &[f64], d: usize, w: &[f64], dst: &mut [f64]) {
    let n = w.len();
    assert!(x.len() == n * d && dst.len() == d * d, "weighted_gram: x {} for {n} x {d}, dst {}", x.len(), dst.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the processor has AVX2 and FMA, checked just above.
        return unsafe { avx2::gram::<UPPER>(x, d, w, dst) };
    }
    gram_in_order::<UPPER>(x, d, w, dst);
}

/// [`weighted_gram`] entry by entry, as its documentation states the order (the processors
/// without AVX2; fused multiply-adds in software there, as in [`matmul`](crate::matmul)).
fn gram_in_order<const UPPER: bool>(x: &[f64], d: usize, w: &[f64], dst: &mut [f64]) {
    dst.fill(0.0);
    let n = w.len();
    for start in (0..n).step_by(KC) {
        for i in 0..d {
            for j in if UPPER { i } else { 0 }..d {
                let sum = (start..(start + KC).min(n)).fold(0.0, |sum, k| fma(w[k] * x[k * d + i], x[k * d + j], sum));
                dst[i + j * d] += sum; // alpha = 1
            }
        }
    }
}

/// [`weighted_gram`] in AVX2 registers. For each block of [`KC`] rows of `x`, the rows of `dst`
/// in whole vectors of four go in tiles of two vectors by five columns, a lane per row (ten
/// sums, two loaded `w_k x_k` vectors and a broadcast `x_kj`: 13 of the 16 registers); the last
/// `d mod 4` rows go in tiles of up to three vectors of four columns, a lane per column (nine
/// sums, three loaded `x_k` vectors and a broadcast `w_k x_ki`), where a lane per row would
/// leave most lanes of a vector empty. Each sum runs over the block from zero in row order and
/// is then added to `dst`.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::KC;
    use std::arch::x86_64::*;

    /// Vectors of four rows of `dst` per column tile.
    const TILE_VECTORS: usize = 2;
    /// Columns of `dst` per column tile.
    const TILE_COLUMNS: usize = 5;
    /// Vectors of four columns of `dst` per row tile.
    const ROW_TILE_VECTORS: usize = 3;

    /// With `UPPER`, a tile of rows starts at its first row's column, and the last rows' tiles
    /// at the last rows' column vector: about half the products at `d = 25` (the tiles across
    /// the diagonal compute some entries below it too).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn gram<const UPPER: bool>(x: &[f64], d: usize, w: &[f64], dst: &mut [f64]) {
        dst.fill(0.0);
        let n = w.len();
        let (whole, rest) = (d / 4, d % 4);
        for start in (0..n).step_by(KC) {
            let block = start..(start + KC).min(n);
            for v0 in (0..whole).step_by(TILE_VECTORS) {
                for j0 in (if UPPER { 4 * v0 } else { 0 }..d).step_by(TILE_COLUMNS) {
                    let tile = Tile { x, d, w, i0: 4 * v0, j0 };
                    macro_rules! sums_for {
                        ($($nj:literal)*) => {
                            match (TILE_VECTORS.min(whole - v0), TILE_COLUMNS.min(d - j0)) {
                                $(
                                    (1, $nj) => tile.column_sums::<1, $nj>(block.clone(), dst),
                                    (2, $nj) => tile.column_sums::<2, $nj>(block.clone(), dst),
                                )*
                                _ => unreachable!("tiles of 1 or 2 vectors by 1 to 5 columns"),
                            }
                        };
                    }
                    sums_for!(1 2 3 4 5);
                }
            }
            // The last `d mod 4` rows, if any, a lane per column.
            let column_vectors = if rest > 0 { d.div_ceil(4) } else { 0 };
            for c0 in (if UPPER { whole } else { 0 }..column_vectors).step_by(ROW_TILE_VECTORS) {
                let nv = ROW_TILE_VECTORS.min(column_vectors - c0);
                let tile = Tile { x, d, w, i0: 4 * whole, j0: 4 * c0 };
                // Only the tile with the last column may pass `d`: its lanes there are masked.
                macro_rules! sums_for {
                    ($($rows:literal)*) => {
                        match (rest, nv, 4 * (c0 + nv) > d) {
                            $(
                                ($rows, 1, false) => tile.row_sums::<$rows, 1, false>(block.clone(), dst),
                                ($rows, 1, true) => tile.row_sums::<$rows, 1, true>(block.clone(), dst),
                                ($rows, 2, false) => tile.row_sums::<$rows, 2, false>(block.clone(), dst),
                                ($rows, 2, true) => tile.row_sums::<$rows, 2, true>(block.clone(), dst),
                                ($rows, 3, false) => tile.row_sums::<$rows, 3, false>(block.clone(), dst),
                                ($rows, 3, true) => tile.row_sums::<$rows, 3, true>(block.clone(), dst),
                            )*
                            _ => unreachable!("1 to 3 rows by 1 to 3 vectors"),
                        }
                    };
                }
                sums_for!(1 2 3);
            }
        }
    }

    /// A tile of `dst` from row `i0` and column `j0`.
    struct Tile<'a> {
        x: &'a [f64],
        d: usize,
        w: &'a [f64],
        i0: usize,
        j0: usize,
    }

    impl Tile<'_> {
        /// Rows `i0..i0 + 4 NV` by columns `j0..j0 + NJ`, a lane per row: each entry
        /// `sum_k fma(w_k x_ki, x_kj, sum)` over the history rows `block` in order, from zero,
        /// added to `dst` as [`matmul`](crate::matmul) adds a block's sum.
        #[target_feature(enable = "avx2,fma")]
        fn column_sums<const NV: usize, const NJ: usize>(&self, block: std::ops::Range<usize>, dst: &mut [f64]) {
            let (d, i0, j0) = (self.d, self.i0, self.j0);
            assert!(i0 + 4 * NV <= d && j0 + NJ <= d);
            assert!(block.end <= self.w.len() && block.end * d <= self.x.len());
            let mut sums = [[_mm256_setzero_pd(); NJ]; NV];
            for k in block {
                // SAFETY: k < w.len() and (k + 1) d <= x.len() (asserted above), and every
                // load reads an entry i0 + 4 v + l < d or j0 + j < d of row k.
                unsafe {
                    let row = self.x.as_ptr().add(k * d);
                    let wk = _mm256_set1_pd(*self.w.get_unchecked(k));
                    // The left operand's entries as `W X` holds them: one rounded product each.
                    let a: [__m256d; NV] =
                        std::array::from_fn(|v| _mm256_mul_pd(wk, _mm256_loadu_pd(row.add(i0 + 4 * v))));
                    for j in 0..NJ {
                        let b = _mm256_broadcast_sd(&*row.add(j0 + j));
                        for (sums_v, a_v) in sums.iter_mut().zip(&a) {
                            sums_v[j] = _mm256_fmadd_pd(*a_v, b, sums_v[j]);
                        }
                    }
                }
            }
            for (v, sums_v) in sums.iter().enumerate() {
                for (j, sum) in sums_v.iter().enumerate() {
                    let at = (j0 + j) * d + i0 + 4 * v;
                    let lanes = &mut dst[at..at + 4];
                    // SAFETY: `lanes` holds four f64.
                    unsafe {
                        _mm256_storeu_pd(lanes.as_mut_ptr(), _mm256_add_pd(_mm256_loadu_pd(lanes.as_ptr()), *sum))
                    };
                }
            }
        }

        /// Rows `i0..i0 + ROWS` by columns `j0..` (`NV` vectors of four, those below `d`), a
        /// lane per column: the same sums as [`Tile::column_sums`], each term's operands the
        /// same (`fma` does not depend on their order).
        #[target_feature(enable = "avx2,fma")]
        fn row_sums<const ROWS: usize, const NV: usize, const MASKED: bool>(
            &self,
            block: std::ops::Range<usize>,
            dst: &mut [f64],
        ) {
            let (d, i0, j0) = (self.d, self.i0, self.j0);
            assert!(i0 + ROWS <= d && j0 + 4 * (NV - 1) < d && (MASKED || j0 + 4 * NV <= d));
            assert!(block.end <= self.w.len() && block.end * d <= self.x.len());
            // Lane l of vector v loads column j0 + 4 v + l where it is below `d`.
            let masks: [__m256i; NV] = std::array::from_fn(|v| {
                let lane = |l: usize| if j0 + 4 * v + l < d { -1 } else { 0 };
                _mm256_setr_epi64x(lane(0), lane(1), lane(2), lane(3))
            });
            let mut sums = [[_mm256_setzero_pd(); NV]; ROWS];
            for k in block {
                // SAFETY: k < w.len() and (k + 1) d <= x.len() (asserted above); every unmasked
                // lane reads an entry i0 + i < d or j0 + 4 v + l < d of row k, and masked lanes
                // are not read.
                unsafe {
                    let row = self.x.as_ptr().add(k * d);
                    let columns: [__m256d; NV] = std::array::from_fn(|v| {
                        let at = row.add(j0 + 4 * v);
                        if MASKED {
                            _mm256_maskload_pd(at, masks[v])
                        } else {
                            _mm256_loadu_pd(at)
                        }
                    });
                    let wk = *self.w.get_unchecked(k);
                    for (i, sums_i) in sums.iter_mut().enumerate() {
                        // The left operand's entry as `W X` holds it: one rounded product.
                        let a = _mm256_set1_pd(wk * *row.add(i0 + i));
                        for (sum, column) in sums_i.iter_mut().zip(&columns) {
                            *sum = _mm256_fmadd_pd(a, *column, *sum);
                        }
                    }
                }
            }
            for (i, sums_i) in sums.iter().enumerate() {
                for (v, sum) in sums_i.iter().enumerate() {
                    let mut lanes = [0.0; 4];
                    // SAFETY: `lanes` holds four f64.
                    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), *sum) };
                    let j = j0 + 4 * v;
                    for (l, s) in lanes.iter().enumerate().take(d.saturating_sub(j).min(4)) {
                        dst[(j + l) * d + i0 + i] += s; // alpha = 1
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul;
    use faer::{Accum, MatMut, MatRef};

    /// Values of magnitudes far apart, some zero, some negative: any other order of the terms,
    /// or a product rounded before its add, shows in the bits.
    fn history(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let value = |p: u64| {
            let h = p.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ seed.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let mantissa = (h % 2001) as f64 / 1000.0 - 1.0;
            mantissa * 10f64.powi(((h >> 20) % 9) as i32 - 4)
        };
        let x = (0..(n * d) as u64).map(value).collect();
        let w = (0..n as u64).map(|k| value(k + 1_000_000).abs() * 0.25).collect();
        (x, w)
    }

    /// A way to compute [`weighted_gram`].
    type Kernel = fn(&[f64], usize, &[f64], &mut [f64]);

    /// The sizes the tests run: block edges in `n`, tile and vector edges in `d`.
    const SHAPES: [(usize, usize); 12] = [
        (0, 3),
        (3, 0),
        (1, 1),
        (5, 7),
        (40, 8),
        (257, 9),
        (300, 25),
        (600, 25),
        (513, 33),
        (70, 40),
        (9, 65),
        (256, 12),
    ];

    /// Entry by entry, the documented order: blocks of `KC` rows, a fused chain from zero in
    /// each, the block sums added in order (an independent loop, not the kernels).
    #[test]
    fn every_entry_sums_in_the_documented_order() {
        for (n, d) in SHAPES {
            let (x, w) = history(n, d, 7);
            let mut got = vec![f64::NAN; d * d];
            weighted_gram(&x, d, &w, &mut got);
            for i in 0..d {
                for j in 0..d {
                    let mut want = 0.0;
                    for start in (0..n).step_by(KC) {
                        let sum = (start..(start + KC).min(n))
                            .fold(0.0f64, |acc, k| (w[k] * x[k * d + i]).mul_add(x[k * d + j], acc));
                        want += sum;
                    }
                    assert_eq!(got[i + j * d].to_bits(), want.to_bits(), "n {n}, d {d}, ({i}, {j})");
                }
            }
        }
    }

    /// The dispatched kernel (the AVX2 tiles where the processor has them, every tile shape
    /// and mask reached by `d` from 1 to 65) and the entry-by-entry loop, to the bit the
    /// product of `W X` and `X` by [`matmul`] that the logistic curvature was formed by.
    #[test]
    fn every_tile_shape_is_the_product_of_w_x_and_x() {
        for d in (1..=41).chain([48, 64, 65]) {
            for n in [1, 3, 256, 700] {
                let (x, w) = history(n, d, d as u64);
                let weighted: Vec<f64> =
                    x.chunks_exact(d).zip(&w).flat_map(|(row, wk)| row.iter().map(move |v| wk * v)).collect();
                let mut product = vec![f64::NAN; d * d];
                let (lhs, rhs) =
                    (MatRef::from_row_major_slice(&weighted, n, d), MatRef::from_row_major_slice(&x, n, d));
                matmul(
                    MatMut::from_column_major_slice_mut(&mut product, d, d),
                    Accum::Replace,
                    lhs.transpose(),
                    rhs,
                    1.0,
                );
                let shapes: [(&str, Kernel); 2] = [("dispatched", weighted_gram), ("in order", gram_in_order::<false>)];
                for (shape, kernel) in shapes {
                    let mut got = vec![f64::NAN; d * d];
                    kernel(&x, d, &w, &mut got);
                    for (p, (a, b)) in got.iter().zip(&product).enumerate() {
                        assert_eq!(a.to_bits(), b.to_bits(), "{shape}: n {n}, d {d}, entry {p}");
                    }
                }
                // The symmetric form: the product's entries with i <= j, each mirrored.
                let symmetric: [(&str, Kernel); 2] = [
                    ("symmetric, dispatched", weighted_gram_symmetric),
                    ("symmetric, in order", |x, d, w, dst| {
                        gram_in_order::<true>(x, d, w, dst);
                        for j in 0..d {
                            for i in 0..j {
                                dst[j + i * d] = dst[i + j * d];
                            }
                        }
                    }),
                ];
                for (shape, kernel) in symmetric {
                    let mut got = vec![f64::NAN; d * d];
                    kernel(&x, d, &w, &mut got);
                    for j in 0..d {
                        for i in 0..d {
                            let want = product[i.min(j) + i.max(j) * d];
                            let at = i + j * d;
                            assert_eq!(got[at].to_bits(), want.to_bits(), "{shape}: n {n}, d {d}, ({i}, {j})");
                        }
                    }
                }
            }
        }
    }
}
