//! Triangular solves with many right-hand sides, blocked: each diagonal block of `NB` rows is
//! solved by substitution, and the rows its solution enters updated as [`matmul`] would (one
//! fused sum over the block, then subtracted). The forward substitution fuses its
//! multiply-adds ([`fma`], correctly rounded on every processor), and both substitutions are
//! compiled for AVX2 with FMA and for baseline x86-64 (`avx2_dispatch!`), and for AVX-512
//! where the processor has it (a panel row per register), with the same bits (a fused
//! operation outside such a copy would be a library call).
//!
//! With `FEW_COLUMNS` right-hand sides or more, `W` columns at a time are copied into a
//! row-major panel, and two panels go through every block together while they stay in cache:
//! the substitution is one vector operation across a panel's columns per step, each entry in
//! the order of the one-column substitution, and the update is the GEMM's register kernel,
//! whose packed right operands the panels' solved rows already are (`L`'s blocks are packed
//! once per solve, or once for all solves with a [`LowerFactor`]).
//! With fewer columns the whole triangle is one block, solved column by column (a product
//! with so few columns would not pay).

use armada_math::fma;
use faer::{Mat, MatMut, MatRef};

use std::cell::RefCell;
use std::ops::Range;
use std::sync::OnceLock;

#[cfg(doc)]
use crate::gemm::matmul;
use crate::gemm::{for_each_block, pack, KC, MR, NR};

/// Rows per block.
const NB: usize = 64;
/// Below this many right-hand sides, substitution alone.
const FEW_COLUMNS: usize = 8;
/// Right-hand sides per panel (two AVX2 vectors): the GEMM kernel's column count, so that a
/// panel's solved rows are its packed right operand.
const W: usize = NR;
/// Panels solved together (the AVX-512 register block takes two `b` panels at once).
const PANELS: usize = 2;
// A block's update must be one of the GEMM's `KC` steps (one fused sum, then added), as
// `matmul` computes it.
const _: () = assert!(NB <= KC);

/// Calls `solve(l, x)` with views whose columns are contiguous: `l` and `b` themselves when
/// theirs are (the usual case: no copy), else copies (`b`'s written back).
fn with_contiguous(l: MatRef<'_, f64>, mut b: MatMut<'_, f64>, solve: impl FnOnce(MatRef<'_, f64>, MatMut<'_, f64>)) {
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
    solve(l, x, Direction::Forward, None);
}

fn backward(l: MatRef<'_, f64>, x: MatMut<'_, f64>) {
    solve(l, x, Direction::Backward, None);
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

/// Solves with `l` (contiguous columns) in place, with `plan` if `l`'s multipliers are packed
/// already ([`LowerFactor`]), else packing them into scratch for this solve.
fn solve(l: MatRef<'_, f64>, mut x: MatMut<'_, f64>, direction: Direction, plan: Option<&Plan>) {
    let (n, m) = (l.nrows(), x.ncols());
    let mut kernels = match direction {
        Direction::Forward => Kernels { panel: substitute_panel, column: substitute },
        Direction::Backward => Kernels { panel: substitute_transposed_panel, column: substitute_transposed },
    };
    #[cfg(target_arch = "x86_64")]
    if armada_math::has_avx512() {
        kernels.panel = match direction {
            Direction::Forward => avx512::substitute_panel,
            Direction::Backward => avx512::substitute_transposed_panel,
        };
    }
    if m < FEW_COLUMNS {
        let diagonal: Vec<&[f64]> = (0..n).map(|p| crate::col(l, p)).collect();
        for c in 0..m {
            (kernels.column)(&diagonal, column(x.as_mut().col_mut(c)));
        }
        return;
    }
    SCRATCH.with_borrow_mut(|(panel, scratch)| match plan {
        Some(plan) => solve_in_panels(l, x, plan, kernels, panel),
        None => {
            scratch.pack(l, direction);
            solve_in_panels(l, x, scratch, kernels, panel)
        }
    });
}

thread_local! {
    /// The panel and packed multipliers of [`solve_in_panels`], kept between solves (BO-uCVS
    /// solves thousands of times per play, and fresh buffers cost a page fault per 4 KB).
    static SCRATCH: RefCell<(Vec<f64>, Plan)> = const { RefCell::new((Vec::new(), Plan::new())) };
}

/// The blocks of a solve in one direction, and `L`'s multipliers packed for the register
/// kernel, block after block.
#[derive(Clone, Debug)]
struct Plan {
    blocks: Vec<Block>,
    packed: Vec<f64>,
}

/// One diagonal block of the blocked solve.
#[derive(Clone, Debug)]
struct Block {
    /// Its rows, solved by substitution.
    rows: Range<usize>,
    /// The rows that its solution enters (below it in `L`, above it in `L^T`).
    targets: Range<usize>,
    /// Where its multipliers there start in the packed buffer.
    packed_at: usize,
}

impl Plan {
    const fn new() -> Self {
        Plan { blocks: Vec::new(), packed: Vec::new() }
    }

    /// Packs `l`'s multipliers for a solve in `direction` (reusing this plan's buffers).
    fn pack(&mut self, l: MatRef<'_, f64>, direction: Direction) {
        let n = l.nrows();
        let mut starts: Vec<usize> = (0..n).step_by(NB).collect();
        if direction == Direction::Backward {
            starts.reverse();
        }
        self.blocks.clear();
        let mut len = 0;
        for k in starts {
            let end = (k + NB).min(n);
            let targets = match direction {
                Direction::Forward => end..n,
                Direction::Backward => 0..k,
            };
            self.blocks.push(Block { rows: k..end, targets: targets.clone(), packed_at: len });
            len += targets.len().div_ceil(MR) * MR * (end - k);
        }
        // Every value is written by `pack` (a short panel's padding too): no need to clear.
        self.packed.resize(len, 0.0);
        for b in &self.blocks {
            let (k, end) = (b.rows.start, b.rows.end);
            let multipliers = match direction {
                Direction::Forward => l.submatrix(end, k, n - end, end - k),
                Direction::Backward => l.submatrix(k, 0, end - k, k).transpose(),
            };
            pack::<MR>(&mut self.packed[b.packed_at..], multipliers);
        }
    }
}

/// The blocked solve, `PANELS x W` columns at a time, each `W` in a row-major panel
/// (`panel[i * W + j]` is row `i` of the panel's column `j`; the last panel padded with zero
/// columns, which stay zero): the panels go through every block together while they stay in
/// cache, so that each block's multipliers, which `plan` packed once for all panels, are read
/// once per `PANELS` panels (the update runs the register kernel on all of them at once).
fn solve_in_panels(l: MatRef<'_, f64>, mut x: MatMut<'_, f64>, plan: &Plan, kernels: Kernels, buffer: &mut Vec<f64>) {
    let (n, m) = (l.nrows(), x.ncols());
    // Each block's columns of `L` from its first row to its last.
    let diagonals: Vec<Vec<&[f64]>> =
        plan.blocks.iter().map(|b| b.rows.clone().map(|p| &crate::col(l, p)[b.rows.clone()]).collect()).collect();
    buffer.resize(PANELS * n * W, 0.0);
    for c0 in (0..m).step_by(PANELS * W) {
        let width = (PANELS * W).min(m - c0);
        let mut panels: Vec<&mut [f64]> = buffer.chunks_exact_mut(n * W).take(width.div_ceil(W)).collect();
        let mut columns: Vec<&mut [f64]> = x.as_mut().subcols_mut(c0, width).col_iter_mut().map(column).collect();
        for (panel, columns) in panels.iter_mut().zip(columns.chunks(W)) {
            if columns.len() < W {
                panel.fill(0.0);
            }
            to_panel(columns, panel);
        }
        for (b, diagonal) in plan.blocks.iter().zip(&diagonals) {
            for panel in panels.iter_mut() {
                (kernels.panel)(diagonal, &mut panel[b.rows.start * W..b.rows.end * W]);
            }
            update(&mut panels, b.rows.clone(), b.targets.clone(), &plan.packed[b.packed_at..]);
        }
        for (panel, columns) in panels.iter().zip(columns.chunks_mut(W)) {
            from_panel(panel, columns);
        }
    }
}

/// Rows copied per step of [`to_panel`] and [`from_panel`]: a `T x W` tile moves as whole
/// arrays, without a bounds check per value (copying value by value, row by row, from
/// columns `n` apart was a seventh of BO-uCVS's run).
const T: usize = 8;

/// `panel[i * W + j] = columns[j][i]` for the (up to `W`) columns.
fn to_panel(columns: &[&mut [f64]], panel: &mut [f64]) {
    let n = panel.len() / W;
    let whole = n - n % T;
    for (t, tile) in panel[..whole * W].chunks_exact_mut(T * W).enumerate() {
        let mut rows = [[0.0; W]; T];
        for (j, c) in columns.iter().enumerate().take(W) {
            let c: &[f64; T] = c[t * T..][..T].try_into().expect("a tile of a column");
            for (row, &v) in rows.iter_mut().zip(c) {
                row[j] = v;
            }
        }
        tile.copy_from_slice(rows.as_flattened());
    }
    for (i, row) in panel.chunks_exact_mut(W).enumerate().skip(whole) {
        for (slot, c) in row.iter_mut().zip(columns) {
            *slot = c[i];
        }
    }
}

/// `columns[j][i] = panel[i * W + j]`, the inverse of [`to_panel`].
fn from_panel(panel: &[f64], columns: &mut [&mut [f64]]) {
    let n = panel.len() / W;
    let whole = n - n % T;
    for (t, tile) in panel[..whole * W].chunks_exact(T * W).enumerate() {
        let rows: &[[f64; W]] = tile.as_chunks::<W>().0;
        for (j, c) in columns.iter_mut().enumerate().take(W) {
            let c: &mut [f64; T] = (&mut c[t * T..][..T]).try_into().expect("a tile of a column");
            for (slot, row) in c.iter_mut().zip(rows) {
                *slot = row[j];
            }
        }
    }
    for (i, row) in panel.chunks_exact(W).enumerate().skip(whole) {
        for (slot, c) in row.iter().zip(columns.iter_mut()) {
            c[i] = *slot;
        }
    }
}

/// A lower-triangular factor kept for many solves: the blocked solve packs `L`'s multipliers
/// for its register kernel at every call (a fifth of a 700 x 700 solve with 32 right-hand
/// sides), and this packs them once per direction, at the first solve that needs them. The
/// same bits as [`solve_lower_in_place`] and [`solve_lower_transpose_in_place`].
#[derive(Debug)]
pub struct LowerFactor {
    l: Mat<f64>,
    forward: OnceLock<Plan>,
    backward: OnceLock<Plan>,
}

impl Clone for LowerFactor {
    fn clone(&self) -> Self {
        LowerFactor::new(self.l.as_ref())
    }
}

impl LowerFactor {
    /// Keeps the lower triangle of the square `l` (its strict upper triangle is not read and
    /// is kept as zeros).
    pub fn new(l: MatRef<'_, f64>) -> Self {
        let n = l.nrows();
        assert_eq!(n, l.ncols(), "a triangular factor is square, not {}x{}", n, l.ncols());
        let l = Mat::from_fn(n, n, |i, j| if i >= j { l[(i, j)] } else { 0.0 });
        LowerFactor { l, forward: OnceLock::new(), backward: OnceLock::new() }
    }

    /// The factor itself (its strict upper triangle zero).
    pub fn as_ref(&self) -> MatRef<'_, f64> {
        self.l.as_ref()
    }

    /// `B <- L^{-1} B`, as [`solve_lower_in_place`].
    pub fn solve_in_place(&self, b: MatMut<'_, f64>) {
        self.solve(b, Direction::Forward, &self.forward);
    }

    /// `B <- L^{-T} B`, as [`solve_lower_transpose_in_place`].
    pub fn solve_transpose_in_place(&self, b: MatMut<'_, f64>) {
        self.solve(b, Direction::Backward, &self.backward);
    }

    fn solve(&self, b: MatMut<'_, f64>, direction: Direction, plan: &OnceLock<Plan>) {
        let l = self.l.as_ref();
        with_contiguous(l, b, |l, x| {
            // A few right-hand sides are solved column by column, without the packed blocks.
            let plan = (x.ncols() >= FEW_COLUMNS).then(|| {
                plan.get_or_init(|| {
                    let mut plan = Plan::new();
                    plan.pack(l, direction);
                    plan
                })
            });
            solve(l, x, direction, plan)
        });
    }
}

/// `x_i <- x_i - sum_p m_ip x_p` over the `solved` rows `p`, for every `target` row `i` of
/// each panel, as [`matmul`] with `Accum::Add` and `alpha = -1` computes it (the block fits in
/// one of its `KC` steps): the register kernel's fused sum over `p` in order, then
/// subtracted. `packed` holds the multipliers as [`pack`] lays out `matmul`'s `a`, and each
/// panel's solved rows are already a packed `b` panel (`W` is its `NR`).
fn update(panels: &mut [&mut [f64]], solved: Range<usize>, targets: Range<usize>, packed: &[f64]) {
    let kc = solved.len();
    let (solved_rows, mut target_rows): (Vec<&[f64]>, Vec<&mut [f64]>) = panels
        .iter_mut()
        .map(|panel| {
            if targets.start >= solved.end {
                let (head, tail) = panel.split_at_mut(targets.start * W);
                (&head[solved.start * W..solved.end * W], &mut tail[..targets.len() * W])
            } else {
                let (head, tail) = panel.split_at_mut(solved.start * W);
                (&tail[..kc * W], &mut head[targets.start * W..targets.end * W])
            }
        })
        .unzip();
    let multipliers = &packed[..targets.len().div_ceil(MR) * MR * kc];
    let end = targets.len() * W;
    for_each_block(multipliers, &solved_rows, kc, |first, q, sums| {
        let rows = &mut target_rows[q][first * W..((first + MR) * W).min(end)];
        for (row, sums) in rows.chunks_exact_mut(W).zip(sums) {
            for (x, s) in row.iter_mut().zip(sums) {
                // `x + (-1 * s)`, matmul's update, is `x - s` to the bit.
                *x -= s;
            }
        }
    });
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

/// The panel substitutions with a panel row in one AVX-512 register (`W = 8`): each entry sees
/// the operations of the AVX2 and baseline copies in their order, fused where they fuse and
/// not where they do not, so the bits are theirs.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::W;
    use std::arch::x86_64::{
        _mm512_add_pd, _mm512_div_pd, _mm512_fmadd_pd, _mm512_loadu_pd, _mm512_mul_pd, _mm512_set1_pd,
        _mm512_setzero_pd, _mm512_storeu_pd, _mm512_sub_pd,
    };
    const _: () = assert!(W == 8, "one AVX-512 register per panel row");

    /// [`super::substitute_panel`]; panics where the processor lacks AVX-512F.
    pub(super) fn substitute_panel(diagonal: &[&[f64]], panel: &mut [f64]) {
        assert!(armada_math::has_avx512(), "the AVX-512 substitution on a processor without it");
        // SAFETY: the processor has AVX-512F, asserted just above.
        unsafe { forward(diagonal, panel) }
    }

    /// [`super::substitute_transposed_panel`]; panics where the processor lacks AVX-512F.
    pub(super) fn substitute_transposed_panel(diagonal: &[&[f64]], panel: &mut [f64]) {
        assert!(armada_math::has_avx512(), "the AVX-512 substitution on a processor without it");
        // SAFETY: the processor has AVX-512F, asserted just above.
        unsafe { backward(diagonal, panel) }
    }

    #[target_feature(enable = "avx512f")]
    fn forward(diagonal: &[&[f64]], panel: &mut [f64]) {
        assert_eq!(panel.len(), diagonal.len() * W, "a panel row per diagonal row");
        for (p, d) in diagonal.iter().enumerate() {
            let (done, below) = panel.split_at_mut((p + 1) * W);
            let row = &mut done[p * W..];
            // SAFETY (loads and stores): each slice holds a panel row of W = 8 values.
            let xp = unsafe { _mm512_div_pd(_mm512_loadu_pd(row.as_ptr()), _mm512_set1_pd(d[p])) };
            unsafe { _mm512_storeu_pd(row.as_mut_ptr(), xp) };
            for (xi, &dip) in below.chunks_exact_mut(W).zip(&d[p + 1..]) {
                let v = unsafe { _mm512_loadu_pd(xi.as_ptr()) };
                unsafe { _mm512_storeu_pd(xi.as_mut_ptr(), _mm512_fmadd_pd(_mm512_set1_pd(-dip), xp, v)) };
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    fn backward(diagonal: &[&[f64]], panel: &mut [f64]) {
        assert_eq!(panel.len(), diagonal.len() * W, "a panel row per diagonal row");
        for (p, d) in diagonal.iter().enumerate().rev() {
            let (head, below) = panel.split_at_mut((p + 1) * W);
            let mut acc = [_mm512_setzero_pd(); 4];
            let mut rows = below.chunks_exact(4 * W);
            let mut ds = d[p + 1..].chunks_exact(4);
            for (x4, d4) in (&mut rows).zip(&mut ds) {
                for (l, acc_l) in acc.iter_mut().enumerate() {
                    // SAFETY: x4 holds four panel rows of W = 8 values.
                    let x = unsafe { _mm512_loadu_pd(x4.as_ptr().add(l * W)) };
                    *acc_l = _mm512_add_pd(*acc_l, _mm512_mul_pd(_mm512_set1_pd(d4[l]), x));
                }
            }
            let mut sum = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
            for (xi, &di) in rows.remainder().chunks_exact(W).zip(ds.remainder()) {
                // SAFETY: xi is a panel row of W = 8 values.
                let x = unsafe { _mm512_loadu_pd(xi.as_ptr()) };
                sum = _mm512_add_pd(sum, _mm512_mul_pd(_mm512_set1_pd(di), x));
            }
            let row = &mut head[p * W..];
            // SAFETY: row holds a panel row of W = 8 values.
            let v = unsafe { _mm512_loadu_pd(row.as_ptr()) };
            unsafe { _mm512_storeu_pd(row.as_mut_ptr(), _mm512_div_pd(_mm512_sub_pd(v, sum), _mm512_set1_pd(d[p]))) };
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
    /// every row count around the sums' groups of four (with the AVX-512 panels where the
    /// processor has them).
    #[test]
    fn panels_and_single_columns_agree_to_the_bit() {
        for rows in [1, 2, 3, 4, 5, 8, 13, 64] {
            let l = factor(rows);
            let diagonal: Vec<&[f64]> = (0..rows).map(|p| crate::col(l.as_ref(), p)).collect();
            let x = random(rows, W, rows as u64);
            let mut all = vec![
                Kernels { panel: substitute_panel, column: substitute },
                Kernels { panel: substitute_transposed_panel, column: substitute_transposed },
            ];
            #[cfg(target_arch = "x86_64")]
            if armada_math::has_avx512() {
                all.push(Kernels { panel: avx512::substitute_panel, column: substitute });
                all.push(Kernels { panel: avx512::substitute_transposed_panel, column: substitute_transposed });
            }
            for kernels in all {
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

    /// A kept factor gives the free functions' bits, solve after solve (its packed blocks
    /// reused), for few and many right-hand sides and a right side of any strides.
    #[test]
    fn a_kept_factor_solves_to_the_free_functions_bits() {
        let bits = |m: &Mat<f64>| {
            (0..m.ncols())
                .flat_map(|j| (0..m.nrows()).map(move |i| (i, j)))
                .map(|(i, j)| m[(i, j)].to_bits())
                .collect::<Vec<_>>()
        };
        for n in [1, 63, 64, 65, 200] {
            let l = factor(n);
            let kept = LowerFactor::new(l.as_ref());
            for (m, seed) in [(1, 1), (7, 2), (8, 3), (37, 4), (16, 5)] {
                let b = random(n, m, seed);
                for _ in 0..2 {
                    let (mut free, mut mine) = (b.clone(), b.clone());
                    solve_lower_in_place(l.as_ref(), free.as_mut());
                    kept.solve_in_place(mine.as_mut());
                    assert_eq!(bits(&mine), bits(&free), "L, {n}x{m}");
                    let (mut free, mut mine) = (b.clone(), b.clone());
                    solve_lower_transpose_in_place(l.as_ref(), free.as_mut());
                    kept.solve_transpose_in_place(mine.as_mut());
                    assert_eq!(bits(&mine), bits(&free), "L^T, {n}x{m}");
                }
            }
            // A transposed right side (rows of stride n) is solved through a copy.
            let b = random(9, n, 6);
            let (mut free, mut mine) = (b.clone(), b.clone());
            solve_lower_in_place(l.as_ref(), free.as_mut().transpose_mut());
            kept.solve_in_place(mine.as_mut().transpose_mut());
            assert_eq!(bits(&mine), bits(&free), "L, transposed {n}x9");
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
