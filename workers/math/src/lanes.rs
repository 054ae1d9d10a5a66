//! The functions four or eight arguments at a time, each lane bit for bit the one-at-a-time
//! function.
//!
//! Each lane does exactly the floating-point operations of fdlibm's algorithm (the one the
//! scalar function runs), in their order, with the branches turned into selects; Rust never
//! fuses a multiply and an add, so the lanes give the scalar function's bits while the
//! compiler keeps them in vector registers. A lane outside the branch-free domain (rare:
//! overflow, results below the normal range, the far tails) makes its group of four fall back
//! to the scalar function. The tests compare the two on millions of points and at every
//! branch's edges.
//!
//! The lane bodies are generic in their lane count and always inlined, so each runs in the
//! registers of the copy that calls it: the slice functions run eight lanes where AVX-512
//! runs ([`crate::has_avx512`]), four in an AVX2 copy elsewhere, and each dispatches once per
//! slice, not once per group (a call per group of four cost as much as the group).
//!
//! The algorithms and coefficients are FreeBSD msun's `s_erf.c`, `e_exp.c`, `e_rem_pio2.c`,
//! `k_sin.c` and `k_cos.c`:
//!
//! > Copyright (C) 1993, 2004 by Sun Microsystems, Inc. All rights reserved.
//! > Developed at SunPro, a Sun Microsystems, Inc. business.
//! > Permission to use, copy, modify, and distribute this software is freely granted, provided
//! > that this notice is preserved.

// The coefficients as fdlibm prints them.
#![allow(clippy::excessive_precision)]

/// Four `f64`s, one per lane.
pub type F64x4 = [f64; 4];

/// `exp` of `N` arguments, bit for bit [`crate::exp`] of each. Always inlined, so that its
/// lanes fill the vector registers of the caller's target features (eight in one AVX-512
/// register where the caller is compiled for AVX-512F).
#[inline(always)]
pub fn exp_n<const N: usize>(x: [f64; N]) -> [f64; N] {
    if x.iter().all(|x| x.abs() < 708.0) {
        exp_lanes(x)
    } else {
        x.map(crate::exp)
    }
}

crate::avx2_dispatch! {
    /// `exp` of four arguments, bit for bit [`crate::exp`] of each.
    pub fn exp4(x: F64x4) -> F64x4 {
        exp_n(x)
    }
}

/// `erfc` of `N` arguments, bit for bit [`crate::erfc`] of each (inlined as [`exp_n`]).
#[inline(always)]
fn erfc_n<const N: usize>(x: [f64; N]) -> [f64; N] {
    if x.iter().all(|x| x.abs() < 26.0) {
        erfc_lanes(x)
    } else {
        x.map(crate::erfc)
    }
}

/// `(sin, cos)` of `N` arguments, bit for bit [`crate::sin_cos`] of each (inlined as
/// [`exp_n`]).
#[inline(always)]
fn sin_cos_n<const N: usize>(x: [f64; N]) -> ([f64; N], [f64; N]) {
    match sin_cos_lanes(x) {
        Some(sc) => sc,
        None => {
            let sc = x.map(crate::sin_cos);
            (sc.map(|(s, _)| s), sc.map(|(_, c)| c))
        }
    }
}

/// `body(k, sin p_k, cos p_k)` for `k = 0..n` in order, with `p_k = phase(k)`: the phases
/// go eight at a time where AVX-512 runs ([`crate::has_avx512`]), four at a time elsewhere
/// (the last `n % 8` or `n % 4` one at a time), so `body` sees the bits of
/// [`crate::sin_cos`] one at a time, in the same order.
#[inline]
pub fn sin_cos_each(n: usize, phase: impl FnMut(usize) -> f64, body: impl FnMut(usize, f64, f64)) {
    #[cfg(target_arch = "x86_64")]
    if crate::has_avx512() {
        // SAFETY: the processor has AVX-512F (has_avx512).
        return unsafe { avx512::sin_cos_each(n, phase, body) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the processor has AVX2 and FMA, checked just above.
        return unsafe { sin_cos_each_avx2(n, phase, body) };
    }
    sin_cos_each_by::<4>(n, phase, body, sin_cos_n)
}

/// [`sin_cos_each`] four at a time, the whole loop compiled for AVX2 (a dispatch per group
/// of four would cost as much as the group).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sin_cos_each_avx2(n: usize, phase: impl FnMut(usize) -> f64, body: impl FnMut(usize, f64, f64)) {
    sin_cos_each_by::<4>(n, phase, body, sin_cos_n)
}

/// [`sin_cos_each`] in groups of `N`, each through `group` (a copy of [`sin_cos_n`]).
#[inline(always)]
fn sin_cos_each_by<const N: usize>(
    n: usize,
    mut phase: impl FnMut(usize) -> f64,
    mut body: impl FnMut(usize, f64, f64),
    group: impl Fn([f64; N]) -> ([f64; N], [f64; N]),
) {
    let full = n - n % N;
    for k0 in (0..full).step_by(N) {
        let (s, c) = group(std::array::from_fn(|l| phase(k0 + l)));
        for l in 0..N {
            body(k0 + l, s[l], c[l]);
        }
    }
    for k in full..n {
        let (s, c) = crate::sin_cos(phase(k));
        body(k, s, c);
    }
}

/// `xs[k] <- exp(xs[k])` for every `k`, bit for bit [`crate::exp`]: eight values at a time
/// where AVX-512 runs, four elsewhere, the rest one at a time.
pub fn exp_in_place(xs: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if crate::has_avx512() {
        // SAFETY: the processor has AVX-512F (has_avx512).
        return unsafe { avx512::exp_in_place(xs) };
    }
    exp_in_place_four(xs)
}

crate::avx2_dispatch! {
    /// The whole loop in one dispatched copy: a dispatch per group of four cost as much as
    /// the group (the lanes bench: 13-14 ns a value against 4.2).
    fn exp_in_place_four(xs: &mut [f64]) {
        exp_in_place_by::<4>(xs)
    }
}

#[inline(always)]
fn exp_in_place_by<const N: usize>(xs: &mut [f64]) {
    map_in_place(xs, exp_n::<N>, crate::exp)
}

/// `xs[k] <- f(xs[k])`: `N` values at a time through `lanes`, the last `len % N` through `one`.
#[inline(always)]
fn map_in_place<const N: usize>(xs: &mut [f64], lanes: impl Fn([f64; N]) -> [f64; N], one: fn(f64) -> f64) {
    let mut chunks = xs.chunks_exact_mut(N);
    for chunk in &mut chunks {
        let x: [f64; N] = (&*chunk).try_into().expect("a chunk of N");
        chunk.copy_from_slice(&lanes(x));
    }
    chunks.into_remainder().iter_mut().for_each(|x| *x = one(*x));
}

/// `zs[k] <- std_normal_cdf(zs[k])` for every `k`, bit for bit [`crate::std_normal_cdf`]:
/// eight values at a time where AVX-512 runs, four elsewhere, the rest one at a time.
pub fn std_normal_cdf_in_place(zs: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if crate::has_avx512() {
        // SAFETY: the processor has AVX-512F (has_avx512).
        return unsafe { avx512::std_normal_cdf_in_place(zs) };
    }
    std_normal_cdf_in_place_four(zs)
}

crate::avx2_dispatch! {
    fn std_normal_cdf_in_place_four(zs: &mut [f64]) {
        std_normal_cdf_in_place_by::<4>(zs)
    }
}

#[inline(always)]
fn std_normal_cdf_in_place_by<const N: usize>(zs: &mut [f64]) {
    let lanes = |z: [f64; N]| erfc_n(z.map(|z| -z * std::f64::consts::FRAC_1_SQRT_2)).map(|e| 0.5 * e);
    map_in_place(zs, lanes, crate::std_normal_cdf)
}

/// The slice functions compiled for AVX-512F, eight lanes to a group: the same operations
/// lane by lane as the four-lane copies, so the same bits. Callers check
/// [`crate::has_avx512`].
#[cfg(target_arch = "x86_64")]
mod avx512 {
    #[target_feature(enable = "avx512f")]
    pub(super) fn exp_in_place(xs: &mut [f64]) {
        super::exp_in_place_by::<8>(xs)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn std_normal_cdf_in_place(zs: &mut [f64]) {
        super::std_normal_cdf_in_place_by::<8>(zs)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn sin_cos_each(n: usize, phase: impl FnMut(usize) -> f64, body: impl FnMut(usize, f64, f64)) {
        super::sin_cos_each_by::<8>(n, phase, body, super::sin_cos_n)
    }
}

/// `libm::exp` of `N` arguments with `|x| < 708`, branch-free.
#[inline(always)]
fn exp_lanes<const N: usize>(x: [f64; N]) -> [f64; N] {
    let mut out = [0.0; N];
    for l in 0..N {
        out[l] = exp_lane(x[l]);
    }
    out
}

// erfc on |x| < 0.84375: erfc(x) = 1 - x - x * pp(x^2) / qq(x^2).
const PP: [f64; 5] = [
    1.28379167095512558561e-01,
    -3.25042107247001499370e-01,
    -2.84817495755985104766e-02,
    -5.77027029648944159157e-03,
    -2.37630166566501626084e-05,
];
const QQ: [f64; 5] = [
    3.97917223959155352819e-01,
    6.50222499887672944485e-02,
    5.08130628187576562776e-03,
    1.32494738004321644526e-04,
    -3.96022827877536812320e-06,
];
// erfc on 0.84375 <= |x| < 1.25: 1 - erx - pa(s) / qa(s), s = |x| - 1.
const ERX: f64 = 8.45062911510467529297e-01;
const PA: [f64; 7] = [
    -2.36211856075265944077e-03,
    4.14856118683748331666e-01,
    -3.72207876035701323847e-01,
    3.18346619901161753674e-01,
    -1.10894694282396677476e-01,
    3.54783043256182359371e-02,
    -2.16637559486879084300e-03,
];
const QA: [f64; 6] = [
    1.06420880400844228286e-01,
    5.40397917702171048937e-01,
    7.18286544141962662868e-02,
    1.26171219808761642112e-01,
    1.36370839120290507362e-02,
    1.19844998467991074170e-02,
];
// erfc on 1.25 <= |x| < 1/0.35: exp(-x^2 - 0.5625 + ra(s) / sa(s)) / x, s = 1 / x^2.
const RA: [f64; 8] = [
    -9.86494403484714822705e-03,
    -6.93858572707181764372e-01,
    -1.05586262253232909814e+01,
    -6.23753324503260060396e+01,
    -1.62396669462573470355e+02,
    -1.84605092906711035994e+02,
    -8.12874355063065934246e+01,
    -9.81432934416914548592e+00,
];
const SA: [f64; 8] = [
    1.96512716674392571292e+01,
    1.37657754143519042600e+02,
    4.34565877475229228821e+02,
    6.45387271733267880336e+02,
    4.29008140027567833386e+02,
    1.08635005541779435134e+02,
    6.57024977031928170135e+00,
    -6.04244152148580987438e-02,
];
// erfc on 1/0.35 <= |x| < 28: as above with rb, sb. Each is padded with a zero as its highest
// coefficient, so that one Horner loop serves both sets: `c + s * 0.0` is exactly `c`.
const RB: [f64; 8] = [
    -9.86494292470009928597e-03,
    -7.99283237680523006574e-01,
    -1.77579549177547519889e+01,
    -1.60636384855821916062e+02,
    -6.37566443368389627722e+02,
    -1.02509513161107724954e+03,
    -4.83519191608651397019e+02,
    0.0,
];
const SB: [f64; 8] = [
    3.03380607434824582924e+01,
    3.25792512996573918826e+02,
    1.53672958608443695994e+03,
    3.19985821950859553908e+03,
    2.55305040643316442583e+03,
    4.74528541206955367215e+02,
    -2.24409524465858183362e+01,
    0.0,
];

/// `c[0] + s * (c[1] + s * (... + s * c[n-1]))`, innermost first, as fdlibm writes it.
#[inline(always)]
fn horner(s: f64, c: &[f64]) -> f64 {
    let (last, rest) = c.split_last().expect("coefficients");
    rest.iter().rev().fold(*last, |acc, &ci| ci + s * acc)
}

/// The high 32 bits of `|x|` (fdlibm compares them against its thresholds).
#[inline(always)]
fn high_word_abs(x: f64) -> u32 {
    ((x.to_bits() >> 32) as u32) & 0x7fff_ffff
}

/// `libm::erfc` of `N` arguments with `|x| < 26`, branch-free.
#[inline(always)]
fn erfc_lanes<const N: usize>(x: [f64; N]) -> [f64; N] {
    let mut out = [0.0; N];
    for l in 0..N {
        let x = x[l];
        let ix = high_word_abs(x);
        let negative = x.is_sign_negative();
        // |x| < 0.84375
        let z = x * x;
        let y = horner(z, &PP) / (1.0 + z * horner(z, &QQ));
        let small = if negative || ix < 0x3fd0_0000 { 1.0 - (x + x * y) } else { 0.5 - (x - 0.5 + x * y) };
        let small = if ix < 0x3c70_0000 { 1.0 - x } else { small };
        // 0.84375 <= |x| < 1.25
        let ax = x.abs();
        let s1 = ax - 1.0;
        let mid = 1.0 - ERX - horner(s1, &PA) / (1.0 + s1 * horner(s1, &QA));
        // 1.25 <= |x| < 28
        let s = 1.0 / (ax * ax);
        let near = ix < 0x4006_db6d;
        let r_coef: [f64; 8] = std::array::from_fn(|k| if near { RA[k] } else { RB[k] });
        let s_coef: [f64; 8] = std::array::from_fn(|k| if near { SA[k] } else { SB[k] });
        let r = horner(s, &r_coef);
        let big_s = 1.0 + s * horner(s, &s_coef);
        let zh = f64::from_bits(ax.to_bits() & 0xffff_ffff_0000_0000);
        let far = exp_lane(-zh * zh - 0.5625) * exp_lane((zh - ax) * (zh + ax) + r / big_s) / ax;
        let tail = if ix < 0x3ff4_0000 { mid } else { far };
        let tail = if negative { 2.0 - tail } else { tail };
        out[l] = if ix < 0x3feb_0000 { small } else { tail };
    }
    out
}

// fdlibm's rem_pio2: `2/pi` (its invpio2, 0x3fe45f30_6dc9c883), `pi/2` as `PIO2_1 + PIO2_1T`
// (`PIO2_1`'s 33 bits times any `|n| < 2^20` are exact), and the rounding constant of
// `rint(x / (pi/2))`.
const INV_PIO2: f64 = std::f64::consts::FRAC_2_PI;
const PIO2_1: f64 = 1.57079632673412561417e+00;
const PIO2_1T: f64 = 6.07710050650619224932e-11;
const TO_INT: f64 = 1.5 / f64::EPSILON;
// k_sin and k_cos on [-pi/4, pi/4].
const S1: f64 = -1.66666666666666324348e-01;
const S2: f64 = 8.33333333332248946124e-03;
const S3: f64 = -1.98412698298579493134e-04;
const S4: f64 = 2.75573137070700676789e-06;
const S5: f64 = -2.50507602534068634195e-08;
const S6: f64 = 1.58969099521155010221e-10;
const C1: f64 = 4.16666666666666019037e-02;
const C2: f64 = -1.38888888888741095749e-03;
const C3: f64 = 2.48015872894767294178e-05;
const C4: f64 = -2.75573143513906633035e-07;
const C5: f64 = 2.08757232129817482790e-09;
const C6: f64 = -1.13596475577881948265e-11;

/// `libm::sincos` of `N` arguments with `2^-27 <= |x| < 2^20 pi/2` whose reduction needs
/// one round (all but those within about `2^-16 |x|` of a multiple of `pi/2`), without
/// branches; `None` where a lane is outside that domain. One pass per step over the four
/// lanes, integers as `i64` and the quadrant as an `f64`, so that every pass stays in
/// vector registers.
#[inline(always)]
fn sin_cos_lanes<const N: usize>(x: [f64; N]) -> Option<([f64; N], [f64; N])> {
    let (mut sin, mut cos) = ([0.0; N], [0.0; N]);
    let mut in_domain = [false; N];
    for l in 0..N {
        let x = x[l];
        let ix = high_word_abs(x);
        // rem_pio2: up to 9pi/4, `n` is fixed by thresholds on the high word and one
        // round follows, except near pi/2, pi, 3pi/2 and 2pi, where (as beyond 9pi/4)
        // `n = rint(x / (pi/2))` and a second round follows if the first cancels.
        let near_multiple =
            (ix <= 0x400f_6a7a && (ix & 0xf_ffff) == 0x9_21fb) | (ix == 0x4012_d97c) | (ix == 0x4019_21fb);
        let fixed = (ix <= 0x401c_463b) & !near_multiple;
        let n_fixed = if ix <= 0x4002_d97c { 1.0 } else { 2.0 };
        let n_fixed = if ix <= 0x400f_6a7a {
            n_fixed
        } else if ix <= 0x4015_fdbc {
            3.0
        } else {
            4.0
        };
        let n_fixed = if x < 0.0 { -n_fixed } else { n_fixed };
        let n_rounded = (x * INV_PIO2 + TO_INT) - TO_INT;
        let f_n = if fixed { n_fixed } else { n_rounded };
        let r = x - f_n * PIO2_1;
        let w = f_n * PIO2_1T;
        let head = r - w;
        let tail = (r - head) - w;
        let cancels = (ix >> 20) as i32 - (high_word_abs(head) >> 20) as i32 > 16;
        // |x| <= pi/4: no reduction, and k_sin's formula for a tail of zero.
        let unreduced = ix <= 0x3fe9_21fb;
        in_domain[l] = (0x3e46_a09e..0x4139_21fb).contains(&ix) & (unreduced | fixed | !cancels);
        let y0 = if unreduced { x } else { head };
        let y1 = if unreduced { 0.0 } else { tail };
        let z = y0 * y0;
        let w = z * z;
        let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
        let v = z * y0;
        let s_unreduced = y0 + v * (S1 + z * r);
        let s_reduced = y0 - ((z * (0.5 * y1 - v * r) - y1) - v * S1);
        let s = if unreduced { s_unreduced } else { s_reduced };
        let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
        let hz = 0.5 * z;
        let w = 1.0 - hz;
        let c = w + (((1.0 - w) - hz) + (z * r - y0 * y1));
        // n & 3 picks (s, c), (c, -s), (-s, -c) or (-c, s).
        let q = if unreduced { 0 } else { (f_n as i32) & 3 };
        let (s, c) = if q & 1 == 1 { (c, s) } else { (s, c) };
        sin[l] = if q >= 2 { -s } else { s };
        cos[l] = if q == 1 || q == 2 { -c } else { c };
    }
    in_domain.iter().all(|&ok| ok).then_some((sin, cos))
}

const LN2HI: f64 = 6.93147180369123816490e-01;
const LN2LO: f64 = 1.90821492927058770002e-10;
// fdlibm's invln2, 0x3ff71547_652b82fe.
const INVLN2: f64 = std::f64::consts::LOG2_E;
const P: [f64; 5] = [
    1.66666666666666019037e-01,
    -2.77777777770155933842e-03,
    6.61375632143793436117e-05,
    -1.65339022054652515390e-06,
    4.13813679705723846039e-08,
];

/// 2^52: adding it to a non-negative integer below 2^52 leaves that integer in the low bits.
const TWO52: f64 = 4_503_599_627_370_496.0;

/// `y` rounded toward zero, for `|y| < 2^51`: rounded to the nearest integer by adding and
/// subtracting 1.5 * 2^52, then one step back toward zero if that went past `y` (and `y`'s
/// sign, for a zero).
#[inline(always)]
fn trunc_small(y: f64) -> f64 {
    const ROUND: f64 = 1.5 * TWO52;
    let nearest = (y + ROUND) - ROUND;
    let step = if nearest < 0.0 { -1.0 } else { 1.0 };
    let toward_zero = if nearest.abs() > y.abs() { nearest - step } else { nearest };
    toward_zero.copysign(y)
}

/// `libm::exp(x)` for `|x| < 708` (no overflow, no result below the normal range), without branches: the
/// reduction `x = k ln2 + r` as fdlibm does it (`k = 0` where `|x| <= ln2 / 2` changes nothing
/// in its formula), then `2^k` multiplied in, which is exact.
#[inline(always)]
fn exp_lane(x: f64) -> f64 {
    let hx = high_word_abs(x);
    let half = if x.is_sign_negative() { -0.5 } else { 0.5 };
    // fdlibm's `(int)(invln2 * x + half)`, kept as a float: an `as i32` conversion would keep
    // LLVM from vectorising the lanes.
    let k_far = trunc_small(INVLN2 * x + half);
    let k_near = if x.is_sign_negative() { -1.0 } else { 1.0 };
    let k = if hx >= 0x3ff0_a2b2 {
        k_far
    } else if hx > 0x3fd6_2e42 {
        k_near
    } else {
        0.0
    };
    // Within the domain |k| <= 1022 already; a lane whose result is not selected (erfc
    // computes every branch) may hold anything, and must not overflow `0x3ff + k`.
    let k = k.clamp(-1022.0, 1023.0);
    let hi = x - k * LN2HI;
    let lo = k * LN2LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * horner(rr, &P);
    let y = 1.0 + (r * c / (2.0 - c) - lo + hi);
    // 2^k: `0x3ff + k` (an integer in 1..=2046) lands in the low bits of its sum with 2^52.
    let two_k = f64::from_bits((k + (1023.0 + TWO52)).to_bits() << 52);
    let scaled = y * two_k;
    if hx > 0x3e30_0000 {
        scaled
    } else {
        1.0 + x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A slice function's copies: as dispatched here, and the four-lane one.
    type Copies = [(&'static str, fn(&mut [f64])); 2];

    /// The slice function as it runs here (eight lanes where AVX-512 runs) and its four-lane
    /// copy, against `std_normal_cdf` one at a time.
    fn assert_same_bits(zs: &[f64]) {
        let copies: Copies = [("as dispatched", std_normal_cdf_in_place), ("four lanes", std_normal_cdf_in_place_four)];
        for (copy, in_place) in copies {
            let mut batch = zs.to_vec();
            in_place(&mut batch);
            for (z, got) in zs.iter().zip(&batch) {
                let want = crate::std_normal_cdf(*z);
                assert_eq!(got.to_bits(), want.to_bits(), "Phi({z:e}) {copy}: batch {got:e}, one at a time {want:e}");
            }
        }
    }

    /// Uniform points over MILE's range of `z` (-10, 8.5) and well beyond, in both tails,
    /// through every branch of `erfc` and of `exp`.
    #[test]
    fn batch_equals_one_at_a_time_on_random_points() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let zs: Vec<f64> = (0..2_000_000)
            .map(|k| match k % 4 {
                0 => rng.random_range(-12.0..10.0),
                1 => rng.random_range(-3.0..3.0),
                2 => rng.random_range(-45.0..45.0),
                _ => rng.random_range(-1e-3..1e-3) * 10f64.powi(-rng.random_range(0..20)),
            })
            .collect();
        assert_same_bits(&zs);
    }

    /// Each threshold of `erfc` (|x| = 2^-56, 1/4, 0.84375, 1.25, 1/0.35, 28, as `z = -sqrt 2 x`),
    /// the batch's own (26)
    /// and of the `exp` inside it, approached from both sides and both signs, plus 0, the
    /// saturation points of MILE and non-finite values.
    #[test]
    fn batch_equals_one_at_a_time_at_the_branch_edges() {
        let mut zs = vec![0.0, -0.0, 8.5, -10.0, 39.0, -39.0, 40.0, -40.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        let edges = [2f64.powi(-56), 2f64.powi(-28), 0.25, 0.84375, 1.25, 1.0 / 0.35, 26.0, 28.0];
        for x in edges {
            let z = x * std::f64::consts::SQRT_2;
            let mut below = z;
            let mut above = z;
            for _ in 0..8 {
                zs.extend([below, above, -below, -above]);
                below = f64::from_bits(below.to_bits() - 1);
                above = f64::from_bits(above.to_bits() + 1);
            }
        }
        // `-z^2 - 0.5625` crosses exp's thresholds (|x| = 2^-28, ln2 / 2, 1.5 ln2) nowhere in
        // erfc's far branch, but the second exp's small argument does: covered by the random
        // points; here the first exp's arguments around its k = 1, 2 boundary.
        for k in 0..2_000 {
            zs.push(1.75 + k as f64 * 1e-3);
            zs.push(-1.75 - k as f64 * 1e-3);
        }
        assert_same_bits(&zs);
    }

    /// The lane `exp` against libm's over its branches and the range erfc uses.
    #[test]
    fn exp_lane_equals_libm() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut xs: Vec<f64> = (0..200_000).map(|_| rng.random_range(-60.0..2.0)).collect();
        xs.extend((0..20_000).map(|_| rng.random_range(-1.2..1.2)));
        xs.extend((0..20_000).map(|k| (k as f64 - 10_000.0) * 1e-12));
        for bound in [0.5 * std::f64::consts::LN_2, 1.5 * std::f64::consts::LN_2, 2f64.powi(-28)] {
            let mut v = bound;
            for _ in 0..50 {
                xs.extend([v, -v]);
                v = f64::from_bits(v.to_bits() + 1);
            }
        }
        for x in xs {
            assert_eq!(exp_lane(x).to_bits(), libm::exp(x).to_bits(), "exp({x:e})");
        }
        // Outside the domain (the unselected branches of erfc's lanes): no overflow, no panic.
        for x in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e300, -1e300, f64::MAX] {
            std::hint::black_box(exp_lane(x));
        }
    }

    /// `trunc_small` is `trunc` below 2^51: integers, halves (the ties of its rounding
    /// step) and random values of every magnitude, both signs.
    #[test]
    fn trunc_small_rounds_toward_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(43);
        let mut ys: Vec<f64> = (-40..=40).map(|k| k as f64 * 0.5).collect();
        ys.extend((0..100_000).map(|_| rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-5..51))));
        ys.extend([0.49999999999999994, -0.49999999999999994, 2f64.powi(51) - 0.5, -0.0]);
        for y in ys {
            assert_eq!(trunc_small(y).to_bits(), y.trunc().to_bits(), "{y}");
        }
    }

    /// `exp_in_place` is `exp` entry by entry, on lengths around the lanes' multiple and with
    /// arguments in and out of the branch-free domain.
    #[test]
    fn exp_in_place_equals_exp() {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        for len in [0, 1, 3, 4, 5, 7, 8, 9, 11, 15, 16, 17, 1000] {
            let xs: Vec<f64> =
                (0..len).map(|k| if k % 97 == 13 { 709.5 } else { rng.random_range(-745.0..709.0) }).collect();
            let want: Vec<u64> = xs.iter().map(|&x| crate::exp(x).to_bits()).collect();
            let copies: Copies = [("as dispatched", exp_in_place), ("four lanes", exp_in_place_four)];
            for (copy, in_place) in copies {
                let mut got = xs.clone();
                in_place(&mut got);
                assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "length {len}, {copy}");
            }
        }
    }

    /// `exp_n` in eight lanes (as an AVX-512 caller inlines it) is `exp` lane by lane, in the
    /// branch-free domain and out of it, compiled for AVX-512F where the processor has it.
    #[test]
    fn exp_n_in_eight_lanes_equals_exp() {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        fn exp8_avx512(x: [f64; 8]) -> [f64; 8] {
            exp_n(x)
        }
        let exp8 = |x: [f64; 8]| {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the processor has AVX-512F, checked just above.
                return unsafe { exp8_avx512(x) };
            }
            exp_n(x)
        };
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _ in 0..250_000 {
            let x: [f64; 8] = std::array::from_fn(|_| rng.random_range(-720.0..712.0));
            assert_eq!(exp8(x).map(f64::to_bits), x.map(crate::exp).map(f64::to_bits), "exp({x:?})");
        }
        for _ in 0..250_000 {
            let x: [f64; 8] = std::array::from_fn(|_| rng.random_range(-40.0..1.0));
            assert_eq!(exp8(x).map(f64::to_bits), x.map(crate::exp).map(f64::to_bits), "exp({x:?})");
        }
    }

    /// `exp4` is `exp` lane by lane, in the branch-free domain and out of it (the fallback).
    #[test]
    fn exp4_equals_exp() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..500_000 {
            let x: [f64; 4] = std::array::from_fn(|_| rng.random_range(-720.0..712.0));
            for (l, got) in exp4(x).into_iter().enumerate() {
                assert_eq!(got.to_bits(), crate::exp(x[l]).to_bits(), "exp({:e})", x[l]);
            }
        }
        let odd = [f64::NAN, f64::INFINITY, -745.2, 709.8];
        assert_eq!(exp4(odd).map(f64::to_bits), odd.map(crate::exp).map(f64::to_bits));
    }

    /// `erfc_n` is `erfc` lane by lane over both branches' domains, in four lanes and eight.
    #[test]
    fn erfc_n_equals_erfc() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        for _ in 0..250_000 {
            let x: [f64; 8] = std::array::from_fn(|_| rng.random_range(-30.0..30.0));
            let want = x.map(crate::erfc).map(f64::to_bits);
            assert_eq!(erfc_n(x).map(f64::to_bits), want, "erfc({x:?})");
            let four: [f64; 4] = std::array::from_fn(|l| x[l]);
            assert_eq!(erfc_n(four).map(f64::to_bits), want[..4], "erfc({four:?})");
        }
    }

    /// [`sin_cos_each`] as it runs here (eight lanes where AVX-512 runs) and in four lanes,
    /// against `sin_cos` one at a time, in order.
    fn assert_sin_cos_same_bits(xs: &[f64]) {
        for four_lanes in [false, true] {
            let mut next = 0;
            let check = |k: usize, sin: f64, cos: f64| {
                assert_eq!(k, next, "in order");
                next += 1;
                let (s, c) = crate::sin_cos(xs[k]);
                let copy = if four_lanes { "four lanes" } else { "as dispatched" };
                assert_eq!((sin.to_bits(), cos.to_bits()), (s.to_bits(), c.to_bits()), "sin_cos({:e}) {copy}", xs[k]);
            };
            if four_lanes {
                sin_cos_each_by::<4>(xs.len(), |k| xs[k], check, sin_cos_n);
            } else {
                sin_cos_each(xs.len(), |k| xs[k], check);
            }
            assert_eq!(next, xs.len());
        }
    }

    /// The lanes give `sin_cos` lane by lane: random arguments at every scale the families
    /// meet (RFF phases are tens to thousands), tiny and huge ones (the fallback).
    #[test]
    fn sin_cos_lanes_equal_sin_cos_on_random_points() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let xs: Vec<f64> = (0..2_000_000)
            .map(|k| match k % 5 {
                0 => rng.random_range(-8.0..8.0),
                1 => rng.random_range(-100.0..100.0),
                2 => rng.random_range(-1e4..1e4),
                3 => rng.random_range(-2e6..2e6),
                _ => rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-30..25)),
            })
            .collect();
        assert_sin_cos_same_bits(&xs);
    }

    /// Every threshold of rem_pio2 and sincos on the high word (pi/4, 3pi/4, 5pi/4, 7pi/4,
    /// 9pi/4, 2^20 pi/2, 2^-27), the high words near pi/2, pi, 3pi/2 and 2pi that take the
    /// rounded path, and arguments within a few ulps of multiples of pi/2 (where the first
    /// round cancels and a second is needed), from both sides and both signs.
    #[test]
    fn sin_cos_lanes_equal_sin_cos_at_the_branch_edges() {
        let mut xs = vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::MIN_POSITIVE, 5e-324];
        let high_words: [u32; 11] = [
            0x3fe9_21fb,
            0x4002_d97c,
            0x400f_6a7a,
            0x4015_fdbc,
            0x401c_463b,
            0x4139_21fb,
            0x3e46_a09e,
            0x3ff9_21fb,
            0x4009_21fb,
            0x4012_d97c,
            0x4019_21fb,
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for hw in high_words {
            for low in [0u32, 1, 0x5444_2d18, u32::MAX - 1, u32::MAX].into_iter().chain((0..64).map(|_| rng.random())) {
                for h in [hw - 1, hw, hw + 1] {
                    let x = f64::from_bits(((h as u64) << 32) | low as u64);
                    xs.extend([x, -x]);
                }
            }
        }
        for k in 1..2_000 {
            let m = k as f64 * std::f64::consts::FRAC_PI_2;
            let mut below = m;
            let mut above = m;
            for _ in 0..4 {
                xs.extend([below, above, -below, -above]);
                below = f64::from_bits(below.to_bits() - 1);
                above = f64::from_bits(above.to_bits() + 1);
            }
        }
        // Groups of four and eight that mix lanes of every kind.
        let mixed: Vec<f64> = (0..400_000).map(|_| xs[rng.random_range(0..xs.len())]).collect();
        assert_sin_cos_same_bits(&xs);
        assert_sin_cos_same_bits(&mixed);
    }
}
