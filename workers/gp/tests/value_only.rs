//! The value-only MAP objective used by the multi-start screen equals, bit for bit, the value
//! of the objective-with-gradient, so screening with it changes no fit.

use armada_gp::{log_posterior, log_posterior_and_grad, Kernel, KernelKind, LogNormalPrior, MapConfig};

/// `data.len() / dim` points, one per row.
fn rows(dim: usize, data: Vec<f64>) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
}

#[test]
fn value_only_objective_equals_the_value_with_gradient_bit_for_bit() {
    for kind in [KernelKind::SquaredExponential, KernelKind::Matern32, KernelKind::Matern52] {
        let cfg = MapConfig::new(
            kind,
            LogNormalPrior { mu: 0.3, sigma: 1.0 },
            LogNormalPrior { mu: 0.2f64.ln(), sigma: 1.0 },
            1e-5,
        );
        let n = 23;
        let x = rows(2, (0..2 * n).map(|i| ((i * 37 % 101) as f64 / 101.0).sin()).collect());
        let y: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).cos() * 2.0).collect();
        for (v, l1, l2) in [(1.0, 0.2, 0.2), (9.0, 0.05, 1.3), (0.01, 3.0, 0.4)] {
            let k = Kernel::with_kind(kind, v, vec![l1, l2]);
            let with_grad = log_posterior_and_grad(x.view(), &y, &k, &cfg).unwrap().0;
            assert_eq!(log_posterior(x.view(), &y, &k, &cfg).unwrap().to_bits(), with_grad.to_bits(), "{kind:?} {v}");
        }
    }
}
