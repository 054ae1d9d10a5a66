//! Synthetic 3-D problem (paper App. B.1, eq. 118): Hartmann-3 in its positive (maximised)
//! form over `z = (s, x1, x2) in [0, 1]^3`, safety `g = s + x1^2 + x2^3`. Noiseless.

use armada_math as math;
use ndarray::ArrayView1;

const A_COEF: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
const A_MAT: [[f64; 3]; 4] = [[3.0, 10.0, 30.0], [0.1, 10.0, 35.0], [3.0, 10.0, 30.0], [0.1, 10.0, 35.0]];
const P_MAT: [[f64; 3]; 4] =
    [[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547], [0.0381, 0.5743, 0.8828]];

/// The continuous global maximum of Hartmann-3, the reference code's regret reference.
pub const CONTINUOUS_MAX: f64 = 3.86278;

/// `(f, g)` at `(s, x)`.
pub fn eval(s: f64, x: ArrayView1<'_, f64>) -> (f64, f64) {
    let z = [s, x[0], x[1]];
    let f = (0..4)
        .map(|i| {
            let e: f64 = (0..3).map(|j| A_MAT[i][j] * (z[j] - P_MAT[i][j]).powi(2)).sum();
            A_COEF[i] * math::exp(-e)
        })
        .sum();
    (f, s + x[0] * x[0] + x[1].powi(3))
}
