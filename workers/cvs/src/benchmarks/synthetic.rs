//! Synthetic 6-D test functions embedded in 12-D (paper, Experiments section; Levy from its
//! appendix), all to be maximised.
//!
//! Coordinates 7..12 exist and are controlled or randomised like any other, but do not
//! affect the value ("unrelated variables").

use armada_math as math;

/// Hartmann-6 (negated textbook form, so the maximum is `3.32237`), native box `[0,1]^6`.
pub fn hartmann6(u: &[f64]) -> f64 {
    const ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
    const A: [[f64; 6]; 4] = [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ];
    const P: [[f64; 6]; 4] = [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ];
    (0..4)
        .map(|i| {
            let e: f64 = (0..6).map(|j| A[i][j] * (u[j] - P[i][j]).powi(2)).sum();
            ALPHA[i] * math::exp(-e)
        })
        .sum()
}

/// Negated Ackley on `x = -32.768 + 65.536 u`; maximum 0 at `u = 0.5`.
pub fn ackley6(u: &[f64]) -> f64 {
    let x: Vec<f64> = u[..6].iter().map(|&ui| -32.768 + 65.536 * ui).collect();
    let sq = x.iter().map(|v| v * v).sum::<f64>() / 6.0;
    let cs = x.iter().map(|v| math::cos(2.0 * std::f64::consts::PI * v)).sum::<f64>() / 6.0;
    let ack = -20.0 * math::exp(-0.2 * sq.sqrt()) - math::exp(cs) + 20.0 + std::f64::consts::E;
    -ack
}

/// Negated Levy on `x = -10 + 20 u`; maximum 0 at `x = 1` (`u = 0.55`).
pub fn levy6(u: &[f64]) -> f64 {
    use std::f64::consts::PI;
    let w: Vec<f64> = u[..6].iter().map(|&ui| 1.0 + (-10.0 + 20.0 * ui - 1.0) / 4.0).collect();
    let mut s = math::sin(PI * w[0]).powi(2);
    for wj in &w[..5] {
        s += (wj - 1.0).powi(2) * (1.0 + 10.0 * math::sin(PI * wj + 1.0).powi(2));
    }
    s += (w[5] - 1.0).powi(2) * (1.0 + math::sin(2.0 * PI * w[5]).powi(2));
    -s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_optima() {
        let mut u = [0.0; 12];
        u[..6].copy_from_slice(&[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]);
        assert!((hartmann6(&u) - 3.32237).abs() < 1e-5, "{}", hartmann6(&u));
        assert!(ackley6(&[0.5; 12]).abs() < 1e-12);
        assert!(levy6(&[0.55; 12]).abs() < 1e-12);
        // Unrelated coordinates do not matter.
        let mut v = u;
        v[6..].copy_from_slice(&[0.9; 6]);
        assert_eq!(hartmann6(&u), hartmann6(&v));
        // Worst values at a corner of the box (over the whole box: Ackley about -22.26, Levy about -414.4).
        assert!(ackley6(&[0.0; 12]) < -20.0 && levy6(&[0.0; 12]) < -100.0);
    }
}
