//! Incremental updates against an independent dense direct solve, jitter behaviour and the
//! "variance never grows with data" invariant.

use armada_gp::{CandidateCache, CandidateCovariance, Gp, Kernel};
use faer::prelude::*;
use faer::Mat;
use ndarray::{aview1, Array2, ArrayView2, ShapeBuilder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_points(rng: &mut ChaCha8Rng, n: usize, dim: usize) -> Array2<f64> {
    rows(dim, (0..n * dim).map(|_| rng.random::<f64>()).collect())
}

/// `data.len() / dim` points, one per row.
fn rows(dim: usize, data: Vec<f64>) -> Array2<f64> {
    Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
}

/// Posterior mean and variance at `q` by LU-solving `(K + noise I) [a | B] = [y | K(X,Q)]`:
/// an independent route (no Cholesky, no triangular solves of ours).
fn dense_posterior(
    kernel: &Kernel,
    noise: f64,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    q: ArrayView2<'_, f64>,
) -> (Vec<f64>, Vec<f64>) {
    let n = x.nrows();
    let n_q = q.nrows();
    let mut c = kernel.gram(x);
    for i in 0..n {
        c[(i, i)] += noise;
    }
    let kq = kernel.cross(x, q);
    let mut rhs = Mat::<f64>::zeros(n, n_q + 1);
    for i in 0..n {
        rhs[(i, 0)] = y[i];
        for j in 0..n_q {
            rhs[(i, j + 1)] = kq[(i, j)];
        }
    }
    let sol = c.partial_piv_lu().solve(&rhs);
    let mean = (0..n_q).map(|j| (0..n).map(|i| kq[(i, j)] * sol[(i, 0)]).sum()).collect();
    let var = (0..n_q)
        .map(|j| {
            kernel.eval(&q.row(j).to_vec(), &q.row(j).to_vec())
                - (0..n).map(|i| kq[(i, j)] * sol[(i, j + 1)]).sum::<f64>()
        })
        .collect();
    (mean, var)
}

fn assert_rel(what: &str, got: &[f64], want: &[f64], scale: f64, tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        assert!(err <= tol * scale.max(w.abs()), "{what}[{i}]: got {g:e} want {w:e} err {err:e}");
    }
}

#[test]
fn appends_fit_cache_and_dense_solve_agree_on_200_points() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let kernel = Kernel::matern52(1.5, vec![0.3, 0.5]);
    let noise = 1e-2;
    let cands = random_points(&mut rng, 300, 2);
    // 200 observations: the first 120 are candidates (by index), the rest arbitrary points.
    let mut x = Array2::zeros((0, 2));
    let mut y = Vec::new();
    let mut cache = CandidateCache::new(kernel.clone(), noise, cands.clone());
    let mut gp = Gp::new(kernel.clone(), noise);
    for t in 0..200 {
        let yi = rng.random::<f64>() * 2.0 - 1.0;
        if t < 120 {
            let j = rng.random_range(0..cands.nrows());
            x.push_row(cands.row(j)).unwrap();
            assert_eq!(cache.observe_candidate(j, yi).unwrap().attempts, 0);
        } else {
            let p: Vec<f64> = (0..2).map(|_| rng.random::<f64>()).collect();
            x.push_row(aview1(&p)).unwrap();
            assert_eq!(cache.observe(aview1(&p), yi).unwrap().attempts, 0);
        }
        gp.append(x.row(t), yi).unwrap();
        y.push(yi);
    }
    let (fitted, rep) = Gp::fit(kernel.clone(), noise, x.clone(), y.clone()).unwrap();
    assert_eq!(rep.attempts, 0);
    let (dm, dv) = dense_posterior(&kernel, noise, x.view(), &y, cands.view());
    let v = kernel.variance;
    let tol = 1e-9;

    let (am, av) = gp.predict(cands.view());
    let (fm, fv) = fitted.predict(cands.view());
    assert_rel("append mean", &am, &dm, v, tol);
    assert_rel("append var", &av, &dv, v, tol);
    assert_rel("fit mean", &fm, &dm, v, tol);
    assert_rel("fit var", &fv, &dv, v, tol);
    assert_rel("cache mean", cache.mean(), &dm, v, tol);
    assert_rel("cache var", cache.var(), &dv, v, tol);
    let lml = (gp.log_marginal_likelihood(), fitted.log_marginal_likelihood());
    assert!((lml.0 - lml.1).abs() <= 1e-9 * lml.1.abs(), "{lml:?}");
    assert!((cache.log_marginal_likelihood() - lml.1).abs() <= 1e-9 * lml.1.abs());

    // Cached covariance against the dense posterior covariance.
    let cov = fitted.posterior_cov(cands.view());
    for (i, j) in [(0, 0), (3, 17), (250, 5), (299, 298)] {
        let err = (cache.cov(i, j) - cov[(i, j)]).abs();
        assert!(err <= tol * v, "cov({i},{j}) err {err:e}");
    }
    // The factors themselves agree: append-built vs faer-built.
    let (la, lf) = (gp.cholesky_factor(), fitted.cholesky_factor());
    for i in 0..200 {
        for j in 0..=i {
            assert!((la[(i, j)] - lf[(i, j)]).abs() <= 1e-10 * v.sqrt(), "L[{i},{j}]");
        }
    }
}

#[test]
fn observe_candidate_equals_observe_at_the_same_point() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let kernel = Kernel::squared_exponential(0.8, vec![0.25, 0.4, 0.6]);
    let cands = random_points(&mut rng, 150, 3);
    let mut by_index = CandidateCache::new(kernel.clone(), 1e-4, cands.clone());
    let mut by_point = CandidateCache::new(kernel, 1e-4, cands.clone());
    for _ in 0..40 {
        let j = rng.random_range(0..cands.nrows());
        let y = rng.random::<f64>();
        by_index.observe_candidate(j, y).unwrap();
        by_point.observe(cands.row(j), y).unwrap();
    }
    assert_rel("mean", by_index.mean(), by_point.mean(), 0.8, 1e-11);
    assert_rel("var", by_index.var(), by_point.var(), 0.8, 1e-11);
    assert!(by_index.observe_candidate(150, 0.0).is_err());
    assert!(by_point.observe(aview1(&[0.0, 0.0]), 0.0).is_err());
}

#[test]
fn cache_from_gp_matches_incremental_cache() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let kernel = Kernel::matern32(1.1, vec![0.3, 0.3]);
    let cands = random_points(&mut rng, 80, 2);
    let mut inc = CandidateCache::new(kernel.clone(), 1e-3, cands.clone());
    for j in [3, 9, 40, 41, 77] {
        inc.observe_candidate(j, (j as f64).sin()).unwrap();
    }
    let rebuilt = CandidateCache::from_gp(inc.gp().clone(), cands).unwrap();
    assert_rel("mean", rebuilt.mean(), inc.mean(), 1.1, 1e-11);
    assert_rel("var", rebuilt.var(), inc.var(), 1.1, 1e-11);
}

#[test]
fn duplicate_point_with_negligible_noise_is_jittered_and_reported() {
    let v = 2.0;
    let kernel = Kernel::squared_exponential(v, vec![0.5]);
    let noise = 1e-17 * v; // below rounding: the duplicate's pivot is pure noise
    let cands = rows(1, vec![0.0, 0.3, 0.6, 0.9]);

    let mut cache = CandidateCache::new(kernel.clone(), noise, cands.clone());
    assert_eq!(cache.observe_candidate(1, 0.5).unwrap().attempts, 0);
    let rep = cache.observe_candidate(1, 0.5).unwrap();
    assert!(rep.jitter > 0.0 && rep.attempts >= 1, "{rep:?}");
    assert!(cache.gp().total_jitter() > 0.0);
    assert_eq!(cache.gp().jitter()[0], 0.0);
    assert!(cache.mean().iter().chain(cache.var()).all(|v| v.is_finite()));
    assert!((cache.mean()[1] - 0.5).abs() < 1e-6);

    // The full factorisation of the same duplicated data also needs (and reports) jitter.
    let x = rows(1, vec![0.3, 0.3, 0.7]);
    let (gp, rep) = Gp::fit(kernel.clone(), noise, x, vec![0.5, 0.5, -0.2]).unwrap();
    assert!(rep.jitter > 0.0, "{rep:?}");
    let (m, s) = gp.predict(cands.view());
    assert!(m.iter().chain(&s).all(|v| v.is_finite()));
    assert!(gp.log_marginal_likelihood().is_finite());

    // Well-conditioned data: no jitter, anywhere.
    let x = rows(1, vec![0.0, 0.5, 1.0]);
    let (gp, rep) = Gp::fit(kernel, 1e-2, x, vec![0.0, 1.0, 0.0]).unwrap();
    assert_eq!(rep, Default::default());
    assert_eq!(gp.total_jitter(), 0.0);
}

#[test]
fn posterior_variance_never_grows_with_data() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for trial in 0..20 {
        let kernel = match trial % 3 {
            0 => Kernel::squared_exponential(1.0, vec![0.2, 0.4]),
            1 => Kernel::matern32(2.0, vec![0.3, 0.3]),
            _ => Kernel::matern52(0.5, vec![0.15, 0.5]),
        };
        let noise = [1e-6, 1e-3, 1e-1][trial % 3];
        let cands = random_points(&mut rng, 60, 2);
        let mut cache = CandidateCache::new(kernel, noise, cands.clone());
        let mut prev = cache.var().to_vec();
        for _ in 0..30 {
            if rng.random::<bool>() {
                cache.observe_candidate(rng.random_range(0..60), rng.random::<f64>()).unwrap();
            } else {
                let p = [rng.random::<f64>(), rng.random::<f64>()];
                cache.observe(aview1(&p), rng.random::<f64>()).unwrap();
            }
            for (j, (now, before)) in cache.var().iter().zip(&prev).enumerate() {
                assert!(now <= before, "trial {trial}: var[{j}] grew {before:e} -> {now:e}");
                assert!(*now >= 0.0);
            }
            prev = cache.var().to_vec();
        }
    }
}

#[test]
fn variance_at_an_observed_point_is_noise_limited() {
    // One observation at x with noise lambda: var(x) = v lambda / (v + lambda) ~ lambda.
    for &noise in &[1e-8, 1e-6, 1e-4] {
        let v = 1.3;
        let kernel = Kernel::matern52(v, vec![0.2]);
        let mut gp = Gp::new(kernel, noise);
        gp.append(aview1(&[0.4]), 1.0).unwrap();
        let (_, var) = gp.predict(rows(1, vec![0.4]).view());
        let want = v * noise / (v + noise);
        assert!((var[0] - want).abs() <= 1e-6 * want + 1e-15, "noise {noise}: {} vs {want}", var[0]);
        // More observations elsewhere cannot push it above the one-point value.
        gp.append(aview1(&[0.45]), 0.9).unwrap();
        gp.append(aview1(&[0.9]), -0.1).unwrap();
        let (_, var2) = gp.predict(rows(1, vec![0.4]).view());
        assert!(var2[0] <= var[0] * (1.0 + 1e-9) && var2[0] >= 0.0);
    }
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let kernel = Kernel::squared_exponential(1.0, vec![0.3, 0.3]);
    let x = rows(2, vec![0.0, 0.0, 1.0, 1.0]);
    assert!(Gp::fit(kernel.clone(), 0.1, x.clone(), vec![1.0]).is_err());
    assert!(Gp::fit(kernel.clone(), -0.1, x.clone(), vec![1.0, 2.0]).is_err());
    assert!(Gp::fit(kernel.clone(), 0.1, x, vec![1.0, f64::NAN]).is_err());
    assert!(Gp::fit(Kernel::squared_exponential(0.0, vec![0.3, 0.3]), 0.1, Array2::zeros((0, 2)), vec![]).is_err());
    let mut gp = Gp::new(kernel, 0.1);
    assert!(gp.append(aview1(&[0.0]), 1.0).is_err());
    assert!(gp.append(aview1(&[0.0, 0.0]), f64::INFINITY).is_err());
    assert_eq!(gp.n_obs(), 0);
}

/// The same points in column-major layout (a copy whose rows are not contiguous).
fn column_major(a: &Array2<f64>) -> Array2<f64> {
    let mut f = Array2::zeros(a.raw_dim().f());
    f.assign(a);
    assert!(!f.is_standard_layout());
    f
}

#[test]
fn row_major_inputs_are_kept_without_a_copy() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let kernel = Kernel::matern52(1.2, vec![0.3, 0.4, 0.5]);
    let x = random_points(&mut rng, 25, 3);
    let y: Vec<f64> = (0..25).map(|i| (i as f64 * 0.7).sin()).collect();
    let ptr = x.as_ptr();
    let (gp, _) = Gp::fit(kernel.clone(), 1e-3, x, y).unwrap();
    assert_eq!(gp.x().as_ptr(), ptr);
    let cands = random_points(&mut rng, 40, 3);
    let ptr = cands.as_ptr();
    let cache = CandidateCache::new(kernel.clone(), 1e-3, cands.clone());
    assert_ne!(cache.candidates().as_ptr(), ptr); // a clone
    let cache = CandidateCache::new(kernel.clone(), 1e-3, cands);
    assert_eq!(cache.candidates().as_ptr(), ptr);
    assert_eq!(cache.candidate(1).as_ptr(), cache.candidates().row(1).as_ptr());
    let again = random_points(&mut rng, 40, 3);
    let ptr = again.as_ptr();
    let from_gp = CandidateCache::from_gp(gp, again).unwrap();
    assert_eq!(from_gp.candidates().as_ptr(), ptr);
    let cands = random_points(&mut rng, 10, 3);
    let ptr = cands.as_ptr();
    assert_eq!(CandidateCovariance::new(kernel, 1e-3, cands).candidates().as_ptr(), ptr);
}

#[test]
fn a_column_major_input_gives_the_numbers_of_its_row_major_copy() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let kernel = Kernel::matern32(0.9, vec![0.35, 0.25]);
    let x = random_points(&mut rng, 30, 2);
    let y: Vec<f64> = (0..30).map(|i| (i as f64 * 0.3).cos()).collect();
    let q = random_points(&mut rng, 50, 2);
    let (x_f, q_f) = (column_major(&x), column_major(&q));
    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let mat_bits = |m: &Mat<f64>| {
        (0..m.nrows()).flat_map(|i| (0..m.ncols()).map(move |j| (i, j))).map(|ij| m[ij].to_bits()).collect::<Vec<_>>()
    };

    let (gp, _) = Gp::fit(kernel.clone(), 1e-2, x.clone(), y.clone()).unwrap();
    let (gp_f, _) = Gp::fit(kernel.clone(), 1e-2, x_f.clone(), y.clone()).unwrap();
    let (m, v) = gp.predict(q.view());
    for (gp, q) in [(&gp, q_f.view()), (&gp_f, q.view()), (&gp_f, q_f.view())] {
        let (mf, vf) = gp.predict(q);
        assert_eq!((bits(&mf), bits(&vf)), (bits(&m), bits(&v)));
        assert_eq!(bits(&gp.predict_mean(q)), bits(&gp_f.predict_mean(q_f.view())));
        assert_eq!(mat_bits(&gp.posterior_cov(q)), mat_bits(&gp_f.posterior_cov(q.view())));
    }
    assert_eq!(mat_bits(&kernel.gram(x_f.view())), mat_bits(&kernel.gram(x.view())));
    assert_eq!(mat_bits(&kernel.cross(x_f.view(), q_f.view())), mat_bits(&kernel.cross(x.view(), q.view())));

    // A transposed view (a (2, 50) array seen as 50 x 2) and a column of points.
    let qt = q.t().to_owned();
    assert_eq!(bits(&gp.predict(qt.t()).0), bits(&m));
    let mut cache = CandidateCache::new(kernel.clone(), 1e-2, q.clone());
    let mut cache_f = CandidateCache::new(kernel.clone(), 1e-2, q_f);
    for j in [3, 17, 41] {
        cache.observe_candidate(j, j as f64 * 0.1).unwrap();
        cache_f.observe_candidate(j, j as f64 * 0.1).unwrap();
    }
    cache.observe(x.row(4), 0.5).unwrap();
    cache_f.observe(x_f.row(4), 0.5).unwrap(); // not contiguous: copied
    assert_eq!((bits(cache.mean()), bits(cache.var())), (bits(cache_f.mean()), bits(cache_f.var())));
    let mut full = CandidateCovariance::new(kernel.clone(), 1e-2, q.clone());
    let mut full_f = CandidateCovariance::new(kernel.clone(), 1e-2, column_major(&q));
    full.observe_candidate(9, 0.3).unwrap();
    full_f.observe_candidate(9, 0.3).unwrap();
    assert_eq!(bits(full.cov_row(9)), bits(full_f.cov_row(9)));

    let (s, _) = armada_gp::sample_posterior(&gp, q.view(), 3, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    let (s_f, _) = armada_gp::sample_posterior(&gp, qt.t(), 3, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
    assert_eq!(mat_bits(&s), mat_bits(&s_f));
}
