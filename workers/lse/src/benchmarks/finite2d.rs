//! The finite 2-D synthetic block (paper Section 5.1, Table 1): three cases on
//! a 50 x 50 grid, each with the paper's Gaussian kernel `sf2 * exp(-||x-x'||^2 / L)`.

use super::{FiniteProblem, Protocol};
use armada_core::{ComponentDef, JobError};
use armada_gp::Kernel;
use armada_linalg::{matmul, symmetric_eigen, Accum};
use armada_math as math;
use armada_math::dist::StandardNormal;
use faer::Mat;
use ndarray::Array2;
use rand::Rng;

/// Points per axis of the 2-D grids.
pub const GRID_SIDE: usize = 50;

/// The registry entries of this block.
pub const FINITE_2D: [ComponentDef; 3] = [
    ComponentDef {
        name: "gp-sample-path",
        doc: "Case 1: f ~ GP(0, exp(-|x-x'|^2/2)) redrawn per seed on a 50x50 grid of [-5,5]^2; \
              sf2 = 1, L = 2, noise 1e-6, theta = 0.5",
        params: &[],
    },
    ComponentDef {
        name: "sinusoidal",
        doc: "Case 2: sin(10 x1) + cos(4 x2) - cos(3 x1 x2) on a 50x50 grid of [0,1]x[0,2]; \
              sf2 = e^2, L = 2e^-3, noise e^-2, theta = 1",
        params: &[],
    },
    ComponentDef {
        name: "himmelblau",
        doc: "Case 3: shifted negative Himmelblau on a 50x50 grid of [-5,5]^2; sf2 = e^8, L = 2, noise e^4, theta = 0",
        params: &[],
    },
];

/// The `n x n` grid of `[l1,u1] x [l2,u2]` with endpoints, flattened x1-major:
/// row `i*n + j` holds `(x1_i, x2_j)` (numpy `meshgrid(indexing='ij').ravel()`).
pub fn grid_2d(n: usize, (l1, u1): (f64, f64), (l2, u2): (f64, f64)) -> Array2<f64> {
    let a1 = linspace(l1, u1, n);
    let a2 = linspace(l2, u2, n);
    let mut data = Vec::with_capacity(2 * n * n);
    for &x1 in &a1 {
        for &x2 in &a2 {
            data.extend_from_slice(&[x1, x2]);
        }
    }
    Array2::from_shape_vec((n * n, 2), data).expect("n^2 points of 2 coordinates")
}

pub(crate) fn linspace(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let step = (hi - lo) / (n - 1) as f64;
    (0..n).map(|i| if i == n - 1 { hi } else { lo + step * i as f64 }).collect()
}

/// Case 2: `sin(10 x1) + cos(4 x2) - cos(3 x1 x2)` on `[0,1] x [0,2]`, theta = 1.
pub fn sinusoidal() -> FiniteProblem {
    let candidates = grid_2d(GRID_SIDE, (0.0, 1.0), (0.0, 2.0));
    let f = (0..candidates.nrows())
        .map(|i| {
            let x = candidates.row(i);
            math::sin(10.0 * x[0]) + math::cos(4.0 * x[1]) - math::cos(3.0 * x[0] * x[1])
        })
        .collect();
    FiniteProblem {
        candidates,
        f,
        theta: 1.0,
        kernel: Kernel::squared_exponential_paper_l(math::exp(2f64), 2.0 * math::exp(-3f64), 2),
        noise_var: math::exp(-2f64),
        protocol: Protocol::NOISY,
    }
}

/// Case 3: `-(x1^2 + x2 - 11)^2 - (x1 + x2^2 - 7)^2 + 100` on `[-5,5]^2`, theta = 0.
pub fn himmelblau() -> FiniteProblem {
    let candidates = grid_2d(GRID_SIDE, (-5.0, 5.0), (-5.0, 5.0));
    let f = (0..candidates.nrows())
        .map(|i| {
            let x = candidates.row(i);
            -(x[0] * x[0] + x[1] - 11.0).powi(2) - (x[0] + x[1] * x[1] - 7.0).powi(2) + 100.0
        })
        .collect();
    FiniteProblem {
        candidates,
        f,
        theta: 0.0,
        kernel: Kernel::squared_exponential_paper_l(math::exp(8f64), 2.0, 2),
        noise_var: math::exp(4f64),
        protocol: Protocol::NOISY,
    }
}

/// Case 1: a fresh sample path of `GP(0, exp(-||x-x'||^2/2))` on the 50x50 grid of `[-5,5]^2`.
///
/// The 2500 x 2500 Gram matrix is numerically singular (spacing 0.204 against a unit
/// lengthscale), so we use separability: `K = K1 (x) K2` with 50 x 50 factors, and
/// `F = A1 Z A2^T` with `A_k = U_k diag(sqrt(max(lambda_k, 0)))` from `K_k = U_k Lambda_k U_k^T`
/// has exactly covariance `K1 (x) K2` under the x1-major flattening `f = vec_rowmajor(F)`.
pub fn gp_sample_path_kron<R: Rng + ?Sized>(rng: &mut R) -> Result<FiniteProblem, JobError> {
    let axis = linspace(-5.0, 5.0, GRID_SIDE);
    let a = sqrt_factor(&axis); // both axes are the same grid, so A1 = A2
    let n = GRID_SIDE;
    let z = Mat::<f64>::from_fn(n, n, |_, _| rng.sample(StandardNormal));
    let mut az = Mat::zeros(n, n);
    matmul(az.as_mut(), Accum::Replace, a.as_ref(), z.as_ref(), 1.0);
    let mut fmat = Mat::zeros(n, n);
    matmul(fmat.as_mut(), Accum::Replace, az.as_ref(), a.transpose(), 1.0);
    let mut f = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            f.push(fmat[(i, j)]);
        }
    }
    Ok(FiniteProblem {
        candidates: grid_2d(n, (-5.0, 5.0), (-5.0, 5.0)),
        f,
        theta: 0.5,
        kernel: Kernel::squared_exponential_paper_l(1.0, 2.0, 2),
        noise_var: 1e-6,
        protocol: Protocol::NOISY,
    })
}

/// `U diag(sqrt(max(lambda, 0)))` for the 1-D Gram matrix `exp(-(a_i - a_j)^2 / 2)`.
fn sqrt_factor(axis: &[f64]) -> Mat<f64> {
    let n = axis.len();
    let k = Mat::<f64>::from_fn(n, n, |i, j| math::exp(-(axis[i] - axis[j]).powi(2) / 2.0));
    let (u, s) = symmetric_eigen(k.as_ref());
    Mat::from_fn(n, n, |i, j| u[(i, j)] * s[j].max(0.0).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn grid_is_x1_major_with_endpoints() {
        let g = grid_2d(50, (0.0, 1.0), (0.0, 2.0));
        assert_eq!(g.nrows(), 2500);
        assert_eq!(g.row(0).to_vec(), [0.0, 0.0]);
        assert_eq!(g.row(1).to_vec(), [0.0, 2.0 / 49.0]);
        assert_eq!(g.row(50).to_vec(), [1.0 / 49.0, 0.0]);
        assert_eq!(g.row(2499).to_vec(), [1.0, 2.0]);
    }

    /// Sanity values of the grid, computed independently with numpy.
    #[test]
    fn sinusoidal_ground_truth_matches_spec() {
        let p = sinusoidal();
        assert_eq!(p.f.iter().filter(|&&v| v >= p.theta).count(), 453);
        let (lo, hi) = min_max(&p.f);
        assert!((lo - -2.504).abs() < 5e-4 && (hi - 2.898).abs() < 5e-4, "{lo} {hi}");
        let mean = p.f.iter().sum::<f64>() / 2500.0;
        assert!((mean - 0.056).abs() < 5e-4, "{mean}");
    }

    #[test]
    fn himmelblau_ground_truth_matches_spec() {
        let p = himmelblau();
        assert_eq!(p.f.iter().filter(|&&v| v >= p.theta).count(), 1064);
        let (lo, hi) = min_max(&p.f);
        assert!((lo - -790.0).abs() < 0.5 && (hi - 99.88).abs() < 5e-3, "{lo} {hi}");
        assert!((p.kernel.variance - 2980.957987).abs() < 1e-5);
        assert!((p.noise_var - 54.59815).abs() < 1e-4);
    }

    #[test]
    fn paper_kernel_convention_is_applied() {
        // exp(-||d||^2 / L) with L = 2e^-3 at d = (0.1, 0): sf2 * exp(-0.01 / (2 e^-3)).
        let p = sinusoidal();
        let got = p.kernel.eval(&[0.0, 0.0], &[0.1, 0.0]);
        let want = 2f64.exp() * (-0.01 / (2.0 * (-3f64).exp())).exp();
        assert!((got - want).abs() < 1e-12 * want);
    }

    /// The Kronecker sampler has the kernel's covariance: over many draws, the
    /// empirical variance is 1 and neighbour correlations are exp(-d^2/2).
    #[test]
    fn gp_sample_path_has_the_model_covariance() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let n_draws = 2000;
        let pairs = [(0usize, 0usize), (1275, 1275), (1275, 1276), (1275, 1325), (1275, 1375), (0, 2499)];
        let mut acc = vec![0.0; pairs.len()];
        let mut frac = 0.0;
        for _ in 0..n_draws {
            let p = gp_sample_path_kron(&mut rng).unwrap();
            for (a, &(i, j)) in acc.iter_mut().zip(&pairs) {
                *a += p.f[i] * p.f[j];
            }
            frac += p.upper_fraction();
        }
        let g = grid_2d(50, (-5.0, 5.0), (-5.0, 5.0));
        for (a, &(i, j)) in acc.iter().zip(&pairs) {
            let (xi, xj) = (g.row(i), g.row(j));
            let d2 = (xi[0] - xj[0]).powi(2) + (xi[1] - xj[1]).powi(2);
            let want = (-d2 / 2.0).exp();
            let got = a / n_draws as f64;
            // Monte-Carlo standard error of a product moment is at most sqrt(2/n) ~ 0.032.
            assert!((got - want).abs() < 0.1, "pair {i},{j}: {got} vs {want}");
        }
        // E|H*|/|X| = P(N(0,1) >= 0.5) = 0.3085; per-draw fractions vary a lot (smooth paths).
        let frac = frac / n_draws as f64;
        assert!((frac - 0.3085).abs() < 0.03, "{frac}");
    }

    fn min_max(v: &[f64]) -> (f64, f64) {
        v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
    }
}
