//! Eigenvalues and eigenvectors of a symmetric matrix by the cyclic Jacobi method: plane
//! rotations in a fixed order (row by row) annihilate each off-diagonal entry in turn, sweep
//! after sweep, until no entry is above rounding. Slower than a tridiagonal QR for large
//! matrices, but short, accurate (small eigenvalues to high relative accuracy) and used only
//! on small ones (a benchmark's 50 x 50 axis kernel).

use faer::{Mat, MatRef};

/// At most this many sweeps (convergence is quadratic: about ten suffice).
const MAX_SWEEPS: usize = 64;

/// `(U, lambda)` with `a = U diag(lambda) U^T`, `U` orthogonal, `lambda` ascending; reads
/// only the lower triangle of the square `a`.
pub fn symmetric_eigen(a: MatRef<'_, f64>) -> (Mat<f64>, Vec<f64>) {
    let n = a.nrows();
    assert_eq!(n, a.ncols(), "eigen of a {}x{} matrix", n, a.ncols());
    let mut s = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
    let mut v = Mat::<f64>::identity(n, n);
    let norm = (0..n).flat_map(|j| (0..n).map(move |i| (i, j))).map(|(i, j)| s[(i, j)] * s[(i, j)]).sum::<f64>().sqrt();
    // An entry below this is rounding noise of the whole matrix: rotating it changes nothing.
    let negligible = f64::EPSILON * 1e-3 * norm / n.max(1) as f64;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[(p, q)];
                if apq.abs() <= negligible {
                    continue;
                }
                rotated = true;
                let theta = (s[(q, q)] - s[(p, p)]) / (2.0 * apq);
                // The smaller root of t^2 + 2 theta t - 1 = 0 (|t| <= 1); 1 / (2 theta) where
                // theta^2 would overflow.
                let t = if theta.abs() > 1e150 {
                    0.5 / theta
                } else {
                    theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
                };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * c;
                for k in 0..n {
                    let (kp, kq) = (s[(k, p)], s[(k, q)]);
                    s[(k, p)] = c * kp - sn * kq;
                    s[(k, q)] = sn * kp + c * kq;
                }
                for k in 0..n {
                    let (pk, qk) = (s[(p, k)], s[(q, k)]);
                    s[(p, k)] = c * pk - sn * qk;
                    s[(q, k)] = sn * pk + c * qk;
                }
                for k in 0..n {
                    let (kp, kq) = (v[(k, p)], v[(k, q)]);
                    v[(k, p)] = c * kp - sn * kq;
                    v[(k, q)] = sn * kp + c * kq;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| s[(i, i)].total_cmp(&s[(j, j)]).then(i.cmp(&j)));
    let u = Mat::from_fn(n, n, |i, j| v[(i, order[j])]);
    (u, order.iter().map(|&i| s[(i, i)]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{naive_product, relative_gap, spd};

    /// The path graph's Laplacian, `2` on the diagonal and `-1` beside it, has eigenvalues
    /// `2 - 2 cos(k pi / (n + 1))`.
    #[test]
    fn eigenvalues_of_the_path_laplacian() {
        let n = 50;
        let a = Mat::from_fn(n, n, |i, j| {
            if i == j {
                2.0
            } else if i.abs_diff(j) == 1 {
                -1.0
            } else {
                0.0
            }
        });
        let (_, lambda) = symmetric_eigen(a.as_ref());
        for (k, l) in lambda.iter().enumerate() {
            let want = 2.0 - 2.0 * (((k + 1) as f64) * std::f64::consts::PI / (n + 1) as f64).cos();
            // Jacobi is backward stable: errors within n eps ||A|| (here ||A|| <= 4).
            assert!((l - want).abs() < n as f64 * f64::EPSILON * 4.0, "lambda_{k} = {l}, want {want}");
        }
    }

    #[test]
    fn the_decomposition_reproduces_the_matrix() {
        for n in [1, 2, 7, 50] {
            let a = spd(n, 40 + n as u64);
            let (u, lambda) = symmetric_eigen(a.as_ref());
            let ul = Mat::from_fn(n, n, |i, j| u[(i, j)] * lambda[j]);
            let back = naive_product(ul.as_ref(), u.transpose());
            assert!(relative_gap(back.as_ref(), a.as_ref()) < 1e-13, "n = {n}");
            let utu = naive_product(u.transpose(), u.as_ref());
            assert!(relative_gap(utu.as_ref(), Mat::<f64>::identity(n, n).as_ref()) < 1e-13, "n = {n}");
            assert!(lambda.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
