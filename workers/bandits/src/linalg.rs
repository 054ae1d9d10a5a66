//! Small dense linear algebra for d ≈ 25 on plain row-major `Vec<f64>`.
//!
//! At this size hand-written loops beat any call overhead, and they never allocate. Two pieces are
//! the bottom layer's workhorses:
//! * [`RidgeDesign`]: the design matrix `V = lambda I + sum x x^T` with its inverse kept by
//!   Sherman–Morrison, its Cholesky factor kept by rank-1 updates (for sampling `N(., V^{-1})`), and the
//!   ridge estimate `theta-hat = V^{-1} b`, all in O(d^2) per observation;
//! * Cholesky factorisation and triangular solves, used for Gaussian sampling from a precision matrix
//!   (`mean + L^{-T} z`: never invert and then factor) and for Newton steps.

use armada_math as math;
use thiserror::Error;

/// Failures of the dense kernels.
#[derive(Debug, Error, Clone, Copy, PartialEq)]
pub enum LinalgError {
    #[error("matrix is not positive definite (pivot {pivot} is {value})")]
    NotPositiveDefinite { pivot: usize, value: f64 },
}

/// Inner product with four independent accumulators (armada-linalg's): a single running sum
/// is a chain of dependent adds that the compiler may not reorder, and `dot` is the innermost
/// operation of every algorithm here. The summation order is fixed, so results stay
/// bit-reproducible.
pub use armada_linalg::dot;

/// [`dot`] of each of four consecutive rows of the row-major `4 x d` block `rows` with `b`, bit for bit
/// the same as four calls: each row keeps `dot`'s accumulators and order. The four rows' chains are
/// independent, so the processor overlaps them where `dot` alone waits on one chain of adds.
#[inline(always)]
pub fn dot4(rows: &[f64], b: &[f64]) -> [f64; 4] {
    let d = b.len();
    assert_eq!(rows.len(), 4 * d);
    let row = |s: usize| &rows[s * d..(s + 1) * d];
    let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
    let mut acc = [[0.0; 4]; 4];
    let full = d - d % 4;
    for c in (0..full).step_by(4) {
        let y = &b[c..c + 4];
        for (a, r) in acc.iter_mut().zip([r0, r1, r2, r3]) {
            let x = &r[c..c + 4];
            for k in 0..4 {
                a[k] += x[k] * y[k];
            }
        }
    }
    let mut out = [0.0; 4];
    for ((o, a), r) in out.iter_mut().zip(&acc).zip([r0, r1, r2, r3]) {
        let mut sum = (a[0] + a[1]) + (a[2] + a[3]);
        for (x, y) in r[full..].iter().zip(&b[full..]) {
            sum += x * y;
        }
        *o = sum;
    }
    out
}

/// [`dot4`] in AVX2 registers, bit for bit: one register per row holds that row's four
/// accumulators, so every load is contiguous. Left to itself the compiler vectorises [`dot4`]
/// across the rows instead (a lane per row), which gathers each row's values with shuffles; on
/// the logistic MLE's gradient pass that cost three times the arithmetic. The final
/// `(a0 + a1) + (a2 + a3)` of each row is done for all four rows at once after a transpose,
/// and the tail adds one product at a time, as [`dot4`] does.
///
/// # Safety
/// The processor must support AVX2 (`is_x86_feature_detected!("avx2")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub fn dot4_avx2(rows: &[f64], b: &[f64]) -> [f64; 4] {
    use std::arch::x86_64::*;
    let d = b.len();
    assert_eq!(rows.len(), 4 * d);
    let full = d - d % 4;
    let mut acc = [_mm256_setzero_pd(); 4];
    for c in (0..full).step_by(4) {
        // SAFETY: c + 4 <= full <= d, so every load stays inside `b` and inside row r of `rows`.
        unsafe {
            let y = _mm256_loadu_pd(b.as_ptr().add(c));
            for (r, a) in acc.iter_mut().enumerate() {
                *a = _mm256_add_pd(*a, _mm256_mul_pd(_mm256_loadu_pd(rows.as_ptr().add(r * d + c)), y));
            }
        }
    }
    // Lane k of acc[r] is row r's accumulator k. Pair lanes 0+1 and 2+3 of every row, then
    // gather the pairs so that lane r is row r: (a0 + a1) + (a2 + a3).
    let pairs01 = _mm256_add_pd(_mm256_unpacklo_pd(acc[0], acc[1]), _mm256_unpackhi_pd(acc[0], acc[1]));
    let pairs23 = _mm256_add_pd(_mm256_unpacklo_pd(acc[2], acc[3]), _mm256_unpackhi_pd(acc[2], acc[3]));
    let sums = _mm256_add_pd(
        _mm256_permute2f128_pd::<0x20>(pairs01, pairs23),
        _mm256_permute2f128_pd::<0x31>(pairs01, pairs23),
    );
    let mut out = [0.0; 4];
    // SAFETY: `out` holds four f64.
    unsafe { _mm256_storeu_pd(out.as_mut_ptr(), sums) };
    for c in full..d {
        for (r, o) in out.iter_mut().enumerate() {
            *o += rows[r * d + c] * b[c];
        }
    }
    out
}

/// [`dot4`]'s sums for eight consecutive rows in AVX-512 registers, bit for bit: each register
/// holds two rows' four accumulators (row `2k` in the low half, `2k + 1` in the high), against
/// `b`'s four values in both halves; then `(a0 + a1) + (a2 + a3)` and the tail's products
/// added one at a time, as [`dot4`] does, for the eight rows in one register.
///
/// # Safety
/// The processor must support AVX-512F (`armada_math::has_avx512`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub fn dot8_avx512(rows: &[f64], b: &[f64]) -> [f64; 8] {
    use std::arch::x86_64::*;
    let d = b.len();
    assert_eq!(rows.len(), 8 * d);
    let full = d - d % 4;
    let mut acc = [_mm512_setzero_pd(); 4];
    for c in (0..full).step_by(4) {
        // SAFETY: c + 4 <= full <= d, so every load stays inside `b` and inside row r of `rows`.
        unsafe {
            let y = _mm512_broadcast_f64x4(_mm256_loadu_pd(b.as_ptr().add(c)));
            for (k, a) in acc.iter_mut().enumerate() {
                let low = _mm256_loadu_pd(rows.as_ptr().add(2 * k * d + c));
                let high = _mm256_loadu_pd(rows.as_ptr().add((2 * k + 1) * d + c));
                let x = _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(low), high);
                *a = _mm512_add_pd(*a, _mm512_mul_pd(x, y));
            }
        }
    }
    // Lanes 0-3 of acc[k] are row 2k's accumulators, lanes 4-7 row 2k + 1's. Within each
    // 128-bit quarter, unpacking acc[k] with acc[k + 1] and adding pairs accumulators 0 + 1 and
    // 2 + 3 of rows (2k, 2k + 2) and (2k + 1, 2k + 3); the quarters' shuffles put each row's
    // a0 + a1 beside its a2 + a3, their sum is (a0 + a1) + (a2 + a3) for rows 0 2 1 3 4 6 5 7,
    // and one permutation puts row r in lane r.
    let pairs = |x: __m512d, y: __m512d| _mm512_add_pd(_mm512_unpacklo_pd(x, y), _mm512_unpackhi_pd(x, y));
    let (p0, p1) = (pairs(acc[0], acc[1]), pairs(acc[2], acc[3]));
    // Quarters 0 and 2 of each (a0 + a1), then quarters 1 and 3 (a2 + a3).
    let low = _mm512_shuffle_f64x2::<0b10_00_10_00>(p0, p1);
    let high = _mm512_shuffle_f64x2::<0b11_01_11_01>(p0, p1);
    let mut sums = _mm512_permutexvar_pd(_mm512_setr_epi64(0, 2, 1, 3, 4, 6, 5, 7), _mm512_add_pd(low, high));
    // The tail, a product per row added in order, row r in lane r.
    let d64 = d as i64;
    let rows_at = _mm512_setr_epi64(0, d64, 2 * d64, 3 * d64, 4 * d64, 5 * d64, 6 * d64, 7 * d64);
    for (c, &y) in b.iter().enumerate().skip(full) {
        // SAFETY: c < d, so each lane's index r d + c is inside row r of `rows`.
        let x = unsafe { _mm512_i64gather_pd::<8>(rows_at, rows.as_ptr().add(c).cast()) };
        sums = _mm512_add_pd(sums, _mm512_mul_pd(x, _mm512_set1_pd(y)));
    }
    let mut out = [0.0; 8];
    // SAFETY: `out` holds eight f64; one store, so the caller's load of it is forwarded whole.
    unsafe { _mm512_storeu_pd(out.as_mut_ptr(), sums) };
    out
}

/// Defines `$name`, which runs `$pass` (a pass over groups of rows that takes the groups' dot
/// products as its last argument) eight rows at a time with `dot8_avx512` in a copy compiled
/// for AVX-512F where it runs ([`armada_math::has_avx512`]), four at a time with `dot4_avx2`
/// in a copy compiled for AVX2 where the processor has it, and with [`dot4`] elsewhere. All
/// give the same bits. (`avx2_dispatch!` compiles one body twice; these passes also need a
/// different helper and group size in each copy.)
macro_rules! dispatch_dot {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) => $pass:ident) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) {
                    // The closure inherits this function's AVX-512F, so it may call dot8_avx512.
                    $pass::<8>($($arg),*, |rows, b| $crate::linalg::dot8_avx512(rows, b))
                }
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) {
                    $pass::<4>($($arg),*, |rows, b| $crate::linalg::dot4_avx2(rows, b))
                }
                if armada_math::has_avx512() {
                    // SAFETY: the processor supports AVX-512F (has_avx512).
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the processor supports AVX2, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $pass::<4>($($arg),*, $crate::linalg::dot4)
        }
    };
}
pub(crate) use dispatch_dot;

dispatch_dot! {
    /// `out[i] = dot(row_i, b)` for every row of the row-major `rows` (`b.len()` columns each),
    /// bit for bit [`dot`]'s, then the rows left over one at a time. One call per round serves
    /// all K arms' inner products.
    pub fn dots(rows: &[f64], b: &[f64], out: &mut [f64]) => dots_in_groups
}

/// [`dots`] in groups of `G` rows by `dot_rows`, then the rest one at a time.
#[inline(always)]
fn dots_in_groups<const G: usize>(
    rows: &[f64],
    b: &[f64],
    out: &mut [f64],
    dot_rows: impl Fn(&[f64], &[f64]) -> [f64; G],
) {
    let d = b.len();
    assert_eq!(rows.len(), out.len() * d, "dots: {} values for {} rows of {d}", rows.len(), out.len());
    if d == 0 {
        out.fill(dot(&[], &[]));
        return;
    }
    let groups = rows.chunks_exact(G * d);
    let rest = groups.remainder();
    let mut outs = out.chunks_exact_mut(G);
    for (group, o) in groups.zip(&mut outs) {
        o.copy_from_slice(&dot_rows(group, b));
    }
    for (row, o) in rest.chunks_exact(d).zip(outs.into_remainder()) {
        *o = dot(row, b);
    }
}

pub fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `out = A x` for a row-major n x n matrix, each entry [`dot`]'s ([`dots`]).
pub fn matvec(a: &[f64], x: &[f64], out: &mut [f64]) {
    dots(a, x, out);
}

/// `x^T A x` for a symmetric row-major n x n matrix, from its upper triangle (the diagonal and
/// the entries right of it; the rest is not read): `sum_i x_i (a_ii x_i + 2 s_i)` with
/// `s_i = sum_{j>i} a_ij x_j`, half the multiply-adds of `x^T (A x)`. Each `s_i` runs over `j`
/// in four accumulators (`j - i - 1` mod 4), chains of fused multiply-adds from zero, added
/// pairwise, then the terms left over fused in one by one; the outer sum is a fused
/// multiply-add per row. [`quadratic_forms`] computes exactly this, several rows at once.
pub fn quadratic_form(a: &[f64], x: &[f64]) -> f64 {
    let n = x.len();
    debug_assert_eq!(a.len(), n * n);
    let mut total = 0.0;
    for i in 0..n {
        let (right, x_right) = (&a[i * n + i + 1..(i + 1) * n], &x[i + 1..]);
        let whole = right.len() / 4 * 4;
        let mut acc = [0.0; 4];
        for (ar, xr) in right[..whole].chunks_exact(4).zip(x_right[..whole].chunks_exact(4)) {
            for k in 0..4 {
                acc[k] = math::fma(ar[k], xr[k], acc[k]);
            }
        }
        let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (aj, xj) in right[whole..].iter().zip(&x_right[whole..]) {
            sum = math::fma(*aj, *xj, sum);
        }
        // `2 sum` is exact, so this is the row's term rounded once.
        let row = a[i * n + i] * x[i] + 2.0 * sum;
        total = math::fma(x[i], row, total);
    }
    total
}

/// `x^T A x` for every row `x` of the row-major `k x n` matrix `xs` (`n` = A's order, A symmetric), into
/// `out`: each value bit for bit [`quadratic_form`]'s, computed for several rows at once. Each lane runs
/// [`quadratic_form`]'s operations in its order (the same fused multiply-adds, accumulators and sums), so
/// the results cannot differ; the lanes are independent, so they fill the pipeline that one row's chain of
/// dependent adds leaves idle, and sit side by side in SIMD registers: sixteen rows in two AVX-512
/// registers where the processor has them, else eight in two AVX2 registers (with four accumulators each,
/// eight chains in flight), then the rows left over one at a time. Processors without FMA run the fused
/// multiply-adds in software (the same bits, slower).
pub fn quadratic_forms(a: &[f64], xs: &[f64], n: usize, out: &mut [f64]) {
    assert_eq!(xs.len(), out.len() * n, "quadratic_forms: {} values for {} rows of {n}", xs.len(), out.len());
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,fma")]
        fn avx512(a: &[f64], xs: &[f64], n: usize, out: &mut [f64]) {
            forms_in_groups::<16>(a, xs, n, out)
        }
        #[target_feature(enable = "avx2,fma")]
        fn avx2(a: &[f64], xs: &[f64], n: usize, out: &mut [f64]) {
            forms_in_groups::<8>(a, xs, n, out)
        }
        if armada_math::has_avx512() && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the processor has AVX-512F and FMA, checked just above.
            return unsafe { avx512(a, xs, n, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the processor has AVX2 and FMA, checked just above.
            return unsafe { avx2(a, xs, n, out) };
        }
    }
    forms_in_groups::<8>(a, xs, n, out)
}

/// [`quadratic_forms`] in groups of `FIRST` rows, then of eight, then one at a time.
#[inline(always)]
fn forms_in_groups<const FIRST: usize>(a: &[f64], xs: &[f64], n: usize, out: &mut [f64]) {
    let mut done = forms_by_lanes::<FIRST>(a, xs, n, out);
    if FIRST != 8 {
        done += forms_by_lanes::<8>(a, &xs[done * n..], n, &mut out[done..]);
    }
    for (x, o) in xs[done * n..].chunks_exact(n).zip(&mut out[done..]) {
        *o = quadratic_form(a, x);
    }
}

/// The forms of the whole groups of `LANES` rows, one row per lane; returns the rows done.
#[inline(always)]
fn forms_by_lanes<const LANES: usize>(a: &[f64], xs: &[f64], n: usize, out: &mut [f64]) -> usize {
    // The group's rows, lane-major: `lanes[j][l]` is coordinate j of row l.
    let mut lanes = vec![[0.0; LANES]; n];
    let groups = xs.chunks_exact(LANES * n);
    let mut done = 0;
    for (rows, out) in groups.zip(out.chunks_exact_mut(LANES)) {
        for (j, lane) in lanes.iter_mut().enumerate() {
            for (l, v) in lane.iter_mut().enumerate() {
                *v = rows[l * n + j];
            }
        }
        let mut total = [0.0; LANES];
        for i in 0..n {
            // s_i for the group's rows, as `quadratic_form` computes it.
            let (right, x_right) = (&a[i * n + i + 1..(i + 1) * n], &lanes[i + 1..]);
            let whole = right.len() / 4 * 4;
            let mut acc = [[0.0; LANES]; 4];
            for (ar, xr) in right[..whole].chunks_exact(4).zip(x_right[..whole].chunks_exact(4)) {
                for k in 0..4 {
                    for l in 0..LANES {
                        acc[k][l] = math::fma(ar[k], xr[k][l], acc[k][l]);
                    }
                }
            }
            let mut sum = [0.0; LANES];
            for l in 0..LANES {
                sum[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
            }
            for (aj, xj) in right[whole..].iter().zip(&x_right[whole..]) {
                for l in 0..LANES {
                    sum[l] = math::fma(*aj, xj[l], sum[l]);
                }
            }
            let aii = a[i * n + i];
            for l in 0..LANES {
                let row = aii * lanes[i][l] + 2.0 * sum[l];
                total[l] = math::fma(lanes[i][l], row, total[l]);
            }
        }
        out.copy_from_slice(&total);
        done += LANES;
    }
    done
}

/// In-place Cholesky `A = L L^T`: the lower triangle of the row-major `a` becomes `L`, the strict upper
/// triangle is zeroed. Only the lower triangle of the input is read.
pub fn cholesky_in_place(a: &mut [f64], n: usize) -> Result<(), LinalgError> {
    for j in 0..n {
        let mut diag = a[j * n + j];
        for k in 0..j {
            diag -= a[j * n + k] * a[j * n + k];
        }
        if diag.is_nan() || diag <= 0.0 || diag.is_infinite() {
            return Err(LinalgError::NotPositiveDefinite { pivot: j, value: diag });
        }
        let ljj = diag.sqrt();
        a[j * n + j] = ljj;
        for i in (j + 1)..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / ljj;
        }
        for k in (j + 1)..n {
            a[j * n + k] = 0.0;
        }
    }
    Ok(())
}

/// Solves `L y = b` in place (forward substitution) for a lower-triangular row-major `l`.
pub fn solve_lower_in_place(l: &[f64], b: &mut [f64]) {
    let n = b.len();
    for i in 0..n {
        let s = b[i] - dot(&l[i * n..i * n + i], &b[..i]);
        b[i] = s / l[i * n + i];
    }
}

/// Solves `L^T y = b` in place (back substitution) for a lower-triangular row-major `l`.
pub fn solve_lower_transpose_in_place(l: &[f64], b: &mut [f64]) {
    let n = b.len();
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in (i + 1)..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

/// Solves `(L L^T) y = b` in place.
pub fn cholesky_solve_in_place(l: &[f64], b: &mut [f64]) {
    solve_lower_in_place(l, b);
    solve_lower_transpose_in_place(l, b);
}

/// Rank-1 update of a Cholesky factor: afterwards `L L^T = (old L L^T) + x x^T`. O(n^2); `work` (length n)
/// is overwritten. This is the classical stable rotation-free update (e.g. Golub & Van Loan §6.5.4).
pub fn cholesky_rank1_update(l: &mut [f64], x: &[f64], work: &mut [f64]) {
    let n = x.len();
    work.copy_from_slice(x);
    for k in 0..n {
        let lkk = l[k * n + k];
        let r = math::hypot(lkk, work[k]);
        let c = r / lkk;
        let s = work[k] / lkk;
        l[k * n + k] = r;
        for i in (k + 1)..n {
            let lik = (l[i * n + k] + s * work[i]) / c;
            work[i] = c * work[i] - s * lik;
            l[i * n + k] = lik;
        }
    }
}

/// The regularised design `V = lambda I + sum_s x_s x_s^T` and the ridge estimate `V^{-1} sum_s y_s x_s`
/// (paper Section 3). Every observation costs O(d^2) and allocates nothing.
///
/// `V^{-1}` (Sherman–Morrison, for the UCB widths `x^T V^{-1} x`) and, for a design made by
/// [`Self::with_factor`], the Cholesky factor of `V` (rank-1 updates, for Thompson samples `L^{-T} z`) are
/// kept: each is the cheapest form for one use, and neither depends on any hyperparameter, so the top
/// layer may change them freely between rounds. (The factor's update is 6% of a LinUCB run, which never
/// reads it.)
#[derive(Clone, Debug)]
pub struct RidgeDesign {
    dim: usize,
    lambda: f64,
    design: Vec<f64>,
    inverse: Vec<f64>,
    /// The lower Cholesky factor of `V`, when kept.
    cholesky: Option<Vec<f64>>,
    response: Vec<f64>,
    estimate: Vec<f64>,
    work: Vec<f64>,
    n_observed: usize,
}

impl RidgeDesign {
    /// `V = lambda I`, without the Cholesky factor.
    pub fn new(dim: usize, lambda: f64) -> Self {
        assert!(lambda > 0.0, "the ridge must be positive");
        let mut design = vec![0.0; dim * dim];
        let mut inverse = vec![0.0; dim * dim];
        for i in 0..dim {
            design[i * dim + i] = lambda;
            inverse[i * dim + i] = 1.0 / lambda;
        }
        RidgeDesign {
            dim,
            lambda,
            design,
            inverse,
            cholesky: None,
            response: vec![0.0; dim],
            estimate: vec![0.0; dim],
            work: vec![0.0; dim],
            n_observed: 0,
        }
    }

    /// `V = lambda I`, keeping its Cholesky factor (for [`Self::correlate_in_place`]).
    pub fn with_factor(dim: usize, lambda: f64) -> Self {
        let mut cholesky = vec![0.0; dim * dim];
        for i in 0..dim {
            cholesky[i * dim + i] = lambda.sqrt();
        }
        RidgeDesign { cholesky: Some(cholesky), ..Self::new(dim, lambda) }
    }

    /// Adds `x x^T` to `V` and `y x` to `b`, and refreshes `theta-hat`.
    pub fn observe(&mut self, x: &[f64], y: f64) {
        let d = self.dim;
        debug_assert_eq!(x.len(), d);
        for i in 0..d {
            for j in 0..d {
                self.design[i * d + j] += x[i] * x[j];
            }
            self.response[i] += y * x[i];
        }
        // Sherman–Morrison with u = V^{-1} x: the correction u u^T / (1 + x^T u) is symmetric by construction.
        matvec(&self.inverse, x, &mut self.work);
        let scale = 1.0 / (1.0 + dot(x, &self.work));
        for i in 0..d {
            let ui = self.work[i] * scale;
            for j in 0..d {
                self.inverse[i * d + j] -= ui * self.work[j];
            }
        }
        if let Some(cholesky) = &mut self.cholesky {
            cholesky_rank1_update(cholesky, x, &mut self.work);
        }
        matvec(&self.inverse, &self.response, &mut self.estimate);
        self.n_observed += 1;
    }

    pub fn dim(&self) -> usize {
        self.dim
    }
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
    pub fn n_observed(&self) -> usize {
        self.n_observed
    }
    /// `V`, row-major.
    pub fn design(&self) -> &[f64] {
        &self.design
    }
    /// `V^{-1}`, row-major (Sherman–Morrison).
    pub fn inverse(&self) -> &[f64] {
        &self.inverse
    }
    /// Lower Cholesky factor `L` of `V`, row-major, for a design made by [`Self::with_factor`].
    pub fn cholesky(&self) -> Option<&[f64]> {
        self.cholesky.as_deref()
    }
    /// `theta-hat = V^{-1} b`.
    pub fn estimate(&self) -> &[f64] {
        &self.estimate
    }
    /// `||x||^2_{V^{-1}} = x^T V^{-1} x`, from `V^{-1}`'s upper triangle ([`quadratic_form`]).
    pub fn width_squared(&self, x: &[f64]) -> f64 {
        quadratic_form(&self.inverse, x).max(0.0)
    }
    /// [`Self::width_squared`] of every row of the row-major `K x d` `features`, into `out`, each
    /// bit for bit the same, several arms at a time ([`quadratic_forms`]).
    pub fn widths_squared(&self, features: &[f64], out: &mut Vec<f64>) {
        out.clear();
        out.resize(features.len() / self.dim, 0.0);
        quadratic_forms(&self.inverse, features, self.dim, out);
        for w in out.iter_mut() {
            *w = w.max(0.0);
        }
    }
    /// `out = V^{-1} x`.
    pub fn apply_inverse(&self, x: &[f64], out: &mut [f64]) {
        matvec(&self.inverse, x, out);
    }
    /// Overwrites `z` (a standard normal vector) with `L^{-T} z`, a draw from `N(0, V^{-1})`.
    ///
    /// # Panics
    /// For a design made without its factor ([`Self::new`]): a bug in the bandit that made it.
    pub fn correlate_in_place(&self, z: &mut [f64]) {
        let cholesky =
            self.cholesky.as_deref().expect("RidgeDesign::with_factor keeps the factor Thompson sampling needs");
        solve_lower_transpose_in_place(cholesky, z);
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops mirror the formulas they check
pub(crate) mod tests {

    #[test]
    fn dot4_is_four_dots_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for d in 1..=41 {
            let rows: Vec<f64> = (0..4 * d).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
            let b: Vec<f64> = (0..d).map(|_| rng.random::<f64>() * 1e3 - 5e2).collect();
            let four = dot4(&rows, &b);
            for (s, value) in four.iter().enumerate() {
                assert_eq!(value.to_bits(), dot(&rows[s * d..(s + 1) * d], &b).to_bits(), "d = {d}, row {s}");
            }
        }
    }
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn dot4_avx2_is_dot4_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!("no AVX2 on this processor: dot4_avx2 cannot run here");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for d in 1..=41 {
            for _ in 0..20 {
                let rows: Vec<f64> = (0..4 * d).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                let b: Vec<f64> = (0..d).map(|_| rng.random::<f64>() * 1e3 - 5e2).collect();
                // SAFETY: AVX2 checked above.
                let fast = unsafe { dot4_avx2(&rows, &b) };
                let reference = dot4(&rows, &b);
                for s in 0..4 {
                    assert_eq!(fast[s].to_bits(), reference[s].to_bits(), "d = {d}, row {s}");
                }
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn dot8_avx512_is_eight_dots_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("no AVX-512F on this processor: dot8_avx512 cannot run here");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        for d in 1..=41 {
            for _ in 0..20 {
                let rows: Vec<f64> = (0..8 * d).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                let b: Vec<f64> = (0..d).map(|_| rng.random::<f64>() * 1e3 - 5e2).collect();
                // SAFETY: AVX-512F checked above.
                let fast = unsafe { dot8_avx512(&rows, &b) };
                for (s, value) in fast.iter().enumerate() {
                    assert_eq!(value.to_bits(), dot(&rows[s * d..(s + 1) * d], &b).to_bits(), "d = {d}, row {s}");
                }
            }
        }
    }

    #[test]
    fn dots_are_bit_for_bit_one_dot_per_row() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // Row counts around the groups of four and eight, widths with and without a tail.
        for d in [0usize, 1, 3, 4, 7, 25] {
            for n in [0usize, 1, 3, 4, 7, 8, 9, 17, 120] {
                let rows: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                let b: Vec<f64> = (0..d).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                let mut out = vec![f64::NAN; n];
                dots(&rows, &b, &mut out);
                for i in 0..n {
                    let one = dot(&rows[i * d..(i + 1) * d], &b);
                    assert_eq!(out[i].to_bits(), one.to_bits(), "row {i} of {n}, d = {d}");
                }
            }
        }
    }

    /// Sixteen and eight rows at a time, bit for bit the one-row form, for orders with and without a
    /// remainder of the 4-wide chunks and row counts with and without partial groups of sixteen and eight
    /// (120 arms: seven groups of sixteen and one of eight where AVX-512 runs). The baseline copy too
    /// (compiled without FMA, its fused multiply-adds in software): the same bits as the dispatched one.
    #[test]
    fn quadratic_forms_are_bit_for_bit_the_one_row_form() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (n, k) in [(1, 1), (3, 5), (4, 8), (7, 9), (5, 17), (25, 120), (26, 3), (6, 16), (25, 31), (9, 40)] {
            let a: Vec<f64> = (0..n * n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let xs: Vec<f64> = (0..k * n).map(|_| rng.random_range(-3.0..3.0)).collect();
            let mut out = vec![f64::NAN; k];
            quadratic_forms(&a, &xs, n, &mut out);
            let mut baseline = vec![f64::NAN; k];
            forms_in_groups::<8>(&a, &xs, n, &mut baseline);
            for (r, (x, o)) in xs.chunks_exact(n).zip(&out).enumerate() {
                assert_eq!(o.to_bits(), quadratic_form(&a, x).to_bits(), "n = {n}, row {r} of {k}");
                assert_eq!(o.to_bits(), baseline[r].to_bits(), "baseline copy: n = {n}, row {r} of {k}");
            }
        }
    }

    /// The form from the upper triangle is `x^T A x` of the symmetric matrix that triangle defines
    /// (against the plain double sum over every entry, to rounding), and never reads below the
    /// diagonal (NaN there would show).
    #[test]
    fn quadratic_form_is_the_plain_double_sum_from_the_upper_triangle() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for n in [1usize, 2, 5, 8, 25, 33] {
            let mut full = vec![0.0; n * n];
            for i in 0..n {
                for j in i..n {
                    let v = rng.random_range(-1.0..1.0);
                    full[i * n + j] = v;
                    full[j * n + i] = v;
                }
            }
            let mut upper = full.clone();
            for i in 0..n {
                for j in 0..i {
                    upper[i * n + j] = f64::NAN;
                }
            }
            // 17 rows: groups of sixteen or eight and one alone.
            let xs: Vec<f64> = (0..17 * n).map(|_| rng.random_range(-3.0..3.0)).collect();
            let mut forms = vec![f64::NAN; 17];
            quadratic_forms(&upper, &xs, n, &mut forms);
            for (x, from_lanes) in xs.chunks_exact(n).zip(&forms) {
                let plain: f64 =
                    (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| x[i] * full[i * n + j] * x[j]).sum();
                let scale: f64 = (0..n)
                    .flat_map(|i| (0..n).map(move |j| (i, j)))
                    .map(|(i, j)| (x[i] * full[i * n + j] * x[j]).abs())
                    .sum();
                let form = quadratic_form(&upper, x);
                assert!((form - plain).abs() <= 1e-14 * scale, "n = {n}: {form} against {plain}");
                assert_eq!(from_lanes.to_bits(), form.to_bits());
            }
        }
    }

    /// Independent reference: Gauss–Jordan inversion with partial pivoting.
    pub(crate) fn dense_inverse(a: &[f64], n: usize) -> Vec<f64> {
        let mut m = a.to_vec();
        let mut inv = vec![0.0; n * n];
        for i in 0..n {
            inv[i * n + i] = 1.0;
        }
        for col in 0..n {
            let pivot = (col..n).max_by(|&p, &q| m[p * n + col].abs().total_cmp(&m[q * n + col].abs())).unwrap();
            for k in 0..n {
                m.swap(col * n + k, pivot * n + k);
                inv.swap(col * n + k, pivot * n + k);
            }
            let p = m[col * n + col];
            for k in 0..n {
                m[col * n + k] /= p;
                inv[col * n + k] /= p;
            }
            for r in 0..n {
                if r != col {
                    let f = m[r * n + col];
                    for k in 0..n {
                        m[r * n + k] -= f * m[col * n + k];
                        inv[r * n + k] -= f * inv[col * n + k];
                    }
                }
            }
        }
        inv
    }

    fn max_abs(a: &[f64]) -> f64 {
        a.iter().fold(0.0_f64, |m, x| m.max(x.abs()))
    }

    fn random_unit_ball_rows(rng: &mut ChaCha8Rng, n: usize, d: usize) -> Vec<f64> {
        let h = 1.0 / (d as f64).sqrt();
        (0..n * d).map(|_| h * (2.0 * rng.random::<f64>() - 1.0)).collect()
    }

    /// After 14,000 Sherman–Morrison and rank-1 Cholesky updates (the paper's horizon, d = 25), `V^{-1}`,
    /// `L L^T` and `theta-hat` agree with a dense recomputation to 1e-9 relative.
    #[test]
    fn ridge_design_matches_dense_recomputation_after_a_full_horizon() {
        let (d, n) = (25, 14_000);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let xs = random_unit_ball_rows(&mut rng, n, d);
        let ys: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.3).collect();
        let mut design = RidgeDesign::with_factor(d, 1.0);
        for s in 0..n {
            design.observe(&xs[s * d..(s + 1) * d], ys[s]);
        }
        let mut v = vec![0.0; d * d];
        let mut b = vec![0.0; d];
        for i in 0..d {
            v[i * d + i] = 1.0;
        }
        for s in 0..n {
            let x = &xs[s * d..(s + 1) * d];
            for i in 0..d {
                for j in 0..d {
                    v[i * d + j] += x[i] * x[j];
                }
                b[i] += ys[s] * x[i];
            }
        }
        let v_inv = dense_inverse(&v, d);
        let diff: Vec<f64> = v_inv.iter().zip(design.inverse()).map(|(a, b)| a - b).collect();
        assert!(max_abs(&diff) <= 1e-9 * max_abs(&v_inv), "Sherman-Morrison drifted: {}", max_abs(&diff));

        let l = design.cholesky().expect("made with its factor");
        let mut llt = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                llt[i * d + j] = (0..d).map(|k| l[i * d + k] * l[j * d + k]).sum();
            }
        }
        let diff: Vec<f64> = llt.iter().zip(&v).map(|(a, b)| a - b).collect();
        assert!(max_abs(&diff) <= 1e-9 * max_abs(&v), "rank-1 Cholesky drifted: {}", max_abs(&diff));

        let mut theta = vec![0.0; d];
        matvec(&v_inv, &b, &mut theta);
        let diff: Vec<f64> = theta.iter().zip(design.estimate()).map(|(a, b)| a - b).collect();
        assert!(max_abs(&diff) <= 1e-9 * max_abs(&theta));
    }

    /// Cholesky + solves against the dense inverse on a random SPD matrix; a non-SPD matrix is rejected.
    #[test]
    fn cholesky_solves_match_dense_inverse_and_reject_indefinite_matrices() {
        let n = 6;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let g: Vec<f64> = (0..n * n).map(|_| rng.random::<f64>() - 0.5).collect();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] =
                    (0..n).map(|k| g[i * n + k] * g[j * n + k]).sum::<f64>() + if i == j { 0.1 } else { 0.0 };
            }
        }
        let b: Vec<f64> = (0..n).map(|i| i as f64 - 2.0).collect();
        let mut l = a.clone();
        cholesky_in_place(&mut l, n).unwrap();
        let mut y = b.clone();
        cholesky_solve_in_place(&l, &mut y);
        let mut expected = vec![0.0; n];
        matvec(&dense_inverse(&a, n), &b, &mut expected);
        for (u, v) in y.iter().zip(&expected) {
            assert!((u - v).abs() <= 1e-10 * (1.0 + v.abs()), "{u} vs {v}");
        }
        let mut indefinite = vec![1.0, 2.0, 2.0, 1.0];
        assert!(matches!(
            cholesky_in_place(&mut indefinite, 2),
            Err(LinalgError::NotPositiveDefinite { pivot: 1, .. })
        ));
    }
}
