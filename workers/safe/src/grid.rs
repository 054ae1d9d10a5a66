//! The candidate grid of actions `(s, x)`: the discretised domains of paper Appendix B.
//!
//! `s` takes `n_s` values `linspace(0, 1, n_s)`; the x-grid is the Cartesian product of a
//! `linspace` per x-dimension (the last dimension varies fastest). Candidates are stored
//! x-major, s-minor: flat index `k = i_x * n_s + j_s`, as the reference code lays them out.

use ndarray::Array2;

/// A `linspace` including both endpoints.
pub fn linspace(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![lo],
        _ => (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect(),
    }
}

/// The action grid `D = D_S x D_X` of a benchmark.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The s-values, ascending from 0 to 1.
    pub s: Vec<f64>,
    /// The x-rows: `n_x` points of dimension `d`, one per row.
    pub x: Array2<f64>,
    /// Every candidate as a GP input `(s, x_1..x_d)`, one per row, in flat order.
    pub points: Array2<f64>,
}

impl Grid {
    /// `n_s` values of s in [0, 1] times the product of `x_axes[k] = (lo, hi, n)`.
    pub fn new(n_s: usize, x_axes: &[(f64, f64, usize)]) -> Self {
        let s = linspace(0.0, 1.0, n_s);
        let d = x_axes.len();
        let axes: Vec<Vec<f64>> = x_axes.iter().map(|&(lo, hi, n)| linspace(lo, hi, n)).collect();
        let n_x: usize = axes.iter().map(Vec::len).product();
        let mut x = Vec::with_capacity(n_x * d);
        let mut row = vec![0.0; d];
        for flat in 0..n_x {
            // Decompose with the last axis fastest.
            let mut rest = flat;
            for k in (0..d).rev() {
                row[k] = axes[k][rest % axes[k].len()];
                rest /= axes[k].len();
            }
            x.extend_from_slice(&row);
        }
        let mut points = Vec::with_capacity(n_x * s.len() * (d + 1));
        let mut z = vec![0.0; d + 1];
        for xi in x.chunks_exact(d.max(1)) {
            z[1..].copy_from_slice(xi);
            for &sj in &s {
                z[0] = sj;
                points.extend_from_slice(&z);
            }
        }
        let x = Array2::from_shape_vec((n_x, d), x).expect("n_x points of d coordinates");
        let points = Array2::from_shape_vec((n_x * s.len(), d + 1), points).expect("one (s, x) per candidate");
        Grid { s, x, points }
    }

    /// Number of s-values per row.
    pub fn n_s(&self) -> usize {
        self.s.len()
    }

    /// Number of x-rows.
    pub fn n_x(&self) -> usize {
        self.x.nrows()
    }

    /// Number of candidates `n_x * n_s`.
    pub fn len(&self) -> usize {
        self.points.nrows()
    }

    /// Whether the grid has no candidates.
    pub fn is_empty(&self) -> bool {
        self.points.nrows() == 0
    }

    /// Flat index of `(row i, s-index j)`.
    pub fn index(&self, i: usize, j: usize) -> usize {
        i * self.n_s() + j
    }

    /// `(row i, s-index j)` of a flat index.
    pub fn split(&self, k: usize) -> (usize, usize) {
        (k / self.n_s(), k % self.n_s())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_x_major_s_minor_with_last_x_axis_fastest() {
        let g = Grid::new(3, &[(0.0, 1.0, 2), (10.0, 20.0, 3)]);
        assert_eq!((g.n_s(), g.n_x(), g.len()), (3, 6, 18));
        assert_eq!(g.s, vec![0.0, 0.5, 1.0]);
        assert_eq!(g.x.row(1).to_vec(), [0.0, 15.0]);
        assert_eq!(g.x.row(3).to_vec(), [1.0, 10.0]);
        let k = g.index(4, 2);
        assert_eq!(k, 14);
        assert_eq!(g.split(k), (4, 2));
        assert_eq!(g.points.row(k).to_vec(), [1.0, 1.0, 15.0]);
    }
}
