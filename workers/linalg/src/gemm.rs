//! The matrix product, blocked as the classic packed GEMM: `a` in panels of `MR` rows, `b` in
//! panels of `NR` columns, a register block of `MR x NR` sums per step.
//!
//! The order of every sum is fixed by the block sizes alone: entry `(i, j)` accumulates
//! `a[i, k] b[k, j]` for `k` in blocks of `KC` in increasing order, one register sum per
//! block, each term by a fused multiply-add ([`armada_math::fma`], correctly rounded on every
//! processor), and adds `alpha` times each block's sum to `dst[i, j]` block after block.

use armada_math::fma;
use faer::{Accum, MatMut, MatRef};

/// Rows of `a` per register block.
pub(crate) const MR: usize = 4;
/// Columns of `b` per register block (two vectors of four).
pub(crate) const NR: usize = 8;
/// Inner dimension per block (a packed `a` panel stays in L1, `b`'s block in L2).
pub(crate) const KC: usize = 256;
/// Rows of `a` per packed block.
const MC: usize = 128;
/// Columns of `b` per packed block.
const NC: usize = 2048;

/// `dst = alpha a b` (`Accum::Replace`) or `dst += alpha a b` (`Accum::Add`), for views of any
/// strides (a transposed view is read as such). Panics if the shapes do not conform.
pub fn matmul(mut dst: MatMut<'_, f64>, accum: Accum, a: MatRef<'_, f64>, b: MatRef<'_, f64>, alpha: f64) {
    let (m, n, k) = (dst.nrows(), dst.ncols(), a.ncols());
    assert!(
        a.nrows() == m && b.nrows() == k && b.ncols() == n,
        "matmul: {}x{} = {}x{} times {}x{}",
        m,
        n,
        a.nrows(),
        k,
        b.nrows(),
        b.ncols()
    );
    if let Accum::Replace = accum {
        dst.fill(0.0);
    }
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // Sized to this product's blocks (a small product must not clear megabytes first).
    let mut packed_b = vec![0.0; KC.min(k) * NC.min(n.div_ceil(NR) * NR)];
    let mut packed_a = vec![0.0; KC.min(k) * MC.min(m.div_ceil(MR) * MR)];
    for jc in (0..n).step_by(NC) {
        let nc = NC.min(n - jc);
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            pack(&mut packed_b, b.submatrix(pc, jc, kc, nc).transpose(), NR);
            for ic in (0..m).step_by(MC) {
                let mc = MC.min(m - ic);
                pack(&mut packed_a, a.submatrix(ic, pc, mc, kc), MR);
                for jr in (0..nc).step_by(NR) {
                    let b_panel = &packed_b[jr * kc..(jr + NR) * kc];
                    for ir in (0..mc).step_by(MR) {
                        let a_panel = &packed_a[ir * kc..(ir + MR) * kc];
                        let sums = block_product(a_panel, b_panel);
                        add_block(dst.as_mut(), (ic + ir, jc + jr), &sums, (MR.min(mc - ir), NR.min(nc - jr)), alpha);
                    }
                }
            }
        }
    }
}

/// `dst[i0 + i, j0 + j] += alpha sums[i][j]` for the block's `rows x cols` entries that exist.
fn add_block(
    mut dst: MatMut<'_, f64>,
    (i0, j0): (usize, usize),
    sums: &[[f64; NR]; MR],
    (rows, cols): (usize, usize),
    alpha: f64,
) {
    for j in 0..cols {
        let column = dst.as_mut().col_mut(j0 + j);
        match column.try_as_col_major_mut() {
            Some(column) => {
                for (d, row) in column.as_slice_mut()[i0..i0 + rows].iter_mut().zip(sums) {
                    *d += alpha * row[j];
                }
            }
            None => {
                let mut column = dst.as_mut().col_mut(j0 + j);
                for (i, row) in sums.iter().enumerate().take(rows) {
                    column[i0 + i] += alpha * row[j];
                }
            }
        }
    }
}

/// `m` (`rows x kc`) as panels of `width` rows, each stored `k`-major:
/// `panel[k * width + i] = m[(p * width + i, k)]`. Rows past `rows` are zeros (their sums are
/// never written back). `a` is packed as it is, `b` as its transpose (panels of columns).
pub(crate) fn pack(out: &mut [f64], m: MatRef<'_, f64>, width: usize) {
    let (rows, kc) = (m.nrows(), m.ncols());
    for (p, panel) in out[..rows.div_ceil(width) * width * kc].chunks_exact_mut(width * kc).enumerate() {
        let (first, present) = (p * width, width.min(rows - p * width));
        if present < width {
            panel.fill(0.0);
        }
        if let Some(block) = m.subrows(first, present).try_as_col_major() {
            // Contiguous columns (a column-major `a`).
            for k in 0..kc {
                panel[k * width..k * width + present]
                    .copy_from_slice(block.col(k).try_as_col_major().expect("contiguous").as_slice());
            }
        } else if m.col_stride() == 1 {
            // Contiguous rows (a transposed view: `b`, or a transposed `a`).
            for i in 0..present {
                let row = m.row(first + i).try_as_row_major().expect("contiguous").as_slice();
                for (k, v) in row.iter().enumerate() {
                    panel[k * width + i] = *v;
                }
            }
        } else {
            for k in 0..kc {
                for i in 0..present {
                    panel[k * width + i] = m[(first + i, k)];
                }
            }
        }
    }
}

armada_math::avx2_dispatch! {
    /// The `MR x NR` sums `sum_k a[k, i] b[k, j]` of one packed panel pair, `k` in order.
    pub(crate) fn block_product(a: &[f64], b: &[f64]) -> [[f64; NR]; MR] {
        let mut acc = [[0.0; NR]; MR];
        for (ak, bk) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
            for i in 0..MR {
                for j in 0..NR {
                    acc[i][j] = fma(ak[i], bk[j], acc[i][j]);
                }
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{naive_product, random, relative_gap};
    use faer::Mat;

    /// Shapes around every block edge, both accumulations, transposed operands: within
    /// rounding of the triple loop.
    #[test]
    fn products_agree_with_the_triple_loop() {
        for (m, n, k) in
            [(1, 1, 1), (3, 5, 2), (4, 8, 256), (5, 9, 257), (130, 17, 300), (7, 2100, 3), (0, 3, 2), (2, 2, 0)]
        {
            let a = random(m, k, 1);
            let b = random(k, n, 2);
            let mut dst = random(m, n, 3);
            let before = dst.clone();
            matmul(dst.as_mut(), Accum::Replace, a.as_ref(), b.as_ref(), 1.5);
            let product = naive_product(a.as_ref(), b.as_ref());
            let want = Mat::from_fn(m, n, |i, j| 1.5 * product[(i, j)]);
            assert!(relative_gap(dst.as_ref(), want.as_ref()) < 1e-13 * (k.max(1) as f64), "{m}x{n}x{k}");
            let mut acc = before.clone();
            matmul(acc.as_mut(), Accum::Add, a.as_ref(), b.as_ref(), 1.5);
            let want = Mat::from_fn(m, n, |i, j| before[(i, j)] + want[(i, j)]);
            assert!(relative_gap(acc.as_ref(), want.as_ref()) < 1e-13 * (k.max(1) as f64), "{m}x{n}x{k} add");
        }
        let a = random(40, 30, 4);
        let b = random(40, 20, 5);
        let mut dst = Mat::zeros(30, 20);
        matmul(dst.as_mut(), Accum::Replace, a.transpose(), b.as_ref(), 1.0);
        let want = naive_product(a.transpose(), b.as_ref());
        assert!(relative_gap(dst.as_ref(), want.as_ref()) < 1e-13 * 40.0);
    }

    /// The documented order, to the bit: one block's sum in `k` order, then `alpha` times it.
    #[test]
    fn each_entry_sums_in_k_order_within_a_block() {
        let k = 5;
        let a = Mat::from_fn(1, k, |_, p| [1e16, 1.0, -1e16, 1.0, 0.5][p]);
        let b = Mat::from_fn(k, 1, |_, _| 1.0);
        let mut dst = Mat::zeros(1, 1);
        matmul(dst.as_mut(), Accum::Replace, a.as_ref(), b.as_ref(), 1.0);
        assert_eq!(dst[(0, 0)], (((1e16 + 1.0) - 1e16) + 1.0) + 0.5);
        // Each term is fused: 0.1 * 0.1 added to -0.01 without rounding the product first.
        let a = Mat::from_fn(1, 2, |_, p| [0.1, 0.1][p]);
        let b = Mat::from_fn(2, 1, |p, _| [-0.1, 0.1][p]);
        matmul(dst.as_mut(), Accum::Replace, a.as_ref(), b.as_ref(), 1.0);
        assert_eq!(dst[(0, 0)], 0.1f64.mul_add(0.1, -(0.1 * 0.1)));
        assert_ne!(dst[(0, 0)], 0.0);
    }
}
