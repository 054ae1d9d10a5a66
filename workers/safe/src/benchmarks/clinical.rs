//! Simulated clinical trial (paper eqs. 37-38, App. B.2.1; Cai et al. 2014): `s` = dose of
//! drug 1 in [0, 1], `x` = dose of drug 2 in [0, 2]; logistic efficacy `f` and toxicity `g`,
//! noiseless.
//!
//! `f(s,x) = 1 / (1 + exp(1 - 2s - x + 4s^2 + x^2))`, `g(s,x) = 1 / (1 + exp(-2s - x))`.

use armada_math as math;
use ndarray::ArrayView1;

/// `(f, g)` at `(s, x)`.
pub fn eval(s: f64, x: ArrayView1<'_, f64>) -> (f64, f64) {
    let d2 = x[0];
    let f = 1.0 / (1.0 + math::exp(1.0 - 2.0 * s - d2 + 4.0 * s * s + d2 * d2));
    let g = 1.0 / (1.0 + math::exp(-2.0 * s - d2));
    (f, g)
}
