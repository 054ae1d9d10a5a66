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
            pack::<NR>(&mut packed_b, b.submatrix(pc, jc, kc, nc).transpose());
            let b_panels: Vec<&[f64]> = packed_b[..nc.div_ceil(NR) * NR * kc].chunks_exact(NR * kc).collect();
            for ic in (0..m).step_by(MC) {
                let mc = MC.min(m - ic);
                pack::<MR>(&mut packed_a, a.submatrix(ic, pc, mc, kc));
                let a_panels = &packed_a[..mc.div_ceil(MR) * MR * kc];
                for_each_block(a_panels, &b_panels, kc, |ir, q, sums| {
                    let shape = (MR.min(mc - ir), NR.min(nc - q * NR));
                    add_block(dst.as_mut(), (ic + ir, jc + q * NR), sums, shape, alpha);
                });
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
    assert!(i0 + rows <= dst.nrows() && j0 + cols <= dst.ncols() && rows <= MR && cols <= NR);
    if dst.row_stride() == 1 {
        // Contiguous columns (the usual case), written through the pointer: this runs once per
        // register block, and views per column cost a fifth of a small block's time.
        let stride = dst.col_stride();
        let origin = dst.as_ptr_mut();
        for j in 0..cols {
            for (i, row) in sums.iter().enumerate().take(rows) {
                // SAFETY: (i0 + i, j0 + j) is inside `dst`, asserted above.
                unsafe { *origin.offset((i0 + i) as isize + (j0 + j) as isize * stride) += alpha * row[j] };
            }
        }
        return;
    }
    for j in 0..cols {
        let mut column = dst.as_mut().col_mut(j0 + j);
        for (i, row) in sums.iter().enumerate().take(rows) {
            column[i0 + i] += alpha * row[j];
        }
    }
}

/// `m` (`rows x kc`) as panels of `width` rows, each stored `k`-major:
/// `panel[k * width + i] = m[(p * width + i, k)]`. Rows past `rows` are zeros (their sums are
/// never written back). `a` is packed as it is, `b` as its transpose (panels of columns).
pub(crate) fn pack<const WIDTH: usize>(out: &mut [f64], m: MatRef<'_, f64>) {
    let (rows, kc) = (m.nrows(), m.ncols());
    let (row_stride, col_stride) = (m.row_stride(), m.col_stride());
    let origin = m.as_ptr();
    // Read through the pointer: a view per column or row cost more than the copy itself on
    // short panels (a 4-row panel of a column-major `a` copies 32 bytes per view).
    // SAFETY (every caller): `i < rows` and `k < kc`, an entry of `m`.
    let at = |i: usize, k: usize| unsafe { *origin.offset(i as isize * row_stride + k as isize * col_stride) };
    for (p, panel) in out[..rows.div_ceil(WIDTH) * WIDTH * kc].chunks_exact_mut(WIDTH * kc).enumerate() {
        let (first, present) = (p * WIDTH, WIDTH.min(rows - p * WIDTH));
        if present < WIDTH {
            panel.fill(0.0);
        }
        if row_stride == 1 && present == WIDTH {
            // Contiguous columns (a column-major `a`, a row-major `b`): a fixed-size copy per
            // `k` (one vector move, where a copy of `present` values was a `memcpy` call).
            for (k, slot) in panel.chunks_exact_mut(WIDTH).enumerate() {
                let slot: &mut [f64; WIDTH] = slot.try_into().expect("a panel row");
                *slot = std::array::from_fn(|i| at(first + i, k));
            }
        } else {
            // Contiguous rows (a transposed view: a column-major `b`), a short panel, or neither.
            for i in 0..present {
                for k in 0..kc {
                    panel[k * WIDTH + i] = at(first + i, k);
                }
            }
        }
    }
}

/// Calls `f(i, q, sums)` with the [`block_product`] of every packed `MR`-row panel of
/// `a_panels` against every packed `NR`-column panel `b_panels[q]` (`i`: the block's first
/// row), all `kc` deep. Where the processor has AVX-512, the register block is `2 MR x 2 NR`
/// (sixteen 8-lane sums in flight, against AVX2's eight 4-lane ones), smaller at the edges:
/// each sum's terms, their order and their fused multiply-adds are those of
/// [`block_product`], so the bits are too.
pub(crate) fn for_each_block(
    a_panels: &[f64],
    b_panels: &[&[f64]],
    kc: usize,
    mut f: impl FnMut(usize, usize, &[[f64; NR]; MR]),
) {
    let a_len = MR * kc;
    let na = a_panels.len() / a_len.max(1);
    #[cfg(target_arch = "x86_64")]
    if armada_math::has_avx512() {
        for (jb, b) in b_panels.chunks(2).enumerate() {
            let mut ib = 0;
            while ib < na {
                let tall = na - ib >= 2;
                let a = &a_panels[ib * a_len..(ib + if tall { 2 } else { 1 }) * a_len];
                let (i, q) = (ib * MR, 2 * jb);
                // SAFETY (each call): the processor has AVX-512F (has_avx512).
                match (tall, b) {
                    (true, [b0, b1]) => each(unsafe { block_product_avx512::<2, 2>(a, [b0, b1]) }, i, q, &mut f),
                    (true, [b0]) => each(unsafe { block_product_avx512::<2, 1>(a, [b0]) }, i, q, &mut f),
                    (false, [b0, b1]) => each(unsafe { block_product_avx512::<1, 2>(a, [b0, b1]) }, i, q, &mut f),
                    (false, [b0]) => each(unsafe { block_product_avx512::<1, 1>(a, [b0]) }, i, q, &mut f),
                    _ => unreachable!("chunks of one or two panels"),
                }
                ib += if tall { 2 } else { 1 };
            }
        }
        return;
    }
    for (q, b) in b_panels.iter().enumerate() {
        for ib in 0..na {
            f(ib * MR, q, &block_product(&a_panels[ib * a_len..(ib + 1) * a_len], b));
        }
    }
}

/// Hands each `MR x NR` block of an `A x B` register block's sums to `f`.
fn each<const A: usize, const B: usize>(
    sums: [[[[f64; NR]; MR]; B]; A],
    i: usize,
    q: usize,
    f: &mut impl FnMut(usize, usize, &[[f64; NR]; MR]),
) {
    for (p, row) in sums.iter().enumerate() {
        for (r, block) in row.iter().enumerate() {
            f(i + p * MR, q + r, block);
        }
    }
}

/// [`block_product`] of `A` consecutive packed `a` panels against `B` packed `b` panels, in
/// AVX-512 registers: one vector of `NR = 8` sums per row of each `MR x NR` block, each term
/// `fma(a[k, i], b[k, j], acc)` in `k` order, as in the scalar kernel.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_product_avx512<const A: usize, const B: usize>(a: &[f64], b: [&[f64]; B]) -> [[[[f64; NR]; MR]; B]; A] {
    use std::arch::x86_64::{
        __m512d, _mm512_fmadd_pd, _mm512_loadu_pd, _mm512_set1_pd, _mm512_setzero_pd, _mm512_storeu_pd,
    };
    const { assert!(NR == 8, "one AVX-512 vector per row of a block") };
    let kc = a.len() / (A * MR);
    assert!(a.len() == A * MR * kc && b.iter().all(|b| b.len() == NR * kc), "{A} a panels and {B} b panels, {kc} deep");
    let mut acc: [[[__m512d; MR]; B]; A] = [[[_mm512_setzero_pd(); MR]; B]; A];
    for k in 0..kc {
        let mut bk = [_mm512_setzero_pd(); B];
        for (v, b) in bk.iter_mut().zip(b) {
            // SAFETY: k NR + 8 <= NR kc = b.len(), asserted above.
            *v = unsafe { _mm512_loadu_pd(b.as_ptr().add(k * NR)) };
        }
        for (p, acc_p) in acc.iter_mut().enumerate() {
            for i in 0..MR {
                // SAFETY: p MR kc + k MR + i < A MR kc = a.len(), asserted above.
                let ai = _mm512_set1_pd(unsafe { *a.get_unchecked(p * MR * kc + k * MR + i) });
                for (acc_pq, bq) in acc_p.iter_mut().zip(&bk) {
                    acc_pq[i] = _mm512_fmadd_pd(ai, *bq, acc_pq[i]);
                }
            }
        }
    }
    let mut sums = [[[[0.0; NR]; MR]; B]; A];
    for (acc_p, sums_p) in acc.iter().zip(&mut sums) {
        for (acc_pq, sums_pq) in acc_p.iter().zip(sums_p.iter_mut()) {
            for (v, row) in acc_pq.iter().zip(sums_pq.iter_mut()) {
                // SAFETY: a row holds NR = 8 values.
                unsafe { _mm512_storeu_pd(row.as_mut_ptr(), *v) };
            }
        }
    }
    sums
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
    use faer::{Mat, MatRef};

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

    /// `dst = before - 0.75 a b` is the documented order to the bit: a plain loop over entries,
    /// blocks of `KC` and fused terms in `k` order.
    fn assert_documented_order(a: MatRef<'_, f64>, b: MatRef<'_, f64>, seed: u64) {
        let (m, n, k) = (a.nrows(), b.ncols(), a.ncols());
        let mut dst = random(m, n, seed);
        let before = dst.clone();
        matmul(dst.as_mut(), Accum::Add, a, b, -0.75);
        for i in 0..m {
            for j in 0..n {
                let mut want = before[(i, j)];
                for start in (0..k).step_by(KC) {
                    let mut sum = 0.0;
                    for p in start..(start + KC).min(k) {
                        sum = a[(i, p)].mul_add(b[(p, j)], sum);
                    }
                    want += -0.75 * sum;
                }
                assert_eq!(dst[(i, j)].to_bits(), want.to_bits(), "{m}x{n}x{k} at ({i}, {j})");
            }
        }
    }

    /// The documented order, every entry to the bit, on every path the processor takes (here
    /// the AVX-512 register blocks where it has them, their edge shapes included), for
    /// column-major operands and for a `b` with contiguous rows (the logistic MLE's `X^T W X`
    /// of row-major histories).
    #[test]
    fn products_follow_the_documented_order_to_the_bit() {
        for (m, n, k) in [(8, 8, 3), (12, 9, 300), (20, 20, 600), (33, 17, 257), (1, 5, 9), (130, 3, 40)] {
            assert_documented_order(random(m, k, 11).as_ref(), random(k, n, 12).as_ref(), 13);
        }
        for (m, n, k) in [(25, 25, 600), (3, 5, 300), (65, 9, 5)] {
            assert_documented_order(random(m, k, 21).as_ref(), random(n, k, 22).transpose(), 23);
        }
    }

    /// The AVX-512 register block is four scalar kernels' bits, where the processor has it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_block_is_four_scalar_kernels() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("no AVX-512F on this processor: its kernel is not run here");
            return;
        }
        for kc in [1, 2, 7, 256] {
            // Magnitudes far apart, so that any other order or an unfused term shows.
            let a: Vec<f64> =
                (0..2 * MR * kc).map(|p| ((p * 7919 % 97) as f64 - 48.0) * 10f64.powi((p % 9) as i32 - 4)).collect();
            let b: Vec<f64> =
                (0..NR * kc).map(|p| ((p * 104_729 % 89) as f64 - 44.0) * 10f64.powi((p % 7) as i32 - 3)).collect();
            let reversed: Vec<f64> = b.iter().rev().copied().collect();
            // SAFETY: AVX-512F checked above.
            let blocks = unsafe { block_product_avx512::<2, 2>(&a, [&b, &reversed]) };
            for (p, row) in blocks.iter().enumerate() {
                for (q, got) in row.iter().enumerate() {
                    let a = &a[p * MR * kc..(p + 1) * MR * kc];
                    let b = [&b, &reversed][q];
                    for i in 0..MR {
                        for j in 0..NR {
                            let want = (0..kc).fold(0.0f64, |acc, k| a[k * MR + i].mul_add(b[k * NR + j], acc));
                            assert_eq!(got[i][j].to_bits(), want.to_bits(), "kc {kc}, block ({p}, {q}), ({i}, {j})");
                        }
                    }
                }
            }
        }
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
