//! Limited-memory BFGS with box constraints by projection (minimisation).
//!
//! Nocedal & Wright, Algorithm 7.4 (two-loop recursion) and 3.1 (backtracking Armijo), made
//! bound-aware the simple way:
//!
//! * the projected gradient `pg` zeroes components at an active bound whose gradient points out
//!   of the box; convergence is `||pg||_inf <= gtol`;
//! * the search direction `d = -H pg` is computed from the memory and restricted to the free
//!   variables; if it is not a descent direction, memory is dropped and `d = -pg`;
//! * the step follows the projected path `x(t) = P(x + t d)`, halving `t` until the Armijo
//!   condition `f(x(t)) <= f(x) + c1 g^T (x(t) - x)` holds;
//! * a pair `(s, y)` enters the memory only if `s^T y > eps ||s|| ||y||` (keeps `H` positive).
//!
//! The objective may be undefined at some points (e.g. a non-PD covariance): it returns `None`
//! there, which the line search treats as `+inf`.
//!
//! An objective whose gradient costs more than its value can implement [`Objective`] and run
//! through [`minimize_objective`]: the line search asks for the gradient only at the points it
//! accepts (a rejected trial point needs only its value), with the iterates of [`minimize`].

use std::collections::VecDeque;

/// Settings for [`minimize`].
#[derive(Clone, Copy, Debug)]
pub struct LbfgsConfig {
    /// Number of `(s, y)` pairs kept.
    pub memory: usize,
    /// Maximum number of iterations.
    pub max_iters: usize,
    /// Stop when the projected gradient's infinity norm is at most this.
    pub gtol: f64,
    /// Stop when the relative decrease `(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1)` is at most this.
    pub ftol: f64,
    /// Armijo sufficient-decrease constant.
    pub c1: f64,
    /// Maximum step halvings per line search.
    pub max_backtracks: usize,
}

impl Default for LbfgsConfig {
    fn default() -> Self {
        Self { memory: 10, max_iters: 200, gtol: 1e-6, ftol: 1e-13, c1: 1e-4, max_backtracks: 40 }
    }
}

/// Outcome of [`minimize`].
#[derive(Clone, Debug)]
pub struct LbfgsResult {
    /// Best point found.
    pub x: Vec<f64>,
    /// Objective at `x`.
    pub f: f64,
    /// Gradient at `x`.
    pub grad: Vec<f64>,
    /// Iterations taken.
    pub iters: usize,
    /// Objective evaluations.
    pub n_evals: usize,
    /// Whether a `gtol`/`ftol` criterion was met (rather than `max_iters` or a failed search).
    pub converged: bool,
}

/// An objective evaluated in two parts: the value at a point, then (if the minimiser asks) the
/// gradient at that same point.
pub trait Objective {
    /// The value at `x`, or `None` where the objective is undefined.
    fn value(&mut self, x: &[f64]) -> Option<f64>;
    /// The gradient at the point of the last [`Objective::value`] call, which returned a value.
    fn gradient(&mut self) -> Option<Vec<f64>>;
}

/// A joint `f(x) -> (value, gradient)` as an [`Objective`].
struct Joint<F> {
    f: F,
    grad: Option<Vec<f64>>,
}

impl<F: FnMut(&[f64]) -> Option<(f64, Vec<f64>)>> Objective for Joint<F> {
    fn value(&mut self, x: &[f64]) -> Option<f64> {
        let (v, g) = (self.f)(x)?;
        self.grad = Some(g);
        Some(v)
    }

    fn gradient(&mut self) -> Option<Vec<f64>> {
        self.grad.take()
    }
}

/// Minimises `f` from `x0`, optionally within `bounds[i] = (lo_i, hi_i)`.
///
/// `f` returns `Some((value, gradient))`, or `None` where it is undefined. Returns `None` if the
/// (projected) starting point cannot be evaluated.
///
/// # Panics
/// If `bounds` is given with a length different from `x0`'s.
pub fn minimize<F>(f: F, x0: &[f64], bounds: Option<&[(f64, f64)]>, config: &LbfgsConfig) -> Option<LbfgsResult>
where
    F: FnMut(&[f64]) -> Option<(f64, Vec<f64>)>,
{
    minimize_objective(&mut Joint { f, grad: None }, x0, bounds, config)
}

/// [`minimize`] for an [`Objective`]: the gradient is asked for at the start and at every
/// accepted step, never at a trial point the line search rejects.
pub fn minimize_objective<O: Objective + ?Sized>(
    f: &mut O,
    x0: &[f64],
    bounds: Option<&[(f64, f64)]>,
    config: &LbfgsConfig,
) -> Option<LbfgsResult> {
    let n = x0.len();
    if let Some(b) = bounds {
        assert_eq!(b.len(), n, "lbfgs::minimize: bounds length differs from x0");
    }
    let project = |x: &mut [f64]| {
        if let Some(b) = bounds {
            for (xi, &(lo, hi)) in x.iter_mut().zip(b) {
                *xi = xi.clamp(lo, hi);
            }
        }
    };
    let mut x = x0.to_vec();
    project(&mut x);
    let mut fx = f.value(&x).filter(|v| v.is_finite())?;
    let mut g = f.gradient().filter(|g| g.iter().all(|gi| gi.is_finite()))?;
    let mut n_evals = 1;
    let mut memory: VecDeque<(Vec<f64>, Vec<f64>, f64)> = VecDeque::with_capacity(config.memory);
    let mut converged = false;
    let mut iters = 0;
    let mut pg = vec![0.0; n];
    let mut d = vec![0.0; n];
    let mut alpha = vec![0.0; config.memory];

    while iters < config.max_iters {
        // Projected gradient; `free[i]` is false for a variable held at a bound.
        let mut free = vec![true; n];
        for i in 0..n {
            pg[i] = g[i];
            if let Some(b) = bounds {
                let (lo, hi) = b[i];
                if (x[i] <= lo && g[i] > 0.0) || (x[i] >= hi && g[i] < 0.0) {
                    pg[i] = 0.0;
                    free[i] = false;
                }
            }
        }
        if inf_norm(&pg) <= config.gtol {
            converged = true;
            break;
        }
        iters += 1;

        // Two-loop recursion: d = -H pg.
        d.copy_from_slice(&pg);
        for (k, (s, y, rho)) in memory.iter().enumerate().rev() {
            alpha[k] = rho * dot(s, &d);
            axpy(-alpha[k], y, &mut d);
        }
        let gamma = memory.back().map_or(1.0, |(s, y, _)| dot(s, y) / dot(y, y));
        d.iter_mut().for_each(|di| *di *= gamma);
        for (k, (s, y, rho)) in memory.iter().enumerate() {
            let beta = rho * dot(y, &d);
            axpy(alpha[k] - beta, s, &mut d);
        }
        for i in 0..n {
            d[i] = if free[i] { -d[i] } else { 0.0 };
        }
        if dot(&d, &pg) >= 0.0 {
            memory.clear();
            d.iter_mut().zip(&pg).for_each(|(di, gi)| *di = -gi);
        }
        // First step of a fresh memory: cap the move at unit length in the inf-norm.
        let mut t = if memory.is_empty() { (1.0 / inf_norm(&d)).min(1.0) } else { 1.0 };

        // Backtracking Armijo search along the projected path.
        let mut accepted = None;
        for _ in 0..config.max_backtracks {
            let mut xt: Vec<f64> = x.iter().zip(&d).map(|(xi, di)| xi + t * di).collect();
            project(&mut xt);
            let decrease: f64 = g.iter().zip(xt.iter().zip(&x)).map(|(gi, (a, b))| gi * (a - b)).sum();
            if decrease >= 0.0 {
                // Projection removed the whole move.
                t *= 0.5;
                continue;
            }
            n_evals += 1;
            // A point is accepted with a finite value that decreases enough and a finite
            // gradient; the gradient is only computed once the value passes.
            if let Some(ft) = f.value(&xt) {
                if ft.is_finite() && ft <= fx + config.c1 * decrease {
                    if let Some(gt) = f.gradient().filter(|gt| gt.iter().all(|v| v.is_finite())) {
                        accepted = Some((xt, ft, gt));
                        break;
                    }
                }
            }
            t *= 0.5;
        }
        let Some((xt, ft, gt)) = accepted else {
            if memory.is_empty() {
                // Even steepest descent cannot decrease f: a stationary point up to rounding.
                converged = inf_norm(&pg) <= config.gtol.sqrt();
                break;
            }
            memory.clear();
            continue;
        };

        let s: Vec<f64> = xt.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = gt.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > f64::EPSILON * norm(&s) * norm(&y) && sy > 0.0 {
            if memory.len() == config.memory {
                memory.pop_front();
            }
            memory.push_back((s, y, 1.0 / sy));
        }
        let rel_decrease = (fx - ft) / fx.abs().max(ft.abs()).max(1.0);
        x = xt;
        fx = ft;
        g = gt;
        if rel_decrease <= config.ftol {
            converged = true;
            break;
        }
    }
    Some(LbfgsResult { x, f: fx, grad: g, iters, n_evals, converged })
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

fn inf_norm(a: &[f64]) -> f64 {
    a.iter().fold(0.0_f64, |m, v| m.max(v.abs()))
}

/// `y += a x`.
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rosenbrock(x: &[f64]) -> Option<(f64, Vec<f64>)> {
        let (a, b) = (x[0], x[1]);
        let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
        let g = vec![-2.0 * (1.0 - a) - 400.0 * a * (b - a * a), 200.0 * (b - a * a)];
        Some((f, g))
    }

    #[test]
    fn rosenbrock_converges_to_one_one() {
        let cfg = LbfgsConfig { gtol: 1e-10, ftol: 0.0, max_iters: 500, ..LbfgsConfig::default() };
        let r = minimize(rosenbrock, &[-1.2, 1.0], None, &cfg).unwrap();
        assert!(r.converged, "{r:?}");
        assert!((r.x[0] - 1.0).abs() < 1e-8 && (r.x[1] - 1.0).abs() < 1e-8, "{r:?}");
        assert!(r.iters < 100, "took {} iterations", r.iters);
    }

    #[test]
    fn bounded_rosenbrock_stops_on_the_active_bound() {
        // Constrained optimum of Rosenbrock on a <= 0.5: (0.5, 0.25).
        let bounds = [(-2.0, 0.5), (-2.0, 2.0)];
        let cfg = LbfgsConfig { gtol: 1e-10, ftol: 0.0, max_iters: 500, ..LbfgsConfig::default() };
        let r = minimize(rosenbrock, &[-1.2, 1.0], Some(&bounds), &cfg).unwrap();
        assert!(r.converged, "{r:?}");
        assert!((r.x[0] - 0.5).abs() < 1e-12 && (r.x[1] - 0.25).abs() < 1e-8, "{r:?}");
    }

    /// Rosenbrock in two parts, counting the gradients asked for.
    struct Split {
        x: Vec<f64>,
        n_values: usize,
        n_gradients: usize,
    }

    impl Objective for Split {
        fn value(&mut self, x: &[f64]) -> Option<f64> {
            self.n_values += 1;
            self.x = x.to_vec();
            rosenbrock(x).map(|(v, _)| v)
        }

        fn gradient(&mut self) -> Option<Vec<f64>> {
            self.n_gradients += 1;
            rosenbrock(&self.x).map(|(_, g)| g)
        }
    }

    #[test]
    fn an_objective_in_two_parts_takes_the_same_steps_with_fewer_gradients() {
        let cfg = LbfgsConfig { gtol: 1e-10, ftol: 0.0, max_iters: 500, ..LbfgsConfig::default() };
        let joint = minimize(rosenbrock, &[-1.2, 1.0], None, &cfg).unwrap();
        let mut split = Split { x: vec![], n_values: 0, n_gradients: 0 };
        let r = minimize_objective(&mut split, &[-1.2, 1.0], None, &cfg).unwrap();
        assert_eq!((r.x, r.f, r.iters, r.n_evals), (joint.x, joint.f, joint.iters, joint.n_evals));
        assert_eq!(split.n_values, joint.n_evals);
        // The start and each accepted step; the rejected trial points needed no gradient.
        assert!(split.n_gradients <= r.iters + 1 && split.n_gradients < split.n_values, "{}", split.n_gradients);
    }

    #[test]
    fn undefined_start_returns_none() {
        assert!(minimize(|_| None, &[0.0], None, &LbfgsConfig::default()).is_none());
    }
}
