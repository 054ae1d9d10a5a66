//! Triangular solves with many right-hand sides, blocked: each diagonal block of `NB` rows is
//! solved by substitution, and the rows its solution enters updated as [`matmul`] would (one
//! fused sum over the block, then subtracted). The forward substitution fuses its
//! multiply-adds ([`fma`], correctly rounded on every processor), and both substitutions are
//! compiled for AVX2 with FMA and for baseline x86-64 (`avx2_dispatch!`), with the same bits
//! (a fused operation outside such a copy would be a library call).
//!
//! With `FEW_COLUMNS` right-hand sides or more, `W` columns at a time are copied into a
//! row-major panel, which goes through every block while it stays in cache: the substitution
//! is one vector operation across the columns per step, each entry in the order of the
//! one-column substitution, and the update is the GEMM's register kernel, whose packed right
//! operand the panel's solved rows already are (`L`'s blocks are packed once per solve).
//! With fewer columns the whole triangle is one block, solved column by column (a product
//! with so few columns would not pay).

use armada_math::fma;
use faer::{Mat, MatMut, MatRef};

use std::cell::RefCell;
use std::ops::Range;

#[cfg(doc)]
use crate::gemm::matmul;
use crate::gemm::{block_product, pack, KC, MR, NR};

/// Rows per block.
const NB: usize = 64;
/// Below this many right-hand sides, substitution alone.
const FEW_COLUMNS: usize = 8;
/// Right-hand sides per panel (two AVX2 vectors): the GEMM kernel's column count, so that a
/// panel's solved rows are its packed right operand.
const W: usize = NR;
// A block's update must be one of the GEMM's `KC` steps (one fused sum, then added), as
// `matmul` computes it.
const _: () = assert!(NB <= KC);

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

fn forward(l: MatRef<'_, f64>, x: MatMut<'_, f64>) {
    solve(l, x, Direction::Forward);
}

fn backward(l: MatRef<'_, f64>, x: MatMut<'_, f64>) {
    solve(l, x, Direction::Backward);
}

/// Through `L` from the top (`L X = B`) or through `L^T` from the bottom (`L^T X = B`).
#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Forward,
    Backward,
}

/// The two forms of one substitution: on a panel of [`W`] columns, and on one column.
struct Kernels {
    panel: fn(&[&[f64]], &mut [f64]),
    column: fn(&[&[f64]], &mut [f64]),
}

fn solve(l: MatRef<'_, f64>, mut x: MatMut<'_, f64>, direction: Direction) {
    let (n, m) = (l.nrows(), x.ncols());
    let kernels = match direction {
        Direction::Forward => Kernels { panel: substitute_panel, column: substitute },
        Direction::Backward => Kernels { panel: substitute_transposed_panel, column: substitute_transposed },
    };
    if m < FEW_COLUMNS {
        let diagonal: Vec<&[f64]> = (0..n).map(|p| crate::col(l, p)).collect();
        for c in 0..m {
            (kernels.column)(&diagonal, column(x.as_mut().col_mut(c)));
        }
        return;
    }
    SCRATCH.with_borrow_mut(|(panel, packed)| solve_in_panels(l, x, direction, kernels, panel, packed));
}

thread_local! {
    /// The panel and packed multipliers of [`solve_in_panels`], kept between solves (BO-uCVS
    /// solves thousands of times per play, and fresh buffers cost a page fault per 4 KB).
    static SCRATCH: RefCell<(Vec<f64>, Vec<f64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// One diagonal block of the blocked solve.
struct Block<'a> {
    /// Its rows, solved by substitution.
    rows: Range<usize>,
    /// Its columns of `L` from its first row to its last.
    diagonal: Vec<&'a [f64]>,
    /// The rows that its solution enters (below it in `L`, above it in `L^T`).
    targets: Range<usize>,
    /// Where its multipliers there start in the packed buffer.
    packed_at: usize,
}

/// The blocked solve, `W` columns at a time in a row-major panel (`panel[i * W + j]` is row
/// `i` of the panel's column `j`; the last panel padded with zero columns, which stay zero):
/// each panel goes through every block while it stays in cache, and the multipliers are
/// packed once for all panels.
fn solve_in_panels(
    l: MatRef<'_, f64>,
    mut x: MatMut<'_, f64>,
    direction: Direction,
    kernels: Kernels,
    panel: &mut Vec<f64>,
    packed: &mut Vec<f64>,
) {
    let (n, m) = (l.nrows(), x.ncols());
    let mut starts: Vec<usize> = (0..n).step_by(NB).collect();
    if direction == Direction::Backward {
        starts.reverse();
    }
    packed.clear();
    let blocks: Vec<Block> = starts
        .into_iter()
        .map(|k| {
            let end = (k + NB).min(n);
            let (targets, multipliers) = match direction {
                Direction::Forward => (end..n, l.submatrix(end, k, n - end, end - k)),
                Direction::Backward => (0..k, l.submatrix(k, 0, end - k, k).transpose()),
            };
            let packed_at = packed.len();
            packed.resize(packed_at + targets.len().div_ceil(MR) * MR * (end - k), 0.0);
            pack(&mut packed[packed_at..], multipliers, MR);
            let diagonal = (k..end).map(|p| &crate::col(l, p)[k..end]).collect();
            Block { rows: k..end, diagonal, targets, packed_at }
        })
        .collect();
    panel.resize(n * W, 0.0);
    for c0 in (0..m).step_by(W) {
        let width = W.min(m - c0);
        if width < W {
            panel.fill(0.0);
        }
        let mut columns: Vec<&mut [f64]> = x.as_mut().subcols_mut(c0, width).col_iter_mut().map(column).collect();
        for (i, row) in panel.chunks_exact_mut(W).enumerate() {
            for (slot, c) in row.iter_mut().zip(&columns) {
                *slot = c[i];
            }
        }
        for b in &blocks {
            (kernels.panel)(&b.diagonal, &mut panel[b.rows.start * W..b.rows.end * W]);
            update(panel, b.rows.clone(), b.targets.clone(), &packed[b.packed_at..]);
        }
        for (i, row) in panel.chunks_exact(W).enumerate() {
            for (slot, c) in row.iter().zip(&mut columns) {
                c[i] = *slot;
            }
        }
    }
}

/// `x_i <- x_i - sum_p m_ip x_p` over the `solved` rows `p`, for every `target` row `i` of
/// a panel, as [`matmul`] with `Accum::Add` and `alpha = -1` computes it (the block fits in
/// one of its `KC` steps): the register kernel's fused sum over `p` in order, then
/// subtracted. `packed` holds the multipliers as [`pack`] lays out `matmul`'s `a`, and the
/// solved rows are already its packed `b` (`W` is its `NR`).
fn update(panel: &mut [f64], solved: Range<usize>, targets: Range<usize>, packed: &[f64]) {
    let kc = solved.len();
    let (solved_rows, target_rows) = if targets.start >= solved.end {
        let (head, tail) = panel.split_at_mut(targets.start * W);
        (&head[solved.start * W..solved.end * W], &mut tail[..targets.len() * W])
    } else {
        let (head, tail) = panel.split_at_mut(solved.start * W);
        (&tail[..kc * W], &mut head[targets.start * W..targets.end * W])
    };
    for (g, rows) in target_rows.chunks_mut(MR * W).enumerate() {
        let sums = block_product(&packed[g * MR * kc..(g + 1) * MR * kc], solved_rows);
        for (row, sums) in rows.chunks_exact_mut(W).zip(&sums) {
            for (x, s) in row.iter_mut().zip(sums) {
                // `x + (-1 * s)`, matmul's update, is `x - s` to the bit.
                *x -= s;
            }
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

armada_math::avx2_dispatch! {
    /// [`substitute`] on [`W`] columns at once, held row by row (`panel[i * W + j]` is row `i`
    /// of column `j`), so that each step is one vector operation across the columns. Every
    /// entry sees the operations of `substitute` in its order: the same bits. (Grouping four
    /// pivots per pass over the rows below, which keeps the same order, made LLVM vectorise
    /// across rows instead, and ran slower.)
    fn substitute_panel(diagonal: &[&[f64]], panel: &mut [f64]) {
        for (p, d) in diagonal.iter().enumerate() {
            let (done, below) = panel.split_at_mut((p + 1) * W);
            let xp: &mut [f64; W] = (&mut done[p * W..]).try_into().expect("a panel row");
            for v in xp.iter_mut() {
                *v /= d[p];
            }
            let xp = *xp;
            for (xi, &dip) in below.chunks_exact_mut(W).zip(&d[p + 1..]) {
                for j in 0..W {
                    xi[j] = fma(-dip, xp[j], xi[j]);
                }
            }
        }
    }
}

armada_math::avx2_dispatch! {
    /// [`substitute_transposed`] on a panel of [`W`] columns (as [`substitute_panel`]), each
    /// column's sum in [`crate::dot`]'s order: four partial sums over the rows below `p` in
    /// groups of four, `(s0 + s1) + (s2 + s3)`, then the remaining rows in order. The same bits.
    fn substitute_transposed_panel(diagonal: &[&[f64]], panel: &mut [f64]) {
        for (p, d) in diagonal.iter().enumerate().rev() {
            let (head, below) = panel.split_at_mut((p + 1) * W);
            let mut acc = [[0.0; W]; 4];
            let mut rows = below.chunks_exact(4 * W);
            let mut ds = d[p + 1..].chunks_exact(4);
            for (x4, d4) in (&mut rows).zip(&mut ds) {
                for (l, acc_l) in acc.iter_mut().enumerate() {
                    for j in 0..W {
                        acc_l[j] += d4[l] * x4[l * W + j];
                    }
                }
            }
            let mut sum = [0.0; W];
            for j in 0..W {
                sum[j] = (acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j]);
            }
            for (xi, &di) in rows.remainder().chunks_exact(W).zip(ds.remainder()) {
                for j in 0..W {
                    sum[j] += di * xi[j];
                }
            }
            for (v, s) in head[p * W..].iter_mut().zip(sum) {
                *v = (*v - s) / d[p];
            }
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

    /// A panel of columns and the columns one at a time give the same bits, for blocks of
    /// every row count around the sums' groups of four.
    #[test]
    fn panels_and_single_columns_agree_to_the_bit() {
        for rows in [1, 2, 3, 4, 5, 8, 13, 64] {
            let l = factor(rows);
            let diagonal: Vec<&[f64]> = (0..rows).map(|p| crate::col(l.as_ref(), p)).collect();
            let x = random(rows, W, rows as u64);
            for kernels in [
                Kernels { panel: substitute_panel, column: substitute },
                Kernels { panel: substitute_transposed_panel, column: substitute_transposed },
            ] {
                let mut panel: Vec<f64> = (0..rows * W).map(|k| x[(k / W, k % W)]).collect();
                (kernels.panel)(&diagonal, &mut panel);
                for j in 0..W {
                    let mut one: Vec<f64> = (0..rows).map(|i| x[(i, j)]).collect();
                    (kernels.column)(&diagonal, &mut one);
                    let from_panel: Vec<u64> = (0..rows).map(|i| panel[i * W + j].to_bits()).collect();
                    assert_eq!(
                        from_panel,
                        one.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        "{rows} rows, column {j}"
                    );
                }
            }
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
