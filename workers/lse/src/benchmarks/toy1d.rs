//! The 1-D illustration of the paper's Figure 2 (Section 3.2): two bumps above the
//! threshold, a dip between them, 20 observations from a fixed start at `x = -5`.
//!
//! The paper does not give the domain or the kernel; this is our own choice
//! (1,001 equally spaced points on [-10, 10], Gaussian kernel `sf2 = 4`, `L = 1`).
//! Figure 2's panels are straddle with `beta^{1/2} = 1`, straddle with `beta^{1/2} = 10`
//! and the randomized straddle, over a horizon of 19 acquisitions.

use super::finite2d::linspace;
use super::{FiniteProblem, Protocol};
use armada_core::ComponentDef;
use armada_gp::Kernel;
use armada_math as math;
use ndarray::Array2;

/// Number of grid points on [-10, 10] (spacing 0.02).
pub const TOY_1D_N: usize = 1001;
/// Index of `x = -5`, the fixed initial point.
pub const TOY_1D_START: usize = 250;

/// The registry entry of the toy.
pub const TOY_1D: ComponentDef = ComponentDef {
    name: "toy-1d",
    doc: "Figure 2 toy: f = 5 exp(-(x+5)^2) + 5 exp(-(x-5)^2) - 2 exp(-x^2) - 1 on 1001 points of \
          [-10,10], theta = 3, noise 1e-2, Gaussian kernel sf2 = 4, L = 1, initial point fixed at x = -5; \
          the figure uses 19 acquisitions",
    params: &[],
};

/// `f(x) = 5 exp(-(x+5)^2) + 5 exp(-(x-5)^2) - 2 exp(-x^2) - 1`.
pub fn toy_1d_f(x: f64) -> f64 {
    5.0 * math::exp(-(x + 5.0).powi(2)) + 5.0 * math::exp(-(x - 5.0).powi(2)) - 2.0 * math::exp(-x * x) - 1.0
}

/// The Figure 2 toy as an LSE problem: noisy observations (variance `1e-2`, also the model's),
/// repeats allowed, initial point fixed at index 250 (`x = -5`).
pub fn toy_1d() -> FiniteProblem {
    let xs = linspace(-10.0, 10.0, TOY_1D_N);
    let f = xs.iter().map(|&x| toy_1d_f(x)).collect();
    FiniteProblem {
        candidates: Array2::from_shape_vec((TOY_1D_N, 1), xs).expect("one coordinate per point"),
        f,
        theta: 3.0,
        kernel: Kernel::squared_exponential_paper_l(4.0, 1.0, 1),
        noise_var: 1e-2,
        protocol: Protocol { initial_index: Some(TOY_1D_START), ..Protocol::NOISY },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_and_start() {
        let p = toy_1d();
        assert_eq!(p.candidates.nrows(), 1001);
        assert_eq!(p.candidates.row(0).to_vec(), [-10.0]);
        assert_eq!(p.candidates.row(TOY_1D_START).to_vec(), [-5.0]);
        assert_eq!(p.candidates.row(500).to_vec(), [0.0]);
        assert_eq!(p.candidates.row(1000).to_vec(), [10.0]);
        assert_eq!(p.protocol.initial_index, Some(250));
        // L = 1: k(x, x + 1) = 4 exp(-1).
        assert!((p.kernel.eval(&[0.0], &[1.0]) - 4.0 * (-1f64).exp()).abs() < 1e-15);
    }

    /// Peaks ~4 at x = +-5, dip ~-3 at 0; and |H*| from the closed form. Near a
    /// peak the other terms are below 2e-20, so `f >= 3` iff `5 exp(-(x -+ 5)^2) >= 4`, i.e.
    /// `|x -+ 5| <= sqrt(ln 1.25) = 0.4724`: on the 0.02 grid that is the offsets `k * 0.02`
    /// with `|k| <= floor(0.4724 / 0.02) = 23` (0.46 and 0.48 are far from the boundary).
    #[test]
    fn shape_and_upper_set_match_the_formula() {
        let p = toy_1d();
        let (i_max, f_max) =
            p.f.iter().copied().enumerate().fold((0, f64::NEG_INFINITY), |b, (i, v)| if v > b.1 { (i, v) } else { b });
        // Both peaks equal 4 - 2 exp(-25) + 5 exp(-100) ~ 4 - 2.8e-11; the first wins ties.
        assert_eq!(i_max, 250);
        assert!((f_max - (4.0 - 2.0 * (-25f64).exp())).abs() < 1e-15);
        assert!((p.f[750] - f_max).abs() < 1e-15);
        // The dip: -2 - 1 + 10 exp(-25) at x = 0, the grid minimum.
        let f_min = p.f.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(f_min, p.f[500]);
        assert!((p.f[500] - (-3.0 + 10.0 * (-25f64).exp())).abs() < 1e-15);

        let half_width = (1.25f64).ln().sqrt();
        let k_max = (half_width / 0.02).floor() as usize;
        assert_eq!(k_max, 23);
        let want = 2 * (2 * k_max + 1);
        let got = p.f.iter().filter(|&&v| v >= p.theta).count();
        assert_eq!(got, want);
        // The upper set is exactly the two windows around the peaks.
        for (i, &v) in p.f.iter().enumerate() {
            let near =
                (i as i64 - 250).unsigned_abs() as usize <= k_max || (i as i64 - 750).unsigned_abs() as usize <= k_max;
            assert_eq!(v >= p.theta, near, "index {i}");
        }
    }
}
