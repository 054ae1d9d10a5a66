//! The regret notions of paper Section 2, computed on the grid with the true, noise-free f
//! and g:
//!
//! * `r_t = f(s_*, x_*) - f(s_t, x_t)` (eq. 1);
//! * `r'_t = f(s_*^(x_t), x_t) - f(s_t, x_t)` (eq. 2);
//! * `r^X_t = max_x [ f(s_*^(x), x) - f(s_hat_t^(x), x) ]` (eq. 3).

use crate::benchmarks::Benchmark;

/// The safe optima the regrets are measured against.
#[derive(Clone, Debug, PartialEq)]
pub struct RegretReference {
    /// `f(s_*^(x_i), x_i)`: the best safe value of each row.
    pub fstar_x: Vec<f64>,
    /// `f(s_*, x_*)`: the best safe value overall (or the benchmark's override).
    pub fstar: f64,
    n_s: usize,
}

impl RegretReference {
    pub fn new(bench: &Benchmark) -> Self {
        let n_s = bench.grid.n_s();
        let fstar_x: Vec<f64> = bench
            .f
            .chunks(n_s)
            .zip(bench.g.chunks(n_s))
            .map(|(f, g)| {
                f.iter().zip(g).filter(|(_, &g)| g <= bench.h).map(|(&f, _)| f).fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        let grid_best = fstar_x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        RegretReference { fstar: bench.fstar_override.unwrap_or(grid_best), fstar_x, n_s }
    }

    /// `r_t` of playing flat index `k`.
    pub fn global(&self, f: &[f64], k: usize) -> f64 {
        self.fstar - f[k]
    }

    /// `r'_t` of playing flat index `k`.
    pub fn per_x(&self, f: &[f64], k: usize) -> f64 {
        self.fstar_x[k / self.n_s] - f[k]
    }

    /// `r^X_t` of the estimates `s_hat[i]` (s-indices, one per row).
    pub fn worst_x(&self, f: &[f64], s_hat: &[usize]) -> f64 {
        s_hat.iter().enumerate().map(|(i, &j)| self.fstar_x[i] - f[i * self.n_s + j]).fold(f64::NEG_INFINITY, f64::max)
    }
}
