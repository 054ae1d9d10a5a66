//! Benchmarks of the LSE paper: a finite candidate set, the true function on it,
//! the threshold, and the GP model the paper fixes for it (spec sections 3 and 4).

mod finite2d;

pub use finite2d::{gp_sample_path_kron, grid_2d, himmelblau, sinusoidal, FINITE_2D};

use armada_gp::{Kernel, Points};

/// A finite level-set problem: the candidate set `X`, the noise-free `f` on it,
/// the threshold `theta`, and the fixed GP model (kernel and noise variance, which is
/// also the variance of the observation noise).
#[derive(Clone, Debug)]
pub struct FiniteProblem {
    pub candidates: Points,
    pub f: Vec<f64>,
    pub theta: f64,
    pub kernel: Kernel,
    pub noise_var: f64,
}

impl FiniteProblem {
    /// Fraction of candidates in the true upper set `H* = {f >= theta}`.
    pub fn upper_fraction(&self) -> f64 {
        self.f.iter().filter(|&&v| v >= self.theta).count() as f64 / self.f.len() as f64
    }
}
