//! Synthetic 2-D problem (paper eqs. 122-123): the objective actually run is `f = -ScaledBranin`
//! (Picheny et al. 2013, inputs rescaled from [0, 1]^2), the safety function is
//! `g = 2 s (e^y sin 10y + sin 5y + 5) / 3` with `y = x + 1/3`. Noiseless.

use armada_math as math;
use ndarray::ArrayView1;

use std::f64::consts::PI;

/// `(f, g)` at `(s, x)`.
pub fn eval(s: f64, x: ArrayView1<'_, f64>) -> (f64, f64) {
    let b = 5.1 / (4.0 * PI * PI);
    let c = 5.0 / PI;
    let t = 1.0 / (8.0 * PI);
    let sb = 15.0 * s - 5.0;
    let xb = 15.0 * x[0];
    let q = xb - b * sb * sb + c * sb - 6.0;
    let scaled_branin = (q * q + 10.0 * (1.0 - t) * math::cos(sb) - 44.81) / 51.95;
    let y = x[0] + 1.0 / 3.0;
    let g = 2.0 * s * (math::exp(y) * math::sin(10.0 * y) + math::sin(5.0 * y) + 5.0) / 3.0;
    (-scaled_branin, g)
}
