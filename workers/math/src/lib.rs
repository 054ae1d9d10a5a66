//! armada-math: the numerics on the job path whose bits do not depend on the processor.
//!
//! A job's trajectory must be a pure function of its key on every node of a cluster.
//! `f64::exp` and its kin call the system's libm, and glibc picks an FMA or an SSE2 variant
//! of `exp`, `log`, `sin` and `cos` by processor (they differ by an ulp in a few arguments in
//! ten thousand); `rand_distr`'s samplers call those same functions. So the families call
//! these instead:
//!
//! - the functions at the crate root ([`exp`], [`ln`], [`log1p`], [`expm1`], [`sin`],
//!   [`cos`], [`sin_cos`], [`erf`], [`erfc`], [`pow`], [`hypot`]): fdlibm's algorithms, in
//!   plain Rust, built from IEEE operations alone (no fused multiply-add, no dispatch on the
//!   processor), so each gives the same bits on every x86-64 and every other IEEE target;
//! - [`lanes`]: the same functions four arguments at a time, each lane bit for bit the
//!   one-at-a-time function, written so that the compiler keeps the lanes in vectors;
//! - [`dist`]: the random variates the families draw (standard normal, normal, gamma,
//!   chi-squared, beta), built on the functions above;
//! - [`fma`]: the fused multiply-add, correctly rounded wherever it runs;
//! - [`avx2_dispatch!`]: a kernel compiled for AVX2 with FMA and for baseline x86-64, with
//!   the same bits.
//!
//! Accuracy, measured against exact values (`tests/reference.py`, decimal arithmetic at 60
//! or more digits, on dense and special arguments; `tests/accuracy.rs` holds each bound):
//! `exp`, `ln`, `log1p`, `expm1`, `sin`, `cos`, `pow` and `hypot` within 1 ulp, `erf`
//! within 1 ulp, `erfc` within 2 ulp (its far tail multiplies two rounded exponentials).
//!
//! `sqrt`, `abs`, `floor`, `powi` and the arithmetic operators are exact or correctly rounded
//! (or, for `powi`, a fixed sequence of multiplications) on every target, and stay `f64`'s.
//! `tests/integration/architecture.rs` of the workspace keeps the families off `f64::exp` and friends and
//! off `rand_distr`.

mod dispatch;
#[cfg(target_arch = "x86_64")]
pub use dispatch::has_avx512;
pub mod dist;
pub mod lanes;

/// `e^x`.
#[inline]
pub fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// The natural logarithm `ln x` (NaN for `x < 0`, `-inf` at 0).
#[inline]
pub fn ln(x: f64) -> f64 {
    libm::log(x)
}

/// `ln(1 + x)`, accurate for small `x`.
#[inline]
pub fn log1p(x: f64) -> f64 {
    libm::log1p(x)
}

/// `e^x - 1`, accurate for small `x`.
#[inline]
pub fn expm1(x: f64) -> f64 {
    libm::expm1(x)
}

/// `sin x` (argument reduction by Payne–Hanek for large `|x|`, so any finite `x`).
#[inline]
pub fn sin(x: f64) -> f64 {
    libm::sin(x)
}

/// `cos x`.
#[inline]
pub fn cos(x: f64) -> f64 {
    libm::cos(x)
}

/// `(sin x, cos x)`, the same bits as [`sin`] and [`cos`].
#[inline]
pub fn sin_cos(x: f64) -> (f64, f64) {
    libm::sincos(x)
}

/// The error function.
#[inline]
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

/// The complementary error function `1 - erf x`, accurate in both tails.
#[inline]
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// `x^y`.
#[inline]
pub fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// `sqrt(x^2 + y^2)` without overflow or underflow in between.
#[inline]
pub fn hypot(x: f64, y: f64) -> f64 {
    libm::hypot(x, y)
}

/// `a b + c` rounded once: IEEE 754's fused multiply-add. It is correctly rounded, so its bits
/// do not depend on how it runs: one instruction in code compiled with FMA (the AVX2 copy of
/// [`avx2_dispatch!`], aarch64), else the C library's `fma`, which IEEE 754 (and C's
/// `fma`) require to round correctly; `tests/accuracy.rs` holds it to an independent software
/// implementation. Half the operations of `a * b + c` and one rounding fewer: the dense
/// products of armada-linalg run on it.
#[inline(always)]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// The standard normal CDF `Phi(z) = erfc(-z / sqrt 2) / 2`, accurate in both tails.
#[inline]
pub fn std_normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z * std::f64::consts::FRAC_1_SQRT_2)
}

#[cfg(test)]
mod tests {
    /// `sin_cos` is `sin` and `cos`, bit for bit.
    #[test]
    fn sin_cos_is_sin_and_cos() {
        let mut x = -1e6;
        while x < 1e6 {
            let (s, c) = super::sin_cos(x);
            assert_eq!((s.to_bits(), c.to_bits()), (super::sin(x).to_bits(), super::cos(x).to_bits()), "x = {x}");
            x += 0.7390851332151607;
        }
        // Tiny arguments, the large ones reduced by Payne-Hanek, and the non-finite.
        let mut odd = vec![5e-324, 1e-300, 1e-10, 2f64.powi(-27), 1e22, 1e300, f64::MAX, f64::INFINITY, f64::NAN];
        odd.extend((0..2000).map(|k| 1e6 * 1.0173f64.powi(k)).take_while(|x| x.is_finite()));
        for x in odd.iter().flat_map(|x| [*x, -x]) {
            let (s, c) = super::sin_cos(x);
            assert_eq!((s.to_bits(), c.to_bits()), (super::sin(x).to_bits(), super::cos(x).to_bits()), "x = {x}");
        }
    }
}
