//! Pendulum swing-up (paper App. B.1, eqs. 119-121), a **reconstruction**: the M-SafeOpt
//! repository has no pendulum code; this follows the paper's text and the M-SafeUCB
//! `pendulum.py`.
//!
//! `x` is the initial angle in `[-2pi + pi/36, -pi - pi/36]` (0 is upright, angles are not
//! wrapped), `s` a torque in [0, 1] applied once at the first step and scaled x40. Gym
//! Pendulum-v1 constants (g = 10, m = l = 1, dt = 0.05) without any clipping, 100 steps
//! (states n = 0..100). Reward: `f_n = -th_n^2 - thd_n^2/10 - s^2/1000` until the first
//! crossing of upright (`th_n > 0`), then `-thd_up` for good; `f = max_n f_n`. Safety:
//! `g = max_n |thd_n|`.

use armada_math as math;
use ndarray::ArrayView1;

use std::f64::consts::PI;

/// The x-interval of initial angles.
pub const X_RANGE: (f64, f64) = (-2.0 * PI + PI / 36.0, -PI - PI / 36.0);
const N_STEPS: usize = 100;
const DT: f64 = 0.05;
const TORQUE_SCALE: f64 = 40.0;

/// `(f, g)` at `(s, x)`: simulates one episode.
pub fn eval(s: f64, x: ArrayView1<'_, f64>) -> (f64, f64) {
    let (mut th, mut thd) = (x[0], 0.0_f64);
    let mut crossed: Option<f64> = None;
    let mut f = f64::NEG_INFINITY;
    let mut g = 0.0_f64;
    for n in 0..=N_STEPS {
        if crossed.is_none() && th > 0.0 {
            crossed = Some(thd);
        }
        let f_n = match crossed {
            Some(thd_up) => -thd_up,
            None => -th * th - thd * thd / 10.0 - s * s / 1000.0,
        };
        f = f.max(f_n);
        g = g.max(thd.abs());
        if n == N_STEPS {
            break;
        }
        let u = if n == 0 { s } else { 0.0 };
        // 3 g / (2 l) sin th + 3 / (m l^2) * 40 u, with g = 10, m = l = 1.
        thd += (15.0 * math::sin(th) + 3.0 * TORQUE_SCALE * u) * DT;
        th += thd * DT;
    }
    (f, g)
}
