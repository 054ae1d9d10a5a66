//! The real-data block (paper Section 5.3): the carrier-lifetime map of a silicon-ingot
//! surface on an 89 x 74 grid. The measured map is not public, so this is our deterministic
//! stand-in with the same grid, value range, kernel and protocol.

use super::{FiniteProblem, Protocol};
use armada_core::{ComponentDef, StreamRng};
use armada_gp::Kernel;
use armada_math as math;
use ndarray::Array2;
use rand::SeedableRng;
use std::f64::consts::PI;

/// Grid sizes: `x1 in {8, 10, ..., 184}` (89 values), `x2 in {8, 10, ..., 154}` (74 values).
pub const N_X1: usize = 89;
pub const N_X2: usize = 74;
/// Range of the raw lifetime map stated by the paper.
pub const LIFETIME_MIN: f64 = 0.091587;
pub const LIFETIME_MAX: f64 = 7.4613;

/// The registry entry of this block.
pub const CARRIER_LIFETIME: ComponentDef = ComponentDef {
    name: "carrier-lifetime",
    doc: "deterministic stand-in for the non-public carrier-lifetime map; curves will not match the \
          paper's Figure 5 numerically. 89x74 grid x1 in {8..184}, x2 in {8..154} step 2; f = 3 - lifetime, \
          theta = 0; Matern 3/2 variance 4 lengthscale 25, nugget 1e-6; noise-free observations, no candidate \
          queried twice",
    params: &[],
};

/// The registry entry of the optional second stand-in (stand-in B).
pub const CARRIER_LIFETIME_GP: ComponentDef = ComponentDef {
    name: "carrier-lifetime-gp",
    doc: "a second stand-in for the carrier-lifetime map (stand-in B): f = g, one \
          sample g of the model's own GP (Matern 3/2, variance 4, lengthscale 25) on the 89x74 grid, drawn once \
          from a fixed seed (the same map for every job), theta = 0; the protocol of carrier-lifetime",
    params: &[],
};

/// The seed of stand-in B's map: fixed, so that every job (and every node) sees one map, as
/// every simulation of the paper sees the one measured ingot.
const GP_MAP_SEED: u64 = 0;

/// The grid `{(2a + 6, 2b + 6) : 1 <= a <= 89, 1 <= b <= 74}`, flattened x1-major like
/// [`super::grid_2d`]: row `i * 74 + j` holds `(8 + 2i, 8 + 2j)`.
pub fn carrier_grid() -> Array2<f64> {
    let mut data = Vec::with_capacity(2 * N_X1 * N_X2);
    for i in 0..N_X1 {
        for j in 0..N_X2 {
            data.extend_from_slice(&[8.0 + 2.0 * i as f64, 8.0 + 2.0 * j as f64]);
        }
    }
    Array2::from_shape_vec((N_X1 * N_X2, 2), data).expect("89 x 74 points of 2 coordinates")
}

/// The stand-in's raw surface before rescaling: a low-lifetime frame along the
/// edges, two round dislocation-cluster blobs, one thin horizontal streak, and a small wave.
///
/// With `u = (x1 - 8)/176`, `v = (x2 - 8)/146`, `s(z) = 1/(1 + e^-z)`:
/// `raw = edge (1 - blobs) + waves edge`.
pub fn carrier_lifetime_raw(x1: f64, x2: f64) -> f64 {
    let u = (x1 - 8.0) / 176.0;
    let v = (x2 - 8.0) / 146.0;
    let s = |z: f64| 1.0 / (1.0 + math::exp(-z));
    let edge = s((v - 0.10) / 0.03) * s((0.93 - v) / 0.02) * s((u - 0.05) / 0.02) * s((0.95 - u) / 0.02);
    let blobs = 0.85 * math::exp(-((u - 0.30).powi(2) + (v - 0.55).powi(2)) / (2.0 * 0.06 * 0.06))
        + 0.75 * math::exp(-((u - 0.70).powi(2) + (v - 0.35).powi(2)) / (2.0 * 0.05 * 0.05))
        + 0.70 * math::exp(-((u - 0.55).powi(2) / (2.0 * 0.12 * 0.12) + (v - 0.75).powi(2) / (2.0 * 0.03 * 0.03)));
    let waves = 0.08 * math::sin(2.0 * PI * 3.0 * u) * math::sin(2.0 * PI * 2.0 * v);
    edge * (1.0 - blobs) + waves * edge
}

/// The carrier-lifetime stand-in as an LSE problem (Section 5.3): the raw surface rescaled over
/// the grid to `[0.091587, 7.4613]` (the lifetime `f~`), the black box `f = 3 - f~` with
/// `theta = 0` (so `H*` is the red zone `f~ <= 3`), Matern 3/2 with variance 4 and
/// lengthscale 25 in grid units, nugget `1e-6`, exact observations and no repeats.
pub fn carrier_lifetime() -> FiniteProblem {
    let candidates = carrier_grid();
    let raw: Vec<f64> = candidates.rows().into_iter().map(|x| carrier_lifetime_raw(x[0], x[1])).collect();
    let (lo, hi) = raw.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    let f = raw
        .iter()
        .map(|&r| {
            let lifetime = LIFETIME_MIN + (LIFETIME_MAX - LIFETIME_MIN) * (r - lo) / (hi - lo);
            3.0 - lifetime
        })
        .collect();
    carrier_problem(candidates, f)
}

/// The block's problem around the black box `f` (a value per point of `candidates`, the
/// carrier grid): `theta = 0`, Matern 3/2 with variance 4 and lengthscale 25, nugget
/// `1e-6`, exact observations and no repeats.
fn carrier_problem(candidates: Array2<f64>, f: Vec<f64>) -> FiniteProblem {
    assert_eq!(f.len(), candidates.nrows(), "a value per grid point");
    FiniteProblem {
        candidates,
        f,
        theta: 0.0,
        kernel: carrier_kernel(),
        noise_var: 1e-6,
        protocol: Protocol::NOISE_FREE_NO_REPEAT,
    }
}

fn carrier_kernel() -> Kernel {
    Kernel::matern32(4.0, vec![25.0, 25.0])
}

/// Stand-in B's map, `g` at each grid point (x1-major), as little-endian f64: drawn by
/// [`draw_gp_map`] and kept in the repository, so that no job factorises the 6,586-point Gram
/// matrix and the map is the same bits on every node whatever its linear algebra.
const GP_MAP: &[u8] = include_bytes!("../../data/carrier-lifetime-gp.f64le");

/// One draw of `GP(0, k)` on the carrier grid for the stand-in's own kernel `k`, from the
/// fixed seed: the map `carrier-lifetime-gp` ships (the test
/// `stand_in_b_ships_the_draw_from_its_seed` checks the file against it and rewrites it
/// when `ARMADA_WRITE_CARRIER_GP=1`).
pub fn draw_gp_map() -> Result<Vec<f64>, armada_gp::GpError> {
    let mut rng = StreamRng::seed_from_u64(GP_MAP_SEED);
    let (paths, _) = armada_gp::sample_prior(&carrier_kernel(), carrier_grid().view(), 1, &mut rng)?;
    Ok(paths.col_as_slice(0).to_vec())
}

/// The carrier-lifetime problem with stand-in B's map: `f = g`, one draw of the
/// model's own GP (so the model is exactly right, unlike for the deterministic stand-in),
/// `theta = 0`, the same grid, kernel and protocol.
pub fn carrier_lifetime_gp() -> FiniteProblem {
    let g = GP_MAP.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
    carrier_problem(carrier_grid(), g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_is_89_by_74_x1_major() {
        let g = carrier_grid();
        assert_eq!(g.nrows(), 6586);
        assert_eq!(g.row(0).to_vec(), [8.0, 8.0]);
        assert_eq!(g.row(1).to_vec(), [8.0, 10.0]);
        assert_eq!(g.row(73).to_vec(), [8.0, 154.0]);
        assert_eq!(g.row(74).to_vec(), [10.0, 8.0]);
        assert_eq!(g.row(6585).to_vec(), [184.0, 154.0]);
    }

    /// The stand-in's check values (computed independently with numpy from the same
    /// formula: min 0.091587, max 7.4613, mean 4.72706, 1767 red-zone points).
    #[test]
    fn stand_in_matches_the_spec_check_values() {
        let p = carrier_lifetime();
        let lifetime: Vec<f64> = p.f.iter().map(|f| 3.0 - f).collect();
        let (lo, hi) = lifetime.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        assert!((lo - 0.091587).abs() < 1e-12 && (hi - 7.4613).abs() < 1e-12, "{lo} {hi}");
        let mean = lifetime.iter().sum::<f64>() / 6586.0;
        assert!((mean - 4.727).abs() < 5e-4, "{mean}");
        let red = p.f.iter().filter(|&&f| f >= p.theta).count();
        assert_eq!(red, 1767);
        assert!((p.upper_fraction() - 0.2683).abs() < 5e-5);
        // H* = {f >= 0} is exactly the red zone {lifetime <= 3}.
        assert_eq!(lifetime.iter().filter(|&&l| l <= 3.0).count(), red);
    }

    /// The described shape: the frame (grid border) is red, the two blob centres and the
    /// streak centre are red, and a point inside the frame away from the defects is not.
    #[test]
    fn stand_in_has_the_described_defects() {
        let p = carrier_lifetime();
        let at = |x1: usize, x2: usize| p.f[(x1 - 8) / 2 * N_X2 + (x2 - 8) / 2];
        for (x1, x2) in [(8, 80), (184, 80), (96, 8), (96, 154)] {
            assert!(at(x1, x2) > 0.0, "edge ({x1},{x2})");
        }
        // Centres (u, v) = (0.30, 0.55), (0.70, 0.35), (0.55, 0.75) at x = 8 + (176u, 146v), on the grid.
        for (x1, x2) in [(60, 88), (130, 58), (104, 118)] {
            assert!(at(x1, x2) > 0.0, "defect ({x1},{x2})");
        }
        // (u, v) = (0.5, 0.22): inside the frame, away from every defect.
        assert!(at(96, 40) < 0.0);
        let k25 = p.kernel.eval(&[0.0, 0.0], &[0.0, 25.0]);
        let want = 4.0 * (1.0 + 3f64.sqrt()) * (-(3f64.sqrt())).exp();
        assert!((k25 - want).abs() < 1e-15 * want);
    }

    /// Stand-in B's shipped map is the draw from its seed, and that draw is one of the model's
    /// GP: whitened by the Cholesky factor of the kernel's Gram matrix (computed here afresh,
    /// with faer's own factorisation), it is 6,586 independent standard normals, whose mean
    /// and variance this checks to five standard errors.
    #[test]
    fn stand_in_b_ships_the_draw_from_its_seed() {
        let drawn = draw_gp_map().unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/carrier-lifetime-gp.f64le");
        if std::env::var_os("ARMADA_WRITE_CARRIER_GP").is_some() {
            std::fs::write(path, drawn.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        }
        let p = carrier_lifetime_gp();
        assert!(p.f == drawn, "{path} is not the draw from its seed; ARMADA_WRITE_CARRIER_GP=1 rewrites it");
        assert_eq!((p.theta, p.candidates.nrows()), (0.0, 6586));
        let x = p.candidates.view();
        let n = x.nrows();
        let gram = faer::Mat::<f64>::from_fn(n, n, |i, j| {
            p.kernel.eval(x.row(i).as_slice().unwrap(), x.row(j).as_slice().unwrap()) + if i == j { 1e-6 } else { 0.0 }
        });
        let chol = gram.llt(faer::Side::Lower).expect("the jittered Gram matrix is positive definite");
        let mut z = faer::Mat::<f64>::from_fn(n, 1, |i, _| p.f[i]);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(chol.L(), z.as_mut(), faer::Par::Seq);
        let z: Vec<f64> = (0..n).map(|i| z[(i, 0)]).collect();
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let (se_mean, se_var) = ((1.0 / n as f64).sqrt(), (2.0 / n as f64).sqrt());
        assert!(mean.abs() < 5.0 * se_mean && (var - 1.0).abs() < 5.0 * se_var, "whitened: mean {mean}, var {var}");
        // Not the deterministic stand-in, and a real split of the grid at theta.
        assert_ne!(p.f, carrier_lifetime().f);
        assert!((0.05..0.95).contains(&p.upper_fraction()), "{}", p.upper_fraction());
    }
}
