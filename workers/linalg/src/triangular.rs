//! Triangular solves with many right-hand sides, blocked: each diagonal block of `NB` rows is
//! solved by substitution, and the rest of `B` updated by [`matmul`]. The forward
//! substitution fuses its multiply-adds ([`fma`], correctly rounded on every processor), and
//! both substitutions are compiled for AVX2 with FMA and for baseline x86-64
//! (`avx2_dispatch!`), with the same bits (a fused operation outside such a copy would be a
//! library call). With fewer than `FEW_COLUMNS` right-hand sides the whole triangle is one
//! block (a product with so few columns would not pay).

use armada_math::fma;
use faer::{Accum, Mat, MatMut, MatRef};

use crate::gemm::matmul;

/// Rows per block.
const NB: usize = 64;
/// Below this many right-hand sides, substitution alone.
const FEW_COLUMNS: usize = 8;

/// The rows of a diagonal block for `columns` right-hand sides.
fn block_rows(n: usize, columns: usize) -> usize {
    if columns < FEW_COLUMNS {
        n.max(1)
    } else {
        NB
    }
}

/// Calls `solve(l, x)` with views whose columns are contiguous: `l` and `b` themselves when
/// theirs are (the usual case: no copy), else copies (`b`'s written back).
fn with_contiguous(l: MatRef<'_, f64>, mut b: MatMut<'_, f64>, solve: fn(MatRef<'_, f64>, MatMut<'_, f64>)) {
    let n = l.nrows();
    assert_eq!(n, l.ncols(), "a triangular solve needs a square factor, not {}x{}", n, l.ncols());
    assert_eq!(b.nrows(), n, "solve: {n}x{n} factor, {} rows on the right", b.nrows());
    let copy;
    let l = if l.row_stride() == 1 {
        l
    } else {
        copy = Mat::from_fn(n, n, |i, j| if i >= j { l[(i, j)] } else { 0.0 });
        copy.as_ref()
    };
    if b.row_stride() == 1 {
        solve(l, b);
    } else {
        let mut x = b.to_owned();
        solve(l, x.as_mut());
        b.copy_from(&x);
    }
}

/// `B <- L^{-1} B` for the lower triangle of the square `l` (its strict upper triangle is
/// not read).
pub fn solve_lower_in_place(l: MatRef<'_, f64>, b: MatMut<'_, f64>) {
    with_contiguous(l, b, forward);
}

/// `B <- L^{-T} B` for the lower triangle of the square `l`: the solve with the upper
/// triangular `L^T`, without forming it.
pub fn solve_lower_transpose_in_place(l: MatRef<'_, f64>, b: MatMut<'_, f64>) {
    with_contiguous(l, b, backward);
}

fn forward(l: MatRef<'_, f64>, mut x: MatMut<'_, f64>) {
    let (n, m) = (l.nrows(), x.ncols());
    let nb = block_rows(n, m);
    for k in (0..n).step_by(nb) {
        let end = (k + nb).min(n);
        let diagonal: Vec<&[f64]> = (k..end).map(|p| &crate::col(l, p)[k..end]).collect();
        for c in 0..m {
            substitute(&diagonal, &mut column(x.as_mut().col_mut(c))[k..end]);
        }
        if end < n {
            let (top, bottom) = x.as_mut().split_at_row_mut(end);
            matmul(bottom, Accum::Add, l.submatrix(end, k, n - end, end - k), top.as_ref().subrows(k, end - k), -1.0);
        }
    }
}

fn backward(l: MatRef<'_, f64>, mut x: MatMut<'_, f64>) {
    let (n, m) = (l.nrows(), x.ncols());
    let nb = block_rows(n, m);
    let starts: Vec<usize> = (0..n).step_by(nb).collect();
    for &k in starts.iter().rev() {
        let end = (k + nb).min(n);
        let diagonal: Vec<&[f64]> = (k..end).map(|p| &crate::col(l, p)[k..end]).collect();
        for c in 0..m {
            substitute_transposed(&diagonal, &mut column(x.as_mut().col_mut(c))[k..end]);
        }
        if k > 0 {
            let (top, bottom) = x.as_mut().split_at_row_mut(k);
            matmul(
                top,
                Accum::Add,
                l.submatrix(k, 0, end - k, k).transpose(),
                bottom.as_ref().subrows(0, end - k),
                -1.0,
            );
        }
    }
}

/// A column with contiguous rows as a slice.
fn column(c: faer::ColMut<'_, f64>) -> &mut [f64] {
    c.try_as_col_major_mut().expect("contiguous").as_slice_mut()
}

armada_math::avx2_dispatch! {
    /// `x <- D^{-1} x` for the lower triangular diagonal block `D` (its columns, from the
    /// diagonal down): `x_p <- x_p / d_pp`, then `x_i <- fma(-d_ip, x_p, x_i)` below it.
    fn substitute(diagonal: &[&[f64]], x: &mut [f64]) {
        for (p, d) in diagonal.iter().enumerate() {
            let xp = x[p] / d[p];
            x[p] = xp;
            for (xi, di) in x[p + 1..].iter_mut().zip(&d[p + 1..]) {
                *xi = fma(-di, xp, *xi);
            }
        }
    }
}

armada_math::avx2_dispatch! {
    /// `x <- D^{-T} x`: `x_p <- (x_p - dot(d_{p+1.., p}, x_{p+1..})) / d_pp`, `p` decreasing.
    fn substitute_transposed(diagonal: &[&[f64]], x: &mut [f64]) {
        for (p, d) in diagonal.iter().enumerate().rev() {
            let s = crate::dot(&d[p + 1..], &x[p + 1..]);
            x[p] = (x[p] - s) / d[p];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{naive_product, random, relative_gap, spd};

    fn factor(n: usize) -> Mat<f64> {
        let mut l = spd(n, 3 * n as u64);
        crate::cholesky_in_place(l.as_mut()).unwrap();
        // Garbage above the diagonal, which the solves must not read.
        Mat::from_fn(n, n, |i, j| if i >= j { l[(i, j)] } else { 1e300 })
    }

    #[test]
    fn solves_invert_the_products() {
        for (n, m) in [(1, 1), (5, 1), (64, 3), (65, 8), (200, 1), (200, 37), (130, 9)] {
            let l = factor(n);
            let lower = Mat::from_fn(n, n, |i, j| if i >= j { l[(i, j)] } else { 0.0 });
            let x = random(n, m, 7);
            let mut b = naive_product(lower.as_ref(), x.as_ref());
            solve_lower_in_place(l.as_ref(), b.as_mut());
            assert!(relative_gap(b.as_ref(), x.as_ref()) < 1e-12, "L, {n}x{m}");
            let mut b = naive_product(lower.transpose(), x.as_ref());
            solve_lower_transpose_in_place(l.as_ref(), b.as_mut());
            assert!(relative_gap(b.as_ref(), x.as_ref()) < 1e-12, "L^T, {n}x{m}");
        }
    }

    /// Blocking changes nothing but speed: one right-hand side alone (substitution) and the
    /// same column among many (blocks and products) agree to rounding.
    #[test]
    fn blocked_and_unblocked_agree() {
        let n = 200;
        let l = factor(n);
        let many = random(n, 16, 11);
        let mut all = many.clone();
        solve_lower_in_place(l.as_ref(), all.as_mut());
        let mut one = many.subcols(5, 1).to_owned();
        solve_lower_in_place(l.as_ref(), one.as_mut());
        assert!(relative_gap(all.subcols(5, 1), one.as_ref()) < 1e-13);
    }
}
