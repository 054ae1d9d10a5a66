//! The lower Cholesky factor, blocked right-looking: each block column of `NB` is factored
//! column by column (its diagonal block and the panel below it), then the trailing lower
//! triangle is updated by [`matmul`] one block column at a time. Each multiply-add is fused
//! ([`fma`], correctly rounded on every processor), and the column updates are compiled for
//! AVX2 with FMA and for baseline x86-64 (`avx2_dispatch!`), with the same bits.
//!
//! The bits are fixed by this order: entry `(r, c)` of a block column takes its terms
//! `-l[r, j] l[c, j]` from the block's earlier columns `j` in increasing order, each fused,
//! then the pivot's division; the trailing updates are [`matmul`]'s. Within a block the
//! columns are swept left-looking (each column takes all its terms, then is scaled), which
//! keeps a column's rows in registers; a right-looking sweep gives each entry the same terms
//! in the same order.

use armada_math::fma;
use faer::{Accum, Mat, MatMut};

use crate::gemm::matmul;

/// Columns per block.
const NB: usize = 64;

fn contiguous(c: faer::ColRef<'_, f64>) -> &[f64] {
    c.try_as_col_major().expect("contiguous").as_slice()
}

fn contiguous_mut(c: faer::ColMut<'_, f64>) -> &mut [f64] {
    c.try_as_col_major_mut().expect("contiguous").as_slice_mut()
}

/// A pivot was not positive (or not a number): the matrix is not numerically positive
/// definite. `pivot` is the column where it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotPositiveDefinite {
    pub pivot: usize,
}

/// Overwrites the lower triangle of the square `a` with `L`, `a = L L^T`, reading only
/// `a`'s lower triangle; the strict upper triangle is left as it was. On failure `a`'s lower
/// triangle holds a partial factorisation.
pub fn cholesky_in_place(mut a: MatMut<'_, f64>) -> Result<(), NotPositiveDefinite> {
    let n = a.nrows();
    assert_eq!(n, a.ncols(), "cholesky of a {}x{} matrix", n, a.ncols());
    if a.row_stride() != 1 {
        // Columns not contiguous: factor a column-major copy of the lower triangle.
        let mut l = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { 0.0 });
        let result = factor(l.as_mut());
        for j in 0..n {
            for i in j..n {
                a[(i, j)] = l[(i, j)];
            }
        }
        return result;
    }
    // Contiguous columns are factored where they are (a copy cost a fifth of a 500 x 500
    // factorisation, most of it the fresh pages' faults). No entry of the lower triangle reads
    // the upper one, but the trailing updates write whole diagonal blocks: their strict upper
    // triangles are kept and put back.
    let kept: Vec<f64> = upper_of_diagonal_blocks(n).map(|(i, j)| a[(i, j)]).collect();
    let result = factor(a.as_mut());
    for ((i, j), value) in upper_of_diagonal_blocks(n).zip(kept) {
        a[(i, j)] = value;
    }
    result
}

/// The strict upper triangles `(i, j), i < j` of the diagonal `NB x NB` blocks of an `n x n`
/// matrix, which [`factor`]'s trailing updates overwrite.
fn upper_of_diagonal_blocks(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(NB).flat_map(move |s| (s..(s + NB).min(n)).flat_map(move |j| (s..j).map(move |i| (i, j))))
}

armada_math::avx2_dispatch! {
    /// Factors a contiguous column-major `a` in place (lower triangle).
    fn factor(a: MatMut<'_, f64>) -> Result<(), NotPositiveDefinite> {
        factor_by::<32>(a)
    }
}

/// [`factor`], `ROWS` rows of a column updated together in registers by the panel's
/// left-looking sweep (eight 4-lane chains of fused multiply-adds in flight at 32; an
/// AVX-512 copy with 64 was no faster, `cargo bench -p armada-linalg`).
#[inline(always)]
fn factor_by<const ROWS: usize>(a: MatMut<'_, f64>) -> Result<(), NotPositiveDefinite> {
    let mut a = a;
    let n = a.nrows();
    for k in (0..n).step_by(NB) {
        let end = (k + NB).min(n);
        // The block's columns left to right: column `c` first takes the updates of the
        // block's earlier columns, `a[r, c] -= l[r, j] l[c, j]` for `j` in order (each
        // entry's terms in the order a right-looking sweep gives them, so the same bits),
        // `ROWS` rows at a time in registers; then its pivot and scaling.
        for c in k..end {
            {
                let (left, mut right) = a.as_mut().split_at_col_mut(c);
                let left = left.as_ref();
                let target = &mut contiguous_mut(right.as_mut().col_mut(0))[c..];
                let mut columns: [&[f64]; NB] = [&[]; NB];
                for (slot, j) in columns.iter_mut().zip(k..c) {
                    *slot = &contiguous(left.col(j))[c..];
                }
                let columns = &columns[..c - k];
                let whole = target.len() - target.len() % ROWS;
                let (chunks, rest) = target.split_at_mut(whole);
                for (r0, rows) in chunks.chunks_exact_mut(ROWS).enumerate() {
                    let mut acc: [f64; ROWS] = (&*rows).try_into().expect("a chunk of ROWS");
                    for lj in columns {
                        let (f, l) = (lj[0], &lj[r0 * ROWS..][..ROWS]);
                        for (x, l) in acc.iter_mut().zip(l) {
                            *x = fma(-l, f, *x);
                        }
                    }
                    rows.copy_from_slice(&acc);
                }
                // The last rows, column by column (their chains side by side).
                for lj in columns {
                    let f = lj[0];
                    for (x, l) in rest.iter_mut().zip(&lj[whole..]) {
                        *x = fma(-l, f, *x);
                    }
                }
            }
            let d = a[(c, c)];
            if d.is_nan() || d <= 0.0 {
                return Err(NotPositiveDefinite { pivot: c });
            }
            let lcc = d.sqrt();
            let col = &mut contiguous_mut(a.as_mut().col_mut(c))[c..];
            col[0] = lcc;
            for x in &mut col[1..] {
                *x /= lcc;
            }
        }
        // The trailing lower triangle: A22 -= L21 L21^T, block column by block column.
        if end < n {
            let (left, mut right) = a.as_mut().split_at_col_mut(end);
            let l21 = left.as_ref().submatrix(end, k, n - end, end - k);
            let rest = n - end;
            for jb in (0..rest).step_by(NB) {
                let w = NB.min(rest - jb);
                let dst = right.as_mut().submatrix_mut(end + jb, jb, rest - jb, w);
                let rows = l21.submatrix(jb, 0, rest - jb, end - k);
                let cols = l21.submatrix(jb, 0, w, end - k);
                matmul(dst, Accum::Add, rows, cols.transpose(), -1.0);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{naive_product, relative_gap, spd};

    #[test]
    fn the_factor_reproduces_the_matrix() {
        for n in [1, 2, 63, 64, 65, 150] {
            let a = spd(n, n as u64);
            let mut l = a.clone();
            cholesky_in_place(l.as_mut()).unwrap();
            let lower = Mat::from_fn(n, n, |i, j| if i >= j { l[(i, j)] } else { 0.0 });
            let llt = naive_product(lower.as_ref(), lower.transpose());
            assert!(relative_gap(llt.as_ref(), a.as_ref()) < 1e-14 * n as f64, "n = {n}");
            // The strict upper triangle is untouched.
            assert!((0..n).all(|j| (0..j).all(|i| l[(i, j)] == a[(i, j)])));
        }
    }

    /// Contiguous columns are factored in place, others through a copy: the same bits, and
    /// the upper triangle (here all NaN, which the in-place factor must neither read into
    /// the lower triangle nor leave changed) as it was.
    #[test]
    fn in_place_and_copied_factors_are_the_same_bits() {
        for n in [1, 5, 64, 65, 130, 200] {
            let a = spd(n, 40 + n as u64);
            let mut in_place = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { f64::NAN });
            cholesky_in_place(in_place.as_mut()).unwrap();
            // The transpose of a column-major matrix has contiguous rows, not columns.
            let mut transposed = Mat::from_fn(n, n, |i, j| if i <= j { a[(j, i)] } else { f64::NAN });
            let mut copied = transposed.as_mut().transpose_mut();
            assert_ne!(copied.row_stride(), 1);
            cholesky_in_place(copied.as_mut()).unwrap();
            for j in 0..n {
                for i in 0..n {
                    if i >= j {
                        assert_eq!(in_place[(i, j)].to_bits(), copied[(i, j)].to_bits(), "n = {n}, ({i}, {j})");
                    } else {
                        assert!(in_place[(i, j)].is_nan() && copied[(i, j)].is_nan(), "n = {n}, upper ({i}, {j})");
                    }
                }
            }
        }
    }

    #[test]
    fn a_matrix_that_is_not_positive_definite_names_its_pivot() {
        let mut a = spd(100, 9);
        a[(70, 70)] = -1e3;
        assert_eq!(cholesky_in_place(a.as_mut()), Err(NotPositiveDefinite { pivot: 70 }));
        let mut nan = spd(5, 1);
        nan[(0, 0)] = f64::NAN;
        assert_eq!(cholesky_in_place(nan.as_mut()), Err(NotPositiveDefinite { pivot: 0 }));
    }
}
