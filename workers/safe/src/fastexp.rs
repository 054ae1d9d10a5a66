//! A portable, inlinable `e^x` for the Matern 5/2 kernel on the grid (paper App. B.2.2).
//!
//! Posterior predictions on the whole grid need one `exp(-sqrt5 r)` per (observation,
//! candidate) pair, and calls into libm's `exp` were half of a run's time. This version is
//! plain arithmetic that the compiler inlines and vectorises: Cody-Waite reduction
//! `x = n ln2 + r` with `|r| <= ln2 / 2`, a degree-13 Taylor polynomial for `e^r`
//! (truncation error below 1e-17 relative), and `2^n` built from its exponent bits.
//! It is accurate to a few ulp and, being pure arithmetic, bit-identical on every platform.

/// `ln 2` split as in fdlibm: the high part has trailing zero bits, so `n * LN2_HI` is exact.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// `1.5 * 2^52`: adding it rounds to the nearest integer, read back from the low bits.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// `e^x` for `x <= 0`; arguments below -708 (where `e^x` would leave the normal range) are
/// clamped to -708, i.e. give about 3e-308 instead of a smaller number or 0. Branch-free, so
/// loops over it vectorise.
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    let x = x.max(-708.0);
    let t = x * LOG2_E + ROUNDER;
    let n = t - ROUNDER;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // Horner on 1/k! for k = 13..0.
    let mut p = 1.0 / 6_227_020_800.0;
    for inv_fact in [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + inv_fact;
    }
    // n in [-1022, 0]: the biased exponent n + 1023 is in [1, 1023].
    let n_int = (t.to_bits() as i64).wrapping_sub(ROUNDER.to_bits() as i64);
    p * f64::from_bits(((n_int + 1023) as u64) << 52)
}

/// Matern 5/2 `v (1 + s + s^2/3) e^{-s}` with `s = sqrt(5 r^2)`.
#[inline(always)]
pub fn matern52(variance: f64, r2: f64) -> f64 {
    let s = (5.0 * r2).sqrt();
    variance * (1.0 + s + s * s / 3.0) * exp_nonpositive(-s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_gp::Kernel;

    #[test]
    fn exp_is_within_a_few_ulp_of_libm_on_the_whole_range() {
        let mut worst: f64 = 0.0;
        for i in 0..=200_000 {
            let x = -708.0 * i as f64 / 200_000.0;
            let (ours, libm) = (exp_nonpositive(x), x.exp());
            worst = worst.max(((ours - libm) / libm).abs());
        }
        assert!(worst < 4.0 * f64::EPSILON, "worst relative error {worst:e}");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert!(exp_nonpositive(-800.0) < 1e-307);
    }

    #[test]
    fn matern52_matches_the_gp_crate_kernel() {
        let k = Kernel::matern52(2.5, vec![1.0]);
        for i in 0..10_000 {
            let r2 = i as f64 * 1e-3;
            let (ours, theirs) = (matern52(2.5, r2), k.k_of_r2(r2));
            assert!((ours - theirs).abs() <= 16.0 * f64::EPSILON * theirs, "r2 = {r2}");
        }
    }
}
