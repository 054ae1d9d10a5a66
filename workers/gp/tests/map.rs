//! MAP fitting: analytic gradients against finite differences, and the optimum against scipy's
//! L-BFGS-B on the same objective (fixtures/make_fixtures.py).

use armada_gp::{fit_map, log_posterior_and_grad, Kernel, KernelKind, LogNormalPrior, MapConfig};
use ndarray::ShapeBuilder;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// This checkout's root, read when the test runs: cargo reuses a test binary built from
/// another checkout of the same sources when both share a target directory, and
/// `env!("CARGO_MANIFEST_DIR")` would then still name that other checkout.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), std::path::PathBuf::from)
}

/// `data.len() / dim` points, one per row.
fn rows(dim: usize, data: Vec<f64>) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
}

fn vecf(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn spec_config(kind: KernelKind, noise: f64) -> MapConfig {
    MapConfig::new(kind, LogNormalPrior { mu: 0.0, sigma: 1.0 }, LogNormalPrior { mu: 0.2f64.ln(), sigma: 1.0 }, noise)
}

fn kernel_at(kind: KernelKind, theta: &[f64]) -> Kernel {
    Kernel::with_kind(kind, theta[0].exp(), theta[1..].iter().map(|t| t.exp()).collect())
}

#[test]
fn gradients_match_central_differences_for_every_kind() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let dim = 3;
    let n = 25;
    let x = rows(dim, (0..n * dim).map(|_| rng.random::<f64>()).collect());
    let y: Vec<f64> = (0..n).map(|i| (x.row(i).iter().sum::<f64>() * 2.0).sin()).collect();
    let theta = [0.3f64.ln(), 0.25f64.ln(), 0.6f64.ln(), 1.4f64.ln()];
    for kind in [KernelKind::SquaredExponential, KernelKind::Matern32, KernelKind::Matern52] {
        let cfg = spec_config(kind, 1e-2);
        let (_, grad) = log_posterior_and_grad(x.view(), &y, &kernel_at(kind, &theta), &cfg).unwrap();
        for p in 0..theta.len() {
            let h = 1e-5;
            let f = |s: f64| {
                let mut t = theta;
                t[p] += s;
                log_posterior_and_grad(x.view(), &y, &kernel_at(kind, &t), &cfg).unwrap().0
            };
            let fd = (f(h) - f(-h)) / (2.0 * h);
            let err = (grad[p] - fd).abs();
            assert!(err <= 1e-5 * fd.abs().max(1.0), "{kind:?} param {p}: analytic {} fd {fd} err {err:e}", grad[p]);
        }
    }
}

#[test]
fn map_fit_improves_on_its_starts_and_matches_scipy() {
    let path = manifest_dir().join("tests/fixtures/reference.json");
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let c = &fx["map"];
    let dim = c["dim"].as_u64().unwrap() as usize;
    let x = rows(dim, vecf(&c["x"]));
    let y = vecf(&c["y"]);
    let noise = c["noise"].as_f64().unwrap();
    let cfg = spec_config(KernelKind::Matern52, noise);
    let scipy = c["scipy_log_posterior"].as_f64().unwrap();

    // The objective itself agrees with the numpy one at the generating hyperparameters.
    let truth = Kernel::matern52(c["true_variance"].as_f64().unwrap(), vecf(&c["true_lengthscales"]));
    let (at_truth, _) = log_posterior_and_grad(x.view(), &y, &truth, &cfg).unwrap();
    let want = c["log_posterior_at_truth"].as_f64().unwrap();
    assert!((at_truth - want).abs() <= 1e-9 * want.abs(), "{at_truth} vs {want}");

    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let fit = fit_map(x.view(), &y, &cfg, Some(&truth), &mut rng).unwrap();
    assert!(fit.log_posterior >= fit.start_log_posterior, "{fit:?}");
    assert!(fit.log_posterior >= at_truth);
    assert!(fit.log_posterior >= scipy - 1e-4, "ours {} scipy {scipy}", fit.log_posterior);
    assert!(fit.converged, "{fit:?}");
    // Sane lengthscales for data drawn with l = (0.2, 0.35).
    for (l, lt) in fit.kernel.lengthscales.iter().zip(vecf(&c["true_lengthscales"])) {
        assert!(*l > lt / 3.0 && *l < lt * 3.0, "lengthscale {l} vs true {lt}");
    }
    let theta = vecf(&c["scipy_theta"]);
    let ours = [fit.kernel.variance.ln(), fit.kernel.lengthscales[0].ln(), fit.kernel.lengthscales[1].ln()];
    for (a, b) in ours.iter().zip(&theta) {
        assert!((a - b).abs() < 1e-3, "theta {ours:?} vs scipy {theta:?}");
    }

    // Without a warm start, from prior draws alone, the same optimum is found.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let cold = fit_map(x.view(), &y, &cfg, None, &mut rng).unwrap();
    assert!(cold.log_posterior >= scipy - 1e-4, "cold {} scipy {scipy}", cold.log_posterior);
    assert!(cold.n_evals > 30);

    // Same seed, same result, bit for bit.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let again = fit_map(x.view(), &y, &cfg, None, &mut rng).unwrap();
    assert_eq!(again.kernel, cold.kernel);
    assert_eq!(again.log_posterior.to_bits(), cold.log_posterior.to_bits());
}

#[test]
fn map_fit_respects_bounds_and_rejects_bad_config() {
    let x = rows(1, vec![0.0, 0.1, 0.5, 0.9]);
    let y = vec![0.0, 0.1, 0.4, -0.2];
    let mut cfg = spec_config(KernelKind::SquaredExponential, 1e-2);
    cfg.bounds_lengthscale = (0.5, 0.6);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let fit = fit_map(x.view(), &y, &cfg, None, &mut rng).unwrap();
    let l = fit.kernel.lengthscales[0];
    assert!((0.5..=0.6).contains(&l), "{l}");
    cfg.lengthscale_prior.sigma = 0.0;
    assert!(fit_map(x.view(), &y, &cfg, None, &mut rng).is_err());
}

#[test]
fn a_column_major_design_fits_as_its_row_major_copy() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let x = rows(2, (0..40).map(|_| rng.random::<f64>()).collect());
    let y: Vec<f64> = (0..20).map(|i| (x[(i, 0)] * 3.0).sin() + x[(i, 1)]).collect();
    let mut x_f = ndarray::Array2::zeros(x.raw_dim().f());
    x_f.assign(&x);
    assert!(!x_f.is_standard_layout());
    let cfg = spec_config(KernelKind::Matern52, 1e-3);
    let k = Kernel::matern52(0.7, vec![0.3, 0.5]);
    let (a, ga) = log_posterior_and_grad(x.view(), &y, &k, &cfg).unwrap();
    let (b, gb) = log_posterior_and_grad(x_f.view(), &y, &k, &cfg).unwrap();
    assert_eq!((a.to_bits(), ga), (b.to_bits(), gb));
    let fit = fit_map(x.view(), &y, &cfg, None, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    let fit_f = fit_map(x.t().t(), &y, &cfg, None, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    let fit_t = fit_map(x_f.view(), &y, &cfg, None, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    assert_eq!((fit.log_posterior.to_bits(), &fit.kernel), (fit_f.log_posterior.to_bits(), &fit_f.kernel));
    assert_eq!((fit.log_posterior.to_bits(), &fit.kernel), (fit_t.log_posterior.to_bits(), &fit_t.kernel));
}
