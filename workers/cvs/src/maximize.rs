//! The inner maximiser `maximize_fn` (Tay et al.'s code's): random warm-up, then multi-start
//! bounded L-BFGS from `n_iter - 1` fresh uniform points plus the best warm-up point, in `[0,1]^dim`.
//!
//! The warm-up values are computed by the caller in one batch (so that the upper and lower
//! confidence bounds of a set can share the posterior moments of the same warm-up points);
//! the L-BFGS runs use analytic gradients (where the reference codes use finite differences),
//! asked for only at the points the line search accepts ([`Ascent`]).

use armada_gp::lbfgs::{minimize_objective, LbfgsConfig, Objective};
use armada_gp::Rows;
use ndarray::{Array2, ArrayView2};
use rand::Rng;

/// Warm-up and restart sizes of one call site (the reference codes set them per call site).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaximizeConfig {
    pub n_warmup: usize,
    pub n_iter: usize,
}

/// SciPy L-BFGS-B's `maxfun`: evaluations per run before it gives up (reported as no success).
pub const MAX_EVALS: usize = 15_000;

/// SciPy L-BFGS-B defaults: memory 10, `ftol = 2.22e-9`, `gtol = 1e-5`, `maxiter = 15000`.
pub fn scipy_lbfgs() -> LbfgsConfig {
    LbfgsConfig { memory: 10, max_iters: 15000, gtol: 1e-5, ftol: 2.220_446_049_250_313e-9, ..LbfgsConfig::default() }
}

/// `n` uniform points in the unit box `[0,1]^dim`, one per row, drawn row by row.
pub fn uniform_points<R: Rng + ?Sized>(rng: &mut R, n: usize, dim: usize) -> Array2<f64> {
    Array2::from_shape_vec((n, dim), uniform_rows(rng, n, dim)).expect("n points of dim coordinates")
}

/// [`uniform_points`] as a row-major buffer.
fn uniform_rows<R: Rng + ?Sized>(rng: &mut R, n: usize, dim: usize) -> Vec<f64> {
    (0..n * dim).map(|_| rng.random::<f64>()).collect()
}

/// The best point and value.
#[derive(Clone, Debug, PartialEq)]
pub struct Maximum {
    pub x: Vec<f64>,
    pub value: f64,
}

/// What [`maximize_from`] climbs: the value at a point, then, if asked, the gradient at that
/// point (a gradient can cost as much again as its value: `E[sigma]`'s second solve).
pub trait Ascent {
    fn value(&mut self, x: &[f64]) -> f64;
    /// The gradient at the point of the last [`Ascent::value`] call.
    fn gradient(&mut self, grad: &mut [f64]);
}

/// A joint `g(x, grad) -> value` as an [`Ascent`] (value and gradient computed together).
pub struct Joint<G> {
    g: G,
    grad: Vec<f64>,
}

impl<G: FnMut(&[f64], &mut [f64]) -> f64> Joint<G> {
    pub fn new(dim: usize, g: G) -> Self {
        Self { g, grad: vec![0.0; dim] }
    }
}

impl<G: FnMut(&[f64], &mut [f64]) -> f64> Ascent for Joint<G> {
    fn value(&mut self, x: &[f64]) -> f64 {
        (self.g)(x, &mut self.grad)
    }

    fn gradient(&mut self, grad: &mut [f64]) {
        grad.copy_from_slice(&self.grad);
    }
}

/// An [`Ascent`] as L-BFGS's minimisation [`Objective`], with SciPy's `maxfun`.
struct Descent<'a, A: ?Sized> {
    ascent: &'a mut A,
    dim: usize,
    n_evals: usize,
}

impl<A: Ascent + ?Sized> Objective for Descent<'_, A> {
    fn value(&mut self, x: &[f64]) -> Option<f64> {
        // SciPy's maxfun: past it the objective is "undefined", the line search fails and the
        // run ends unconverged (SciPy: success = False), so it is not accepted.
        self.n_evals += 1;
        if self.n_evals > MAX_EVALS {
            return None;
        }
        let v = self.ascent.value(x);
        v.is_finite().then_some(-v)
    }

    fn gradient(&mut self) -> Option<Vec<f64>> {
        let mut grad = vec![0.0; self.dim];
        self.ascent.gradient(&mut grad);
        grad.iter_mut().for_each(|gi| *gi = -*gi);
        Some(grad)
    }
}

/// Maximise `g` over `[0,1]^dim` given its values at the warm-up points (one per row of
/// `warmup`, `dim` its number of columns), drawing the restarts' seeds from `rng`.
///
/// `g(x, grad)` returns the value and writes the gradient: a slice, as L-BFGS evaluates it
/// at the points it owns, many times per run.
pub fn maximize<R, G>(rng: &mut R, warmup: ArrayView2<'_, f64>, warm_values: &[f64], n_iter: usize, g: G) -> Maximum
where
    R: Rng + ?Sized,
    G: FnMut(&[f64], &mut [f64]) -> f64,
{
    let seeds = draw_seeds(rng, n_iter, warmup.ncols());
    maximize_from(&seeds, warmup, warm_values, &mut Joint::new(warmup.ncols(), g))
}

/// The random draws of one [`maximize`] call: `n_iter - 1` uniform seeds, row-major.
pub fn draw_seeds<R: Rng + ?Sized>(rng: &mut R, n_iter: usize, dim: usize) -> Vec<f64> {
    uniform_rows(rng, n_iter.saturating_sub(1), dim)
}

/// [`maximize`] with its seeds drawn beforehand ([`draw_seeds`]), so that the draws of many
/// calls can be made in their order and the calls run on other threads.
///
/// A restart replaces the incumbent only if L-BFGS reports convergence and its value is at
/// least the incumbent's (as SciPy's `success` test in the reference code).
pub fn maximize_from<A: Ascent + ?Sized>(
    seeds: &[f64],
    warmup: ArrayView2<'_, f64>,
    warm_values: &[f64],
    ascent: &mut A,
) -> Maximum {
    let dim = warmup.ncols();
    let best = (0..warm_values.len()).fold(0, |b, p| if warm_values[p] > warm_values[b] { p } else { b });
    let mut incumbent = Maximum { x: Rows::new(warmup).row(best).to_vec(), value: warm_values[best] };
    let mut seeds = seeds.to_vec();
    seeds.extend_from_slice(&incumbent.x.clone());
    let bounds = vec![(0.0, 1.0); dim];
    let config = scipy_lbfgs();
    for seed in seeds.chunks(dim) {
        let mut objective = Descent { ascent: &mut *ascent, dim, n_evals: 0 };
        let result = minimize_objective(&mut objective, seed, Some(&bounds), &config);
        if let Some(r) = result {
            if r.converged && objective.n_evals <= MAX_EVALS && -r.f >= incumbent.value {
                incumbent = Maximum { x: r.x.iter().map(|v| v.clamp(0.0, 1.0)).collect(), value: -r.f };
            }
        }
    }
    incumbent
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn finds_the_interior_and_the_boundary_maximum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        // Concave quadratic with its peak at (0.3, 0.8): interior optimum.
        let g = |x: &[f64], grad: &mut [f64]| {
            grad[0] = -2.0 * (x[0] - 0.3);
            grad[1] = -2.0 * (x[1] - 0.8);
            -(x[0] - 0.3).powi(2) - (x[1] - 0.8).powi(2)
        };
        let warm = uniform_points(&mut rng, 50, 2);
        let vals: Vec<f64> = Rows::new(warm.view()).iter().map(|x| g(x, &mut [0.0; 2])).collect();
        let m = maximize(&mut rng, warm.view(), &vals, 3, g);
        assert!((m.x[0] - 0.3).abs() < 1e-4 && (m.x[1] - 0.8).abs() < 1e-4 && m.value > -1e-8);
        // Increasing in x: the maximum is on the upper bound.
        let h = |x: &[f64], grad: &mut [f64]| {
            grad[0] = 1.0;
            x[0]
        };
        let warm = uniform_points(&mut rng, 20, 1);
        let vals: Vec<f64> = warm.iter().copied().collect();
        let m = maximize(&mut rng, warm.view(), &vals, 2, h);
        assert_eq!(m.x, vec![1.0]);
    }
}
