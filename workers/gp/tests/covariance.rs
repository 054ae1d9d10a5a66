//! The full-covariance rank-1 downdate (`CandidateCovariance`) against two
//! independent routes: the Cholesky-based `CandidateCache` (mean, variance, `cov(i, j)`) and
//! `Gp::fit` + `Gp::posterior_cov` (a batch factorisation of all the data).

use armada_gp::{CandidateCache, CandidateCovariance, Gp, Kernel};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_points(rng: &mut ChaCha8Rng, n: usize, dim: usize) -> Array2<f64> {
    rows(dim, (0..n * dim).map(|_| rng.random::<f64>()).collect())
}

/// `data.len() / dim` points, one per row.
fn rows(dim: usize, data: Vec<f64>) -> Array2<f64> {
    Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
}

/// `|got - want| <= tol * max(|want|, scale)`: relative to the prior variance for entries near 0.
fn assert_close(what: &str, got: f64, want: f64, scale: f64, tol: f64) {
    let err = (got - want).abs();
    assert!(err <= tol * scale.max(want.abs()), "{what}: got {got:e} want {want:e} err {err:e}");
}

/// 50 observations (with repeats) on 300 random candidates in [0,1]^2: every mean, variance and
/// covariance entry agrees with both independent routes to 1e-9 relative.
#[test]
fn downdates_match_cache_and_batch_posterior_cov() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let kernel = Kernel::matern32(2.0, vec![0.25, 0.4]);
    let noise = 1e-3;
    let cands = random_points(&mut rng, 300, 2);
    let mut full = CandidateCovariance::new(kernel.clone(), noise, cands.clone());
    let mut cache = CandidateCache::new(kernel.clone(), noise, cands.clone());
    let mut x = Array2::zeros((0, 2));
    let mut y = Vec::new();
    for t in 0..50 {
        // A few repeats on purpose: index drawn from the first 40 candidates half of the time.
        let j = if t % 2 == 0 { rng.random_range(0..40) } else { rng.random_range(0..cands.nrows()) };
        let yj = (5.0 * cands[(j, 0)]).sin() + rng.random::<f64>() * 0.1;
        assert!(!full.observe_candidate(j, yj).unwrap().jittered());
        cache.observe_candidate(j, yj).unwrap();
        x.push_row(cands.row(j)).unwrap();
        y.push(yj);
    }
    assert_eq!(full.n_obs(), 50);

    let (gp, report) = Gp::fit(kernel.clone(), noise, x, y).unwrap();
    assert!(!report.jittered());
    let batch = gp.posterior_cov(cands.view());
    let (batch_mean, _) = gp.predict(cands.view());
    let v = kernel.variance;
    let m = cands.nrows();
    for i in 0..m {
        assert_close(&format!("mean[{i}] vs cache"), full.mean()[i], cache.mean()[i], 1.0, 1e-9);
        assert_close(&format!("mean[{i}] vs batch"), full.mean()[i], batch_mean[i], 1.0, 1e-9);
        assert_close(&format!("var[{i}] vs cache"), full.var()[i], cache.var()[i], v, 1e-9);
        assert_eq!(full.var()[i], full.cov_row(i)[i]);
        for k in 0..m {
            let c = full.cov_row(i)[k];
            assert_close(&format!("cov[{i},{k}] vs batch"), c, batch[(i, k)], v, 1e-9);
            // Exact symmetry: the downdate subtracts the same product from (i,k) and (k,i).
            assert_eq!(c, full.cov(k, i));
        }
    }
    // Spot-check against the cache's own O(n) covariance on a few pairs (a third route).
    for (i, k) in [(0, 1), (3, 299), (150, 151), (17, 17)] {
        assert_close(&format!("cov[{i},{k}] vs cache"), full.cov(i, k), cache.cov(i, k), v, 1e-9);
    }
}

/// A noise-free repeat of the same candidate loses the pivot: jitter is added and reported,
/// and the variance stays clamped at >= 0.
#[test]
fn lost_pivot_is_jittered_and_reported() {
    let kernel = Kernel::squared_exponential(1.0, vec![0.3]);
    let cands = rows(1, (0..11).map(|i| i as f64 / 10.0).collect());
    let mut full = CandidateCovariance::new(kernel, 0.0, cands);
    assert!(!full.observe_candidate(4, 0.5).unwrap().jittered());
    assert_eq!(full.var()[4], 0.0);
    let report = full.observe_candidate(4, 0.5).unwrap();
    assert!(report.jittered() && report.jitter >= 1e-10, "{report:?}");
    assert_eq!(full.total_jitter(), report.jitter);
    assert!(full.var().iter().all(|&s| s >= 0.0));
    // The mean at the observed point is the observed value (y - mu_j = 0 on the repeat).
    assert!((full.mean()[4] - 0.5).abs() < 1e-12);
    assert!(full.observe_candidate(11, 0.0).is_err());
    assert!(full.observe_candidate(0, f64::NAN).is_err());
}
