//! Joint sampling: Monte-Carlo moments against the analytic ones, and seed reproducibility.

use armada_gp::{sample_posterior, sample_prior, Gp, Kernel};
use faer::Mat;
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Checks the empirical mean and covariance of the columns of `s` against `mean`/`cov`.
///
/// Monte-Carlo tolerance with N samples: sd(mean_i) = sqrt(S_ii / N) and
/// sd(S_hat_ij) = sqrt((S_ii S_jj + S_ij^2) / N). We allow 5 standard deviations per entry
/// (a false alarm over the ~100 entries checked has probability < 1e-4).
fn check_moments(s: &Mat<f64>, mean: &[f64], cov: &Mat<f64>) {
    let (m, n) = (s.nrows(), s.ncols());
    let nf = n as f64;
    let emp_mean: Vec<f64> = (0..m).map(|i| (0..n).map(|c| s[(i, c)]).sum::<f64>() / nf).collect();
    for i in 0..m {
        let sd = (cov[(i, i)] / nf).sqrt();
        assert!((emp_mean[i] - mean[i]).abs() <= 5.0 * sd + 1e-12, "mean[{i}]: {} vs {}", emp_mean[i], mean[i]);
    }
    for i in 0..m {
        for j in 0..=i {
            let e: f64 = (0..n).map(|c| (s[(i, c)] - mean[i]) * (s[(j, c)] - mean[j])).sum::<f64>() / nf;
            let sd = ((cov[(i, i)] * cov[(j, j)] + cov[(i, j)] * cov[(i, j)]) / nf).sqrt();
            assert!((e - cov[(i, j)]).abs() <= 5.0 * sd + 1e-12, "cov[{i},{j}]: {e} vs {}", cov[(i, j)]);
        }
    }
}

fn grid(m: usize) -> Array2<f64> {
    Array2::from_shape_fn((m, 1), |(i, _)| i as f64 / (m - 1) as f64)
}

/// `data.len() / dim` points, one per row.
fn rows(dim: usize, data: Vec<f64>) -> Array2<f64> {
    Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
}

#[test]
fn prior_samples_have_the_prior_moments() {
    let kernel = Kernel::matern52(1.7, vec![0.3]);
    let xq = grid(10);
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let (s, rep) = sample_prior(&kernel, xq.view(), 4000, &mut rng).unwrap();
    assert_eq!((s.nrows(), s.ncols()), (10, 4000));
    assert_eq!(rep.attempts, 0);
    check_moments(&s, &[0.0; 10], &kernel.gram(xq.view()));
}

#[test]
fn posterior_samples_have_the_posterior_moments() {
    let kernel = Kernel::squared_exponential(1.2, vec![0.2]);
    let x = rows(1, vec![0.1, 0.45, 0.8]);
    let (gp, _) = Gp::fit(kernel, 1e-2, x, vec![0.5, -1.0, 0.3]).unwrap();
    let xq = grid(9);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (s, _) = sample_posterior(&gp, xq.view(), 4000, &mut rng).unwrap();
    let (mean, _) = gp.predict(xq.view());
    check_moments(&s, &mean, &gp.posterior_cov(xq.view()));
}

#[test]
fn same_seed_gives_bit_identical_samples() {
    let kernel = Kernel::matern32(1.0, vec![0.25, 0.5]);
    let xq = rows(2, (0..40).map(|i| (i as f64 * 0.731).fract()).collect());
    let (gp, _) = Gp::fit(kernel.clone(), 1e-3, rows(2, vec![0.1, 0.2, 0.7, 0.3]), vec![1.0, -1.0]).unwrap();
    let draw = |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (a, _) = sample_prior(&kernel, xq.view(), 7, &mut rng).unwrap();
        let (b, _) = sample_posterior(&gp, xq.view(), 7, &mut rng).unwrap();
        (a, b)
    };
    let (a1, b1) = draw(3);
    let (a2, b2) = draw(3);
    let (a3, _) = draw(4);
    let bits = |m: &Mat<f64>| -> Vec<u64> {
        (0..m.ncols()).flat_map(|c| (0..m.nrows()).map(move |i| (i, c))).map(|(i, c)| m[(i, c)].to_bits()).collect()
    };
    assert_eq!(bits(&a1), bits(&a2));
    assert_eq!(bits(&b1), bits(&b2));
    assert_ne!(bits(&a1), bits(&a3));
}

#[test]
fn sampling_at_observed_points_with_tiny_noise_still_works() {
    // Posterior covariance at noise-free-ish observed points is numerically singular.
    let kernel = Kernel::squared_exponential(1.0, vec![0.3]);
    let x = rows(1, vec![0.0, 0.5, 1.0]);
    let (gp, _) = Gp::fit(kernel, 1e-14, x.clone(), vec![0.0, 1.0, 0.0]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let (s, _) = sample_posterior(&gp, x.view(), 50, &mut rng).unwrap();
    for c in 0..50 {
        assert!((s[(1, c)] - 1.0).abs() < 1e-3, "sample {c} at observed point: {}", s[(1, c)]);
    }
}
