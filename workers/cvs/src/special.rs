//! Standard normal density, distribution and quantile functions (for the truncated-normal inputs).
//!
//! The CDF is armada-math's (`erfc`, the same bits on every processor). The quantile starts
//! from Acklam's rational approximation and is polished by Halley steps on the accurate CDF.

use armada_math as math;

const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// `phi(x)`, the standard normal density.
pub fn normal_pdf(x: f64) -> f64 {
    FRAC_1_SQRT_2PI * math::exp(-0.5 * x * x)
}

/// `Phi(x)`, the standard normal distribution function (armada-math's, accurate in both
/// tails).
pub fn normal_cdf(x: f64) -> f64 {
    math::std_normal_cdf(x)
}

/// `Phi^{-1}(p)` for `p in (0, 1)`; `-inf`/`+inf` at the ends.
pub fn normal_quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let mut x = acklam(p);
    // Halley refinement on the accurate CDF; two steps reach machine precision.
    for _ in 0..2 {
        let e = normal_cdf(x) - p;
        let u = e / normal_pdf(x);
        x -= u / (1.0 + 0.5 * x * u);
    }
    x
}

/// Acklam's rational approximation of the normal quantile (relative error < 1.2e-9).
fn acklam(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let p_low = 0.02425;
    if p < p_low {
        let q = (-2.0 * math::ln(p)).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - p_low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * math::ln(1.0 - p)).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_matches_reference_values() {
        // Reference values from scipy.stats.norm.cdf.
        let cases = [
            (0.0, 0.5),
            (1.0, 0.841_344_746_068_542_9),
            (-1.96, 0.024_997_895_148_220_435),
            (-3.525_5, 2.113_420_884_689_031_3e-4),
            (3.0, 0.998_650_101_968_369_9),
            (-6.0, 9.865_876_450_376_946e-10),
        ];
        for (x, want) in cases {
            let got = normal_cdf(x);
            assert!((got - want).abs() <= 1e-14 + 1e-12 * want, "Phi({x}) = {got}, want {want}");
        }
    }

    #[test]
    fn quantile_inverts_cdf() {
        for &p in &[1e-10, 1e-4, 0.02, 0.3, 0.5, 0.77, 0.999, 1.0 - 1e-9] {
            let x = normal_quantile(p);
            assert!((normal_cdf(x) - p).abs() <= 1e-13 * p.max(1e-3), "p = {p}");
        }
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-12);
    }
}
