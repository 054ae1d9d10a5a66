//! Random Fourier features (Rahimi & Recht 2007) and weight-space posterior samples, for
//! Thompson sampling with an (approximately) continuous posterior sample path.
//!
//! For a stationary kernel `k(x, y) = v kappa((x - y) / l)` with spectral density `p(omega)`,
//! `phi(x) = sqrt(v / D) [cos(omega_j^T (x/l)); sin(omega_j^T (x/l))]_{j=1..D}` gives
//! `E[phi(x)^T phi(y)] = k(x, y)`. SE: `omega ~ N(0, I)`; Matern-nu: multivariate Student-t with
//! `2 nu` degrees of freedom, `omega = z sqrt(2 nu / chi2_{2 nu})`.
//!
//! The Bayesian linear model `f = phi^T theta`, `theta ~ N(0, I)`, `y = Phi theta + N(0, lambda I)`
//! has the posterior `N(Phi^T P y, I - Phi^T P Phi)`, `P = (Phi Phi^T + lambda I)^{-1}`.
//! [`sample_weights`] draws from it with Matheron's rule,
//! `theta = eps + Phi^T P (y - Phi eps - sqrt(lambda) eta)`, `eps ~ N(0, I)`, `eta ~ N(0, I_n)`,
//! which needs only an `n x n` Cholesky instead of one of the `2D x 2D` covariance.

use armada_linalg::matmul;
use armada_linalg::{solve_lower_in_place, solve_lower_transpose_in_place};
use armada_math::dist::{ChiSquared, Distribution, StandardNormal};
use armada_math::lanes;
use faer::{Accum, Mat};
use ndarray::ArrayView2;
use rand::Rng;

use crate::chol::cholesky_jittered;
use crate::error::GpError;
use crate::kernel::{Kernel, KernelKind};
use crate::points::Rows;

/// `D` random frequencies of a kernel, already divided by the lengthscales.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomFourierFeatures {
    dim: usize,
    /// `omega_j / l`, `D x dim` row-major.
    omega: Vec<f64>,
    /// `sqrt(v / D)`.
    scale: f64,
}

impl RandomFourierFeatures {
    /// Draw `n_frequencies` (`D`) frequencies from the spectral density of `kernel`.
    pub fn sample<R: Rng + ?Sized>(kernel: &Kernel, n_frequencies: usize, rng: &mut R) -> Result<Self, GpError> {
        kernel.validate()?;
        let dim = kernel.dim();
        let dof = match kernel.kind {
            KernelKind::SquaredExponential => None,
            KernelKind::Matern32 => Some(3.0_f64),
            KernelKind::Matern52 => Some(5.0),
        };
        let chi2 = dof.map(|k| ChiSquared::new(k).expect("positive degrees of freedom"));
        let mut omega = Vec::with_capacity(n_frequencies * dim);
        for _ in 0..n_frequencies {
            let t = match (&chi2, dof) {
                (Some(c), Some(k)) => (k / c.sample(rng)).sqrt(),
                _ => 1.0,
            };
            for l in &kernel.lengthscales {
                let z: f64 = StandardNormal.sample(rng);
                omega.push(z * t / l);
            }
        }
        Ok(Self { dim, omega, scale: (kernel.variance / n_frequencies as f64).sqrt() })
    }

    #[inline]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of frequencies `D`.
    #[inline]
    pub fn n_frequencies(&self) -> usize {
        self.omega.len() / self.dim.max(1)
    }

    /// Length of a feature vector, `2 D`.
    pub fn n_features(&self) -> usize {
        2 * self.n_frequencies()
    }

    /// `sqrt(v / D)`, the amplitude of every feature.
    #[inline]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Frequency `j` divided by the lengthscales.
    #[inline]
    pub fn frequency(&self, j: usize) -> &[f64] {
        &self.omega[j * self.dim..(j + 1) * self.dim]
    }

    /// `phi(x)` into `out` (length `2 D`): cosines first, then sines.
    ///
    /// A point as a `&[f64]` on purpose: this is the per-point kernel of a Thompson-sampling
    /// inner loop (an acquisition evaluates it at every candidate), with no layout check per
    /// call; a point set goes through [`RandomFourierFeatures::feature_matrix`].
    pub fn features_into(&self, x: &[f64], out: &mut [f64]) {
        let d = self.n_frequencies();
        let phase = |j: usize| self.frequency(j).iter().zip(x).map(|(w, xi)| w * xi).sum::<f64>();
        // One argument reduction for both, four phases at a time (the bits of `sin` and `cos`).
        lanes::sin_cos_each(d, phase, |j, s, c| {
            out[j] = self.scale * c;
            out[d + j] = self.scale * s;
        });
    }

    /// `Phi`, one row `phi(x_i)^T` per point, a row of `x` (`n x 2D`; a non-standard-layout
    /// `x` is laid out anew once, O(n d)).
    pub fn feature_matrix(&self, x: ArrayView2<'_, f64>) -> Mat<f64> {
        self.feature_matrix_rows(&Rows::new(x))
    }

    fn feature_matrix_rows(&self, x: &Rows<'_>) -> Mat<f64> {
        let mut row = vec![0.0; self.n_features()];
        let mut phi = Mat::zeros(x.len(), self.n_features());
        for (i, xi) in x.iter().enumerate() {
            self.features_into(xi, &mut row);
            for (k, v) in row.iter().enumerate() {
                phi[(i, k)] = *v;
            }
        }
        phi
    }
}

/// One draw of the weights from the posterior of the linear model (Matheron's rule), given the
/// observed inputs, one per row of `x`.
pub fn sample_weights<R: Rng + ?Sized>(
    rff: &RandomFourierFeatures,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    noise_var: f64,
    rng: &mut R,
) -> Result<Vec<f64>, GpError> {
    let n = x.nrows();
    if y.len() != n {
        return Err(GpError::LengthMismatch { expected: n, got: y.len() });
    }
    let phi = rff.feature_matrix(x);
    let m = rff.n_features();
    let eps: Vec<f64> = (0..m).map(|_| StandardNormal.sample(rng)).collect();
    // r = y - Phi eps - sqrt(lambda) eta
    let mut r = Mat::zeros(n, 1);
    for i in 0..n {
        let eta: f64 = StandardNormal.sample(rng);
        let pe: f64 = (0..m).map(|k| phi[(i, k)] * eps[k]).sum();
        r[(i, 0)] = y[i] - pe - noise_var.sqrt() * eta;
    }
    solve_gram(&phi, noise_var, &mut r)?;
    Ok((0..m).map(|k| eps[k] + (0..n).map(|i| phi[(i, k)] * r[(i, 0)]).sum::<f64>()).collect())
}

/// The exact weight posterior `(Phi^T P y, I - Phi^T P Phi)`; O(D^2 n), for small problems and tests.
pub fn weight_posterior(
    rff: &RandomFourierFeatures,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    noise_var: f64,
) -> Result<(Vec<f64>, Mat<f64>), GpError> {
    let phi = rff.feature_matrix(x);
    let (n, m) = (x.nrows(), rff.n_features());
    let mut py = Mat::from_fn(n, 1, |i, _| y[i]);
    solve_gram(&phi, noise_var, &mut py)?;
    let mean = (0..m).map(|k| (0..n).map(|i| phi[(i, k)] * py[(i, 0)]).sum()).collect();
    let mut p_phi = phi.clone();
    solve_gram(&phi, noise_var, &mut p_phi)?;
    let cov = Mat::from_fn(m, m, |a, b| {
        let q: f64 = (0..n).map(|i| phi[(i, a)] * p_phi[(i, b)]).sum();
        f64::from(u8::from(a == b)) - q
    });
    Ok((mean, cov))
}

/// `rhs <- (Phi Phi^T + lambda I)^{-1} rhs` by Cholesky (jitter only if it fails).
fn solve_gram(phi: &Mat<f64>, noise_var: f64, rhs: &mut Mat<f64>) -> Result<(), GpError> {
    let n = phi.nrows();
    let mut gram = Mat::zeros(n, n);
    matmul(gram.as_mut(), Accum::Replace, phi.as_ref(), phi.transpose(), 1.0);
    for i in 0..n {
        gram[(i, i)] += noise_var;
    }
    let scale = (0..n).map(|i| gram[(i, i)]).fold(0.0_f64, f64::max);
    let (l, _) = cholesky_jittered(gram.as_ref(), scale)?;
    solve_lower_in_place(l.as_ref(), rhs.as_mut());
    solve_lower_transpose_in_place(l.as_ref(), rhs.as_mut());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::SeedableRng;

    fn rows2(data: Vec<f64>) -> Array2<f64> {
        Array2::from_shape_vec((data.len() / 2, 2), data).unwrap()
    }

    fn rng(seed: u64) -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn feature_inner_products_converge_to_the_kernel() {
        // Each product is (v/D) sum_j cos(omega_j^T (x - y)/l): an average of D i.i.d. terms
        // bounded by v, so its standard error is at most v / sqrt(D); 5 standard errors.
        let pairs = [([0.1, 0.2, 0.3], [0.15, 0.1, 0.35]), ([0.0, 0.5, 1.0], [0.3, 0.4, 0.9]), ([0.2; 3], [0.2; 3])];
        for kernel in [
            Kernel::squared_exponential(1.3, vec![0.2, 0.5, 0.3]),
            Kernel::matern52(0.8, vec![0.3, 0.3, 0.6]),
            Kernel::matern32(1.0, vec![0.4, 0.2, 0.5]),
        ] {
            for n_freq in [200, 20_000] {
                let rff = RandomFourierFeatures::sample(&kernel, n_freq, &mut rng(n_freq as u64)).unwrap();
                let tol = 5.0 * kernel.variance / (n_freq as f64).sqrt();
                let (mut fa, mut fb) = (vec![0.0; rff.n_features()], vec![0.0; rff.n_features()]);
                for (a, b) in &pairs {
                    rff.features_into(a, &mut fa);
                    rff.features_into(b, &mut fb);
                    let approx: f64 = fa.iter().zip(&fb).map(|(p, q)| p * q).sum();
                    let exact = kernel.eval(a, b);
                    assert!((approx - exact).abs() < tol, "{:?} D={n_freq}: {approx} vs {exact}", kernel.kind);
                }
            }
        }
    }

    #[test]
    fn matheron_samples_have_the_weight_posterior_moments() {
        let kernel = Kernel::squared_exponential(1.0, vec![0.3, 0.3]);
        let rff = RandomFourierFeatures::sample(&kernel, 3, &mut rng(1)).unwrap();
        let x = rows2(vec![0.1, 0.2, 0.5, 0.5, 0.9, 0.1, 0.3, 0.8]);
        let y = [0.3, -0.2, 0.8, 0.1];
        let noise = 0.05;
        let (mean, cov) = weight_posterior(&rff, x.view(), &y, noise).unwrap();
        let m = rff.n_features();
        let n_draws = 40_000;
        let mut r = rng(2);
        let draws: Vec<Vec<f64>> =
            (0..n_draws).map(|_| sample_weights(&rff, x.view(), &y, noise, &mut r).unwrap()).collect();
        for a in 0..m {
            let avg = draws.iter().map(|t| t[a]).sum::<f64>() / n_draws as f64;
            // Mean within 5 standard errors sqrt(Sigma_aa / n).
            assert!((avg - mean[a]).abs() < 5.0 * (cov[(a, a)] / n_draws as f64).sqrt() + 1e-12, "mean[{a}]");
            for b in 0..m {
                let avg_b = draws.iter().map(|t| t[b]).sum::<f64>() / n_draws as f64;
                let c = draws.iter().map(|t| (t[a] - avg) * (t[b] - avg_b)).sum::<f64>() / n_draws as f64;
                // Standard error of a sample covariance <= sqrt(Sigma_aa Sigma_bb (1 + rho^2) / n).
                let se = (cov[(a, a)] * cov[(b, b)] * 2.0 / n_draws as f64).sqrt();
                assert!((c - cov[(a, b)]).abs() < 5.0 * se + 1e-9, "cov[{a},{b}] {c} vs {}", cov[(a, b)]);
            }
        }
    }

    #[test]
    fn weight_space_posterior_approaches_the_exact_gp() {
        let kernel = Kernel::squared_exponential(1.0, vec![0.3, 0.4]);
        let x = rows2(vec![0.1, 0.2, 0.5, 0.5, 0.9, 0.1, 0.3, 0.8, 0.7, 0.7]);
        let y = vec![0.3, -0.2, 0.8, 0.1, 0.5];
        let noise = 0.01;
        let (gp, _) = crate::Gp::fit(kernel.clone(), noise, x.clone(), y.clone()).unwrap();
        let q = rows2(vec![0.4, 0.4, 0.2, 0.6]);
        let (mu, var) = gp.predict(q.view());
        let rff = RandomFourierFeatures::sample(&kernel, 1500, &mut rng(5)).unwrap();
        let (mean, cov) = weight_posterior(&rff, x.view(), &y, noise).unwrap();
        let mut phi = vec![0.0; rff.n_features()];
        for (j, xq) in q.rows().into_iter().enumerate() {
            rff.features_into(xq.as_slice().unwrap(), &mut phi);
            let m: f64 = phi.iter().zip(&mean).map(|(p, t)| p * t).sum();
            let mut v = 0.0;
            for a in 0..phi.len() {
                for b in 0..phi.len() {
                    v += phi[a] * cov[(a, b)] * phi[b];
                }
            }
            // Kernel error O(1/sqrt(D)) = O(0.016), amplified by the conditioning of K.
            assert!((m - mu[j]).abs() < 0.08, "mean {m} vs {}", mu[j]);
            assert!((v - var[j]).abs() < 0.08, "var {v} vs {}", var[j]);
        }
    }
}
